// RDP -> (eps, delta) conversions of MATH.md §7 against values computed by hand (independently, in Python, from the
// formulas as printed and from dp_accounting's compute_epsilon rule), the continuous optimum for the Gaussian
// mechanism, and the root finder of the exact eps(delta) against the closed-form Gaussian profile of MATH.md §6
// (truth by bisection), against a cell sum with a floor and a flat end, and its evaluator contract.
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "models/RdpConversion.hpp"

using namespace fpdp::models;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// MATH.md §6: hockey-stick curve of N(mu, 1) against N(0, 1) (equal covariances, mu^2 = dm^T S^-1 dm).
// (A test oracle kept here: the functionals' own closed-form oracle lives with solver/functionals/Divergences' tests.)
double gaussianDelta(double mu, double eps) { return Phi(-eps / mu + mu / 2.0) - std::exp(eps) * Phi(-eps / mu - mu / 2.0); }

// The smallest eps with gaussianDelta(mu, eps) <= delta, by bisection (the curve is decreasing).
double gaussianExactEpsilon(double mu, double delta) {
  double lo = 0.0, hi = 1.0;
  while (gaussianDelta(mu, hi) > delta) hi *= 2.0;
  for (int i = 0; i < 200 && hi - lo > 0.0; ++i) {
    const double mid = 0.5 * (lo + hi);
    (gaussianDelta(mu, mid) > delta ? lo : hi) = mid;
  }
  return hi;
}

// The order grid of divergence.orders = "dense" (models::denseRenyiOrders, dp_accounting's grid).
std::vector<double> denseGrid() {
  std::vector<double> a;
  for (int k = 11; k <= 109; ++k) a.push_back(k / 10.0);
  for (int k = 11; k <= 63; ++k) a.push_back(k);
  for (double x : {128.0, 256.0, 512.0, 1024.0}) a.push_back(x);
  return a;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(rdp_conversion)

BOOST_AUTO_TEST_CASE(conversions_reproduce_hand_computed_values) {
  // Orders 2, 4, 8 with R = 0.1, 0.3, 0.9 and delta = 1e-5 (log(1/delta) = 11.512925464970229):
  //   Mironov  R + log(1/delta)/(a-1):                       11.612925464970228, 4.137641821656743, 2.5447036378528898
  //   CKS      R + log((a-1)/a) - (log delta + log a)/(a-1):  10.226631103850337, 3.387861628831665, 2.1141091678455335
  // The minimum is at alpha = 8 for both.
  const std::vector<double> orders{2, 4, 8}, renyi{0.1, 0.3, 0.9};
  const auto m = mironovEpsilon(orders, renyi, 1e-5);
  const auto c = cksEpsilon(orders, renyi, 1e-5);
  BOOST_TEST(m.epsilon == 2.5447036378528898, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(c.epsilon == 2.1141091678455335, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(m.order == 8.0);
  BOOST_TEST(c.order == 8.0);
  // An interior minimum: R = 0.01 alpha (a Gaussian mechanism with mu^2 = 0.02) at orders 1.5, 3, 32, 64, delta = 1e-3:
  //   Mironov  13.830510557964274, 3.483877639491068, 0.5428308154510366, 0.7496469091901927  -> alpha = 32
  //   CKS      11.920968053079834, 2.529106387048849, 0.3992841847880781, 0.6678845350258682  -> alpha = 32
  const std::vector<double> o2{1.5, 3, 32, 64}, r2{0.015, 0.03, 0.32, 0.64};
  const auto m2 = mironovEpsilon(o2, r2, 1e-3);
  const auto c2 = cksEpsilon(o2, r2, 1e-3);
  BOOST_TEST(m2.epsilon == 0.5428308154510366, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(c2.epsilon == 0.3992841847880781, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(m2.order == 32.0);
  BOOST_TEST(c2.order == 32.0);
  // Each single order reproduces its own hand value (the minimum over one order is that order's term).
  BOOST_TEST(mironovEpsilon(std::vector<double>{3}, std::vector<double>{0.03}, 1e-3).epsilon == 3.483877639491068,
             boost::test_tools::tolerance(1e-14));
  BOOST_TEST(cksEpsilon(std::vector<double>{1.5}, std::vector<double>{0.015}, 1e-3).epsilon == 11.920968053079834,
             boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_CASE(infinite_and_missing_orders_are_skipped) {
  // R_2 = +inf (e.g. unequal covariances) and R_4 not computed: only alpha = 8 counts.
  const std::vector<double> orders{2, 4, 8}, renyi{kInf, kNaN, 0.9};
  BOOST_TEST(mironovEpsilon(orders, renyi, 1e-5).epsilon == 2.5447036378528898, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(cksEpsilon(orders, renyi, 1e-5).order == 8.0);
  const std::vector<double> none{kInf, kNaN, kInf};  // no finite order, some infinite: no finite guarantee
  BOOST_TEST(mironovEpsilon(orders, none, 1e-5).epsilon == kInf);
  BOOST_TEST(std::isnan(cksEpsilon(orders, none, 1e-5).order));
  const std::vector<double> missing{kNaN, kNaN, kNaN};  // nothing computed: no number
  BOOST_TEST(std::isnan(cksEpsilon(orders, missing, 1e-5).epsilon));
  // A negative minimum is clamped at 0: R = 0 and a huge order with delta close to 1.
  BOOST_TEST(cksEpsilon(std::vector<double>{1000}, std::vector<double>{0.0}, 0.5).epsilon == 0.0);
  BOOST_CHECK_THROW(mironovEpsilon(orders, renyi, 0.0), std::invalid_argument);
  BOOST_CHECK_THROW(cksEpsilon(orders, std::vector<double>{1.0}, 1e-5), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(dense_grid_reaches_the_continuous_optimum_for_the_gaussian_mechanism) {
  // R_alpha = alpha mu^2 / 2: Mironov's min over alpha > 1 is mu^2/2 + mu sqrt(2 log(1/delta)) at
  // alpha* = 1 + sqrt(2 log(1/delta))/mu (by hand: d/da [a mu^2/2 + L/(a-1)] = 0). On a grid of spacing 1e-3 around
  // alpha* the grid minimum exceeds it by at most (L/(a*-1)^3) (1e-3/2)^2 (second derivative 2L/(a-1)^3, half a
  // spacing away).
  const double mu = 0.5, delta = 1e-6, L = std::log(1.0 / delta);
  const double alphaStar = 1.0 + std::sqrt(2.0 * L) / mu;
  std::vector<double> orders, renyi;
  for (double a = 1.001; a < 3.0 * alphaStar; a += 1e-3) {
    orders.push_back(a);
    renyi.push_back(a * mu * mu / 2.0);
  }
  const double exact = mu * mu / 2.0 + mu * std::sqrt(2.0 * L);
  const auto m = mironovEpsilon(orders, renyi, delta);
  const double slack = L / std::pow(alphaStar - 1.0, 3) * 0.25e-6 * 1.01;
  BOOST_TEST(m.epsilon >= exact - 1e-12);
  BOOST_TEST(m.epsilon - exact <= slack);
  BOOST_TEST(std::fabs(m.order - alphaStar) <= 1e-3);
  // CKS is never worse than Mironov (its extra terms log((a-1)/a) - log(a)/(a-1) are negative for a > 1).
  BOOST_TEST(cksEpsilon(orders, renyi, delta).epsilon < m.epsilon);
}

BOOST_AUTO_TEST_CASE(cks_follows_dp_accounting_compute_epsilon) {
  // dp_accounting's rule (rdp_privacy_accountant.compute_epsilon), evaluated by hand in Python: per order 0 when
  // delta^2 + expm1(-R) > 0, the CKS formula when alpha > 1.01, inf otherwise; then max(0, min).
  // p = q (R = 0 at every order of the dense grid): 0; the formula alone gives 0.003501409677071506 (alpha = 1024).
  const std::vector<double> dense = denseGrid();
  const std::vector<double> zeros(dense.size(), 0.0);
  BOOST_TEST(cksEpsilon(dense, zeros, 1e-5).epsilon == 0.0);
  // Mironov's column is Prop. 3 as printed (no shortcut): log(1/delta)/(1024 - 1) at R = 0.
  BOOST_TEST(mironovEpsilon(dense, zeros, 1e-5).epsilon == std::log(1e5) / 1023.0, boost::test_tools::tolerance(1e-14));
  // R_2 = 0.01 at delta = 0.1: 0.01 + expm1(-0.01) > 0, so 0 (the formula alone: min over {2, 4} = 0.037748171506270745).
  BOOST_TEST(cksEpsilon(std::vector<double>{2, 4}, std::vector<double>{0.01, 0.02}, 0.1).epsilon == 0.0);
  // Either side of the threshold R = -log(1 - delta^2) = 0.010050335853501442 at delta = 0.1, order 3.
  BOOST_TEST(cksEpsilon(std::vector<double>{3}, std::vector<double>{0.0100502}, 0.1).epsilon == 0.0);
  BOOST_TEST(cksEpsilon(std::vector<double>{3}, std::vector<double>{0.0100504}, 0.1).epsilon == 0.20657169405480358,
             boost::test_tools::tolerance(1e-13));
  // Orders <= 1.01 do not use the formula: alone they give inf; the shortcut still applies to them.
  BOOST_TEST(cksEpsilon(std::vector<double>{1.005}, std::vector<double>{0.5}, 1e-5).epsilon == kInf);
  BOOST_TEST(cksEpsilon(std::vector<double>{1.005, 2}, std::vector<double>{0.0, 3.0}, 1e-5).epsilon == 0.0);
}

BOOST_AUTO_TEST_CASE(exact_epsilons_solve_the_gaussian_profile) {
  // The closed-form profile of N(mu, 1) against N(0, 1) (MATH.md §6) as the evaluator: the root finder must return
  // the bisection truth (200 halvings) to its tolerance 1e-10 relative, from any eps: mu = 0.0398 (CYS Figure 1,
  // eps(1e-5) = 0.1247, where the 0.05 grid's interpolation gave 0.1444), mu = 1, and mu = 8, whose eps at small
  // delta (about 80) lies far beyond any grid of divergence.hockey_stick_eps_max's default 10.
  const std::vector<double> deltas{0.3, 1e-2, 1e-5, 1e-8, 1e-12};
  for (double mu : {0.0398, 1.0, 8.0}) {
    std::vector<ProfileRequest> requests;
    for (double d : deltas) requests.push_back({0, d});
    const PrivacyProfileEnds ends{0.0, kInf};  // no mass at eps = inf; log(p/q) is unbounded
    const ProfileEvaluator closedForm = [&](std::span<const ProfileQuery> q, std::span<double> v,
                                            std::span<const double>) {
      for (std::size_t i = 0; i < q.size(); ++i) v[i] = gaussianDelta(mu, q[i].eps);
    };
    const auto found = exactEpsilons(requests, std::span(&ends, 1), closedForm);
    for (std::size_t j = 0; j < deltas.size(); ++j) {
      const double truth = gaussianExactEpsilon(mu, deltas[j]);
      const auto& e = found[j];
      BOOST_TEST_MESSAGE("mu " << mu << " delta " << deltas[j] << " eps " << e.epsilon << " truth " << truth
                               << " rounds " << e.rounds);
      if (gaussianDelta(mu, 0.0) <= deltas[j]) {  // TV <= delta
        BOOST_TEST(static_cast<int>(e.status) == static_cast<int>(ExactEpsilonStatus::Zero));
        BOOST_TEST(e.epsilon == 0.0);
        continue;
      }
      BOOST_TEST_REQUIRE(static_cast<int>(e.status) == static_cast<int>(ExactEpsilonStatus::Root));
      BOOST_TEST(std::fabs(e.epsilon - truth) <= 2e-10 * truth);
      BOOST_TEST(gaussianDelta(mu, e.epsilon) <= deltas[j]);  // the answer's side of the root
      BOOST_TEST(gaussianDelta(mu, e.lower) > deltas[j]);
      BOOST_TEST(e.epsilon - e.lower <= 1e-10 * e.epsilon);
      BOOST_TEST(e.deltaAtEpsilon == gaussianDelta(mu, e.epsilon));
      BOOST_TEST(e.rounds <= 40);  // doubling plus a superlinear refinement, not plain bisection
    }
    if (mu == 8.0) BOOST_TEST(found.back().epsilon > 10.0);
    // The RDP conversions are upper bounds of the exact value (R_alpha = alpha mu^2/2 on a dense order grid).
    std::vector<double> orders, renyi;
    for (double a = 1.02; a <= 200.0; a += 0.01) {
      orders.push_back(a);
      renyi.push_back(a * mu * mu / 2.0);
    }
    for (std::size_t j = 0; j < deltas.size(); ++j) {
      BOOST_TEST(cksEpsilon(orders, renyi, deltas[j]).epsilon >= found[j].epsilon);
      BOOST_TEST(mironovEpsilon(orders, renyi, deltas[j]).epsilon >= cksEpsilon(orders, renyi, deltas[j]).epsilon);
    }
  }
}

BOOST_AUTO_TEST_CASE(exact_epsilons_start_from_samples_without_interpolating_them) {
  // Samples of the profile on the grid 0, 0.05, ..., 1 (the hockey-stick grid of a run, cut short): the brackets
  // start from them (delta(0) is not evaluated again; fewer rounds), the roots are the same to the tolerance, also
  // beyond the samples' end (mu = 1: eps(1e-12) = 7.2), and a sample at 0 at or below delta answers alone.
  const double mu = 1.0;
  std::vector<ProfileSample> samples;
  for (int k = 0; k <= 20; ++k) samples.push_back({0, 0.05 * k, gaussianDelta(mu, 0.05 * k)});
  const PrivacyProfileEnds ends{0.0, kInf};
  std::vector<ProfileRequest> requests;
  for (double d : {0.3, 1e-2, 1e-5, 1e-12}) requests.push_back({0, d});
  int atZero = 0;
  const ProfileEvaluator evaluate = [&](std::span<const ProfileQuery> q, std::span<double> v, std::span<const double>) {
    for (std::size_t i = 0; i < q.size(); ++i) {
      atZero += q[i].eps == 0.0;
      v[i] = gaussianDelta(mu, q[i].eps);
    }
  };
  const auto plain = exactEpsilons(requests, std::span(&ends, 1), evaluate);
  BOOST_TEST(atZero == 4);
  atZero = 0;
  const auto seeded = exactEpsilons(requests, std::span(&ends, 1), evaluate, samples);
  BOOST_TEST(atZero == 0);
  for (std::size_t j = 0; j < requests.size(); ++j) {
    const double truth = gaussianExactEpsilon(mu, requests[j].delta);
    BOOST_TEST_MESSAGE("delta " << requests[j].delta << ": rounds " << plain[j].rounds << " unseeded, "
                                << seeded[j].rounds << " from the samples");
    BOOST_TEST(std::fabs(seeded[j].epsilon - truth) <= 2e-10 * truth);
    BOOST_TEST(seeded[j].rounds <= plain[j].rounds);
  }
  // delta(0) = 0.383 as a sample: delta = 0.5 is answered without an evaluation.
  bool called = false;
  const ProfileRequest wide{0, 0.5};
  const auto zero = exactEpsilons(std::span(&wide, 1), std::span(&ends, 1),
                                  [&](std::span<const ProfileQuery>, std::span<double>, std::span<const double>) {
                                    called = true;
                                  },
                                  samples);
  BOOST_TEST(!called);
  BOOST_TEST(static_cast<int>(zero[0].status) == static_cast<int>(ExactEpsilonStatus::Zero));
  const std::vector<ProfileSample> bad{{1, 0.0, 0.1}};
  BOOST_CHECK_THROW(exactEpsilons(requests, std::span(&ends, 1), evaluate, bad), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(exact_epsilons_of_a_cell_sum_and_its_ends) {
  // A profile that is a finite sum, as on a mesh: cells (a, b) = (p, q) masses. delta(eps) = sum max(a - e^eps b, 0)
  // is piecewise linear in e^eps with kinks at log(a/b); it is flat (= the floor, the mass of p where q = 0) beyond
  // the largest log(a/b). Two directions (profile 0: p || q, 1: q || p) and the pair's maximum.
  const std::vector<double> P{0.05, 0.25, 0.4, 0.2, 0.1, 0.0}, Q{0.0, 0.1, 0.3, 0.3, 0.25, 0.05};
  auto sum = [&](const std::vector<double>& a, const std::vector<double>& b, double eps) {
    double d = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) d += std::max(a[i] - std::exp(eps) * b[i], 0.0);
    return d;
  };
  auto ends = [](const std::vector<double>& a, const std::vector<double>& b) {
    PrivacyProfileEnds e;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] > b[i]) {
        if (b[i] > 0) e.flatFrom = std::max(e.flatFrom, std::log(a[i] / b[i]));
        else e.floor += a[i];
      }
    return e;
  };
  const PrivacyProfileEnds both[2] = {ends(P, Q), ends(Q, P)};
  BOOST_TEST(both[0].floor == 0.05);
  BOOST_TEST(both[1].floor == 0.05);
  const ProfileEvaluator evaluate = [&](std::span<const ProfileQuery> q, std::span<double> v, std::span<const double>) {
    for (std::size_t i = 0; i < q.size(); ++i) v[i] = q[i].profile == 0 ? sum(P, Q, q[i].eps) : sum(Q, P, q[i].eps);
  };
  // TV = 0.3 (0.30000000000000004 as summed); delta = 0.31: Zero; 0.1: on the piece where only the (0.25, 0.1) cell and the floor count:
  // 0.05 + 0.25 - 0.1 e^eps = 0.1 -> eps = log 2 (p || q), and for q || p: 0.05 + (0.25 - 0.1 e^eps) + ... by hand
  // below; 0.05: at the floor, reached at eps = log 2.5 (flatFrom) exactly; 0.01 < floor: Unreachable.
  const std::vector<ProfileRequest> requests{{0, 0.31}, {0, 0.1}, {0, 0.05}, {0, 0.01}, {1, 0.1}};
  const auto found = exactEpsilons(requests, both, evaluate);
  BOOST_TEST(static_cast<int>(found[0].status) == static_cast<int>(ExactEpsilonStatus::Zero));
  BOOST_TEST(found[0].epsilon == 0.0);
  BOOST_TEST(static_cast<int>(found[1].status) == static_cast<int>(ExactEpsilonStatus::Root));
  BOOST_TEST(found[1].epsilon == std::log(2.0), boost::test_tools::tolerance(1e-10));
  BOOST_TEST(found[2].epsilon <= std::log(2.5) * (1 + 1e-10));
  BOOST_TEST(sum(P, Q, found[2].epsilon) <= 0.05);
  BOOST_TEST(sum(P, Q, found[2].lower) > 0.05);
  BOOST_TEST(static_cast<int>(found[3].status) == static_cast<int>(ExactEpsilonStatus::Unreachable));
  BOOST_TEST(found[3].epsilon == kInf);
  // q || p at delta = 0.1: cells (q, p) with q > p: (0.05, 0) floor, (0.3, 0.2), (0.25, 0.1); at eps in
  // [log 1.5, log 2.5) only (0.25, 0.1) and the floor: 0.05 + 0.25 - 0.1 e^eps = 0.1 -> eps = log 2 again; check
  // that this lies in the piece: log 2 >= log 1.5. (The brute-force sum confirms it.)
  BOOST_TEST(found[4].epsilon == std::log(2.0), boost::test_tools::tolerance(1e-10));
  BOOST_TEST(sum(Q, P, found[4].epsilon) <= 0.1);
  // The pair: the larger of the two, its status; NaN and Unreachable win.
  PairEpsilon pair{found[1], found[0]};
  BOOST_TEST(pair.epsilon() == found[1].epsilon);
  BOOST_TEST(static_cast<int>(pair.status()) == static_cast<int>(ExactEpsilonStatus::Root));
  pair.qp = found[3];
  BOOST_TEST(pair.epsilon() == kInf);
  BOOST_TEST(static_cast<int>(pair.status()) == static_cast<int>(ExactEpsilonStatus::Unreachable));
  pair.qp = ExactEpsilon{};  // not computed
  pair.qp.epsilon = kNaN;
  BOOST_TEST(std::isnan(pair.epsilon()));
  BOOST_TEST(static_cast<int>(pair.status()) == static_cast<int>(ExactEpsilonStatus::NotComputed));
  // Non-finite ends: not computed, without an evaluation.
  const PrivacyProfileEnds bad{kNaN, 0.0};
  const ProfileRequest one{0, 0.1};
  bool called = false;
  const auto none = exactEpsilons(std::span(&one, 1), std::span(&bad, 1),
                                  [&](std::span<const ProfileQuery>, std::span<double>, std::span<const double>) {
                                    called = true;
                                  });
  BOOST_TEST(!called);
  BOOST_TEST(std::isnan(none[0].epsilon));
  BOOST_TEST(static_cast<int>(none[0].status) == static_cast<int>(ExactEpsilonStatus::NotComputed));
  BOOST_CHECK_THROW(exactEpsilons(std::vector<ProfileRequest>{{0, 0.0}}, both, evaluate), std::invalid_argument);
  BOOST_CHECK_THROW(exactEpsilons(std::vector<ProfileRequest>{{2, 0.1}}, both, evaluate), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(exact_epsilons_lowest_eps_only_rises_above_every_later_query) {
  // The evaluator's lowestEps hint (an evaluator may drop the terms that vanish from there on): every query of a
  // profile lies at or above the hint given with it and with every earlier call.
  std::vector<double> lowest{0.0, 0.0};
  bool ok = true;
  const ProfileEvaluator evaluate = [&](std::span<const ProfileQuery> q, std::span<double> v,
                                        std::span<const double> l) {
    for (int j = 0; j < 2; ++j) {
      if (l[j] < lowest[j]) ok = false;  // a hint may not fall back
      lowest[j] = std::max(lowest[j], l[j]);
    }
    for (std::size_t i = 0; i < q.size(); ++i) {
      if (q[i].eps < lowest[static_cast<std::size_t>(q[i].profile)]) ok = false;
      v[i] = gaussianDelta(q[i].profile == 0 ? 0.5 : 2.0, q[i].eps);
    }
  };
  const PrivacyProfileEnds ends[2] = {{0.0, kInf}, {0.0, kInf}};
  std::vector<ProfileRequest> requests;
  for (double d : {0.1, 1e-3, 1e-9})  // all below TV (0.197 and 0.683): roots
    for (int j = 0; j < 2; ++j) requests.push_back({j, d});
  const auto found = exactEpsilons(requests, ends, evaluate);
  BOOST_TEST(ok);
  for (std::size_t r = 0; r < requests.size(); ++r) {
    const double truth = gaussianExactEpsilon(requests[r].profile == 0 ? 0.5 : 2.0, requests[r].delta);
    BOOST_TEST(std::fabs(found[r].epsilon - truth) <= 2e-10 * truth);
  }
}

// delta(eps) from R_alpha (cksDelta): the inverse of the CKS eps at its minimising order (hand value above: orders
// 2, 4, 8 with R = 0.1, 0.3, 0.9 give eps(1e-5) = 2.1141091678455335 at alpha = 8, so delta(2.1141...) = 1e-5 from
// alpha = 8, the others larger), and for the Gaussian mechanism (R_alpha = alpha mu^2 / 2) an upper bound of the
// exact delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) that is not vacuous (within 40x here, where the
// exact value falls to 1e-89).
BOOST_AUTO_TEST_CASE(delta_from_renyi_bounds_the_exact_profile) {
  const std::vector<double> orders{2, 4, 8}, renyi{0.1, 0.3, 0.9};
  BOOST_TEST(cksDelta(orders, renyi, 2.1141091678455335) == 1e-5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(cksDelta(orders, std::vector<double>{0.1, 0.0, 0.9}, 1.0) == 0.0);  // identical laws
  BOOST_TEST(cksDelta(orders, std::vector<double>(3, std::numeric_limits<double>::infinity()), 1.0) == 1.0);
  // eps = 0: alpha = 4's term, exp(3 (0.3 + log(3/4))) / 4 = 0.2594, below Bretagnolle–Huber's sqrt(1 - e^-0.1) =
  // 0.3085 and alpha = 2's 0.2761.
  BOOST_TEST(cksDelta(orders, renyi, 0.0) == std::exp(3.0 * (0.3 + std::log1p(-0.25))) / 4.0,
             boost::test_tools::tolerance(1e-14));
  BOOST_TEST(cksDelta(std::vector<double>{2.0}, std::vector<double>{3.0}, 0.0) == std::sqrt(-std::expm1(-3.0)),
             boost::test_tools::tolerance(1e-15));  // where Bretagnolle–Huber is the smaller
  BOOST_CHECK_THROW(cksDelta(orders, renyi, -1.0), std::invalid_argument);
  const std::vector<double> grid{1.5, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256};
  for (const double mu : {0.3, 1.0, 2.0})
    for (const double eps : {0.1, 1.0, 3.0, 6.0}) {
      std::vector<double> r;
      for (const double a : grid) r.push_back(a * mu * mu / 2);
      const double exact = 0.5 * std::erfc((eps / mu - mu / 2) / std::sqrt(2.0)) -
                           std::exp(eps) * 0.5 * std::erfc((eps / mu + mu / 2) / std::sqrt(2.0));
      const double bound = cksDelta(grid, r, eps);
      BOOST_TEST_MESSAGE("mu " << mu << ", eps " << eps << ": exact " << exact << ", from R_alpha " << bound);
      BOOST_TEST(bound >= exact);
      BOOST_TEST(bound <= 40.0 * exact);
    }
}

BOOST_AUTO_TEST_SUITE_END()
