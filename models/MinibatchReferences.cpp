#include "models/MinibatchReferences.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <string>

#include "models/ExpressionLoss.hpp"
#include "models/GaussianFunctionals.hpp"

namespace fpdp::models {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// log sum_i exp(v_i), with no overflow.
double logSumExp(const std::vector<double>& v) {
  double m = -kInf;
  for (double x : v) m = std::max(m, x);
  if (!std::isfinite(m)) return m;
  double s = 0.0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}

/// Composite 16-point Gauss–Legendre of f over [a, b] on panels of width at most `width`.
template <class F>
double compositeGaussLegendre(F&& f, double a, double b, double width) {
  const GaussLegendreRule& rule = gaussLegendre(16);
  const long panels = std::max(1L, static_cast<long>(std::ceil((b - a) / width)));
  const double h = (b - a) / static_cast<double>(panels);
  double sum = 0.0;
  for (long k = 0; k < panels; ++k) {
    const double c = a + (static_cast<double>(k) + 0.5) * h;
    double panel = 0.0;
    for (std::size_t i = 0; i < rule.nodes.size(); ++i) panel += rule.weights[i] * f(c + 0.5 * h * rule.nodes[i]);
    sum += 0.5 * h * panel;
  }
  return sum;
}

/// p (r + e^-r - 1) >= 0, the KL integrand, from lp = log p and lq = log q (r = lp - lq): by the series of
/// r + e^-r - 1 where cancellation would cost digits, else as p (r - 1) + q (no overflow of e^-r where q >> p).
double klIntegrand(double lp, double lq) {
  const double r = lp - lq;
  if (std::abs(r) < 0.05) {
    double term = r * r / 2.0, sum = 0.0;
    for (int m = 2; m <= 9; ++m) {
      sum += term;
      term *= -r / (m + 1);
    }
    return std::exp(lp) * sum;
  }
  return std::exp(lp) * (r - 1.0) + std::exp(lq);
}

/// p (e^{(alpha-1) r} - 1 + (alpha - 1)(e^-r - 1)) >= 0, the integrand of E_alpha - 1, from lp, lq: by the series
/// sum_{m >= 2} (alpha - 1)((alpha - 1)^{m-1} + (-1)^m) r^m / m! where cancellation would cost digits, else as
/// p^alpha q^{1-alpha} - p + (alpha - 1)(q - p), each term formed from its logarithm.
double renyiIntegrand(double lp, double lq, double alpha) {
  const double a1 = alpha - 1.0, r = lp - lq;
  if (std::abs(a1 * r) < 0.05 && std::abs(r) < 0.05) {
    double sum = 0.0, power = r * r / 2.0, a1Power = a1;  // r^m / m!, (alpha - 1)^{m-1}
    for (int m = 2; m <= 12; ++m) {
      sum += a1 * (a1Power + (m % 2 == 0 ? 1.0 : -1.0)) * power;
      power *= r / (m + 1);
      a1Power *= a1;
    }
    return std::exp(lp) * sum;
  }
  return std::exp(lp + a1 * r) - std::exp(lp) + a1 * (std::exp(lq) - std::exp(lp));
}

}  // namespace

double GaussianMixture::density(const Vector& x) const {
  double sum = 0.0;
  for (std::size_t j = 0; j < size(); ++j) sum += weights[j] * component(j).density(x);
  return sum;
}

// ---- (a) cyclic batches, quadratic loss ----

CyclicQuadraticReference::CyclicQuadraticReference(double lambda, std::vector<Vector> batchSums[2],
                                                   CyclicBatches batches, double divisor, double eta, Matrix Sigma,
                                                   Gaussian initial)
    : lambda_(lambda), batches_(std::move(batches)), divisor_(divisor), eta_(eta), Sigma_(std::move(Sigma)),
      initial_(std::move(initial)) {
  for (int s = 0; s < 2; ++s) batchSums_[s] = std::move(batchSums[s]);
}

std::optional<CyclicQuadraticReference> CyclicQuadraticReference::forLosses(
    const EmpiricalLoss& lossD, const EmpiricalLoss& lossDPrime, const CyclicBatches& batches, double divisor,
    double eta, const Matrix& Sigma, const Gaussian& initial) {
  const auto* qa = dynamic_cast<const QuadraticLoss*>(&lossD.loss());
  const auto* qb = dynamic_cast<const QuadraticLoss*>(&lossDPrime.loss());
  if (!qa || !qb || qa->lambda() != qb->lambda() || !lossD.gradientIsExact() || !lossDPrime.gradientIsExact())
    return std::nullopt;
  const std::size_t recordCounts[2] = {lossD.data().size(), lossDPrime.data().size()};
  requireCyclicBatchesWithin(batches, recordCounts, "CyclicQuadraticReference");
  const EmpiricalLoss* losses[2] = {&lossD, &lossDPrime};
  std::vector<Vector> sums[2];
  for (int s = 0; s < 2; ++s)
    for (const auto& batch : batches.batches[s]) {
      Vector sum = Vector::Zero(initial.dim());
      for (std::size_t i : batch) sum += losses[s]->data()[i].x;
      sums[s].push_back(sum);
    }
  return CyclicQuadraticReference(qa->lambda(), sums, batches, divisor, eta, Sigma, initial);
}

Gaussian CyclicQuadraticReference::law(int process, long k) const {
  Iterate& last = last_[process];
  if (last.k < 0 || last.k > k) last = Iterate{0, initial_.mean(), initial_.covariance()};
  Vector& m = last.m;
  Matrix& V = last.V;
  const std::size_t cycle = batches_.cycleLength();
  for (long j = last.k; j < k; ++j) {
    const std::size_t b = static_cast<std::size_t>(j) % cycle;
    const double size = static_cast<double>(batches_.batches[process][b].size());
    const double a = 1.0 - eta_ * lambda_ * size / divisor_;
    m = a * m + (eta_ * lambda_ / divisor_) * batchSums_[process][b];
    V = a * a * V + 2.0 * eta_ * Sigma_;
  }
  last.k = k;
  return Gaussian(m, 0.5 * (V + V.transpose()));
}

// ---- (b) Poisson batches, constant per-example gradients ----

std::optional<std::vector<Vector>> constantPerExampleGradients(const EmpiricalLoss& loss) {
  const auto* expression = dynamic_cast<const ExpressionLoss*>(&loss.loss());
  if (!expression || !expression->gradientIndependentOfTheta()) return std::nullopt;
  std::vector<Vector> g;
  const Vector origin = Vector::Zero(loss.data().dim());
  for (const Record& r : loss.data().records()) g.push_back(loss.perExampleGradient(origin, r));
  return g;
}

PoissonShiftReference::PoissonShiftReference(std::vector<Group> groups[2], double rate, double divisor, double eta,
                                             Matrix Sigma, Gaussian initial)
    : rate_(rate), divisor_(divisor), eta_(eta), Sigma_(std::move(Sigma)), initial_(std::move(initial)) {
  for (int s = 0; s < 2; ++s) groups_[s] = std::move(groups[s]);
}

std::optional<PoissonShiftReference> PoissonShiftReference::forLosses(const EmpiricalLoss& lossD,
                                                                      const EmpiricalLoss& lossDPrime, double rate,
                                                                      double divisor, double eta, const Matrix& Sigma,
                                                                      const Gaussian& initial) {
  if (!(rate > 0 && rate <= 1)) throw std::invalid_argument("PoissonShiftReference: rate not in (0, 1]");
  const auto gD = constantPerExampleGradients(lossD), gDPrime = constantPerExampleGradients(lossDPrime);
  if (!gD || !gDPrime) return std::nullopt;
  std::vector<Group> groups[2];
  const std::vector<Vector>* gradients[2] = {&*gD, &*gDPrime};
  for (int s = 0; s < 2; ++s)
    for (const Vector& g : *gradients[s]) {
      auto same = std::find_if(groups[s].begin(), groups[s].end(), [&](const Group& x) { return x.gradient == g; });
      if (same != groups[s].end()) ++same->records;
      else groups[s].push_back({g, 1});
    }
  return PoissonShiftReference(groups, rate, divisor, eta, Sigma, initial);
}

bool PoissonShiftReference::enumerable(long k) const {
  for (const auto& groups : groups_) {
    double points = 1.0;
    for (const Group& g : groups) points *= static_cast<double>(g.records * k + 1);
    if (points > kMaxLatticePoints) return false;
  }
  return true;
}

GaussianMixture PoissonShiftReference::law(int process, long k) const {
  if (!enumerable(k))
    throw std::invalid_argument("PoissonShiftReference: more than " + std::to_string(kMaxLatticePoints) +
                                " lattice points after " + std::to_string(k) + " steps");
  const std::vector<Group>& groups = groups_[process];
  const int d = initial_.dim();
  std::vector<std::vector<double>> pmf;
  for (const Group& g : groups) pmf.push_back(binomialPmf(g.records * k, rate_));
  // Every combination of group counts c_g: shift -(eta / b) sum_g c_g g_g, weight prod_g pmf_g(c_g).
  std::vector<std::pair<Vector, double>> points;
  std::vector<long> c(groups.size(), 0);
  while (true) {
    double w = 1.0;
    Vector shift = Vector::Zero(d);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      w *= pmf[g][static_cast<std::size_t>(c[g])];
      shift -= (eta_ / divisor_) * static_cast<double>(c[g]) * groups[g].gradient;
    }
    if (w > 0) points.emplace_back(initial_.mean() + shift, w);
    std::size_t g = 0;
    for (; g < groups.size(); ++g) {
      if (++c[g] <= groups[g].records * k) break;
      c[g] = 0;
    }
    if (g == groups.size()) break;
  }
  // Lattice points that coincide (up to rounding, 1e-12 of the components' standard deviation) are one component.
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) {
    return std::lexicographical_compare(a.first.begin(), a.first.end(), b.first.begin(), b.first.end());
  });
  GaussianMixture mix;
  mix.covariance = initial_.covariance() + 2.0 * eta_ * static_cast<double>(k) * Sigma_;
  const double tolerance = 1e-12 * std::sqrt(mix.covariance.diagonal().minCoeff());
  double total = 0.0;
  for (const auto& [mean, w] : points) {
    total += w;
    if (!mix.means.empty() && (mix.means.back() - mean).cwiseAbs().maxCoeff() <= tolerance) {
      const double merged = mix.weights.back() + w;
      mix.means.back() = (mix.weights.back() * mix.means.back() + w * mean) / merged;
      mix.weights.back() = merged;
    } else {
      mix.means.push_back(mean);
      mix.weights.push_back(w);
    }
  }
  for (double& w : mix.weights) w /= total;
  return mix;
}

// ---- divergences between 1-D mixtures ----

void MixturePair1d::Mixture::index() {
  sorted = std::is_sorted(mean.begin(), mean.end());
  topLogWeight = logWeight.empty() ? -kInf : *std::max_element(logWeight.begin(), logWeight.end());
}

MixturePair1d::MixturePair1d(Mixture p, Mixture q, double s) : p_(std::move(p)), q_(std::move(q)), s_(s) {
  p_.index();
  q_.index();
  scan();
}

MixturePair1d::MixturePair1d(const GaussianMixture& p, const GaussianMixture& q) {
  if (p.dim() != 1 || q.dim() != 1 || p.covariance(0, 0) != q.covariance(0, 0) || !(p.covariance(0, 0) > 0))
    throw std::invalid_argument("MixturePair1d: two 1-D mixtures with one positive variance are needed");
  if (p.size() == 0 || q.size() == 0) throw std::invalid_argument("MixturePair1d: an empty mixture");
  s_ = std::sqrt(p.covariance(0, 0));
  const GaussianMixture* from[2] = {&p, &q};
  Mixture* to[2] = {&p_, &q_};
  for (int f = 0; f < 2; ++f)
    for (std::size_t j = 0; j < from[f]->size(); ++j) {
      to[f]->logWeight.push_back(std::log(from[f]->weights[j]));
      to[f]->mean.push_back(from[f]->means[j][0]);
    }
  p_.index();
  q_.index();
  scan();
}

double MixturePair1d::logKernelSum(const Mixture& m, double x) const {
  // logSumExp of the terms, without those below the largest by more than log(2^60 n): together they are below 2^-60
  // of the sum (which is >= 1 after the largest is taken out), so the result moves by less than 2^-60 -- and the
  // exponentials that would underflow (half of a wide mixture's, by exp's slow path) are not taken at all.
  // With the means sorted, only a window of them is looked at: a term at distance d from x is at most
  // topLogWeight - c d^2, so where that is below the nearest mean's term plus the cut it is left out in any case.
  const double c = 0.5 / (s_ * s_);
  const std::size_t n = m.mean.size();
  const double cut = -(60.0 * std::log(2.0) + std::log(static_cast<double>(n)));
  auto term = [&](std::size_t j) { return m.logWeight[j] - c * (x - m.mean[j]) * (x - m.mean[j]); };
  std::size_t from = 0, to = n;
  if (m.sorted && n > 1) {
    const std::size_t near = std::min<std::size_t>(
        static_cast<std::size_t>(std::lower_bound(m.mean.begin(), m.mean.end(), x) - m.mean.begin()), n - 1);
    const double floor = std::max(term(near), near > 0 ? term(near - 1) : -kInf) + cut;
    if (std::isfinite(floor) && m.topLogWeight > floor) {
      const double reach = std::sqrt((m.topLogWeight - floor) / c) * (1.0 + 1e-12);
      from = static_cast<std::size_t>(std::lower_bound(m.mean.begin(), m.mean.end(), x - reach) - m.mean.begin());
      to = static_cast<std::size_t>(std::upper_bound(m.mean.begin(), m.mean.end(), x + reach) - m.mean.begin());
    }
  }
  double top = -kInf;
  for (std::size_t j = from; j < to; ++j) top = std::max(top, term(j));
  if (!std::isfinite(top)) return top;
  double sum = 0.0;
  for (std::size_t j = from; j < to; ++j) {
    const double t = m.logWeight[j] - c * (x - m.mean[j]) * (x - m.mean[j]) - top;
    if (t >= cut) sum += std::exp(t);
  }
  return top + std::log(sum);
}

double MixturePair1d::logRatio(double x) const { return logKernelSum(p_, x) - logKernelSum(q_, x); }

namespace {
struct Extent {
  double lo, hi;
};
Extent extentOf(const std::vector<double>& a, const std::vector<double>& b) {
  const auto [amin, amax] = std::minmax_element(a.begin(), a.end());
  const auto [bmin, bmax] = std::minmax_element(b.begin(), b.end());
  return {std::min(*amin, *bmin), std::max(*amax, *bmax)};
}
}  // namespace

void MixturePair1d::scan() {
  const Extent e = extentOf(p_.mean, q_.mean);
  constexpr double kReach = 14.0, kPerSd = 32.0;
  const double lo = e.lo - kReach * s_, hi = e.hi + kReach * s_;
  const long n = static_cast<long>(std::ceil((hi - lo) / (s_ / kPerSd)));
  gridX_.resize(static_cast<std::size_t>(n) + 1);
  gridR_.resize(gridX_.size());
  for (long i = 0; i <= n; ++i) {
    gridX_[static_cast<std::size_t>(i)] = lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(n);
    gridR_[static_cast<std::size_t>(i)] = logRatio(gridX_[static_cast<std::size_t>(i)]);
  }
}

double MixturePair1d::hockeyStick(double eps) const {
  // A = {r > eps} as intervals: sign changes of r - eps on the grid, bisected.
  auto root = [&](double a, double b, bool insideAtA) {
    while (b - a > 1e-13 * s_) {
      const double mid = 0.5 * (a + b);
      ((logRatio(mid) > eps) == insideAtA ? a : b) = mid;
    }
    return 0.5 * (a + b);
  };
  std::vector<std::pair<double, double>> pieces;
  bool inside = gridR_[0] > eps;
  double start = -kInf;
  for (std::size_t g = 1; g < gridX_.size(); ++g) {
    const bool now = gridR_[g] > eps;
    if (now == inside) continue;
    const double x = root(gridX_[g - 1], gridX_[g], inside);
    if (now) start = x;
    else pieces.emplace_back(start, x);
    inside = now;
  }
  if (inside) pieces.emplace_back(start, kInf);
  auto probability = [&](const Mixture& m, double a, double b) {
    double sum = 0.0;
    for (std::size_t j = 0; j < m.mean.size(); ++j)
      sum += std::exp(m.logWeight[j]) * normalIntervalProbability((a - m.mean[j]) / s_, (b - m.mean[j]) / s_);
    return sum;
  };
  double delta = 0.0;
  for (const auto& [a, b] : pieces) delta += std::max(0.0, probability(p_, a, b) - std::exp(eps) * probability(q_, a, b));
  return delta;
}

namespace {

/// sum_j w_j P(N(mu_j, s^2) outside [L, H]) and sum_j w_j E[(X - H)_+ + (L - X)_+]: the tails' mass and first moment.
struct Tails {
  double mass = 0.0, moment = 0.0;
};
Tails tailsOf(const std::vector<double>& logWeight, const std::vector<double>& mean, double s, double L, double H) {
  Tails t;
  for (std::size_t j = 0; j < mean.size(); ++j) {
    const double w = std::exp(logWeight[j]), zh = (H - mean[j]) / s, zl = (mean[j] - L) / s;
    t.mass += w * (normalUpperTail(zh) + normalUpperTail(zl));
    t.moment += w * s * (normalDensity(zh) + normalDensity(zl));  // E(X - H)_+ <= s phi(z_H), likewise at L
  }
  return t;
}

}  // namespace

QuadratureValue MixturePair1d::kl() const {
  const Extent e = extentOf(p_.mean, q_.mean);
  const double L = e.lo - 14.0 * s_, H = e.hi + 14.0 * s_;
  const double logNorm = std::log(s_ * std::sqrt(2.0 * std::numbers::pi));
  auto integrand = [&](double x) { return klIntegrand(logKernelSum(p_, x) - logNorm, logKernelSum(q_, x) - logNorm); };
  const double fine = compositeGaussLegendre(integrand, L, H, 0.5 * s_);
  const double coarse = compositeGaussLegendre(integrand, L, H, s_);
  // Outside [L, H]: p (r + e^-r - 1) <= p |r| + q, and |r'| <= D / s^2 (r' is a difference of posterior means of the
  // components' centres over s^2), so |r(x)| <= |r(end)| + D |x - end| / s^2.
  const auto [amin, amax] = std::minmax_element(p_.mean.begin(), p_.mean.end());
  const auto [bmin, bmax] = std::minmax_element(q_.mean.begin(), q_.mean.end());
  const double D = std::max(std::abs(*amax - *bmin), std::abs(*amin - *bmax));
  const Tails tp = tailsOf(p_.logWeight, p_.mean, s_, L, H), tq = tailsOf(q_.logWeight, q_.mean, s_, L, H);
  const double rEnd = std::max(std::abs(logRatio(L)), std::abs(logRatio(H)));
  const double tail = rEnd * tp.mass + D / (s_ * s_) * tp.moment + tq.mass;
  return {fine, std::abs(fine - coarse) + tail};
}

QuadratureValue MixturePair1d::renyi(double alpha) const {
  if (!(alpha > 1)) throw std::invalid_argument("MixturePair1d::renyi: alpha must be > 1");
  const auto [amin, amax] = std::minmax_element(p_.mean.begin(), p_.mean.end());
  const auto [bmin, bmax] = std::minmax_element(q_.mean.begin(), q_.mean.end());
  const Extent e = extentOf(p_.mean, q_.mean);
  // Centres of p^alpha q^{1-alpha}'s terms: alpha a_j - (alpha - 1) b_l.
  const double lo = std::min(e.lo, alpha * *amin - (alpha - 1.0) * *bmax);
  const double hi = std::max(e.hi, alpha * *amax - (alpha - 1.0) * *bmin);
  const double logNorm = std::log(s_ * std::sqrt(2.0 * std::numbers::pi));
  // log of the tails' bound beyond [L, H] of int p^alpha q^{1-alpha} (Jensen and q >= v_l N(b_l), see the header).
  auto logTailBound = [&](double L, double H) {
    // For each j the smallest bound over l. With q's means sorted, l runs outward from the mean nearest a_j and stops
    // on each side where no farther l can give a smaller bound: each term is at least (1 - alpha) max log v +
    // alpha (alpha - 1) gap^2 / (2 s^2) + log of the smallest tail mass (at the centre of [L, H]), and that lower
    // bound grows with the gap. The minimum found is the same number as over every l.
    const double minLogMass = std::log(2.0 * normalUpperTail((H - L) / (2.0 * s_))) - 1.0;  // 1: rounding's margin
    const double curvature = alpha * (alpha - 1.0) / (2.0 * s_ * s_), floorWeight = (1.0 - alpha) * q_.topLogWeight;
    const bool prune = q_.sorted && std::isfinite(minLogMass) && std::isfinite(floorWeight);
    auto bound = [&](std::size_t j, std::size_t l) {
      const double c = alpha * p_.mean[j] - (alpha - 1.0) * q_.mean[l], gap = p_.mean[j] - q_.mean[l];
      const double mass = normalUpperTail((H - c) / s_) + normalUpperTail((c - L) / s_);
      return (1.0 - alpha) * q_.logWeight[l] + alpha * (alpha - 1.0) * gap * gap / (2.0 * s_ * s_) + std::log(mass);
    };
    std::vector<double> perJ;
    for (std::size_t j = 0; j < p_.mean.size(); ++j) {
      double best = kInf;
      if (!prune) {
        for (std::size_t l = 0; l < q_.mean.size(); ++l) best = std::min(best, bound(j, l));
      } else {
        const auto nl = static_cast<std::ptrdiff_t>(q_.mean.size());
        const std::ptrdiff_t start = std::lower_bound(q_.mean.begin(), q_.mean.end(), p_.mean[j]) - q_.mean.begin();
        auto hopeless = [&](std::ptrdiff_t l) {
          const double gap = p_.mean[j] - q_.mean[static_cast<std::size_t>(l)];
          return floorWeight + curvature * gap * gap + minLogMass > best;
        };
        for (std::ptrdiff_t l = start; l < nl && !hopeless(l); ++l) best = std::min(best, bound(j, static_cast<std::size_t>(l)));
        for (std::ptrdiff_t l = start - 1; l >= 0 && !hopeless(l); --l)
          best = std::min(best, bound(j, static_cast<std::size_t>(l)));
      }
      perJ.push_back(p_.logWeight[j] + best);
    }
    return logSumExp(perJ);
  };
  auto logIntegrand = [&](double x) {
    const double lp = logKernelSum(p_, x) - logNorm;
    return lp + (alpha - 1.0) * (lp - (logKernelSum(q_, x) - logNorm));
  };
  double reach = 14.0, L = lo - reach * s_, H = hi + reach * s_;
  // E_alpha >= 1: a tail bound below 1e-15 is below 1e-15 E_alpha.
  double logTail = logTailBound(L, H);
  for (int widen = 0; widen < 6 && logTail > std::log(1e-15); ++widen) {
    reach += 8.0;
    L = lo - reach * s_;
    H = hi + reach * s_;
    logTail = logTailBound(L, H);
  }
  const double tailE = std::exp(logTail);
  // Beside the tails of E_alpha, those of the kernel's other terms: p and (alpha - 1) (p + q) outside [L, H].
  const Tails tp = tailsOf(p_.logWeight, p_.mean, s_, L, H), tq = tailsOf(q_.logWeight, q_.mean, s_, L, H);
  const double tail = tailE + tp.mass + (alpha - 1.0) * (tp.mass + tq.mass);
  // The largest log-integrand on the grid decides between E_alpha - 1 in linear form and log E_alpha in log form.
  double peak = -kInf;
  for (double x = L; x <= H; x += 0.25 * s_) peak = std::max(peak, logIntegrand(x));
  if (peak < 600.0) {
    auto integrand = [&](double x) {
      return renyiIntegrand(logKernelSum(p_, x) - logNorm, logKernelSum(q_, x) - logNorm, alpha);
    };
    const double fine = compositeGaussLegendre(integrand, L, H, 0.5 * s_);
    const double coarse = compositeGaussLegendre(integrand, L, H, s_);
    const double err = std::abs(fine - coarse) + tail;
    return {std::log1p(fine) / (alpha - 1.0), err / (1.0 + fine) / (alpha - 1.0)};
  }
  // E_alpha beyond double range: the sum of the scaled terms exp(log-integrand - peak).
  auto logIntegral = [&](double width) {
    return peak + std::log(compositeGaussLegendre([&](double x) { return std::exp(logIntegrand(x) - peak); }, L, H,
                                                  width));
  };
  const double fine = logIntegral(0.5 * s_), coarse = logIntegral(s_);
  return {fine / (alpha - 1.0), (std::abs(fine - coarse) + tail * std::exp(-fine)) / (alpha - 1.0)};
}

double mixtureExactEpsilon(const MixturePair1d& pair, double delta) {
  if (!(delta > 0 && delta < 1)) throw std::invalid_argument("mixtureExactEpsilon: delta must be in (0, 1)");
  const MixturePair1d reverse = pair.reversed();
  return std::max(smallestEpsilon([&](double eps) { return pair.hockeyStick(eps); }, delta),
                  smallestEpsilon([&](double eps) { return reverse.hockeyStick(eps); }, delta));
}

}  // namespace fpdp::models
