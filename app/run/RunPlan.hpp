#pragma once
// Stage 1 of a run (docs/architecture.md): the case resolved into everything the stepping needs, built in this
// order: the models (L_D, L_D', the initial Gaussian), the mesh, the discretisation, the propagator (the Langevin
// integrator or noisy GD's steps, with its fallbacks), the loss constants, and the exact oracle where a closed form
// exists. Nothing here writes a file.
#include <petscvec.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "app/case/Case.hpp"
#include "app/run/ModelBuilding.hpp"
#include "io/CheckpointFile.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"
#include "models/Loss.hpp"
#include "models/LossConstants.hpp"
#include "solver/discretisation/LangevinDiscretisation.hpp"
#include "solver/noisygd/NoisyGradientDescent.hpp"
#include "solver/propagation/DensityPropagator.hpp"
#include "validation/CellErrors.hpp"
#include "validation/GaussianReference.hpp"
#include "validation/NoisyGdReference.hpp"

namespace fpdp::app {

/// The gradient of an empirical loss as a field on R^3 (components >= dim are 0).
solver::GradientField gradientField(std::shared_ptr<const models::EmpiricalLoss> L, int dim);

/// The closed form of a case, where one exists, as functions of (order, step, time).
struct ExactOracle {
  std::function<double(double, long, double)> renyi;
  std::function<double(long, double)> kl;
  std::function<validation::CellErrors(Vec, long, double)> errors;
  std::function<std::pair<models::Gaussian, models::Gaussian>(long, double)> laws;  // p's and q's, when Gaussian
  // Laws that are not Gaussian (the lattice mixtures of Poisson minibatches, MATH.md §8) give TV and eps(delta)
  // themselves; laws is then empty. (step, time) and (delta, step, time).
  std::function<double(long, double)> tv{};
  std::function<double(double, long, double)> epsilon{};
};

/// (computed - exact) / exact, with the cases a division cannot express: both infinite with one sign agree (0), one
/// infinite and the other not is +inf, exact 0 gives the computed value itself.
double relativeError(double computed, double exact);

/// Everything a run is made of, before any output. Not copyable: the discretisation, the propagator and the
/// oracle refer to the mesh and the references held here.
class RunPlan {
public:
  /// Collective. `resume`: the checkpoint a continued run starts from (its solver configuration must be this one's).
  RunPlan(const Case& c, MPI_Comm comm, const io::CheckpointData* resume);
  RunPlan(const RunPlan&) = delete;
  RunPlan& operator=(const RunPlan&) = delete;

  const Case& c;
  // Models.
  const EmpiricalLosses losses;  // L_D, L_D' (with noisy GD's clipping)
  const bool replacement;        // D' replaces a record of D (add/remove: D and D' differ in n as well)
  const models::Gaussian initial;
  const std::optional<models::Loss::PairGap> pairGap;  // the closed-form gap of a replaced record
  const bool noisyGd;
  const int dim;
  solver::LangevinProblem problem;
  // Mesh and discretisation.
  const solver::SpatialAccuracy accuracy;
  const meshes::DistributedBoxMesh mesh;
  solver::LangevinDiscretisation disc;  // its operator's potentials released once the propagator is built
  // Propagator: exactly one of the two.
  std::unique_ptr<solver::DensityPropagator> evolution;  // Langevin
  std::unique_ptr<solver::NoisyGradientDescent> gd;      // noisy GD
  std::string autoFallback;  // solver.ts_type = "auto": why the exponential integrator was not used (empty: it was)
  std::string solverDescription;
  meshes::FieldRepresentation representation;  // cell averages, or point values at the cell centres
  std::string noCheckpoints;  // why the run writes no checkpoints (empty: it does)
  // Figures of the operator and the problem.
  solver::PositivityReport positivity;
  long highOrderFaces = 0;
  double gradientGap = 0.0;
  models::LossConstants constants;
  double truncatedInitialMass = 0.0;
  // A start narrower than the mesh resolves (docs/noisy-gd.md, "Under-resolved starts"): noisy GD takes its first
  // step exactly from the Gaussian where it can; otherwise the summary warns.
  bool exactFirstStep = false;
  // The closed form, where one exists.
  std::optional<validation::GaussianReference> langevinReference;
  std::optional<validation::NoisyGdReference> gdReference;
  std::optional<ExactOracle> reference;

  const models::Dataset& D() const { return c.data.records; }
  const models::Dataset& DPrime() const { return losses.lossDPrime->data(); }
  bool fourthOrder() const { return accuracy.order == 4; }
  bool constrained() const { return gd && gd->constrained(); }
  /// What a negative-mass fault can be mended by, for this plan's settings (only settings not already in effect).
  std::string negativeMassRemedy() const;
  long steps() const { return noisyGd ? c.noisyGd.steps : c.time.steps(); }
  double tEnd() const;
  /// S_g as stated in the case, else this pair's (MATH.md §1), if known.
  std::optional<double> statedSensitivity() const;

private:
  void buildPropagator();
  void requireResumableSolver(const io::CheckpointData* resume);
  void buildOracle();
};

}  // namespace fpdp::app
