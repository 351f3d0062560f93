// `fpdp sample` (app/commands/SampleCase.hpp): run the sampler, and confront it with the solver's output when DIR holds it.
// Exercise: build/app/fpdp run cases/logistic-noisy-gd-1d.toml --output out && build/app/fpdp sample
//           cases/logistic-noisy-gd-1d.toml --output out --particles 1000000 --threads 2
#include "app/commands/SampleCase.hpp"

#include "app/case/CaseReader.hpp"

#include <petscsys.h>
#include <toml++/toml.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "app/run/ModelBuilding.hpp"
#include "app/run/NumberFormat.hpp"
#include "app/run/WholeFieldRun.hpp"
#include "app/platform/PetscConfiguration.hpp"
#include "app/commands/RunCase.hpp"
#include "app/run/Collective.hpp"
#include "io/CsvTable.hpp"
#include "io/OutputFile.hpp"
#include "io/SampleFiles.hpp"
#include "io/AxisNames.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "solver/noisygd/ConstraintProjection.hpp"
#include "solver/functionals/Divergences.hpp"
#include "validation/GaussianReference.hpp"
#include "validation/MonteCarloSampler.hpp"
#include "validation/SampleAgreement.hpp"

namespace fs = std::filesystem;

namespace fpdp::app {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The resolved case without its [sampler] table: a run and a sample of one case share everything else.
std::string withoutSampler(const std::string& resolvedToml) {
  toml::table t = toml::parse(resolvedToml);
  t.erase("sampler");
  std::ostringstream s;
  s << t;
  return s.str();
}

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string fmt(double v, const char* f = "%.6g") { return formatNumber(v, f); }

struct Comparison {
  long step = 0;
  double time = 0.0;
  // The solver's bin masses: cells |c| max(u_c, 0), then (projected noisy GD) the boundary bins of C, in the
  // sampler's bin order (both are solver::BoundaryBins).
  std::vector<double> massP, massQ;
  long negativeCells = 0;
  solver::DivergenceValues quadrature;
  validation::GaussianReference::Moments solverMoments[2];
};

/// The sampler's counts in the comparison's bin order: the mesh cells, then the boundary bins of C.
std::vector<std::int64_t> binCounts(const validation::ParticleHistogram& h) {
  std::vector<std::int64_t> out = h.cells;
  out.insert(out.end(), h.boundary.begin(), h.boundary.end());
  return out;
}

/// Moments of the solver's measure: the cells' (GaussianReference::cellMoments) plus the boundary bins as point
/// masses at their representative points (combined through the raw second moments). A face or edge bin's spread
/// along its patch (one cell width, variance h^2/12) is not counted: an O(h^2) term, as the bins' own.
validation::GaussianReference::Moments withBoundaryBins(const validation::GaussianReference::Moments& cells,
                                                        const std::vector<double>& masses,
                                                        const std::vector<solver::ParameterPoint>& points) {
  if (masses.empty()) return cells;
  const Eigen::Index d = cells.mean.size();
  double total = cells.mass;
  models::Vector first = cells.mass * cells.mean;
  models::Matrix second = cells.mass * (cells.covariance + cells.mean * cells.mean.transpose());
  for (std::size_t b = 0; b < masses.size(); ++b) {
    const models::Vector x = Eigen::Map<const models::Vector>(points[b].data(), d);
    total += masses[b];
    first += masses[b] * x;
    second += masses[b] * x * x.transpose();
  }
  validation::GaussianReference::Moments out;
  out.mass = total;
  out.mean = first / total;
  out.covariance = second / total - out.mean * out.mean.transpose();
  return out;
}

/// The sample at each size whose N^{-1/2} decay the density check shows: (particles, snapshots), the full one last.
using SampleSizes = std::vector<std::pair<long, std::vector<validation::SampleSnapshot>>>;

/// Sampler updates per solver step: 1 for noisy GD; for Langevin time.dt / sampler.langevin_dt.
long updatesPerSolverStep(const Case& c) {
  return c.dynamics == "noisy_gd" ? 1 : std::lround(c.time.dt / c.sampler.langevinDt);
}

/// Step 1 of sampleCase: the sampler's problem, with the losses and the initial law of `fpdp run`.
validation::SamplerProblem samplerProblem(const Case& c, const EmpiricalLosses& losses, long ratio) {
  const int d = c.mesh.dim;
  validation::SamplerProblem problem;
  problem.lossD = losses.lossD;
  problem.lossDPrime = losses.lossDPrime;
  problem.initialMean = c.initial.mean;
  problem.initialCovariance = c.initial.covariance;
  if (c.dynamics == "noisy_gd") {
    problem.dynamics = validation::SampledDynamics::NoisyGd;
    problem.sigma = problem.sigmaPrime = c.noise.sigmaFor(false, d);
    problem.constraint = c.noisyGd.constraintSet;  // the bins: solver::BoundaryBins with the solver's defaults
    problem.step = c.noisyGd.eta;
    problem.steps = c.noisyGd.steps;
    problem.batches = batchScheme(c);  // minibatch noisy SGD (MATH.md §8)
    if (problem.batches.sampling == models::BatchSampling::Cyclic)
      problem.cyclicBatches = models::cyclicBatches(c.data.records.size(), c.batch.size, caseNeighbour(c));
  } else {
    problem.dynamics = validation::SampledDynamics::Langevin;
    problem.sigma = c.noise.sigmaFor(false, d);
    problem.sigmaPrime = c.noise.sigmaFor(true, d);
    problem.step = c.time.dt / static_cast<double>(ratio);
    problem.steps = c.time.steps() * ratio;
  }
  for (long k : c.sampler.outputSteps) problem.outputSteps.push_back(k * ratio);
  return problem;
}

/// The sampler's settings: the case's [sampler], overridden by the command line.
validation::SamplerSettings samplerSettings(const Case& c, const SampleOptions& options, MPI_Comm comm) {
  validation::SamplerSettings settings;
  settings.particles = options.particles.value_or(c.sampler.particles);
  settings.seed = options.seed.value_or(c.sampler.seed);
  settings.threads = options.threads.value_or(c.sampler.threads);
  settings.comm = comm;
  return settings;
}

/// Step 2 of sampleCase (rank 0): checks DIR, and whether it holds `fpdp run`'s output of this very case; creates
/// the partial directory `work`. mode[0]: DIR holds an fpdp output; mode[1]: with fpdp.h5.
void prepareOutputDirectory(const Case& c, const SampleOptions& options, const fs::path& dir, const fs::path& work,
                            int (&mode)[2]) {
  checkOutputDirectory(options.outputDirectory);
  if (fs::exists(dir / "parameters.toml")) {
    mode[0] = 1;
    if (withoutSampler(readFile(dir / "parameters.toml")) != withoutSampler(c.resolvedToml))
      throw OutputDirectoryError("output directory '" + options.outputDirectory +
                                 "' holds the output of a different case (its parameters.toml differs from this "
                                 "case outside [sampler]); choose another --output");
    mode[1] = fs::exists(dir / "fpdp.h5") ? 1 : 0;
  }
  removeStalePartial(work, dir.string());  // only fpdp's own leftovers are removed
  fs::create_directories(work);
  writeOwnerMark(work);
}

/// The solver's side of one comparison, from its fields at the snapshot's step: bin masses, the quadrature's
/// divergences and the moments.
Comparison compareFields(const meshes::DistributedBoxMesh& selfMesh, const solver::DivergenceFunctionals& functionals,
                         const io::SolverFields& fields, const validation::SampleSnapshot& snap,
                         const solver::BoundaryBins& bins) {
  Comparison cmp;
  cmp.step = snap.step;
  cmp.time = snap.time;
  auto u = selfMesh.createVector();
  PetscScalar* a;
  FPDP_PETSC(VecGetArray(u, &a));
  const auto& volumes = selfMesh.ownedVolumes();
  for (std::size_t l = 0; l < fields.p.size(); ++l) {
    a[2 * l] = fields.p[l];
    a[2 * l + 1] = fields.q[l];
    cmp.negativeCells += (fields.p[l] < 0) + (fields.q[l] < 0);
    cmp.massP.push_back(volumes[l] * std::max(fields.p[l], 0.0));
    cmp.massQ.push_back(volumes[l] * std::max(fields.q[l], 0.0));
  }
  FPDP_PETSC(VecRestoreArray(u, &a));
  // Projected noisy GD: the boundary masses are part of p and q (docs/noisy-gd.md §6): appended after the cells
  // for every statistic, and singular masses of the quadrature, as `fpdp run` evaluates them.
  const solver::SingularMasses singular{fields.boundaryP, fields.boundaryQ};
  for (std::size_t b = 0; b < bins.size(); ++b) {
    cmp.massP.push_back(std::max(fields.boundaryP[b], 0.0));
    cmp.massQ.push_back(std::max(fields.boundaryQ[b], 0.0));
  }
  cmp.quadrature = functionals.evaluate(u, singular.empty() ? nullptr : &singular);
  for (int k = 0; k < 2; ++k)
    cmp.solverMoments[k] = withBoundaryBins(validation::GaussianReference::cellMoments(selfMesh, u, k),
                                            k ? fields.boundaryQ : fields.boundaryP, bins.points());
  return cmp;
}

/// Step 4 of sampleCase (rank 0 alone): the comparisons with the solver's fields in fpdp.h5 at the snapshots' steps.
/// A failure becomes a note (and no comparison) rather than an exception that would leave the other ranks waiting.
/// The solver's fields at output step `solverStep` from DIR/fpdp.h5, or nullopt with a note: `stop` when no later step
/// can be read either (an unreadable file, another mesh), else that step was not written.
std::optional<io::SolverFields> solverFieldsAt(const Case& c, const meshes::BoxMesh& box, const fs::path& dir,
                                               long solverStep, std::vector<std::string>& notes, bool& stop) {
  std::optional<io::SolverFields> fields;
  try {
    fields = io::readSolverFields((dir / "fpdp.h5").string(), c.mesh.dim, solverStep);
  } catch (const std::exception& e) {
    notes.push_back(std::string("cannot read the solver output: ") + e.what());
    stop = true;
    return std::nullopt;
  }
  if (!fields) {
    notes.push_back("no solver fields at step " + std::to_string(solverStep) +
                    " (fpdp.h5 holds the output steps of output.every, with output.fields = true)");
    return std::nullopt;
  }
  if (!io::sameMesh(*fields, box)) {
    notes.push_back("the solver's mesh differs from the case's: no comparison");
    stop = true;
    return std::nullopt;
  }
  return fields;
}

/// Calls f(snapshot, solverStep, fields) for every snapshot whose solver fields DIR/fpdp.h5 holds (solverFieldsAt).
template <class F>
void forEachSolverStep(const Case& c, const meshes::BoxMesh& box, const fs::path& dir,
                       const std::vector<validation::SampleSnapshot>& snapshots, long ratio,
                       std::vector<std::string>& notes, F&& f) {
  for (const auto& snap : snapshots) {
    const long solverStep = snap.step / ratio;
    bool stop = false;
    const std::optional<io::SolverFields> fields = solverFieldsAt(c, box, dir, solverStep, notes, stop);
    if (stop) return;
    if (fields) f(snap, solverStep, *fields);
  }
}

std::vector<Comparison> solverComparisons(const Case& c, const meshes::BoxMesh& box, const fs::path& dir,
                                          const std::vector<validation::SampleSnapshot>& snapshots,
                                          const solver::BoundaryBins& bins, long ratio,
                                          std::vector<std::string>& notes) {
  std::vector<Comparison> comparisons;
  try {
    const meshes::DistributedBoxMesh selfMesh(PETSC_COMM_SELF, box, 2);
    std::vector<double> orders;
    for (const auto& o : c.divergence.orders) orders.push_back(o.alpha);
    const solver::DivergenceFunctionals functionals(selfMesh, orders);
    forEachSolverStep(c, box, dir, snapshots, ratio, notes,
                      [&](const validation::SampleSnapshot& snap, long solverStep, const io::SolverFields& fields) {
                        if (fields.boundaryP.size() != bins.size() || fields.boundaryQ.size() != bins.size()) {
                          notes.push_back("the solver's output has " + std::to_string(fields.boundaryP.size()) +
                                          " boundary masses at step " + std::to_string(solverStep) +
                                          ", the constraint has " + std::to_string(bins.size()) +
                                          " boundary bins: no comparison at that step");
                          return;
                        }
                        comparisons.push_back(compareFields(selfMesh, functionals, fields, snap, bins));
                      });
  } catch (const std::exception& e) {
    comparisons.clear();
    notes.push_back(std::string("no comparison with the solver: ") + e.what());
  }
  return comparisons;
}

/// The full sample, after (when compared with the solver) the samples that show the distance's N^{-1/2} decay: the
/// same seed at N/16 and N/4 (their particles are the first of the full run's).
/// Beyond three axes (whole fields, no DMDA): the solver's moments at the output steps the sample shares, for
/// sample_moments.csv's `_solver` columns. The moments of the piecewise-constant density the cell averages describe:
/// E x_a = sum_c m_c centre_a, E x_a x_b = sum_c m_c (centre_a centre_b + [a = b] h_a^2/12), normalised by the mass.
/// Under a full Sigma the fields are densities of the state y = L^-1 theta on its own box (wholeFieldStateBox): their
/// moments are mapped to theta's, mean L E y and covariance L Cov(y) L^T.
std::vector<Comparison> wholeFieldMoments(const Case& c, const fs::path& dir,
                                         const std::vector<validation::SampleSnapshot>& snapshots, long ratio,
                                         std::vector<std::string>& notes) {
  const int d = c.mesh.dim;
  const meshes::BoxMesh box = wholeFieldStateBox(c);
  const models::Matrix L = wholeFieldCoordinates(c).parametersFromState();
  std::vector<Comparison> out;
  forEachSolverStep(c, box, dir, snapshots, ratio, notes, [&](const validation::SampleSnapshot& snap, long solverStep,
                                                             const io::SolverFields& fields) {
    Comparison cmp;
    cmp.step = solverStep;
    cmp.time = snap.time;
    for (int k = 0; k < 2; ++k) {
      const std::vector<double>& u = k == 0 ? fields.p : fields.q;
      Eigen::VectorXd first = Eigen::VectorXd::Zero(d);
      Eigen::MatrixXd second = Eigen::MatrixXd::Zero(d, d);
      double mass = 0.0;
      for (std::size_t cell = 0; cell < u.size(); ++cell) {
        const auto index = box.indexOf(cell);
        double volume = 1.0;
        Eigen::VectorXd x(d), h(d);
        for (int a = 0; a < d; ++a) {
          const auto& axis = box.axis(a);
          const int i = index[static_cast<std::size_t>(a)];
          x[a] = axis.centre(i);
          h[a] = axis.width(i);
          volume *= h[a];
        }
        const double m = volume * std::max(u[cell], 0.0);
        mass += m;
        first += m * x;
        second += m * (x * x.transpose());
        for (int a = 0; a < d; ++a) second(a, a) += m * h[a] * h[a] / 12.0;
      }
      validation::GaussianReference::Moments& moments = cmp.solverMoments[k];
      const Eigen::VectorXd mean = first / mass;
      const Eigen::MatrixXd covariance = second / mass - mean * mean.transpose();
      moments.mean = L * mean;
      moments.covariance = L * covariance * L.transpose();
    }
    out.push_back(std::move(cmp));
  });
  if (!out.empty())
    notes.push_back("beyond three axes the solver is compared by its moments only (sample_moments.csv's _solver "
                    "columns), which carry the scheme's O(h^2) error; the histograms are in sample.h5");
  return out;
}

/// How many of the solver's means (both densities, every axis, every compared step) lie within the sample's
/// intervals: the summary's line beyond three axes.
std::pair<int, int> meansWithinIntervals(const std::vector<validation::SampleSnapshot>& snapshots,
                                         const std::vector<Comparison>& comparisons, long ratio, double z) {
  int inside = 0, total = 0;
  for (const auto& snap : snapshots)
    for (const auto& cmp : comparisons) {
      if (cmp.step != snap.step / ratio) continue;
      for (int k = 0; k < 2; ++k)
        for (Eigen::Index a = 0; a < cmp.solverMoments[k].mean.size(); ++a) {
          const auto& m = snap.moments[k];
          ++total;
          inside += std::fabs(cmp.solverMoments[k].mean[a] - m.mean[a]) <= z * m.meanStandardError[a];
        }
    }
  return {inside, total};
}

SampleSizes sampleSizes(const validation::SamplerProblem& problem, const meshes::BoxMesh& box,
                        const validation::SamplerSettings& settings,
                        const std::vector<validation::SampleSnapshot>& snapshots, bool compared) {
  SampleSizes sizes;
  if (compared)
    for (long divisor : {16L, 4L})
      if (settings.particles / divisor >= 100) {
        validation::SamplerSettings s = settings;
        s.particles = settings.particles / divisor;
        sizes.emplace_back(s.particles, validation::MonteCarloSampler(problem, box, s).run());
      }
  sizes.emplace_back(settings.particles, snapshots);
  return sizes;
}

/// sample.h5: the run's facts and the counts of every snapshot.
void writeSampleCounts(const std::string& file, const Case& c, const meshes::BoxMesh& box,
                       const validation::SamplerSettings& settings, int ranks, const solver::BoundaryBins& bins,
                       const std::vector<validation::SampleSnapshot>& snapshots, long ratio) {
  const int d = c.mesh.dim;
  io::SampleFileInfo info;
  info.parametersToml = c.resolvedToml;
  info.particles = settings.particles;
  info.seed = settings.seed;
  info.ranks = ranks;
  info.threads = settings.threads;
  info.generator = "Philox4x32-10 (Random123's), key (seed), counter (block, particle, process and stream); ziggurat "
                   "normals (Doornik, 256 layers; the rare edges from a fourth stream), 64-bit words below "
                   "rate 2^64 for the Poisson batches";
  for (std::size_t b = 0; b < bins.size(); ++b) {
    // The piece ("-0": on x = lower, y inside; "sphere") and the representative point, as in fpdp.h5.
    std::string label = bins.pieceName(b) + " (";
    for (int a = 0; a < d; ++a) label += (a ? ", " : "") + fmt(bins.points()[b][a], "%.17g");
    info.boundaryLabels.push_back(label + ")");
  }
  std::vector<io::SampleCounts> counts;
  for (const auto& snap : snapshots) {
    io::SampleCounts sc;
    sc.step = snap.step / ratio;
    sc.time = snap.time;
    for (int k = 0; k < 2; ++k) {
      sc.cells[k] = snap.histogram[k].cells;
      sc.boundary[k] = snap.histogram[k].boundary;
      sc.outside[k] = snap.histogram[k].outside;
    }
    counts.push_back(std::move(sc));
  }
  io::writeSampleFile(file, box, info, counts);
}

/// sample_moments.csv: the moments with their intervals, and the solver's where compared.
void writeMoments(const std::string& file, int d, const std::vector<validation::SampleSnapshot>& snapshots,
                  const std::vector<Comparison>& comparisons, long ratio, double z) {
  std::vector<std::string> mc{"step", "t", "density", "particles"};
  for (int a = 0; a < d; ++a)
    for (const char* suffix : {"", "_lower", "_upper", "_solver"}) mc.push_back("mean_" + io::axisName(d, a) + suffix);
  for (int a = 0; a < d; ++a)
    for (int b = a; b < d; ++b)
      for (const char* suffix : {"", "_lower", "_upper", "_solver"})
        mc.push_back("cov_" + io::axisPairName(d, a, b) + suffix);
  io::CsvTable moments(file, mc);
  for (const auto& snap : snapshots) {
    const Comparison* cmp = nullptr;
    for (const auto& x : comparisons)
      if (x.step == snap.step) cmp = &x;
    for (int k = 0; k < 2; ++k) {
      const auto& m = snap.moments[k];
      std::vector<double> row{static_cast<double>(snap.step / ratio), snap.time, static_cast<double>(k),
                              static_cast<double>(m.count)};
      for (int a = 0; a < d; ++a)
        row.insert(row.end(), {m.mean[a], m.mean[a] - z * m.meanStandardError[a], m.mean[a] + z * m.meanStandardError[a],
                               cmp ? cmp->solverMoments[k].mean[a] : kNaN});
      for (int a = 0; a < d; ++a)
        for (int b = a; b < d; ++b)
          row.insert(row.end(), {m.covariance(a, b), m.covariance(a, b) - z * m.covarianceStandardError(a, b),
                                 m.covariance(a, b) + z * m.covarianceStandardError(a, b),
                                 cmp ? cmp->solverMoments[k].covariance(a, b) : kNaN});
      moments.addRow(row);
    }
  }
}

/// The sampling's wall time and processor time (summed over threads and ranks), in seconds.
struct SampleTime {
  double wall, cpu;
};

/// The summary's head: the sample run, its speed, and the moments at the last step.
void summariseSample(std::ostream& summary, const Case& c, const validation::SamplerProblem& problem,
                     const validation::SamplerSettings& settings, int ranks, SampleTime sampleTime,
                     const validation::SampleSnapshot& last, long ratio, double z) {
  const int d = c.mesh.dim;
  const bool noisyGd = c.dynamics == "noisy_gd";
  // The batches of minibatch noisy SGD (MATH.md §8) and their divisor b.
  std::string dynamics = noisyGd ? "noisy gradient descent" : "Langevin diffusion (Euler–Maruyama, dt = " + fmt(problem.step) + ")";
  if (noisyGd && c.batch.sampling == "cyclic")
    dynamics = "minibatch noisy SGD (cyclic batches of " + std::to_string(c.batch.size) + ", b = " +
               fmt(problem.batches.divisor) + ")";
  else if (noisyGd && c.batch.sampling == "poisson")
    dynamics = "minibatch noisy SGD (Poisson batches, rate " + fmt(c.batch.rate) + ", b = " +
               fmt(problem.batches.divisor) + ")";
  summary << "\nfpdp sample '" << c.name << "': " << dynamics
          << ", " << d << "-D, " << settings.particles << " particles per dataset, seed " << settings.seed << ", "
          << ranks << " rank(s) x " << settings.threads << " thread(s)\n";
  char b[512];
  const double particleSteps =
      2.0 * static_cast<double>(settings.particles) * static_cast<double>(std::max(problem.steps, 1L));
  std::snprintf(b, sizeof b,
                "  sampling %.2f s: %.3g particle-steps per second per core (%.2f s of processor time: %.3g per "
                "processor second; %s lane loops)\n",
                sampleTime.wall, particleSteps / sampleTime.wall / (ranks * settings.threads), sampleTime.cpu,
                particleSteps / sampleTime.cpu, validation::MonteCarloSampler::vectorKernels());
  summary << b;
  summary << "  at step " << last.step / ratio << " (t = " << fmt(last.time) << "), confidence " << c.sampler.confidence
          << ":\n";
  for (int k = 0; k < 2; ++k) {
    summary << "    " << (k ? "q (D')" : "p (D) ") << " mean";
    for (int a = 0; a < d; ++a)
      summary << " " << fmt(last.moments[k].mean[a]) << " +- " << fmt(z * last.moments[k].meanStandardError[a], "%.2g");
    summary << ", variance";
    for (int a = 0; a < d; ++a)
      summary << " " << fmt(last.moments[k].covariance(a, a)) << " +- "
              << fmt(z * last.moments[k].covarianceStandardError(a, a), "%.2g");
    if (!last.histogram[k].boundary.empty()) {
      std::int64_t onBoundary = 0;
      for (auto n : last.histogram[k].boundary) onBoundary += n;
      summary << ", on the boundary of C " << fmt(static_cast<double>(onBoundary) / settings.particles);
    }
    summary << ", off the mesh " << fmt(static_cast<double>(last.histogram[k].outside) / settings.particles) << "\n";
  }
}

/// The density check of one comparison at every sample size: rows of sample_agreement.csv and of the summary.
/// Returns the number of checks that fail.
int densityChecks(io::CsvTable& agreement, std::ostream& summary, const Case& c, const Comparison& cmp,
                  const SampleSizes& sizes, double solverStep) {
  int disagreements = 0;
  char b[512];
  for (const auto& [n, snaps] : sizes) {
    const validation::SampleSnapshot* snap = nullptr;
    for (const auto& s : snaps)
      if (s.step == cmp.step) snap = &s;
    for (int k = 0; k < 2; ++k) {
      const auto& h = snap->histogram[k];
      const auto a = validation::compareHistogram(binCounts(h), h.outside, k ? cmp.massQ : cmp.massP,
                                                  c.sampler.confidence);
      agreement.addRow({solverStep, cmp.time, static_cast<double>(k), static_cast<double>(n), a.l1, a.tv,
                        a.l1Expected, a.l1Band, a.withinBand ? 1.0 : 0.0, a.chiSquare,
                        static_cast<double>(a.degreesOfFreedom), a.pValue, a.outsideFraction,
                        a.agrees ? 1.0 : 0.0});
      disagreements += !a.agrees;
      std::snprintf(b, sizeof b, "    %-7s  %-12ld  %-14s  %-14s  %-10s  %-12s  %s%s\n", k ? "q" : "p", n,
                    fmt(a.l1, "%.4e").c_str(), fmt(a.l1Expected, "%.4e").c_str(), fmt(a.l1Band, "%.3e").c_str(),
                    (fmt(a.chiSquare, "%.1f") + "/" + std::to_string(a.degreesOfFreedom)).c_str(),
                    fmt(a.pValue, "%.3g").c_str(),
                    a.agrees ? "  agrees"
                             : a.withinBand ? "  DISAGREES (chi-square): the sample resolves the solver's error"
                                            : "  DISAGREES (L1 above the band): the sample resolves the solver's error");
      summary << b;
    }
  }
  return disagreements;
}

/// The divergences from the full sample against the solver's, and the membership-inference audit, of one comparison:
/// a row of sample_divergence.csv, the audit curve in sample_audit.csv, and their lines of the summary. Returns the
/// number of checks that fail (the audit band; the divergences are a diagnostic).
int divergenceChecks(io::CsvTable& divergence, io::CsvTable& auditCsv, std::ostream& summary, const Case& c,
                     const Comparison& cmp, const validation::SampleSnapshot& snap, const std::vector<double>& orders,
                     double solverStep, double z) {
  int disagreements = 0;
  char b[512];
  const auto& hp = snap.histogram[0];
  const auto& hq = snap.histogram[1];
  const std::vector<std::int64_t> countsP = binCounts(hp), countsQ = binCounts(hq);
  const auto est = validation::estimateDivergences(countsP, hp.total, countsQ, hq.total, cmp.massP, cmp.massQ,
                                                   orders, c.sampler.confidence);
  const auto mia = validation::audit(countsP, hp.total, countsQ, hq.total, cmp.massP, cmp.massQ,
                                     c.sampler.auditDelta, c.sampler.confidence);
  // The samples estimate the divergence of the solver's densities binned on the cells (the cell sum), not the
  // quadrature of their point values: the check is whether the cell sum lies in the samples' interval. (It took the
  // quadrature's distance with the binning difference as slack before, and called "consistent" quadrature values
  // outside the interval it printed.) The quadrature's own distance from the cell sum is the binning error, printed.
  // Either value inside the samples' own interval (never with a slack): the cell sum is what they estimate, and where
  // it is +inf (cells where q is 0 and p is not, which no sample from q reaches) the quadrature is the value they
  // can be compared with.
  auto agrees = [](const validation::Interval& e, double quad, double cells) {
    const auto inside = [&e](double v) { return std::isfinite(v) && e.lower <= v && v <= e.upper; };
    return std::isinf(cells) ? inside(quad) : inside(cells);
  };
  std::vector<double> row{solverStep, cmp.time, cmp.quadrature.kl, est.binKl, est.kl.estimate, est.kl.lower,
                          est.kl.upper, agrees(est.kl, cmp.quadrature.kl, est.binKl) ? 1.0 : 0.0, est.pluginKl,
                          est.pluginKlBias, est.pluginKlCorrected};
  // The solver's log-ratio averaged over the samples: a consistency diagnostic, not a check of the solver's
  // divergences (validation/SampleAgreement.hpp, 2.): it does not decide the exit status.
  summary << "    consistency of the solver's log p/q with the samples (a diagnostic: the density check above is the verdict)\n"
          << "    quantity   quadrature     cell sum       from samples (interval)                  plug-in (bias)\n";
  std::snprintf(b, sizeof b, "    %-9s  %-13s  %-13s  %-13s [%s, %s]%s  %s (%s)\n", "KL",
                fmt(cmp.quadrature.kl, "%.6e").c_str(), fmt(est.binKl, "%.6e").c_str(),
                fmt(est.kl.estimate, "%.6e").c_str(), fmt(est.kl.lower, "%.4e").c_str(),
                fmt(est.kl.upper, "%.4e").c_str(), agrees(est.kl, cmp.quadrature.kl, est.binKl) ? "  inside" : "  OUTSIDE",
                fmt(est.pluginKl, "%.4e").c_str(), fmt(est.pluginKlBias, "%.2e").c_str());
  summary << b;
  for (std::size_t k = 0; k < orders.size(); ++k) {
    // Judged on the scale of E_alpha, where the interval is symmetric.
    const double eQuad = std::exp((orders[k] - 1.0) * cmp.quadrature.renyi[k]);
    const double eCells = std::exp((orders[k] - 1.0) * est.binRenyi[k]);
    // The larger of the sample's and the solver-predicted standard error (SampleAgreement.hpp, heavy tails).
    validation::Interval e = est.eAlpha[k];
    e.upper = e.estimate + z * std::max(e.standardError, est.eAlphaPredictedStandardError[k]);
    const bool ok = agrees(e, eQuad, eCells);
    row.insert(row.end(), {cmp.quadrature.renyi[k], est.binRenyi[k], est.renyi[k].estimate, est.renyi[k].lower,
                           est.renyi[k].upper, ok ? 1.0 : 0.0, est.eAlphaTailUnsampled[k] ? 1.0 : 0.0,
                           est.pluginRenyi[k], est.pluginRenyiBias[k], est.pluginRenyiCorrected[k]});
    std::snprintf(b, sizeof b, "    %-9s  %-13s  %-13s  %-13s [%s, %s]%s  %s (%s)\n",
                  ("R_" + c.divergence.orders[k].label).c_str(), fmt(cmp.quadrature.renyi[k], "%.6e").c_str(),
                  fmt(est.binRenyi[k], "%.6e").c_str(), fmt(est.renyi[k].estimate, "%.6e").c_str(),
                  fmt(est.renyi[k].lower, "%.4e").c_str(), fmt(est.renyi[k].upper, "%.4e").c_str(),
                  ok ? "  inside" : "  OUTSIDE", fmt(est.pluginRenyi[k], "%.4e").c_str(),
                  fmt(est.pluginRenyiBias[k], "%.2e").c_str());
    summary << b;
    if (est.eAlphaTailUnsampled[k])
      summary << "               (the sample misses the tail that dominates E_" << c.divergence.orders[k].label
              << ": its standard error " << fmt(est.eAlpha[k].standardError, "%.2g") << " is below a tenth of "
              << "the solver-predicted " << fmt(est.eAlphaPredictedStandardError[k], "%.2g")
              << "; the estimate says nothing about R_" << c.divergence.orders[k].label << ")\n";
  }
  row.insert(row.end(), {static_cast<double>(est.samplesWithoutRatio[0]), static_cast<double>(est.samplesWithoutRatio[1]),
                         est.pluginExcludedMassP, c.sampler.auditDelta, mia.epsilonLowerBound,
                         mia.epsilonPointEstimate, mia.epsilonExact, static_cast<double>(mia.exactOutsideBand)});
  divergence.addRow(row);
  for (const auto& pt : mia.curve)
    auditCsv.addRow({solverStep, pt.logRatioThreshold, pt.tpr, pt.tprLower, pt.tprUpper, pt.fpr, pt.fprLower,
                     pt.fprUpper, pt.tprExact, pt.fprExact, pt.epsilonLowerBound});
  std::snprintf(b, sizeof b,
                "    membership-inference audit (Neyman–Pearson test with the solver's log p/q, %zu thresholds): "
                "eps >= %s at delta = %g (level %g; point estimate %s), exact eps(delta) = %s; the exact "
                "TPR/FPR curve leaves the Clopper–Pearson band at %d thresholds\n",
                mia.curve.size(), fmt(mia.epsilonLowerBound, "%.4f").c_str(), c.sampler.auditDelta,
                c.sampler.confidence, fmt(mia.epsilonPointEstimate, "%.4f").c_str(),
                fmt(mia.epsilonExact, "%.4f").c_str(), mia.exactOutsideBand);
  summary << b;
  if (mia.exactOutsideBand > 0) {
    ++disagreements;
    summary << "    DISAGREES: the solver's TPR/FPR curve leaves the audit's simultaneous band\n";
  }
  return disagreements;
}

/// sample_agreement.csv, sample_divergence.csv and sample_audit.csv: every comparison with the solver, and its part
/// of the summary. Returns the number of checks that fail (density checks and audit bands).
int writeAgreement(const std::string& w, std::ostream& summary, const Case& c,
                   const std::vector<Comparison>& comparisons, const SampleSizes& sizes,
                   const std::vector<validation::SampleSnapshot>& snapshots, long ratio, double z) {
  int disagreements = 0;
  io::CsvTable agreement(w + "sample_agreement.csv",
                         {"step", "t", "density", "particles", "l1", "tv", "l1_expected", "l1_band", "within_band",
                          "chi_square", "degrees_of_freedom", "p_value", "outside_fraction", "agrees"});
  std::vector<std::string> dc{"step", "t", "kl_quadrature", "kl_cells", "kl_samples", "kl_lower", "kl_upper",
                              "kl_agrees", "kl_plugin", "kl_plugin_bias", "kl_plugin_corrected"};
  for (const auto& o : c.divergence.orders)
    for (const char* s : {"_quadrature", "_cells", "_samples", "_lower", "_upper", "_agrees", "_tail_unsampled", "_plugin",
                          "_plugin_bias", "_plugin_corrected"})
      dc.push_back("renyi_" + o.label + s);
  dc.insert(dc.end(), {"samples_without_ratio_p", "samples_without_ratio_q", "plugin_excluded_mass_p",
                       "audit_delta", "eps_lower_bound", "eps_point_estimate", "eps_exact",
                       "audit_exact_outside_band"});
  io::CsvTable divergence(w + "sample_divergence.csv", dc);
  io::CsvTable auditCsv(w + "sample_audit.csv", {"step", "log_ratio_threshold", "tpr", "tpr_lower", "tpr_upper",
                                                 "fpr", "fpr_lower", "fpr_upper", "tpr_exact", "fpr_exact",
                                                 "eps_lower_bound"});
  std::vector<double> orders;
  for (const auto& o : c.divergence.orders) orders.push_back(o.alpha);
  for (const Comparison& cmp : comparisons) {
    const double solverStep = static_cast<double>(cmp.step / ratio);
    summary << "\n  agreement with the solver at step " << cmp.step / ratio << " (fpdp.h5):\n"
            << "    density  particles     L1 (TV = L1/2)  E[L1] if exact  band        chi2/dof      p-value\n";
    disagreements += densityChecks(agreement, summary, c, cmp, sizes, solverStep);
    const validation::SampleSnapshot* snap = nullptr;
    for (const auto& s : snapshots)
      if (s.step == cmp.step) snap = &s;
    disagreements += divergenceChecks(divergence, auditCsv, summary, c, cmp, *snap, orders, solverStep, z);
    if (cmp.negativeCells > 0)
      summary << "    note: " << cmp.negativeCells << " negative solver cell values entered as 0\n";
  }
  return disagreements;
}

/// Moves the files of DIR.sample-partial into place: into DIR beside the run's output (replacing an earlier sample's
/// files), or as a new DIR with parameters.toml.
void moveIntoPlace(const Case& c, const fs::path& dir, const fs::path& work, bool dirHoldsOutput) {
  if (dirHoldsOutput) {
    // An earlier sample's files go, but only those fpdp wrote (its manifest): a user's sample_notes.txt stays.
    const auto others = filesNotInManifest(dir);
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("sample", 0) == 0 && std::find(others.begin(), others.end(), name) == others.end())
        fs::remove(entry.path());
    }
    std::vector<std::string> moved;
    for (const auto& entry : fs::directory_iterator(work)) {
      const std::string name = entry.path().filename().string();
      if (name == kOwnerMark) continue;
      if (std::find(others.begin(), others.end(), name) != others.end())
        throw OutputDirectoryError("'" + (dir / name).string() + "' is not fpdp's (not in " + kManifest +
                                   "); the sample's files stay in '" + work.string() + "'");
      io::renameOver(entry.path(), dir / name);
      moved.push_back(name);
    }
    addToManifest(dir, moved);
    fs::remove_all(work);
  } else {
    io::writeWholeFile(work / "parameters.toml", c.resolvedToml);
    putInPlace(work.string(), dir.string());  // absent, empty or fpdp's own (checked above)
  }
}

}  // namespace

int sampleCase(const Case& c, const SampleOptions& options) {
  const auto wallStart = std::chrono::steady_clock::now();
  MPI_Comm comm = PETSC_COMM_WORLD;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);

  // 1. Models and mesh, as `fpdp run` builds them.
  const EmpiricalLosses losses = buildEmpiricalLosses(c);
  const meshes::BoxMesh box = buildBox(c.mesh);
  const long ratio = updatesPerSolverStep(c);  // sampler updates per solver step
  const validation::SamplerProblem problem = samplerProblem(c, losses, ratio);
  const validation::SamplerSettings settings = samplerSettings(c, options, comm);

  // 2. Where the files go, and whether the solver's output of this very case is there.
  const fs::path dir(normaliseOutputDirectory(options.outputDirectory));
  const fs::path work = dir.string() + ".sample-partial";
  int mode[2] = {0, 0};  // [0]: DIR holds an fpdp output; [1]: with fpdp.h5
  onRankZero<OutputDirectoryError>(comm, rank, [&] { prepareOutputDirectory(c, options, dir, work, mode); });
  MPI_Bcast(mode, 2, MPI_INT, 0, comm);
  bool success = false;
  struct Cleanup {
    const bool& success;
    int rank;
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      if (!success && rank == 0 && hasOwnerMark(dir)) fs::remove_all(dir, ec);
    }
  } cleanup{success, rank, work};

  // 3. The sample.
  const auto sampleStart = std::chrono::steady_clock::now();
  const std::clock_t sampleCpuStart = std::clock();  // this process's processor time, all its threads
  const validation::MonteCarloSampler sampler(problem, box, settings);
  const std::vector<validation::SampleSnapshot> snapshots = sampler.run();
  const double sampleSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sampleStart).count();
  // Processor time over all ranks: the speed per core that other processes on the machine do not depress.
  double sampleCpuSeconds = static_cast<double>(std::clock() - sampleCpuStart) / CLOCKS_PER_SEC;
  MPI_Allreduce(MPI_IN_PLACE, &sampleCpuSeconds, 1, MPI_DOUBLE, MPI_SUM, comm);
  const solver::BoundaryBins& bins = sampler.boundaryBins();
  const double z = validation::normalQuantileTwoSided(c.sampler.confidence);

  // 4. The solver's fields at the output steps (rank 0 reads; every rank learns which steps exist).
  std::vector<Comparison> comparisons;
  std::vector<std::string> notes;
  // The histograms are cell masses; the chapman_kolmogorov route's fields are point values (docs/noisy-gd.md §7),
  // whose cell masses are only second-order accurate: comparing them would blame the sampler for that.
  const bool pointValueFields = c.dynamics == "noisy_gd" && c.noisyGd.diffusion == "chapman_kolmogorov";
  if (mode[1] && rank == 0 && pointValueFields)
    notes.push_back("no comparison with the solver: its fields are point values at the cell centres "
                    "(noisy_gd.diffusion = \"chapman_kolmogorov\"), the sampler's histograms cell masses; run the "
                    "case with \"exact_convolution\" to compare");
  const bool wholeField = c.mesh.dim > 3;
  if (mode[1] && rank == 0 && !pointValueFields)
    comparisons = wholeField ? wholeFieldMoments(c, dir, snapshots, ratio, notes)
                             : solverComparisons(c, box, dir, snapshots, bins, ratio, notes);
  int compared = wholeField ? 0 : static_cast<int>(comparisons.size());  // the density checks: d <= 3
  MPI_Bcast(&compared, 1, MPI_INT, 0, comm);
  const SampleSizes sizes = sampleSizes(problem, box, settings, snapshots, compared > 0);

  // 5. Files (rank 0).
  std::ostringstream summary;
  // Density checks (sample histogram against the solver's masses) and audit bands that fail: exit status 1.
  int disagreements = 0;
  onRankZero<OutputDirectoryError>(comm, rank, [&] {
    const std::string w = work.string() + "/";
    writeSampleCounts(w + "sample.h5", c, box, settings, size, bins, snapshots, ratio);
    writeMoments(w + "sample_moments.csv", c.mesh.dim, snapshots, comparisons, ratio, z);
    summariseSample(summary, c, problem, settings, size, {sampleSeconds, sampleCpuSeconds}, snapshots.back(), ratio, z);
    if (!comparisons.empty() && wholeField) {
      const auto [inside, total] = meansWithinIntervals(snapshots, comparisons, ratio, z);
      summary << "  the solver's means within the sample's " << formatNumber(100.0 * c.sampler.confidence, "%g")
              << " % intervals: " << inside << " of " << total << " (sample_moments.csv)\n";
    } else if (!comparisons.empty()) {
      disagreements += writeAgreement(w, summary, c, comparisons, sizes, snapshots, ratio, z);
    } else if (!mode[1]) {
      summary << "  no solver output in " << options.outputDirectory
              << "/ (run 'fpdp run' on the case with the same --output first to compare)\n";
    }
    for (const auto& n : notes) summary << "  " << n << "\n";
    moveIntoPlace(c, dir, work, mode[0] != 0);
  });
  success = true;
  if (rank == 0) {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wallStart).count();
    char b[256];
    std::snprintf(b, sizeof b, "  wall time %.2f s\n  output: %s/\n", wall, options.outputDirectory.c_str());
    summary << b;
    std::fputs(summary.str().c_str(), stdout);
    std::fflush(stdout);
  }
  FPDP_PETSC(MPI_Bcast(&disagreements, 1, MPI_INT, 0, comm));
  if (disagreements > 0) {
    if (rank == 0)
      std::fprintf(stderr, "fpdp sample: %d check(s) DISAGREE with the solver's densities (sample_agreement.csv, "
                           "sample_divergence.csv)\n", disagreements);
    return 1;
  }
  return 0;
}

}  // namespace fpdp::app
