// MATH.md §7 (RDP -> (eps, delta), eps(delta) by root-finding on the hockey-stick profile); see RdpConversion.hpp.
#include "models/RdpConversion.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fpdp::models {

namespace {
/// log(a / b) for a >= 0, b > 0, and -inf for a = 0 without calling log(0), which raises the divide-by-zero flag
/// (a run under -fp_trap stops on it).
double logOfRatio(double a, double b) { return a > 0 ? std::log(a / b) : -std::numeric_limits<double>::infinity(); }
}  // namespace

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

void checkInputs(std::span<const double> orders, std::span<const double> renyi, double delta) {
  if (orders.size() != renyi.size())
    throw std::invalid_argument("RDP conversion: " + std::to_string(orders.size()) + " orders but " +
                                std::to_string(renyi.size()) + " values");
  if (!(delta > 0.0 && delta < 1.0))
    throw std::invalid_argument("RDP conversion: delta = " + std::to_string(delta) + " is not in (0, 1)");
}

/// min over the orders with a finite R_alpha of term(alpha, R_alpha), clamped at 0. A term of +inf (an order the
/// conversion cannot use) counts like an infinite R_alpha.
template <class Term>
EpsilonAtDelta minimiseOverOrders(std::span<const double> orders, std::span<const double> renyi, Term term) {
  EpsilonAtDelta best{kNaN, kNaN};
  bool infinite = false;
  for (std::size_t i = 0; i < orders.size(); ++i) {
    const double a = orders[i], r = renyi[i];
    if (r == kInf) infinite = true;
    if (!(a > 1.0) || !std::isfinite(r)) continue;  // +inf or not computed: this order gives nothing
    const double e = term(a, r);
    if (e == kInf) {
      infinite = true;
      continue;
    }
    if (std::isnan(best.epsilon) || e < best.epsilon) best = {e, a};
  }
  if (!std::isnan(best.epsilon)) best.epsilon = std::max(best.epsilon, 0.0);
  else if (infinite) best.epsilon = kInf;  // every usable order is +inf
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
    // dp_accounting's compute_epsilon, order by order (RdpConversion.hpp): the KL/TV shortcut first.
    if (delta * delta + std::expm1(-r) > 0.0) return 0.0;
    if (!(a > kCksSmallestOrder)) return kInf;
    return r + std::log1p(-1.0 / a) - (logDelta + std::log(a)) / (a - 1.0);
  });
}

double cksDelta(std::span<const double> orders, std::span<const double> renyi, double epsilon) {
  if (orders.size() != renyi.size()) throw std::invalid_argument("cksDelta: one R_alpha per order");
  if (!(epsilon >= 0.0)) throw std::invalid_argument("cksDelta: eps must be >= 0");
  double best = 1.0;
  for (std::size_t k = 0; k < orders.size(); ++k) {
    const double a = orders[k], r = renyi[k];
    if (!(a > 1.0) || !(r >= 0.0) || !std::isfinite(r)) continue;  // +inf or not computed: this order gives nothing
    if (r == 0.0) return 0.0;
    best = std::min(best, std::sqrt(-std::expm1(-r)));
    if (a > kCksSmallestOrder)
      best = std::min(best, std::exp((a - 1.0) * (r - epsilon + std::log1p(-1.0 / a)) - std::log(a)));
  }
  return best;
}

const char* exactEpsilonStatusName(ExactEpsilonStatus s) {
  switch (s) {
    case ExactEpsilonStatus::Root: return "root";
    case ExactEpsilonStatus::Zero: return "zero";
    case ExactEpsilonStatus::Unreachable: return "unreachable";
    case ExactEpsilonStatus::TruncatedSuspect: return "truncated_suspect";
    case ExactEpsilonStatus::NoiseLimited: return "noise_limited";
    default: return "not_computed";
  }
}

namespace {

/// One request's root finder between evaluation rounds.
struct RootState {
  enum Phase { Done, Bracketing, Refining } phase = Done;
  double lo = 0.0, glo = 0.0;         // delta(lo) > delta, glo = log(delta(lo)/delta) > 0
  double hi = kInf, ghi = 0.0, dhi = 0.0;  // delta(hi) = dhi <= delta, ghi = log(dhi/delta) <= 0 (-inf if dhi = 0)
  double cap = 0.0;                   // delta(cap) = floor: the bracketing never goes beyond
  double trial = 0.0;                 // the eps of the pending evaluation
  int lastSide = 0;                   // +1: the last evaluation replaced hi, -1: lo (Illinois)
  double widthMark = kInf;            // the bracket width when it last halved ...
  int roundsSinceHalving = 0;         // ... and the evaluations since
};

constexpr double kFirstTrial = 0.25;  // the first upper end tried (then doubled)
constexpr int kMaxRounds = 400;       // far more than bisection alone needs (each 3 rounds halve the bracket)

/// The next trial eps of a bracket [lo, hi] being narrowed (RootState::Refining).
double nextTrial(RootState& s, double tolerance) {
  const double width = s.hi - s.lo;
  double x;
  if (s.roundsSinceHalving >= 3 || !std::isfinite(s.glo) || !std::isfinite(s.ghi) || !(s.glo > s.ghi)) {
    x = s.lo + 0.5 * width;  // bisection
  } else {
    x = s.lo + s.glo / (s.glo - s.ghi) * width;  // regula falsi on g (Illinois-weighted ends)
  }
  // Not closer than half the tolerance to either end: a trial there either ends the search or moves that end by a
  // useful amount.
  const double margin = 0.5 * tolerance * s.hi;
  return std::clamp(x, s.lo + margin, s.hi - margin);
}

}  // namespace

namespace {

void checkExactEpsilonInputs(std::span<const ProfileRequest> requests, std::span<const PrivacyProfileEnds> ends,
                             std::span<const ProfileSample> samples, double tolerance) {
  if (!(tolerance > 0.0 && tolerance < 1.0))
    throw std::invalid_argument("exactEpsilons: tolerance " + std::to_string(tolerance) + " is not in (0, 1)");
  for (const auto& r : requests) {
    if (!(r.delta > 0.0 && r.delta < 1.0))
      throw std::invalid_argument("exactEpsilons: delta = " + std::to_string(r.delta) + " is not in (0, 1)");
    if (r.profile < 0 || static_cast<std::size_t>(r.profile) >= ends.size())
      throw std::invalid_argument("exactEpsilons: profile " + std::to_string(r.profile) + " of " +
                                  std::to_string(ends.size()));
  }
  for (const auto& x : samples)
    if (x.profile < 0 || static_cast<std::size_t>(x.profile) >= ends.size() || !(x.eps >= 0.0) || !std::isfinite(x.eps))
      throw std::invalid_argument("exactEpsilons: a sample of profile " + std::to_string(x.profile) + " at eps " +
                                  std::to_string(x.eps));
}

/// The root finders of exactEpsilons, one per request, advanced together: each round evaluates the pending trial of
/// every unfinished request in one call of the evaluator (round 0: delta(0)), then moves each request's bracket.
struct ExactEpsilonSearch {
  std::span<const ProfileRequest> requests;
  std::span<const PrivacyProfileEnds> ends;
  const ProfileEvaluator& evaluate;
  std::span<const ProfileSample> samples;
  double tolerance;
  std::size_t R = requests.size();
  std::vector<ExactEpsilon> out = std::vector<ExactEpsilon>(R);
  std::vector<RootState> st = std::vector<RootState>(R);
  std::vector<ProfileQuery> queries{};
  std::vector<std::size_t> who{};  // the request of each query
  std::vector<double> values{};
  std::vector<double> lowest = std::vector<double>(ends.size());

  /// Evaluates the pending queries (no call without one) and counts the round for their requests.
  void round() {
    values.assign(queries.size(), kNaN);
    std::fill(lowest.begin(), lowest.end(), kInf);
    for (std::size_t i = 0; i < who.size(); ++i) {
      double& l = lowest[static_cast<std::size_t>(queries[i].profile)];
      l = std::min(l, st[who[i]].phase == RootState::Done ? 0.0 : st[who[i]].lo);
    }
    if (!queries.empty()) evaluate(queries, values, lowest);
    for (std::size_t i = 0; i < who.size(); ++i) ++out[who[i]].rounds;
  }
  void finish(std::size_t r, double eps, ExactEpsilonStatus status, double lower, double deltaAt) {
    out[r].epsilon = eps;
    out[r].status = status;
    out[r].lower = lower;
    out[r].deltaAtEpsilon = deltaAt;
    st[r].phase = RootState::Done;
  }

  /// Round 0: delta(0) of every request whose profile has finite ends and no sample at 0; then each request is
  /// settled (not computed, zero, unreachable) or its bracket started.
  void start() {
    // delta(0) where a sample gives it (NaN: evaluate).
    std::vector<double> atZero(ends.size(), kNaN);
    for (const auto& x : samples)
      if (x.eps == 0.0) atZero[static_cast<std::size_t>(x.profile)] = x.value;
    std::vector<double> d0(R, kNaN);
    std::vector<std::size_t> started;
    for (std::size_t r = 0; r < R; ++r) {
      const auto& e = ends[static_cast<std::size_t>(requests[r].profile)];
      if (!std::isfinite(e.floor) || std::isnan(e.flatFrom)) {
        finish(r, kNaN, ExactEpsilonStatus::NotComputed, kNaN, kNaN);
        continue;
      }
      started.push_back(r);
      d0[r] = atZero[static_cast<std::size_t>(requests[r].profile)];
      if (!std::isnan(d0[r])) continue;
      queries.push_back({requests[r].profile, 0.0});
      who.push_back(r);
    }
    round();
    for (std::size_t i = 0; i < who.size(); ++i) d0[who[i]] = values[i];
    for (const std::size_t r : started) {
      const double delta = requests[r].delta;
      const auto& e = ends[static_cast<std::size_t>(requests[r].profile)];
      if (std::isnan(d0[r])) {
        finish(r, kNaN, ExactEpsilonStatus::NotComputed, kNaN, kNaN);
      } else if (d0[r] <= delta) {
        finish(r, 0.0, ExactEpsilonStatus::Zero, 0.0, d0[r]);
      } else if (e.floor > delta) {
        finish(r, kInf, ExactEpsilonStatus::Unreachable, kInf, kNaN);
      } else {
        startBracket(r, d0[r]);
      }
    }
  }

  /// A request with delta(0) > delta >= its floor: bracketing from eps = 0, or refining at once where the samples
  /// bracket the root.
  void startBracket(std::size_t r, double d0) {
    const double delta = requests[r].delta;
    const auto& e = ends[static_cast<std::size_t>(requests[r].profile)];
    RootState& s = st[r];
    s.phase = RootState::Bracketing;
    s.lo = 0.0;
    s.glo = std::log(d0 / delta);
    // Beyond flatFrom every term a - e^eps b with b > 0 is negative, so delta = floor <= delta there; the cap lies
    // a little further so that rounding of e^eps b cannot leave one such term positive.
    const double flat = std::max(e.flatFrom, 0.0);
    s.cap = flat + 1e-12 * std::max(1.0, flat) + 1e-300;
    s.trial = std::min(kFirstTrial, s.cap);
    // The samples' bracket: the largest sample above delta, then the smallest sample beyond it at or below delta.
    for (const auto& x : samples)
      if (x.profile == requests[r].profile && x.value > delta && x.eps > s.lo) {
        s.lo = x.eps;
        s.glo = std::log(x.value / delta);
      }
    for (const auto& x : samples)
      if (x.profile == requests[r].profile && !(x.value > delta) && x.eps > s.lo && x.eps < s.hi) {
        s.hi = x.eps;
        s.ghi = logOfRatio(x.value, delta);
        s.dhi = x.value;
      }
    if (s.lo >= s.cap) {
      finish(r, kInf, ExactEpsilonStatus::Unreachable, kInf, kNaN);  // as in the bracketing below
    } else if (std::isfinite(s.hi)) {
      s.phase = RootState::Refining;
      s.widthMark = s.hi - s.lo;
      if (s.hi - s.lo <= tolerance * s.hi) finish(r, s.hi, ExactEpsilonStatus::Root, s.lo, s.dhi);
      else s.trial = nextTrial(s, tolerance);
    } else if (s.lo > 0.0) {
      s.trial = std::min(2.0 * s.lo, s.cap);
    }
  }

  /// One round of the unfinished requests' trials; false when none is left.
  bool advance() {
    queries.clear();
    who.clear();
    for (std::size_t r = 0; r < R; ++r)
      if (st[r].phase != RootState::Done) {
        queries.push_back({requests[r].profile, st[r].trial});
        who.push_back(r);
      }
    if (queries.empty()) return false;
    round();
    for (std::size_t i = 0; i < who.size(); ++i) update(who[i], values[i]);
    return true;
  }

  /// Request r's bracket after delta(trial) = d: doubled while bracketing, narrowed (Illinois) while refining.
  void update(std::size_t r, double d) {
    RootState& s = st[r];
    const double delta = requests[r].delta, x = s.trial;
    if (std::isnan(d)) {
      finish(r, kNaN, ExactEpsilonStatus::NotComputed, kNaN, kNaN);
      return;
    }
    const double g = logOfRatio(d, delta);  // -inf for d = 0
    if (s.phase == RootState::Bracketing) {
      if (d > delta) {
        s.lo = x;
        s.glo = g;
        if (x >= s.cap) {
          // delta(eps) > delta up to where it has reached its limit: only rounding between the caller's floor and
          // its sum can lead here (floor = delta to the last bits).
          finish(r, kInf, ExactEpsilonStatus::Unreachable, kInf, kNaN);
        } else {
          s.trial = std::min(2.0 * x, s.cap);
        }
        return;
      }
      s.hi = x;
      s.ghi = g;
      s.dhi = d;
      s.phase = RootState::Refining;
      s.widthMark = s.hi - s.lo;
      s.roundsSinceHalving = 0;
      s.lastSide = 0;
    } else {
      const int side = d <= delta ? +1 : -1;
      if (side > 0) {
        s.hi = x;
        s.ghi = g;
        s.dhi = d;
      } else {
        s.lo = x;
        s.glo = g;
      }
      // Illinois: the same end replaced twice in a row halves the other end's value, so that the retained end
      // moves too (superlinear convergence instead of regula falsi's one-sided creep).
      if (side == s.lastSide) (side > 0 ? s.glo : s.ghi) *= 0.5;
      s.lastSide = side;
      if (s.hi - s.lo <= 0.5 * s.widthMark) {
        s.widthMark = s.hi - s.lo;
        s.roundsSinceHalving = 0;
      } else {
        ++s.roundsSinceHalving;
      }
    }
    if (s.hi - s.lo <= tolerance * s.hi || out[r].rounds >= kMaxRounds) {
      finish(r, s.hi, ExactEpsilonStatus::Root, s.lo, s.dhi);
      return;
    }
    s.trial = nextTrial(s, tolerance);
    if (s.roundsSinceHalving >= 3) s.roundsSinceHalving = 0;  // the bisection just proposed halves the bracket
  }
};

}  // namespace

std::vector<ExactEpsilon> exactEpsilons(std::span<const ProfileRequest> requests,
                                        std::span<const PrivacyProfileEnds> ends, const ProfileEvaluator& evaluate,
                                        std::span<const ProfileSample> samples, double tolerance) {
  checkExactEpsilonInputs(requests, ends, samples, tolerance);
  ExactEpsilonSearch search{requests, ends, evaluate, samples, tolerance};
  search.start();
  while (search.advance()) {
  }
  return std::move(search.out);
}

double PairEpsilon::epsilon() const {
  if (std::isnan(pq.epsilon) || std::isnan(qp.epsilon)) return kNaN;
  return std::max(pq.epsilon, qp.epsilon);
}

ExactEpsilonStatus PairEpsilon::status() const {
  using S = ExactEpsilonStatus;
  for (S s : {S::NotComputed, S::Unreachable, S::NoiseLimited, S::TruncatedSuspect, S::Root})
    if (pq.status == s || qp.status == s) return s;
  return S::Zero;
}

}  // namespace fpdp::models
