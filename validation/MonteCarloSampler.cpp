#include "validation/MonteCarloSampler.hpp"

#include <Random123/philox.h>

#include <atomic>
#include <cmath>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include <Eigen/Cholesky>


namespace fpdp::validation {

namespace {

using Philox = r123::Philox4x64;

/// The 64-bit words of one stream of one particle of one process, in order: Philox block b gives words 4b .. 4b + 3.
class ParticleWords {
public:
  ParticleWords(std::uint64_t seed, std::uint64_t particle, std::uint64_t process, std::uint64_t stream)
      : key_{{seed, particle}}, process_(process), stream_(stream) {}
  std::uint64_t next() {
    if (used_ == 4) {
      words_ = Philox()(Philox::ctr_type{{block_++, process_, stream_, 0}}, key_);
      used_ = 0;
    }
    return words_[used_++];
  }
  /// A uniform in (0, 1) from one word: (53 top bits + 1/2) 2^-53, never 0 (the ziggurat's tail takes its log).
  double open01() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1p-53; }
  /// A uniform in [0, 1) from one word: its 53 top bits times 2^-53.
  double closedOpen01() { return static_cast<double>(next() >> 11) * 0x1p-53; }

private:
  Philox::key_type key_;
  std::uint64_t process_, stream_, block_ = 0;
  Philox::ctr_type words_{};
  int used_ = 4;
};

/// Doornik's ziggurat ("An improved ziggurat method to generate normal random samples", 2005; Marsaglia and Tsang's
/// with the layer index and the uniform from independent bits) on 128 layers: x[0] = V / f(R) (the base layer with
/// the tail), x[1] = R, x[i] = sqrt(-2 log(V / x[i-1] + f(x[i-1]))), x[128] = 0, ratio[i] = x[i+1] / x[i].
struct ZigguratTables {
  static constexpr int kLayers = 128;
  static constexpr double kR = 3.442619855899, kV = 9.91256303526217e-3;
  double x[kLayers + 1], ratio[kLayers];
  ZigguratTables() {
    double f = std::exp(-0.5 * kR * kR);
    x[0] = kV / f;
    x[1] = kR;
    x[kLayers] = 0.0;
    for (int i = 2; i < kLayers; ++i) {
      x[i] = std::sqrt(-2.0 * std::log(kV / x[i - 1] + f));
      f = std::exp(-0.5 * x[i] * x[i]);
    }
    for (int i = 0; i < kLayers; ++i) ratio[i] = x[i + 1] / x[i];
  }
};

const ZigguratTables kZiggurat;  // built at start-up: no initialisation guard in the inner loop

/// The ziggurat's rare branches (1.2 % of the variates): the tail beyond R for the base layer, the wedge test
/// otherwise; nullopt when the wedge rejects (the caller then starts over with a new word).
[[gnu::noinline]] std::optional<double> zigguratEdge(ParticleWords& words, double u, int i) {
  const ZigguratTables& t = kZiggurat;
  if (i == 0) {  // the base layer's overhang: Marsaglia's exact tail beyond R
    double x, y;
    do {
      x = std::log(words.open01()) / ZigguratTables::kR;
      y = std::log(words.open01());
    } while (-2.0 * y < x * x);
    return u < 0 ? x - ZigguratTables::kR : ZigguratTables::kR - x;
  }
  const double x = u * t.x[i];  // the wedge: accept under the density
  const double f0 = std::exp(-0.5 * (t.x[i] * t.x[i] - x * x)), f1 = std::exp(-0.5 * (t.x[i + 1] * t.x[i + 1] - x * x));
  if (f1 + words.open01() * (f0 - f1) < 1.0) return x;
  return std::nullopt;
}

/// One N(0, 1) variate from a particle's words: mostly one word (bits 11..63 the uniform u in [-1, 1), bits 0..6 the
/// layer), exact in law (rejection in the wedges, the exact tail beyond R).
inline double zigguratNormal(ParticleWords& words) {
  for (;;) {
    const std::uint64_t w = words.next();
    const double u = 2.0 * (static_cast<double>(w >> 11) * 0x1p-53) - 1.0;
    const int i = static_cast<int>(w & 0x7F);
    if (std::fabs(u) < kZiggurat.ratio[i]) return u * kZiggurat.x[i];  // inside the layer's rectangle
    if (const auto z = zigguratEdge(words, u, i)) return *z;
  }
}

/// The drift of update k (1-based) of one particle of process s: g_D, or g_{B_k} (MATH.md §8). `batch` is work space.
void drift(const SamplerProblem& P, const models::EmpiricalLoss& L, int s, long k, const double* theta, double* grad,
           ParticleWords& uniforms, std::vector<std::size_t>& batch) {
  const models::BatchScheme& batching = P.batches;
  const std::size_t n = L.data().size();
  const std::size_t* records = nullptr;
  std::size_t count = n;
  if (batching.sampling == models::BatchSampling::Cyclic) {
    const auto& B = P.cyclicBatches.atStep(s, k - 1);
    records = B.data();
    count = B.size();
  } else if (batching.sampling == models::BatchSampling::Poisson) {
    batch.clear();
    // Word (k - 1) n + i of stream 2 decides record i at update k: the updates run in order, one word per record.
    for (std::size_t i = 0; i < n; ++i)
      if (uniforms.closedOpen01() < batching.rate) batch.push_back(i);
    records = batch.data();
    count = batch.size();
  }
  // Every record with b = n (batch indices increase): the full-batch drift itself, the same bits.
  if (count == n && (batching.sampling == models::BatchSampling::Full || batching.divisor == static_cast<double>(n)))
    L.gradientInto(theta, grad);
  else
    L.batchGradientInto(theta, records, count, batching.divisor, grad);
}

models::Matrix choleskyFactor(const models::Matrix& S, const char* what) {
  Eigen::LLT<models::Matrix> llt(S);
  if (llt.info() != Eigen::Success)
    throw std::invalid_argument(std::string("MonteCarloSampler: the ") + what + " is not positive definite");
  return llt.matrixL();
}

// Per block and per (output, process): [count, mean (d), centred cross products M2 (d x d)].
struct MomentLayout {
  int d;
  std::size_t outputs;
  std::size_t record() const { return 1 + static_cast<std::size_t>(d) + static_cast<std::size_t>(d * d); }
  std::size_t perBlock() const { return outputs * 2 * record(); }
  std::size_t offset(std::size_t block, std::size_t output, int process) const {
    return block * perBlock() + (output * 2 + static_cast<std::size_t>(process)) * record();
  }
};

// Welford's update of (count, mean, M2) with one point.
void addPoint(double* m, const double* x, int d) {
  double& n = m[0];
  double* mean = m + 1;
  double* m2 = m + 1 + d;
  n += 1.0;
  double delta[8];
  for (int a = 0; a < d; ++a) {
    delta[a] = x[a] - mean[a];
    mean[a] += delta[a] / n;
  }
  for (int a = 0; a < d; ++a)
    for (int b = 0; b < d; ++b) m2[a * d + b] += delta[a] * (x[b] - mean[b]);
}

// Chan, Golub and LeVeque's merge of (count, mean, M2) b into a.
void merge(double* a, const double* b, int d) {
  const double na = a[0], nb = b[0];
  if (nb == 0) return;
  const double n = na + nb;
  double delta[8];
  for (int i = 0; i < d; ++i) delta[i] = b[1 + i] - a[1 + i];
  for (int i = 0; i < d; ++i) a[1 + i] += delta[i] * (nb / n);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) a[1 + d + i * d + j] += b[1 + d + i * d + j] + delta[i] * delta[j] * (na * nb / n);
  a[0] = n;
}

}  // namespace

long MonteCarloSampler::blockSize(long particles) {
  constexpr long kTargetBlocks = 64;  // enough batches for the batch-means errors, and for load balance
  constexpr long kMinimumBlock = 256;
  return std::max(kMinimumBlock, (particles + kTargetBlocks - 1) / kTargetBlocks);
}

MonteCarloSampler::MonteCarloSampler(SamplerProblem problem, const meshes::BoxMesh& mesh, SamplerSettings settings)
    : problem_(std::move(problem)), mesh_(mesh), settings_(settings) {
  const int d = mesh_.dim();
  if (!problem_.lossD || !problem_.lossDPrime) throw std::invalid_argument("MonteCarloSampler: no loss given");
  if (problem_.lossD->data().dim() != d || problem_.lossDPrime->data().dim() != d)
    throw std::invalid_argument("MonteCarloSampler: the data and the mesh have different dimensions");
  if (d > 8) throw std::invalid_argument("MonteCarloSampler: dimension above 8");
  if (problem_.initialMean.size() != d || problem_.initialCovariance.rows() != d ||
      problem_.sigma.rows() != d || problem_.sigmaPrime.rows() != d)
    throw std::invalid_argument("MonteCarloSampler: initial law or noise of the wrong dimension");
  if (!(problem_.step > 0) || problem_.steps < 0) throw std::invalid_argument("MonteCarloSampler: step <= 0 or steps < 0");
  if (settings_.particles < 1) throw std::invalid_argument("MonteCarloSampler: particles must be >= 1");
  if (settings_.threads < 1) throw std::invalid_argument("MonteCarloSampler: threads must be >= 1");
  if (problem_.outputSteps.empty()) problem_.outputSteps.push_back(problem_.steps);
  for (std::size_t o = 0; o < problem_.outputSteps.size(); ++o) {
    const long s = problem_.outputSteps[o];
    if (s < 0 || s > problem_.steps || (o > 0 && s <= problem_.outputSteps[o - 1]))
      throw std::invalid_argument("MonteCarloSampler: output steps must increase within 0.." +
                                  std::to_string(problem_.steps));
  }
  const models::BatchScheme& batches = problem_.batches;
  if (batches.sampling != models::BatchSampling::Full) {
    if (problem_.dynamics != SampledDynamics::NoisyGd)
      throw std::invalid_argument("MonteCarloSampler: minibatches are for noisy GD only");
    if (!(batches.divisor > 0) || !std::isfinite(batches.divisor))
      throw std::invalid_argument("MonteCarloSampler: the batch divisor b must be positive and finite");
    if (batches.sampling == models::BatchSampling::Poisson && !(batches.rate > 0 && batches.rate <= 1))
      throw std::invalid_argument("MonteCarloSampler: the Poisson sampling rate must lie in (0, 1]");
    if (batches.sampling == models::BatchSampling::Cyclic) {
      const std::size_t recordCounts[2] = {problem_.lossD->data().size(), problem_.lossDPrime->data().size()};
      models::requireCyclicBatchesWithin(problem_.cyclicBatches, recordCounts, "MonteCarloSampler");
    }
  }
  // Throws std::invalid_argument when C does not fit the mesh (a box face that is not a mesh face), as the solver.
  bins_ = solver::BoundaryBins(mesh_, problem_.constraint, problem_.ballAngularBins);
}

namespace {

/// The snapshots of every output step from the reduced histograms (layout: per (output, process) the cells, the
/// boundary bins and the outside count) and the per-block moments, merged in block order (the same bits on every
/// rank and thread count).
std::vector<SampleSnapshot> snapshotsFrom(const SamplerProblem& P, std::size_t cells, std::size_t nBins, long N,
                                          const std::vector<std::int64_t>& counts,
                                          const std::vector<double>& blockMoments, long blocks, int d) {
  const std::size_t outputs = P.outputSteps.size();
  const std::size_t histRecord = cells + nBins + 1;
  const MomentLayout layout{d, outputs};
  std::vector<SampleSnapshot> snapshots(outputs);
  for (std::size_t o = 0; o < outputs; ++o) {
    SampleSnapshot& snap = snapshots[o];
    snap.step = P.outputSteps[o];
    snap.time = P.step * static_cast<double>(snap.step);
    for (int s = 0; s < 2; ++s) {
      const std::int64_t* h = counts.data() + (o * 2 + static_cast<std::size_t>(s)) * histRecord;
      ParticleHistogram& hist = snap.histogram[s];
      hist.cells.assign(h, h + cells);
      hist.boundary.assign(h + cells, h + cells + nBins);
      hist.outside = h[cells + nBins];
      hist.total = N;
      std::vector<double> total(layout.record(), 0.0);
      std::vector<models::Matrix> blockCov;
      for (long b = 0; b < blocks; ++b) {
        const double* m = blockMoments.data() + layout.offset(static_cast<std::size_t>(b), o, s);
        merge(total.data(), m, d);
        if (m[0] >= 2) blockCov.push_back(Eigen::Map<const models::Matrix>(m + 1 + d, d, d) / (m[0] - 1.0));
      }
      SampleMoments& mom = snap.moments[s];
      mom.count = static_cast<std::int64_t>(total[0]);
      mom.mean = Eigen::Map<const models::Vector>(total.data() + 1, d);
      mom.covariance = Eigen::Map<const models::Matrix>(total.data() + 1 + d, d, d) / (total[0] - 1.0);
      mom.meanStandardError = (mom.covariance.diagonal() / total[0]).cwiseSqrt();
      mom.covarianceStandardError = models::Matrix::Constant(d, d, std::numeric_limits<double>::quiet_NaN());
      const double nb = static_cast<double>(blockCov.size());
      if (nb >= 2) {
        models::Matrix mean = models::Matrix::Zero(d, d), sq = models::Matrix::Zero(d, d);
        for (const auto& c : blockCov) mean += c / nb;
        for (const auto& c : blockCov) sq += (c - mean).cwiseAbs2() / (nb - 1.0);
        mom.covarianceStandardError = (sq / nb).cwiseSqrt();
      }
    }
  }
  return snapshots;
}


}  // namespace

std::vector<SampleSnapshot> MonteCarloSampler::run() const {
  const int d = mesh_.dim();
  const SamplerProblem& P = problem_;
  const long N = settings_.particles;
  const long B = blockSize(N);
  const long blocks = (N + B - 1) / B;
  int rank = 0, size = 1;
  MPI_Comm_rank(settings_.comm, &rank);
  MPI_Comm_size(settings_.comm, &size);
  const long firstBlock = blocks * rank / size, endBlock = blocks * (rank + 1) / size;

  const solver::BoundaryBins& bins = bins_;
  const std::size_t cells = mesh_.totalCells(), nBins = bins.size();
  const std::size_t outputs = P.outputSteps.size();
  // Histogram layout per (output, process): cells, boundary bins, outside.
  const std::size_t histRecord = cells + nBins + 1;
  const MomentLayout layout{d, outputs};

  const models::Matrix L0 = choleskyFactor(P.initialCovariance, "initial covariance");
  const models::Matrix noise[2] = {std::sqrt(2.0 * P.step) * choleskyFactor(P.sigma, "noise covariance Sigma"),
                                   std::sqrt(2.0 * P.step) * choleskyFactor(P.sigmaPrime, "noise covariance Sigma'")};
  const models::EmpiricalLoss* loss[2] = {P.lossD.get(), P.lossDPrime.get()};
  const bool constrained = !P.constraint.isNone();

  std::vector<double> blockMoments(static_cast<std::size_t>(blocks) * layout.perBlock(), 0.0);
  std::vector<std::vector<std::int64_t>> threadCounts(static_cast<std::size_t>(settings_.threads),
                                                      std::vector<std::int64_t>(outputs * 2 * histRecord, 0));
  std::atomic<long> nextBlock{firstBlock};
  std::exception_ptr failure;
  std::mutex failureMutex;

  auto worker = [&](int thread) {
    try {
      std::vector<std::int64_t>& counts = threadCounts[static_cast<std::size_t>(thread)];
      double theta[8], before[8], grad[8], z[8];
      std::vector<std::size_t> batch;
      for (long b = nextBlock++; b < endBlock; b = nextBlock++) {
        const long first = b * B, last = std::min(N, first + B);
        for (int s = 0; s < 2; ++s) {
          const models::Matrix& Ln = noise[s];
          for (long i = first; i < last; ++i) {
            ParticleWords initialWords(settings_.seed, static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(s), 0);
            ParticleWords noiseWords(settings_.seed, static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(s), 1);
            ParticleWords uniforms(settings_.seed, static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(s), 2);
            bool projected = false;
            auto project = [&] {
              if (!constrained) return;
              for (int a = 0; a < d; ++a) before[a] = theta[a];
              P.constraint.projectInPlace(theta, d);
              projected = false;
              for (int a = 0; a < d; ++a) projected = projected || theta[a] != before[a];
            };
            auto record = [&](std::size_t o) {
              std::int64_t* h = counts.data() + (o * 2 + static_cast<std::size_t>(s)) * histRecord;
              const std::size_t bin = constrained ? bins.projectedPointBin(theta, projected)
                                                  : solver::BoundaryBins::kInterior;
              if (bin != solver::BoundaryBins::kInterior) {
                ++h[cells + bin];
              } else {
                std::size_t flat = 0, stride = 1;
                bool inside = true;
                for (int a = 0; a < d; ++a) {
                  const int idx = mesh_.axis(a).locate(theta[a]);
                  if (idx < 0 || idx >= mesh_.cells(a)) {
                    inside = false;
                    break;
                  }
                  flat += static_cast<std::size_t>(idx) * stride;
                  stride *= static_cast<std::size_t>(mesh_.cells(a));
                }
                ++h[inside ? flat : cells + nBins];
              }
              addPoint(blockMoments.data() + layout.offset(static_cast<std::size_t>(b), o, s), theta, d);
            };
            // theta_0 = Pi_C(m_0 + L_0 z).
            for (int a = 0; a < d; ++a) z[a] = zigguratNormal(initialWords);
            for (int a = 0; a < d; ++a) {
              double v = P.initialMean[a];
              for (int c = 0; c <= a; ++c) v += L0(a, c) * z[c];
              theta[a] = v;
            }
            project();
            std::size_t o = 0;
            if (P.outputSteps[0] == 0) record(o++);
            for (long k = 1; k <= P.steps; ++k) {
              // theta <- Pi_C(theta - step g(theta) + sqrt(2 step) L z)   (MATH.md §2.1, §8; Euler–Maruyama §2.3)
              drift(P, *loss[s], s, k, theta, grad, uniforms, batch);
              for (int a = 0; a < d; ++a) z[a] = zigguratNormal(noiseWords);
              for (int a = 0; a < d; ++a) {
                double v = theta[a] - P.step * grad[a];
                for (int c = 0; c <= a; ++c) v += Ln(a, c) * z[c];
                theta[a] = v;
              }
              project();
              if (o < outputs && P.outputSteps[o] == k) record(o++);
            }
          }
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(failureMutex);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < settings_.threads; ++t) pool.emplace_back(worker, t);
  worker(0);
  for (auto& t : pool) t.join();
  int failed = failure ? 1 : 0, anyFailed = 0;
  MPI_Allreduce(&failed, &anyFailed, 1, MPI_INT, MPI_MAX, settings_.comm);
  if (failure) std::rethrow_exception(failure);
  if (anyFailed) throw std::runtime_error("MonteCarloSampler: another rank failed");

  // Exact reductions: integer counts over threads and ranks; each block's moments live on one rank only, so the
  // sum over ranks adds zeros to them (exact), and the merge below runs in block order on every rank.
  std::vector<std::int64_t> counts(outputs * 2 * histRecord, 0);
  for (const auto& c : threadCounts)
    for (std::size_t j = 0; j < counts.size(); ++j) counts[j] += c[j];
  MPI_Allreduce(MPI_IN_PLACE, counts.data(), static_cast<int>(counts.size()), MPI_INT64_T, MPI_SUM, settings_.comm);
  MPI_Allreduce(MPI_IN_PLACE, blockMoments.data(), static_cast<int>(blockMoments.size()), MPI_DOUBLE, MPI_SUM,
                settings_.comm);

  return snapshotsFrom(P, cells, nBins, N, counts, blockMoments, blocks, d);
}

}  // namespace fpdp::validation
