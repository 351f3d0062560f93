// Losses of models/Loss.hpp (MATH.md §1): analytic gradients against central finite differences, the logistic loss
// at extreme margins, the gradient-gap and smoothness constants, and the empirical quadratic loss
// L_D = (lambda/2)|theta - xbar|^2 + const whose gradient drives the OU oracle of MATH.md §5 item 7.
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "LossTestSupport.hpp"
#include "models/Loss.hpp"

using namespace fpdp::models;
using namespace fpdp::models::test;

namespace {

}  // namespace

BOOST_AUTO_TEST_SUITE(losses)

BOOST_AUTO_TEST_CASE(quadratic_gradient_matches_finite_differences) {
  std::mt19937 rng(11);
  const QuadraticLoss loss(0.7);
  for (int d = 1; d <= 3; ++d) {
    for (int trial = 0; trial < 20; ++trial) {
      const Vector theta = randomVector(rng, d, 2.0);
      const Record r{randomVector(rng, d, 1.5), 1.0};
      BOOST_TEST(relativeError(finiteDifferenceGradient(loss, theta, r), loss.gradient(theta, r)) < 1e-7);
      BOOST_TEST(loss.value(theta, r) == 0.35 * (theta - r.x).squaredNorm(), boost::test_tools::tolerance(1e-15));
    }
  }
}

BOOST_AUTO_TEST_CASE(logistic_gradient_matches_finite_differences) {
  std::mt19937 rng(12);
  const LogisticLoss loss(0.05);
  for (int d = 1; d <= 3; ++d) {
    for (int trial = 0; trial < 40; ++trial) {
      const Vector theta = randomVector(rng, d, 2.0);
      const Record r{randomVector(rng, d, 1.5), trial % 2 == 0 ? 1.0 : -1.0};
      BOOST_TEST(relativeError(finiteDifferenceGradient(loss, theta, r), loss.gradient(theta, r)) < 1e-7);
    }
  }
}

BOOST_AUTO_TEST_CASE(logistic_is_stable_at_extreme_margins) {
  const double mu = 0.1;
  const LogisticLoss loss(mu);
  const Record r{(Vector(2) << 0.6, 0.8).finished(), -1.0};  // |x| = 1
  for (const double margin : {-800.0, -30.0, 30.0, 800.0}) {
    // theta along x with y <theta, x> = margin.
    const Vector theta = (margin / r.y) * r.x;
    const double actualMargin = r.y * theta.dot(r.x);  // = margin up to round-off in |x| = 1
    const double value = loss.value(theta, r);
    const Vector gradient = loss.gradient(theta, r);
    BOOST_TEST(std::isfinite(value));
    BOOST_TEST(gradient.allFinite());
    // Reference: log(1 + e^{-m}) = -m + log1p(e^m) for m < 0, log1p(e^{-m}) for m > 0; sigmoid(-m) likewise.
    const double m = actualMargin;
    const double softplus = m < 0 ? -m + std::log1p(std::exp(m)) : std::log1p(std::exp(-m));
    const double weight = m < 0 ? 1 / (1 + std::exp(m)) : std::exp(-m) / (1 + std::exp(-m));
    const double regularisation = 0.5 * mu * theta.squaredNorm();
    BOOST_TEST(value == softplus + regularisation, boost::test_tools::tolerance(1e-15));
    const Vector expectedGradient = -r.y * weight * r.x + mu * theta;
    BOOST_TEST(relativeError(gradient, expectedGradient) < 1e-15);
    BOOST_TEST(relativeError(finiteDifferenceGradient(loss, theta, r), gradient) < 1e-7);
  }
  // At margin +800 the data term vanishes below the smallest double: only the regulariser remains, exactly.
  const Vector far = (800.0 / r.y) * r.x;
  BOOST_TEST(loss.value(far, r) == 0.5 * mu * far.squaredNorm());
}

BOOST_AUTO_TEST_CASE(pair_gradient_gaps) {
  std::mt19937 rng(13);
  const Record a{(Vector(2) << 1.0, -0.5).finished(), 1.0};
  const Record b{(Vector(2) << -0.3, 0.4).finished(), -1.0};

  const QuadraticLoss quadratic(2.5);
  const auto quadraticGap = quadratic.pairGradientGap(a, b);
  BOOST_REQUIRE(quadraticGap.has_value());
  BOOST_TEST(quadraticGap->exact);
  const LogisticLoss logistic(0.01);
  const auto logisticGap = logistic.pairGradientGap(a, b);
  BOOST_REQUIRE(logisticGap.has_value());
  BOOST_TEST(!logisticGap->exact);
  BOOST_TEST(logisticGap->value == a.x.norm() + b.x.norm(), boost::test_tools::tolerance(1e-15));

  // Logistic: grad l(.; a) - grad l(.; b) = -y_a s_a x_a + y_b s_b x_b with (s_a, s_b) free in (0, 1)^2 for
  // non-parallel records, so the true supremum is the largest corner value, which the bound must cover.
  const double logisticSupremum = std::max({a.x.norm(), b.x.norm(), (a.y * a.x - b.y * b.x).norm()});
  BOOST_TEST(logisticSupremum <= logisticGap->value);
  double largestLogisticGap = 0;
  for (int trial = 0; trial < 400; ++trial) {
    // Large theta saturates both sigmoids, reaching the corners.
    const Vector theta = randomVector(rng, 2, 50.0);
    const double qGap = (quadratic.gradient(theta, a) - quadratic.gradient(theta, b)).norm();
    BOOST_TEST(qGap == quadraticGap->value, boost::test_tools::tolerance(1e-13));
    const double lGap = (logistic.gradient(theta, a) - logistic.gradient(theta, b)).norm();
    BOOST_TEST(lGap <= logisticSupremum * (1 + 1e-14));
    largestLogisticGap = std::max(largestLogisticGap, lGap);
  }
  BOOST_TEST(largestLogisticGap > 0.999 * logisticSupremum);
}

BOOST_AUTO_TEST_CASE(logistic_smoothness_is_attained_at_zero_margin) {
  const double mu = 0.2;
  const LogisticLoss loss(mu);
  const Record small{(Vector(2) << 0.5, 0.5).finished(), 1.0};
  const Record large{(Vector(2) << 1.2, -1.6).finished(), -1.0};  // |x|^2 = 4
  const Dataset data({small, large});
  BOOST_REQUIRE(loss.smoothness(data).has_value());
  BOOST_TEST(*loss.smoothness(data) == mu + 1.0, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(*loss.strongConvexity() == mu);
  // Second derivative along x at margin 0, where sigmoid' = 1/4 is largest: mu + |x|^2/4.
  const Vector direction = large.x.normalized();
  const Vector theta = Vector::Zero(2);
  const double h = 1e-4;
  const double curvature =
      (loss.value(theta + h * direction, large) - 2 * loss.value(theta, large) + loss.value(theta - h * direction, large)) /
      (h * h);
  BOOST_TEST(curvature == *loss.smoothness(data), boost::test_tools::tolerance(1e-6));
}

BOOST_AUTO_TEST_CASE(constructors_validate_parameters) {
  BOOST_CHECK_THROW(QuadraticLoss(0.0), std::invalid_argument);
  BOOST_CHECK_THROW(QuadraticLoss(-1.0), std::invalid_argument);
  BOOST_CHECK_THROW(QuadraticLoss(std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
  BOOST_CHECK_THROW(LogisticLoss(-0.1), std::invalid_argument);
  BOOST_CHECK_NO_THROW(LogisticLoss(0.0));
  const LogisticLoss logistic(0.1);
  const Record unlabelled{(Vector(1) << 1.0).finished(), 0.5};
  BOOST_CHECK_THROW(logistic.value((Vector(1) << 0.0).finished(), unlabelled), std::invalid_argument);
  const QuadraticLoss quadratic(1.0);
  BOOST_CHECK_THROW(quadratic.gradient(Vector::Zero(2), unlabelled), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(empirical_quadratic_loss_is_centred_at_the_data_mean) {
  std::mt19937 rng(14);
  const double lambda = 1.7;
  for (int d = 1; d <= 3; ++d) {
    std::vector<Record> records;
    for (int i = 0; i < 7; ++i) records.push_back({randomVector(rng, d, 3.0), 1.0});
    const Dataset data(records);
    const Vector xbar = data.mean();
    double spread = 0;  // (1/n) sum |x_i - xbar|^2: the constant of L_D - (lambda/2)|theta - xbar|^2
    for (const Record& r : records) spread += (r.x - xbar).squaredNorm();
    spread /= static_cast<double>(records.size());

    const EmpiricalLoss empirical(std::make_shared<QuadraticLoss>(lambda), data);
    for (int trial = 0; trial < 10; ++trial) {
      const Vector theta = randomVector(rng, d, 2.0);
      BOOST_TEST(relativeError(empirical.gradient(theta), lambda * (theta - xbar)) < 1e-13);
      BOOST_TEST(empirical.value(theta) == 0.5 * lambda * ((theta - xbar).squaredNorm() + spread),
                 boost::test_tools::tolerance(1e-13));
    }
  }
}

BOOST_AUTO_TEST_CASE(empirical_loss_validates_its_inputs) {
  const auto loss = std::make_shared<QuadraticLoss>(1.0);
  BOOST_CHECK_THROW(EmpiricalLoss(loss, Dataset()), std::invalid_argument);
  BOOST_CHECK_THROW(EmpiricalLoss(nullptr, Dataset({Record{Vector::Zero(2), 1.0}})), std::invalid_argument);
  const EmpiricalLoss empirical(loss, Dataset({Record{Vector::Zero(2), 1.0}}));
  BOOST_CHECK_THROW(empirical.value(Vector::Zero(3)), std::invalid_argument);
  BOOST_CHECK_THROW(empirical.gradient(Vector::Zero(1)), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
