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

namespace detail {
// The series' coefficients, 1/k! and (-1)^(k+1)/k, as tables (a division per term and call was measured).
struct SeriesCoefficients {
  double expm1[21]{}, log1p[61]{};
  constexpr SeriesCoefficients() {
    for (int k = 2; k <= 20; ++k) expm1[k] = 1.0 / factorial(k);
    for (int k = 2; k <= 60; ++k) log1p[k] = ((k % 2 == 0) ? -1.0 : 1.0) / k;
  }
};
inline constexpr SeriesCoefficients kSeries{};
// x^2 (c_2 + x (c_3 + ... + x c_n)) in Horner form, inner terms first: a few ulps.
inline double seriesFromSecondOrder(const double* c, int n, double x) {
  double inner = 0.0;
  for (int k = n; k >= 2; --k) inner = c[k] + x * inner;
  return x * x * inner;
}
}  // namespace detail

/// e^x - 1 - x, accurate to a few ulps relative for all x (>= 0 for every x).
inline double expm1MinusLinear(double x) {
  const double a = std::fabs(x);
  if (a < 0.5) {
    // x^2/2! + x^3/3! + ... + x^n/n!, n by |x| so that the first term left out, relative to x^2/2, is below
    // 2^-56 (a few ulps in all); n = 20 for |x| < 0.5 gives < 1e-19. Each Horner step waits for the previous one,
    // so the number of terms is the cost: near r = 1 (small divergences, every cell at t = 0) |x| is tiny.
    const int n = a < 1e-4 ? 5 : a < 1e-2 ? 8 : a < 0.1 ? 11 : a < 0.25 ? 14 : 20;
    return detail::seriesFromSecondOrder(detail::kSeries.expm1, n, x);
  }
  return std::expm1(x) - x;
}

/// log(1 + x) - x for x > -1, accurate to a few ulps relative (<= 0 for every x).
inline double log1pMinusLinear(double x) {
  const double a = std::fabs(x);
  if (a < 0.5) {
    // -x^2/2 + x^3/3 - x^4/4 + ... + (-1)^(n+1) x^n/n, n by |x| as above (the first term left out, relative to
    // x^2/2, below 2^-56); n = 60 for |x| < 0.5 gives < 1e-18. (Beyond 0.5 the direct formula loses at most a factor
    // 4 to cancellation.)
    const int n = a < 1e-4 ? 6 : a < 1e-2 ? 10 : a < 0.1 ? 18 : a < 0.25 ? 29 : 60;
    return detail::seriesFromSecondOrder(detail::kSeries.log1p, n, x);
  }
  return std::log1p(x) - x;
}

/// log r = log(p/q) of one cell (p, q > 0), in the form that keeps the divergences' terms finite and free of
/// cancellation: near r = 1 (|rho| < 1/2, rho = r - 1) u = log1p(rho) with l1l = log1p(rho) - rho for the series forms;
/// farther out u from the two logarithms, so that r ~ 1e-17 (rho rounded to -1) or r overflowing (rho = inf) stay
/// finite (l1l unused, 0).
struct CellLogRatio {
  double rho, u, l1l;
  bool nearOne;
};
inline CellLogRatio cellLogRatio(double p, double q) {
  const double rho = (p - q) / q;
  const bool nearOne = std::fabs(rho) < 0.5;
  return {rho, nearOne ? std::log1p(rho) : std::log(p) - std::log(q), nearOne ? log1pMinusLinear(rho) : 0.0, nearOne};
}
/// w q h(r), h(r) = r log r - r + 1, KL's non-negative integrand in a cell of volume w: w q (rho u + l1l) near r = 1,
/// w (p log r - (p - q)) beyond.
inline double klCellTerm(const CellLogRatio& r, double w, double p, double q) {
  return r.nearOne ? w * q * (r.rho * r.u + r.l1l) : w * (p * r.u - (p - q));
}

}  // namespace fpdp::solver
