// ExpressionLoss (models/ExpressionLoss.hpp): the L2-logistic loss written as a string against LogisticLoss — value to
// round-off, gradient to 1e-9 relative by central differences and to 1e-14 with gradient expressions; parse errors
// quoting the expression and the position; validation; concurrent evaluation from several threads.
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "LossTestSupport.hpp"
#include "models/ExpressionLoss.hpp"

using namespace fpdp::models;
using namespace fpdp::models::test;

namespace {

const std::string logisticValue = "softplus(-y*(theta1*x1 + theta2*x2)) + mu/2*(theta1^2 + theta2^2)";
// The same loss written naively (log(1 + exp(.))): fine at the moderate margins used here.
const std::string naiveLogisticValue = "log(1 + exp(-y*(theta1*x1 + theta2*x2))) + 0.5*mu*(theta1*theta1 + theta2*theta2)";
const std::vector<std::string> logisticGradient{"-y*sigmoid(-y*(theta1*x1 + theta2*x2))*x1 + mu*theta1",
                                                "-y*sigmoid(-y*(theta1*x1 + theta2*x2))*x2 + mu*theta2"};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The std::invalid_argument message of constructing the loss; fails the test if nothing is thrown.
std::string constructionError(int dim, const std::string& value, const std::vector<std::string>& gradient = {},
                              const std::map<std::string, double>& constants = {}) {
  try {
    ExpressionLoss loss(dim, value, gradient, constants);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  BOOST_ERROR("no std::invalid_argument for \"" << value << "\"");
  return {};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(expression_loss)

BOOST_AUTO_TEST_CASE(logistic_expression_matches_logistic_loss) {
  std::mt19937 rng(31);
  const double mu = 0.05;
  const LogisticLoss reference(mu);
  const ExpressionLoss differenced(2, logisticValue, {}, {{"mu", mu}});
  const ExpressionLoss naive(2, naiveLogisticValue, {}, {{"mu", mu}});
  const ExpressionLoss analytic(2, logisticValue, logisticGradient, {{"mu", mu}});
  BOOST_TEST(!differenced.hasGradientExpressions());
  BOOST_TEST(analytic.hasGradientExpressions());
  double worstDifferenced = 0, worstNaive = 0, worstAnalytic = 0, worstValue = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const Vector theta = randomVector(rng, 2, 2.0);
    const Record r{randomVector(rng, 2, 1.5), trial % 2 == 0 ? 1.0 : -1.0};
    const double value = reference.value(theta, r);
    worstValue = std::max(worstValue, std::abs(differenced.value(theta, r) - value) / value);
    const Vector g = reference.gradient(theta, r);
    worstDifferenced = std::max(worstDifferenced, relativeError(differenced.gradient(theta, r), g));
    worstNaive = std::max(worstNaive, relativeError(naive.gradient(theta, r), g));
    worstAnalytic = std::max(worstAnalytic, relativeError(analytic.gradient(theta, r), g));
  }
  BOOST_TEST_MESSAGE("logistic as an expression, worst relative errors over 500 points: value "
                     << worstValue << ", gradient by central differences " << worstDifferenced << " (naive log(1+exp) "
                     << worstNaive << "), gradient expressions " << worstAnalytic);
  BOOST_TEST(worstValue < 1e-14);
  BOOST_TEST(worstDifferenced < 1e-9);
  BOOST_TEST(worstNaive < 1e-9);
  BOOST_TEST(worstAnalytic < 1e-14);
}

BOOST_AUTO_TEST_CASE(finite_difference_step_is_cbrt_eps_scaled) {
  const double c = std::cbrt(std::numeric_limits<double>::epsilon());
  BOOST_TEST(ExpressionLoss::finiteDifferenceStep(0.0) == c);
  BOOST_TEST(ExpressionLoss::finiteDifferenceStep(-0.5) == c);
  BOOST_TEST(ExpressionLoss::finiteDifferenceStep(-40.0) == 40 * c);
  // A cubic, whose third derivative sets the truncation error h^2 f'''/6: at theta = 1e3 the step scales with theta,
  // so the relative error stays ~1e-10 instead of the O(eps theta^3 / h) a fixed step would leave.
  const ExpressionLoss cubic(1, "theta1^3/3 - x1*theta1");
  const Record r{(Vector(1) << 2.0).finished(), 1.0};
  for (const double t : {0.0, 0.3, -7.0, 1e3}) {
    const double exact = t * t - 2.0;
    const double g = cubic.gradient((Vector(1) << t).finished(), r)[0];
    BOOST_TEST(std::abs(g - exact) <= 1e-9 * std::max(1.0, std::abs(exact)));
  }
}

BOOST_AUTO_TEST_CASE(uses_labels_records_and_constants) {
  const ExpressionLoss loss(3, "a*(theta1 - x1)^2 + (theta2 - x2)*y + theta3*x3", {}, {{"a", 2.0}});
  const Vector theta = (Vector(3) << 1.0, 2.0, 3.0).finished();
  const Record plus{(Vector(3) << 0.5, 1.0, -1.0).finished(), 1.0};
  const Record minus{plus.x, -1.0};
  BOOST_TEST(loss.value(theta, plus) == 2 * 0.25 + 1.0 - 3.0, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(loss.value(theta, minus) == 2 * 0.25 - 1.0 - 3.0, boost::test_tools::tolerance(1e-15));
  const Vector g = loss.gradient(theta, minus);
  BOOST_TEST(g[0] == 2.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(g[1] == -1.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(g[2] == -1.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(loss.name() == "expression");
  BOOST_TEST(loss.dim() == 3);
  BOOST_TEST(!loss.pairGradientGap(plus, minus).has_value());
  BOOST_TEST(!loss.strongConvexity().has_value());
  BOOST_CHECK_THROW(loss.value(Vector::Zero(2), plus), std::invalid_argument);
  BOOST_CHECK_THROW(loss.gradient(theta, Record{Vector::Zero(2), 1.0}), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(parse_errors_quote_the_expression_and_the_position) {
  const std::string unbalanced = "log(1 + exp(-y*theta1*x1)";
  const std::string message = constructionError(1, unbalanced);
  BOOST_TEST_MESSAGE(message);
  BOOST_TEST(contains(message, "\"" + unbalanced + "\""));
  BOOST_TEST(contains(message, "Missing parenthesis"));
  // muParser reports one past the end; the message clamps to the expression's length.
  BOOST_TEST(contains(message, "Missing parenthesis at position 25 (the end)"));

  const std::string operators = constructionError(1, "theta1 + * x1");
  BOOST_TEST_MESSAGE(operators);
  BOOST_TEST(contains(operators, "\"theta1 + * x1\""));
  BOOST_TEST(contains(operators, "Unexpected operator \"*\" found at position 9"));

  // A misspelt or out-of-dimension variable is an unknown token, and the message lists the variables.
  const std::string typo = constructionError(2, "(thta1 - x1)^2");
  BOOST_TEST_MESSAGE(typo);
  BOOST_TEST(contains(typo, "\"thta1\" found at position 1"));
  BOOST_TEST(contains(typo, "theta1..theta2, x1..x2, y"));
  BOOST_TEST(contains(constructionError(2, "theta3*x1"), "\"theta3\" found at position 0"));

  // Gradient expressions are parsed at construction too and named by coordinate.
  const std::string gradient = constructionError(2, "theta1^2 + theta2^2", {"2*theta1", "2*theta2 +"});
  BOOST_TEST_MESSAGE(gradient);
  BOOST_TEST(contains(gradient, "gradient expression 2 (d l / d theta2) \"2*theta2 +\""));
  BOOST_TEST(contains(gradient, "Unexpected end of expression at position 10 (the end)"));

  BOOST_TEST(contains(constructionError(1, ""), "empty"));
  BOOST_TEST(contains(constructionError(1, "theta1, x1"), "2 comma-separated expressions"));
}

BOOST_AUTO_TEST_CASE(construction_validates_dimensions_and_constants) {
  BOOST_TEST(contains(constructionError(0, "1"), "dimension"));
  BOOST_TEST(contains(constructionError(2, "theta1 + theta2", {"1"}), "1 gradient expressions given for dimension 2"));
  BOOST_TEST(contains(constructionError(2, "theta1", {}, {{"y", 1.0}}), "'y' has the name of a variable"));
  BOOST_TEST(contains(constructionError(2, "theta1", {}, {{"x7", 1.0}}), "'x7' has the name of a variable"));
  BOOST_TEST(contains(constructionError(1, "theta1", {}, {{"c", NAN}}), "not finite"));
}

BOOST_AUTO_TEST_CASE(concurrent_evaluation_gives_the_serial_results) {
  // muParser objects are not thread-safe: the loss leases one parser set per call. Four threads evaluate the same
  // points as a serial pass and must reproduce it bit for bit.
  const ExpressionLoss loss(2, logisticValue, {}, {{"mu", 0.05}});
  std::mt19937 rng(32);
  std::vector<Vector> thetas;
  std::vector<Record> records;
  for (int i = 0; i < 2000; ++i) {
    thetas.push_back(randomVector(rng, 2, 2.0));
    records.push_back(Record{randomVector(rng, 2, 1.0), i % 3 == 0 ? -1.0 : 1.0});
  }
  std::vector<Vector> serial;
  for (std::size_t i = 0; i < thetas.size(); ++i) serial.push_back(loss.gradient(thetas[i], records[i]));
  const int threads = 4;
  std::vector<int> mismatches(threads, 0);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (int repeat = 0; repeat < 5; ++repeat) {
        for (std::size_t i = static_cast<std::size_t>(t); i < thetas.size(); i += 1) {
          if (loss.gradient(thetas[i], records[i]) != serial[i]) ++mismatches[static_cast<std::size_t>(t)];
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  for (int t = 0; t < threads; ++t) BOOST_TEST(mismatches[static_cast<std::size_t>(t)] == 0);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(each_loss_evaluates_its_own_expression_after_others_are_destroyed) {
  // Every thread keeps a parser set per loss, keyed by the loss's serial number: a loss made after another one was
  // destroyed (often at the same address) must not find the old one's set, on this thread or on another.
  const Record r{(Vector(1) << 3.0).finished(), 1.0};
  const Vector theta = (Vector(1) << 2.0).finished();
  for (int k = 1; k <= 40; ++k) {
    const auto loss = std::make_unique<ExpressionLoss>(1, std::to_string(k) + " * theta1 * x1",
                                                       std::vector<std::string>{std::to_string(k) + " * x1"});
    BOOST_TEST(loss->value(theta, r) == 6.0 * k);
    double other = 0;
    std::thread([&] { other = loss->gradient(theta, r)[0]; }).join();
    BOOST_TEST(other == 3.0 * k);
    BOOST_TEST(loss->gradient(theta, r)[0] == 3.0 * k);
  }
}
