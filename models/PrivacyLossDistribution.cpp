#include "models/PrivacyLossDistribution.hpp"

#include "models/GaussianFunctionals.hpp"

#include <unsupported/Eigen/FFT>

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace fpdp::models {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// The largest |loss| on a grid: e^L must stay finite in the discretisations (e^700 = 1e304). What lies above goes to
/// infinity (pessimistic: P(L > 700) - e^700 Q(L > 700) is infinity mass) or is rounded down onto the top node
/// (optimistic). Before, nodes above 709 made e^L infinite and the masses NaN: z = 0.018, gamma = 0.3, K = 8 gave
/// eps(1e-3) = 2.9 where it is above 1000.
constexpr double kLargestGridLoss = 700.0;
/// The largest grid a discretisation or a composition may hold (doubles): the FFT's memory is a few times this.
constexpr std::size_t kMaxGridPoints = std::size_t{1} << 24;
/// Compositions with a factor of at most this many bins are summed directly (exact up to long double round-off).
constexpr std::size_t kDirectCompositionSize = 16;
/// The constant of the FFT convolution's round-off bound (composePld): three transforms of relative 2-norm error
/// log2(N) (u + 4.5 u) each (Higham, Accuracy and Stability of Numerical Algorithms, Thm 24.2), rounded up.
constexpr double kFftRoundOffFactor = 20.0;

/// N(m, 1)-mass of (u, v]: the interval probability keeps its digits on narrow intervals, where a difference of
/// two tails would cancel.
double normalMass(double u, double v, double m) {
  if (!(v > u)) return 0.0;
  return normalIntervalProbability(u - m, v - m);
}

/// The masses of the pair on loss intervals. The loss is monotone in the Gaussian coordinate x (increasing for
/// Remove, decreasing for Add), so {a < L <= b} is an x-interval found by inverting L.
class PairMasses {
public:
  explicit PairMasses(const SubsampledGaussianPair& pair) : p_(pair) {}

  /// x with L(x) = l (-inf / +inf beyond the loss's range).
  double xOf(double l) const {
    if (l == kInf) return p_.direction == SubsampledDirection::Remove ? kInf : -kInf;
    if (l == -kInf) return p_.direction == SubsampledDirection::Remove ? -kInf : kInf;
    // e^s = 1 - gamma + gamma e^(mu x - mu^2/2) (s = L for Remove, -L for Add): mu x - mu^2/2 = log1p(expm1(s) / gamma),
    // and where expm1(s) overflows, s - log(gamma) + log1p(-(1 - gamma) e^-s). (Before, every loss beyond 709 went
    // to x = +inf and its mass was lost: z = 0.018, gamma = 0.3, K = 8 gave eps(1e-3) = 2.9 where it is above 1000.)
    const double s = p_.direction == SubsampledDirection::Remove ? l : -l;
    if (s > 700.0) return 0.5 * p_.mu + (s - std::log(p_.gamma) + std::log1p(-(1.0 - p_.gamma) * std::exp(-s))) / p_.mu;
    const double r = std::expm1(s) / p_.gamma;
    if (!(r > -1.0)) return -kInf;
    return 0.5 * p_.mu + std::log1p(r) / p_.mu;
  }
  /// The x-interval of {a < L <= b} (its end points; open/closed ends do not matter for these continuous laws).
  std::pair<double, double> xInterval(double a, double b) const {
    const double xa = xOf(a), xb = xOf(b);
    return p_.direction == SubsampledDirection::Remove ? std::pair{xa, xb} : std::pair{xb, xa};
  }
  double mixtureMass(double u, double v) const {
    return (1.0 - p_.gamma) * normalMass(u, v, 0.0) + p_.gamma * normalMass(u, v, p_.mu);
  }
  /// P(a < L <= b), Q(a < L <= b).
  double massP(double a, double b) const {
    const auto [u, v] = xInterval(a, b);
    return p_.direction == SubsampledDirection::Remove ? mixtureMass(u, v) : normalMass(u, v, 0.0);
  }
  double massQ(double a, double b) const {
    const auto [u, v] = xInterval(a, b);
    return p_.direction == SubsampledDirection::Remove ? normalMass(u, v, 0.0) : mixtureMass(u, v);
  }

private:
  SubsampledGaussianPair p_;
};

/// The loss range [lo, hi] outside which both P and Q have less than tailMass (per side).
std::pair<double, double> lossRange(const SubsampledGaussianPair& pair, double tailMass) {
  double lo = 0.0, hi = 40.0;  // s with normalUpperTail(s) = tailMass, by bisection
  for (int k = 0; k < 200 && hi - lo > 1e-12; ++k) {
    const double mid = 0.5 * (lo + hi);
    (normalUpperTail(mid) > tailMass ? lo : hi) = mid;
  }
  const double a = pair.loss(-hi), b = pair.loss(pair.mu + hi);
  return {std::min(a, b), std::max(a, b)};
}

void checkGridSize(double span, double h, const char* what) {
  if (!(span / h < static_cast<double>(kMaxGridPoints)))
    throw std::invalid_argument(std::string("privacy loss distribution: ") + what + " needs " +
                                std::to_string(span / h) + " grid points of width " + std::to_string(h) +
                                ", more than " + std::to_string(kMaxGridPoints) + "; use a coarser grid");
}

/// Connect-the-dots (pessimistic): the mean-preserving split of the ratio e^L under Q between neighbouring nodes.
DiscretePld connectTheDots(const PairMasses& m, long i0, long i1, double h) {
  DiscretePld d;
  d.h = h;
  d.offset = i0;
  const long M = i1 - i0;
  d.mass.assign(static_cast<std::size_t>(M + 1), 0.0);
  const auto eps = [&](long j) { return static_cast<double>(i0 + j) * h; };
  // Below the first node: the split between X = 0 and t_0 puts P(L <= eps_0) on node 0.
  d.mass[0] += m.massP(-kInf, eps(0));
  // Interval (eps_j, eps_j+1]: E_Q[(X - t_j)_+ ; I] / (t_j+1 - t_j) of Q-mass goes up, the rest down; as P-masses
  // (times the node's ratio): up t_j+1/(t_j+1 - t_j) (P(I) - t_j Q(I)), down t_j/(t_j+1 - t_j) (t_j+1 Q(I) - P(I)).
  const double up = 1.0 / -std::expm1(-h), down = 1.0 / std::expm1(h);
  for (long j = 0; j < M; ++j) {
    const double P = m.massP(eps(j), eps(j + 1)), Q = m.massQ(eps(j), eps(j + 1));
    const double tj = std::exp(eps(j)), tj1 = std::exp(eps(j + 1));
    // Both brackets are >= 0 exactly (the interval's mean ratio lies between its ends); round-off is clamped.
    d.mass[static_cast<std::size_t>(j + 1)] += up * std::max(P - tj * Q, 0.0);
    d.mass[static_cast<std::size_t>(j)] += down * std::max(tj1 * Q - P, 0.0);
  }
  // Above the last node: the spread to +infinity keeps Q(L > eps_M) at t_M and sends delta(eps_M) to infinity.
  const double P = m.massP(eps(M), kInf), Q = m.massQ(eps(M), kInf);
  const double tM = std::exp(eps(M));
  d.mass[static_cast<std::size_t>(M)] += tM * Q;
  d.infinityMass = std::max(P - tM * Q, 0.0);
  return d;
}

/// Privacy buckets (optimistic): consecutive loss intervals whose ratio P/Q is exactly a grid ratio. The sweep starts
/// at the end of the loss range where mass piles up against a finite bound (log(1 - gamma) below for Remove,
/// -log(1 - gamma) above for Add): the pile is absorbed by a bucket that straddles a node, and the sweep's last
/// remainder, whose ratio lies between two nodes and is rounded down (or dropped below the grid), is a far tail.
DiscretePld privacyBuckets(const PairMasses& m, long i0, long i1, double h, bool downward) {
  DiscretePld d;
  d.h = h;
  d.offset = i0;
  d.mass.assign(static_cast<std::size_t>(i1 - i0 + 1), 0.0);
  const auto put = [&](double ratio, double p) {  // rounded down onto the grid; below it: dropped
    const long i = static_cast<long>(std::floor(std::log(ratio) / h));
    if (i >= i0) d.mass[static_cast<std::size_t>(std::min(i, i1) - i0)] += p;
  };
  // The bucket between the sweep's position c and e: (c, e] upward, (e, c] downward.
  const auto bucketP = [&](double c, double e) { return downward ? m.massP(e, c) : m.massP(c, e); };
  const auto bucketQ = [&](double c, double e) { return downward ? m.massQ(e, c) : m.massQ(c, e); };
  const double sign = downward ? -1.0 : 1.0, end = sign * kInf;
  double c = -end;  // the sweep's position
  long i = downward ? i1 : i0;
  while (true) {
    // The next node strictly beyond c in the sweep's direction.
    if (std::isfinite(c))
      i = downward ? std::min(i, static_cast<long>(std::ceil(c / h)) - 1)
                   : std::max(i, static_cast<long>(std::floor(c / h)) + 1);
    const double restP = bucketP(c, end), restQ = bucketQ(c, end);
    if (!(restP > 0.0)) break;
    const double t = std::exp(static_cast<double>(i) * h);
    // The rest reaches this node's ratio iff its own ratio is beyond it (above upward, below downward).
    if (i < i0 || i > i1 || !(sign * (restP - t * restQ) > 0.0)) {
      if (restQ > 0.0) put(restP / restQ, restP);
      break;
    }
    // g(e) = sign (P - t Q)(bucket c..e): < 0 while the bucket holds only losses on c's side of the node, > 0 at the
    // range's end. Bracketed from the node outward by doubling, then bisected; the end kept has g >= 0, so the
    // bucket's ratio is t up to the round-off of its masses.
    const auto g = [&](double e) { return sign * (bucketP(c, e) - t * bucketQ(c, e)); };
    double lo = static_cast<double>(i) * h, step = h, hi = lo + sign * step;
    while (g(hi) < 0.0) {
      lo = hi;
      step *= 2.0;
      hi = lo + sign * step;
      if (step > 1e6) throw std::logic_error("privacy buckets: no bucket end found");
    }
    for (int k = 0; k < 200 && std::fabs(hi - lo) > 1e-15 * std::max(1.0, std::fabs(hi)); ++k) {
      const double mid = 0.5 * (lo + hi);
      (g(mid) < 0.0 ? lo : hi) = mid;
    }
    const double p = bucketP(c, hi);
    if (p > 0.0) d.mass[static_cast<std::size_t>(i - i0)] += p;
    c = hi;
    i += downward ? -1 : 1;
  }
  return d;
}

/// Cuts the tails below tailMass per side: pessimistically the upper tail to +infinity and the lower tail up onto the
/// first kept loss; optimistically the upper tail down onto the last kept loss and the lower tail dropped. Round-off
/// negatives of the FFT are set to 0 first.
void truncateTails(DiscretePld& d, PldBound bound, double tailMass) {
  auto& w = d.mass;
  for (double& x : w) x = std::max(x, 0.0);
  std::size_t first = 0, last = w.size();
  for (double s = 0.0; first < w.size() && s + w[first] < tailMass; ++first) s += w[first];
  for (double s = 0.0; last > first + 1 && s + w[last - 1] < tailMass; --last) s += w[last - 1];
  if (first >= last) return;
  double lower = 0.0, upper = 0.0;
  for (std::size_t k = 0; k < first; ++k) lower += w[k];
  for (std::size_t k = last; k < w.size(); ++k) upper += w[k];
  std::vector<double> kept(w.begin() + static_cast<long>(first), w.begin() + static_cast<long>(last));
  if (bound == PldBound::Pessimistic) {
    kept.front() += lower;
    d.infinityMass += upper;
  } else {
    kept.back() += upper;
  }
  d.offset += static_cast<long>(first);
  w = std::move(kept);
}


std::size_t fftSize(std::size_t n) {
  std::size_t N = 1;
  while (N < n) N <<= 1;
  return N;
}

}  // namespace

double SubsampledGaussianPair::loss(double x) const {
  // log(1 - gamma + gamma e^(mu x - mu^2/2)) without cancellation: log1p(gamma expm1(mu x - mu^2/2)) where that is
  // finite, log(gamma) + mu x - mu^2/2 + log1p((1-gamma)/gamma e^-(...)) where the exponential overflows.
  const double a = mu * x - 0.5 * mu * mu;
  const double l = a < 700.0 ? std::log1p(gamma * std::expm1(a))
                             : std::log(gamma) + a + std::log1p((1.0 - gamma) / gamma * std::exp(-a));
  return direction == SubsampledDirection::Remove ? l : -l;
}

double SubsampledGaussianPair::densityP(double x) const {
  const double phi0 = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
  const double phiMu = std::exp(-0.5 * (x - mu) * (x - mu)) / std::sqrt(2.0 * M_PI);
  return direction == SubsampledDirection::Remove ? (1.0 - gamma) * phi0 + gamma * phiMu : phi0;
}

double SubsampledGaussianPair::densityQ(double x) const {
  return SubsampledGaussianPair{mu, gamma,
                                direction == SubsampledDirection::Remove ? SubsampledDirection::Add
                                                                         : SubsampledDirection::Remove}
      .densityP(x);
}

double DiscretePld::delta(double eps) const {
  double s = 0.0;
  for (std::size_t k = mass.size(); k-- > 0;) {
    const double L = static_cast<double>(offset + static_cast<long>(k)) * h;
    if (L <= eps) break;
    s += mass[k] * -std::expm1(eps - L);
  }
  return s + infinityMass;
}

double DiscretePld::epsilon(double target) const {
  // The root of the piecewise form, then raised until delta() (summed the other way) agrees: the round-off of the
  // two summations must not under-report eps.
  const double top = static_cast<double>(offset + static_cast<long>(mass.size()) - 1) * h;
  const auto roundedUp = [&](double eps) {
    for (int k = 0; k < 64 && delta(eps) > target; ++k) eps += 1e-14 * std::max(std::fabs(eps), 1e-3);
    // Should the nudges not suffice, a doubling step, capped at the top node: there delta() is infinityMass <= target,
    // so a certified eps is always returned.
    for (double step = 2e-14 * std::max(std::fabs(eps), 1e-3); delta(eps) > target && eps < top; step *= 2.0)
      eps = std::min(eps + step, top);
    return std::max(eps, 0.0);
  };
  if (infinityMass > target) return kInf;
  // On [L_k-1, L_k]: delta(eps) = A - e^eps B with A, B the sums over the masses at L_k and above.
  double A = infinityMass, B = 0.0;
  for (std::size_t k = mass.size(); k-- > 0;) {
    const double L = static_cast<double>(offset + static_cast<long>(k)) * h;
    A += mass[k];
    B += mass[k] * std::exp(-L);
    const double below = L - h;  // the next node down
    if (A - std::exp(below) * B > target) return roundedUp(std::max(std::log((A - target) / B), below));
    if (k == 0) return A <= target ? 0.0 : roundedUp(std::log((A - target) / B));
  }
  return 0.0;
}

DiscretePld subsampledGaussianPld(double mu, double gamma, SubsampledDirection direction, PldBound bound,
                                  const PldGrid& grid) {
  if (!(mu > 0.0 && std::isfinite(mu)) || !(gamma > 0.0 && gamma <= 1.0) || !(grid.h > 0.0) ||
      !(grid.tailMass > 0.0 && grid.tailMass < 0.5))
    throw std::invalid_argument("subsampledGaussianPld: needs mu > 0 finite, gamma in (0, 1], h > 0, tailMass in "
                                "(0, 0.5); got mu = " + std::to_string(mu) + ", gamma = " + std::to_string(gamma));
  const SubsampledGaussianPair pair{mu, gamma, direction};
  const auto [bottom, top] = lossRange(pair, grid.tailMass);
  // Below -700 the loss's mass is at most e^-700 of Q's: the lowest node takes it (pessimistic) or it is dropped
  // (optimistic), as below any grid.
  const double lo = std::max(bottom, -kLargestGridLoss), hi = std::min(top, kLargestGridLoss);
  checkGridSize(hi - lo, grid.h, "one mechanism's loss range");
  const long i0 = static_cast<long>(std::floor(lo / grid.h)), i1 = std::max(static_cast<long>(std::ceil(hi / grid.h)), i0 + 1);
  const PairMasses masses(pair);
  return bound == PldBound::Pessimistic ? connectTheDots(masses, i0, i1, grid.h)
                                        : privacyBuckets(masses, i0, i1, grid.h, direction == SubsampledDirection::Add);
}

namespace {
/// The convolution of two mass vectors (n = |a| + |b| - 1 entries) and a bound on its round-off in the 1-norm.
std::vector<double> convolvedMasses(const std::vector<double>& a, const std::vector<double>& b, std::size_t n,
                                    double& roundOff) {
  double l1a = 0.0, l1b = 0.0, l2a = 0.0, l2b = 0.0;
  for (double w : a) l1a += std::fabs(w), l2a += w * w;
  for (double w : b) l1b += std::fabs(w), l2b += w * w;
  // Short factors (a distribution whose tails truncation left a few bins, down to one) by the direct sum: Eigen's
  // kissfft fails on transforms of length 1 (seen: a segmentation fault composing the PLDs of noise multiplier 0.014).
  // Its round-off: the sums' rounding to double, at most an ulp of the total mass (twice, for safety).
  if (std::min(a.size(), b.size()) <= kDirectCompositionSize) {
    std::vector<long double> sum(n, 0.0L);
    for (std::size_t i = 0; i < a.size(); ++i)
      for (std::size_t j = 0; j < b.size(); ++j)
        sum[i + j] += static_cast<long double>(a[i]) * static_cast<long double>(b[j]);
    roundOff = 2.0 * std::numeric_limits<double>::epsilon() * l1a * l1b;
    return std::vector<double>(sum.begin(), sum.end());
  }
  const std::size_t N = fftSize(n);
  // In long double (64-bit significand on x86): the round-off allowance below shrinks by 2^11 against double, below
  // any delta asked in practice, for about twice the time.
  using Real = long double;
  // One transform object per thread: it keeps its plans (the twiddle factors, long double sines and cosines) by
  // length, and a run composes at the same few lengths at every output step.
  thread_local Eigen::FFT<Real> fft;
  fft.SetFlag(Eigen::FFT<Real>::HalfSpectrum);
  std::vector<Real> x(N, 0.0L);
  std::copy(a.begin(), a.end(), x.begin());
  std::vector<std::complex<Real>> fa, fb;
  fft.fwd(fa, x);
  if (&a == &b) {
    fb = fa;
  } else {
    std::fill(x.begin(), x.end(), 0.0L);
    std::copy(b.begin(), b.end(), x.begin());
    fft.fwd(fb, x);
  }
  for (std::size_t k = 0; k < fa.size(); ++k) fa[k] *= fb[k];
  fft.inv(x, fa, N);
  // The FFT's round-off: the convolution by FFT errs by at most about eps_mach log2(N) max(|a|_1 |b|_2, |a|_2 |b|_1)
  // in the 2-norm (the transforms are unitary up to scale and |FFT a|_inf <= |a|_1; a safety factor on top), so by
  // sqrt(n) times that in the 1-norm that moves delta.
  roundOff = kFftRoundOffFactor * static_cast<double>(std::numeric_limits<Real>::epsilon()) *
             std::log2(static_cast<double>(N)) * std::sqrt(static_cast<double>(n)) *
             std::max(l1a * std::sqrt(l2b), l1b * std::sqrt(l2a));
  std::vector<double> out(n);
  for (std::size_t k = 0; k < n; ++k) out[k] = static_cast<double>(x[k]);
  return out;
}
}  // namespace

DiscretePld composePld(const DiscretePld& a, const DiscretePld& b, PldBound bound, double tailMass) {
  if (a.h != b.h) throw std::invalid_argument("composePld: the two distributions have different grids");
  const std::size_t n = a.mass.size() + b.mass.size() - 1;
  checkGridSize(static_cast<double>(n), 1.0, "the composition");
  DiscretePld c;
  c.h = a.h;
  c.offset = a.offset + b.offset;
  double roundOff = 0.0;
  c.mass = convolvedMasses(a.mass, b.mass, n, roundOff);
  // An infinite loss in either factor makes the sum infinite (the P-masses at -infinity are 0 for a true pair and
  // dropped, i.e. absent, in an optimistic one). The pessimistic side sends the round-off to +infinity.
  double sa = 0.0, sb = 0.0;
  for (double w : a.mass) sa += w;
  for (double w : b.mass) sb += w;
  c.infinityMass = a.infinityMass * (sb + b.infinityMass) + b.infinityMass * sa;
  if (bound == PldBound::Pessimistic) c.infinityMass += roundOff;
  truncateTails(c, bound, tailMass);
  return c;
}

DiscretePld selfComposePld(const DiscretePld& single, long K, PldBound bound, double tailMass) {
  if (K < 1) throw std::invalid_argument("selfComposePld: K = " + std::to_string(K) + ", needs K >= 1");
  std::optional<DiscretePld> result;
  DiscretePld power = single;
  for (long k = K;; k >>= 1) {
    if (k & 1) result = result ? composePld(*result, power, bound, tailMass) : power;
    if (k <= 1) break;
    power = composePld(power, power, bound, tailMass);
  }
  return *result;
}

double subsampledGaussianDelta(double mu, double gamma, SubsampledDirection direction, double eps) {
  const PairMasses m(SubsampledGaussianPair{mu, gamma, direction});
  const double P = m.massP(eps, kInf), Q = m.massQ(eps, kInf);
  return std::max(Q > 0.0 ? P - std::exp(eps) * Q : P, 0.0);  // e^eps may overflow where Q is 0
}

PldGrid pldGridFor(double mu, double gamma) {
  // One step's loss spread: gamma mu (the loss is about gamma (mu x - mu^2/2) near x = 0; its standard deviation
  // gamma sqrt(e^(mu^2) - 1) is larger for large mu, where the bulk still needs the finer width). Splitting and
  // bucketing move a step's loss by a fraction of h, so h = a hundredth of the spread keeps the composed loss's
  // variance within about 1e-4 relative whatever K: the measured bracket is 2e-5 relative (z = 250, K <= 1e5).
  const double spread = gamma * mu;
  PldGrid g;
  g.h = std::clamp(spread / 100.0, 1e-7, 1e-2);
  g.tailMass = 1e-15;
  return g;
}

std::vector<PldEpsilon> subsampledGaussianEpsilons(double mu, double gamma, long K, const std::vector<double>& deltas) {
  return subsampledGaussianEpsilons(mu, gamma, K, deltas, pldGridFor(mu, gamma));
}

std::vector<PldEpsilon> subsampledGaussianEpsilons(double mu, double gamma, long K, const std::vector<double>& deltas,
                                                   const PldGrid& grid) {
  return SubsampledGaussianAccountant(mu, gamma, grid).epsilons(K, deltas);
}

SubsampledGaussianAccountant::SubsampledGaussianAccountant(double mu, double gamma, const PldGrid& grid)
    : mu_(mu), gamma_(gamma), grid_(grid) {}

std::vector<PldEpsilon> SubsampledGaussianAccountant::epsilons(long K, const std::vector<double>& deltas) {
  std::vector<PldEpsilon> out(deltas.size(), PldEpsilon{0.0, 0.0});
  if (K <= 0 || mu_ == 0.0) return out;  // nothing released about the record
  if (std::isinf(mu_)) return std::vector<PldEpsilon>(deltas.size(), PldEpsilon{kInf, kInf});
  const SubsampledDirection directions[2] = {SubsampledDirection::Remove, SubsampledDirection::Add};
  const PldBound bounds[2] = {PldBound::Pessimistic, PldBound::Optimistic};
  if (single_.empty())
    for (auto direction : directions)
      for (auto bound : bounds) single_.push_back(subsampledGaussianPld(mu_, gamma_, direction, bound, grid_));
  if (K < steps_) {
    composed_.clear();
    steps_ = 0;
  }
  // A run asks at every output step, so the steps added are usually the same number each time: their composition
  // (the repeated squarings, most of the work) is kept and reused.
  if (K - steps_ != incrementSteps_) {
    increment_.clear();
    incrementSteps_ = K - steps_;
  }
  for (std::size_t k = 0; k < single_.size(); ++k) {
    const PldBound bound = bounds[k % 2];
    if (K > steps_) {
      if (increment_.size() <= k) increment_.push_back(selfComposePld(single_[k], K - steps_, bound, grid_.tailMass));
      if (composed_.size() <= k) composed_.push_back(increment_[k]);
      else composed_[k] = composePld(composed_[k], increment_[k], bound, grid_.tailMass);
    }
    for (std::size_t j = 0; j < deltas.size(); ++j) {
      double& e = bound == PldBound::Pessimistic ? out[j].pessimistic : out[j].optimistic;
      e = std::max(e, composed_[k].epsilon(deltas[j]));
    }
  }
  steps_ = K;
  return out;
}

double subsampledGaussianRdp(double mu, double gamma, int alpha) {
  // log sum_k exp(log C(alpha,k) + (alpha-k) log(1-gamma) + k log(gamma) + (k^2-k) mu^2/2), by log-sum-exp.
  std::vector<double> terms;
  for (int k = 0; k <= alpha; ++k) {
    if (gamma == 1.0 && k < alpha) continue;
    const double logBinomial = std::lgamma(alpha + 1.0) - std::lgamma(k + 1.0) - std::lgamma(alpha - k + 1.0);
    terms.push_back(logBinomial + (k < alpha ? (alpha - k) * std::log1p(-gamma) : 0.0) + k * std::log(gamma) +
                    0.5 * (static_cast<double>(k) * k - k) * mu * mu);
  }
  const double top = *std::max_element(terms.begin(), terms.end());
  double s = 0.0;
  for (double t : terms) s += std::exp(t - top);
  return (top + std::log(s)) / (alpha - 1.0);
}

}  // namespace fpdp::models
