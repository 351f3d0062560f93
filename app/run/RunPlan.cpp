#include "app/run/RunPlan.hpp"

#include "app/case/CaseReader.hpp"

#include <sstream>
#include <stdexcept>

#include "app/run/Checkpoint.hpp"
#include "app/platform/PetscConfiguration.hpp"
#include "app/run/MinibatchOracle.hpp"
#include "app/run/NumberFormat.hpp"
#include "app/run/MinibatchSchedule.hpp"
#include "io/NumberText.hpp"
#include "solver/propagation/DensityEvolution.hpp"
#include "solver/propagation/ExponentialEvolution.hpp"

namespace fpdp::app {

double relativeError(double computed, double exact) {
  if (std::isinf(exact) && std::isinf(computed) && (exact > 0) == (computed > 0)) return 0.0;
  if (std::isinf(exact) != std::isinf(computed)) return INFINITY;  // a finite value for an infinite one, or the reverse
  if (exact == 0) return computed;
  return (computed - exact) / exact;
}


/// The quadratic loss, whose empirical gradient is lambda (theta - xbar) exactly, skips the loop over the n records
/// (n = 5000 in the paper's Figure 1).
solver::GradientField gradientField(std::shared_ptr<const models::EmpiricalLoss> L, int dim) {
  if (const auto* q = dynamic_cast<const models::QuadraticLoss*>(&L->loss()); q && L->gradientIsExact()) {
    const models::Vector xbar = L->data().mean();
    const double lambda = q->lambda();
    solver::ParameterPoint c{};
    for (int a = 0; a < dim; ++a) c[static_cast<std::size_t>(a)] = xbar[a];
    return [lambda, c, dim](const solver::ParameterPoint& t) {
      solver::ParameterPoint g{0, 0, 0};
      for (int a = 0; a < dim; ++a) g[a] = lambda * (t[a] - c[a]);
      return g;
    };
  }
  return [L, dim](const solver::ParameterPoint& t) {
    models::Vector x(dim);
    for (int a = 0; a < dim; ++a) x[a] = t[a];
    const models::Vector g = L->gradient(x);
    solver::ParameterPoint out{0, 0, 0};
    for (int a = 0; a < dim; ++a) out[a] = g[a];
    return out;
  };
}

namespace {

solver::LangevinProblem langevinProblem(const Case& c, const EmpiricalLosses& losses, const models::Gaussian& initial,
                                        bool noisyGd) {
  solver::LangevinProblem problem{losses.lossD, losses.lossDPrime, c.noise.sigma, initial};
  const int d = c.mesh.dim;
  if (c.noise.covariance || c.noise.covariancePrime) {
    problem.sigmaMatrix = c.noise.sigmaFor(false, d);
    problem.sigmaMatrixPrime = noisyGd ? c.noise.sigmaFor(false, d) : c.noise.sigmaFor(true, d);
  }
  return problem;
}

/// Cross-diffusion terms need the diagonal neighbours: a box stencil (docs/scheme.md, anisotropic diffusion).
/// Fourth-order fluxes (docs/scheme.md §7) reach two cells and couple diagonal neighbours: width 2, box stencil.
meshes::DistributedBoxMesh caseMesh(const Case& c, MPI_Comm comm, const solver::LangevinProblem& problem,
                                    const solver::SpatialAccuracy& accuracy) {
  const bool fourth = accuracy.order == 4;
  const int d = c.mesh.dim;
  const auto stencil = (fourth && d > 1) || solver::requiresBoxStencil(problem, d) ? meshes::StencilShape::Box
                                                                                   : meshes::StencilShape::Star;
  return meshes::DistributedBoxMesh(comm, buildBox(c.mesh), 2, stencil, fourth ? 2 : 1);
}

solver::SpatialAccuracy spatialAccuracy(const Case& c, bool noisyGd) {
  solver::SpatialAccuracy accuracy;
  accuracy.order = noisyGd ? 2 : c.solver.spatial_order;
  return accuracy;
}

solver::NoisyGdSettings noisyGdSettings(const Case& c) {
  const int d = c.mesh.dim;
  solver::NoisyGdSettings settings;
  settings.constraint = c.noisyGd.constraintSet;  // Pi_C with boundary bins (docs/noisy-gd.md §6)
  settings.eta = c.noisyGd.eta;
  const models::Matrix Sigma = c.noise.sigmaFor(false, d);
  for (int a = 0; a < d; ++a) settings.noiseVariance[a] = Sigma(a, a);
  if (d > 1) settings.noiseCross[0] = Sigma(0, 1);
  if (d > 2) settings.noiseCross[1] = Sigma(0, 2), settings.noiseCross[2] = Sigma(1, 2);
  settings.diffusion = c.noisyGd.diffusion == "exact_convolution"    ? solver::DiffusionMethod::ExactConvolution
                       : c.noisyGd.diffusion == "chapman_kolmogorov" ? solver::DiffusionMethod::ChapmanKolmogorov
                                                                     : solver::DiffusionMethod::FokkerPlanck;
  settings.diffusionSubsteps = static_cast<int>(c.noisyGd.diffusion_substeps);
  settings.kspType = c.solver.ksp_type;
  settings.pcType = c.solver.pc_type;
  return settings;
}

}  // namespace

RunPlan::RunPlan(const Case& cs, MPI_Comm comm, const io::CheckpointData* resume)
    : c(cs),
      losses(buildEmpiricalLosses(cs)),
      replacement(cs.neighbour.kind == models::NeighbourKind::Replace),
      initial(cs.initial.mean, cs.initial.covariance),
      pairGap(replacement ? losses.lossD->loss().pairGradientGap(cs.data.records[cs.neighbour.index],
                                                                 cs.neighbour.replacement)
                          : std::optional<models::Loss::PairGap>{}),
      noisyGd(cs.dynamics == "noisy_gd"),
      dim(cs.mesh.dim),
      problem(langevinProblem(cs, losses, initial, noisyGd)),
      accuracy(spatialAccuracy(cs, noisyGd)),
      mesh(caseMesh(cs, comm, problem, accuracy)),
      disc(mesh, problem, solver::FaceFluxScheme::ScharfetterGummel, accuracy) {
  if (noisyGd) requireSupportedMinibatches(c, losses, mesh.box().totalCells());
  buildPropagator();
  if (const auto unused = solver::unusedPetscOptions(); !unused.empty()) {
    std::string list;
    for (const auto& u : unused) list += (list.empty() ? "" : ", ") + u;
    throw SolverConfigurationError("PETSc option(s) not used by any solver component: " + list +
                                   " (misspelt? see 'fpdp run CASE -help')");
  }
  solverDescription = noisyGd ? gd->describe() : evolution->describe();
  representation = noisyGd ? gd->representation() : meshes::FieldRepresentation::CellAverages;
  requireResumableSolver(resume);
  // The M-matrix condition of the assembled operator (docs/scheme.md): reported, never enforced by clipping.
  positivity = noisyGd ? solver::PositivityReport{} : disc.spatialOperator().positivity();
  highOrderFaces = disc.spatialOperator().highOrderFaces();
  gradientGap = disc.measuredGradientGap();
  constants = caseLossConstants(c, losses, mesh.box());
  truncatedInitialMass = disc.truncatedInitialMass();
  exactFirstStep =
      gd && gd->canStepFromGaussian() && disc.initialResolution() < solver::LangevinDiscretisation::kResolvedStartRatio;
  buildOracle();
  // The propagator holds the operator's stencil or matrix, and the figures above are taken: the potentials go.
  disc.releaseOperatorPotentials();
}

/// Langevin diffusion: exp(T A) between output steps (solver/propagation/ExponentialEvolution.hpp, docs/scheme.md §3:
/// the a priori bound where the operator has detailed balance, the a posteriori control where the noise is
/// anisotropic), else a PETSc TS over [0, t_end]; noisy GD: K steps of push-forward and noise.
void RunPlan::buildPropagator() {
  PetscErrorCapture capture;
  try {
    const std::string tsType = noisyGd ? std::string() : effectiveTsType(c);
    const std::string steppingType = tsType == kExponentialTsType ? "bdf" : tsType;  // "auto" may fall back
    const bool detailedBalance = !noisyGd && c.noise.bothIsotropic(dim);
    if (!noisyGd && tsType == kExponentialTsType && !detailedBalance) {
      // Anisotropic noise: no detailed balance, the forward expansion with a posteriori error control.
      try {
        solver::ExponentialSettings settings{c.time.dt, c.time.steps(), c.output.every};
        settings.positiveSeries = c.solver.exponential_series == "positive";
        evolution = std::make_unique<solver::ExponentialEvolution>(mesh, disc.spatialOperator(), settings);
      } catch (const std::invalid_argument& e) {
        if (requestedTsType(c.solver) != kAutoTsType)
          throw SolverConfigurationError("solver.ts_type = \"exponential\": " + std::string(e.what()) +
                                         "; use a PETSc time integrator (e.g. \"bdf\") for this case");
        autoFallback = e.what();
      }
    } else if (!noisyGd && tsType == kExponentialTsType) {
      const auto weights = mesh.createVector();
      try {
        disc.setSymmetrisingWeights(weights);
        evolution = std::make_unique<solver::ExponentialEvolution>(
            mesh, disc.spatialOperator(), weights,
            solver::ExponentialSettings{c.time.dt, c.time.steps(), c.output.every});
        // The expansion's error bound holds in the chi^2 norm of the Gibbs density; a start with mass where that
        // density is negligible turns it into no bound in the max norm (a double well with small noise blew up to
        // -7e6). "auto" then takes BDF; an explicit "exponential" is the user's choice.
        const auto start = mesh.createVector();
        disc.setInitialState(start);
        const double factor = solver::chiSquaredToMaxNormFactor(weights, start, 2);
        if (!(factor <= solver::kLargestNormFactor) && requestedTsType(c.solver) == kAutoTsType) {
          evolution.reset();
          std::ostringstream why;
          why << "the start puts mass where the Gibbs density exp(-L/D) is negligible: the expansion's error bound, "
                 "made in the chi^2 norm of that density, is G = "
              << factor << " times larger in the max norm (allowed " << solver::kLargestNormFactor << ")";
          autoFallback = why.str();
        }
      } catch (const std::logic_error& e) {  // std::invalid_argument included
        const std::string reason = "exp(T A) needs a Scharfetter–Gummel operator with detailed balance (noise Sigma "
                                   "and Sigma' multiples of the identity, solver.spatial_order = 2): " +
                                   std::string(e.what());
        if (requestedTsType(c.solver) != kAutoTsType)
          throw SolverConfigurationError("solver.ts_type = \"exponential\": " + reason +
                                         "; use a PETSc time integrator (e.g. \"bdf\") for this case");
        // "auto": BDF2 instead, and the summary says why.
        autoFallback = reason;
      }
    }
    if (!noisyGd && !evolution) {
      const solver::TimeIntegration ti{c.time.dt, c.time.steps(), steppingType, c.solver.ksp_type, c.solver.pc_type,
                                       ""};
      evolution = std::make_unique<solver::DensityEvolution>(mesh, disc.spatialOperator().assemble(), ti);
    }
    if (noisyGd)
      gd = std::make_unique<solver::NoisyGradientDescent>(mesh, minibatchDrift(c, losses, dim), noisyGdSettings(c));
  } catch (const solver::LatticeBudgetExceeded& e) {
    const std::string allowed = "a tolerance whose lattice fits the budget (" +
                                formatNumber(latticeWorkBudget(c.mesh.dim), "%.3g") + " point updates, " +
                                formatNumber(kLatticePointBudget, "%.3g") +
                                " points per dataset): a larger one, fewer cells or fewer distinct records";
    const std::string value = io::shortestText(c.batch.mixtureTolerance);
    throw InputError(c.sourcePath.string() + ": batch.mixture_tolerance = " + value + ": " + e.what() +
                         " (docs/noisy-gd.md §9.2); allowed: " + allowed,
                     "batch.mixture_tolerance", value, allowed);
  } catch (const solver::PaddedMeshTooLarge& e) {
    const std::string allowed = "noisy_gd.diffusion = \"fokker_planck\", or a noise step sqrt(2 eta) sigma whose "
                                "padding keeps the mesh within 2^28 cells (a smaller noise.sigma or noisy_gd.eta, "
                                "fewer or wider cells)";
    throw InputError(c.sourcePath.string() + ": noisy_gd.diffusion = \"exact_convolution\": " + e.what() +
                         " (docs/noisy-gd.md §6); allowed: " + allowed,
                     "noisy_gd.diffusion", "\"exact_convolution\"", allowed);
  } catch (const PetscFailure& e) {
    throw SolverConfigurationError("PETSc rejected the solver configuration: " +
                                   (capture.message().empty() ? std::string(e.what()) : capture.message()));
  }
}

/// The PETSc options are not in the case: the resolved solver configuration must be the checkpoint's. A time
/// integrator whose step-to-step state is not known cannot be checkpointed: the run goes on without checkpoints and
/// the summary says why (a restart of such a run is refused).
void RunPlan::requireResumableSolver(const io::CheckpointData* resume) {
  if (resume && resume->text("/case/solver") != solverDescription)
    throw CheckpointError("--restart: the solver configuration differs from the checkpoint's ('" + resume->source +
                          "', dataset /case/solver): '" + solverDescription + "' here, '" +
                          resume->text("/case/solver") + "' in the checkpoint; give the first run's PETSc options");
  noCheckpoints = c.output.checkpointEvery == 0 ? "output.checkpoint_every = 0" : "";
  if (evolution && noCheckpoints.empty()) {
    try {
      evolution->requireCheckpointable();
    } catch (const PetscFailure& e) {
      if (resume) throw SolverConfigurationError(e.what());
      noCheckpoints = e.what();
    }
  }
}

/// The closed form, where one exists, as functions of (step, time). Projected noisy GD has none: Pi_C breaks it.
/// Minibatch noisy SGD has its own (app/run/MinibatchOracle.hpp), not the full-batch recursion.
void RunPlan::buildOracle() {
  if (noisyGd && c.batch.sampling != "full") {  // minibatch noisy SGD: its own closed forms (MATH.md §8)
    reference = minibatchOracle(c, losses, initial, mesh, representation);
    return;
  }
  langevinReference = noisyGd ? std::nullopt : validation::GaussianReference::forProblem(problem);
  gdReference = noisyGd && c.noisyGd.constraintSet.isNone() && c.batch.sampling == "full"
                    ? validation::NoisyGdReference::forQuadratic(*losses.lossD, *losses.lossDPrime, c.noisyGd.eta,
                                                                 c.noise.sigmaFor(false, dim), initial)
                    : std::nullopt;
  if (langevinReference) {
    const auto& r = *langevinReference;
    reference = ExactOracle{[&r](double a, long, double t) { return r.renyi(a, t); },
                            [&r](long, double t) { return r.kl(t); },
                            [&r, this](Vec u, long, double t) { return r.densityErrors(mesh, u, t); },
                            [&r](long, double t) { return std::pair{r.lawP(t), r.lawQ(t)}; }};
  } else if (gdReference) {
    const auto& r = *gdReference;
    reference = ExactOracle{[&r](double a, long k, double) { return r.renyi(a, k); },
                            [&r](long k, double) { return r.kl(k); },
                            [&r, this](Vec u, long k, double) { return r.densityErrors(mesh, u, k, representation); },
                            [&r](long k, double) { return std::pair{r.lawP(k), r.lawQ(k)}; }};
  }
}

std::string RunPlan::negativeMassRemedy() const {
  std::string remedy = "refine the mesh";
  if (c.solver.spatial_order != 2) remedy += ", use solver.spatial_order = 2";
  if (dynamic_cast<const solver::ExponentialEvolution*>(evolution.get()))
    remedy += ", or use solver.ts_type = \"bdf\"";
  else if (evolution)
    remedy += ", or use a smaller time.dt";
  else if (c.noisyGd.diffusion == "fokker_planck")
    remedy += ", or use more noisy_gd.diffusion_substeps";
  return remedy;
}

double RunPlan::tEnd() const {
  return noisyGd ? c.noisyGd.eta * static_cast<double>(steps()) : c.time.dt * static_cast<double>(steps());
}

std::optional<double> RunPlan::statedSensitivity() const {
  return c.loss.sensitivity ? c.loss.sensitivity : constants.sensitivity;
}

}  // namespace fpdp::app
