// The composition accountant of Poisson-subsampled DP-SGD (models/PrivacyLossDistribution.hpp, MATH.md §8): the
// pessimistic/optimistic pair brackets every independent reference: the GDP closed form and dp_accounting's figures
// at gamma = 1, the one-step closed form (erfc), the two-step profile by quadrature, and the RDP bound of Mironov,
// Talwar, Zhang 2019 above; refinement of the grid narrows the bracket.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "models/GaussianComposition.hpp"
#include "models/PrivacyLossDistribution.hpp"
#include "models/RdpConversion.hpp"

using namespace fpdp::models;

namespace {

DiscretePld composed(double mu, double gamma, SubsampledDirection dir, PldBound bound, long K, const PldGrid& g) {
  return selfComposePld(subsampledGaussianPld(mu, gamma, dir, bound, g), K, bound, g.tailMass);
}

/// delta(eps) of the two-fold composition of one direction by quadrature: int p(x) delta_1(eps - L(x)) dx, composite
/// Simpson on [-14, mu + 14] (the one-step profile in closed form holds at every real eps).
double twoStepDelta(double mu, double gamma, SubsampledDirection dir, double eps) {
  const SubsampledGaussianPair pair{mu, gamma, dir};
  const double a = -14.0, b = mu + 14.0;
  const int n = 400000;
  const double w = (b - a) / n;
  double s = 0.0;
  for (int k = 0; k <= n; ++k) {
    const double x = a + k * w;
    const double f = pair.densityP(x) * subsampledGaussianDelta(mu, gamma, dir, eps - pair.loss(x));
    s += f * (k == 0 || k == n ? 1.0 : (k % 2 ? 4.0 : 2.0));
  }
  return s * w / 3.0;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(privacy_loss_distribution)

BOOST_AUTO_TEST_CASE(full_batch_brackets_gdp_and_dp_accounting_figures) {
  // dp_accounting's PLD accountant for the CYS Figure 1 setting, z = 250, delta = 1e-5 (printed to 6 digits): the
  // bracket [optimistic, pessimistic] holds the figure (up to its last digit's rounding) and the mu sqrt(K)-GDP root.
  const struct {
    long steps;
    double eps, halfUnit;
  } figures[] = {{100, 0.125422, 5e-7}, {1000, 0.440066, 5e-7}, {10000, 1.55498, 5e-6}, {100000, 5.75948, 5e-6}};
  for (const auto& f : figures) {
    const auto r = subsampledGaussianEpsilons(1.0 / 250, 1.0, f.steps, {1e-5}).front();
    const double gdp = gdpEpsilon(std::sqrt(static_cast<double>(f.steps)) / 250, 1e-5);
    BOOST_TEST_INFO("K = " << f.steps << ": optimistic " << r.optimistic << ", pessimistic " << r.pessimistic);
    BOOST_TEST(r.optimistic <= gdp);
    BOOST_TEST(gdp <= r.pessimistic);
    BOOST_TEST(r.optimistic <= f.eps + f.halfUnit);
    BOOST_TEST(f.eps - f.halfUnit <= r.pessimistic);
    BOOST_TEST(r.pessimistic - r.optimistic <= 2e-5 * gdp);  // the grid's accuracy (pldGridFor)
  }
}

BOOST_AUTO_TEST_CASE(one_step_brackets_the_closed_form) {
  for (const auto& [mu, gamma] : {std::pair{1.0, 0.01}, std::pair{0.5, 0.1}, std::pair{2.0, 0.3}})
    for (auto dir : {SubsampledDirection::Remove, SubsampledDirection::Add}) {
      const PldGrid g = pldGridFor(mu, gamma);
      const auto pess = subsampledGaussianPld(mu, gamma, dir, PldBound::Pessimistic, g);
      const auto opt = subsampledGaussianPld(mu, gamma, dir, PldBound::Optimistic, g);
      for (double eps : {0.0, 0.001, 0.01, 0.05, 0.2, 0.5}) {
        const double exact = subsampledGaussianDelta(mu, gamma, dir, eps);
        BOOST_TEST_INFO("mu " << mu << " gamma " << gamma << " dir " << static_cast<int>(dir) << " eps " << eps);
        BOOST_TEST(opt.delta(eps) <= exact * (1 + 1e-12) + 1e-300);
        BOOST_TEST(exact <= pess.delta(eps) * (1 + 1e-12) + 1e-18);
        // The gap: relative where delta is of a size an eps is asked at, absolute in the far tail (the top node's
        // interpolation and the mass at infinity).
        BOOST_TEST(pess.delta(eps) - opt.delta(eps) <= (exact > 1e-8 ? 2e-3 * exact : 1e-9));
      }
    }
}

BOOST_AUTO_TEST_CASE(two_steps_bracket_the_quadrature) {
  const double mu = 1.0, gamma = 0.05;
  for (auto dir : {SubsampledDirection::Remove, SubsampledDirection::Add}) {
    const PldGrid g = pldGridFor(mu, gamma);
    const auto pess = composed(mu, gamma, dir, PldBound::Pessimistic, 2, g);
    const auto opt = composed(mu, gamma, dir, PldBound::Optimistic, 2, g);
    for (double eps : {0.0, 0.02, 0.1, 0.3}) {
      const double q = twoStepDelta(mu, gamma, dir, eps);
      BOOST_TEST_INFO("dir " << static_cast<int>(dir) << " eps " << eps << ": " << opt.delta(eps) << " <= " << q
                             << " <= " << pess.delta(eps));
      BOOST_TEST(opt.delta(eps) <= q * (1 + 1e-7));
      BOOST_TEST(q <= pess.delta(eps) * (1 + 1e-7));
      BOOST_TEST(pess.delta(eps) - opt.delta(eps) <= (q > 1e-8 ? 2e-3 * q : 1e-9));
    }
  }
}

BOOST_AUTO_TEST_CASE(rdp_bound_lies_above) {
  // K * RDP(alpha) of the subsampled Gaussian (integer orders), Mironov's and the CKS conversion: both upper bounds
  // on the add/remove eps, so above the certified (pessimistic) PLD eps.
  std::vector<double> orders;
  for (int a = 2; a <= 256; ++a) orders.push_back(a);
  for (const auto& [z, gamma, K] : {std::tuple{1.0, 0.01, 1000L}, std::tuple{4.0, 0.01, 1000L}, std::tuple{2.0, 0.1, 100L}}) {
    std::vector<double> rdp;
    for (double a : orders) rdp.push_back(K * subsampledGaussianRdp(1.0 / z, gamma, static_cast<int>(a)));
    const auto pld = subsampledGaussianEpsilons(1.0 / z, gamma, K, {1e-5}).front();
    BOOST_TEST_INFO("z " << z << " gamma " << gamma << " K " << K << ": PLD " << pld.pessimistic);
    BOOST_TEST(pld.optimistic <= pld.pessimistic);
    BOOST_TEST(pld.pessimistic <= cksEpsilon(orders, rdp, 1e-5).epsilon);
    BOOST_TEST(pld.pessimistic <= mironovEpsilon(orders, rdp, 1e-5).epsilon);
    BOOST_TEST(pld.pessimistic > 0.5 * cksEpsilon(orders, rdp, 1e-5).epsilon);  // and not vacuously far below
  }
}

BOOST_AUTO_TEST_CASE(refinement_narrows_the_bracket) {
  const double mu = 1.0, gamma = 0.01;
  const long K = 1000;
  PldGrid g = pldGridFor(mu, gamma);
  g.h *= 8.0;
  double lastGap = INFINITY, lastPess = INFINITY, lastOpt = 0.0;
  for (int level = 0; level < 4; ++level, g.h /= 2.0) {
    const auto r = subsampledGaussianEpsilons(mu, gamma, K, {1e-5}, g).front();
    const double gap = r.pessimistic - r.optimistic;
    BOOST_TEST_INFO("h " << g.h << ": [" << r.optimistic << ", " << r.pessimistic << "]");
    BOOST_TEST(gap >= 0.0);
    BOOST_TEST(gap <= 0.5 * lastGap);
    // Nested grids: the finer connect-the-dots interpolation lies below the coarser (round-off aside).
    BOOST_TEST(r.pessimistic <= lastPess * (1 + 1e-12));
    BOOST_TEST(r.pessimistic >= lastOpt);
    BOOST_TEST(r.optimistic <= lastPess);
    lastGap = gap;
    lastPess = r.pessimistic;
    lastOpt = r.optimistic;
  }
}

BOOST_AUTO_TEST_CASE(accountant_along_a_run_equals_a_fresh_one) {
  // Extended from 300 to 1000 steps (one more convolution) and back to 300 (recomputed): the same eps as composing
  // at once, up to the FFT's round-off.
  const double mu = 1.0, gamma = 0.02;
  SubsampledGaussianAccountant run(mu, gamma, pldGridFor(mu, gamma));
  for (long K : {300L, 1000L, 300L}) {
    const auto along = run.epsilons(K, {1e-5}).front();
    const auto fresh = subsampledGaussianEpsilons(mu, gamma, K, {1e-5}).front();
    BOOST_TEST_INFO("K = " << K);
    BOOST_TEST(along.pessimistic == fresh.pessimistic, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(along.optimistic == fresh.optimistic, boost::test_tools::tolerance(1e-9));
  }
  BOOST_TEST(run.epsilons(0, {1e-5}).front().pessimistic == 0.0);
}

BOOST_AUTO_TEST_CASE(epsilon_is_the_root_of_delta) {
  const PldGrid g = pldGridFor(1.0, 0.02);
  const auto d = composed(1.0, 0.02, SubsampledDirection::Remove, PldBound::Pessimistic, 500, g);
  for (double delta : {1e-3, 1e-5, 1e-8}) {
    const double eps = d.epsilon(delta);
    BOOST_TEST(d.delta(eps) <= delta);
    BOOST_TEST(d.delta(eps * (1 - 1e-9)) > delta);
  }
  BOOST_TEST(d.epsilon(1.0) == 0.0);
  DiscretePld atInfinity = d;
  atInfinity.infinityMass = 1e-4;
  BOOST_TEST(std::isinf(atInfinity.epsilon(1e-5)));
  // Bad input is refused, not defaulted.
  BOOST_CHECK_THROW(subsampledGaussianPld(1.0, 1.5, SubsampledDirection::Add, PldBound::Optimistic, g),
                    std::invalid_argument);
  BOOST_CHECK_THROW(subsampledGaussianPld(1.0, 0.1, SubsampledDirection::Add, PldBound::Optimistic, PldGrid{1e-12, 1e-15}),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

// Distributions of one or a few bins (what truncation leaves of a mechanism whose loss is almost surely beyond the
// tails' cut) compose exactly by the direct sum: the transform path failed on a length of 1 (a segmentation fault of a
// run with noise multiplier 0.014), and the accountant's eps of such a mechanism is computed, not crashed.
BOOST_AUTO_TEST_CASE(short_distributions_compose_by_the_direct_sum) {
  DiscretePld a, b;
  a.h = b.h = 0.5;
  a.offset = 3;
  a.mass = {0.75};
  a.infinityMass = 0.25;
  b.offset = -1;
  b.mass = {0.5, 0.25};
  b.infinityMass = 0.25;
  const DiscretePld c = fpdp::models::composePld(a, b, PldBound::Optimistic, 1e-300);
  BOOST_TEST(c.offset == 2);
  BOOST_TEST_REQUIRE(c.mass.size() == 2u);
  BOOST_TEST(c.mass[0] == 0.375);
  BOOST_TEST(c.mass[1] == 0.1875);
  BOOST_TEST(c.infinityMass == 0.25 * 1.0 + 0.25 * 0.75);
  const DiscretePld single = fpdp::models::composePld(a, a, PldBound::Pessimistic, 1e-300);
  BOOST_TEST_REQUIRE(single.mass.size() == 1u);
  BOOST_TEST(single.mass[0] == 0.5625);
  BOOST_TEST(single.infinityMass >= 0.25 * 1.0 + 0.25 * 0.75);
  // Its eps(1e-5) lies near mu^2/2 = 2560 (one step alone has delta(eps) near gamma = 0.01 below it), beyond the
  // grid's |L| <= 700 (e^L finite): the upper bound is +inf there, not NaN and not a few units (the masses above 709
  // were NaN before, and the composed eps came out too small).
  const auto eps = fpdp::models::subsampledGaussianEpsilons(71.55, 0.01, 5, {1e-5});
  BOOST_TEST(!std::isnan(eps[0].pessimistic));
  BOOST_TEST(eps[0].pessimistic > 700.0);
  BOOST_TEST(eps[0].optimistic <= eps[0].pessimistic);
}
