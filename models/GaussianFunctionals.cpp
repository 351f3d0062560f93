#include "models/GaussianFunctionals.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <vector>

namespace fpdp::models {

double normalUpperTail(double z) { return 0.5 * std::erfc(z / std::numbers::sqrt2); }
double normalDensity(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2.0 * std::numbers::pi); }

namespace {
double Phi(double x) { return normalUpperTail(-x); }
}  // namespace

double normalIntervalProbability(double a, double b) {
  if (!(b >= a)) throw std::invalid_argument("normalIntervalProbability: need a <= b");
  if (b - a < 0.5) {
    // 10-point Gauss–Legendre on [a, b]: phi is entire and the interval narrow, so the rule's error (width^20
    // times the 20th derivative / 20!) is far below round-off; no difference of two CDFs.
    static const double x[5] = {0.1488743389816312, 0.4333953941292472, 0.6794095682990244, 0.8650633666889845,
                                0.9739065285171717};
    static const double w[5] = {0.2955242247147529, 0.2692667193099963, 0.2190863625159820, 0.1494513491505806,
                                0.0666713443086881};
    const double c = 0.5 * (a + b), h = 0.5 * (b - a);
    double s = 0.0;
    for (int i = 0; i < 5; ++i) s += w[i] * (normalDensity(c - h * x[i]) + normalDensity(c + h * x[i]));
    return h * s;
  }
  // Wide intervals: the difference of the two tail probabilities on the side where they are small.
  if (a >= 0) return Phi(-a) - Phi(-b);
  if (b <= 0) return Phi(b) - Phi(a);
  return 1.0 - Phi(a) - Phi(-b);
}

double gaussianInformationRatio(const Vector& m1, const Matrix& S1, const Vector& m2, const Matrix& S2, double alpha,
                                const Matrix& Sigma) {
  const Matrix A1 = S1.inverse(), A2 = S2.inverse();
  const Matrix B = A1 - A2;
  const Vector b = A1 * m1 - A2 * m2;
  const Matrix P = alpha * A1 + (1.0 - alpha) * A2;
  const Eigen::LLT<Matrix> llt(0.5 * (P + P.transpose()));
  if (llt.info() != Eigen::Success) return std::numeric_limits<double>::quiet_NaN();
  const Vector mu = llt.solve(alpha * A1 * m1 + (1.0 - alpha) * A2 * m2);
  const Vector g = b - B * mu;
  const Matrix Pinv = llt.solve(Matrix::Identity(P.rows(), P.cols()));
  return g.dot(Sigma * g) + (B * Sigma * B * Pinv).trace();
}

namespace {

/// The coefficients of log N(x; mu1, s1^2) - log N(x; mu2, s2^2) - c = a x^2 + b x + c0.
struct LogRatioQuadratic {
  double a, b, c;
};
LogRatioQuadratic logRatioQuadratic(double mu1, double s1, double mu2, double s2, double c) {
  return {-0.5 / (s1 * s1) + 0.5 / (s2 * s2), mu1 / (s1 * s1) - mu2 / (s2 * s2),
          -0.5 * mu1 * mu1 / (s1 * s1) + 0.5 * mu2 * mu2 / (s2 * s2) + std::log(s2 / s1) - c};
}

/// int max(N(x; mu1, s1^2) - e^c N(x; mu2, s2^2), 0) dx for any real c: {f > 0} with f = log p - log q - c a quadratic
/// (or linear) in x, an interval, the complement of one, a half-line, everything or nothing.
double weightedHockeyStick1d(double mu1, double s1, double mu2, double s2, double c) {
  const auto [qa, qb, qc] = logRatioQuadratic(mu1, s1, mu2, s2, c);
  auto probInterval = [](double m, double s, double lo, double hi) {  // P(lo < X < hi), X ~ N(m, s^2)
    return normalIntervalProbability((lo - m) / s, (hi - m) / s);
  };
  const double inf = std::numeric_limits<double>::infinity();
  const double E = std::exp(c);
  auto onSet = [&](double lo, double hi) { return probInterval(mu1, s1, lo, hi) - E * probInterval(mu2, s2, lo, hi); };
  if (std::fabs(qa) <= 1e-14 * (std::fabs(qb) + 0.5 / (s1 * s1))) {  // equal variances: f linear
    if (qb == 0.0) return qc > 0 ? 1.0 - E : 0.0;
    const double root = -qc / qb;
    return qb > 0 ? onSet(root, inf) : onSet(-inf, root);
  }
  const double disc = qb * qb - 4 * qa * qc;
  if (disc <= 0) return qa > 0 ? 1.0 - E : 0.0;  // f > 0 everywhere or nowhere
  const double sq = std::sqrt(disc);
  const double t = -0.5 * (qb + std::copysign(sq, qb));  // the roots without cancellation
  double x1 = t / qa, x2 = qc / t;
  if (x1 > x2) std::swap(x1, x2);
  if (qa < 0) return onSet(x1, x2);
  return onSet(-inf, x1) + onSet(x2, inf);  // qa > 0: A = (-inf, x1) U (x2, inf)
}

/// Tanh-sinh quadrature of f on [a, b] (step 1/32, |t| <= 4): double accuracy for integrands analytic on a
/// neighbourhood of [a, b] wide compared with b - a, also with algebraic singularities at the ends.
template <class F>
double tanhSinh(F&& f, double a, double b) {
  const double c = 0.5 * (a + b), r = 0.5 * (b - a), step = 1.0 / 32.0;
  double sum = 0.0;
  for (int k = -128; k <= 128; ++k) {
    const double t = k * step, u = 0.5 * std::numbers::pi * std::sinh(t);
    const double x = std::tanh(u), w = 0.5 * std::numbers::pi * std::cosh(t) / (std::cosh(u) * std::cosh(u));
    if (1.0 - std::fabs(x) <= 0.0) continue;
    sum += w * f(c + r * x);
  }
  return r * step * sum;
}

/// 2-D, unequal covariances: delta(eps) = int g(y) dy, g(y) the 1-D hockey stick of the conditional laws of x given y
/// weighted by the marginal densities of y. g is analytic except where the line y = const is tangent to the curve
/// p = e^eps q (a (y - y*)^(3/2) behaviour): those y* split the range, and each piece is integrated by tanh-sinh.
double hockeyStickByLines(const Vector& m1, const Matrix& S1, const Vector& m2, const Matrix& S2, double eps) {
  struct Line {  // the conditional law of x given y, and the marginal of y
    double my, sy, mx, slope, sx;
  };
  auto line = [](const Vector& m, const Matrix& S) {
    return Line{m[1], std::sqrt(S(1, 1)), m[0], S(0, 1) / S(1, 1), std::sqrt(S(0, 0) - S(0, 1) * S(0, 1) / S(1, 1))};
  };
  const Line P = line(m1, S1), Q = line(m2, S2);
  auto logNormal = [](double x, double m, double s) {
    return -0.5 * (x - m) * (x - m) / (s * s) - std::log(s) - 0.5 * std::log(2 * std::numbers::pi);
  };
  auto g = [&](double y) {
    const double lp = logNormal(y, P.my, P.sy), lq = logNormal(y, Q.my, Q.sy);
    if (lp < -745.0) return 0.0;
    return std::exp(lp) * weightedHockeyStick1d(P.mx + P.slope * (y - P.my), P.sx, Q.mx + Q.slope * (y - Q.my), Q.sx,
                                                eps + lq - lp);
  };
  // The discriminant of the quadratic in x on the line y changes sign at the tangencies.
  auto disc = [&](double y) {
    const double mu1 = P.mx + P.slope * (y - P.my), mu2 = Q.mx + Q.slope * (y - Q.my);
    const double c = eps + logNormal(y, Q.my, Q.sy) - logNormal(y, P.my, P.sy);
    const auto [qa, qb, qc] = logRatioQuadratic(mu1, P.sx, mu2, Q.sx, c);
    return qb * qb - 4 * qa * qc;
  };
  const double lo = std::min(P.my - 15 * P.sy, Q.my - 15 * Q.sy), hi = std::max(P.my + 15 * P.sy, Q.my + 15 * Q.sy);
  std::vector<double> cuts{lo};
  const int scan = 4000;
  for (int i = 0; i < scan; ++i) {
    double a = lo + (hi - lo) * i / scan, b = lo + (hi - lo) * (i + 1) / scan;
    if ((disc(a) > 0) == (disc(b) > 0)) continue;
    for (int it = 0; it < 200 && b - a > 1e-15 * std::max(1.0, std::fabs(a)); ++it) {
      const double m = 0.5 * (a + b);
      ((disc(a) > 0) == (disc(m) > 0) ? a : b) = m;
    }
    cuts.push_back(0.5 * (a + b));
  }
  cuts.push_back(hi);
  // Pieces of at most a quarter of the smaller marginal standard deviation, so that tanh-sinh resolves the peak.
  const double piece = 0.25 * std::min(P.sy, Q.sy);
  std::vector<double> fine;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    const int parts = static_cast<int>(std::ceil((cuts[i + 1] - cuts[i]) / piece));
    for (int k = 0; k < parts; ++k) fine.push_back(cuts[i] + (cuts[i + 1] - cuts[i]) * k / parts);
  }
  fine.push_back(hi);
  cuts.swap(fine);
  double sum = 0.0;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) sum += tanhSinh(g, cuts[i], cuts[i + 1]);
  return sum;
}

}  // namespace

double gaussianHockeyStick(const Vector& m1, const Matrix& S1, const Vector& m2, const Matrix& S2, double eps) {
  if (!(eps >= 0)) throw std::invalid_argument("gaussianHockeyStick: eps must be >= 0");
  if ((S1 - S2).norm() == 0.0) {
    const Vector dm = m1 - m2;
    const double mu = std::sqrt(dm.dot(S1.ldlt().solve(dm)));
    if (mu == 0.0) return 0.0;
    const double a = -eps / mu - 0.5 * mu, b = -eps / mu + 0.5 * mu;
    return normalIntervalProbability(a, b) - std::expm1(eps) * Phi(a);
  }
  if (m1.size() == 1) return weightedHockeyStick1d(m1[0], std::sqrt(S1(0, 0)), m2[0], std::sqrt(S2(0, 0)), eps);
  if (m1.size() == 2) return hockeyStickByLines(m1, S1, m2, S2, eps);
  throw std::invalid_argument("gaussianHockeyStick: unequal covariances only in 1-D and 2-D");
}

bool gaussianHockeyStickIsCheap(const Matrix& S1, const Matrix& S2) { return S1.rows() == 1 || (S1 - S2).norm() == 0.0; }

double gaussianExactEpsilon(const Vector& m1, const Matrix& S1, const Vector& m2, const Matrix& S2, double delta) {
  if (!(delta > 0 && delta < 1)) throw std::invalid_argument("gaussianExactEpsilon: delta must be in (0, 1)");
  if (!gaussianHockeyStickIsCheap(S1, S2))
    throw std::invalid_argument("gaussianExactEpsilon: no cheap closed form for unequal covariances in d > 1");
  auto oneWay = [delta](const Vector& a, const Matrix& A, const Vector& b, const Matrix& B) {
    return smallestEpsilon([&](double eps) { return gaussianHockeyStick(a, A, b, B, eps); }, delta);
  };
  return std::max(oneWay(m1, S1, m2, S2), oneWay(m2, S2, m1, S1));
}

double smallestEpsilon(const std::function<double(double)>& hockeyStick, double delta) {
  if (hockeyStick(0.0) <= delta) return 0.0;
  double lo = 0.0, hi = 1.0;
  while (hockeyStick(hi) > delta) {
    lo = hi;
    hi *= 2.0;
    if (hi > 1e6) return std::numeric_limits<double>::infinity();
  }
  while (hi - lo > 1e-13 * hi) {
    const double mid = 0.5 * (lo + hi);
    (hockeyStick(mid) > delta ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace fpdp::models
