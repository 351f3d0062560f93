// Problem constants lambda, beta, S_g (models/LossConstants.hpp; MATH.md §1, §5): closed forms for the quadratic,
// logistic and Huber losses, the double-well smoothness estimated on a grid against the exact supremum of its Hessian
// over the box, the generic (expression-loss) path against the closed forms it must reproduce, clipping, and
// validation.
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <memory>
#include <string>

#include "models/ExpressionLoss.hpp"
#include "models/LossConstants.hpp"

using namespace fpdp::models;

namespace {

Vector vec2(double a, double b) { return (Vector(2) << a, b).finished(); }

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

struct Pair {
  EmpiricalLoss D, DPrime;
  Record replaced, replacement;
};

// D = records, D' = records with record `index` replaced by `replacement`.
Pair makePair(std::shared_ptr<const Loss> loss, const std::vector<Record>& records, std::size_t index,
              const Record& replacement, std::optional<double> clipNorm = std::nullopt) {
  const Dataset D(records);
  const Dataset DPrime = Neighbour{index, replacement}.apply(D);
  return Pair{EmpiricalLoss(loss, D, clipNorm), EmpiricalLoss(loss, DPrime, clipNorm), D[index], replacement};
}

void log(const LossConstants& c) {
  auto show = [](const std::optional<double>& v) { return v ? std::to_string(*v) : std::string("none"); };
  BOOST_TEST_MESSAGE("  lambda = " << show(c.strongConvexity) << "  [" << c.strongConvexitySource << "]\n  beta = "
                                   << show(c.smoothness) << "  [" << c.smoothnessSource << "]\n  S_g = "
                                   << show(c.sensitivity) << "  [" << c.sensitivitySource << "]");
}

const std::array<double, 3> lower2{-2.0, -1.5, 0.0}, upper2{2.5, 1.0, 0.0};

}  // namespace

BOOST_AUTO_TEST_SUITE(loss_constants)

BOOST_AUTO_TEST_CASE(quadratic_constants_are_lambda_lambda_and_lambda_times_the_shift) {
  const double lambda = 1.7;
  const Record replacement{vec2(2.0, -1.0), 1.0};
  const Pair p = makePair(std::make_shared<QuadraticLoss>(lambda),
                          {Record{vec2(0.1, 0.2), 1.0}, Record{vec2(-0.5, 0.4), 1.0}, Record{vec2(0.3, -0.3), 1.0}}, 1,
                          replacement);
  const LossConstants c = computeConstants(p.D, p.DPrime, p.replaced, p.replacement, lower2, upper2, 2);
  log(c);
  BOOST_TEST(*c.strongConvexity == lambda);
  BOOST_TEST(*c.smoothness == lambda);
  BOOST_TEST(*c.sensitivity == lambda * (p.replaced.x - replacement.x).norm(), boost::test_tools::tolerance(1e-15));
  BOOST_TEST(contains(c.strongConvexitySource, "closed form"));
  BOOST_TEST(contains(c.smoothnessSource, "closed form"));
  BOOST_TEST(contains(c.sensitivitySource, "closed form (exact)"));
}

BOOST_AUTO_TEST_CASE(logistic_smoothness_is_mu_plus_the_largest_squared_norm_over_four) {
  const double mu = 0.1;
  const Record replacement{vec2(3.0, -1.0), 1.0};  // |x'|^2 = 10, larger than any record of D
  const Pair p = makePair(std::make_shared<LogisticLoss>(mu),
                          {Record{vec2(1.0, 2.0), 1.0}, Record{vec2(-0.5, 0.3), -1.0}, Record{vec2(0.2, -0.1), 1.0}}, 1,
                          replacement);
  const LossConstants c = computeConstants(p.D, p.DPrime, p.replaced, p.replacement, lower2, upper2, 2);
  log(c);
  BOOST_TEST(*c.strongConvexity == mu);
  // Over the records of D and D': mu + 10/4 (D alone would give mu + 5/4).
  BOOST_TEST(*c.smoothness == mu + 10.0 / 4, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(*c.sensitivity == p.replaced.x.norm() + replacement.x.norm(), boost::test_tools::tolerance(1e-15));
  BOOST_TEST(contains(c.smoothnessSource, "closed-form bound"));
  BOOST_TEST(contains(c.sensitivitySource, "closed-form bound"));
}

BOOST_AUTO_TEST_CASE(huber_constants) {
  const double delta = 0.5, mu = 0.2;
  const Record replacement{vec2(0.4, 0.3), 1.0};
  const Pair p = makePair(std::make_shared<HuberLoss>(delta, mu), {Record{vec2(0.0, 0.0), 1.0}, Record{vec2(1.0, 1.0), 1.0}},
                          0, replacement);
  const LossConstants c = computeConstants(p.D, p.DPrime, p.replaced, p.replacement, lower2, upper2, 2);
  log(c);
  BOOST_TEST(*c.strongConvexity == mu);
  BOOST_TEST(*c.smoothness == 1 + mu);
  BOOST_TEST(*c.sensitivity == 0.5, boost::test_tools::tolerance(1e-15));  // min(|a - b| = 0.5, 2 delta = 1)
  BOOST_TEST(contains(c.sensitivitySource, "closed form (exact)"));

  // mu = 0: no closed-form lambda; beyond delta of the only record the radial curvature is 0, so the grid finds
  // no strong convexity on a box reaching there.
  const Pair flat = makePair(std::make_shared<HuberLoss>(delta, 0.0), {Record{vec2(0.0, 0.0), 1.0}}, 0, replacement);
  const LossConstants f = computeConstants(flat.D, flat.DPrime, flat.replaced, flat.replacement, lower2, upper2, 2);
  log(f);
  BOOST_TEST(!f.strongConvexity.has_value());
  BOOST_TEST(contains(f.strongConvexitySource, "not strongly convex"));
  // On a box within delta of both records the Huber loss is the quadratic: lambda = 1, estimated on the grid.
  const std::array<double, 3> small{0.15, 0.1, 0}, smallUpper{0.25, 0.2, 0};
  const LossConstants q = computeConstants(flat.D, flat.DPrime, flat.replaced, flat.replacement, small, smallUpper, 2);
  log(q);
  BOOST_REQUIRE(q.strongConvexity.has_value());
  BOOST_TEST(*q.strongConvexity == 1.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(contains(q.strongConvexitySource, "estimated on a 33^2 grid"));
}

BOOST_AUTO_TEST_CASE(double_well_smoothness_estimate_matches_the_exact_supremum_within_the_grid_resolution) {
  // Exact: sup_box |Hessian l(.; x)| = (lambda/(2 w^2)) max(w^2 - s_min, 3 s_max - w^2) (DoubleWellLoss). With one
  // record, L_D = l(.; x). The 33-point grid contains the corners (where 3 s_max - w^2 is attained exactly) but in
  // general not x itself: there the estimate is low by at most (lambda/(2 w^2)) sum_a (h_a/2)^2, h_a the grid spacing.
  const double lambda = 1.5, w = 0.5, c = lambda / (2 * w * w);
  const auto loss = std::make_shared<DoubleWellLoss>(lambda, w);
  struct Case {
    std::array<double, 3> lower, upper;
    Record x, xPrime;
    bool cornerWins;
  };
  const std::vector<Case> cases{
      // Small box: the local maximum at the record dominates (3 s_max < 2 w^2).
      {{-0.2, -0.2, 0}, {0.2, 0.2, 0}, Record{vec2(0.03, -0.02), 1.0}, Record{vec2(-0.011, 0.017), 1.0}, false},
      // Large box: a far corner dominates.
      {{-1.0, -0.5, 0}, {1.5, 1.0, 0}, Record{vec2(0.2, 0.1), 1.0}, Record{vec2(-0.3, 0.4), 1.0}, true},
  };
  for (const Case& k : cases) {
    const Pair p = makePair(loss, {k.x}, 0, k.xPrime);
    const LossConstants constants = computeConstants(p.D, p.DPrime, p.replaced, p.replacement, k.lower, k.upper, 2);
    log(constants);
    const double exact =
        std::max(loss->hessianSupNorm(k.x, k.lower, k.upper, 2), loss->hessianSupNorm(k.xPrime, k.lower, k.upper, 2));
    BOOST_TEST((exact > lambda / 2) == k.cornerWins);
    const double hx = (k.upper[0] - k.lower[0]) / 32, hy = (k.upper[1] - k.lower[1]) / 32;
    const double resolution = c * (hx * hx + hy * hy) / 4;
    BOOST_REQUIRE(constants.smoothness.has_value());
    BOOST_TEST_MESSAGE("  beta estimate " << *constants.smoothness << ", exact " << exact << ", resolution " << resolution);
    BOOST_TEST(*constants.smoothness <= exact * (1 + 1e-13));
    if (k.cornerWins) {
      BOOST_TEST(*constants.smoothness == exact, boost::test_tools::tolerance(1e-13));
    } else {
      BOOST_TEST(*constants.smoothness >= exact - resolution);
      BOOST_TEST(*constants.smoothness < exact);  // x is not a grid point: the estimate is (slightly) low
    }
    BOOST_TEST(contains(constants.smoothnessSource, "estimated on a 33^2 grid"));
    BOOST_TEST(contains(constants.smoothnessSource, "closed-form bound"));
    // Non-convex: no lambda.
    BOOST_TEST(!constants.strongConvexity.has_value());
    BOOST_TEST(contains(constants.strongConvexitySource, "not strongly convex"));
    // No closed-form S_g: estimated on the grid, and a finer grid (containing the coarse one) agrees.
    BOOST_TEST(contains(constants.sensitivitySource, "estimated on a 33^2 grid"));
    BOOST_TEST(contains(constants.sensitivitySource, "infinite on R^d"));
    const LossConstants fine = computeConstants(p.D, p.DPrime, p.replaced, p.replacement, k.lower, k.upper, 2, 65);
    BOOST_TEST(*constants.sensitivity <= *fine.sensitivity * (1 + 1e-14));
    BOOST_TEST(*constants.sensitivity >= 0.99 * *fine.sensitivity);
  }
  // Several records: the estimate stays below the closed-form bound (1/n) sum_i sup_box |Hessian l(.; x_i)|.
  const Pair many = makePair(loss, {Record{vec2(0.0, 0.0), 1.0}, Record{vec2(1.0, 0.5), 1.0}, Record{vec2(-0.7, 0.2), 1.0}},
                             2, Record{vec2(0.5, -0.5), 1.0});
  const LossConstants m = computeConstants(many.D, many.DPrime, many.replaced, many.replacement, lower2, upper2, 2);
  log(m);
  const double bound = std::max(loss->smoothnessBoundOnBox(many.D.data(), lower2, upper2, 2),
                                loss->smoothnessBoundOnBox(many.DPrime.data(), lower2, upper2, 2));
  BOOST_TEST(*m.smoothness <= bound);
}

BOOST_AUTO_TEST_CASE(expression_losses_reproduce_the_closed_forms_numerically) {
  // The double well and the quadratic written as expressions go through the generic path (Hessian by second
  // differences of the value, or by differences of the gradient expressions; S_g on the grid).
  const double lambda = 1.5, w = 0.5;
  const std::map<std::string, double> constants{{"lam", lambda}, {"w", w}};
  const std::string well = "lam/(8*w^2)*((theta1-x1)^2 + (theta2-x2)^2 - w^2)^2";
  const std::vector<std::string> wellGradient{"lam/(2*w^2)*((theta1-x1)^2 + (theta2-x2)^2 - w^2)*(theta1-x1)",
                                              "lam/(2*w^2)*((theta1-x1)^2 + (theta2-x2)^2 - w^2)*(theta2-x2)"};
  const std::vector<Record> records{Record{vec2(0.0, 0.0), 1.0}, Record{vec2(1.0, 0.5), 1.0}};
  const Record replacement{vec2(-0.4, 0.3), 1.0};
  const Pair closed = makePair(std::make_shared<DoubleWellLoss>(lambda, w), records, 1, replacement);
  const Pair valueOnly = makePair(std::make_shared<ExpressionLoss>(2, well, std::vector<std::string>{}, constants),
                                  records, 1, replacement);
  const Pair withGradient = makePair(std::make_shared<ExpressionLoss>(2, well, wellGradient, constants), records, 1,
                                     replacement);
  const LossConstants a = computeConstants(closed.D, closed.DPrime, closed.replaced, closed.replacement, lower2, upper2, 2);
  const LossConstants b =
      computeConstants(valueOnly.D, valueOnly.DPrime, valueOnly.replaced, valueOnly.replacement, lower2, upper2, 2);
  const LossConstants g = computeConstants(withGradient.D, withGradient.DPrime, withGradient.replaced,
                                           withGradient.replacement, lower2, upper2, 2);
  log(b);
  BOOST_TEST(*b.smoothness == *a.smoothness, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(*g.smoothness == *a.smoothness, boost::test_tools::tolerance(1e-8));
  BOOST_TEST(*b.sensitivity == *a.sensitivity, boost::test_tools::tolerance(1e-8));
  BOOST_TEST(!b.strongConvexity.has_value());
  BOOST_TEST(contains(b.smoothnessSource, "estimated on a 33^2 grid"));

  const double q = 0.8;
  const Pair quadratic = makePair(
      std::make_shared<ExpressionLoss>(2, "q/2*((theta1-x1)^2 + (theta2-x2)^2)", std::vector<std::string>{},
                                       std::map<std::string, double>{{"q", q}}),
      records, 1, replacement);
  const LossConstants e =
      computeConstants(quadratic.D, quadratic.DPrime, quadratic.replaced, quadratic.replacement, lower2, upper2, 2);
  log(e);
  BOOST_TEST(*e.strongConvexity == q, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(*e.smoothness == q, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(*e.sensitivity == q * (records[1].x - replacement.x).norm(), boost::test_tools::tolerance(1e-8));
  BOOST_TEST(contains(e.strongConvexitySource, "estimated on a 33^2 grid"));
}

BOOST_AUTO_TEST_CASE(clipping_caps_the_sensitivity_at_2C) {
  const Record replacement{vec2(2.0, -1.0), 1.0};
  const Pair p = makePair(std::make_shared<QuadraticLoss>(1.0), {Record{vec2(0.0, 0.0), 1.0}, Record{vec2(0.5, 0.5), 1.0}},
                          0, replacement, 0.5);
  const LossConstants c = computeConstants(p.D, p.DPrime, p.replaced, p.replacement, lower2, upper2, 2);
  log(c);
  BOOST_TEST(*c.sensitivity == 1.0);
  BOOST_TEST(contains(c.sensitivitySource, "2C binds"));
  BOOST_TEST(contains(c.strongConvexitySource, "unclipped"));
  const Pair loose = makePair(std::make_shared<QuadraticLoss>(1.0), {Record{vec2(0.0, 0.0), 1.0}}, 0, replacement, 10.0);
  const LossConstants l = computeConstants(loose.D, loose.DPrime, loose.replaced, loose.replacement, lower2, upper2, 2);
  BOOST_TEST(*l.sensitivity == std::sqrt(5.0), boost::test_tools::tolerance(1e-15));
  BOOST_TEST(contains(l.sensitivitySource, "the pair gap binds"));
}

BOOST_AUTO_TEST_CASE(constants_validate_their_inputs) {
  const Record replacement{vec2(2.0, -1.0), 1.0};
  const Pair p = makePair(std::make_shared<QuadraticLoss>(1.0), {Record{vec2(0.0, 0.0), 1.0}}, 0, replacement);
  // Different loss objects (even equal ones) are refused: the constants would be ambiguous.
  const EmpiricalLoss other(std::make_shared<QuadraticLoss>(1.0), p.DPrime.data());
  BOOST_CHECK_THROW(computeConstants(p.D, other, p.replaced, replacement, lower2, upper2, 2), std::invalid_argument);
  const EmpiricalLoss clipped(std::make_shared<QuadraticLoss>(1.0), p.DPrime.data(), 1.0);
  BOOST_CHECK_THROW(computeConstants(p.D, clipped, p.replaced, replacement, lower2, upper2, 2), std::invalid_argument);
  BOOST_CHECK_THROW(computeConstants(p.D, p.DPrime, p.replaced, replacement, upper2, lower2, 2), std::invalid_argument);
  BOOST_CHECK_THROW(computeConstants(p.D, p.DPrime, p.replaced, replacement, lower2, upper2, 3), std::invalid_argument);
  BOOST_CHECK_THROW(computeConstants(p.D, p.DPrime, p.replaced, Record{Vector::Zero(3), 1.0}, lower2, upper2, 2),
                    std::invalid_argument);
  BOOST_CHECK_THROW(computeConstants(p.D, p.DPrime, p.replaced, replacement, lower2, upper2, 2, 1), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
