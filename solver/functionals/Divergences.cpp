#include "solver/functionals/Divergences.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>

#include <Eigen/Eigenvalues>

#include "solver/functionals/HockeyStickKinks.hpp"
#include "solver/numerics/StableFunctions.hpp"

namespace fpdp::solver {

static_assert(DivergenceFunctionals::kTailShells == 4, "DivergenceValues::renyiTailLogMean holds 4 shells");

namespace {
/// |grad u|^2 and grad u^T Sigma grad u of one cell's gradient (grad: d components); false where either is not
/// finite (a stencil cell has p <= 0 or q <= 0: log r has no gradient there).
bool gradientForms(const double* grad, int dim, const models::Matrix& sigma, double& g2, double& gs) {
  g2 = 0.0, gs = 0.0;
  for (int a = 0; a < dim; ++a) {
    g2 += grad[a] * grad[a];
    for (int b = 0; b < dim; ++b) gs += grad[a] * sigma(a, b) * grad[b];
  }
  return std::isfinite(g2) && std::isfinite(gs);
}
}  // namespace

/// Pass 2 of evaluatePoints: the terms of one evaluation, a cell (weight its volume) or a singular mass (weight 1,
/// on rank 0, after the cells), normalised, and this rank's parts of the sums that need no order. Compact, 25 B a
/// term (records of every per-term value, 64 B, were the largest item of an output step's peak memory,
/// docs/scaling.md §6): the kind, whether r is near 1, and the three values that cost logarithms, log r,
/// l1l(rho) = log1p(rho) - rho and log(|c| q). The rest is recomputed from the point values by the expressions
/// measureTerms uses, so it has the same bits: the weights |c| p, |c| q, |grad u|^2 and its Sigma form, the cell's
/// wall and shell.
struct DivergenceFunctionals::Terms {
  enum Kind : unsigned char { Skip, Regular, PZero, Infinite };
  static constexpr unsigned char kKindBits = 3, kNearOne = 4;  // flags: the kind, |rho| < 1/2 (the series forms)
  // Where the terms come from.
  const double *p = nullptr, *q = nullptr;  // raw point values, stride apart
  std::ptrdiff_t stride = 1;
  const double* volume = nullptr;
  std::size_t cells = 0;
  const SingularMasses* singular = nullptr;
  double invMp = 1.0, invMq = 1.0;
  const std::array<double, 3>* gradient = nullptr;  // grad u per cell; null: none (every cell left out of I_alpha)
  int dim = 1;
  const models::Matrix* sigma = nullptr;
  const char* onBoundary = nullptr;
  const char* nextToWall = nullptr;
  const signed char* shell = nullptr;
  // Per term.
  std::vector<unsigned char> flags;
  std::vector<double> u, l1l, logWq;  // log r, l1l(rho) (near r = 1), log(|c| q); 0 where not computed
  // This rank's order-free sums.
  double kl = 0.0, tv = 0.0, excludedP = 0.0, excludedInfoP = 0.0;
  double klWall = 0.0;    // the part of kl in the cells touching a wall
  double klNext = 0.0;    // the part of kl in the layer inside them
  long underflow = 0;     // cells left out as numerically empty (DivergenceValues::underflowCells)
  bool infinite = false;  // q = 0 where p > 0

  std::size_t count = 0;  // cells, then the singular masses on rank 0
  std::size_t size() const { return count; }
  Kind kind(std::size_t i) const { return static_cast<Kind>(flags[i] & kKindBits); }
  bool nearOne(std::size_t i) const { return (flags[i] & kNearOne) != 0; }
  bool boundary(std::size_t i) const { return i < cells && onBoundary[i] != 0; }
  bool nextLayer(std::size_t i) const { return i < cells && nextToWall[i] != 0; }
  int shellOf(std::size_t i) const { return i < cells ? shell[i] : -1; }
  double pRaw(std::size_t i) const { return i < cells ? p[i * stride] : singular->p[i - cells]; }
  double qRaw(std::size_t i) const { return i < cells ? q[i * stride] : singular->q[i - cells]; }
  double weight(std::size_t i) const { return i < cells ? volume[i] : 1.0; }
  double pc(std::size_t i) const { return std::max(pRaw(i), 0.0) * invMp; }  // negatives enter as 0
  double qc(std::size_t i) const { return std::max(qRaw(i), 0.0) * invMq; }
  double wp(std::size_t i) const { return weight(i) * pc(i); }
  double wq(std::size_t i) const { return weight(i) * qc(i); }
  /// |grad u|^2 and its Sigma form of a regular term: 0 for singular masses (no gradient in the ambient space) and
  /// for cells whose gradient is not finite or not available (left out of I_alpha's numerators).
  void gradientTerms(std::size_t i, double& g2, double& gs) const {
    if (i >= cells || !gradient || !gradientForms(gradient[i].data(), dim, *sigma, g2, gs)) g2 = gs = 0.0;
  }
};

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// A bound on the integral beyond the walls of a non-negative integrand whose wall cells sum to `wall` and the layer
/// inside them to `next`: with rho = wall/next < 1 the cells beyond would sum to at most wall (rho + rho^2 + ...) if
/// the integrand is log-concave there (its decay per cell only grows outward); twice that for the midpoint rule's
/// error on a convex tail and for walls of different decay summed together. +inf where it does not decay.
double wallTailBound(double wall, double next) {
  if (!(wall > 0.0)) return 0.0;
  if (!(next > wall)) return kInf;
  const double rho = wall / next;
  return 2.0 * wall * rho / (1.0 - rho);
}

/// Regular terms of one group (DivergenceFunctionals::RenyiSumsPass), as arrays.
constexpr std::size_t kTermBlock = 128;
struct TermBlock {
  std::size_t size = 0;
  bool wall = false;  // the terms touch a wall: they feed the wall sums
  int shell = -1;     // the tail shell they feed, -1: none
  std::array<double, kTermBlock> u, wq, dp, G, GS, logWq, wqL1l;  // dp = |c| p - |c| q, wqL1l = |c| q l1l(rho)
  std::array<bool, kTermBlock> nearOne;
};
/// The recurrences' state along one run of orders, per cell of a TermBlock.
struct BlockRunState {
  std::array<double, kTermBlock> E1, X, scaled;                   // near: |c| q em1l(alpha u), |c| q expm1(alpha u)
  std::array<double, kTermBlock> eb, wqEm1lb, wqExpm1b, em1lbPlusB;  // e^b, |c| q em1l(b), |c| q expm1(b), expm1(b)
  std::array<bool, kTermBlock> near, recurse;
  std::array<std::size_t, kTermBlock> switchAt;  // first far position of the run
};
/// One order's sums over the cells of a TermBlock.
struct OrderSums {
  double e1 = 0, x = 0, xu = 0, xg = 0, xgs = 0;  // near: E1, X, X u, X G, X G_Sigma
  double s0 = 0, s1 = 0, sI = 0, sIS = 0;          // far: t {1, u, G, G_Sigma}
  double wallEm1 = 0, wallS0 = 0;                 // wall cells: E_alpha - 1 and S0
  double shellScaled = 0, shellExact = 0;         // shell cells: t (times the shell factor later), exact values
};
/// The per-order sums of DivergenceFunctionals::renyiSums, one array of 8 K + S values (K orders, S = K kTailShells):
/// [0,K) E_alpha - 1 (stable), [K,2K) its wall part, [2K,3K) E' (stable), [3K,4K) S0 = sum |c| q r^alpha e^-M,
/// [4K,5K) its wall part, [5K,6K) sum of the same times u, [6K,7K) times |grad u|^2, [7K,8K) times the Sigma form,
/// [8K, 8K+S) the shells (scaled by their own max).
template <typename T>
struct SumArrays {
  T *em1, *em1Wall, *dE, *S0, *S0Wall, *S1, *SI, *SIS, *shellSum;
  SumArrays(T* s, std::size_t K)
      : em1(s), em1Wall(s + K), dE(s + 2 * K), S0(s + 3 * K), S0Wall(s + 4 * K), S1(s + 5 * K), SI(s + 6 * K),
        SIS(s + 7 * K), shellSum(s + 8 * K) {}
};

/// The noise floors of p and q (docs/scheme.md §5, "Noise floor"): kNoiseFloorFactor times the size of each
/// density's most negative value (0 without one); values at or below them are no better known than the sign errors.
std::pair<double, double> noiseFloors(const DivergenceValues& v) {
  return {DivergenceFunctionals::kNoiseFloorFactor * std::max(-v.p.min, 0.0),
          DivergenceFunctionals::kNoiseFloorFactor * std::max(-v.q.min, 0.0)};
}

/// The hockey-stick terms of one direction (MATH.md §3): the pairs (a, b) = (|c| p, |c| q) (or exchanged) of the
/// terms with a > b, normalised like every functional's terms; for eps >= 0 the others contribute nothing.
struct HockeyStickTerms {
  std::vector<double> a, b;
};
/// The terms of one direction whose share of delta(eps) makes eps suspect: the wall cells (the box cuts the tail
/// beyond them) and the cells at a density's noise floor (values of round-off size).
struct SuspectTerms {
  HockeyStickTerms wall, noise;
};

/// sum max(a - x b, 0) over a few terms (no kink correction: the wall cells have none, the noise cells need none).
double hockeyStickSum(const HockeyStickTerms& t, double x) {
  double sum = 0.0;
  for (std::size_t i = 0; i < t.a.size(); ++i) sum += std::max(t.a[i] - x * t.b[i], 0.0);
  return sum;
}

/// The one hockey-stick quadrature (the eps grid and the eps(delta) roots): out[k] += sum_i max(a_i - x_k b_i, 0)
/// for ascending x_k = e^eps_k >= 1, each term computed as such (no 1 - ...). A term is positive only while
/// x_k < a/b: the first x_k at or beyond a/b is found by bisection and the loop over the rest is skipped; the sum is
/// branch-free (vectorisable) up to there, max(., 0) keeping out the one term at the boundary that rounding might
/// make slightly negative.
void addHockeyStick(const HockeyStickTerms& t, std::span<const double> x, double* out) {
  const std::size_t E = x.size();
  for (std::size_t i = 0; i < t.a.size(); ++i) {
    const double a = t.a[i], b = t.b[i];
    const std::size_t count =
        b > 0 ? static_cast<std::size_t>(std::upper_bound(x.begin(), x.end(), a / b) - x.begin()) : E;
    const std::size_t m = std::min(count + 1, E);
    for (std::size_t k = 0; k < m; ++k) out[k] += std::max(a - x[k] * b, 0.0);
  }
}

/// eps(delta) of both directions at every delta (MATH.md §7): models::exactEpsilons on the sums of addHockeyStick,
/// started from the eps grid's values of the same sums where there is a grid (`samples`: brackets, not
/// interpolation), each round's sums reduced over the ranks. They are summed on rank 0 and broadcast, so that every rank holds the same
/// bits and takes the same path through the root finder (an allreduce need not round alike on every rank). The
/// terms that vanish at every eps the root finder will still ask for (a < e^eps b from its brackets' lower ends on)
/// are dropped as the brackets narrow: they add exact zeros, so the sums do not change, only their cost.
/// Marks the roots that rest on the walls or on the noise floor (models::ExactEpsilonStatus::TruncatedSuspect,
/// NoiseLimited): the wall cells' share of delta(eps) above DivergenceFunctionals::kBoundaryShareTolerance (as for
/// R_alpha), the noise cells' share above the same, or an unreachable delta whose floor (the mass of one density
/// where the other is 0) is noise by more than the floor's excess over delta. Summed on rank 0 and broadcast, so
/// every rank marks the same.
void markSuspectRoots(std::vector<models::ExactEpsilon>& found, std::span<const models::ProfileRequest> requests,
                      const SuspectTerms (&suspect)[2], const double (&floor)[2], MPI_Comm comm) {
  using S = models::ExactEpsilonStatus;
  std::vector<double> local(2 * found.size(), 0.0), global(local.size());
  for (std::size_t j = 0; j < found.size(); ++j) {
    const SuspectTerms& t = suspect[requests[j].profile];
    if (found[j].status == S::Root || found[j].status == S::Zero) {
      const double x = std::exp(found[j].epsilon);
      local[2 * j] = hockeyStickSum(t.wall, x);
      local[2 * j + 1] = hockeyStickSum(t.noise, x);
    } else if (found[j].status == S::Unreachable) {
      for (std::size_t i = 0; i < t.noise.a.size(); ++i)
        if (t.noise.b[i] == 0.0) local[2 * j + 1] += t.noise.a[i];
    }
  }
  FPDP_PETSC(MPI_Reduce(local.data(), global.data(), static_cast<PetscMPIInt>(local.size()), MPI_DOUBLE, MPI_SUM, 0,
                        comm));
  FPDP_PETSC(MPI_Bcast(global.data(), static_cast<PetscMPIInt>(global.size()), MPI_DOUBLE, 0, comm));
  const double tol = DivergenceFunctionals::kBoundaryShareTolerance;
  for (std::size_t j = 0; j < found.size(); ++j) {
    const double wall = global[2 * j], noise = global[2 * j + 1], delta = requests[j].delta;
    if (found[j].status == S::Unreachable) {
      if (noise >= floor[requests[j].profile] - delta) found[j].status = S::NoiseLimited;
    } else if (found[j].status == S::Root || found[j].status == S::Zero) {
      const double at = found[j].deltaAtEpsilon;
      if (noise > tol * at) found[j].status = S::NoiseLimited;
      else if (wall > tol * at) found[j].status = S::TruncatedSuspect;
    }
  }
}

/// The ends of both directions' profiles (models::PrivacyProfileEnds: floor = the mass where the other density is 0,
/// flatFrom = the largest log(a/b) over b > 0), and the largest log(a/b) of the wall cells (-inf without any), from
/// the terms before the root finder drops any. The floor is summed on rank 0 and broadcast, the maxima are exact on
/// every rank.
struct ProfileEnds {
  models::PrivacyProfileEnds ends[2];
  double wallLargest[2];
};
ProfileEnds profileEnds(const HockeyStickTerms (&terms)[2], const SuspectTerms (&suspect)[2], MPI_Comm comm) {
  double localFloor[2] = {0.0, 0.0}, floor[2] = {0.0, 0.0};
  double localMax[4] = {0.0, 0.0, -INFINITY, -INFINITY}, globalMax[4];  // flatFrom p||q, q||p; walls p||q, q||p
  for (int dir = 0; dir < 2; ++dir) {
    const HockeyStickTerms& t = terms[dir];
    for (std::size_t i = 0; i < t.a.size(); ++i) {
      if (t.b[i] > 0.0) localMax[dir] = std::max(localMax[dir], std::log(t.a[i]) - std::log(t.b[i]));
      else localFloor[dir] += t.a[i];
    }
    const HockeyStickTerms& w = suspect[dir].wall;
    for (std::size_t i = 0; i < w.a.size(); ++i)
      if (w.b[i] > 0.0) localMax[2 + dir] = std::max(localMax[2 + dir], std::log(w.a[i]) - std::log(w.b[i]));
  }
  FPDP_PETSC(MPI_Reduce(localFloor, floor, 2, MPI_DOUBLE, MPI_SUM, 0, comm));
  FPDP_PETSC(MPI_Bcast(floor, 2, MPI_DOUBLE, 0, comm));
  FPDP_PETSC(MPI_Allreduce(localMax, globalMax, 4, MPI_DOUBLE, MPI_MAX, comm));
  return {{{floor[0], globalMax[0]}, {floor[1], globalMax[1]}}, {globalMax[2], globalMax[3]}};
}

/// The statuses of delta(eps) on the eps grid, one direction (x_k = e^eps_k ascending, values the reduced sums): as
/// markSuspectRoots, the wall and noise cells' shares of each value above DivergenceFunctionals::kBoundaryShareTolerance
/// (NoiseLimited before TruncatedSuspect); and past the largest log(a/b) of the box, where delta(eps) has fallen to
/// its floor, TruncatedSuspect if that largest log-ratio lies at a wall cell (the profile's tail is beyond the box).
/// Reduced on rank 0 and broadcast (every rank the same). Codes of models::ExactEpsilonStatus.
std::vector<int> profileStatuses(const SuspectTerms& suspect, double flatFrom, double wallLargest,
                                 std::span<const double> x, std::span<const double> values, MPI_Comm comm) {
  const std::size_t E = x.size();
  std::vector<double> local(2 * E, 0.0), global(2 * E);
  for (std::size_t k = 0; k < E; ++k) {
    local[2 * k] = hockeyStickSum(suspect.wall, x[k]);
    local[2 * k + 1] = hockeyStickSum(suspect.noise, x[k]);
  }
  FPDP_PETSC(MPI_Reduce(local.data(), global.data(), static_cast<PetscMPIInt>(2 * E), MPI_DOUBLE, MPI_SUM, 0, comm));
  FPDP_PETSC(MPI_Bcast(global.data(), static_cast<PetscMPIInt>(2 * E), MPI_DOUBLE, 0, comm));
  const bool tailAtWall = wallLargest >= flatFrom;  // -inf without wall terms
  const double tol = DivergenceFunctionals::kBoundaryShareTolerance;
  std::vector<int> status(E, static_cast<int>(models::ExactEpsilonStatus::Root));
  for (std::size_t k = 0; k < E; ++k) {
    const double wall = global[2 * k], noise = global[2 * k + 1], v = values[k];
    if (noise > tol * v) status[k] = static_cast<int>(models::ExactEpsilonStatus::NoiseLimited);
    else if (wall > tol * v || (tailAtWall && std::log(x[k]) >= flatFrom))
      status[k] = static_cast<int>(models::ExactEpsilonStatus::TruncatedSuspect);
  }
  return status;
}

std::vector<ExactEpsilonAtDelta> epsilonRoots(HockeyStickTerms (&terms)[2], std::optional<HockeyStickKinks> (&kinks)[2],
                                              const SuspectTerms (&suspect)[2], const models::PrivacyProfileEnds (&ends)[2],
                                              const std::vector<double>& deltas,
                                              std::span<const models::ProfileSample> samples, MPI_Comm comm) {
  const double floor[2] = {ends[0].floor, ends[1].floor};
  std::vector<models::ProfileRequest> requests;
  for (double d : deltas)
    for (int dir = 0; dir < 2; ++dir) requests.push_back({dir, d});
  std::vector<double> local, x, sums;
  std::vector<std::size_t> index;
  const models::ProfileEvaluator evaluate = [&](std::span<const models::ProfileQuery> queries,
                                                std::span<double> values, std::span<const double> lowestEps) {
    local.assign(queries.size(), 0.0);
    for (int dir = 0; dir < 2; ++dir) {
      HockeyStickTerms& t = terms[dir];
      if (lowestEps[static_cast<std::size_t>(dir)] > 0.0) {
        const double floorX = std::exp(lowestEps[static_cast<std::size_t>(dir)]);
        std::size_t kept = 0;
        for (std::size_t i = 0; i < t.a.size(); ++i)
          if (!(t.b[i] > 0.0 && t.a[i] < floorX * t.b[i])) {
            t.a[kept] = t.a[i];
            t.b[kept++] = t.b[i];
          }
        t.a.resize(kept);
        t.b.resize(kept);
        if (kinks[dir]) kinks[dir]->dropBelow(floorX);
      }
      // This direction's queries in ascending order of eps (addHockeyStick's order).
      index.clear();
      for (std::size_t i = 0; i < queries.size(); ++i)
        if (queries[i].profile == dir) index.push_back(i);
      if (index.empty()) continue;
      std::sort(index.begin(), index.end(), [&](std::size_t a, std::size_t b) { return queries[a].eps < queries[b].eps; });
      x.resize(index.size());
      for (std::size_t k = 0; k < index.size(); ++k) x[k] = std::exp(queries[index[k]].eps);
      sums.assign(index.size(), 0.0);
      addHockeyStick(t, x, sums.data());
      if (kinks[dir]) kinks[dir]->add(x, sums.data());
      for (std::size_t k = 0; k < index.size(); ++k) local[index[k]] = sums[k];
    }
    FPDP_PETSC(MPI_Reduce(local.data(), values.data(), static_cast<PetscMPIInt>(queries.size()), MPI_DOUBLE, MPI_SUM,
                          0, comm));
    FPDP_PETSC(MPI_Bcast(values.data(), static_cast<PetscMPIInt>(queries.size()), MPI_DOUBLE, 0, comm));
  };
  auto found = models::exactEpsilons(requests, ends, evaluate, samples);
  markSuspectRoots(found, requests, suspect, floor, comm);
  std::vector<ExactEpsilonAtDelta> out;
  for (std::size_t j = 0; j < deltas.size(); ++j) out.push_back({deltas[j], {found[2 * j], found[2 * j + 1]}});
  return out;
}

}  // namespace

const char* renyiStatusName(RenyiStatus s) {
  switch (s) {
    case RenyiStatus::InfiniteDetected: return "infinite_detected";
    case RenyiStatus::TruncatedSuspect: return "truncated_suspect";
    case RenyiStatus::NoiseSuspect: return "noise_suspect";
    default: return "finite";
  }
}

DivergenceFunctionals::DivergenceFunctionals(const meshes::DistributedBoxMesh& mesh, std::vector<double> orders)
    : DivergenceFunctionals(mesh, FunctionalSettings{std::move(orders), {}, 0, std::nullopt}) {}

DivergenceFunctionals::~DivergenceFunctionals() = default;

DivergenceFunctionals::DivergenceFunctionals(const meshes::DistributedBoxMesh& mesh, FunctionalSettings settings,
                                             std::shared_ptr<LogRatioWorkspace> workspace)
    : quadrature_(mesh),
      settings_(std::move(settings)),
      orders_(settings_.orders),
      work_(workspace ? std::move(workspace) : std::make_shared<LogRatioWorkspace>(mesh)) {
  if (work_->mesh != &mesh) throw std::invalid_argument("DivergenceFunctionals: the workspace is for another mesh");
  for (std::size_t k = 0; k < settings_.hockeyStickEps.size(); ++k)
    if (!(settings_.hockeyStickEps[k] >= 0) || !std::isfinite(settings_.hockeyStickEps[k]) ||
        (k > 0 && !(settings_.hockeyStickEps[k] > settings_.hockeyStickEps[k - 1])))
      throw std::invalid_argument("DivergenceFunctionals: the eps grid must be finite, >= 0 and increasing");
  for (double a : orders_)
    if (!(a > 1.0)) throw std::invalid_argument("DivergenceFunctionals: Renyi orders must exceed 1");
  for (double d : settings_.epsilonDeltas)
    if (!(d > 0.0 && d < 1.0)) throw std::invalid_argument("DivergenceFunctionals: eps(delta) needs delta in (0, 1)");
  if (settings_.privacyLossBins < 0) throw std::invalid_argument("DivergenceFunctionals: privacyLossBins < 0");
  // Orders sorted ascending, grouped into arithmetic runs (gaps equal to 1e-9 relative), for the recurrence of
  // renyiSums (the dense grid: 1.1..11 by 0.1, 12..63 by 1, then four single orders).
  orderIndex_.resize(orders_.size());
  for (std::size_t k = 0; k < orders_.size(); ++k) orderIndex_[k] = k;
  std::sort(orderIndex_.begin(), orderIndex_.end(), [&](std::size_t a, std::size_t b) { return orders_[a] < orders_[b]; });
  for (std::size_t j = 0; j < orderIndex_.size();) {
    OrderRun run{j, j + 1, 0.0};
    if (j + 1 < orderIndex_.size()) {
      run.delta = orders_[orderIndex_[j + 1]] - orders_[orderIndex_[j]];
      run.end = j + 2;
      while (run.end < orderIndex_.size() &&
             std::fabs(orders_[orderIndex_[run.end]] - orders_[orderIndex_[run.end - 1]] - run.delta) <= 1e-9 * run.delta)
        ++run.end;
      // The recurrence multiplies by e^{Delta u}; the run's Delta is its mean gap, the orders' own values differ from
      // alpha_first + j Delta by round-off only.
      run.delta = (orders_[orderIndex_[run.end - 1]] - orders_[orderIndex_[j]]) / static_cast<double>(run.end - 1 - j);
    }
    runs_.push_back(run);
    j = run.end;
  }
  sigma_ = settings_.sigma ? *settings_.sigma : models::Matrix::Identity(mesh.dim(), mesh.dim());
  if (sigma_.rows() != mesh.dim() || sigma_.cols() != mesh.dim())
    throw std::invalid_argument("DivergenceFunctionals: Sigma must be d x d");
  const auto& box = mesh.box();
  const int dim = mesh.dim();
  const PetscInt nOwned = mesh.owned().size();
  onBoundary_.assign(static_cast<std::size_t>(nOwned), 0);
  nextToWall_.assign(static_cast<std::size_t>(nOwned), 0);
  shell_.assign(static_cast<std::size_t>(nOwned), -1);
  // Shells of whole cell layers: the cells whose index distance to the nearest wall, min_a min(i_a, N_a - 1 - i_a),
  // lies in [m s, (m+1) s), m = 1..kTailShells, with s = max(1, floor(N_min / kCellsPerShellDivisor)) layers (on a
  // uniform mesh about 1/16 of the half-width, so that refinement keeps the same physical layers). Whole layers keep
  // the shell means free of the jitter of a cut through cells; the position of shell m is the volume-weighted mean
  // distance of its cell centres to the nearest wall, so graded meshes get their true spacing.
  int minCells = box.cells(0);
  for (int a = 1; a < dim; ++a) minCells = std::min(minCells, box.cells(a));
  const int layers = std::max(1, minCells / kCellsPerShellDivisor);
  std::array<double, 2 * kTailShells> local{}, global{};  // volumes, then volume-weighted distances
  const auto& vol = mesh.ownedVolumes();
  for (int a = 0; a < dim; ++a) {
    fitMid_[a] = 0.5 * (box.axis(a).lower() + box.axis(a).upper());
    fitHalfWidth_[a] = 0.5 * (box.axis(a).upper() - box.axis(a).lower());
  }
  fitInterior_.assign(static_cast<std::size_t>(nOwned), 0);
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const std::array<PetscInt, 3> c{i, j, k};
    const auto x = box.centre(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
    PetscInt indexDistance = std::numeric_limits<PetscInt>::max();
    double distance = kInf;  // from the cell centre to the nearest wall
    for (int a = 0; a < dim; ++a) {
      if (c[a] == 0 || c[a] == box.cells(a) - 1) onBoundary_[l] = 1;
      indexDistance = std::min({indexDistance, c[a], box.cells(a) - 1 - c[a]});
      distance = std::min({distance, x[a] - box.axis(a).lower(), box.axis(a).upper() - x[a]});
    }
    if (indexDistance == 1) nextToWall_[l] = 1;
    const PetscInt layer = indexDistance / layers;
    fitInterior_[l] = layer >= 1;  // the wall layers bend the log-densities of computed solutions (header comment)
    if (layer >= 1 && layer <= kTailShells) {
      shell_[l] = static_cast<signed char>(static_cast<int>(layer) - 1);
      local[shell_[l]] += vol[l];
      local[kTailShells + shell_[l]] += vol[l] * distance;
    }
  });
  FPDP_PETSC(MPI_Allreduce(local.data(), global.data(), 2 * kTailShells, MPI_DOUBLE, MPI_SUM, mesh.comm()));
  shellLogVolume_.fill(-kInf);
  shellPosition_.fill(0.0);
  tailTestPossible_ = true;
  for (int m = 0; m < kTailShells; ++m) {
    if (global[m] > 0) {
      shellLogVolume_[m] = std::log(global[m]);
      shellPosition_[m] = global[kTailShells + m] / global[m];
    } else {
      tailTestPossible_ = false;  // the mesh is too coarse for the shells: no growth test
    }
  }
}

bool DivergenceFunctionals::fitTailPrecisions(const double* p, const double* q, std::ptrdiff_t stride, double floorP,
                                              double floorQ, models::Matrix& precisionP,
                                              models::Matrix& precisionQ, models::Vector& gradientP,
                                              models::Vector& gradientQ) const {
  // Least squares for log f = c0 + sum_a c_a z_a + sum_{a<=b} c_ab z_a z_b (z the centres scaled to [-1, 1]^d, which
  // keeps the normal equations well conditioned), f = p and f = q with the same design: the normal matrix and both
  // right-hand sides are summed over the owned cells and reduced over the ranks.
  const int dim = quadrature_.dim();
  const int nb = 1 + dim + dim * (dim + 1) / 2;
  const std::size_t nbs = static_cast<std::size_t>(nb);
  std::vector<double> sums(nbs * nbs + 2 * nbs + 1, 0.0), global(sums.size());
  double* A = sums.data();
  double* bp = A + nbs * nbs;
  double* bq = bp + nbs;
  std::vector<double> phi(nbs);
  const meshes::DistributedBoxMesh& mesh = *work_->mesh;
  const auto& box = mesh.box();
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const auto c = static_cast<std::size_t>(l);
    const double pc = p[c * stride], qc = q[c * stride];
    if (!fitInterior_[c] || !(pc > floorP) || !(qc > floorQ)) return;
    // The centre scaled to [-1, 1]^d, computed here rather than stored (24 B per cell in 3-D, docs/scaling.md §6).
    const auto x = box.centre(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
    double z[3];
    for (int a = 0; a < dim; ++a) z[a] = (x[a] - fitMid_[a]) / fitHalfWidth_[a];
    std::size_t m = 0;
    phi[m++] = 1.0;
    for (int a = 0; a < dim; ++a) phi[m++] = z[a];
    for (int a = 0; a < dim; ++a)
      for (int b = a; b < dim; ++b) phi[m++] = z[a] * z[b];
    const double lp = std::log(pc), lq = std::log(qc);
    for (std::size_t i = 0; i < nbs; ++i) {
      for (std::size_t j = 0; j <= i; ++j) A[i * nbs + j] += phi[i] * phi[j];
      bp[i] += phi[i] * lp;
      bq[i] += phi[i] * lq;
    }
    sums.back() += 1.0;
  });
  FPDP_PETSC(MPI_Allreduce(sums.data(), global.data(), static_cast<PetscMPIInt>(sums.size()), MPI_DOUBLE, MPI_SUM,
                            quadrature_.comm()));
  // At least twice as many cells as coefficients, or the quadratic is not determined by the data.
  if (global.back() < 2.0 * nb) return false;
  models::Matrix N(nb, nb);
  models::Vector rp(nb), rq(nb);
  for (int i = 0; i < nb; ++i) {
    for (int j = 0; j <= i; ++j) N(i, j) = N(j, i) = global[static_cast<std::size_t>(i) * nbs + static_cast<std::size_t>(j)];
    rp(i) = global[nbs * nbs + static_cast<std::size_t>(i)];
    rq(i) = global[nbs * nbs + nbs + static_cast<std::size_t>(i)];
  }
  const auto solver = N.colPivHouseholderQr();
  if (solver.rank() < nb) return false;  // the cells lie on a lower-dimensional set (a line, a plane)
  const models::Vector cp = solver.solve(rp), cq = solver.solve(rq);
  precisionP.resize(dim, dim);
  precisionQ.resize(dim, dim);
  int m = 1 + dim;
  for (int a = 0; a < dim; ++a)
    for (int b = a; b < dim; ++b, ++m) {
      // d^2/dz_a dz_b of the fit: 2 c_aa on the diagonal, c_ab off it; x = mid + halfwidth z.
      const double scale = 1.0 / (fitHalfWidth_[static_cast<std::size_t>(a)] * fitHalfWidth_[static_cast<std::size_t>(b)]);
      const double f = a == b ? 2.0 : 1.0;
      precisionP(a, b) = precisionP(b, a) = -f * cp(m) * scale;
      precisionQ(a, b) = precisionQ(b, a) = -f * cq(m) * scale;
    }
  gradientP.resize(dim);
  gradientQ.resize(dim);
  for (int a = 0; a < dim; ++a) {  // d/dx_a = (d/dz_a) / halfwidth_a at z = 0
    gradientP(a) = cp(1 + a) / fitHalfWidth_[static_cast<std::size_t>(a)];
    gradientQ(a) = cq(1 + a) / fitHalfWidth_[static_cast<std::size_t>(a)];
  }
  return true;
}

bool DivergenceFunctionals::tiltedPeakUnresolved(double alpha, const models::Matrix& Pp, const models::Matrix& Pq,
                                                 const models::Vector& gp, const models::Vector& gq) const {
  const int dim = quadrature_.dim();
  // log f(x) = c + g.(x - mid) - (x - mid)' P (x - mid)/2: the peak of f at mid + P^-1 g, of the tilted law at
  // mid + P_alpha^-1 g_alpha with P_alpha = alpha P_p + (1 - alpha) P_q, g_alpha likewise.
  const models::Matrix Pa = alpha * Pp + (1.0 - alpha) * Pq;
  const models::Vector ga = alpha * gp + (1.0 - alpha) * gq;
  const Eigen::LDLT<models::Matrix> tilted(Pa), lawP(Pp), lawQ(Pq);
  if (tilted.info() != Eigen::Success || lawP.info() != Eigen::Success || lawQ.info() != Eigen::Success) return false;
  const models::Vector peak = tilted.solve(ga);  // relative to the mid-point
  for (int a = 0; a < dim; ++a)
    if (std::fabs(peak(a)) > fitHalfWidth_[static_cast<std::size_t>(a)]) return true;
  // How far below its own maximum each density lies at the tilted peak (the fit's log scale): beyond the double range
  // the cells there are empty on every mesh.
  constexpr double kUnderflowLog = 650.0;  // e^-650 ~ 1e-282: below it a density times a cell volume underflows
  const auto dropAt = [&](const Eigen::LDLT<models::Matrix>& law, const models::Matrix& P, const models::Vector& g) {
    const models::Vector d = peak - law.solve(g);
    return 0.5 * d.dot(P * d);
  };
  return dropAt(lawP, Pp, gp) > kUnderflowLog || dropAt(lawQ, Pq, gq) > kUnderflowLog;
}

void DivergenceFunctionals::measureHealth(const double* p, const double* q, std::ptrdiff_t stride,
                                          const SingularMasses* singular, DivergenceValues& out) const {
  const auto& w = quadrature_.weights();
  const std::size_t n = w.size();
  const MPI_Comm comm = quadrature_.comm();
  double local[2] = {0, 0}, localMin[2] = {kInf, kInf}, localMax[2] = {-kInf, -kInf}, localNeg[2] = {0, 0},
         localBad[2] = {0, 0};
  for (std::size_t c = 0; c < n; ++c) {
    const double vals[2] = {p[c * stride], q[c * stride]};
    for (int f = 0; f < 2; ++f) {
      const double x = vals[f];
      if (!std::isfinite(x)) {
        localBad[f] += 1;
        continue;
      }
      local[f] += w[c] * x;
      localMin[f] = std::min(localMin[f], x);
      localMax[f] = std::max(localMax[f], x);
      if (x < 0) localNeg[f] += 1;
    }
  }
  // Singular masses (replicated) are counted on rank 0 only; they enter the mass and the negative/non-finite counts,
  // not the extrema of the cell densities.
  double localSingular[2] = {0, 0}, singularMass[2] = {0, 0};
  int rank = 0;
  FPDP_PETSC(MPI_Comm_rank(comm, &rank));
  if (singular && rank == 0) {
    if (singular->p.size() != singular->q.size())
      throw std::invalid_argument("SingularMasses: p and q must have the same length");
    for (std::size_t j = 0; j < singular->p.size(); ++j) {
      const double vals[2] = {singular->p[j], singular->q[j]};
      for (int f = 0; f < 2; ++f) {
        if (!std::isfinite(vals[f])) {
          localBad[f] += 1;
          continue;
        }
        localSingular[f] += vals[f];
        if (vals[f] < 0) localNeg[f] += 1;
      }
    }
    local[0] += localSingular[0];
    local[1] += localSingular[1];
  }
  FPDP_PETSC(MPI_Allreduce(localSingular, singularMass, 2, MPI_DOUBLE, MPI_SUM, comm));
  // The spread of each density along every axis (the cells' positive mass, first and second moments): how many
  // cells of a mesh resolve it (the accuracy estimate asks it of its coarsest companion, app/run/Certification).
  const int dim = quadrature_.dim();
  std::array<double, 13> moments{}, globalMoments{};  // per field: mass, then per axis sum x, sum x^2
  work_->mesh->forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const auto c = static_cast<std::size_t>(l);
    const auto x = work_->mesh->box().centre(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
    const double vals[2] = {p[c * stride], q[c * stride]};
    for (int f = 0; f < 2; ++f) {
      if (!(vals[f] > 0.0) || !std::isfinite(vals[f])) continue;
      const double m = w[c] * vals[f];
      double* mf = moments.data() + 6 * f;
      mf[0] += m;
      for (int a = 0; a < dim; ++a) {
        mf[1 + a] += m * x[a];
        mf[4 + a] += m * x[a] * x[a];
      }
    }
  });
  FPDP_PETSC(MPI_Allreduce(moments.data(), globalMoments.data(), 12, MPI_DOUBLE, MPI_SUM, comm));
  double mass[2], mn[2], mx[2], neg[2], bad[2];
  FPDP_PETSC(MPI_Allreduce(local, mass, 2, MPI_DOUBLE, MPI_SUM, comm));
  FPDP_PETSC(MPI_Allreduce(localMin, mn, 2, MPI_DOUBLE, MPI_MIN, comm));
  FPDP_PETSC(MPI_Allreduce(localMax, mx, 2, MPI_DOUBLE, MPI_MAX, comm));
  FPDP_PETSC(MPI_Allreduce(localNeg, neg, 2, MPI_DOUBLE, MPI_SUM, comm));
  FPDP_PETSC(MPI_Allreduce(localBad, bad, 2, MPI_DOUBLE, MPI_SUM, comm));
  DensityHealth* health[2] = {&out.p, &out.q};
  for (int f = 0; f < 2; ++f) {
    health[f]->mass = mass[f];
    health[f]->singularMass = singularMass[f];
    health[f]->min = mn[f];
    health[f]->max = mx[f];
    health[f]->negativeCells = static_cast<long>(neg[f]);
    health[f]->finite = bad[f] == 0;
    const double* mf = globalMoments.data() + 6 * f;
    for (int a = 0; a < dim; ++a) {
      const double mean = mf[0] > 0.0 ? mf[1 + a] / mf[0] : 0.0;
      health[f]->spread[static_cast<std::size_t>(a)] =
          mf[0] > 0.0 ? std::sqrt(std::max(mf[4 + a] / mf[0] - mean * mean, 0.0)) : 0.0;
    }
  }
}

DivergenceValues DivergenceFunctionals::evaluate(Vec u, const SingularMasses* singular) const {
  // The divergences are integrals of point values, reconstructed to fourth order from the cell averages
  // (PointValues.hpp), or the state's own point values; the masses, minima and negative-cell counts describe the
  // state itself.
  work_->fillPoints(u, settings_.representation == meshes::FieldRepresentation::PointValues);
  DivergenceValues v = evaluateDirections(singular);
  const PetscScalar* a;
  FPDP_PETSC(VecGetArrayRead(u, &a));
  try {
    measureHealth(a, a + 1, 2, singular, v);
  } catch (...) {
    VecRestoreArrayRead(u, &a);
    throw;
  }
  FPDP_PETSC(VecRestoreArrayRead(u, &a));
  return v;
}

DivergenceValues DivergenceFunctionals::evaluate(const double* p, const double* q, std::ptrdiff_t stride,
                                                 const SingularMasses* singular) const {
  // The gradients need ghost values: the arrays go into the work vector, whose ghosts LogRatioGradient fetches.
  PetscScalar* a;
  FPDP_PETSC(VecGetArray(work_->writablePoints(), &a));
  const std::size_t n = quadrature_.weights().size();
  for (std::size_t c = 0; c < n; ++c) {
    a[2 * c] = p[c * stride];
    a[2 * c + 1] = q[c * stride];
  }
  FPDP_PETSC(VecRestoreArray(work_->points, &a));
  work_->pointsWritten();
  return evaluateDirections(singular);
}

DivergenceValues DivergenceFunctionals::evaluateDirections(const SingularMasses* singular) const {
  DivergenceValues v = evaluatePoints(singular, false);
  if (settings_.reverseDirection) {
    // q against p: the same quadrature with the densities exchanged (MATH.md §3, §7). E_alpha(q || p) =
    // int q^alpha p^(1-alpha) is not the forward integral at another order, so it is a second pass over the cells,
    // with the same cancellation-free sums and the same tail and noise-floor checks.
    DivergenceValues r = evaluatePoints(singular, true);
    v.reverse.kl = r.kl;
    v.reverse.klBoundaryShare = r.klBoundaryShare;
    v.reverse.klWallTail = r.klWallTail;
    v.reverse.renyiWallTail = std::move(r.renyiWallTail);
    v.reverse.renyi = std::move(r.renyi);
    v.reverse.renyiStatus = std::move(r.renyiStatus);
    v.reverse.renyiBoundaryShare = std::move(r.renyiBoundaryShare);
    v.reverse.excludedMassQ = r.excludedMassP;
  }
  return v;
}


/// The kink corrections of TV and of the hockey-stick sums (HockeyStickKinks.hpp, MATH.md §7) need the neighbours'
/// point values: those of the gradient's ghosted vector, held open as long as the corrections. Where that vector does
/// not exist (a rank owns fewer than 2 cells along an axis) the sums stay the plain midpoint sums, second order
/// (docs/scheme.md §5): `kinks` stay empty.
struct DivergenceFunctionals::KinkCorrections {
  std::optional<HockeyStickKinks> kinks[2];  // p against q, and q against p
  Vec v = nullptr;
  const PetscScalar* a = nullptr;

  KinkCorrections() = default;
  KinkCorrections(const KinkCorrections&) = delete;
  KinkCorrections& operator=(const KinkCorrections&) = delete;
  ~KinkCorrections() {
    if (v) VecRestoreArrayRead(v, &a);
  }
  /// p against q (TV needs it, and the hockey-stick sums later).
  void open(const LogRatioWorkspace& work, double invMp, double invMq) {
    const Vec ghosted = work.gradient->ghostedPoints();
    FPDP_PETSC(VecGetArrayRead(ghosted, &a));
    v = ghosted;
    kinks[0].emplace(*work.mesh, a, work.gradient->ghostedBlock(), invMp, invMq, false);
  }
  /// q against p too (the hockey-stick sums), once open.
  void openExchanged(const LogRatioWorkspace& work, double invMp, double invMq) {
    if (v) kinks[1].emplace(*work.mesh, a, work.gradient->ghostedBlock(), invMp, invMq, true);
  }
};

/// Pass 3 of evaluatePoints: per order, the global maximum M_alpha of log(|c| q) + alpha log r over the regular terms
/// (and per tail shell), the scale of the large-divergence sums, so that one exp per term and order suffices.
struct DivergenceFunctionals::OrderScales {
  std::vector<double> globalMax;  // K orders, then per order its kTailShells shells; -inf: no regular term
  std::vector<double> logScale, scale, invScale;  // M_alpha (0 without a regular term), e^M, e^-M
  std::vector<double> shellFactor;  // per order and shell: e^(M_alpha - the shell's maximum)
  std::vector<char> shellDirect;    // the shell is summed by exp of its own terms, not from the order's scaled ones
  std::vector<double> rescale;      // e^(M_k - M_next), next the order after k in its run (the far-branch recurrence)
};

DivergenceValues DivergenceFunctionals::evaluatePoints(const SingularMasses* singularMasses, bool reverse) const {
  const MPI_Comm comm = quadrature_.comm();
  DivergenceValues out;
  const std::size_t K = orders_.size();
  // The reverse direction (evaluateDirections) computes only what its consumers read: KL and R_alpha with their
  // statuses; no gradients, hockey-stick sums (both directions come from the forward pass), histograms or eps roots.
  const std::size_t E = reverse ? 0 : settings_.hockeyStickEps.size();
  const std::size_t D = reverse ? 0 : settings_.epsilonDeltas.size();
  std::optional<SingularMasses> exchanged;
  if (reverse && singularMasses) exchanged = SingularMasses{singularMasses->q, singularMasses->p};
  const SingularMasses* singular = reverse && singularMasses ? &*exchanged : singularMasses;

  const PetscScalar* pts;
  FPDP_PETSC(VecGetArrayRead(work_->points, &pts));
  struct Restore {
    Vec v;
    const PetscScalar** a;
    ~Restore() { VecRestoreArrayRead(v, a); }
  } restore{work_->points, &pts};
  const double* p = reverse ? pts + 1 : pts;
  const double* q = reverse ? pts : pts + 1;
  constexpr std::ptrdiff_t stride = 2;

  // Pass 1: masses and health of each density.
  measureHealth(p, q, stride, singular, out);
  out.renyi.assign(K, kInf);
  out.eAlphaMinusOne.assign(K, kInf);
  if (!out.p.finite || !out.q.finite || !(out.p.mass > 0) || !(out.q.mass > 0)) {
    markNotComputable(out, reverse);
    return out;
  }

  // Gradients of u = log r at the owned cells (LogRatioGradient.hpp); without them the information ratios are NaN.
  const bool gradients = work_->gradient && !reverse;
  const std::array<double, 3>* gradient = gradients ? work_->logRatioGradient().data() : nullptr;

  // Pass 2: per cell (and per singular mass on rank 0) the order-independent part of every sum.
  const double invMp = 1.0 / out.p.mass, invMq = 1.0 / out.q.mass;
  Terms measured = measureTerms(p, q, stride, singular, gradient, invMp, invMq, out.p.max);

  // Pass 3: the scales M_alpha; pass 4: the per-order sums, reduced over the ranks with the order-free ones.
  const OrderScales scales = orderScales(measured);
  const std::vector<double> sums = renyiSums(measured, scales);
  // The gradient's last reader (the information sums): not held through the kink windows and the hockey-stick sums
  // below (peak memory).
  KinkCorrections kinks;  // p against q from here on; q against p only for the hockey-stick sums
  if (gradients) {
    measured.gradient = nullptr;
    work_->releaseGradient();
    // TV = int max(p - q, 0) = (1/2) int |p - q|: the kink correction of the first at x = 1, twice for the second.
    kinks.open(*work_, invMp, invMq);
    const double one = 1.0;
    double correction = 0.0;
    kinks.kinks[0]->add({&one, 1}, &correction);
    measured.tv += 2.0 * correction;
  }
  std::vector<double> global(sums.size());
  FPDP_PETSC(MPI_Allreduce(sums.data(), global.data(), static_cast<PetscMPIInt>(sums.size()), MPI_DOUBLE, MPI_SUM,
                            comm));
  double scalars[7] = {measured.kl, measured.tv, measured.excludedP, measured.excludedInfoP,
                       measured.infinite ? 1.0 : 0.0, measured.klWall, measured.klNext},
         gScalars[7];
  FPDP_PETSC(MPI_Allreduce(scalars, gScalars, 7, MPI_DOUBLE, MPI_SUM, comm));
  FPDP_PETSC(MPI_Allreduce(&measured.underflow, &out.underflowCells, 1, MPI_LONG, MPI_SUM, comm));
  const bool isInfinite = gScalars[4] > 0;
  out.kl = isInfinite ? kInf : gScalars[0];
  out.tv = 0.5 * gScalars[1];
  out.klBoundaryShare = gScalars[0] > 0 ? gScalars[5] / gScalars[0] : 0.0;
  const bool projected = singular && !singular->empty();
  out.klWallTail = projected || isInfinite ? 0.0 : wallTailBound(gScalars[5], gScalars[6]);
  out.excludedMassP = gScalars[2];
  out.informationExcludedMassP = gScalars[3];

  // R_alpha and what is said of it: the tails, the values, their statuses, the noise floor.
  tailLogMeans(global, scales, out);
  const std::vector<char> tailDiverges = tailDivergence(p, q, stride, singular, out);
  renyiFromSums(global, scales, isInfinite, gradients, out);
  out.renyiWallTail = renyiWallTails(measured, projected || isInfinite, out.logEAlpha);
  if (!reverse && !projected) {
    // The densities' own masses at the walls and in the layer inside them.
    double layers[4] = {0.0, 0.0, 0.0, 0.0}, gLayers[4];  // p wall, p next, q wall, q next
    for (std::size_t i = 0; i < measured.cells; ++i) {
      const int layer = measured.boundary(i) ? 0 : (measured.nextLayer(i) ? 1 : -1);
      if (layer < 0) continue;
      layers[layer] += measured.wp(i);
      layers[2 + layer] += measured.wq(i);
    }
    FPDP_PETSC(MPI_Allreduce(layers, gLayers, 4, MPI_DOUBLE, MPI_SUM, comm));
    out.wallTailMass = {wallTailBound(gLayers[0], gLayers[1]), wallTailBound(gLayers[2], gLayers[3])};
  }
  tailStatuses(tailDiverges, out);
  noiseFloorShares(measured, global, scales, out);

  if (settings_.privacyLossBins > 0 && !reverse) {
    // Privacy-loss distributions: log(p/q) under p and log(q/p) under q, from the same terms.
    out.privacyLossP = privacyLossHistogram(measured, 0);
    out.privacyLossQ = privacyLossHistogram(measured, 1);
  }
  // The hockey-stick sums read the point values only: the terms are released first (peak memory).
  measured = Terms{};
  if (E > 0 || D > 0) hockeyStickAndRoots(p, q, stride, singular, invMp, invMq, kinks, out);
  return out;
}

/// Every value NaN, and the shapes the outputs need, when a density is not finite or has no positive mass.
void DivergenceFunctionals::markNotComputable(DivergenceValues& out, bool reverse) const {
  const std::size_t K = orders_.size();
  const std::size_t E = reverse ? 0 : settings_.hockeyStickEps.size();
  const std::size_t D = reverse ? 0 : settings_.epsilonDeltas.size();
  out.kl = out.tv = kNaN;
  out.klBoundaryShare = kNaN;
  out.klWallTail = kNaN;
  out.renyiWallTail.assign(K, kNaN);
  std::fill(out.renyi.begin(), out.renyi.end(), kNaN);
  std::fill(out.eAlphaMinusOne.begin(), out.eAlphaMinusOne.end(), kNaN);
  out.renyiOnBox = out.renyi;
  out.renyiBoundaryShare.assign(K, kNaN);
  out.renyiTailLogMean.assign(K, {kNaN, kNaN, kNaN, kNaN});
  out.renyiTailPrecision.assign(K, kNaN);
  out.renyiStatus.assign(K, RenyiStatus::Finite);
  out.logEAlpha = out.dRenyiDAlpha = out.informationRatio = out.informationRatioSigma = out.renyi;
  out.informationExcludedMassP = kNaN;
  out.hockeyStickPQ.assign(E, kNaN);
  out.hockeyStickQP.assign(E, kNaN);
  out.hockeyStickStatusPQ.assign(E, static_cast<int>(models::ExactEpsilonStatus::NotComputed));
  out.hockeyStickStatusQP.assign(E, static_cast<int>(models::ExactEpsilonStatus::NotComputed));
  for (std::size_t j = 0; j < D; ++j) out.exactEpsilon.push_back({settings_.epsilonDeltas[j], {}});  // NotComputed
  // The histograms keep their shape (the output's per-bin arrays must have privacyLossBins entries per step).
  for (PrivacyLossHistogram* h : {&out.privacyLossP, &out.privacyLossQ}) {
    h->lower = h->upper = h->massInfinity = h->clampedMass = kNaN;
    h->mass.assign(static_cast<std::size_t>(reverse ? 0 : std::max(settings_.privacyLossBins, 0)), kNaN);
  }
}

DivergenceFunctionals::Terms DivergenceFunctionals::termSources(const double* p, const double* q,
                                                                std::ptrdiff_t stride, const SingularMasses* singular,
                                                                const std::array<double, 3>* gradient, double invMp,
                                                                double invMq) const {
  Terms t;
  t.p = p, t.q = q, t.stride = stride, t.volume = quadrature_.weights().data(), t.cells = quadrature_.weights().size();
  t.singular = singular, t.invMp = invMp, t.invMq = invMq, t.gradient = gradient, t.dim = quadrature_.dim();
  t.sigma = &sigma_, t.onBoundary = onBoundary_.data(), t.nextToWall = nextToWall_.data(), t.shell = shell_.data();
  int rank = 0;
  FPDP_PETSC(MPI_Comm_rank(quadrature_.comm(), &rank));
  t.count = t.cells + (singular && rank == 0 ? singular->p.size() : 0);
  return t;
}

DivergenceFunctionals::Terms DivergenceFunctionals::measureTerms(const double* p, const double* q,
                                                                 std::ptrdiff_t stride, const SingularMasses* singular,
                                                                 const std::array<double, 3>* gradient,
                                                                 double invMp, double invMq, double maxP) const {
  const auto& w = quadrature_.weights();
  const std::size_t n = w.size();
  const int dim = quadrature_.dim();
  constexpr double kNegligible = 1e-200;
  Terms out = termSources(p, q, stride, singular, gradient, invMp, invMq);
  out.flags.reserve(out.size());
  out.u.reserve(out.size());
  out.l1l.reserve(out.size());
  out.logWq.reserve(out.size());
  const double pMaxNormalised = maxP * invMp;
  auto push = [&](Terms::Kind kind, bool nearOne = false, double u = 0.0, double l1l = 0.0, double logWq = 0.0) {
    out.flags.push_back(static_cast<unsigned char>(kind | (nearOne ? Terms::kNearOne : 0)));
    out.u.push_back(u);
    out.l1l.push_back(l1l);
    out.logWq.push_back(logWq);
  };
  auto classify = [&](double wc, double pRaw, double qRaw, const double* grad) {
    const bool boundary = out.boundary(out.flags.size());  // the term about to be pushed
    const bool next = out.nextLayer(out.flags.size());
    const double pc = std::max(pRaw, 0.0) * invMp;  // negatives enter as 0 (counted above)
    const double qc = std::max(qRaw, 0.0) * invMq;
    out.tv += wc * std::fabs(pc - qc);
    if (qRaw < 0.0) {
      // A negative q is an artefact of a non-positive scheme, not a zero of the density: the cell is left out of
      // KL and R_alpha (which a zero q would make +inf), and the p-mass left out is reported.
      out.excludedP += wc * pc;
      push(Terms::Skip);  // still counted by the hockey-stick sums (like TV)
      return;
    }
    if (qc == 0.0) {
      // q underflowed to 0. Where p is negligible too (below 1e-200 of its maximum) the cell is numerically empty:
      // both true densities are below the range of doubles there and their contribution is not resolvable, so it is
      // dropped and counted (DivergenceValues::underflowCells). Where p is not negligible, r = inf: +infinity.
      Terms::Kind kind = Terms::Skip;
      if (pc > 0.0 && pc <= kNegligible * pMaxNormalised) {
        ++out.underflow;
      } else if (pc > 0.0) {
        out.infinite = true;
        kind = Terms::Infinite;
      }
      push(kind);
      return;
    }
    const double logWq = std::log(wc * qc);
    if (pc == 0.0) {  // r = 0: h = 1, g_alpha = alpha - 1, g'_alpha = 1, r^alpha = 0
      out.kl += wc * qc;
      if (boundary) out.klWall += wc * qc;
      if (next) out.klNext += wc * qc;
      push(Terms::PZero, false, 0.0, 0.0, logWq);
      return;
    }
    const double rho = (pc - qc) / qc;
    // Near r = 1 (|rho| < 1/2) the cancellation-free forms; farther out the direct ones, with log r from the two
    // logarithms, so that r ~ 1e-17 (rho rounded to -1) or r overflowing (rho = inf) stay finite:
    //   q h(r) = p log r - (p - q),   q g_alpha(r) = q r^alpha - q - alpha (p - q).
    const bool nearOne = std::fabs(rho) < 0.5;
    const double u = nearOne ? std::log1p(rho) : std::log(pc) - std::log(qc);
    const double l1l = nearOne ? log1pMinusLinear(rho) : 0.0;
    const double klTerm = nearOne ? wc * qc * (rho * u + l1l) : wc * (pc * u - (pc - qc));
    out.kl += klTerm;
    if (boundary) out.klWall += klTerm;
    if (next) out.klNext += klTerm;
    double g2, gs;
    // A stencil cell has p <= 0 or q <= 0 (or there are no gradients): log r has no gradient there.
    if (grad && !gradientForms(grad, dim, sigma_, g2, gs)) out.excludedInfoP += wc * pc;
    push(Terms::Regular, nearOne, u, l1l, logWq);
  };
  static constexpr std::array<double, 3> kNoGradient{kNaN, kNaN, kNaN};
  for (std::size_t c = 0; c < n; ++c)
    classify(w[c], p[c * stride], q[c * stride], gradient ? gradient[c].data() : kNoGradient.data());
  // Singular masses (mass form, on rank 0): no gradient in the ambient space, so no part of I_alpha's numerator.
  for (std::size_t j = 0; n + j < out.size(); ++j) classify(1.0, singular->p[j], singular->q[j], nullptr);
  return out;
}

DivergenceFunctionals::OrderScales DivergenceFunctionals::orderScales(const Terms& terms) const {
  const std::size_t K = orders_.size();
  const std::size_t S = K * kTailShells;
  OrderScales out;
  std::vector<double> localMax(K + S, -kInf);
  std::vector<double>& globalMax = out.globalMax;
  globalMax.resize(K + S);
  for (std::size_t i = 0; i < terms.size(); ++i) {
    if (terms.kind(i) != Terms::Regular) continue;
    const double logWq = terms.logWq[i], u = terms.u[i];
    const int shell = terms.shellOf(i);
    for (std::size_t k = 0; k < K; ++k) {
      const double l = logWq + orders_[k] * u;
      localMax[k] = std::max(localMax[k], l);
      if (shell >= 0) {
        double& m = localMax[K + k * kTailShells + static_cast<std::size_t>(shell)];
        m = std::max(m, l);
      }
    }
  }
  FPDP_PETSC(MPI_Allreduce(localMax.data(), globalMax.data(), static_cast<PetscMPIInt>(K + S), MPI_DOUBLE, MPI_MAX,
                            quadrature_.comm()));
  out.logScale.resize(K);
  out.scale.resize(K);
  out.invScale.resize(K);
  out.shellFactor.resize(S);
  out.shellDirect.resize(S);
  for (std::size_t k = 0; k < K; ++k) {
    const double M = out.logScale[k] = std::isfinite(globalMax[k]) ? globalMax[k] : 0.0;
    out.scale[k] = std::exp(M);  // may be +inf: then E_alpha > 1e308 and the stable sums are not used
    out.invScale[k] = std::exp(-M);
    for (int m = 0; m < kTailShells; ++m) {
      const std::size_t i = k * kTailShells + static_cast<std::size_t>(m);
      const double gap = std::isfinite(globalMax[K + i]) ? M - globalMax[K + i] : 0.0;
      // The shell sums are scaled by their own maximum: from the order's scaled term when that loses nothing.
      out.shellDirect[i] = gap > 600.0;
      out.shellFactor[i] = std::exp(gap);
    }
  }
  out.rescale.assign(K, 1.0);
  for (const OrderRun& run : runs_)
    for (std::size_t j = run.begin; j + 1 < run.end; ++j) {
      const std::size_t k = orderIndex_[j], kNext = orderIndex_[j + 1];
      if (std::isfinite(globalMax[k]) && std::isfinite(globalMax[kNext]))
        out.rescale[k] = std::exp(globalMax[k] - globalMax[kNext]);
    }
  return out;
}

/// Pass 4 of evaluatePoints: the per-order sums (SumArrays) over the regular terms.
/// Successive orders of an arithmetic run (alpha_{j+1} = alpha_j + Delta, OrderRun) share one exp per cell: with
/// b = Delta u, e^b, expm1(b) and em1l(b) = e^b - 1 - b,
///   em1l(x + b) = em1l(x) + em1l(b) + expm1(x) (em1l(b) + b),   expm1(x + b) = expm1(x) e^b + expm1(b)
/// (the first is e^x em1l(b) + em1l(x) + b expm1(x) rearranged: every term of one sign when x and b are, so no
/// cancellation), carried as E1 = |c| q em1l(alpha u) and X = |c| q expm1(alpha u); in the scaled far branch
///   t_{j+1} = t_j e^b e^{M_j - M_{j+1}}.
/// Each step adds a few ulps (at most ~100 steps: < 1e-13 relative). A scaled value that has underflowed is
/// recomputed by one exp as soon as its true value (log t = log(|c| q) + alpha u - M, one FMA) is not negligible.
/// The parts of the sums that do not depend on the order (|c| q l1l(rho), |c| q u, ...) are added once per cell into
/// difference arrays over the sorted orders (a cell is near r = 1 for a prefix of each run, far after it), so the
/// loop over orders only carries what does:
///   near: E_alpha - 1 += E1 + alpha |c| q l1l,  E' += X u + |c| q l1l,  e^M S_j += (|c| q + X) {1, u, G, G_Sigma};
///   far:  S_j += t {1, u, G, G_Sigma},  E_alpha - 1 += e^M t - |c| q - alpha (|c| p - |c| q),  E' += e^M t u - (...).
/// Cells inner, orders outer, block by block: the regular terms are grouped by the extra sums they feed (none, the
/// wall sums, one tail shell), copied kTermBlock at a time into arrays (TermBlock), and for each order one loop over
/// the block's cells advances every cell's recurrence and sums the block's share of that order in registers. With
/// the orders inner (term by term) each cell's recurrence is one chain of dependent multiplications and every term
/// reads and writes all per-order arrays; with the cells inner the chains are independent and the per-order arrays
/// are written once per block. Only the order of the additions changes (round-off).
struct DivergenceFunctionals::RenyiSumsPass {
  enum NearConst { cWq, cWqU, cWqG, cWqGS, cWqL1l, kNear };
  enum FarConst { fWq, fDp, kFar };
  const DivergenceFunctionals& f;
  const OrderScales& sc;
  const std::size_t K;
  SumArrays<double> sums;
  std::vector<double> nearDiff, farDiff;
  std::vector<double> accE1, accX, accXU, accXG, accXGS;
  std::vector<double> farS0, farS1, farSI, farSIS;
  TermBlock b;
  BlockRunState st;
  bool extra = false;  // the block feeds the wall or shell sums

  RenyiSumsPass(const DivergenceFunctionals& functionals, const OrderScales& scales, double* out)
      : f(functionals), sc(scales), K(functionals.orders_.size()), sums(out, K),
        nearDiff(kNear * (K + 1), 0.0), farDiff(kFar * (K + 1), 0.0),
        accE1(K, 0.0), accX(K, 0.0), accXU(K, 0.0), accXG(K, 0.0), accXGS(K, 0.0),
        farS0(K, 0.0), farS1(K, 0.0), farSI(K, 0.0), farSIS(K, 0.0) {}

  /// Indices of the regular terms, by group g = wall + 2 (shell + 1): a wall cell lies in no shell (the shells start
  /// one layer in), but nothing below relies on that.
  static std::vector<std::uint32_t> groupRegularTerms(const Terms& terms) {
    std::vector<std::uint32_t> grouped;
    constexpr int kGroups = 2 * (kTailShells + 1);
    auto groupOf = [&](std::size_t i) { return (terms.boundary(i) ? 1 : 0) + 2 * (terms.shellOf(i) + 1); };
    std::array<std::size_t, kGroups + 1> start{};
    for (std::size_t c = 0; c < terms.size(); ++c)
      if (terms.kind(c) == Terms::Regular) ++start[static_cast<std::size_t>(groupOf(c)) + 1];
    for (int g = 0; g < kGroups; ++g) start[g + 1] += start[g];
    grouped.resize(start[kGroups]);
    for (std::size_t c = 0; c < terms.size(); ++c)
      if (terms.kind(c) == Terms::Regular) grouped[start[static_cast<std::size_t>(groupOf(c))]++] = static_cast<std::uint32_t>(c);
    return grouped;
  }

  /// The next block: up to kTermBlock terms of one group, from grouped[first] on (first is advanced past them).
  void load(const Terms& terms, const std::vector<std::uint32_t>& grouped, std::size_t& first) {
    b.wall = terms.boundary(grouped[first]);
    b.shell = terms.shellOf(grouped[first]);
    b.size = 0;
    for (; first < grouped.size() && b.size < kTermBlock; ++first, ++b.size) {
      const std::size_t t = grouped[first];
      if (terms.boundary(t) != b.wall || terms.shellOf(t) != b.shell) break;
      const std::size_t c = b.size;
      const double wq = terms.wq(t);
      b.u[c] = terms.u[t], b.wq[c] = wq, b.dp[c] = terms.wp(t) - wq, b.logWq[c] = terms.logWq[t];
      terms.gradientTerms(t, b.G[c], b.GS[c]);
      b.wqL1l[c] = wq * terms.l1l[t];
      b.nearOne[c] = terms.nearOne(t);
    }
    extra = b.wall || b.shell >= 0;
  }

  /// The block's share of every order of one run, then its order-independent parts.
  void addRun(const OrderRun& run) {
    addFirstOrder(run);
    if (run.end - run.begin >= 2) addLaterOrders(run);
    addOrderIndependent(run);
  }

  /// The run's first order: fresh values (the series near r = 1, one exp elsewhere).
  void addFirstOrder(const OrderRun& run) {
    const std::size_t k = f.orderIndex_[run.begin];
    const double alpha = f.orders_[k], M = sc.globalMax[k];
    OrderSums s;
    for (std::size_t c = 0; c < b.size; ++c) {
      const double x = alpha * b.u[c];
      const bool near = b.nearOne[c] && std::fabs(x) < 0.5;
      st.near[c] = near;
      st.switchAt[c] = near ? run.end : run.begin;
      if (near) {
        const double e = expm1MinusLinear(x);
        st.E1[c] = b.wq[c] * e;
        st.X[c] = b.wq[c] * (x + e);
        addNear(s, c);
      } else {
        st.scaled[c] = std::exp(b.logWq[c] + x - M);
        addFar(s, c);
      }
    }
    if (extra) addExtras(s, k, alpha);
    flush(k, s);
  }

  /// The run's other orders by the recurrences, from the state its first order left.
  void addLaterOrders(const OrderRun& run) {
    for (std::size_t c = 0; c < b.size; ++c) {
      const double bb = run.delta * b.u[c];
      st.eb[c] = std::exp(bb);
      st.recurse[c] = std::isfinite(st.eb[c]) && st.eb[c] > 0.0;  // e^b out of range: one exp per order instead
      if (st.near[c]) {
        const double em1lb = expm1MinusLinear(bb);
        st.wqEm1lb[c] = b.wq[c] * em1lb;
        st.wqExpm1b[c] = b.wq[c] * (bb + em1lb);
        st.em1lbPlusB[c] = em1lb + bb;
      }
    }
    std::size_t k = f.orderIndex_[run.begin];
    for (std::size_t j = run.begin + 1; j < run.end; ++j) {
      const std::size_t kPrev = k;
      k = f.orderIndex_[j];
      const double alpha = f.orders_[k], M = sc.globalMax[k], rescaleFromPrev = sc.rescale[kPrev];
      OrderSums s;
      for (std::size_t c = 0; c < b.size; ++c) {
        const double x = alpha * b.u[c];
        bool near = st.near[c];
        if (near && std::fabs(x) < 0.5) {
          st.E1[c] += std::fma(st.X[c], st.em1lbPlusB[c], st.wqEm1lb[c]);
          st.X[c] = std::fma(st.X[c], st.eb[c], st.wqExpm1b[c]);
          addNear(s, c);
        } else {
          if (near || !st.recurse[c]) {
            if (near) st.switchAt[c] = j;
            st.near[c] = near = false;  // leaving the series region (or no recurrence): a fresh value
            st.scaled[c] = std::exp(b.logWq[c] + x - M);
          } else {
            double t = st.scaled[c] * (st.eb[c] * rescaleFromPrev);
            if (t < 1e-290) {
              const double l = b.logWq[c] + x - M;
              t = l > -690.0 ? std::exp(l) : t;
            }
            st.scaled[c] = t;
          }
          addFar(s, c);
        }
      }
      if (extra) addExtras(s, k, alpha);
      flush(k, s);
    }
  }

  /// The order-independent parts, over the near prefix [begin, switchAt) and the far rest of the run.
  void addOrderIndependent(const OrderRun& run) {
    for (std::size_t c = 0; c < b.size; ++c) {
      const std::size_t from = run.begin, to = st.switchAt[c], end = run.end;
      const double nearConst[kNear] = {b.wq[c], b.wq[c] * b.u[c], b.wq[c] * b.G[c], b.wq[c] * b.GS[c], b.wqL1l[c]};
      const double farConst[kFar] = {b.wq[c], b.dp[c]};
      if (from < to)
        for (int cc = 0; cc < kNear; ++cc) {
          nearDiff[cc * (K + 1) + from] += nearConst[cc];
          nearDiff[cc * (K + 1) + to] -= nearConst[cc];
        }
      if (to < end)
        for (int cc = 0; cc < kFar; ++cc) {
          farDiff[cc * (K + 1) + to] += farConst[cc];
          farDiff[cc * (K + 1) + end] -= farConst[cc];
        }
    }
  }

  /// One order's extra sums (wall cells, shells) over the block, from the state the order left: the near state
  /// (E1, X) or the far scaled value. A loop of its own, so that the main loop keeps its nine sums in registers.
  void addExtras(OrderSums& s, std::size_t k, double alpha) const {
    const bool direct = b.shell >= 0 && sc.shellDirect[k * kTailShells + static_cast<std::size_t>(b.shell)];
    const double shellMax = b.shell >= 0 ? sc.globalMax[K + k * kTailShells + static_cast<std::size_t>(b.shell)] : 0.0;
    double wallEm1 = 0, wallS0 = 0, shellScaled = 0, shellExact = 0;
    for (std::size_t c = 0; c < b.size; ++c) {
      const bool near = st.near[c];
      const double scaled = near ? (b.wq[c] + st.X[c]) * sc.invScale[k] : st.scaled[c];
      if (b.wall) {
        wallEm1 += near ? st.E1[c] + alpha * b.wqL1l[c] : scaled * sc.scale[k] - b.wq[c] - alpha * b.dp[c];
        wallS0 += scaled;
      }
      if (b.shell >= 0) {
        if (!direct && scaled >= 1e-290) {
          shellScaled += scaled;
        } else {
          const double l = b.logWq[c] + alpha * b.u[c] - shellMax;
          if (l > -690.0) shellExact += std::exp(l);
        }
      }
    }
    s.wallEm1 = wallEm1, s.wallS0 = wallS0, s.shellScaled = shellScaled, s.shellExact = shellExact;
  }
  void addNear(OrderSums& s, std::size_t c) const {
    const double X = st.X[c];
    s.e1 += st.E1[c];
    s.x += X;
    s.xu += X * b.u[c];
    s.xg += X * b.G[c];
    s.xgs += X * b.GS[c];
  }
  void addFar(OrderSums& s, std::size_t c) const {
    const double t = st.scaled[c];
    s.s0 += t;
    s.s1 += t * b.u[c];
    s.sI += t * b.G[c];
    s.sIS += t * b.GS[c];
  }
  /// The block's sums of order k into the accumulators.
  void flush(std::size_t k, const OrderSums& s) {
    accE1[k] += s.e1;
    accX[k] += s.x;
    accXU[k] += s.xu;
    accXG[k] += s.xg;
    accXGS[k] += s.xgs;
    farS0[k] += s.s0;
    farS1[k] += s.s1;
    farSI[k] += s.sI;
    farSIS[k] += s.sIS;
    if (b.wall) {
      sums.em1Wall[k] += s.wallEm1;
      sums.S0Wall[k] += s.wallS0;
    }
    if (b.shell >= 0) {
      const std::size_t i = k * kTailShells + static_cast<std::size_t>(b.shell);
      // (shellFactor may be +inf where the shell is summed directly; shellScaled is 0 there)
      sums.shellSum[i] += (s.shellScaled > 0.0 ? s.shellScaled * sc.shellFactor[i] : 0.0) + s.shellExact;
    }
  }

  /// Combine: prefix sums of the difference arrays over the sorted orders, then the formulas of the class comment.
  /// pZeroWq: sum |c| q over the terms with p = 0.
  void combine(double pZeroWq) {
    double nearSum[kNear] = {0, 0, 0, 0, 0}, farSum[kFar] = {0, 0};
    for (std::size_t j = 0; j < K; ++j) {
      for (int c = 0; c < kNear; ++c) nearSum[c] += nearDiff[c * (K + 1) + j];
      for (int c = 0; c < kFar; ++c) farSum[c] += farDiff[c * (K + 1) + j];
      const std::size_t k = f.orderIndex_[j];
      const double alpha = f.orders_[k];
      const bool scaleFinite = std::isfinite(sc.scale[k]);
      sums.em1[k] = accE1[k] + alpha * nearSum[cWqL1l] + (alpha - 1.0) * pZeroWq +
                    (scaleFinite ? sc.scale[k] * farS0[k] - farSum[fWq] - alpha * farSum[fDp] : kInf);
      sums.dE[k] = accXU[k] + nearSum[cWqL1l] + pZeroWq +
                   (scaleFinite ? sc.scale[k] * farS1[k] - farSum[fDp] : std::numeric_limits<double>::quiet_NaN());
      sums.S0[k] = (nearSum[cWq] + accX[k]) * sc.invScale[k] + farS0[k];
      sums.S1[k] = (nearSum[cWqU] + accXU[k]) * sc.invScale[k] + farS1[k];
      sums.SI[k] = (nearSum[cWqG] + accXG[k]) * sc.invScale[k] + farSI[k];
      sums.SIS[k] = (nearSum[cWqGS] + accXGS[k]) * sc.invScale[k] + farSIS[k];
    }
  }
};

std::vector<double> DivergenceFunctionals::renyiWallTails(const Terms& terms, bool projected,
                                                          const std::vector<double>& logE) const {
  const std::size_t K = orders_.size();
  std::vector<double> tails(K, 0.0);
  if (projected) return tails;
  // Per order the log-sums of the integrand |c| q r^alpha = exp(log(|c| q) + alpha u) over the wall cells and over the
  // layer inside them, by log-sum-exp across the ranks (a wall term can be e^700 where E_alpha is).
  std::vector<double> localMax(2 * K, -kInf), globalMax(2 * K), local(2 * K, 0.0), global(2 * K);
  const auto forTerms = [&](auto f) {
    for (std::size_t i = 0; i < terms.size(); ++i) {
      if (terms.kind(i) != Terms::Regular) continue;
      const int layer = terms.boundary(i) ? 0 : (terms.nextLayer(i) ? 1 : -1);
      if (layer < 0) continue;
      for (std::size_t k = 0; k < K; ++k) f(static_cast<std::size_t>(layer) * K + k, terms.logWq[i] + orders_[k] * terms.u[i]);
    }
  };
  forTerms([&](std::size_t j, double x) { localMax[j] = std::max(localMax[j], x); });
  FPDP_PETSC(MPI_Allreduce(localMax.data(), globalMax.data(), static_cast<PetscMPIInt>(2 * K), MPI_DOUBLE, MPI_MAX,
                            quadrature_.comm()));
  forTerms([&](std::size_t j, double x) { local[j] += std::exp(x - globalMax[j]); });
  FPDP_PETSC(MPI_Allreduce(local.data(), global.data(), static_cast<PetscMPIInt>(2 * K), MPI_DOUBLE, MPI_SUM,
                            quadrature_.comm()));
  for (std::size_t k = 0; k < K; ++k) {
    const double logWall = globalMax[k] + std::log(global[k]), logNext = globalMax[K + k] + std::log(global[K + k]);
    if (!(logWall > -kInf) || !std::isfinite(logE[k])) continue;  // nothing at the walls, or E_alpha not finite
    // wallTailBound in logarithms, relative to E_alpha.
    tails[k] = logWall < logNext ? wallTailBound(1.0, std::exp(logNext - logWall)) * std::exp(logWall - logE[k]) : kInf;
  }
  return tails;
}

std::vector<double> DivergenceFunctionals::renyiSums(const Terms& terms, const OrderScales& scales) const {
  const std::size_t K = orders_.size();
  std::vector<double> sums(8 * K + K * kTailShells, 0.0);
  RenyiSumsPass pass(*this, scales, sums.data());
  double pZeroWq = 0.0;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    if (terms.kind(i) != Terms::PZero) continue;
    const double wq = terms.wq(i);
    pZeroWq += wq;
    if (terms.boundary(i))
      for (std::size_t k = 0; k < K; ++k) pass.sums.em1Wall[k] += wq * (orders_[k] - 1.0);
  }
  const std::vector<std::uint32_t> grouped = RenyiSumsPass::groupRegularTerms(terms);
  for (std::size_t first = 0; first < grouped.size();) {
    pass.load(terms, grouped, first);
    for (const OrderRun& run : runs_) pass.addRun(run);
  }
  pass.combine(pZeroWq);
  return sums;
}

/// Tail shells: log of the mean of the normalised p^alpha q^(1-alpha) over each shell (a diagnostic, not a
/// criterion), from the reduced shell sums.
void DivergenceFunctionals::tailLogMeans(const std::vector<double>& sums, const OrderScales& scales,
                                         DivergenceValues& out) const {
  const std::size_t K = orders_.size();
  const double* shellSum = SumArrays(sums.data(), K).shellSum;
  out.renyiTailLogMean.assign(K, {});
  for (std::size_t k = 0; k < K; ++k) {
    auto& L = out.renyiTailLogMean[k];
    for (int m = 0; m < kTailShells; ++m) {
      const std::size_t i = k * kTailShells + static_cast<std::size_t>(m);
      L[m] = tailTestPossible_ && shellSum[i] > 0
                 ? scales.globalMax[K + i] + std::log(shellSum[i]) - shellLogVolume_[m]
                 : -kInf;
    }
  }
}

/// The far-field model (header comment): P_alpha = alpha P_p + (1 - alpha) P_q, infinite iff not positive definite.
/// Per order: whether the integrand's tails diverge (out.renyiTailPrecision: the smallest eigenvalue of P_alpha).
std::vector<char> DivergenceFunctionals::tailDivergence(const double* p, const double* q, std::ptrdiff_t stride,
                                                        const SingularMasses* singular, DivergenceValues& out) const {
  const std::size_t K = orders_.size();
  const int dim = quadrature_.dim();
  out.renyiTailPrecision.assign(K, kNaN);
  std::vector<char> tailDiverges(K, 0);
  models::Matrix Pp, Pq;
  models::Vector gp, gq;
  const double floorP = std::max(kNoiseFloorFactor * std::max(-out.p.min, 0.0), kTailFitFloor * out.p.max);
  const double floorQ = std::max(kNoiseFloorFactor * std::max(-out.q.min, 0.0), kTailFitFloor * out.q.max);
  // Singular masses exist only for laws projected onto a constraint set C inside the box (MATH.md §2.1): they are
  // supported on C, there is no far field, and R_alpha is infinite only where q = 0 and p > 0 (handled above).
  const bool projected = singular && !singular->empty();
  if (!projected && fitTailPrecisions(p, q, stride, floorP, floorQ, Pp, Pq, gp, gq)) {
    out.tailPrecisionP.assign(Pp.data(), Pp.data() + Pp.size());  // symmetric: row- = column-major
    out.tailPrecisionQ.assign(Pq.data(), Pq.data() + Pq.size());
    // The model applies to laws that decay within the box along every direction: the fitted Gaussians' standard
    // deviations below the half-widths, lambda_min(D P D) > 1 with D = diag(half-widths). Otherwise (laws that fill
    // the box, e.g. supported on it, or flat) the far field is not seen and nothing is concluded from it.
    models::Matrix Dh = models::Matrix::Zero(dim, dim);
    for (int a = 0; a < dim; ++a) Dh(a, a) = fitHalfWidth_[static_cast<std::size_t>(a)];
    auto smallest = [](const models::Matrix& M) {
      return Eigen::SelfAdjointEigenSolver<models::Matrix>(M, Eigen::EigenvaluesOnly).eigenvalues()(0);
    };
    const bool applies = smallest(Dh * Pp * Dh) > 1.0 && smallest(Dh * Pq * Dh) > 1.0;
    for (std::size_t k = 0; k < K && applies; ++k) {
      const models::Matrix Pa = orders_[k] * Pp + (1.0 - orders_[k]) * Pq;
      const double lmin = smallest(Pa);
      out.renyiTailPrecision[k] = lmin;
      tailDiverges[k] = !(lmin > 0.0);
      // 2: finite, but its integrand's peak beyond what the quadrature holds (tailStatuses: truncated_suspect).
      if (!tailDiverges[k] && tiltedPeakUnresolved(orders_[k], Pp, Pq, gp, gq)) tailDiverges[k] = 2;
    }
  }
  return tailDiverges;
}

/// R_alpha, log E_alpha, d R_alpha/d alpha, the information ratios and the wall shares from the reduced sums.
void DivergenceFunctionals::renyiFromSums(const std::vector<double>& sums, const OrderScales& scales, bool isInfinite,
                                          bool gradients, DivergenceValues& out) const {
  const std::size_t K = orders_.size();
  const SumArrays s(sums.data(), K);
  out.renyiBoundaryShare.assign(K, 0.0);
  out.logEAlpha.assign(K, kInf);
  out.dRenyiDAlpha.assign(K, kInf);
  out.informationRatio.assign(K, kNaN);
  out.informationRatioSigma.assign(K, kNaN);
  for (std::size_t k = 0; k < K; ++k) {
    const double alpha = orders_[k];
    if (isInfinite) continue;  // q = 0 where p > 0: R_alpha = E_alpha = +inf, I_alpha/E_alpha undefined
    // Small divergences (E_alpha - 1 < 1 from the stable sums): log E = log1p(E - 1), E'/E = E'/(1 + (E - 1)), the
    // share of E_alpha - 1 at the walls. Large ones (or E_alpha - 1 overflowing): log E = M + log S0,
    // E'/E = S1/S0, the share of E_alpha at the walls.
    const bool small = std::isfinite(s.em1[k]) && s.em1[k] < 1.0 && std::isfinite(scales.scale[k]);
    double logE, dLogE;
    if (small) {
      logE = std::log1p(std::max(s.em1[k], 0.0));
      dLogE = s.dE[k] / (1.0 + s.em1[k]);
      out.eAlphaMinusOne[k] = s.em1[k];
      out.renyiBoundaryShare[k] = s.em1[k] > 0 ? s.em1Wall[k] / s.em1[k] : 0.0;
    } else {
      logE = scales.globalMax[k] + std::log(s.S0[k]);
      dLogE = s.S1[k] / s.S0[k];
      out.eAlphaMinusOne[k] = std::isfinite(s.em1[k]) && std::isfinite(scales.scale[k]) ? s.em1[k] : std::expm1(logE);
      out.renyiBoundaryShare[k] = s.S0[k] > 0 ? s.S0Wall[k] / s.S0[k] : 0.0;
    }
    out.logEAlpha[k] = logE;
    out.renyi[k] = logE / (alpha - 1.0);
    // d R/d alpha = [(alpha - 1) E'/E - log E]/(alpha - 1)^2 = KL(pi_alpha || p)/(alpha - 1)^2 >= 0.
    out.dRenyiDAlpha[k] = ((alpha - 1.0) * dLogE - logE) / ((alpha - 1.0) * (alpha - 1.0));
    // I_alpha/E_alpha: both sums carry the same scale e^-M.
    out.informationRatio[k] = s.S0[k] > 0 && gradients ? s.SI[k] / s.S0[k] : kNaN;
    out.informationRatioSigma[k] = s.S0[k] > 0 && gradients ? s.SIS[k] / s.S0[k] : kNaN;
  }
}

/// Status of each order; a divergent integral is reported as +inf, the box number kept aside (renyiOnBox).
void DivergenceFunctionals::tailStatuses(const std::vector<char>& tailDiverges, DivergenceValues& out) const {
  const std::size_t K = orders_.size();
  out.renyiOnBox = out.renyi;
  out.renyiStatus.assign(K, RenyiStatus::Finite);
  for (std::size_t k = 0; k < K; ++k) {
    const bool wallsMatter = out.renyiBoundaryShare[k] > kBoundaryShareTolerance;
    if (out.renyi[k] == kInf) {
      out.renyiStatus[k] = RenyiStatus::InfiniteDetected;
    } else if (tailDiverges[k] == 2) {
      out.renyiStatus[k] = RenyiStatus::TruncatedSuspect;
    } else if (tailDiverges[k]) {
      out.renyiStatus[k] = RenyiStatus::InfiniteDetected;
      out.renyi[k] = kInf;
      out.eAlphaMinusOne[k] = kInf;
      out.logEAlpha[k] = kInf;
      out.dRenyiDAlpha[k] = kInf;
      out.informationRatio[k] = out.informationRatioSigma[k] = kNaN;  // I_alpha and E_alpha both diverge
    } else if (wallsMatter) {
      out.renyiStatus[k] = RenyiStatus::TruncatedSuspect;
    }
  }
}

/// Noise floor (docs/scheme.md §5, "Noise floor"). A scheme that is not sign-preserving (BDF2, Crank–Nicolson, a
/// loose linear-solver tolerance, the fourth-order reconstruction) leaves sign errors of size nu = max(-min u, 0) in
/// the tails, and positive values of that size are no better known. There p^alpha q^(1-alpha) turns the noise of
/// p/q into a factor up to (noise ratio)^alpha: R_alpha can be off by orders of magnitude while KL and low orders
/// are fine. The cells with p <= kNoiseFloorFactor nu_p or q <= kNoiseFloorFactor nu_q carry a share N/E of
/// E_alpha; R_alpha - log(E_alpha - N)/(alpha - 1) is how much of R_alpha rests on them. Nothing to do (and no
/// cost) when neither density has a negative value.
void DivergenceFunctionals::noiseFloorShares(const Terms& terms, const std::vector<double>& sums,
                                             const OrderScales& scales, DivergenceValues& out) const {
  const std::size_t K = orders_.size();
  const std::size_t n = quadrature_.weights().size();
  const double *p = terms.p, *q = terms.q;
  const std::ptrdiff_t stride = terms.stride;
  const double* S0 = SumArrays(sums.data(), K).S0;
  out.renyiNoiseShare.assign(K, 0.0);
  const auto [floorP, floorQ] = noiseFloors(out);
  if (floorP > 0.0 || floorQ > 0.0) {  // the extrema are global: every rank takes this branch or none
    std::vector<double> noise(K, 0.0), gNoise(K);
    for (std::size_t c = 0; c < n; ++c) {
      if (terms.kind(c) != Terms::Regular || !(p[c * stride] <= floorP || q[c * stride] <= floorQ)) continue;
      const double logWq = terms.logWq[c], u = terms.u[c];
      for (std::size_t k = 0; k < K; ++k) noise[k] += std::exp(logWq + orders_[k] * u - scales.logScale[k]);  // S0's scale
    }
    FPDP_PETSC(MPI_Allreduce(noise.data(), gNoise.data(), static_cast<PetscMPIInt>(K), MPI_DOUBLE, MPI_SUM,
                              quadrature_.comm()));
    for (std::size_t k = 0; k < K; ++k) {
      if (!(S0[k] > 0.0) || !std::isfinite(out.renyi[k])) continue;
      const double share = std::min(gNoise[k] / S0[k], 1.0);
      out.renyiNoiseShare[k] = share;
      const double resting = -std::log1p(-share) / (orders_[k] - 1.0);  // +inf when the noise cells carry it all
      if (out.renyiStatus[k] == RenyiStatus::Finite &&
          resting > kNoiseRelativeTolerance * std::fabs(out.renyi[k]) + kNoiseAbsoluteTolerance)
        out.renyiStatus[k] = RenyiStatus::NoiseSuspect;
    }
  }
}

/// Hockey-stick divergences delta(eps) = sum |c| max(p - e^eps q, 0) and with p, q exchanged (addHockeyStick): on
/// the eps grid, and eps(delta) by root-finding on the same sums (MATH.md §7).
void DivergenceFunctionals::hockeyStickAndRoots(const double* p, const double* q, std::ptrdiff_t stride,
                                                const SingularMasses* singular, double invMp, double invMq,
                                                KinkCorrections& kinkCorrections, DivergenceValues& out) const {
  const std::size_t n = quadrature_.weights().size();
  const std::size_t E = settings_.hockeyStickEps.size(), D = settings_.epsilonDeltas.size();
  const MPI_Comm comm = quadrature_.comm();
  const auto [floorP, floorQ] = noiseFloors(out);
  const Terms weights = termSources(p, q, stride, singular, nullptr, invMp, invMq);
  kinkCorrections.openExchanged(*work_, invMp, invMq);
  std::optional<HockeyStickKinks>(&kinks)[2] = kinkCorrections.kinks;
  // The terms with a > b of each direction, allocated to their number (the root finder narrows them in place).
  HockeyStickTerms hsTerms[2];
  SuspectTerms suspect[2];
  std::size_t count[2] = {0, 0};
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double wp = weights.wp(i), wq = weights.wq(i);
    count[0] += wp > wq, count[1] += wq > wp;
  }
  for (int dir = 0; dir < 2; ++dir) {
    hsTerms[dir].a.reserve(count[dir]);
    hsTerms[dir].b.reserve(count[dir]);
  }
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double wp = weights.wp(i), wq = weights.wq(i);
    const int dir = wp > wq ? 0 : (wq > wp ? 1 : -1);
    if (dir < 0) continue;
    const double a = dir == 0 ? wp : wq, b = dir == 0 ? wq : wp;
    hsTerms[dir].a.push_back(a);
    hsTerms[dir].b.push_back(b);
    // Cells (not singular masses) at a wall or at a density's noise floor (as for R_alpha's NoiseSuspect).
    const bool noise = i < n && ((floorP > 0.0 && p[i * stride] <= floorP) || (floorQ > 0.0 && q[i * stride] <= floorQ));
    for (auto [is, group] : {std::pair{weights.boundary(i), &suspect[dir].wall}, std::pair{noise, &suspect[dir].noise}})
      if (is) {
        group->a.push_back(a);
        group->b.push_back(b);
      }
  }
  const ProfileEnds ends = profileEnds(hsTerms, suspect, comm);
  std::vector<models::ProfileSample> samples;  // the grid's values: the roots' first brackets (MATH.md §7)
  if (E > 0) {
    std::vector<double> expEps(E), hs(2 * E, 0.0), gHs(2 * E);
    for (std::size_t k = 0; k < E; ++k) expEps[k] = std::exp(settings_.hockeyStickEps[k]);
    addHockeyStick(hsTerms[0], expEps, hs.data());
    addHockeyStick(hsTerms[1], expEps, hs.data() + E);
    if (kinks[0]) kinks[0]->add(expEps, hs.data());
    if (kinks[1]) kinks[1]->add(expEps, hs.data() + E);
    // Summed on rank 0 and broadcast: the same bits on every rank, as the root finder's decisions need.
    FPDP_PETSC(MPI_Reduce(hs.data(), gHs.data(), static_cast<PetscMPIInt>(2 * E), MPI_DOUBLE, MPI_SUM, 0, comm));
    FPDP_PETSC(MPI_Bcast(gHs.data(), static_cast<PetscMPIInt>(2 * E), MPI_DOUBLE, 0, comm));
    out.hockeyStickPQ.assign(gHs.begin(), gHs.begin() + static_cast<std::ptrdiff_t>(E));
    out.hockeyStickQP.assign(gHs.begin() + static_cast<std::ptrdiff_t>(E), gHs.end());
    out.hockeyStickStatusPQ =
        profileStatuses(suspect[0], ends.ends[0].flatFrom, ends.wallLargest[0], expEps, out.hockeyStickPQ, comm);
    out.hockeyStickStatusQP =
        profileStatuses(suspect[1], ends.ends[1].flatFrom, ends.wallLargest[1], expEps, out.hockeyStickQP, comm);
    for (std::size_t k = 0; k < E && D > 0; ++k)
      samples.insert(samples.end(), {{0, settings_.hockeyStickEps[k], out.hockeyStickPQ[k]},
                                     {1, settings_.hockeyStickEps[k], out.hockeyStickQP[k]}});
  }
  if (D > 0) out.exactEpsilon = epsilonRoots(hsTerms, kinks, suspect, ends.ends, settings_.epsilonDeltas, samples, comm);
}

/// The privacy-loss distribution of one direction: log(p/q) under p (direction 0) or log(q/p) under q (1).
PrivacyLossHistogram DivergenceFunctionals::privacyLossHistogram(const Terms& terms, int dir) const {
  const MPI_Comm comm = quadrature_.comm();
  const int B = settings_.privacyLossBins;
  PrivacyLossHistogram h;
  auto weightOf = [&](std::size_t i) { return dir == 0 ? terms.wp(i) : terms.wq(i); };
  auto valueOf = [&](std::size_t i) { return dir == 0 ? terms.u[i] : -terms.u[i]; };
  // The mass at +inf: Infinite terms under p (q = 0), PZero terms under q (p = 0).
  const Terms::Kind atInfinity = dir == 0 ? Terms::Infinite : Terms::PZero;
  double localMaxMass = 0.0, globalMaxMass = 0.0;
  for (std::size_t i = 0; i < terms.size(); ++i)
    if (terms.kind(i) == Terms::Regular) localMaxMass = std::max(localMaxMass, weightOf(i));
  FPDP_PETSC(MPI_Allreduce(&localMaxMass, &globalMaxMass, 1, MPI_DOUBLE, MPI_MAX, comm));
  const double floor = kPldMassFloor * globalMaxMass;
  double range[2] = {kInf, kInf};  // min and -max
  for (std::size_t i = 0; i < terms.size(); ++i)
    if (terms.kind(i) == Terms::Regular && weightOf(i) >= floor && weightOf(i) > 0) {
      range[0] = std::min(range[0], valueOf(i));
      range[1] = std::min(range[1], -valueOf(i));
    }
  double gRange[2];
  FPDP_PETSC(MPI_Allreduce(range, gRange, 2, MPI_DOUBLE, MPI_MIN, comm));
  double lo = gRange[0], hi = -gRange[1];
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = -0.5, hi = 0.5;  // no finite value carries mass
  if (!(hi - lo > 1e-12 * std::max(1.0, std::fabs(lo)))) lo -= 0.5, hi += 0.5;
  std::vector<double> bins(static_cast<std::size_t>(B) + 2, 0.0), gBins(bins.size());
  const double width = (hi - lo) / B;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const double m = weightOf(i);
    const Terms::Kind kind = terms.kind(i);
    if (kind == atInfinity) {
      bins[static_cast<std::size_t>(B)] += m;
      continue;
    }
    if (kind != Terms::Regular || !(m > 0)) continue;
    const double x = valueOf(i);
    if (x < lo || x > hi) bins[static_cast<std::size_t>(B) + 1] += m;
    const double b = std::floor((x - lo) / width);
    const int bin = b < 0 ? 0 : (b >= B ? B - 1 : static_cast<int>(b));
    bins[static_cast<std::size_t>(bin)] += m;
  }
  FPDP_PETSC(MPI_Allreduce(bins.data(), gBins.data(), static_cast<PetscMPIInt>(bins.size()), MPI_DOUBLE, MPI_SUM,
                            comm));
  h.lower = lo;
  h.upper = hi;
  h.mass.assign(gBins.begin(), gBins.begin() + B);
  h.massInfinity = gBins[static_cast<std::size_t>(B)];
  h.clampedMass = gBins[static_cast<std::size_t>(B) + 1];
  return h;
}

}  // namespace fpdp::solver
