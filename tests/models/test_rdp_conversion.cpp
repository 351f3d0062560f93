// RDP -> (eps, delta) conversions of MATH.md §7 against values computed by hand (independently, in Python, from the
// formulas as printed), the continuous optimum for the Gaussian mechanism, and the exact eps from a sampled
// hockey-stick curve against the closed-form Gaussian curve of MATH.md §6 (root by bisection), with its observed
// order of convergence in the grid spacing.
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
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (gaussianDelta(mu, mid) > delta ? lo : hi) = mid;
  }
  return hi;
}

struct Sampled {
  std::vector<double> eps, delta;
};
Sampled sampleGaussian(double mu, double h, double epsMax) {
  Sampled s;
  for (int i = 0; i * h <= epsMax + 1e-12; ++i) {
    s.eps.push_back(i * h);
    s.delta.push_back(gaussianDelta(mu, i * h));
  }
  return s;
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

BOOST_AUTO_TEST_CASE(exact_epsilon_from_the_gaussian_hockey_stick_curve) {
  // mu = 1 and 0.3, delta = 1e-5 and 1e-2, grid spacings h = 0.04, 0.02, 0.01. The interpolation is linear in
  // x = e^eps, where f(x) = delta is convex, so the result lies at or above the true crossing x*. Derived error bound:
  // the chord exceeds f at x* by at most (1/8) h_x^2 max f'' (h_x = x_1 - x_0 <= x* (e^h - 1) e^h), and the chord's
  // slope is f' somewhere on the interval, so x_c - x* <= (1/8) h_x^2 max f'' / min |f'|, and eps_c - eps* <=
  // (x_c - x*)/x*. For the Gaussian curve (MATH.md §6) d delta/d eps = -e^eps Phi(z), z = -eps/mu - mu/2, so
  // f'(x) = -Phi(z) and f''(x) = phi(z)/(mu x); max/min over [eps* - h, eps* + h]. The error at the three spacings
  // varies with where the crossing falls in its interval (a factor w(1 - w)), so the test checks the bound, which
  // scales as h^2, rather than an observed order.
  auto phi = [](double z) { return std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI); };
  for (double mu : {1.0, 0.3})
    for (double delta : {1e-5, 1e-2}) {
      const double truth = gaussianExactEpsilon(mu, delta);
      for (double h : {0.04, 0.02, 0.01}) {
        const auto s = sampleGaussian(mu, h, truth + 2.0);
        const auto e = exactEpsilon(s.eps, s.delta, delta);
        BOOST_TEST_REQUIRE(static_cast<int>(e.status) == static_cast<int>(ExactEpsilonStatus::Interpolated));
        const double err = e.epsilon - truth;
        double maxF2 = 0.0, minF1 = 1.0;  // f'' * x and |f'| over the interval
        for (double eps = truth - h; eps <= truth + h; eps += h / 64) {
          const double z = -eps / mu - mu / 2.0;
          maxF2 = std::max(maxF2, phi(z) / mu * std::exp(-eps + truth));  // f'' x* = phi(z) x*/(mu x)
          minF1 = std::min(minF1, Phi(z));
        }
        const double hx = std::expm1(h) * std::exp(h);  // h_x / x*
        const double bound = hx * hx * maxF2 / (8.0 * minF1);
        BOOST_TEST_MESSAGE("mu " << mu << " delta " << delta << " h " << h << " eps " << e.epsilon << " exact "
                                 << truth << " error " << err << " bound " << bound);
        BOOST_TEST(err >= -1e-12);  // conservative
        BOOST_TEST(err <= bound);
      }
      // The RDP conversions are upper bounds of the exact value (R_alpha = alpha mu^2/2 on a dense order grid).
      std::vector<double> orders, renyi;
      for (double a = 1.01; a <= 200.0; a += 0.01) {
        orders.push_back(a);
        renyi.push_back(a * mu * mu / 2.0);
      }
      BOOST_TEST(cksEpsilon(orders, renyi, delta).epsilon > truth);
      BOOST_TEST(mironovEpsilon(orders, renyi, delta).epsilon > cksEpsilon(orders, renyi, delta).epsilon);
    }
}

BOOST_AUTO_TEST_CASE(exact_epsilon_of_a_pair_takes_the_worse_direction) {
  // Unequal variances make the two directions differ: N(0.5, 1) against N(0, 1.44) and the reverse. Sampled by
  // quadrature of int max(p - e^eps q, 0) on a fine grid (trapezoid, h = 1e-3 on [-12, 12]), eps grid 0..3 by 0.01.
  auto density = [](double x, double m, double v) { return std::exp(-0.5 * (x - m) * (x - m) / v) / std::sqrt(2 * M_PI * v); };
  std::vector<double> eps, pq, qp;
  for (int i = 0; i <= 300; ++i) {
    const double e = 0.01 * i;
    double a = 0, b = 0;
    for (double x = -12; x <= 12; x += 1e-3) {
      const double p = density(x, 0.5, 1.0), q = density(x, 0.0, 1.44);
      a += std::max(p - std::exp(e) * q, 0.0) * 1e-3;
      b += std::max(q - std::exp(e) * p, 0.0) * 1e-3;
    }
    eps.push_back(e);
    pq.push_back(a);
    qp.push_back(b);
  }
  const double d = 1e-2;
  const double one = exactEpsilon(eps, pq, d).epsilon, other = exactEpsilon(eps, qp, d).epsilon;
  BOOST_TEST_REQUIRE(one != other);
  BOOST_TEST(exactEpsilonOfPair(eps, pq, qp, d) == std::max(one, other));
  BOOST_TEST(exactEpsilonOfPair(eps, qp, pq, d) == std::max(one, other));
  // A direction whose grid ends above delta gives no number for the pair.
  BOOST_TEST(std::isnan(exactEpsilonOfPair(eps, pq, qp, 1e-12)));
}

BOOST_AUTO_TEST_CASE(exact_epsilon_edge_cases) {
  const std::vector<double> eps{0.0, 1.0, 2.0};
  // Already below delta at the first grid point: that point, flagged (an upper bound).
  auto e = exactEpsilon(eps, std::vector<double>{1e-6, 1e-7, 1e-8}, 1e-5);
  BOOST_TEST(e.epsilon == 0.0);
  BOOST_TEST(static_cast<int>(e.status) == static_cast<int>(ExactEpsilonStatus::AtGridStart));
  // Still above delta at the last grid point: no number (the grid is too short).
  e = exactEpsilon(eps, std::vector<double>{0.5, 0.4, 0.3}, 1e-5);
  BOOST_TEST(std::isnan(e.epsilon));
  BOOST_TEST(static_cast<int>(e.status) == static_cast<int>(ExactEpsilonStatus::BeyondGrid));
  // Linear in e^eps: delta = 0.3 at eps = 0 and 0.1 at eps = 1, target 0.2 -> e^eps = 1 + (e - 1)/2.
  e = exactEpsilon(std::vector<double>{0.0, 1.0}, std::vector<double>{0.3, 0.1}, 0.2);
  BOOST_TEST(e.epsilon == std::log(1.0 + (std::exp(1.0) - 1.0) / 2.0), boost::test_tools::tolerance(1e-15));
  // A bump (non-monotone samples): the last sample above delta decides (conservative).
  e = exactEpsilon(std::vector<double>{0, 1, 2, 3}, std::vector<double>{0.3, 0.05, 0.2, 0.01}, 0.1);
  BOOST_TEST(e.epsilon > 2.0);
  BOOST_CHECK_THROW(exactEpsilon(std::vector<double>{0, 0}, std::vector<double>{1, 1}, 0.1), std::invalid_argument);
  BOOST_CHECK_THROW(exactEpsilon(eps, std::vector<double>{1, 1}, 0.1), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
