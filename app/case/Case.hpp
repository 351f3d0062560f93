#pragma once
// A case: the typed, validated, defaults-filled content of a case file (docs/parameters.md).
// Produced only by readCase() (app/case/CaseReader.hpp); every field here has passed validation.
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/ConstraintSet.hpp"
#include "models/DataGenerator.hpp"
#include "models/Dataset.hpp"

namespace fpdp::app {

struct MeshSpec {
  // 1..6, the length of lower/upper/cells: 1..3 on a PETSc DMDA, 4..6 by the whole-field noisy-GD solver
  // (app/run/WholeFieldRun); entries beyond dim are unused.
  int dim = 0;
  std::array<double, 6> lower{0, 0, 0, 0, 0, 0};
  std::array<double, 6> upper{1, 1, 1, 1, 1, 1};
  std::array<int, 6> cells{1, 1, 1, 1, 1, 1};
  std::array<double, 6> grading{1.0, 1.0, 1.0, 1.0, 1.0, 1.0};  // per-axis geometric growth of cell widths from the middle
};

struct LossSpec {
  std::string type;                   // "quadratic" | "logistic" | "huber" | "double_well" | "expression"
  double lambda = 1.0;                // quadratic: l = (lambda/2)|theta - x|^2; double_well: curvature at the wells
  double regularization = 0.0;        // logistic, huber: mu in (mu/2)|theta|^2
  double delta = 1.0;                 // huber threshold
  double width = 1.0;                 // double_well radius w
  std::string expression;             // expression: l(theta; x) as a muParser formula
  std::vector<std::string> gradient;  // expression: optional gradient formulas (empty: finite differences)
  std::optional<double> sensitivity;  // S_g of the data universe, if the user states it
  std::optional<double> strongConvexity;  // lambda, if the user states it (else computed)
  std::optional<double> smoothness;       // beta, if the user states it (else computed)
};

struct DataSpec {
  models::Dataset records;            // inline or read from file, already parsed
  std::string file;                   // CSV path as resolved (empty when inline)
  std::string fileSha256;             // SHA-256 of the bytes of `file` that were parsed (a restart checks it)
  std::optional<models::DataGeneratorSpec> generator;  // set when the data are generated
};

struct NeighbourSpec {
  models::NeighbourKind kind = models::NeighbourKind::Replace;
  std::size_t index = 0;              // 0-based record index replaced or removed in D'
  models::Record replacement;         // the replacement or added record
};

struct NoiseSpec {
  std::optional<double> multiplier;           // the DP-SGD noise multiplier z, when the case gives it (noisy GD)
  double sigma = 1.0;                         // isotropic: Sigma = sigma^2 I (with covariance: sqrt of its largest eigenvalue)
  std::optional<models::Matrix> covariance;   // Sigma, for p (and q unless covariancePrime)
  std::optional<models::Matrix> covariancePrime;  // Sigma', for q (Langevin)
  models::Matrix sigmaFor(bool prime, int d) const {
    if (prime && covariancePrime) return *covariancePrime;
    if (covariance) return *covariance;
    return sigma * sigma * models::Matrix::Identity(d, d);
  }
  /// Whether Sigma (prime: Sigma') is a multiple of the identity.
  bool isotropic(bool prime, int d) const {
    const models::Matrix S = sigmaFor(prime, d);
    return (S - S(0, 0) * models::Matrix::Identity(d, d)).cwiseAbs().maxCoeff() == 0.0;
  }
  /// Whether Sigma and Sigma' are both multiples of the identity: the Langevin operator then has detailed balance (the
  /// exponential integrator's a priori bound applies); otherwise it does not (its series, docs/scheme.md §3).
  bool bothIsotropic(int d) const { return isotropic(false, d) && isotropic(true, d); }
};

struct InitialSpec {
  models::Vector mean;
  models::Matrix covariance;          // SPD
};

struct TimeSpec {
  double t_end = 1.0;
  double dt = 0.01;
  long steps() const;                 // round(t_end / dt), validated to be an integer number of steps
};

struct NoisyGdSpec {
  double eta = 0.1;                   // step size
  long steps = 1;                     // K
  std::string diffusion = "fokker_planck";  // | "exact_convolution"
  long diffusion_substeps = 16;
  std::optional<double> clipNorm;     // per-example gradient clipping at norm C
  long tracing_substeps = 0;          // tracing diffusions: intermediate times per step (0: off)
  std::string constraint = "none";    // | "box" | "ball"
  models::ConstraintSet constraintSet;  // Pi_C, built from the constraint_* keys (whole space for "none")
};

struct BatchSpec {                    // [batch]: minibatch noisy SGD (MATH.md §8); noisy GD only
  std::string sampling = "full";      // "full" | "cyclic" | "poisson"
  long size = 0;                      // cyclic: records per batch (consecutive blocks in data order, the last may be smaller)
  double rate = 1.0;                  // poisson: the sampling rate gamma in (0, 1]
  std::string mixture = "auto";       // poisson: "auto" | "enumerate" | "lattice" (docs/noisy-gd.md §9.2)
  double mixtureTolerance = 1e-6;     // poisson lattice: the rounding's and pruning's TV budget per density and run
  /// b of MATH.md §8, the divisor of the batch's summed gradient: n (full), size (cyclic), rate n (poisson).
  double expectedSize(std::size_t n) const {
    if (sampling == "cyclic") return static_cast<double>(size);
    if (sampling == "poisson") return rate * static_cast<double>(n);
    return static_cast<double>(n);
  }
  /// Number of cyclic batches m = ceil(n / size) (1 for full batches; Poisson batches are drawn anew every step).
  long cycleLength(std::size_t n) const {
    return sampling == "cyclic" ? static_cast<long>((n + static_cast<std::size_t>(size) - 1) / static_cast<std::size_t>(size)) : 1;
  }
};

/// sigma of the noise N(0, 2 eta sigma^2 I) per step of DP-SGD with noise multiplier z, clip norm C, step size eta and
/// expected batch size b: the step adds eta z C / b N(0, I) = sqrt(2 eta) sigma N(0, I) (MATH.md §8, docs/dpsgd.md).
inline double sigmaFromNoiseMultiplier(double z, double clipNorm, double eta, double expectedBatchSize) {
  return z * clipNorm * std::sqrt(eta / 2.0) / expectedBatchSize;
}

struct OutputSpec {
  long every = 1;                     // output every `every` time steps (and always at the first and last)
  long checkpointEvery = 1;           // a checkpoint every `checkpointEvery` output steps (0: none; app/run/Checkpoint)
  bool fields = true;                 // write p and q at output steps
  bool plots = true;                  // draw the PNG plots (app/plots)
  bool vtk = true;                    // also as VTK XML files for ParaView (only with fields; docs/output.md)
  std::string directory;              // default "<case name>-output"; --output overrides
};

struct RenyiOrder {
  double alpha;
  std::string label;                  // as written in the case file: "2", "10", "1.5" -> column renyi_<label>
};

struct DivergenceSpec {
  std::vector<RenyiOrder> orders;
  bool denseOrders = false;           // orders = "dense" (models::denseRenyiOrders)
  double hockeyStickEpsMax = 10.0;    // eps grid 0, step, ..., max of delta(eps)
  double hockeyStickEpsStep = 0.05;
  long privacyLossBins = 1000;        // 0: no privacy-loss histograms
};

struct PrivacySpec {
  double delta = 1e-5;                // the delta of the summary's (eps, delta) table
  std::vector<double> deltaGrid;      // the deltas of epsilon.csv, decreasing, containing `delta`
};

/// solver.ts_type (or -ts_type) that selects solver::ExponentialEvolution instead of a PETSc TS.
inline constexpr const char* kExponentialTsType = "exponential";
/// The default solver.ts_type: "exponential" where it applies (app::effectiveTsType), else "bdf".
inline constexpr const char* kAutoTsType = "auto";

struct SolverSpec {
  std::string ts_type = kAutoTsType;  // "auto", "exponential" or a PETSc TS type; -ts_type on the command line wins
  std::string ksp_type = "preonly";
  std::string pc_type = "lu";
  std::string petsc_options;          // further PETSc options, command-line syntax
  int spatial_order = 2;              // Langevin: 2 or 4 (solver::SpatialAccuracy)
  std::string exponential_series = "chebyshev";  // anisotropic noise: "chebyshev" or "positive" (ExponentialSettings)
};

struct SamplerSpec {                  // [sampler]: fpdp sample only
  long particles = 100000;
  std::uint64_t seed = 1;
  int threads = 1;
  double langevinDt = 0.0;            // Langevin: Euler–Maruyama step (time.dt / 10 unless given)
  std::vector<long> outputSteps;      // noisy-GD steps or Langevin time steps; default {K}
  double confidence = 0.99;
  double auditDelta = 1e-3;
};

struct WorstCaseSpec {                // [worst_case]: fpdp worst-case only (docs/sweeps.md)
  std::string domain = "none";        // "box" | "ball" | "none" (not given: worst-case can search indices only)
  models::Vector lower, upper;        // box
  models::Vector centre;              // ball
  double radius = 0.0;
  std::vector<int> labels;            // logistic: the labels y' searched (default {-1, 1}); else empty
  std::vector<std::size_t> indices;   // the records replaced or removed; empty: every record (the default, "all":
                                      // not spelled out, a case of 10^7 records would hold and copy 80 MB of them)
  /// The records searched, for a dataset of n records.
  std::vector<std::size_t> searchedIndices(std::size_t n) const {
    if (!indices.empty()) return indices;
    std::vector<std::size_t> all(n);
    for (std::size_t i = 0; i < n; ++i) all[i] = i;
    return all;
  }
  int gridPoints = 11;
  int refinementRounds = 3;
  int refinementPoints = 5;
  bool given = false;                 // the case file has a [worst_case] table (then parameters.toml repeats it)
};

struct FaultsSpec {                   // [faults]: which numerical faults stop a run (app/run/NumericalFaults.hpp)
  std::vector<std::string> stopOn{"non_finite", "negative_mass", "wall_mass"};
  double negativeMassTolerance = 1e-6;  // negative mass / mass of a density
  double wallMassTolerance = 1e-3;      // density at the walls / peak density (or mass beyond the box / mass)
  bool stops(std::string_view fault) const {
    for (const auto& f : stopOn)
      if (f == fault) return true;
    return false;
  }
};

struct AccuracySpec {                 // [accuracy]: the discretisation-error estimate of every number (docs/scheme.md §8)
  bool estimate = true;                // run the companion solves on the 2x, 4x (and 8x) coarser meshes
  double rtol = 1e-3;                  // an estimate above rtol |value| leaves the number uncertified
  std::string certify = "off";         // refine until certified: "off", "headline" or "last_step" (CertifyRefinement)
  double certifySeconds = 600.0;       // the refinement's wall-time budget
  long certifyMaxCells = 1L << 22;     // the largest mesh (cells in all) the refinement may take
};

struct Case {
  std::string name;
  std::string dynamics = "langevin";
  MeshSpec mesh;
  LossSpec loss;
  DataSpec data;
  NeighbourSpec neighbour;
  NoiseSpec noise;
  InitialSpec initial;
  TimeSpec time;                      // langevin
  NoisyGdSpec noisyGd;                // noisy_gd
  BatchSpec batch;                    // noisy_gd
  OutputSpec output;
  DivergenceSpec divergence;
  PrivacySpec privacy;
  SolverSpec solver;
  SamplerSpec sampler;
  WorstCaseSpec worstCase;
  FaultsSpec faults;
  AccuracySpec accuracy;

  std::filesystem::path sourcePath;   // the case file
  std::string resolvedToml;           // every key with defaults filled in, as TOML (stored in the output)
};

/// What stops solver.ts_type = "exponential" on this case: the key and why (none if it applies). exp(T A) needs one
/// constant generator (Langevin diffusion) and second-order fluxes, whose rows reach the neighbours of a cell only.
/// Noise Sigma and Sigma' multiples of the identity give detailed balance, a real spectrum and the Chebyshev
/// expansion's a priori bound; other noise (a full or diagonal Sigma) the same expansion with a posteriori error
/// control (solver/propagation/ExponentialEvolution.hpp).
struct ExponentialObstacle {
  std::string key;
  std::string reason;
};
inline std::optional<ExponentialObstacle> exponentialObstacle(const Case& c) {
  if (c.dynamics != "langevin")
    return ExponentialObstacle{"solver.ts_type", "exp(T A) needs one constant generator; case.dynamics = \"" +
                                                     c.dynamics + "\" is not Langevin diffusion"};
  if (c.solver.spatial_order != 2)
    return ExponentialObstacle{"solver.spatial_order", "fourth-order fluxes reach two cells, beyond the stencil "
                                                       "products of solver.ts_type = \"exponential\""};
  return std::nullopt;
}

/// Noisy GD whose walls absorb: the push-forward's and the noise kernel's mass beyond the mesh leaves the run and is
/// counted as outflow (noisy_gd.diffusion exact_convolution or chapman_kolmogorov, no constraint set; the
/// Fokker–Planck route's walls reflect, and a constraint set projects what reaches them). The densities are then those
/// of the paths that stayed in the box, below the process on R^d by the mass removed (docs/noisy-gd.md §4.1).
inline bool wallsAbsorb(const Case& c) {
  return c.dynamics == "noisy_gd" && c.noisyGd.constraint == "none" && c.noisyGd.diffusion != "fokker_planck";
}

}  // namespace fpdp::app
