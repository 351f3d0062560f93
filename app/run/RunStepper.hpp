#pragma once
// Stage 3 of a run (docs/architecture.md): the state (p, q) from its start (or a checkpoint) to the end. At every
// step the numerical faults are checked; at every output step the divergences are evaluated once and every
// registered observer is notified with them. Langevin diffusion runs the plan's propagator with this as its
// observer; noisy GD takes its K steps here, with the tracing diffusions between them when asked for.
#include <petscvec.h>

#include <array>
#include <optional>

#include "app/run/NumericalFaults.hpp"
#include "app/run/RunObservers.hpp"
#include "app/run/RunPlan.hpp"
#include "solver/noisygd/PushForward.hpp"

namespace fpdp::app {

class RunStepper {
public:
  /// Sets the initial state (theta_0 ~ Pi_C(N(m_0, V_0)) for projected noisy GD, whose boundary bins' points go
  /// into fpdp.h5 unless `h5` is null). `tracing`: noisy GD's tracing diffusions (null: none).
  RunStepper(const RunPlan& plan, const solver::DivergenceFunctionals& divergences, NumericalFaultMonitor& faults,
             RunObservers& observers, const std::vector<std::string>& columns, StepTracer* tracing,
             io::Hdf5Output* h5);

  /// --restart: the state, the integrator's history and the stepping figures at the checkpoint's output step K;
  /// returns K. The run then goes on from K + 1. Collective.
  long restore(const io::CheckpointData& ck);
  /// The divergences at the restored step, recomputed from the restored state (the same numbers on the same ranks).
  const solver::DivergenceValues& restoredValues();
  /// Collective: every step to the end, or to a fault that stops the run (then NumericalFault is thrown).
  void run();
  /// Checkpoint: the state and the stepping figures (the observers save their own).
  void saveState(io::CheckpointData& ck, long step, double t, Vec u) const;

  Vec state() const { return u_; }
  /// The divergences at the last output step (or the restored step).
  const solver::DivergenceValues& last() const { return last_; }
  /// Time spent notifying the observers (Langevin: the rest of the stepping is the integrator's own).
  double observerSeconds() const { return observerSeconds_; }
  /// Noisy GD: mass carried beyond the mesh by the push-forward and the noise kernel; the largest mass in the wall
  /// cells before Pi_C (Fokker–Planck route with a constraint).
  const solver::Outflow& outflowP() const { return outflowP_; }
  const solver::Outflow& outflowQ() const { return outflowQ_; }
  double largestWallMass() const { return largestWallMass_; }
  /// Poisson on a displacement lattice: the accumulated TV bounds of p and q against the exact mixture (0 otherwise),
  /// of the lattice (rounding, pruning) and of the cells' within-cell discretisation.
  const std::array<double, 2>& mixtureTvBound() const { return mixtureTvBound_; }
  const std::array<double, 2>& withinCellTvBound() const { return withinCellTvBound_; }

private:
  void observe(long step, double t, Vec u);
  void attachTvBounds(solver::DivergenceValues& v) const;
  void runLangevin();
  void runNoisyGd();

  const RunPlan& plan_;
  const solver::DivergenceFunctionals& divergences_;
  NumericalFaultMonitor& faults_;
  RunObservers& observers_;
  const std::vector<std::string>& columns_;
  StepTracer* tracing_;
  meshes::VecHandle u_;
  long resumeStep_ = -1;
  std::optional<solver::IntegratorState> integratorState_;
  solver::DivergenceValues last_;
  long lastStep_ = -1;  // the step last_ was evaluated at
  solver::Outflow outflowP_, outflowQ_;
  double largestWallMass_ = 0.0;
  std::array<double, 2> mixtureTvBound_{0.0, 0.0}, withinCellTvBound_{0.0, 0.0};
  double observerSeconds_ = 0.0;
};

}  // namespace fpdp::app
