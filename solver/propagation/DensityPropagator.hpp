#pragma once
// What the run loop needs of a time integrator of du/dt = A u (A constant): advance the state from step to step,
// call an observer at the steps it reports, stop early on request, and capture / restore its state for
// checkpoint and restart. Two implementations: DensityEvolution (PETSc TS: BDF, Crank–Nicolson, ...) and
// ExponentialEvolution (u(t + T) = exp(T A) u(t) between output steps, Chebyshev expansion; docs/scheme.md §3,
// "Exponential integration").
#include <petscvec.h>

#include <functional>
#include <string>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"

namespace fpdp::solver {

/// What a continued run needs of the integrator beyond the solution (checkpoint/restart, docs/output.md): the step
/// number and time, and for TSBDF its history (the previous solutions and their times, the current order) and the
/// shift of the factorised matrix shift I - A. Captured in an observer call (after a completed step), restored
/// before run(): the continued run then takes bit for bit the steps the uninterrupted run takes.
struct IntegratorState {
  long step = 0;
  double time = 0.0;
  double timeStep = 0.0;
  std::string tsType;
  double jacobianShift = -1.0;            // the shift J_ holds (-1: none built yet)
  long bdfOrderInUse = 0, bdfStored = 0;  // TSBDF's k and n
  std::vector<double> bdfTimes;           // the times of `history`, newest first
  std::vector<meshes::VecHandle> history; // TSBDF: previous solutions u_{step-1}, u_{step-2}, ... (global vectors)
  double stateErrorBound = 0.0;           // stateErrorBound() so far: a restart carries it on
};

class DensityPropagator {
public:
  virtual ~DensityPropagator() = default;
  /// Called for step 0 (the initial state) and then after the steps the integrator reports; u must not be modified.
  using Observer = std::function<void(long step, double time, Vec u)>;
  /// Everything run() sets up before its first step, on a state like u, without stepping: a configuration the
  /// integrator cannot take fails here (PetscFailure) as it would in run() (`fpdp check`).
  virtual void setUp(Vec /*u*/) {}
  /// Advance u in place from t = startTime by the configured number of steps.
  virtual void run(Vec u, const Observer& observer, double startTime = 0.0) = 0;
  /// Continues from `state` (u holds the solution at state.step): the observer is not called again for that step.
  virtual void resume(Vec u, const Observer& observer, const IntegratorState& state) = 0;
  /// The integrator's state after the step the observer is called for; only valid inside an observer call.
  virtual IntegratorState captureState() const = 0;
  /// Throws PetscFailure (with the reason) if captureState() cannot capture this integrator's state.
  virtual void requireCheckpointable() const = 0;
  /// Called from an observer: the integration ends after `step` (a numerical fault stops the run there).
  virtual void stopAfter(long step) = 0;
  /// The resolved solver configuration after options were applied (for the run record and checkpoints).
  virtual std::string describe() const = 0;
  /// The last step reached.
  virtual long stepsTaken() const = 0;
  /// A bound on the integrator's own error in any cell value, accumulated since the run (or the resume) began, in the
  /// state's units; 0 where the integrator does not estimate it (its error is then the companions' to measure).
  virtual double stateErrorBound() const { return 0.0; }
};

}  // namespace fpdp::solver
