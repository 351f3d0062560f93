// MATH.md §7 (RDP -> (eps, delta)) and §3 (the hockey-stick curve); see RdpConversion.hpp.
#include "models/RdpConversion.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fpdp::models {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void checkInputs(std::span<const double> orders, std::span<const double> renyi, double delta) {
  if (orders.size() != renyi.size())
    throw std::invalid_argument("RDP conversion: " + std::to_string(orders.size()) + " orders but " +
                                std::to_string(renyi.size()) + " values");
  if (!(delta > 0.0 && delta < 1.0))
    throw std::invalid_argument("RDP conversion: delta = " + std::to_string(delta) + " is not in (0, 1)");
}

/// min over the orders with a finite R_alpha of term(alpha, R_alpha), clamped at 0.
template <class Term>
EpsilonAtDelta minimiseOverOrders(std::span<const double> orders, std::span<const double> renyi, Term term) {
  EpsilonAtDelta best{kNaN, kNaN};
  bool infinite = false;
  for (std::size_t i = 0; i < orders.size(); ++i) {
    const double a = orders[i], r = renyi[i];
    if (r == std::numeric_limits<double>::infinity()) infinite = true;
    if (!(a > 1.0) || !std::isfinite(r)) continue;  // +inf or not computed: this order gives nothing
    const double e = term(a, r);
    if (std::isnan(best.epsilon) || e < best.epsilon) best = {e, a};
  }
  if (!std::isnan(best.epsilon)) best.epsilon = std::max(best.epsilon, 0.0);
  else if (infinite) best.epsilon = std::numeric_limits<double>::infinity();  // every usable order is +inf
  return best;
}

}  // namespace

EpsilonAtDelta mironovEpsilon(std::span<const double> orders, std::span<const double> renyi, double delta) {
  checkInputs(orders, renyi, delta);
  const double logInvDelta = -std::log(delta);
  return minimiseOverOrders(orders, renyi, [&](double a, double r) { return r + logInvDelta / (a - 1.0); });
}

EpsilonAtDelta cksEpsilon(std::span<const double> orders, std::span<const double> renyi, double delta) {
  checkInputs(orders, renyi, delta);
  const double logDelta = std::log(delta);
  return minimiseOverOrders(orders, renyi, [&](double a, double r) {
    return r + std::log1p(-1.0 / a) - (logDelta + std::log(a)) / (a - 1.0);
  });
}

ExactEpsilon exactEpsilon(std::span<const double> epsGrid, std::span<const double> curve, double delta) {
  const std::size_t n = epsGrid.size();
  if (curve.size() != n)
    throw std::invalid_argument("exactEpsilon: " + std::to_string(n) + " grid points but " +
                                std::to_string(curve.size()) + " curve values");
  if (n < 2) throw std::invalid_argument("exactEpsilon: the eps grid needs at least 2 points");
  for (std::size_t i = 1; i < n; ++i)
    if (!(epsGrid[i] > epsGrid[i - 1])) throw std::invalid_argument("exactEpsilon: the eps grid is not increasing");
  if (!(delta > 0.0 && delta < 1.0))
    throw std::invalid_argument("exactEpsilon: delta = " + std::to_string(delta) + " is not in (0, 1)");
  auto above = [&](std::size_t i) { return !(curve[i] <= delta); };  // NaN counts as above
  std::size_t last = n;  // the last sample above delta
  for (std::size_t i = n; i-- > 0;)
    if (above(i)) {
      last = i;
      break;
    }
  if (last == n) return {epsGrid[0], ExactEpsilonStatus::AtGridStart};
  if (last == n - 1) return {kNaN, ExactEpsilonStatus::BeyondGrid};
  // Chord in x = e^eps between (x0, d0), d0 > delta, and (x1, d1), d1 <= delta; written relative to x0 so that the
  // result is exp(eps0) (1 + w (e^h - 1)) with w in (0, 1]: eps = eps0 + log1p(w expm1(h)).
  const double e0 = epsGrid[last], h = epsGrid[last + 1] - e0;
  const double d0 = curve[last], d1 = curve[last + 1];
  const double w = std::isfinite(d0) ? (d0 - delta) / (d0 - d1) : 1.0;
  return {e0 + std::log1p(w * std::expm1(h)), ExactEpsilonStatus::Interpolated};
}

double exactEpsilonOfPair(std::span<const double> epsGrid, std::span<const double> curvePQ,
                          std::span<const double> curveQP, double delta) {
  const double a = exactEpsilon(epsGrid, curvePQ, delta).epsilon, b = exactEpsilon(epsGrid, curveQP, delta).epsilon;
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return std::max(a, b);
}

}  // namespace fpdp::models
