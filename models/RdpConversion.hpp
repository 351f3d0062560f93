#pragma once
// From Rényi DP to (eps, delta) (MATH.md §7), and the exact eps from a hockey-stick curve (MATH.md §3).
//
// Given R_alpha on a grid of orders (alpha > 1), for a delta in (0, 1):
//   Mironov 2017, Prop. 3:                    eps = min_alpha [ R_alpha + log(1/delta)/(alpha - 1) ]
//   Canonne-Kamath-Steinke 2020 / Balle et al. 2020 (Google dp_accounting, Opacus):
//                                             eps = min_alpha [ R_alpha + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha - 1) ]
// Orders whose R_alpha is +inf or NaN (not computed, not applicable) are skipped; if no order is left the result is
// +inf when some R_alpha was +inf (no finite guarantee) and NaN otherwise, with order NaN. The minimum is clamped at 0: a negative value means delta(eps) <= delta at some eps < 0, and
// delta(.) is non-increasing, so (0, delta) holds too. The CKS form is evaluated as
// R + log1p(-1/alpha) - (log delta + log alpha)/(alpha - 1) (no cancellation near alpha = 1).
//
// Exact: the hockey-stick divergence delta(eps) = int max(p - e^eps q, 0) is the privacy profile of the pair; the
// exact eps at delta is the smallest eps with delta(eps) <= delta. From a sampled curve (see exactEpsilon).
#include <span>

namespace fpdp::models {

struct EpsilonAtDelta {
  double epsilon;  // +inf / NaN when no order has a finite R_alpha (see above)
  double order;    // the minimising order (NaN when none)
};

EpsilonAtDelta mironovEpsilon(std::span<const double> orders, std::span<const double> renyi, double delta);
EpsilonAtDelta cksEpsilon(std::span<const double> orders, std::span<const double> renyi, double delta);

/// Where the exact eps was found on the sampled curve.
enum class ExactEpsilonStatus {
  Interpolated,  // between two grid points (or at one)
  AtGridStart,   // delta(eps_0) <= delta already: the smallest eps is <= eps_0; epsilon = eps_0, an upper bound
  BeyondGrid     // delta(eps_max) > delta: eps > eps_max; epsilon = NaN (the grid is too short)
};

struct ExactEpsilon {
  double epsilon;
  ExactEpsilonStatus status;
};

/// The smallest eps with delta(eps) <= delta, from delta(eps) sampled at an increasing grid epsGrid (curve[i] =
/// delta(epsGrid[i]); a hockey-stick curve is non-increasing in eps). Between the last grid point above delta and the
/// first at or below it, the curve is interpolated linearly in x = e^eps: delta is a convex function of e^eps (a
/// supremum over events A of the affine functions P(A) - e^eps Q(A)), so the chord lies on or above the curve and the
/// eps returned is never below the true crossing of the sampled curve; the interpolation error is at most
/// (1/8) h_x^2 max f'' / (x min |f'|) with f(x) = delta(log x) and h_x the spacing in x, i.e. O(h^2) in the eps spacing h
/// (tests/models/test_rdp_conversion.cpp checks this bound on the Gaussian curve of MATH.md §6). The
/// interpolant is monotone, so a non-increasing curve gives a unique crossing. A curve that is not non-increasing (a
/// quadrature artefact) is read through the last sample above delta (as if it were replaced by its running maximum
/// from the right, the smallest non-increasing curve on or above the samples), which keeps the result conservative;
/// a NaN sample counts as above delta. Throws std::invalid_argument for unequal sizes, fewer than 2 points, a grid
/// that is not strictly increasing or delta outside (0, 1).
ExactEpsilon exactEpsilon(std::span<const double> epsGrid, std::span<const double> curve, double delta);

/// The exact eps of a pair at `delta`: (eps, delta)-indistinguishability needs delta(eps) <= delta in both directions
/// (p || q and q || p), so the larger of the two exactEpsilon values; NaN if either is NaN (its grid ends above delta).
/// An AtGridStart answer is an upper bound and is used as such.
double exactEpsilonOfPair(std::span<const double> epsGrid, std::span<const double> curvePQ,
                          std::span<const double> curveQP, double delta);

}  // namespace fpdp::models
