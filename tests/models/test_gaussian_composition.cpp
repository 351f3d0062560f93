// The accountants' baseline (models/GaussianComposition.hpp, MATH.md §8): the exact composition of Gaussian
// mechanisms against the figures Google's dp_accounting gives for the CYS Figure 1 setting (noise multiplier z = 250,
// delta = 1e-5, full batch, K steps), and the mu of the composition from fpdp's sigma, eta, S_g.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "models/GaussianComposition.hpp"

using namespace fpdp::models;

BOOST_AUTO_TEST_SUITE(gaussian_composition)

BOOST_AUTO_TEST_CASE(matches_dp_accounting_on_the_figure_1_setting) {
  // dp_accounting's PLD accountant, z = 250, delta = 1e-5 (its printed digits).
  const struct {
    double steps, eps;
  } figures[] = {{100, 0.125422}, {1000, 0.440066}, {1e4, 1.55498}, {1e5, 5.75948}};
  for (const auto& f : figures) {
    const double mu = std::sqrt(f.steps) / 250.0;
    const double eps = gdpEpsilon(mu, 1e-5);
    BOOST_TEST_INFO("K = " << f.steps);
    BOOST_TEST(std::fabs(eps - f.eps) <= 5e-6 * f.eps);
    BOOST_TEST(gdpDelta(mu, eps) <= 1e-5);  // the root is on the safe side
    BOOST_TEST(gdpDelta(mu, eps * (1 - 1e-9)) > 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(mu_from_the_noisy_gd_parameters) {
  // CYS Figure 1: n = 5000, S_g = 4, eta = 0.02, sigma = 0.02: z = sigma n sqrt(2/eta) / S_g = 250 per step.
  const double gap = 4.0 / 5000, eta = 0.02, sigma = 0.02;
  BOOST_TEST(std::fabs(gaussianCompositionMu(gap, eta, sigma * sigma) - 1.0 / 250) <= 1e-15);
  BOOST_TEST(std::fabs(gaussianCompositionMu(gap, 100 * eta, sigma * sigma) - 10.0 / 250) <= 1e-15);
}

BOOST_AUTO_TEST_CASE(small_deltas_and_the_ends) {
  BOOST_TEST(gdpEpsilon(0.0, 1e-5) == 0.0);
  BOOST_TEST(std::isinf(gdpEpsilon(INFINITY, 1e-5)));
  // delta = 1e-300 needs the second term in log space (e^eps Phi(...) underflows and overflows separately).
  const double eps = gdpEpsilon(1.0, 1e-300);
  BOOST_TEST(std::isfinite(eps));
  BOOST_TEST(gdpDelta(1.0, eps) <= 1e-300);
  BOOST_TEST(gdpDelta(1.0, eps * (1 - 1e-9)) > 1e-300);
}

BOOST_AUTO_TEST_SUITE_END()
