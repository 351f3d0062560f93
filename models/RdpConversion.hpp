#pragma once
// From Rényi DP to (eps, delta) (MATH.md §7), and the exact eps(delta) of a privacy profile by root-finding on
// delta(eps) (MATH.md §3, §7).
//
// Given R_alpha on a grid of orders (alpha > 1), for a delta in (0, 1):
//   Mironov 2017, Prop. 3:                    eps = min_alpha [ R_alpha + log(1/delta)/(alpha - 1) ]
//   Canonne-Kamath-Steinke 2020 / Balle et al. 2020, as Google dp_accounting's compute_epsilon evaluates it:
//     per order, eps_alpha = 0                 when delta^2 + expm1(-R_alpha) > 0,
//                eps_alpha = R_alpha + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha - 1)   when alpha > 1.01,
//                nothing (+inf)              otherwise;  eps = max(0, min_alpha eps_alpha).
//   The first case (MATH.md §7): delta >= sqrt(1 - exp(-R_alpha)) >= sqrt(1 - exp(-KL)) >= TV = delta(0)
//   (R_alpha >= KL for alpha > 1, Bretagnolle–Huber), so (0, delta) holds. Orders alpha <= 1.01 are left out as in
//   dp_accounting (the formula is not stable there). Mironov's column is Prop. 3 as printed, without that shortcut.
// Orders whose R_alpha is +inf or NaN (not computed, not applicable) are skipped; if no order is left the result is
// +inf when some R_alpha was +inf (no finite guarantee) and NaN otherwise, with order NaN. The minimum is clamped at
// 0: a negative value means delta(eps) <= delta at some eps < 0, and delta(.) is non-increasing, so (0, delta) holds
// too. The CKS form is evaluated as R + log1p(-1/alpha) - (log delta + log alpha)/(alpha - 1) (no cancellation).
// These are conversions of one direction's R_alpha; the pair's eps is the larger over the two directions
// (MATH.md §7), taken by the caller (app/observers/PrivacyOutput).
//
// Exact: the hockey-stick divergence delta(eps) = int max(p - e^eps q, 0) is the privacy profile of one direction;
// the exact eps at delta is the smallest eps >= 0 with delta(eps) <= delta, found by root-finding on delta(eps)
// evaluated (by the caller's quadrature) at each trial eps: exactEpsilons.
#include <functional>
#include <limits>
#include <span>
#include <vector>

namespace fpdp::models {

struct EpsilonAtDelta {
  double epsilon;  // +inf / NaN when no order has a finite R_alpha (see above)
  double order;    // the minimising order (NaN when none; the smallest such order when the minimum is 0 at several)
};

EpsilonAtDelta mironovEpsilon(std::span<const double> orders, std::span<const double> renyi, double delta);
EpsilonAtDelta cksEpsilon(std::span<const double> orders, std::span<const double> renyi, double delta);

/// The other way round: delta(eps) <= the smallest over the orders (alpha > 1, R_alpha finite) of
///   sqrt(1 - exp(-R_alpha))                                          (Bretagnolle–Huber: >= TV >= delta(eps)), and,
///   for alpha > 1.01, exp((alpha - 1)(R_alpha - eps + log(1 - 1/alpha)) - log alpha)    (CKS 2020, Prop. 12),
/// as dp_accounting's compute_delta evaluates it (MATH.md §7); 1 where no order gives a bound, 0 where some R_alpha
/// is 0. Non-decreasing in every R_alpha, so upper bounds of the R_alpha give an upper bound of delta(eps).
double cksDelta(std::span<const double> orders, std::span<const double> renyi, double epsilon);

/// The order below which dp_accounting's compute_epsilon does not use the CKS formula.
inline constexpr double kCksSmallestOrder = 1.01;

/// How an exact eps was obtained. The numeric values are the codes of the `eps_exact_status` column (docs/output.md).
enum class ExactEpsilonStatus {
  Root = 0,         // delta(eps) = delta solved in a bracket [lo, hi] of relative width <= the tolerance; eps = hi
  Zero = 1,         // delta(0) (the total variation) <= delta already: eps = 0
  Unreachable = 2,  // delta(eps) > delta for every eps: the mass of p where q = 0 exceeds delta; eps = +inf
  NotComputed = 3,  // the densities are not finite (or no profile was given): eps = NaN
  // Set by the caller that knows the cells (solver::DivergenceFunctionals), not by exactEpsilons:
  TruncatedSuspect = 4,  // a root (or zero) whose delta(eps) rests on the wall cells by more than 1e-6: the box cuts
                         // the tail that decides eps, which may be under-reported; widen the box
  NoiseLimited = 5       // the root's delta(eps), or the mass that makes it unreachable, rests on cells at the noise
                         // floor of a density (round-off negatives): eps is not resolved there
};
// "root", "zero", "unreachable", "not_computed", "truncated_suspect", "noise_limited"
const char* exactEpsilonStatusName(ExactEpsilonStatus s);

struct ExactEpsilon {
  double epsilon = std::numeric_limits<double>::quiet_NaN();  // a default value is "not computed"
  ExactEpsilonStatus status = ExactEpsilonStatus::NotComputed;
  double lower = std::numeric_limits<double>::quiet_NaN();  // the bracket's other end, delta(lower) > delta (Root)
  double deltaAtEpsilon = std::numeric_limits<double>::quiet_NaN();  // the evaluated delta(epsilon) <= delta
  int rounds = 0;  // evaluation rounds this root took part in
};

/// What the root finder needs to know of one profile delta(eps) = sum_t max(a_t - e^eps b_t, 0) besides its values:
/// its limit as eps -> inf, `floor` = the sum of a_t over the terms with b_t = 0 (the mass of p where q = 0), and an
/// eps from which on it equals that limit, `flatFrom` = the largest log(a_t/b_t) over the terms with a_t > b_t > 0
/// (0 if there is none).
struct PrivacyProfileEnds {
  double floor = 0.0;
  double flatFrom = 0.0;
};

/// One eps(delta) to find: `profile` indexes the caller's profiles (e.g. 0: p || q, 1: q || p).
struct ProfileRequest {
  int profile = 0;
  double delta = 0.0;
};
struct ProfileQuery {
  int profile = 0;
  double eps = 0.0;
};
/// values[i] = delta_{queries[i].profile}(queries[i].eps), eps >= 0. lowestEps[j] (one per profile) is an eps below
/// which no query of profile j goes from this call on (the smallest lower end of its unfinished brackets; +inf when
/// none is left): an evaluator may drop for good the terms that vanish at every eps >= lowestEps[j]
/// (a_t < e^eps b_t). In a distributed caller it is collective: every rank calls it with the same queries and must
/// return the same (bit-identical) values, so that every rank takes the same path through exactEpsilons.
using ProfileEvaluator = std::function<void(std::span<const ProfileQuery> queries, std::span<double> values,
                                            std::span<const double> lowestEps)>;

/// A value of a profile the caller has evaluated already, with the same evaluator's sums (e.g. the hockey-stick eps
/// grid): exactEpsilons starts its brackets from them instead of evaluating anew. Not interpolated: only the
/// bracket's ends come from samples, and the root is still found by evaluating inside the bracket.
struct ProfileSample {
  int profile = 0;
  double eps = 0.0;
  double value = 0.0;
};

/// Relative width of the final bracket: well below the 1e-6 the output promises (docs/bounds.md §3).
inline constexpr double kExactEpsilonTolerance = 1e-10;

/// For every request, the smallest eps >= 0 with delta_profile(eps) <= delta (MATH.md §7): delta(eps) is
/// continuous and non-increasing, so this is the root of delta(eps) = delta. delta(0) is evaluated first (<= delta:
/// Zero); floor > delta: Unreachable (+inf). Otherwise the bracket [0, hi] is found by doubling hi from 1/4 (capped
/// just beyond flatFrom, where delta = floor <= delta), then narrowed by the Illinois variant of regula falsi on
/// g(eps) = log(delta(eps)/delta) (nearly linear in eps for the Gaussian-like tails of a privacy profile), with a
/// bisection whenever a step would not shrink the bracket enough or g is infinite (delta(hi) = 0), until
/// hi - lo <= tolerance * hi; the result is hi (delta(hi) <= delta was evaluated: conservative). All requests are
/// advanced together: each round asks `evaluate` for one value per unfinished request (one distributed sum for all).
/// The path depends only on the evaluated values, so a caller whose evaluator returns the same values on every
/// rank gets the same answers on every rank. `samples` (optional; the same on every rank): known values; delta(0) is
/// then not evaluated again, and a bracket of samples (the largest sample eps with a value > delta, the smallest
/// beyond it with a value <= delta) replaces the doubling. Throws std::invalid_argument for a delta outside (0, 1), a
/// profile index outside `ends` (of a request or a sample), a negative or non-finite sample eps, or a tolerance
/// outside (0, 1).
std::vector<ExactEpsilon> exactEpsilons(std::span<const ProfileRequest> requests,
                                        std::span<const PrivacyProfileEnds> ends, const ProfileEvaluator& evaluate,
                                        std::span<const ProfileSample> samples = {},
                                        double tolerance = kExactEpsilonTolerance);

/// Both directions of one pair at one delta, combined as MATH.md §7 says: eps = max(eps_pq, eps_qp); NaN when either
/// is NaN. The status: the first of NotComputed, Unreachable, NoiseLimited, TruncatedSuspect, Root, Zero that either
/// direction has (a suspect direction may hide a larger eps than the other's).
struct PairEpsilon {
  ExactEpsilon pq, qp;
  double epsilon() const;
  ExactEpsilonStatus status() const;
};

}  // namespace fpdp::models
