// Gaussian laws in R^d: density, exact cell averages on boxes (the initial condition of the finite-volume solver and
// the reference density of the quadratic-loss tests), and the closed forms of MATH.md §6 used as oracles:
// Rényi divergence and KL between Gaussians, and the Ornstein–Uhlenbeck law (the exact Langevin density for the
// quadratic loss, MATH.md §2.3 and §5 item 7).
//
// Divergences between nearby laws can be 1e-8 or smaller (MATH.md §3), and cell averages far in the tails feed
// log-density ratios, so every formula here is arranged to keep relative accuracy: interval probabilities by erfc
// in the tails, divergences through the eigenvalues of S2^{-1/2} S1 S2^{-1/2} with log1p.
#include "models/Gaussian.hpp"

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace fpdp::models {

namespace {

constexpr int kMaxGaussPoints = 16;

GaussLegendreRule computeGaussLegendre(int n) {
  GaussLegendreRule rule{std::vector<double>(n), std::vector<double>(n)};
  for (int i = 0; i < (n + 1) / 2; ++i) {
    // Newton on P_n from the Tricomi approximation of the i-th largest root.
    double x = std::cos(std::numbers::pi * (i + 0.75) / (n + 0.5));
    double derivative = 1;
    for (int iteration = 0; iteration < 100; ++iteration) {
      double pPrev = 1, p = x;  // P_0, P_1
      for (int j = 2; j <= n; ++j) {
        const double pNext = ((2 * j - 1) * x * p - (j - 1) * pPrev) / j;
        pPrev = p;
        p = pNext;
      }
      derivative = n * (x * p - pPrev) / (x * x - 1);
      const double step = p / derivative;
      x -= step;
      if (std::abs(step) < 1e-16) break;
    }
    rule.nodes[i] = x;
    rule.nodes[n - 1 - i] = -x;
    rule.weights[i] = rule.weights[n - 1 - i] = 2 / ((1 - x * x) * derivative * derivative);
  }
  return rule;
}

}  // namespace

const GaussLegendreRule& gaussLegendre(int n) {
  static const std::vector<GaussLegendreRule> rules = [] {
    std::vector<GaussLegendreRule> r(kMaxGaussPoints + 1);
    for (int k = 1; k <= kMaxGaussPoints; ++k) r[k] = computeGaussLegendre(k);
    return r;
  }();
  return rules.at(static_cast<std::size_t>(n));
}

namespace {

// Phi(b) - Phi(a) for the standard normal, a <= b, to relative round-off wherever the interval lies. `width` is
// b - a computed by the caller from the unstandardised end points ((hi - lo)/sd): for a narrow cell far out,
// subtracting the standardised ends would already lose the digits the Gauss–Legendre branch keeps.
// - Narrow intervals (the log-density varies by at most ~1 across them): the erfc difference would cancel, while a
//   10-point Gauss–Legendre rule on the density itself is exact to round-off (the integrand is a near-constant
//   exponential of a quadratic, whose Taylor terms beyond degree 19 are below 1e-20).
// - Otherwise both ends on one side of 0: difference of the upper-tail probabilities erfc, which are themselves
//   accurate far out; the smaller is then at most ~0.6 times the larger, so about a bit is lost.
// - Interval straddling 0: sum of two positive erf terms, no cancellation.
double standardNormalProbability(double a, double b, double width) {
  if (!(width > 0)) return 0;
  const double farthest = std::max(std::abs(a), std::abs(b));
  if (width * (1 + farthest) <= 1) {
    const GaussLegendreRule& rule = gaussLegendre(10);
    const double half = 0.5 * width, mid = a + half;
    double sum = 0;
    for (std::size_t i = 0; i < rule.nodes.size(); ++i) {
      const double z = mid + half * rule.nodes[i];
      sum += rule.weights[i] * std::exp(-0.5 * z * z);
    }
    return sum * half / std::sqrt(2 * std::numbers::pi);
  }
  const double invSqrt2 = 1 / std::numbers::sqrt2;
  if (a >= 0) return 0.5 * (std::erfc(a * invSqrt2) - std::erfc(b * invSqrt2));
  if (b <= 0) return 0.5 * (std::erfc(-b * invSqrt2) - std::erfc(-a * invSqrt2));
  return 0.5 * (std::erf(b * invSqrt2) - std::erf(a * invSqrt2));
}

bool isSymmetric(const Matrix& m) {
  if (m.rows() != m.cols()) return false;
  const double scale = m.cwiseAbs().maxCoeff();
  return (m - m.transpose()).cwiseAbs().maxCoeff() <= 1e-12 * scale;
}

void requireSquare(const Matrix& m, Eigen::Index d, const std::string& what) {
  if (m.rows() != d || m.cols() != d) {
    throw std::invalid_argument(what + " must be " + std::to_string(d) + "x" + std::to_string(d) + ", got " +
                                std::to_string(m.rows()) + "x" + std::to_string(m.cols()));
  }
  if (!m.allFinite()) throw std::invalid_argument(what + " has non-finite entries");
  if (!isSymmetric(m)) throw std::invalid_argument(what + " is not symmetric");
}

// Cholesky factor of a covariance, which must be positive definite.
Eigen::LLT<Matrix> choleskyOfCovariance(const Matrix& s, Eigen::Index d, const std::string& what) {
  requireSquare(s, d, what);
  Eigen::LLT<Matrix> llt(s);
  if (llt.info() != Eigen::Success) throw std::invalid_argument(what + " is not positive definite");
  return llt;
}

// Marginal standard deviations beyond which boxProbability's outer integral has no representable mass.
constexpr double kOuterReach = 40.0;

// Splits [lo, hi] into panels on which a Gauss–Legendre rule integrates a Gaussian-like integrand to round-off:
// a panel is accepted when width * gradientBound(panel) <= 2 and width^2 * curvature <= 1, i.e. on the panel
// mapped to [-1, 1] the log-integrand is t -> c t + q t^2 + ... with |c| <= 1 and |q| <= 1/8. The 8-point rule's
// error on such an exponential, 2^17 (8!)^4 / (17 (16!)^3) * max|f^(16)|, is then below 1e-16 relative.
template <class GradientBound>
void appendPanels(double lo, double hi, const GradientBound& gradientBound, double curvature,
                  std::vector<std::pair<double, double>>& panels) {
  const double width = hi - lo;
  if (width <= 0) return;
  if (width * gradientBound(lo, hi) <= 2 && width * width * curvature <= 1) {
    panels.emplace_back(lo, hi);
    return;
  }
  const double mid = 0.5 * (lo + hi);
  appendPanels(lo, mid, gradientBound, curvature, panels);
  appendPanels(mid, hi, gradientBound, curvature, panels);
}

// A Gaussian in d = 2 or 3 dimensions written as x = (u, v), v the coordinate `conditionalAxis` and u the k = d - 1
// others in increasing order (every array here is in that order). Then
//   u ~ N(mu_u, C_uu),  v | u ~ N(m(u), s^2),  m(u) = mu_v + beta^T (u - mu_u),  beta = C_uu^{-1} c_uv,
//   s^2 = c_vv - c_uv^T beta (the Schur complement), so
//   P(box) = int_{box_u} N(u; mu_u, C_uu) [Phi((hi_v - m(u))/s) - Phi((lo_v - m(u))/s)] du:
// the inner integral is exact, the outer one tensor Gauss–Legendre on panels.
struct ConditionalSplit {
  int d, k;
  std::array<int, 3> order{0, 1, 2};  // order[j]: the original axis of coordinate j
  Vector mean;
  Matrix covInv;  // C^{-1} permuted
  Matrix precisionUU;
  Vector beta;
  double s, logNormU;

  ConditionalSplit(const Vector& mean0, const Matrix& cov0, const Matrix& covInv0, int conditionalAxis)
      : d(static_cast<int>(mean0.size())), k(d - 1), mean(d), covInv(d, d) {
    for (int j = 0, o = 0; j < d; ++j)
      if (j != conditionalAxis) order[o++] = j;
    order[k] = conditionalAxis;
    Matrix cov(d, d);
    for (int a = 0; a < d; ++a) {
      mean[a] = mean0[order[a]];
      for (int b = 0; b < d; ++b) {
        cov(a, b) = cov0(order[a], order[b]);
        covInv(a, b) = covInv0(order[a], order[b]);
      }
    }
    const Matrix covUU = cov.topLeftCorner(k, k);
    const Vector covUV = cov.topRightCorner(k, 1);
    const Eigen::LLT<Matrix> lltUU(covUU);
    beta = lltUU.solve(covUV);
    s = std::sqrt(cov(k, k) - covUV.dot(beta));
    if (!(s > 0) || !std::isfinite(s)) {
      throw std::domain_error("Gaussian::boxProbability: covariance too close to singular (conditional variance " +
                              std::to_string(s * s) + ")");
    }
    precisionUU = lltUU.solve(Matrix::Identity(k, k));
    logNormU = -0.5 * (k * std::log(2 * std::numbers::pi) + 2 * lltUU.matrixLLT().diagonal().array().log().sum());
  }

  // Bound on |d/du_i log g| over the box whose x - mu has the given centre and half widths, outer axis i restricted
  // to [a, b] and v to [loV, hiV], g the integrand above. The panels of appendPanels use it: a Gauss–Legendre rule
  // then integrates g to round-off in relative terms. Two bounds, the smaller is used:
  //  - d/du_i log g = E[d/du_i log N(u, v) | u, v in [lo_v, hi_v]] = -E[(C^{-1}(x - mu))_i], at most the largest
  //    |(C^{-1}(x - mu))_i| over the box (tight for a small cell, where the v-range is short);
  //  - d/du_i log N(u; mu_u, C_uu) = -(C_uu^{-1}(u - mu_u))_i plus d/du_i log[Phi(z_b) - Phi(z_a)] =
  //    (beta_i/s) E[Z | z_a < Z < z_b]; that conditional mean lies in [z_a, z_b] and has size at most 1 when the
  //    interval contains 0 (Mills ratio: <= z + 1 beyond z >= 0), so the second term is at most
  //    (|beta_i|/s)(1 + dist(m(u), [lo_v, hi_v])/s) (tight for a long v-range, e.g. a whole domain).
  // The curvature of log g is at most (C_uu^{-1})_ii + beta_i^2/s^2 = (C^{-1})_ii. The bounds are local to the box,
  // so a cell far in the tails gets panels on its own scale; an ordinary mesh cell is a single panel. Restricting
  // the box never raises either bound, so any refinement of accepted panels is accepted too.
  double gradientBound(int i, double a, double b, const std::array<double, 3>& centre,
                       const std::array<double, 3>& halfWidth, double loV, double hiV) const {
    // max over the box (axis i restricted to [a, b]) of |row . (x - mu)| = |row . centre| + |row| . halfWidth.
    const auto boxCentre = [&](int j) { return j == i ? 0.5 * (a + b) - mean[i] : centre[j]; };
    const auto boxHalf = [&](int j) { return j == i ? 0.5 * (b - a) : halfWidth[j]; };
    double jointCentre = 0, jointSpread = 0, marginalCentre = 0, marginalSpread = 0;
    double mCentre = mean[k], mSpread = 0;  // range of the conditional mean m(u)
    for (int j = 0; j < d; ++j) {
      jointCentre += covInv(i, j) * boxCentre(j);
      jointSpread += std::abs(covInv(i, j)) * boxHalf(j);
      if (j == k) continue;
      marginalCentre += precisionUU(i, j) * boxCentre(j);
      marginalSpread += std::abs(precisionUU(i, j)) * boxHalf(j);
      mCentre += beta[j] * boxCentre(j);
      mSpread += std::abs(beta[j]) * boxHalf(j);
    }
    const double joint = std::abs(jointCentre) + jointSpread;
    const double distance = std::max({0.0, loV - (mCentre - mSpread), (mCentre + mSpread) - hiV});
    const double split = std::abs(marginalCentre) + marginalSpread + std::abs(beta[i]) / s * (1 + distance / s);
    return std::min(joint, split);
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Gaussian

Gaussian::Gaussian(Vector mean, Matrix covariance) : mean_(std::move(mean)), cov_(std::move(covariance)) {
  const Eigen::Index d = mean_.size();
  if (d == 0) throw std::invalid_argument("Gaussian: empty mean");
  if (!mean_.allFinite()) throw std::invalid_argument("Gaussian: the mean has non-finite entries");
  requireSquare(cov_, d, "Gaussian: covariance");
  cov_ = 0.5 * (cov_ + cov_.transpose());  // remove round-off asymmetry so that both triangles agree
  Eigen::LLT<Matrix> llt(cov_);
  if (llt.info() != Eigen::Success) throw std::invalid_argument("Gaussian: covariance is not positive definite");
  covInv_ = llt.solve(Matrix::Identity(d, d));
  const double logDet = 2 * llt.matrixLLT().diagonal().array().log().sum();
  logNorm_ = -0.5 * (static_cast<double>(d) * std::log(2 * std::numbers::pi) + logDet);
  diagonal_ = (cov_ - Matrix(cov_.diagonal().asDiagonal())).cwiseAbs().maxCoeff() == 0;
}

double Gaussian::density(const Vector& x) const {
  if (x.size() != mean_.size()) {
    throw std::invalid_argument("Gaussian::density: point of dimension " + std::to_string(x.size()) +
                                ", law of dimension " + std::to_string(mean_.size()));
  }
  const Vector dx = x - mean_;
  return std::exp(logNorm_ - 0.5 * dx.dot(covInv_ * dx));
}

double Gaussian::axisProbability(int axis, double lo, double hi) const {
  const double sd = std::sqrt(cov_(axis, axis));
  return standardNormalProbability((lo - mean_[axis]) / sd, (hi - mean_[axis]) / sd, (hi - lo) / sd);
}

TensorCellAverages::TensorCellAverages(const Gaussian& g, std::array<std::vector<double>, 3> faces,
                                       std::array<int, 3> start, std::array<int, 3> count, double probabilityFloor)
    : g_(g), faces_(std::move(faces)), start_(start), count_(count), probabilityFloor_(probabilityFloor) {
  if (!g.isDiagonal()) return;
  for (int a = 0; a < g.dim(); ++a) {
    const auto axis = static_cast<std::size_t>(a);
    const auto& f = faces_[axis];
    for (int i = start[axis]; i < start[axis] + count[axis]; ++i) {
      const double lo = f[static_cast<std::size_t>(i)], hi = f[static_cast<std::size_t>(i) + 1];
      if (!(lo < hi)) throw std::invalid_argument("TensorCellAverages: empty cell (lo >= hi on an axis)");
      axisProbability_[axis].push_back(g.axisProbability(a, lo, hi));
    }
  }
}

double TensorCellAverages::operator()(int i, int j, int k) const {
  const std::array<int, 3> c{i, j, k};
  const int d = g_.dim();
  if (!g_.isDiagonal()) {
    if (lineIndex_ != std::array<int, 2>{j, k}) {
      std::array<double, 3> lo{0, 0, 0}, hi{0, 0, 0};
      double crossSection = 1;
      for (int a = 1; a < d; ++a) {
        lo[a] = faces_[a][static_cast<std::size_t>(c[a])];
        hi[a] = faces_[a][static_cast<std::size_t>(c[a]) + 1];
        if (!(lo[a] < hi[a])) throw std::invalid_argument("TensorCellAverages: empty cell (lo >= hi on an axis)");
        crossSection *= hi[a] - lo[a];
      }
      const auto first = static_cast<std::size_t>(start_[0]), n = static_cast<std::size_t>(count_[0]);
      const std::span<const double> lineFaces(faces_[0].data() + first, n + 1);
      line_.resize(n);
      g_.lineBoxProbabilities(0, lineFaces, lo, hi, line_, 8, probabilityFloor_);
      for (std::size_t m = 0; m < n; ++m) line_[m] /= crossSection * (lineFaces[m + 1] - lineFaces[m]);
      lineIndex_ = {j, k};
    }
    return line_[static_cast<std::size_t>(i - start_[0])];
  }
  // As boxProbability / volume: the product of the axis probabilities, then divided by the product of the widths.
  double probability = 1, volume = 1;
  for (int a = 0; a < d; ++a) {
    probability *= axisProbability_[a][static_cast<std::size_t>(c[a] - start_[a])];
    volume *= faces_[a][static_cast<std::size_t>(c[a]) + 1] - faces_[a][static_cast<std::size_t>(c[a])];
  }
  return probability / volume;
}

double Gaussian::cellAverage(const std::array<double, 3>& lo, const std::array<double, 3>& hi, int gaussPoints) const {
  double volume = 1;
  for (int i = 0; i < std::min(dim(), 3); ++i) {
    if (!(lo[i] < hi[i])) throw std::invalid_argument("Gaussian::cellAverage: empty cell (lo >= hi on an axis)");
    volume *= hi[i] - lo[i];
  }
  return boxProbability(lo, hi, gaussPoints) / volume;
}

double Gaussian::boxProbability(const std::array<double, 3>& lo, const std::array<double, 3>& hi,
                                int gaussPoints) const {
  const int d = dim();
  if (d > 3) throw std::invalid_argument("Gaussian::boxProbability: supports dimensions 1 to 3, got " + std::to_string(d));
  if (gaussPoints < 1 || gaussPoints > kMaxGaussPoints) {
    throw std::invalid_argument("Gaussian::boxProbability: gaussPoints must be in 1.." +
                                std::to_string(kMaxGaussPoints) + ", got " + std::to_string(gaussPoints));
  }
  for (int i = 0; i < d; ++i) {
    if (!std::isfinite(lo[i]) || !std::isfinite(hi[i]) || lo[i] > hi[i]) {
      throw std::invalid_argument("Gaussian::boxProbability: box bounds must be finite with lo <= hi");
    }
  }

  if (diagonal_) {
    // Independent coordinates: the probability factorises over the axes.
    double probability = 1;
    for (int i = 0; i < d; ++i) probability *= axisProbability(i, lo[i], hi[i]);
    return probability;
  }

  // Full covariance, d = 2 or 3: the last coordinate integrated exactly given the others (ConditionalSplit).
  const ConditionalSplit split(mean_, cov_, covInv_, d - 1);
  const int k = split.k;
  std::array<double, 3> centre{0, 0, 0}, halfWidth{0, 0, 0};  // of x - mu
  for (int j = 0; j < d; ++j) {
    centre[j] = 0.5 * (lo[j] + hi[j]) - mean_[j];
    halfWidth[j] = 0.5 * (hi[j] - lo[j]);
  }
  const GaussLegendreRule& rule = gaussLegendre(gaussPoints);
  std::vector<std::vector<std::pair<double, double>>> nodes(static_cast<std::size_t>(k));  // (u_i, weight)
  for (int i = 0; i < k; ++i) {
    const auto gradientBound = [&](double a, double b) {
      return split.gradientBound(i, a, b, centre, halfWidth, lo[k], hi[k]);
    };
    // Only where u_i has representable mass: beyond kOuterReach marginal standard deviations its tail, Phi(-40) =
    // 3.7e-350, underflows. The panels resolve the integrand's slope, which grows with the distance: a box reaching
    // 5000 standard deviations out (truncatedInitialMass on a mesh from -5000) took 10^7 panels, 3.4 GB and minutes.
    const double reach = kOuterReach * std::sqrt(cov_(i, i));
    const double a = std::max(lo[i], mean_[i] - reach), b = std::min(hi[i], mean_[i] + reach);
    if (!(a < b)) return 0.0;
    std::vector<std::pair<double, double>> panels;
    appendPanels(a, b, gradientBound, split.covInv(i, i), panels);
    for (const auto& [a, b] : panels) {
      const double mid = 0.5 * (a + b), half = 0.5 * (b - a);
      for (int q = 0; q < gaussPoints; ++q) nodes[i].emplace_back(mid + half * rule.nodes[q], half * rule.weights[q]);
    }
  }
  const Matrix& precisionUU = split.precisionUU;
  const Vector& beta = split.beta;
  const double s = split.s, logNormU = split.logNormU;

  // g at a node, written out for k <= 2 because the 3-D case evaluates it on every node of a 2-D tensor grid.
  const double p00 = precisionUU(0, 0), p01 = k == 2 ? precisionUU(0, 1) : 0, p11 = k == 2 ? precisionUU(1, 1) : 0;
  const double beta0 = beta[0], beta1 = k == 2 ? beta[1] : 0;
  const double standardWidthV = (hi[k] - lo[k]) / s;
  const auto integrand = [&](double du0, double du1) {
    const double quadratic = p00 * du0 * du0 + 2 * p01 * du0 * du1 + p11 * du1 * du1;
    const double conditionalMean = mean_[k] + beta0 * du0 + beta1 * du1;
    return std::exp(logNormU - 0.5 * quadratic) *
           standardNormalProbability((lo[k] - conditionalMean) / s, (hi[k] - conditionalMean) / s, standardWidthV);
  };

  double probability = 0;
  if (k == 1) {
    for (const auto& [x0, w0] : nodes[0]) probability += w0 * integrand(x0 - mean_[0], 0);
  } else {
    for (const auto& [x0, w0] : nodes[0]) {
      double inner = 0;
      for (const auto& [x1, w1] : nodes[1]) inner += w1 * integrand(x0 - mean_[0], x1 - mean_[1]);
      probability += w0 * inner;
    }
  }
  return probability;
}

namespace {

// Below this standardised width (cell width over the conditional standard deviation) a cell's conditional interval
// probability is left to standardNormalProbability; from it on, the difference of two face tail probabilities
// T(z) = P(Z beyond z on z's side) = erfc(|z|/sqrt 2)/2, each accurate to a few ulp, is as accurate as that:
//  - both faces on one side, 0 <= a < b = a + w: Q is log-concave with -(log Q)'(a) = phi(a)/Q(a) >= phi(0)/Q(0) =
//    sqrt(2/pi), so Q(b)/Q(a) <= exp(-0.798 w) and the difference loses at most a factor 1/(1 - exp(-0.798 w)) <= 26
//    in relative accuracy (w >= 0.05): ~1e-14;
//  - straddling 0: 1 - T(a) - T(b) >= Phi(w) - Phi(0) >= 0.0195 carries an absolute round-off of a few ulp: ~1e-14.
constexpr double kMinFaceWidth = 0.05;

}  // namespace

void Gaussian::lineBoxProbabilities(int axis, std::span<const double> faces, const std::array<double, 3>& lo,
                                    const std::array<double, 3>& hi, std::span<double> out, int gaussPoints,
                                    double floor) const {
  const int d = dim();
  if (axis < 0 || axis >= d) throw std::invalid_argument("Gaussian::lineBoxProbabilities: axis out of range");
  if (faces.size() < 2 || out.size() != faces.size() - 1) {
    throw std::invalid_argument("Gaussian::lineBoxProbabilities: need n + 1 >= 2 faces and n outputs");
  }
  for (std::size_t m = 0; m + 1 < faces.size(); ++m) {
    if (!std::isfinite(faces[m]) || !std::isfinite(faces[m + 1]) || !(faces[m] < faces[m + 1])) {
      throw std::invalid_argument("Gaussian::lineBoxProbabilities: faces must be finite and increasing");
    }
  }
  const std::size_t n = faces.size() - 1;
  if (diagonal_ || d > 3) {  // nothing to share: one box at a time (boxProbability checks d and the bounds)
    std::array<double, 3> cellLo = lo, cellHi = hi;
    for (std::size_t m = 0; m < n; ++m) {
      cellLo[axis] = faces[m];
      cellHi[axis] = faces[m + 1];
      out[m] = boxProbability(cellLo, cellHi, gaussPoints);
    }
    return;
  }
  if (gaussPoints < 1 || gaussPoints > kMaxGaussPoints) {
    throw std::invalid_argument("Gaussian::lineBoxProbabilities: gaussPoints must be in 1.." +
                                std::to_string(kMaxGaussPoints) + ", got " + std::to_string(gaussPoints));
  }
  // The line's axis is the exactly integrated coordinate v: the outer nodes (and the Gaussian factor and conditional
  // mean at them) are then the same for every cell of the line, and adjacent cells share their faces' tail values.
  const ConditionalSplit split(mean_, cov_, covInv_, axis);
  const int k = split.k;
  std::array<double, 3> uLo{0, 0, 0}, uHi{0, 0, 0}, centre{0, 0, 0}, halfWidth{0, 0, 0};
  for (int i = 0; i < k; ++i) {
    uLo[i] = lo[split.order[i]];
    uHi[i] = hi[split.order[i]];
    if (!std::isfinite(uLo[i]) || !std::isfinite(uHi[i]) || !(uLo[i] < uHi[i])) {
      throw std::invalid_argument("Gaussian::lineBoxProbabilities: box bounds must be finite with lo < hi");
    }
    // As boxProbability: only where u_i has representable mass (a line of cells 5000 standard deviations out took
    // 2^17 panels per cell).
    const double reach = kOuterReach * std::sqrt(cov_(split.order[i], split.order[i]));
    uLo[i] = std::max(uLo[i], split.mean[i] - reach);
    uHi[i] = std::min(uHi[i], split.mean[i] + reach);
    if (!(uLo[i] < uHi[i])) {
      std::fill(out.begin(), out.end(), 0.0);
      return;
    }
    centre[i] = 0.5 * (uLo[i] + uHi[i]) - split.mean[i];
    halfWidth[i] = 0.5 * (uHi[i] - uLo[i]);
  }
  // Below the floor: the density's largest value on the box is at most exp(logNorm - lambda_min(C^-1) dist^2 / 2),
  // dist the box's distance to the mean; the box gets half of that bound times its volume.
  std::vector<char> belowFloor(n, 0);
  if (floor > 0.0) {
    const double precisionMin = 1.0 / Eigen::SelfAdjointEigenSolver<Matrix>(cov_).eigenvalues().maxCoeff();
    double crossDistance2 = 0.0, crossVolume = 1.0;
    for (int a = 0; a < d; ++a) {
      if (a == axis) continue;
      const double gap = std::max({0.0, lo[a] - mean_[a], mean_[a] - hi[a]});
      crossDistance2 += gap * gap;
      crossVolume *= hi[a] - lo[a];
    }
    for (std::size_t m = 0; m < n; ++m) {
      const double gap = std::max({0.0, faces[m] - mean_[axis], mean_[axis] - faces[m + 1]});
      const double bound =
          std::exp(logNorm_ - 0.5 * precisionMin * (crossDistance2 + gap * gap)) * crossVolume * (faces[m + 1] - faces[m]);
      if (bound <= floor) {
        belowFloor[m] = 1;
        out[m] = 0.5 * bound;
      }
    }
  }
  // Each cell's panels (as boxProbability's), reduced to a dyadic depth per outer axis: the uniform panels of that
  // depth refine the cell's own, so they are accepted too (ConditionalSplit::gradientBound). Cells of equal depths
  // share one set of nodes.
  std::vector<std::array<int, 2>> depth(n, std::array<int, 2>{0, 0});
  std::vector<std::pair<double, double>> panels;
  for (std::size_t m = 0; m < n; ++m) {
    if (belowFloor[m]) continue;
    centre[k] = 0.5 * (faces[m] + faces[m + 1]) - split.mean[k];
    halfWidth[k] = 0.5 * (faces[m + 1] - faces[m]);
    for (int i = 0; i < k; ++i) {
      panels.clear();
      const auto bound = [&](double a, double b) {
        return split.gradientBound(i, a, b, centre, halfWidth, faces[m], faces[m + 1]);
      };
      appendPanels(uLo[i], uHi[i], bound, split.covInv(i, i), panels);
      for (const auto& [a, b] : panels)
        depth[m][i] = std::max(depth[m][i], static_cast<int>(std::lround(std::log2((uHi[i] - uLo[i]) / (b - a)))));
    }
  }
  std::vector<std::array<int, 2>> levels;
  for (std::size_t m = 0; m < n; ++m)
    if (!belowFloor[m]) levels.push_back(depth[m]);
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());

  const GaussLegendreRule& rule = gaussLegendre(gaussPoints);
  const double p00 = split.precisionUU(0, 0), p01 = k == 2 ? split.precisionUU(0, 1) : 0;
  const double p11 = k == 2 ? split.precisionUU(1, 1) : 0;
  const double beta0 = split.beta[0], beta1 = k == 2 ? split.beta[1] : 0, s = split.s;
  const double invSqrt2 = 1 / std::numbers::sqrt2;
  std::vector<double> tail(n + 1);
  std::vector<long> tailNode(n + 1, -1);  // the node at which tail[f] was computed
  long node = 0;
  for (std::size_t m = 0; m < n; ++m)
    if (!belowFloor[m]) out[m] = 0.0;
  std::array<std::vector<std::pair<double, double>>, 2> nodes;  // per outer axis: (u_i - mu_i, weight)
  std::vector<std::size_t> cells;
  for (const auto& level : levels) {
    cells.clear();
    for (std::size_t m = 0; m < n; ++m)
      if (depth[m] == level && !belowFloor[m]) cells.push_back(m);
    for (int i = 0; i < 2; ++i) {
      nodes[i].clear();
      if (i >= k) {
        nodes[i].emplace_back(0.0, 1.0);
        continue;
      }
      const int count = 1 << level[i];
      const double width = (uHi[i] - uLo[i]) / count, half = 0.5 * width;
      for (int p = 0; p < count; ++p) {
        const double mid = uLo[i] + (p + 0.5) * width - split.mean[i];
        for (int q = 0; q < gaussPoints; ++q) nodes[i].emplace_back(mid + half * rule.nodes[q], half * rule.weights[q]);
      }
    }
    for (const auto& [du0, w0] : nodes[0]) {
      for (const auto& [du1, w1] : nodes[1]) {
        ++node;
        const double quadratic = p00 * du0 * du0 + 2 * p01 * du0 * du1 + p11 * du1 * du1;
        const double weight = w0 * w1 * std::exp(split.logNormU - 0.5 * quadratic);
        const double conditionalMean = split.mean[k] + beta0 * du0 + beta1 * du1;
        const auto faceTail = [&](std::size_t f, double z) {
          if (tailNode[f] != node) {
            tail[f] = 0.5 * std::erfc(std::abs(z) * invSqrt2);
            tailNode[f] = node;
          }
          return tail[f];
        };
        for (const std::size_t m : cells) {
          const double a = (faces[m] - conditionalMean) / s, b = (faces[m + 1] - conditionalMean) / s;
          const double w = (faces[m + 1] - faces[m]) / s;
          double probability;
          if (w < kMinFaceWidth) probability = standardNormalProbability(a, b, w);
          else if (a >= 0) probability = faceTail(m, a) - faceTail(m + 1, b);
          else if (b <= 0) probability = faceTail(m + 1, b) - faceTail(m, a);
          else probability = 1 - faceTail(m, a) - faceTail(m + 1, b);
          out[m] += weight * probability;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Divergences between Gaussians (MATH.md §6)

namespace {

// The pair (S1, S2) in the basis where S2 = I: S2 = L L^T, L^{-1} S1 L^{-T} = U diag(lambda) U^T, and the mean
// difference w = U^T L^{-1} (m1 - m2). Then det S1 / det S2 = prod lambda, S_alpha = L U diag(alpha + (1 - alpha)
// lambda) U^T L^T, and every term of §6 becomes a sum over k that is evaluated with log1p: when S1 ~ S2 the
// log-determinant terms are O(lambda - 1)^2 and do not drown in round-off as a difference of log-determinants would.
struct RelativeGaussianPair {
  Vector eigenvalues;  // lambda_k of S2^{-1} S1
  Vector meanOffset;   // w
};

RelativeGaussianPair relativePair(const Vector& m1, const Matrix& S1, const Vector& m2, const Matrix& S2,
                                  const char* who) {
  const Eigen::Index d = m1.size();
  if (d == 0 || m2.size() != d) throw std::invalid_argument(std::string(who) + ": means of different or zero dimension");
  if (!m1.allFinite() || !m2.allFinite()) throw std::invalid_argument(std::string(who) + ": non-finite mean");
  choleskyOfCovariance(S1, d, std::string(who) + ": S1");
  const Eigen::LLT<Matrix> llt2 = choleskyOfCovariance(S2, d, std::string(who) + ": S2");
  const auto L = llt2.matrixL();
  const Matrix halfWhitened = L.solve(S1);  // L^{-1} S1
  Matrix whitened = L.solve(halfWhitened.transpose());  // L^{-1} S1 L^{-T}
  whitened = 0.5 * (whitened + whitened.transpose());
  const Eigen::SelfAdjointEigenSolver<Matrix> eig(whitened);
  const Vector whitenedOffset = L.solve(m1 - m2);
  return {eig.eigenvalues(), eig.eigenvectors().transpose() * whitenedOffset};
}

}  // namespace

double gaussianRenyi(const Vector& m1, const Matrix& S1, const Vector& m2, const Matrix& S2, double alpha) {
  if (!(alpha > 1) || !std::isfinite(alpha)) {
    throw std::invalid_argument("gaussianRenyi: alpha must be finite and > 1, got " + std::to_string(alpha));
  }
  const RelativeGaussianPair pair = relativePair(m1, S1, m2, S2, "gaussianRenyi");
  // D_alpha = (alpha/2) dm^T S_alpha^{-1} dm - log(det S_alpha / (det S1^{1-alpha} det S2^alpha)) / (2(alpha-1))
  //         = sum_k [ (alpha/2) w_k^2 / e_k - (log e_k - (1-alpha) log lambda_k) / (2(alpha-1)) ],
  // e_k = alpha + (1-alpha) lambda_k = 1 + (1-alpha)(lambda_k - 1), the eigenvalues of S_alpha relative to S2.
  double meanTerm = 0, logDetTerm = 0;
  for (Eigen::Index k = 0; k < pair.eigenvalues.size(); ++k) {
    const double excess = pair.eigenvalues[k] - 1;
    const double e = 1 + (1 - alpha) * excess;
    if (!(e > 0)) return std::numeric_limits<double>::infinity();  // S_alpha not positive definite
    meanTerm += pair.meanOffset[k] * pair.meanOffset[k] / e;
    logDetTerm += std::log1p((1 - alpha) * excess) - (1 - alpha) * std::log1p(excess);
  }
  return 0.5 * alpha * meanTerm - logDetTerm / (2 * (alpha - 1));
}

double gaussianKL(const Vector& m1, const Matrix& S1, const Vector& m2, const Matrix& S2) {
  const RelativeGaussianPair pair = relativePair(m1, S1, m2, S2, "gaussianKL");
  // KL = (1/2)[tr(S2^{-1} S1) + dm^T S2^{-1} dm - d + log(det S2 / det S1)]
  //    = (1/2)[sum_k ((lambda_k - 1) - log lambda_k) + |w|^2].
  double traceLogTerm = 0;
  for (Eigen::Index k = 0; k < pair.eigenvalues.size(); ++k) {
    const double excess = pair.eigenvalues[k] - 1;
    traceLogTerm += excess - std::log1p(excess);
  }
  return 0.5 * (traceLogTerm + pair.meanOffset.squaredNorm());
}

// ---------------------------------------------------------------------------------------------------------------
// Ornstein–Uhlenbeck law (MATH.md §6): d theta = -A (theta - c) dt + sqrt(2 Sigma) dW, theta_0 ~ N(m0, C0).

Gaussian ornsteinUhlenbeckLaw(const Matrix& A, const Vector& c, const Matrix& Sigma, const Vector& m0, const Matrix& C0,
                              double t) {
  const Eigen::Index d = c.size();
  if (d == 0 || m0.size() != d) throw std::invalid_argument("ornsteinUhlenbeckLaw: c and m0 must have the same dimension");
  if (!c.allFinite() || !m0.allFinite()) throw std::invalid_argument("ornsteinUhlenbeckLaw: non-finite c or m0");
  requireSquare(A, d, "ornsteinUhlenbeckLaw: A");
  requireSquare(Sigma, d, "ornsteinUhlenbeckLaw: Sigma");
  requireSquare(C0, d, "ornsteinUhlenbeckLaw: C0");
  if (!(t >= 0) || !std::isfinite(t)) throw std::invalid_argument("ornsteinUhlenbeckLaw: t must be finite and >= 0");

  // In A's eigenbasis A = Q diag(a) Q^T the mean and covariance equations decouple entrywise:
  //   mean:  y_i' = -a_i y_i                                 -> y_i(t) = e^{-a_i t} y_i(0)
  //   cov:   G_ij' = -(a_i + a_j) G_ij + 2 B_ij, B = Q^T Sigma Q -> G_ij(t) = e^{-(a_i+a_j)t} G_ij(0)
  //                                                                 + 2 B_ij (1 - e^{-(a_i+a_j)t}) / (a_i + a_j),
  // with 1 - e^{-x} = -expm1(-x) so that small t keeps its relative accuracy (C0 = 0 starts).
  const Eigen::SelfAdjointEigenSolver<Matrix> eig(0.5 * (A + A.transpose()));
  const Vector& a = eig.eigenvalues();
  const Matrix& Q = eig.eigenvectors();
  if (!(a.minCoeff() > 0)) throw std::invalid_argument("ornsteinUhlenbeckLaw: A is not positive definite");

  // mean = c + e^{-At}(m0 - c) written as m0 + (I - e^{-At})(c - m0) with 1 - e^{-a t} = -expm1(-a t): for small t
  // the displacement keeps full relative accuracy instead of being the difference of two nearly equal terms.
  const Vector approached = -(-a * t).array().expm1();
  const Vector mean = m0 + Q * approached.cwiseProduct(Q.transpose() * (c - m0));

  const Matrix B = Q.transpose() * Sigma * Q;
  const Matrix G0 = Q.transpose() * C0 * Q;
  Matrix G(d, d);
  for (Eigen::Index i = 0; i < d; ++i) {
    for (Eigen::Index j = 0; j < d; ++j) {
      const double rate = a[i] + a[j];
      G(i, j) = std::exp(-rate * t) * G0(i, j) - 2 * B(i, j) * std::expm1(-rate * t) / rate;
    }
  }
  Matrix covariance = Q * G * Q.transpose();
  covariance = 0.5 * (covariance + covariance.transpose());
  return Gaussian(mean, covariance);
}

}  // namespace fpdp::models
