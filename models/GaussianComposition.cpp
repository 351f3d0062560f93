#include "models/GaussianComposition.hpp"

#include <cmath>
#include <limits>

namespace fpdp::models {

namespace {

/// log Phi(x), the standard normal distribution function, with full relative accuracy in the lower tail (erfc down to
/// its underflow, then the asymptotic series' leading terms).
double logNormalCdf(double x) {
  if (x > -30.0) return std::log(0.5 * std::erfc(-x / std::sqrt(2.0)));
  const double x2 = x * x;
  return -0.5 * x2 - std::log(-x) - 0.5 * std::log(2.0 * M_PI) + std::log1p(-1.0 / x2 + 3.0 / (x2 * x2));
}

}  // namespace

double gaussianCompositionMu(double gap, double t, double lambdaMinSigma) {
  return gap * std::sqrt(t) / std::sqrt(2.0 * lambdaMinSigma);
}

double gdpDelta(double mu, double eps) {
  const double a = std::exp(logNormalCdf(-eps / mu + 0.5 * mu));
  const double b = std::exp(eps + logNormalCdf(-eps / mu - 0.5 * mu));
  return std::max(a - b, 0.0);
}

double gdpEpsilon(double mu, double delta) {
  if (!(mu > 0)) return mu == 0 ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(mu)) return std::numeric_limits<double>::infinity();
  if (gdpDelta(mu, 0.0) <= delta) return 0.0;
  double lo = 0.0, hi = 1.0;
  while (gdpDelta(mu, hi) > delta) {
    lo = hi;
    hi *= 2.0;
    if (hi > 1e6) return std::numeric_limits<double>::infinity();
  }
  while (hi - lo > 1e-12 * hi) {
    const double mid = 0.5 * (lo + hi);
    (gdpDelta(mu, mid) > delta ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace fpdp::models
