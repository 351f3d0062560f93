// The lane forms of models/LossLanes.hpp: branchFreeExp against std::exp over its domain (in ulps), the quadratic
// term and the clipping bit for bit against QuadraticLoss::gradientInto and clipToNormInPlace, the logistic term
// against LogisticLoss::gradientInto to a few ulps (branchFreeExp in place of std::exp).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <random>

#include "models/Loss.hpp"
#include "models/LossLanes.hpp"

using namespace fpdp;

namespace {

/// |a - b| in units of the last place of b (b normal).
double ulps(double a, double b) { return std::abs(a - b) / (std::nextafter(std::abs(b), INFINITY) - std::abs(b)); }

}  // namespace

BOOST_AUTO_TEST_SUITE(loss_lanes)

BOOST_AUTO_TEST_CASE(branch_free_exp_is_within_one_ulp_of_std_exp) {
  std::mt19937_64 rng(3);
  double worst = 0.0, worstAt = 0.0;
  auto check = [&](double x) {
    const double e = ulps(models::branchFreeExp(x), std::exp(x));
    if (e > worst) worst = e, worstAt = x;
  };
  std::uniform_real_distribution<double> wide(-708.0, 709.0), narrow(-1.0, 1.0), logistic(-40.0, 0.0);
  for (int i = 0; i < 1000000; ++i) check(wide(rng));
  for (int i = 0; i < 500000; ++i) check(narrow(rng));
  for (int i = 0; i < 500000; ++i) check(logistic(rng));  // the sampler's range: e^{-|margin|}
  for (double x : {0.0, -0.0, 1e-300, -1e-300, 0.5 * std::log(2.0), -0.5 * std::log(2.0), 1.0, -1.0, 709.0, -708.0})
    check(x);
  BOOST_TEST_MESSAGE("branchFreeExp: worst " << worst << " ulp at x = " << worstAt);
  BOOST_TEST(worst <= 1.0);
  BOOST_TEST(models::branchFreeExp(0.0) == 1.0);
  BOOST_TEST(models::branchFreeExp(-1000.0) == models::branchFreeExp(-708.39));  // clamped, not garbage
  BOOST_TEST(models::branchFreeExp(-708.39) > 0.0);
  BOOST_TEST(std::isfinite(models::branchFreeExp(1000.0)));
}

BOOST_AUTO_TEST_CASE(branch_free_sigmoid_is_within_a_few_ulps) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> range(-745.0, 745.0), central(-40.0, 40.0);
  double worst = 0.0, worstAt = 0.0;
  auto check = [&](double z) {
    const long double e = std::exp(-std::fabs(static_cast<long double>(z)));
    const double truth = static_cast<double>(z >= 0 ? 1.0L / (1.0L + e) : e / (1.0L + e));
    if (truth < 0x1p-1000) return;  // below e^-693 the clamp at e^-708.39 decides (an absolute error < 3e-308)
    const double u = ulps(models::branchFreeSigmoid(z), truth);
    if (u > worst) worst = u, worstAt = z;
  };
  for (int i = 0; i < 1000000; ++i) check(central(rng));
  for (int i = 0; i < 1000000; ++i) check(range(rng));
  for (double z : {0.0, -0.0, 1e-300, -1e-300, 1.0, -1.0, 36.0, -36.0, 700.0, -690.0}) check(z);
  BOOST_TEST_MESSAGE("branchFreeSigmoid: worst " << worst << " ulp at z = " << worstAt);
  BOOST_TEST(worst <= 3.0);
  BOOST_TEST(models::branchFreeSigmoid(0.0) == 0.5);
  BOOST_TEST(models::branchFreeSigmoid(1000.0) == 1.0);
  BOOST_TEST(models::branchFreeSigmoid(-1000.0) >= 0.0);
  BOOST_TEST(models::branchFreeSigmoid(-1000.0) < 3e-308);
}

BOOST_AUTO_TEST_CASE(lane_terms_match_the_scalar_gradients) {
  constexpr int W = 8, d = 3;
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal(0.0, 4.0);
  double theta[d * W], term[d * W], work[W];
  for (double& t : theta) t = normal(rng);
  theta[0] = 200.0;  // a saturated sigmoid
  theta[1] = -200.0;
  models::Record r;
  r.x = models::Vector(d);
  r.x << 1.5, -0.5, 2.0;
  const models::QuadraticLoss quadratic(0.7);
  const models::LogisticLoss logistic(0.3);
  double worst = 0.0;
  for (double y : {1.0, -1.0}) {
    r.y = y;
    models::logisticTermLanes<W>(0.3, r.x.data(), y, d, theta, term, work);
    for (int p = 0; p < W; ++p) {
      double point[d], scalar[d];
      for (int a = 0; a < d; ++a) point[a] = theta[a * W + p];
      logistic.gradientInto(point, r, scalar);
      for (int a = 0; a < d; ++a) {
        // Relative to the term's scale (its two parts may cancel): a few ulps of |weight x| + |mu theta|.
        const double scale = std::abs(scalar[a] - 0.3 * point[a]) + std::abs(0.3 * point[a]);
        worst = std::max(worst, std::abs(term[a * W + p] - scalar[a]) / (scale * 0x1p-52));
      }
    }
  }
  BOOST_TEST_MESSAGE("logistic lane term: worst " << worst << " ulp of the term's scale");
  // The fused form (term and sum in one pass, mu theta given) adds the same bits.
  double fused[d * W] = {}, muTheta[d * W];
  for (int i = 0; i < d * W; ++i) muTheta[i] = 0.3 * theta[i];
  models::addLogisticTermLanes<W, d>(r.x.data(), r.y, theta, muTheta, fused);
  models::logisticTermLanes<W>(0.3, r.x.data(), r.y, d, theta, term, work);
  for (int i = 0; i < d * W; ++i) BOOST_TEST(fused[i] == 0.0 + term[i]);
  BOOST_TEST(worst <= 4.0);
  models::quadraticTermLanes<W>(0.7, r.x.data(), d, theta, term);
  double norm[W];
  models::clipLanes<W>(2.5, d, term, norm);
  for (int p = 0; p < W; ++p) {
    double point[d], scalar[d];
    for (int a = 0; a < d; ++a) point[a] = theta[a * W + p];
    quadratic.gradientInto(point, r, scalar);
    models::clipToNormInPlace(scalar, d, 2.5);
    for (int a = 0; a < d; ++a) BOOST_TEST(term[a * W + p] == scalar[a]);  // the same operations: the same bits
  }
}

BOOST_AUTO_TEST_SUITE_END()
