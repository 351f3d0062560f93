#include "models/GaussianFunctionals.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include <cmath>
#include <limits>
#include <numbers>
#include <stdexcept>

namespace fpdp::models {

namespace {
double Phi(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }
double phi(double x) { return std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi); }
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
    for (int i = 0; i < 5; ++i) s += w[i] * (phi(c - h * x[i]) + phi(c + h * x[i]));
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

double gaussianHockeyStick(const Vector& m1, const Matrix& S1, const Vector& m2, const Matrix& S2, double eps) {
  if (!(eps >= 0)) throw std::invalid_argument("gaussianHockeyStick: eps must be >= 0");
  if ((S1 - S2).norm() == 0.0) {
    const Vector dm = m1 - m2;
    const double mu = std::sqrt(dm.dot(S1.ldlt().solve(dm)));
    if (mu == 0.0) return 0.0;
    const double a = -eps / mu - 0.5 * mu, b = -eps / mu + 0.5 * mu;
    return normalIntervalProbability(a, b) - std::expm1(eps) * Phi(a);
  }
  if (m1.size() != 1) throw std::invalid_argument("gaussianHockeyStick: unequal covariances only in 1-D");
  const double s1 = std::sqrt(S1(0, 0)), s2 = std::sqrt(S2(0, 0)), mu1 = m1[0], mu2 = m2[0];
  // f(x) = log p - log q - eps = qa x^2 + qb x + qc; A = {f > 0}.
  const double qa = -0.5 / (s1 * s1) + 0.5 / (s2 * s2);
  const double qb = mu1 / (s1 * s1) - mu2 / (s2 * s2);
  const double qc = -0.5 * mu1 * mu1 / (s1 * s1) + 0.5 * mu2 * mu2 / (s2 * s2) + std::log(s2 / s1) - eps;
  const double disc = qb * qb - 4 * qa * qc;
  auto probInterval = [](double m, double s, double lo, double hi) {  // P(lo < X < hi), X ~ N(m, s^2)
    return normalIntervalProbability((lo - m) / s, (hi - m) / s);
  };
  const double inf = std::numeric_limits<double>::infinity();
  const double E = std::exp(eps);
  if (disc <= 0) return qa > 0 ? 1.0 - E : 0.0;  // f > 0 everywhere (impossible for eps >= 0 unless p = q) or nowhere
  const double sq = std::sqrt(disc);
  // Roots without cancellation.
  const double t = -0.5 * (qb + std::copysign(sq, qb));
  double x1 = t / qa, x2 = qc / t;
  if (x1 > x2) std::swap(x1, x2);
  if (qa < 0) return probInterval(mu1, s1, x1, x2) - E * probInterval(mu2, s2, x1, x2);
  // qa > 0: A = (-inf, x1) U (x2, inf)
  return probInterval(mu1, s1, -inf, x1) + probInterval(mu1, s1, x2, inf) -
         E * (probInterval(mu2, s2, -inf, x1) + probInterval(mu2, s2, x2, inf));
}

}  // namespace fpdp::models
