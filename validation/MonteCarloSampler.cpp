#include "validation/MonteCarloSampler.hpp"

#include "models/LossLanes.hpp"
#include "validation/LaneRandom.hpp"

#include <atomic>
#include <cmath>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>

#include <Eigen/Cholesky>


namespace fpdp::validation {

namespace {

constexpr int kLanes = 64;          // particles advanced together (structure of arrays)
constexpr int kMaxDim = 8;
constexpr int kBufferedVariates = 16;  // normals generated per lane and refill (8 Philox blocks)

/// The lane form of the drift: which closed-form loss, its parameter, the clip norm (0: none) and the records.
struct LaneLoss {
  enum Kind { Quadratic, Logistic, Other } kind = Other;
  double parameter = 0.0;          // lambda (quadratic) or mu (logistic)
  double clipNorm = 0.0;           // > 0: per-example clipping
  bool meanShortcut = false;       // unclipped quadratic: grad L_D = lambda (theta - xbar), as EmpiricalLoss
  std::vector<double> x, y, mean;  // records (n x d, row-major), labels, xbar
  std::size_t n = 0;

  explicit LaneLoss(const models::EmpiricalLoss& L) {
    const int d = L.data().dim();
    n = L.data().size();
    const models::Loss& loss = L.loss();
    if (const auto* q = dynamic_cast<const models::QuadraticLoss*>(&loss)) {
      kind = Quadratic;
      parameter = q->lambda();
    } else if (const auto* l = dynamic_cast<const models::LogisticLoss*>(&loss)) {
      kind = Logistic;
      parameter = l->regularization();
      // Labels outside {-1, +1} take the scalar path, whose LogisticLoss::gradientInto names them in its error.
      for (const auto& r : L.data().records())
        if (r.y != 1.0 && r.y != -1.0) kind = Other;
    }
    clipNorm = L.clipNorm().value_or(0.0);
    meanShortcut = kind == Quadratic && !L.clipNorm();
    for (const auto& r : L.data().records()) {
      for (int a = 0; a < d; ++a) x.push_back(r.x[a]);
      y.push_back(r.y);
    }
    if (meanShortcut) {
      const models::Vector m = L.data().mean();  // EmpiricalLoss's xbar, the same function
      mean.assign(m.data(), m.data() + d);
    }
  }
};

/// The work arrays of one group of kLanes particles of one process.
struct LaneGroup {
  static constexpr int W = kLanes;
  alignas(64) double theta[kMaxDim * W], grad[kMaxDim * W], term[kMaxDim * W], muTheta[kMaxDim * W], work[W], work2[W];
  alignas(64) double normals[kBufferedVariates * W];
  alignas(64) std::uint64_t words[kBufferedVariates * W];
  alignas(64) std::uint32_t lo[W], hi[W];
  lanes::LaneBlock<W> block;
  lanes::SpillWords spill[W];
  bool projected[W];
  std::vector<double> keep;          // Poisson: keep[i * W + p] = 1 when record i is in particle p's batch
  std::vector<std::size_t> batch;    // the scalar path's batch
  long bufferStart = 0, bufferEnd = 0;  // the variates held in normals (their numbers in the stream)
};

}  // namespace

double lanes::zigguratEdge(std::uint64_t word, SpillWords& spill) {
  const ZigguratTables& t = kZiggurat;
  for (;;) {
    const double u = zigguratUniform(word);
    const int i = static_cast<int>(word & (ZigguratTables::kLayers - 1));
    if (std::fabs(u) < t.ratio[i]) return u * t.x[i];  // a fresh word inside its rectangle
    if (i == 0) {  // the base layer's overhang: Marsaglia's exact tail beyond R
      double x, y;
      do {
        x = std::log(spill.open01()) / ZigguratTables::kR;
        y = std::log(spill.open01());
      } while (-2.0 * y < x * x);
      return u < 0 ? x - ZigguratTables::kR : ZigguratTables::kR - x;
    }
    const double x = u * t.x[i];  // the wedge: accept under the density (one exp: the ends are tabulated)
    if (t.f[i + 1] + spill.open01() * (t.f[i] - t.f[i + 1]) < std::exp(-0.5 * x * x)) return x;
    word = spill.next();
  }
}

namespace {

/// Fills the group's normals with variates start .. start + count - 1 (start and count even) of a stream.
[[gnu::always_inline]] inline void fillNormals(LaneGroup& g, lanes::StreamKey key, std::uint32_t process,
                                               std::uint32_t stream, long start, int count) {
  constexpr int W = LaneGroup::W;
  for (int b = 0; b < count / 2; ++b) {
    g.block.generate(key, static_cast<std::uint32_t>(start / 2 + b), g.lo, g.hi, process, stream);
    lanes::zigguratRectangles<W>(g.block, g.normals + 2 * b * W, g.words + 2 * b * W);
  }
  // The rare edges, in increasing variate number per particle (the order its stream 3 is read in).
  for (int j = 0; j < count; ++j)
    for (int p = 0; p < W; ++p)
      if (std::isnan(g.normals[j * W + p])) g.normals[j * W + p] = lanes::zigguratEdge(g.words[j * W + p], g.spill[p]);
  g.bufferStart = start;
  g.bufferEnd = start + count;
}

/// keep[i * W + p] = 1 when record i joins particle p's batch at update k (Poisson, MATH.md §8): word (k - 1) n + i
/// of stream 2 below rate 2^64 (exactly probability rate for every rate that is a multiple of 2^-64).
[[gnu::always_inline]] inline void poissonInclusion(LaneGroup& g, lanes::StreamKey key, std::uint32_t process, long k,
                                                    std::size_t n, double rate) {
  constexpr int W = LaneGroup::W;
  const bool all = rate >= 1.0;
  const std::uint64_t threshold = all ? 0 : static_cast<std::uint64_t>(std::ceil(rate * 0x1p64));
  const std::uint64_t first = static_cast<std::uint64_t>(k - 1) * n, end = first + n;
  for (std::uint64_t b = first / 2; 2 * b < end; ++b) {
    g.block.generate(key, static_cast<std::uint32_t>(b), g.lo, g.hi, process, lanes::kPoissonStream);
    for (int h = 0; h < 2; ++h) {
      const std::uint64_t m = 2 * b + static_cast<std::uint64_t>(h);
      if (m < first || m >= end) continue;
      double* keep = g.keep.data() + (m - first) * W;
      for (int p = 0; p < W; ++p) keep[p] = all || g.block.word(h, p) < threshold ? 1.0 : 0.0;
    }
  }
}

/// models::addLogisticTermLanes for the dimension d (1 .. kMaxDim), a constant inside the lane loop.
[[gnu::always_inline]] inline void addLogisticTerm(const double* x, double y, int d, const double* theta,
                                                   const double* muTheta, double* grad) {
  constexpr int W = LaneGroup::W;
  switch (d) {
    case 1: return models::addLogisticTermLanes<W, 1>(x, y, theta, muTheta, grad);
    case 2: return models::addLogisticTermLanes<W, 2>(x, y, theta, muTheta, grad);
    case 3: return models::addLogisticTermLanes<W, 3>(x, y, theta, muTheta, grad);
    case 4: return models::addLogisticTermLanes<W, 4>(x, y, theta, muTheta, grad);
    case 5: return models::addLogisticTermLanes<W, 5>(x, y, theta, muTheta, grad);
    case 6: return models::addLogisticTermLanes<W, 6>(x, y, theta, muTheta, grad);
    case 7: return models::addLogisticTermLanes<W, 7>(x, y, theta, muTheta, grad);
    default: return models::addLogisticTermLanes<W, kMaxDim>(x, y, theta, muTheta, grad);
  }
}

/// grad = (1/divisor) sum over `count` records (records[j], or j when records is null; only those kept when keep is
/// given) of the (clipped) per-example gradients, in that order: EmpiricalLoss::batchGradientInto for W particles.
[[gnu::always_inline]] inline void laneGradient(LaneGroup& g, const LaneLoss& L, int d, const std::size_t* records,
                                                std::size_t count, const double* keep, double divisor) {
  constexpr int W = LaneGroup::W;
  double* __restrict grad = g.grad;
  const double* __restrict term = g.term;
  for (int i = 0; i < d * W; ++i) grad[i] = 0.0;
  const bool fused = L.kind == LaneLoss::Logistic && L.clipNorm == 0 && !keep;  // the common case in one pass
  if (fused)
    for (int i = 0; i < d * W; ++i) g.muTheta[i] = L.parameter * g.theta[i];  // the same in every term
  for (std::size_t j = 0; j < count; ++j) {
    const std::size_t r = records ? records[j] : j;
    const double* x = L.x.data() + r * static_cast<std::size_t>(d);
    if (fused) {
      addLogisticTerm(x, L.y[r], d, g.theta, g.muTheta, grad);
      continue;
    }
    if (L.kind == LaneLoss::Quadratic)
      models::quadraticTermLanes<W>(L.parameter, x, d, g.theta, g.term);
    else
      models::logisticTermLanes<W>(L.parameter, x, L.y[r], d, g.theta, g.term, g.work);
    if (L.clipNorm > 0) models::clipLanes<W>(L.clipNorm, d, g.term, g.work2);
    if (keep) {
      const double* __restrict k = keep + j * W;
      for (int a = 0; a < d; ++a)
        for (int p = 0; p < W; ++p) grad[a * W + p] += k[p] != 0.0 ? term[a * W + p] : 0.0;
    } else {
      for (int i = 0; i < d * W; ++i) grad[i] += term[i];
    }
  }
  for (int i = 0; i < d * W; ++i) grad[i] /= divisor;  // divided, as the scalar forms do
}

/// The full-batch drift g_D of the unclipped quadratic loss, lambda (theta - xbar), for every lane.
[[gnu::always_inline]] inline void meanShortcut(LaneGroup& g, const LaneLoss& L, int d) {
  constexpr int W = LaneGroup::W;
  for (int a = 0; a < d; ++a)
    for (int p = 0; p < W; ++p) g.grad[a * W + p] = L.parameter * (g.theta[a * W + p] - L.mean[a]);
}

/// The drift of update k for a loss without a lane form: one particle at a time through EmpiricalLoss, the batch of
/// particle p from keep (Poisson) or the cyclic schedule.
[[gnu::noinline]] void scalarDrift(LaneGroup& g, const SamplerProblem& P, const models::EmpiricalLoss& L, int s, long k,
                                   int d) {
  constexpr int W = LaneGroup::W;
  const models::BatchScheme& batching = P.batches;
  const std::size_t n = L.data().size();
  double theta[kMaxDim], grad[kMaxDim];
  for (int p = 0; p < W; ++p) {
    for (int a = 0; a < d; ++a) theta[a] = g.theta[a * W + p];
    const std::size_t* records = nullptr;
    std::size_t count = n;
    if (batching.sampling == models::BatchSampling::Cyclic) {
      const auto& B = P.cyclicBatches.atStep(s, k - 1);
      records = B.data();
      count = B.size();
    } else if (batching.sampling == models::BatchSampling::Poisson) {
      g.batch.clear();
      for (std::size_t i = 0; i < n; ++i)
        if (g.keep[i * W + static_cast<std::size_t>(p)] != 0.0) g.batch.push_back(i);
      records = g.batch.data();
      count = g.batch.size();
    }
    // Every record with b = n (batch indices increase): the full-batch drift itself, the same bits.
    if (count == n && (batching.sampling == models::BatchSampling::Full || batching.divisor == static_cast<double>(n)))
      L.gradientInto(theta, grad);
    else
      L.batchGradientInto(theta, records, count, batching.divisor, grad);
    for (int a = 0; a < d; ++a) g.grad[a * W + p] = grad[a];
  }
}

/// g.grad = the drift of update k (1-based) of process s: g_D, or g_{B_k} (MATH.md §8).
[[gnu::always_inline]] inline void drift(LaneGroup& g, const SamplerProblem& P, const models::EmpiricalLoss& L,
                                         const LaneLoss& lane, lanes::StreamKey key, int s, long k, int d) {
  constexpr int W = LaneGroup::W;
  const models::BatchScheme& batching = P.batches;
  const std::size_t n = lane.n;
  const bool allWithN = batching.divisor == static_cast<double>(n);  // a batch of every record is the full batch
  if (batching.sampling == models::BatchSampling::Poisson)
    poissonInclusion(g, key, static_cast<std::uint32_t>(s), k, n, batching.rate);
  if (lane.kind == LaneLoss::Other) return scalarDrift(g, P, L, s, k, d);
  if (batching.sampling == models::BatchSampling::Full) {
    if (lane.meanShortcut) return meanShortcut(g, lane, d);
    return laneGradient(g, lane, d, nullptr, n, nullptr, static_cast<double>(n));
  }
  if (batching.sampling == models::BatchSampling::Cyclic) {
    const auto& B = P.cyclicBatches.atStep(s, k - 1);
    if (B.size() == n && allWithN && lane.meanShortcut) return meanShortcut(g, lane, d);
    return laneGradient(g, lane, d, B.data(), B.size(), nullptr, batching.divisor);
  }
  laneGradient(g, lane, d, nullptr, n, g.keep.data(), batching.divisor);
  if (!(allWithN && lane.meanShortcut)) return;
  // The lanes whose batch holds every record take the full-batch drift itself (the same bits as a full batch).
  for (int p = 0; p < W; ++p) {
    bool every = true;
    for (std::size_t i = 0; i < n; ++i) every = every && g.keep[i * W + static_cast<std::size_t>(p)] != 0.0;
    if (every)
      for (int a = 0; a < d; ++a) g.grad[a * W + p] = lane.parameter * (g.theta[a * W + p] - lane.mean[a]);
  }
}

/// theta <- theta - step grad + F z (F lower triangular, row-major d x d): the update of MATH.md §2.1 / §2.3 before
/// the projection, with the scalar form's order of operations.
[[gnu::always_inline]] inline void update(LaneGroup& g, int d, double step, const double* F, const double* const* z) {
  constexpr int W = LaneGroup::W;
  double* __restrict theta = g.theta;
  const double* __restrict grad = g.grad;
  for (int a = 0; a < d; ++a) {
    for (int p = 0; p < W; ++p) theta[a * W + p] = theta[a * W + p] - step * grad[a * W + p];
    for (int c = 0; c <= a; ++c) {
      const double f = F[a * kMaxDim + c];
      const double* __restrict zc = z[c];
      for (int p = 0; p < W; ++p) theta[a * W + p] += f * zc[p];
    }
  }
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

/// Projection and recording of the particles of a group (scalar, at the output steps and under a constraint only).
struct GroupObserver {
  const meshes::BoxMesh& mesh;
  const solver::BoundaryBins& bins;
  const models::ConstraintSet& constraint;
  bool constrained;
  std::size_t cells, histRecord;
  MomentLayout layout;

  /// theta <- Pi_C(theta) for the first `active` lanes, noting which moved (they lie on the boundary of C).
  [[gnu::noinline]] void project(LaneGroup& g, int active) const {
    constexpr int W = LaneGroup::W;
    const int d = layout.d;
    double theta[kMaxDim];
    for (int p = 0; p < active; ++p) {
      for (int a = 0; a < d; ++a) theta[a] = g.theta[a * W + p];
      constraint.projectInPlace(theta, d);
      g.projected[p] = false;
      for (int a = 0; a < d; ++a) {
        g.projected[p] = g.projected[p] || theta[a] != g.theta[a * W + p];
        g.theta[a * W + p] = theta[a];
      }
    }
  }

  /// Output o of process s: each of the first `active` lanes, in particle order, adds one count to its cell, its
  /// boundary bin or the outside count, and one point to the block's moments.
  [[gnu::noinline]] void record(const LaneGroup& g, int active, std::size_t o, int s, std::int64_t* counts,
                                double* moments) const {
    constexpr int W = LaneGroup::W;
    const int d = layout.d;
    std::int64_t* h = counts + (o * 2 + static_cast<std::size_t>(s)) * histRecord;
    const std::size_t nBins = bins.size();
    double theta[kMaxDim];
    for (int p = 0; p < active; ++p) {
      for (int a = 0; a < d; ++a) theta[a] = g.theta[a * W + p];
      const std::size_t bin = constrained ? bins.projectedPointBin(theta, g.projected[p]) : solver::BoundaryBins::kInterior;
      if (bin != solver::BoundaryBins::kInterior) {
        ++h[cells + bin];
      } else {
        std::size_t flat = 0, stride = 1;
        bool inside = true;
        for (int a = 0; a < d && inside; ++a) {
          const int idx = mesh.axis(a).locate(theta[a]);
          inside = idx >= 0 && idx < mesh.cells(a);
          flat += static_cast<std::size_t>(inside ? idx : 0) * stride;
          stride *= static_cast<std::size_t>(mesh.cells(a));
        }
        ++h[inside ? flat : cells + nBins];
      }
      addPoint(moments, theta, d);
    }
  }
};

/// One group of particles of one process, from its initial draw to its last update.
struct GroupJob {
  const SamplerProblem* problem;
  const models::EmpiricalLoss* loss;
  const LaneLoss* lane;
  const GroupObserver* observer;
  lanes::StreamKey key{0};
  int process = 0, d = 1;
  double initialFactor[kMaxDim * kMaxDim], noiseFactor[kMaxDim * kMaxDim];  // L_0 and sqrt(2 step) L, row-major
  long first = 0;  // the particle of lane 0
  int active = 0;  // lanes that are particles of the run (the others are computed and dropped)
  std::int64_t* counts = nullptr;
  double* moments = nullptr;  // the block's moments of output 0, process s (MomentLayout)
};

/// The normals of a refill: whole updates (d variates each), an even number of variates (whole Philox blocks).
int bufferedVariates(int d) { return d * (kBufferedVariates / d / 2 * 2); }

/// Runs the group: theta_0 = Pi_C(m_0 + L_0 z), then theta <- Pi_C(theta - step g(theta) + sqrt(2 step) L z) for
/// k = 1 .. K (MATH.md §2.1, §8; Euler–Maruyama §2.3), recording at the output steps.
[[gnu::always_inline]] inline void advanceGroup(LaneGroup& g, const GroupJob& job) {
  constexpr int W = LaneGroup::W;
  const SamplerProblem& P = *job.problem;
  const int d = job.d, s = job.process;
  const auto process = static_cast<std::uint32_t>(s);
  const int refill = bufferedVariates(d);
  for (int p = 0; p < W; ++p) {
    const auto particle = static_cast<std::uint64_t>(job.first + p);
    g.lo[p] = static_cast<std::uint32_t>(particle);
    g.hi[p] = static_cast<std::uint32_t>(particle >> 32);
    g.spill[p] = lanes::SpillWords(job.key, particle, process);
  }
  const double* z[kMaxDim];
  fillNormals(g, job.key, process, lanes::kInitialStream, 0, refill);
  for (int a = 0; a < d; ++a) z[a] = g.normals + a * W;
  for (int a = 0; a < d; ++a) {
    for (int p = 0; p < W; ++p) g.theta[a * W + p] = P.initialMean[a];
    for (int c = 0; c <= a; ++c)
      for (int p = 0; p < W; ++p) g.theta[a * W + p] += job.initialFactor[a * kMaxDim + c] * z[c][p];
  }
  const GroupObserver& observer = *job.observer;
  const std::size_t outputs = P.outputSteps.size();
  const std::size_t perOutput = 2 * job.observer->layout.record();
  if (observer.constrained) observer.project(g, job.active);
  std::size_t o = 0;
  if (P.outputSteps[0] == 0) observer.record(g, job.active, o, s, job.counts, job.moments), ++o;
  for (long k = 1; k <= P.steps; ++k) {
    drift(g, P, *job.loss, *job.lane, job.key, s, k, d);
    const long first = (k - 1) * d;  // the update's variates in the noise stream
    if (k == 1 || first >= g.bufferEnd) fillNormals(g, job.key, process, lanes::kNoiseStream, first, refill);
    for (int a = 0; a < d; ++a) z[a] = g.normals + (first + a - g.bufferStart) * W;
    update(g, d, P.step, job.noiseFactor, z);
    if (observer.constrained) observer.project(g, job.active);
    if (o < outputs && P.outputSteps[o] == k)
      observer.record(g, job.active, o, s, job.counts, job.moments + o * perOutput), ++o;
  }
}

// One copy of the group's loops per instruction set, chosen at run time; the file is compiled with
// -ffp-contract=off and the loops hold no reductions across lanes, so every copy rounds alike (same bits).
void advanceGroupBaseline(LaneGroup& g, const GroupJob& job) { advanceGroup(g, job); }
#if defined(__x86_64__) && defined(__GNUC__)
#define FPDP_SAMPLER_ISA_COPIES 1
[[gnu::target("avx2")]] void advanceGroupAvx2(LaneGroup& g, const GroupJob& job) { advanceGroup(g, job); }
[[gnu::target("avx512f,avx512dq,avx512vl,avx512bw")]] void advanceGroupAvx512(LaneGroup& g, const GroupJob& job) {
  advanceGroup(g, job);
}
#else
#define FPDP_SAMPLER_ISA_COPIES 0
#endif

std::atomic<bool> vectorCopiesWanted{true};

/// The copy this processor runs: AVX-512, AVX2 or the baseline.
void (*groupAdvancer(const char** name))(LaneGroup&, const GroupJob&) {
#if FPDP_SAMPLER_ISA_COPIES
  static const int best = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw"))
      return 2;
    return __builtin_cpu_supports("avx2") ? 1 : 0;
  }();
  const int chosen = vectorCopiesWanted.load() ? best : 0;
  if (name) *name = chosen == 2 ? "avx512" : chosen == 1 ? "avx2" : "baseline";
  return chosen == 2 ? advanceGroupAvx512 : chosen == 1 ? advanceGroupAvx2 : advanceGroupBaseline;
#else
  if (name) *name = "baseline";
  return advanceGroupBaseline;
#endif
}

}  // namespace

void MonteCarloSampler::useVectorKernels(bool enabled) { vectorCopiesWanted.store(enabled); }

const char* MonteCarloSampler::vectorKernels() {
  const char* name = nullptr;
  groupAdvancer(&name);
  return name;
}

long MonteCarloSampler::blockSize(long particles) {
  constexpr long kTargetBlocks = 64;  // enough batches for the batch-means errors, and for load balance
  constexpr long kMinimumBlock = 256;
  const long size = std::max(kMinimumBlock, (particles + kTargetBlocks - 1) / kTargetBlocks);
  return (size + kLanes - 1) / kLanes * kLanes;  // whole lane groups
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

  const GroupObserver observer{mesh_, bins, P.constraint, constrained, cells, histRecord, layout};
  const LaneLoss laneLoss[2] = {LaneLoss(*loss[0]), LaneLoss(*loss[1])};
  const auto advance = groupAdvancer(nullptr);

  auto worker = [&](int thread) {
    try {
      auto group = std::make_unique<LaneGroup>();
      group->keep.resize(std::max(laneLoss[0].n, laneLoss[1].n) * kLanes);
      GroupJob job{};
      job.problem = &P;
      job.observer = &observer;
      job.key = lanes::StreamKey(settings_.seed);
      job.d = d;
      job.counts = threadCounts[static_cast<std::size_t>(thread)].data();
      for (int a = 0; a < d; ++a)
        for (int c = 0; c <= a; ++c) job.initialFactor[a * kMaxDim + c] = L0(a, c);
      for (long b = nextBlock++; b < endBlock; b = nextBlock++) {
        const long first = b * B, last = std::min(N, first + B);
        for (int s = 0; s < 2; ++s) {
          job.process = s;
          job.loss = loss[s];
          job.lane = &laneLoss[s];
          for (int a = 0; a < d; ++a)
            for (int c = 0; c <= a; ++c) job.noiseFactor[a * kMaxDim + c] = noise[s](a, c);
          job.moments = blockMoments.data() + layout.offset(static_cast<std::size_t>(b), 0, s);
          for (long i = first; i < last; i += kLanes) {
            job.first = i;
            job.active = static_cast<int>(std::min<long>(kLanes, last - i));
            advance(*group, job);
          }
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(failureMutex);
      if (!failure) failure = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  try {
    for (int t = 1; t < settings_.threads; ++t) pool.emplace_back(worker, t);
  } catch (const std::system_error& e) {
    // Under a memory or process limit not every thread starts: those that did stop after their block, and the sample
    // fails naming the setting (a pool left unjoined aborted the process and left its directories behind).
    nextBlock = endBlock;
    std::lock_guard<std::mutex> lock(failureMutex);
    if (!failure)
      failure = std::make_exception_ptr(std::runtime_error(
          "cannot start thread " + std::to_string(pool.size() + 1) + " of " + std::to_string(settings_.threads) +
          " (" + e.what() + "); ask for fewer threads (--threads, sampler.threads)"));
  }
  if (!failure) worker(0);
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
