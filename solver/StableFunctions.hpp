#pragma once
// Scalar functions that the divergence integrands need without cancellation (MATH.md §3: never subtract two
// numbers near 1). Both use their Taylor series where the direct formula would cancel.
#include <cmath>

namespace fpdp::solver {

/// Phi(u), the standard normal distribution function, by erfc: the lower tail keeps full relative accuracy down to
/// erfc's underflow (Phi(-37.5) ~ 5e-309), which the Gaussian-kernel deposits of the noisy-GD routes rely on.
inline double standardNormalCdf(double u) { return 0.5 * std::erfc(-u * 0.70710678118654752440); }

namespace detail {
constexpr double factorial(int k) { return k <= 1 ? 1.0 : k * factorial(k - 1); }
}  // namespace detail
inline constexpr double kFactorial[21] = {
    detail::factorial(0),  detail::factorial(1),  detail::factorial(2),  detail::factorial(3),  detail::factorial(4),
    detail::factorial(5),  detail::factorial(6),  detail::factorial(7),  detail::factorial(8),  detail::factorial(9),
    detail::factorial(10), detail::factorial(11), detail::factorial(12), detail::factorial(13), detail::factorial(14),
    detail::factorial(15), detail::factorial(16), detail::factorial(17), detail::factorial(18), detail::factorial(19),
    detail::factorial(20)};

/// e^x - 1 - x, accurate to a few ulps relative for all x (>= 0 for every x).
inline double expm1MinusLinear(double x) {
  if (std::fabs(x) < 0.5) {
    // x^2/2! + x^3/3! + ... ; terms up to x^20 give < 1e-19 relative truncation for |x| < 0.5.
    // Horner form x^2 (1/2! + x (1/3! + x (1/4! + ...))), inner terms first: a few ulps.
    double inner = 0.0;
    for (int k = 20; k >= 2; --k) inner = 1.0 / kFactorial[k] + x * inner;
    return x * x * inner;
  }
  return std::expm1(x) - x;
}

/// log(1 + x) - x for x > -1, accurate to a few ulps relative (<= 0 for every x).
inline double log1pMinusLinear(double x) {
  if (std::fabs(x) < 0.5) {
    // -x^2/2 + x^3/3 - x^4/4 + ... ; terms up to x^60 give < 1e-18 relative truncation for |x| < 0.5.
    // (Beyond 0.5 the direct formula loses at most a factor 4 to cancellation.)
    // Horner form x^2 (-1/2 + x (1/3 + x (-1/4 + ...))): a few ulps.
    double inner = 0.0;
    for (int k = 60; k >= 2; --k) inner = ((k % 2 == 0) ? -1.0 : 1.0) / k + x * inner;
    return x * x * inner;
  }
  return std::log1p(x) - x;
}

}  // namespace fpdp::solver
