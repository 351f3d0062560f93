#include "app/RunCase.hpp"

#include <petscsys.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <Eigen/Eigenvalues>

#include "app/Checkpoint.hpp"
#include "app/ModelBuilding.hpp"
#include "app/observers/FunctionalsOutput.hpp"
#include "app/NumberFormat.hpp"
#include "app/observers/NumericalFaults.hpp"
#include "app/observers/ParaViewOutput.hpp"
#include "app/PetscConfiguration.hpp"
#include "app/observers/PrivacyOutput.hpp"
#include "app/observers/RenyiRateOutput.hpp"
#include "io/CsvTable.hpp"
#include "io/Hdf5Output.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "models/DivergenceGrids.hpp"
#include "models/Gaussian.hpp"
#include "models/ExpressionLoss.hpp"
#include "models/Loss.hpp"
#include "models/LossConstants.hpp"
#include "models/PrivacyBounds.hpp"
#include "solver/propagation/DensityEvolution.hpp"
#include "solver/propagation/ExponentialEvolution.hpp"
#include "solver/functionals/Divergences.hpp"
#include "solver/discretisation/LangevinDiscretisation.hpp"
#include "solver/functionals/KlRate.hpp"
#include "solver/noisygd/NoisyGradientDescent.hpp"
#include "solver/noisygd/TracingDiffusion.hpp"
#include "validation/GaussianReference.hpp"
#include "validation/NoisyGdReference.hpp"

namespace fs = std::filesystem;

namespace fpdp::app {

namespace {

/// The PETSc log stages of a run, so that -log_view splits the whole run (docs/scaling.md §1): set-up (models,
/// mesh, operator, integrator, output files opened), stepping (the integrator, output steps excluded), output steps
/// (divergences, bounds, reference errors, files at each output step) and finish (the tables and fpdp.h5 closed).
struct RunStages {
  PetscLogStage setup = 0, stepping = 0, outputSteps = 0, finish = 0;
  static const RunStages& get() {
    static const RunStages stages = [] {
      RunStages r;
      FPDP_PETSC(PetscLogStageRegister("fpdp set-up", &r.setup));
      FPDP_PETSC(PetscLogStageRegister("fpdp stepping", &r.stepping));
      FPDP_PETSC(PetscLogStageRegister("fpdp output steps", &r.outputSteps));
      FPDP_PETSC(PetscLogStageRegister("fpdp finish", &r.finish));
      return r;
    }();
    return stages;
  }
};

/// A log stage pushed for the object's lifetime (popped on every path out, exceptions included).
class ScopedLogStage {
public:
  explicit ScopedLogStage(PetscLogStage stage) { FPDP_PETSC(PetscLogStagePush(stage)); }
  ~ScopedLogStage() { (void)PetscLogStagePop(); }
  ScopedLogStage(const ScopedLogStage&) = delete;
  ScopedLogStage& operator=(const ScopedLogStage&) = delete;
};

constexpr const char* kMarker = "parameters.toml";  // every fpdp output directory holds this file

/// The gradient of an empirical loss as a field on R^3 (components >= dim are 0). The quadratic loss, whose empirical
/// gradient is lambda (theta - xbar) exactly, skips the loop over the n records (n = 5000 in the paper's Figure 1).
solver::GradientField gradientField(std::shared_ptr<const models::EmpiricalLoss> L, int dim) {
  if (const auto* q = dynamic_cast<const models::QuadraticLoss*>(&L->loss()); q && L->gradientIsExact()) {
    const models::Vector xbar = L->data().mean();
    const double lambda = q->lambda();
    std::array<double, 3> c{0, 0, 0};
    for (int a = 0; a < dim; ++a) c[a] = xbar[a];
    return [lambda, c, dim](const solver::Point3& t) {
      solver::Point3 g{0, 0, 0};
      for (int a = 0; a < dim; ++a) g[a] = lambda * (t[a] - c[a]);
      return g;
    };
  }
  return [L, dim](const solver::Point3& t) {
    models::Vector x(dim);
    for (int a = 0; a < dim; ++a) x[a] = t[a];
    const models::Vector g = L->gradient(x);
    solver::Point3 out{0, 0, 0};
    for (int a = 0; a < dim; ++a) out[a] = g[a];
    return out;
  };
}

/// Broadcasts rank 0's success/failure of a rank-0-only action, so every rank throws together.
void collectiveCheck(MPI_Comm comm, int rank, const std::function<void()>& rank0Action) {
  int ok = 1;
  std::string msg;
  if (rank == 0) {
    try {
      rank0Action();
    } catch (const std::exception& e) {
      ok = 0;
      msg = e.what();
    }
  }
  FPDP_PETSC(MPI_Bcast(&ok, 1, MPI_INT, 0, comm));
  int len = static_cast<int>(msg.size());
  FPDP_PETSC(MPI_Bcast(&len, 1, MPI_INT, 0, comm));
  msg.resize(static_cast<std::size_t>(len));
  if (len > 0) FPDP_PETSC(MPI_Bcast(msg.data(), len, MPI_CHAR, 0, comm));
  if (!ok) throw OutputDirectoryError(msg);
}

/// (computed - exact) / exact, with the cases a division cannot express: both infinite agree (0), exact 0 gives the
/// computed value itself.
double relativeError(double computed, double exact) {
  if (std::isinf(exact) && std::isinf(computed) && (exact > 0) == (computed > 0)) return 0.0;
  if (exact == 0) return computed;
  return (computed - exact) / exact;
}

std::string fmt(double v, const char* f = "%.6e") { return formatNumber(v, f); }
std::string formatShare(double share) { return formatNumber(share, "%.1e"); }

}  // namespace

void checkOutputDirectory(const std::string& dir) {
  const fs::path p(dir);
  std::error_code ec;
  if (!fs::exists(p, ec)) return;
  if (!fs::is_directory(p, ec))
    throw OutputDirectoryError("output directory '" + dir + "' exists and is not a directory");
  if (fs::is_empty(p, ec) || fs::exists(p / kMarker, ec)) return;
  throw OutputDirectoryError("output directory '" + dir +
                             "' exists, is not empty and is not an fpdp output (no " + kMarker +
                             "); choose another --output");
}

int runCase(const Case& c, const RunOptions& options) {
  const auto wallStart = std::chrono::steady_clock::now();
  const RunStages& stages = RunStages::get();
  std::optional<ScopedLogStage> stage(std::in_place, stages.setup);
  MPI_Comm comm = PETSC_COMM_WORLD;
  PetscMPIInt rank, size;
  FPDP_PETSC(MPI_Comm_rank(comm, &rank));
  FPDP_PETSC(MPI_Comm_size(comm, &size));
  const io::CheckpointData* resume = options.resume.get();  // --restart: continue from this checkpoint
  if (resume) requireSameRanks(*resume, size);

  // 1. Models.
  const EmpiricalLosses losses = buildEmpiricalLosses(c);  // L_D, L_D' (with noisy GD's clipping)
  const auto& lossD = losses.lossD;
  const auto& lossDPrime = losses.lossDPrime;
  const models::Dataset& D = c.data.records;
  const models::Dataset& DPrime = lossDPrime->data();
  const bool replacement = c.neighbour.kind == models::NeighbourKind::Replace;
  const models::Gaussian initial(c.initial.mean, c.initial.covariance);
  // The closed-form gap of the pair exists for a replaced record (for add/remove, D and D' differ in n as well).
  const auto pairGap = replacement ? lossD->loss().pairGradientGap(D[c.neighbour.index], c.neighbour.replacement)
                                   : std::optional<models::Loss::PairGap>{};

  // 2. Mesh, 3. solver: Langevin diffusion (a TS over [0, t_end]) or noisy GD (K steps of push-forward + noise).
  const bool noisyGd = c.dynamics == "noisy_gd";
  solver::LangevinProblem problem{lossD, lossDPrime, c.noise.sigma, initial};
  const int d = c.mesh.dim;
  if (c.noise.covariance || c.noise.covariancePrime) {
    problem.sigmaMatrix = c.noise.sigmaFor(false, d);
    problem.sigmaMatrixPrime = noisyGd ? c.noise.sigmaFor(false, d) : c.noise.sigmaFor(true, d);
  }
  // Cross-diffusion terms need the diagonal neighbours: a box stencil (docs/scheme.md, anisotropic diffusion).
  // Fourth-order fluxes (docs/scheme.md §7) reach two cells and couple diagonal neighbours: width 2, box stencil.
  solver::SpatialAccuracy accuracy;
  accuracy.order = noisyGd ? 2 : c.solver.spatial_order;
  const bool fourth = accuracy.order == 4;
  const auto stencil = (fourth && d > 1) || solver::requiresBoxStencil(problem, d) ? meshes::StencilShape::Box
                                                                                   : meshes::StencilShape::Star;
  const meshes::DistributedBoxMesh mesh(comm, buildBox(c.mesh), 2, stencil, fourth ? 2 : 1);
  const solver::LangevinDiscretisation disc(mesh, problem, solver::FaceFluxScheme::ScharfetterGummel, accuracy);
  std::unique_ptr<solver::DensityPropagator> evolution;
  std::string autoFallback;  // solver.ts_type = "auto": why the exponential integrator was not used (empty: it was)
  std::unique_ptr<solver::NoisyGradientDescent> gd;
  {
    PetscErrorCapture capture;
    try {
      const std::string tsType = noisyGd ? std::string() : effectiveTsType(c);
      const std::string steppingType = tsType == kExponentialTsType ? "bdf" : tsType;  // "auto" may fall back
      if (!noisyGd && tsType == kExponentialTsType) {
        // exp(T A) between output steps (solver/propagation/ExponentialEvolution.hpp, docs/scheme.md §3): needs an operator with
        // detailed balance, which it measures.
        const auto weights = mesh.createVector();
        try {
          disc.setSymmetrisingWeights(weights);
          evolution = std::make_unique<solver::ExponentialEvolution>(
              mesh, disc.spatialOperator(), weights,
              solver::ExponentialSettings{c.time.dt, c.time.steps(), c.output.every});
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
      if (noisyGd) {
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
        gd = std::make_unique<solver::NoisyGradientDescent>(mesh, gradientField(lossD, c.mesh.dim),
                                                            gradientField(lossDPrime, c.mesh.dim), settings);
      }
    } catch (const PetscFailure& e) {
      throw SolverConfigurationError("PETSc rejected the solver configuration: " +
                                     (capture.message().empty() ? std::string(e.what()) : capture.message()));
    }
  }
  if (const auto unused = solver::unusedPetscOptions(); !unused.empty()) {
    std::string list;
    for (const auto& u : unused) list += (list.empty() ? "" : ", ") + u;
    throw SolverConfigurationError("PETSc option(s) not used by any solver component: " + list +
                                   " (misspelt? see 'fpdp run CASE -help')");
  }
  const std::string solverDescription = noisyGd ? gd->describe() : evolution->describe();
  // Cell averages, or point values at the cell centres (noisy_gd.diffusion = "chapman_kolmogorov").
  const meshes::FieldRepresentation representation =
      noisyGd ? gd->representation() : meshes::FieldRepresentation::CellAverages;
  // The PETSc options are not in the case: the resolved solver configuration must be the checkpoint's.
  if (resume && resume->text("/case/solver") != solverDescription)
    throw CheckpointError("--restart: the solver configuration differs from the checkpoint's ('" + resume->source +
                          "', dataset /case/solver): '" + solverDescription + "' here, '" +
                          resume->text("/case/solver") + "' in the checkpoint; give the first run's PETSc options");
  // A time integrator whose step-to-step state is not known cannot be checkpointed: the run goes on without
  // checkpoints and the summary says why (a restart of such a run is refused).
  std::string noCheckpoints = c.output.checkpointEvery == 0 ? "output.checkpoint_every = 0" : "";
  if (evolution && noCheckpoints.empty()) {
    try {
      evolution->requireCheckpointable();
    } catch (const PetscFailure& e) {
      if (resume) throw SolverConfigurationError(e.what());
      noCheckpoints = e.what();
    }
  }
  // The M-matrix condition of the assembled operator (docs/scheme.md): reported, never enforced by clipping.
  const solver::PositivityReport positivity = noisyGd ? solver::PositivityReport{} : disc.spatialOperator().positivity();
  const long highOrderFaces = disc.spatialOperator().highOrderFaces();
  const double gradientGap = disc.measuredGradientGap();
  const models::LossConstants constants = caseLossConstants(c, losses, mesh.box());
  const double truncated = disc.truncatedInitialMass();
  // A start narrower than the mesh resolves (docs/noisy-gd.md, "Under-resolved starts"): noisy GD takes its first
  // step exactly from the Gaussian where it can; otherwise the summary warns.
  const bool exactFirstStep =
      gd && gd->canStepFromGaussian() && disc.initialResolution() < solver::LangevinDiscretisation::kResolvedStartRatio;
  // The closed form, where one exists, as functions of (step, time).
  const auto langevinReference = noisyGd ? std::nullopt : validation::GaussianReference::forProblem(problem);
  // (Projected noisy GD has no Gaussian closed form: Pi_C breaks it.)
  const auto gdReference = noisyGd && c.noisyGd.constraintSet.isNone()
                               ? validation::NoisyGdReference::forQuadratic(*lossD, *lossDPrime, c.noisyGd.eta,
                                                                            c.noise.sigmaFor(false, d), initial)
                               : std::nullopt;
  struct ExactOracle {
    std::function<double(double, long, double)> renyi;
    std::function<double(long, double)> kl;
    std::function<validation::CellErrors(Vec, long, double)> errors;
  };
  std::optional<ExactOracle> reference;
  if (langevinReference) {
    const auto& r = *langevinReference;
    reference = ExactOracle{[&r](double a, long, double t) { return r.renyi(a, t); },
                            [&r](long, double t) { return r.kl(t); },
                            [&r, &mesh](Vec u, long, double t) { return r.densityErrors(mesh, u, t); }};
  } else if (gdReference) {
    const auto& r = *gdReference;
    reference = ExactOracle{[&r](double a, long k, double) { return r.renyi(a, k); },
                            [&r](long k, double) { return r.kl(k); },
                            [&r, &mesh, representation](Vec u, long k, double) {
                              return r.densityErrors(mesh, u, k, representation);
                            }};
  }

  // 4. Output directory (rank 0 writes the small files; every rank writes its part of fpdp.h5).
  const std::string finalDir = options.outputDirectory;
  const std::string workDir = finalDir + ".partial";
  collectiveCheck(comm, rank, [&] {
    if (resume) {  // continue in the interrupted run's directory (app/Checkpoint)
      removeTemporaryFiles(workDir);
      return;
    }
    checkOutputDirectory(finalDir);
    fs::remove_all(workDir);
    fs::create_directories(workDir);
    std::ofstream(workDir + "/" + kMarker) << c.resolvedToml;
  });
  bool success = false;
  struct Cleanup {  // a failed run leaves no half-written output behind
    const bool& success;
    int rank;
    std::string dir;
    bool keep;  // a continued run keeps its directory (and checkpoint) whatever happens
    ~Cleanup() {
      std::error_code ec;
      if (!success && rank == 0 && !keep) fs::remove_all(dir, ec);
    }
  } cleanup{success, rank, workDir, resume != nullptr};

  std::vector<std::string> columns{"step", "t", "mass_p", "mass_q", "kl", "tv"};
  for (const auto& name : renyiColumnNames(c.divergence.orders)) columns.push_back(name);
  columns.insert(columns.end(), {"min_p", "min_q", "negative_cells_p", "negative_cells_q"});
  // Projected noisy GD: the boundary bins' masses (part of mass_p, mass_q; in every divergence as singular masses).
  const bool constrained = gd && gd->constrained();
  if (constrained) columns.insert(columns.end(), {"boundary_mass_p", "boundary_mass_q"});
  std::vector<std::string> exactColumns{"step", "t", "l1_error_p", "l1_error_q", "kl_exact", "kl_rel_error"};
  for (const auto& o : c.divergence.orders) {
    exactColumns.push_back("renyi_" + o.label + "_exact");
    exactColumns.push_back("renyi_" + o.label + "_rel_error");
  }
  std::optional<io::CsvTable> csv, exactCsv;
  // A continued run appends to the CSV files (truncated to the checkpoint once everything is restored).
  if (resume)
    collectiveCheck(comm, rank, [&] { io::CsvTable::setContinuedPaths(continuedCsvPaths(*resume, workDir)); });
  if (rank == 0) {
    csv.emplace(workDir + "/divergence.csv", columns);
    if (reference) exactCsv.emplace(workDir + "/exact.csv", exactColumns);
  }
  io::Hdf5Output h5(workDir + "/fpdp.h5", mesh, c.resolvedToml, solverDescription);
  // The bounds of MATH.md §5 and the (eps, delta) figures of §7: bounds.csv, epsilon.csv (app/observers/PrivacyOutput).
  // S_g/n as stated in the case or computed for a replaced record; the measured gap for the instance variants.
  const std::optional<double> statedSg = c.loss.sensitivity ? c.loss.sensitivity : constants.sensitivity;
  PrivacyOutput privacy(c,
                        boundProblem(c, constants.strongConvexity, constants.smoothness,
                                     statedSg && replacement ? std::optional<double>(*statedSg / D.size())
                                                             : std::nullopt,
                                     gradientGap),
                        workDir, rank == 0);

  std::vector<double> orders;
  for (const auto& o : c.divergence.orders) orders.push_back(o.alpha);
  // Every functional of MATH.md §3 at each output step: renyi.csv, hockey_stick.csv, fpdp.h5 (FunctionalsOutput);
  // I_alpha^Sigma with the noise covariance of p's dynamics.
  const solver::FunctionalSettings functionalSettings{
      orders, models::uniformEpsGrid(c.divergence.hockeyStickEpsMax, c.divergence.hockeyStickEpsStep),
      static_cast<int>(c.divergence.privacyLossBins), c.noise.sigmaFor(false, d), representation};
  // One set of point-value and log-ratio-gradient work vectors for the divergence and Rényi-rate functionals
  // (solver/functionals/LogRatioWorkspace.hpp): each fills it inside its own evaluation.
  const auto logRatioWorkspace = std::make_shared<solver::LogRatioWorkspace>(mesh);
  const solver::DivergenceFunctionals divergences(mesh, functionalSettings, logRatioWorkspace);
  FunctionalsOutput functionalsOutput(workDir, rank, orders, functionalSettings.hockeyStickEps,
                                      functionalSettings.privacyLossBins);
  auto pField = mesh.createScalarVector(), qField = mesh.createScalarVector();
  // ParaView: VTK files at every field output (output.vtk) and fpdp.xmf over fpdp.h5 at the end (docs/output.md).
  std::optional<ParaViewOutput> paraview;
  if (c.output.fields)
    paraview.emplace(workDir, mesh, gradientField(lossD, d), gradientField(lossDPrime, d), orders.front(),
                     c.divergence.orders.front().label, c.output.vtk);
  // Langevin: the KL rate identity and the BKPP bounds at every output step (MATH.md §4), kl_rate.csv.
  std::unique_ptr<solver::KlRateFunctional> klRate;
  struct KlRateRow {
    long step;
    double t, kl, identity, boundIntegrand, tv;
    std::array<double, 3> gapSquared;
  };
  std::vector<KlRateRow> klRateRows;
  if (!noisyGd)
    klRate = std::make_unique<solver::KlRateFunctional>(mesh, gradientField(lossD, d), gradientField(lossDPrime, d),
                                                        c.noise.sigmaFor(false, d), c.noise.sigmaFor(true, d));

  // The rate of R_alpha (MATH.md §4), Lemma 2 and the LSI constant: renyi_rate.csv (app/observers/RenyiRateOutput,
  // docs/rate.md), for Langevin runs and for the tracing diffusions of noisy GD.
  std::optional<RenyiRateOutput> renyiRate;
  if (!noisyGd || c.noisyGd.tracing_substeps > 0)
    renyiRate.emplace(workDir, rank, mesh,
                      renyiRateSetup(c, D.size(), replacement, constants, orders,
                                     noisyGd ? solver::GradientField{} : gradientField(lossD, d),
                                     noisyGd ? solver::GradientField{} : gradientField(lossDPrime, d)),
                      logRatioWorkspace);

  const long steps = noisyGd ? c.noisyGd.steps : c.time.steps();
  std::vector<std::vector<double>> rows;
  solver::DivergenceValues last;
  long lastStep = -1;  // the step `last` was evaluated at
  std::optional<validation::CellErrors> lastErrors;
  solver::Outflow outflowP, outflowQ;  // noisy GD with exact convolution: mass carried beyond the mesh
  double initialMass[2] = {0, 0};
  double minDensity = INFINITY;
  long totalNegative = 0;
  double worstMassDrift = 0.0;
  std::vector<double> worstBoundaryShare(c.divergence.orders.size(), 0.0);
  auto lastProgress = std::chrono::steady_clock::now();
  const bool tty = isatty(STDOUT_FILENO);
  double largestWallMass = 0.0;  // fokker_planck with a constraint: largest mass in the wall cells before Pi_C
  long lemma4Violations = 0;
  double worstDriftGapRatio = 0.0;

  // Checkpoint (app/Checkpoint, docs/output.md): everything the rest of the run needs, at an output step after its
  // rows and fields are written. Collective; rank 0 writes DIR.partial/checkpoint.h5.
  // Never at step 0: a restart from there would save nothing (it cost 5 ms of a 0.2 s run at 256^2, and a whole
  // state's I/O on large meshes).
  auto checkpointDue = [&](long step) {
    return noCheckpoints.empty() && step > 0 && step < steps && step % c.output.every == 0 &&
           (step / c.output.every) % c.output.checkpointEvery == 0;
  };
  // Numerical faults at every step (app/observers/NumericalFaults.hpp); its running figures go into checkpoints.
  NumericalFaultMonitor faults(c.faults, mesh);
  auto writeCheckpoint = [&](long step, double t, Vec u) {
    io::CheckpointData ck;
    ck.putScalar("/format/version", kCheckpointFormat);
    ck.putText("/case/toml", c.resolvedToml);
    ck.putText("/case/solver", solverDescription);
    ck.putScalar("/run/ranks", size);
    ck.putScalar("/run/step", static_cast<double>(step));
    ck.putScalar("/run/time", t);
    ck.put("/state/u", gatherNatural(mesh, u));
    if (constrained) {
      ck.put("/state/boundary_p", gd->boundary().p);
      ck.put("/state/boundary_q", gd->boundary().q);
    }
    if (evolution) {
      const auto s = evolution->captureState();
      ck.putText("/integrator/ts_type", s.tsType);
      ck.putScalar("/integrator/step", static_cast<double>(s.step));
      ck.putScalar("/integrator/time", s.time);
      ck.putScalar("/integrator/time_step", s.timeStep);
      ck.putScalar("/integrator/jacobian_shift", s.jacobianShift);
      ck.putScalar("/integrator/bdf_order_in_use", static_cast<double>(s.bdfOrderInUse));
      ck.putScalar("/integrator/bdf_stored", static_cast<double>(s.bdfStored));
      ck.put("/integrator/bdf_times", s.bdfTimes);
      for (std::size_t i = 0; i < s.history.size(); ++i)
        ck.put("/integrator/history_" + std::to_string(i), gatherNatural(mesh, s.history[i]));
    }
    ck.putTable("/run/rows", rows, columns.size());
    std::vector<std::vector<double>> kr;
    for (const auto& r : klRateRows)
      kr.push_back({static_cast<double>(r.step), r.t, r.kl, r.identity, r.boundIntegrand, r.tv, r.gapSquared[0],
                    r.gapSquared[1], r.gapSquared[2]});
    ck.putTable("/run/kl_rate", kr, 9);
    ck.put("/run/initial_mass", {initialMass[0], initialMass[1]});
    ck.put("/run/min_density", {minDensity});
    ck.put("/run/total_negative", {static_cast<double>(totalNegative)});
    ck.put("/run/worst_mass_drift", {worstMassDrift});
    ck.put("/run/worst_boundary_share", worstBoundaryShare);
    ck.put("/run/outflow_p", std::vector<double>(outflowP.mass.begin(), outflowP.mass.end()));
    ck.put("/run/outflow_q", std::vector<double>(outflowQ.mass.begin(), outflowQ.mass.end()));
    ck.put("/run/largest_wall_mass", {largestWallMass});
    ck.put("/run/lemma4_violations", {static_cast<double>(lemma4Violations)});
    ck.put("/run/worst_drift_gap_ratio", {worstDriftGapRatio});
    h5.saveState(ck);
    privacy.saveState(ck);
    functionalsOutput.saveState(ck);
    if (renyiRate) renyiRate->saveState(ck);
    faults.saveState(ck);
    int ok = 1;
    std::string error;
    if (rank == 0) {
      try {
        saveCsvSizes(ck, workDir);
        io::writeCheckpointFile(workDir + "/" + kCheckpointName, ck);
      } catch (const std::exception& e) {
        ok = 0;
        error = e.what();
      }
    }
    FPDP_PETSC(MPI_Bcast(&ok, 1, MPI_INT, 0, comm));
    if (!ok) throw std::runtime_error(rank == 0 ? "writing the checkpoint: " + error : "writing the checkpoint failed");
    if (step == killAfterCheckpointStep()) std::raise(SIGKILL);  // the tests' interrupted run
  };

  auto observe = [&](long step, double t, Vec u) {
    // Numerical faults at every step (app/observers/NumericalFaults.hpp): a fault in faults.stop_on ends the stepping here.
    const WallFigures walls{!constrained, constrained && c.noisyGd.diffusion != "exact_convolution" ? largestWallMass
                                                                                                    : 0.0};
    if (faults.check(step, t, u, {outflowP.total(), outflowQ.total()}, walls)) {
      if (evolution) evolution->stopAfter(step);
      return;
    }
    const bool isOutput = step % c.output.every == 0 || step == steps;
    if (!isOutput) return;
    const auto v = divergences.evaluate(u, constrained ? &gd->boundary() : nullptr);
    if (step == 0) {
      initialMass[0] = v.p.mass;
      initialMass[1] = v.q.mass;
    }
    worstMassDrift = std::max({worstMassDrift, std::fabs(v.p.mass - initialMass[0]) / initialMass[0],
                               std::fabs(v.q.mass - initialMass[1]) / initialMass[1]});
    minDensity = std::min({minDensity, v.p.min, v.q.min});
    for (std::size_t k = 0; k < v.renyiBoundaryShare.size(); ++k)
      worstBoundaryShare[k] = std::max(worstBoundaryShare[k], v.renyiBoundaryShare[k]);
    totalNegative = std::max(totalNegative, v.p.negativeCells + v.q.negativeCells);
    std::vector<double> row{static_cast<double>(step), t, v.p.mass, v.q.mass, v.kl, v.tv};
    appendRenyiColumns(row, v);
    row.insert(row.end(), {v.p.min, v.q.min, static_cast<double>(v.p.negativeCells),
                           static_cast<double>(v.q.negativeCells)});
    if (constrained) row.insert(row.end(), {v.p.singularMass, v.q.singularMass});
    rows.push_back(row);
    if (csv) csv->addRow(row);
    privacy.observe(step, t, v);
    functionalsOutput.add(step, t, v);
    if (renyiRate && !noisyGd) renyiRate->observeLangevin(step, t, u, v);
    if (klRate) {
      const auto kr = klRate->evaluate(u);
      klRateRows.push_back({step, t, v.kl, kr.identity, kr.boundIntegrand, v.tv, kr.gapSquared});
    }
    if (reference) {
      const auto err = reference->errors(u, step, t);
      lastErrors = err;
      if (exactCsv) {
        const double klExact = reference->kl(step, t);
        std::vector<double> er{static_cast<double>(step), t, err.l1P, err.l1Q, klExact,
                               relativeError(v.kl, klExact)};
        for (std::size_t k = 0; k < orders.size(); ++k) {
          const double ex = reference->renyi(orders[k], step, t);
          er.push_back(ex);
          er.push_back(relativeError(v.renyi[k], ex));
        }
        exactCsv->addRow(er);
      }
    }
    if (c.output.fields) {
      FPDP_PETSC(VecStrideGather(u, 0, pField, INSERT_VALUES));
      FPDP_PETSC(VecStrideGather(u, 1, qField, INSERT_VALUES));
      h5.writeFields(step, t, {{"p", pField.get()}, {"q", qField.get()}});
      if (constrained) {
        h5.writeReplicated(io::Hdf5Output::stepGroup(step), "boundary_p", gd->boundary().p);
        h5.writeReplicated(io::Hdf5Output::stepGroup(step), "boundary_q", gd->boundary().q);
      }
      paraview->writeStep(step, t, pField, qField, columns, row);
    }
    last = v;
    lastStep = step;
    if (checkpointDue(step)) writeCheckpoint(step, t, u);
    const auto now = std::chrono::steady_clock::now();
    if (rank == 0 && !options.quiet && (std::chrono::duration<double>(now - lastProgress).count() > 1.0)) {
      const double el = std::chrono::duration<double>(now - wallStart).count();
      const double eta = step > 0 ? el * static_cast<double>(steps - step) / static_cast<double>(step) : 0.0;
      std::printf("%sstep %ld/%ld  t = %.4g  KL = %s  elapsed %.1f s  remaining ~%.1f s%s", tty ? "\r" : "", step,
                  steps, t, fmt(v.kl, "%.4e").c_str(), el, eta, tty ? "   " : "\n");
      std::fflush(stdout);
      lastProgress = now;
    }
  };

  auto u = mesh.createVector();
  disc.setInitialState(u, representation);
  h5.writeReplicated("/run", "initial_resolution", {disc.initialResolution()});  // docs/output.md
  // theta_0 ~ Pi_C(N(m_0, V_0)) (MATH.md §2.1): the initial mass outside C starts on the boundary of C.
  if (constrained) {
    gd->projectState(u);
    std::vector<double> points;
    for (const auto& x : gd->boundaryBins().points()) points.insert(points.end(), x.begin(), x.begin() + d);
    h5.writeReplicated("/boundary", "points", points, d);
  }
  stage.reset();
  stage.emplace(stages.stepping);
  const auto solveStart = std::chrono::steady_clock::now();
  // Models, mesh, operator, integrator and output files: everything before the first step.
  const double setupSeconds = std::chrono::duration<double>(solveStart - wallStart).count();
  double observerSeconds = 0.0;  // Langevin: time spent in observe() (divergences, output) during the stepping
  // Tracing diffusions (MATH.md §2.2) between the steps, when asked for: tracing.csv.
  std::unique_ptr<solver::TracingDiffusion> tracer;
  std::unique_ptr<solver::FieldGatherer> gatherer;
  std::optional<io::CsvTable> tracingCsv;
  const int tracingSubsteps = noisyGd ? static_cast<int>(c.noisyGd.tracing_substeps) : 0;
  double lemma4Bound = std::numeric_limits<double>::infinity();
  if (tracingSubsteps > 0) {
    // Lemma 4: |V_t - V'_t| <= S_g / n, with the stated S_g if the case gives one, else this pair's (MATH.md §1).
    const std::optional<double> Sg = c.loss.sensitivity ? c.loss.sensitivity : constants.sensitivity;
    if (Sg) lemma4Bound = *Sg / static_cast<double>(D.size());
    solver::TracingSettings ts;
    ts.eta = c.noisyGd.eta;
    const double s2 = c.noise.sigma * c.noise.sigma;
    ts.noiseVariance = {s2, s2, s2};
    ts.lemma4Bound = lemma4Bound;
    tracer = std::make_unique<solver::TracingDiffusion>(mesh.box(), gradientField(lossD, c.mesh.dim),
                                                        gradientField(lossDPrime, c.mesh.dim), ts);
    gatherer = std::make_unique<solver::FieldGatherer>(mesh);
    std::vector<std::string> tc{"step", "s", "t", "kl"};
    for (const auto& name : renyiColumnNames(c.divergence.orders)) tc.push_back(name);
    for (const auto& o : c.divergence.orders) tc.push_back("renyi_" + o.label + "_change_in_step");
    tc.insert(tc.end(), {"sup_drift_gap", "lemma4_bound", "cells_above_bound", "mass_error"});
    if (rank == 0) tracingCsv.emplace(workDir + "/tracing.csv", tc);
  }
  auto traceStep = [&](long k, Vec uk, const solver::DivergenceValues& atStart) {
    tracer->setStart(*gatherer, uk);
    auto work = mesh.createVector();
    for (const auto& st : tracer->run(tracingSubsteps)) {
      gatherer->scatter(st.p, work, 0);
      gatherer->scatter(st.pPrime, work, 1);
      const auto v = divergences.evaluate(work);
      std::vector<double> row{static_cast<double>(k), st.s, c.noisyGd.eta * static_cast<double>(k) + st.s, v.kl};
      if (renyiRate) renyiRate->observeTracing(k, st, row[2], work, v);
      appendRenyiColumns(row, v);
      for (std::size_t a = 0; a < orders.size(); ++a) row.push_back(v.renyi[a] - atStart.renyi[a]);
      row.insert(row.end(), {st.supGap, st.lemma4Bound, static_cast<double>(st.cellsAboveBound),
                             std::max(st.massErrorP, st.massErrorPPrime)});
      if (tracingCsv) tracingCsv->addRow(row);
      lemma4Violations += st.cellsAboveBound;
      if (std::isfinite(lemma4Bound) && lemma4Bound > 0)
        worstDriftGapRatio = std::max(worstDriftGapRatio, st.supGap / lemma4Bound);
    }
  };

  // --restart: the state, the integrator's history and every accumulated figure as they were at the checkpoint's
  // output step K (app/Checkpoint); the run goes on from K + 1.
  long resumeStep = -1;
  std::optional<solver::IntegratorState> integratorState;
  if (resume) {
    const io::CheckpointData& ck = *resume;
    resumeStep = ck.integer("/run/step", 0, steps - 1);
    if (resumeStep % c.output.every != 0) ck.fail("/run/step", "step " + std::to_string(resumeStep) + " is not an output step");
    const double tK = ck.scalar("/run/time");
    const double tExpected = noisyGd ? c.noisyGd.eta * static_cast<double>(resumeStep)
                                     : c.time.dt * static_cast<double>(resumeStep);
    // Langevin: TS sums the steps, so the time may differ from K dt in the last bits (1e-9 relative is far beyond).
    if (noisyGd ? tK != tExpected : std::fabs(tK - tExpected) > 1e-9 * std::max(1.0, std::fabs(tExpected)))
      ck.fail("/run/time", "time " + fmt(tK, "%.17g") + " does not belong to step " + std::to_string(resumeStep) +
                               " (expected " + fmt(tExpected, "%.17g") + ")");
    const std::size_t cells = mesh.box().totalCells();
    scatterNatural(mesh, ck.array("/state/u", 2 * cells), u);
    if (constrained) {
      const std::size_t bins = gd->boundaryBins().size();
      gd->setBoundary({ck.array("/state/boundary_p", bins), ck.array("/state/boundary_q", bins)});
    }
    if (evolution) {
      solver::IntegratorState s;
      s.tsType = ck.text("/integrator/ts_type");
      s.step = ck.integer("/integrator/step", resumeStep, resumeStep);
      s.time = ck.scalar("/integrator/time");
      if (s.time != tK) ck.fail("/integrator/time", "differs from /run/time");
      s.timeStep = ck.scalar("/integrator/time_step");
      if (!(s.timeStep > 0)) ck.fail("/integrator/time_step", "expected a step > 0");
      s.jacobianShift = ck.scalar("/integrator/jacobian_shift");
      s.bdfOrderInUse = ck.integer("/integrator/bdf_order_in_use", 0, 6);
      s.bdfStored = ck.integer("/integrator/bdf_stored", 0, 7);
      s.bdfTimes = ck.array("/integrator/bdf_times");
      if (s.bdfTimes.size() > 6) ck.fail("/integrator/bdf_times", "more than 6 times");
      for (std::size_t i = 0; i < s.bdfTimes.size(); ++i) {
        s.history.push_back(mesh.createVector());
        scatterNatural(mesh, ck.array("/integrator/history_" + std::to_string(i), 2 * cells), s.history.back());
      }
      integratorState = std::move(s);
    }
    const std::size_t outputs = static_cast<std::size_t>(resumeStep / c.output.every) + 1;
    rows = ck.table("/run/rows", columns.size(), outputs);
    for (std::size_t n = 0; n < outputs; ++n)
      if (rows[n][0] != static_cast<double>(n) * static_cast<double>(c.output.every))
        ck.fail("/run/rows/values", "row " + std::to_string(n) + " is not output step " +
                                        std::to_string(n * static_cast<std::size_t>(c.output.every)));
    if (!noisyGd)
      for (const auto& r : ck.table("/run/kl_rate", 9, outputs))
        klRateRows.push_back({static_cast<long>(r[0]), r[1], r[2], r[3], r[4], r[5], {r[6], r[7], r[8]}});
    const auto& m0 = ck.array("/run/initial_mass", 2);
    initialMass[0] = m0[0];
    initialMass[1] = m0[1];
    minDensity = ck.array("/run/min_density", 1)[0];
    totalNegative = ck.integer("/run/total_negative", 0, 1L << 52);
    worstMassDrift = ck.array("/run/worst_mass_drift", 1)[0];
    worstBoundaryShare = ck.array("/run/worst_boundary_share", worstBoundaryShare.size());
    const auto& op = ck.array("/run/outflow_p", 6);
    const auto& oq = ck.array("/run/outflow_q", 6);
    std::copy(op.begin(), op.end(), outflowP.mass.begin());
    std::copy(oq.begin(), oq.end(), outflowQ.mass.begin());
    largestWallMass = ck.array("/run/largest_wall_mass", 1)[0];
    lemma4Violations = ck.integer("/run/lemma4_violations", 0, 1L << 52);
    worstDriftGapRatio = ck.array("/run/worst_drift_gap_ratio", 1)[0];
    h5.restoreState(ck);
    if (h5.fieldStepCount() != (c.output.fields ? outputs : 0))
      ck.fail("/hdf5/field_steps", "expected " + std::to_string(c.output.fields ? outputs : 0) + " field steps");
    // What observe() computed at step K, recomputed from the restored state (the same numbers on the same ranks).
    last = divergences.evaluate(u, constrained ? &gd->boundary() : nullptr);
    lastStep = resumeStep;
    if (reference) lastErrors = reference->errors(u, resumeStep, tK);
    privacy.restoreState(ck, resumeStep, tK, last, outputs);
    functionalsOutput.restoreState(ck, outputs);
    if (renyiRate) renyiRate->restoreState(ck);
    faults.restoreState(ck);
    if (paraview) paraview->restoreSteps(columns, rows);
    collectiveCheck(comm, rank, [&] { truncateCsvFiles(ck, workDir); });
    io::CsvTable::setContinuedPaths({});
  }

  if (!noisyGd) {
    // The integrator's own time (the summary's "time integration") is the stepping time less the observer's.
    const solver::DensityPropagator::Observer timedObserve = [&](long step, double t, Vec state) {
      const ScopedLogStage outputStage(stages.outputSteps);
      const auto start = std::chrono::steady_clock::now();
      observe(step, t, state);
      observerSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    if (integratorState) evolution->resume(u, timedObserve, *integratorState);
    else evolution->run(u, timedObserve);
  } else {
    const auto observeStep = [&](long k, double t) {
      const ScopedLogStage outputStage(stages.outputSteps);
      observe(k, t, u);
    };
    if (!resume) observeStep(0, 0.0);
    for (long k = resumeStep < 0 ? 1 : resumeStep + 1; k <= steps && !faults.stopped(); ++k) {
      // The tracing pair starts from step k-1, whose divergences the observer has if it was an output step.
      if (tracer) traceStep(k - 1, u, lastStep == k - 1 ? last : divergences.evaluate(u));
      const auto report = k == 1 && exactFirstStep ? gd->stepFromGaussian(u, disc.problem().initial) : gd->step(u);
      for (int i = 0; i < 6; ++i) {
        outflowP.mass[i] += report.pushP.mass[i] + report.diffP.mass[i];
        outflowQ.mass[i] += report.pushQ.mass[i] + report.diffQ.mass[i];
      }
      largestWallMass = std::max({largestWallMass, report.wallMassP, report.wallMassQ});
      observeStep(k, c.noisyGd.eta * static_cast<double>(k));
    }
  }
  faults.throwIfStopped();  // the run fails: DIR.partial is removed (Cleanup), no result directory appears
  const double solveSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - solveStart).count();
  stage.reset();
  stage.emplace(stages.finish);
  // kl_rate.csv: the rate both ways (the identity by quadrature; the central difference of the computed KL between
  // neighbouring output steps), the integrated Young bound KL_0 + int (1/4) E_p|...|^2 (trapezoid over the output times)
  // with its ratio to the computed KL, and with Sigma = Sigma' the crude bound t sup|b - b'|^2 / (4 lambda_min(Sigma)).
  if (klRate && rank == 0) {
    const models::Matrix S = c.noise.sigmaFor(false, d), Sp = c.noise.sigmaFor(true, d);
    const bool equalNoise = (S - Sp).norm() == 0.0;
    const double lambdaMin = Eigen::SelfAdjointEigenSolver<models::Matrix>(S).eigenvalues().minCoeff();
    io::CsvTable table(workDir + "/kl_rate.csv", {"step", "t", "kl", "dkl_dt_identity", "dkl_dt_finite_difference",
                                                  "kl_bound_integrated", "bound_to_kl", "kl_bound_crude", "tv",
                                                  "tv_pinsker_bound", "gap_sq_x", "gap_sq_y", "gap_sq_z"});
    double integral = 0.0;
    for (std::size_t n = 0; n < klRateRows.size(); ++n) {
      const auto& r = klRateRows[n];
      if (n > 0)
        integral += 0.5 * (r.boundIntegrand + klRateRows[n - 1].boundIntegrand) * (r.t - klRateRows[n - 1].t);
      const double fd = (n > 0 && n + 1 < klRateRows.size())
                            ? (klRateRows[n + 1].kl - klRateRows[n - 1].kl) / (klRateRows[n + 1].t - klRateRows[n - 1].t)
                            : std::numeric_limits<double>::quiet_NaN();
      const double bound = klRateRows.front().kl + integral;
      const double crude = equalNoise ? models::klBoundSameNoise(gradientGap, lambdaMin, r.t)
                                      : std::numeric_limits<double>::quiet_NaN();
      table.addRow({static_cast<double>(r.step), r.t, r.kl, r.identity, fd, bound,
                    r.kl > 0 ? bound / r.kl : std::numeric_limits<double>::quiet_NaN(), crude, r.tv,
                    std::sqrt(0.5 * r.kl), r.gapSquared[0], r.gapSquared[1], r.gapSquared[2]});
    }
  }
  h5.writeSeries(columns, rows);
  privacy.writeHdf5(h5);
  functionalsOutput.writeHdf5(h5);
  if (renyiRate) renyiRate->finish(h5);
  h5.close();
  privacy.close();
  functionalsOutput.close();
  if (paraview) paraview->writeXdmf();
  if (csv) csv.reset();
  if (exactCsv) exactCsv.reset();
  if (tracingCsv) tracingCsv.reset();

  // PNG plots (scripts/plot-run) from the files just written; a failure is a warning, not a failed run.
  std::string plotWarning;
  if (c.output.plots && rank == 0) plotWarning = drawPlots(workDir);
  collectiveCheck(comm, rank, [&] {
    std::error_code ec;
    fs::remove_all(finalDir, ec);  // checked above to be absent, empty or an earlier fpdp output
    fs::rename(workDir, finalDir);
    // The checkpoint and the per-step field files served the run; a finished run is fpdp.h5 and the rest.
    fs::remove(finalDir + "/" + kCheckpointName, ec);
    io::Hdf5Output::removeStepFiles(finalDir);
  });
  success = true;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();

  // 5. Summary.
  if (rank == 0) {
    if (!options.quiet && tty) std::printf("\n");
    std::ostringstream s;
    const double tEnd = noisyGd ? c.noisyGd.eta * static_cast<double>(steps) : c.time.dt * static_cast<double>(steps);
    s << "\nfpdp run '" << c.name << "': " << (noisyGd ? "noisy gradient descent" : "Langevin diffusion") << ", "
      << c.mesh.dim << "-D, cells";
    for (int a = 0; a < c.mesh.dim; ++a) s << (a ? "x" : " ") << c.mesh.cells[a];
    s << ", " << size << " rank(s)\n";
    s << "  loss " << c.loss.type << ", n = " << D.size() << ", neighbour: ";
    if (c.neighbour.kind == models::NeighbourKind::Replace) s << "replaces record " << c.neighbour.index;
    else if (c.neighbour.kind == models::NeighbourKind::Add) s << "adds a record (n' = " << DPrime.size() << ")";
    else s << "removes record " << c.neighbour.index << " (n' = " << DPrime.size() << ")";
    s << ", sigma = " << c.noise.sigma << "\n";
    if (noisyGd) {
      s << "  eta = " << c.noisyGd.eta << ", K = " << steps << " steps (t = eta K = " << tEnd << ")\n  "
        << solverDescription << "\n";
      if (const auto* kq = gd->kernelQuadrature()) {
        // docs/noisy-gd.md §7: the midpoint rule's aliasing, per step and over the K steps.
        // The start N(m_0, V_0) is summed by the first step: its own aliasing term joins once.
        double startTerm = 0.0;
        for (int a = 0; a < d; ++a)
          startTerm += solver::ChapmanKolmogorovQuadrature::aliasingTerm(std::sqrt(c.initial.covariance(a, a)),
                                                                          mesh.box().axis(a).width(0));
        const double perStep = kq->aliasingEstimate();
        const double total = perStep * static_cast<double>(steps) + startTerm;
        s << "  state: point values at the cell centres; quadrature aliasing estimate " << fmt(perStep, "%.2e")
          << " per step, " << fmt(total, "%.2e") << " over K steps and the start\n";
        if (total > 1e-8)
          s << "  WARNING: the mesh resolves the transition kernel poorly (" << fmt(kq->resolution(), "%.2f")
            << " cells per noise standard deviation, aliasing up to " << fmt(total, "%.1e")
            << " of the densities): refine mesh.cells (about 1.5 cells per standard deviation reach round-off)\n";
      }
    } else {
      s << "  solver: " << solverDescription << ", dt = " << c.time.dt << ", " << steps << " steps to t = " << tEnd
        << "\n";
      if (!autoFallback.empty())
        s << "  solver.ts_type = \"auto\" chose bdf, not exponential: " << autoFallback << "\n";
    }
    s << "  measured sup|grad L_D - grad L_D'| on the mesh = " << fmt(gradientGap);
    if (pairGap) s << "  (closed form " << (pairGap->exact ? "= " : "<= ") << fmt(pairGap->value / D.size()) << ")";
    s << "\n";
    auto constant = [&](const char* name, const std::optional<double>& v, const std::string& source) {
      s << "  " << name << " = " << (v ? fmt(*v, "%.6g") : std::string("none")) << "  (" << source << ")\n";
    };
    constant("lambda (strong convexity)", constants.strongConvexity, constants.strongConvexitySource);
    constant("beta (smoothness)", constants.smoothness, constants.smoothnessSource);
    if (c.loss.sensitivity)
      s << "  S_g = " << fmt(*c.loss.sensitivity, "%.6g") << "  (given in the case file)\n";
    else
      constant("S_g (sensitivity of this pair)", constants.sensitivity, constants.sensitivitySource);
    if (noisyGd && constants.smoothness) {
      const double etaBeta = c.noisyGd.eta * *constants.smoothness;
      s << "  assumption eta < 1/beta (CYS, FMTT contraction): eta * beta = " << fmt(etaBeta, "%.4g")
        << (etaBeta < 1.0 ? "  holds\n" : "  FAILS: the bounds that need it do not apply\n");
    }
    if (!constants.strongConvexity || *constants.strongConvexity <= 0)
      s << "  assumption lambda > 0 (strong convexity, CYS Thm 2/Cor 1): FAILS for this loss\n";
    s << "  initial mass outside the box (renormalised) = " << fmt(truncated, "%.3e") << "\n\n";
    s << "  quantity            computed";
    if (reference) s << "           exact              rel. error";
    s << "\n";
    auto line = [&](const std::string& name, double val, std::optional<double> exact) {
      char b[200];
      std::snprintf(b, sizeof b, "  %-18s  %-17s", name.c_str(), fmt(val, "%.10e").c_str());
      s << b;
      if (exact) {
        std::snprintf(b, sizeof b, "  %-17s  %s", fmt(*exact, "%.10e").c_str(),
                      fmt(relativeError(val, *exact), "%.2e").c_str());
        s << b;
      }
      s << "\n";
    };
    line("KL(p||q)", last.kl, reference ? std::optional<double>(reference->kl(steps, tEnd)) : std::nullopt);
    for (std::size_t k = 0; k < orders.size(); ++k) {
      // The dense grid's 156 orders are in renyi.csv; the summary shows a few.
      const std::string& label = c.divergence.orders[k].label;
      if (c.divergence.denseOrders && label != "2" && label != "10" && label != "32" && label != "1024") continue;
      line("R_" + label, last.renyi[k],
           reference ? std::optional<double>(reference->renyi(orders[k], steps, tEnd)) : std::nullopt);
    }
    if (c.divergence.denseOrders) s << "  (R_alpha at all " << orders.size() << " orders: renyi.csv)\n";
    for (std::size_t k = 0; k < orders.size() && k < last.informationRatio.size(); ++k)
      if (c.divergence.orders[k].label == "2" || (!c.divergence.denseOrders && k == 0)) {
        line("I_" + c.divergence.orders[k].label + "/E_" + c.divergence.orders[k].label, last.informationRatio[k],
             std::nullopt);
        break;
      }
    line("TV(p,q)", last.tv, std::nullopt);
    // BKPP §3.1: TV is the best membership-inference advantage; Pinsker bounds it by sqrt(KL/2).
    line("sqrt(KL/2) Pinsker", std::sqrt(0.5 * last.kl), std::nullopt);
    for (std::size_t k = 0; k < orders.size() && k < last.renyiStatus.size(); ++k)
      if (last.renyiStatus[k] != solver::RenyiStatus::Finite)
        s << "  R_" << c.divergence.orders[k].label << " at the end: " << solver::renyiStatusName(last.renyiStatus[k])
          << (last.renyiStatus[k] == solver::RenyiStatus::InfiniteDetected
                  ? " (R_alpha = +inf, not the box's finite number: q = 0 where p > 0, or the fitted far-field precision alpha P_p + (1 - alpha) P_q of the integrand is not positive definite)\n"
              : last.renyiStatus[k] == solver::RenyiStatus::NoiseSuspect
                  ? " (" + formatShare(last.renyiNoiseShare[k]) +
                        " of E_alpha lies in cells at the scheme's noise floor, below " +
                        fmt(solver::DivergenceFunctionals::kNoiseFloorFactor, "%g") +
                        "x the largest negative value: the number is not reliable; tighten the linear solver "
                        "(ksp_rtol), shorten dt or use a sign-preserving scheme, docs/scheme.md §5)\n"
                  : " (a non-negligible share of the integrand lies at the walls: the number is not reliable)\n");
    s << "\n";
    char b[400];
    std::snprintf(b, sizeof b,
                  "  mass p, q at t_end      %.16f  %.16f  (largest relative drift %.2e)\n"
                  "  min density (all outputs)  %.3e  (negative cells at worst: %ld)\n",
                  last.p.mass, last.q.mass, worstMassDrift, minDensity, totalNegative);
    s << b;
    if (!noisyGd && fourth) {
      s << "  spatial order 4 (docs/scheme.md §7): " << highOrderFaces << " faces carry the fourth-order flux, the rest "
        << "the second-order one; the fourth-order rows are not sign-preserving, so the row check below counts them\n";
    }
    if (!noisyGd) {
      if (positivity.holds) {
        s << "  positivity condition of the operator (docs/scheme.md): holds in all " << positivity.rows << " rows\n";
      } else {
        std::snprintf(b, sizeof b,
                      "  positivity condition of the operator FAILS in %ld of %ld rows (most negative off-diagonal "
                      "%.3e, %.2e of the diagonal): densities may go negative; the most negative value produced was "
                      "%.3e (%.2e of the largest)\n",
                      positivity.violatingRows, positivity.rows, positivity.mostNegativeOffDiagonal,
                      positivity.worstRelativeViolation, minDensity,
                      minDensity / std::max(last.p.max, last.q.max));
        s << b;
      }
    }
    if (lastErrors) {
      std::snprintf(b, sizeof b, "  L1 error vs exact cell averages at the end: p %.3e, q %.3e\n", lastErrors->l1P,
                    lastErrors->l1Q);
      s << b;
    }
    // Warnings: numbers the box may have made wrong are flagged, never passed off as accurate.
    // docs/noisy-gd.md §5: the implicit heat solve of a noisy-GD step gives the kernel heavier
    // (rational) tails, which orders above 2 weight by r^alpha (logistic case: R_10 18.1 vs 30.69 converged).
    if (noisyGd && c.noisyGd.diffusion == "fokker_planck")
      for (const auto& o : c.divergence.orders)
        if (o.alpha > 2.0)
          s << "  WARNING: R_" << o.label << " (order > 2) by noisy_gd.diffusion = \"fokker_planck\" depends on the far "
            << "tails, which implicit heat steps make too heavy (docs/noisy-gd.md §5): cross-check with "
               "\"exact_convolution\" (diagonal Sigma)\n";
    constexpr double kShareTolerance = 1e-6;
    for (std::size_t k = 0; k < orders.size(); ++k)
      if (worstBoundaryShare[k] > kShareTolerance && !(k < last.renyiStatus.size() &&
                                                        last.renyiStatus[k] == solver::RenyiStatus::InfiniteDetected)) {
        std::snprintf(b, sizeof b,
                      "  WARNING: R_%s is not reliable: up to %.1e of its integrand lies in the cells at the box "
                      "walls (the tilted law p^a q^(1-a) leaves the box); enlarge mesh.lower/upper\n",
                      c.divergence.orders[k].label.c_str(), worstBoundaryShare[k]);
        s << b;
      }
    if (tracer) {
      std::snprintf(b, sizeof b,
                    "  tracing diffusions (%d substeps per step, tracing.csv): sup |V_t - V'_t| / (S_g/n) = %.6f, "
                    "Lemma 4 %s\n",
                    tracingSubsteps, worstDriftGapRatio,
                    lemma4Violations == 0 ? "holds at every cell and time"
                                          : ("VIOLATED in " + std::to_string(lemma4Violations) + " cell-times").c_str());
      s << b;
    }
    if (constrained) {
      // docs/noisy-gd.md §6: the constraint, its boundary bins, and what the mesh walls may have done to the noise.
      const double margin = gd->constraintMargin();
      const bool fokkerPlanck = c.noisyGd.diffusion != "exact_convolution";
      s << "  constraint C: " << c.noisyGd.constraintSet.describe() << "\n";
      std::snprintf(b, sizeof b,
                    "  boundary bins: %zu; boundary mass at t_end: p %.10f, q %.10f (in mass_p, mass_q and in every "
                    "divergence)\n  distance from C to the mesh walls: %.2f noise standard deviations "
                    "sqrt(2 eta Sigma_aa)%s\n",
                    gd->boundaryBins().size(), last.p.singularMass, last.q.singularMass, margin,
                    fokkerPlanck ? "" : " (exact_convolution: the padded mesh takes the kernel's reach, Pi_C the rest)");
      s << b;
      if (fokkerPlanck) {
        std::snprintf(b, sizeof b, "  largest mass in the wall cells after the noise (no-flux walls): %.3e%s\n",
                      largestWallMass,
                      (margin < 5.0 || largestWallMass > 1e-8)
                          ? "  WARNING: the walls reflect noise that should reach beyond them; leave at least 5 "
                            "noise standard deviations between C and the walls (mesh.lower/upper)"
                          : "");
        s << b;
      }
    }
    if (outflowP.total() > 0 || outflowQ.total() > 0) {
      std::snprintf(b, sizeof b,
                    "  mass carried beyond the mesh (push-forward and noise kernel): p %.3e, q %.3e%s\n",
                    outflowP.total(), outflowQ.total(),
                    std::max(outflowP.total(), outflowQ.total()) > 1e-8 ? "  WARNING: enlarge the box" : "");
      s << b;
    }
    faults.summary(s);
    if (!divergences.informationUnavailable().empty())
      s << "  WARNING: the Renyi information is not computed (nan in renyi.csv): "
        << divergences.informationUnavailable() << "\n";
    if (exactFirstStep) s << "  the initial density is narrower than the mesh resolves: step 1 taken exactly from it\n";
    else if (const std::string w = disc.underResolvedStartWarning(); !w.empty()) s << "  WARNING: " << w << "\n";
    if (truncated > 1e-10) {
      std::snprintf(b, sizeof b, "  WARNING: the box cuts off %.1e of the initial density (renormalised away)\n",
                    truncated);
      s << b;
    }
    if (renyiRate) renyiRate->summary(s);
    privacy.summary(s);
    s << "\n";
    if (!noCheckpoints.empty()) s << "  checkpoints: none (" << noCheckpoints << ")\n";
    if (!c.output.plots) s << "  plots: not drawn (output.plots = false)\n";
    else if (plotWarning.empty()) s << "  plots: PNG files in the output directory (scripts/plot-run)\n";
    else s << "  WARNING: " << plotWarning << "\n";
    std::snprintf(b, sizeof b, "  wall time %.2f s (set-up %.3f s; time stepping and output %.2f s", wall,
                  setupSeconds, solveSeconds);
    s << b;
    if (!noisyGd) {
      std::snprintf(b, sizeof b, "; time integration %.3f s", solveSeconds - observerSeconds);
      s << b;
    }
    s << ")\n  output: " << finalDir << "/\n";
    std::fputs(s.str().c_str(), stdout);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace fpdp::app
