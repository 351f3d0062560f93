// Huber and double-well losses of models/Loss.hpp (MATH.md §1), and the closed-form Hessians of every built-in loss:
// gradients and Hessians against central differences away from the Huber kink, one-sided consistency and the
// curvature jump at the kink, the exact Huber pair gap, the double well's curvature lambda across the well and its
// local maximum at the record, and the exact supremum of the double-well Hessian norm over a box.
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "LossTestSupport.hpp"
#include "models/Loss.hpp"

using namespace fpdp::models;
using namespace fpdp::models::test;

namespace {

// Central differences of the gradient (column j = d grad / d theta_j).
Matrix gradientDifferences(const Loss& loss, const Vector& theta, const Record& r) {
  Matrix H(theta.size(), theta.size());
  for (Eigen::Index j = 0; j < theta.size(); ++j) {
    const double h = 1e-5 * std::max(1.0, std::abs(theta[j]));
    Vector plus = theta, minus = theta;
    plus[j] += h;
    minus[j] -= h;
    H.col(j) = (loss.gradient(plus, r) - loss.gradient(minus, r)) / (plus[j] - minus[j]);
  }
  return H;
}

Vector unit(std::mt19937& rng, int d) { return randomVector(rng, d, 1.0).normalized(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(robust_losses)

BOOST_AUTO_TEST_CASE(huber_value_and_gradient_in_closed_form) {
  const HuberLoss loss(1.0, 0.5);
  const Record r{(Vector(1) << 2.0).finished(), 1.0};
  // Inside the quadratic zone: r = 0.5; outside: r = 3 -> delta (r - delta/2) = 2.5.
  const Vector inside = (Vector(1) << 2.5).finished(), outside = (Vector(1) << -1.0).finished();
  BOOST_TEST(loss.value(inside, r) == 0.125 + 0.25 * 6.25, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(loss.value(outside, r) == 2.5 + 0.25 * 1.0, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(loss.gradient(inside, r)[0] == 0.5 + 0.5 * 2.5, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(loss.gradient(outside, r)[0] == -1.0 + 0.5 * -1.0, boost::test_tools::tolerance(1e-15));
  // At theta = x the Huber part vanishes: only the regulariser remains.
  BOOST_TEST(loss.gradient(r.x, r)[0] == 0.5 * 2.0);
  BOOST_TEST(loss.name() == "huber");
  BOOST_TEST(*loss.strongConvexity() == 0.5);
  BOOST_TEST(*loss.smoothness(Dataset({r})) == 1.5);
}

BOOST_AUTO_TEST_CASE(huber_gradient_and_hessian_match_differences_away_from_the_kink) {
  std::mt19937 rng(21);
  const double delta = 0.8;
  const HuberLoss loss(delta, 0.1);
  int inside = 0, outside = 0;
  for (int d = 1; d <= 3; ++d) {
    for (int trial = 0; trial < 60; ++trial) {
      const Vector theta = randomVector(rng, d, 1.5);
      const Record r{randomVector(rng, d, 1.0), 1.0};
      const double distance = (theta - r.x).norm();
      if (std::abs(distance - delta) < 1e-3) continue;  // the kink: tested separately
      (distance < delta ? inside : outside)++;
      BOOST_TEST(relativeError(finiteDifferenceGradient(loss, theta, r), loss.gradient(theta, r)) < 1e-8);
      BOOST_TEST(relativeError(gradientDifferences(loss, theta, r), *loss.hessian(theta, r)) < 1e-7);
      // Eigenvalues within [mu, 1 + mu]: the constants strongConvexity() and smoothness().
      const Vector eigenvalues = Eigen::SelfAdjointEigenSolver<Matrix>(*loss.hessian(theta, r)).eigenvalues();
      BOOST_TEST(eigenvalues.minCoeff() >= 0.1 - 1e-14);
      BOOST_TEST(eigenvalues.maxCoeff() <= 1.1 + 1e-14);
    }
  }
  BOOST_TEST(inside > 10);  // both zones were visited
  BOOST_TEST(outside > 10);
}

BOOST_AUTO_TEST_CASE(huber_kink_one_sided_consistency_and_curvature_jump) {
  std::mt19937 rng(22);
  const double delta = 0.7, mu = 0.3;
  const HuberLoss loss(delta, mu);
  for (int d = 1; d <= 3; ++d) {
    const Record r{randomVector(rng, d, 1.0), 1.0};
    const Vector u = unit(rng, d);
    // f(s) = l(x + s u): the kink of H_delta sits at s = delta.
    auto f = [&](double s) { return loss.value(r.x + s * u, r); };
    const Vector kink = r.x + delta * u;
    const double slope = loss.gradient(kink, r).dot(u);
    // f'(delta) = delta + mu <x + delta u, u> (continuous: l is C^1).
    BOOST_TEST(slope == delta + mu * kink.dot(u), boost::test_tools::tolerance(1e-13));
    const double h = 1e-4;
    const double forward = (f(delta + h) - f(delta)) / h, backward = (f(delta) - f(delta - h)) / h;
    // One-sided differences agree with the gradient to first order, each with its own side's curvature:
    // f(delta + h) = f + h f' + (h^2/2) mu, f(delta - h) = f - h f' + (h^2/2)(1 + mu) (f is piecewise quadratic).
    BOOST_TEST(forward - slope == 0.5 * h * mu, boost::test_tools::tolerance(1e-6));
    BOOST_TEST(slope - backward == 0.5 * h * (1 + mu), boost::test_tools::tolerance(1e-6));
    // The gradient is continuous across the kink ...
    const Vector justInside = r.x + delta * (1 - 1e-12) * u, justOutside = r.x + delta * (1 + 1e-12) * u;
    BOOST_TEST((loss.gradient(justOutside, r) - loss.gradient(justInside, r)).norm() < 1e-11);
    // ... but the radial curvature jumps from 1 + mu to mu (the loss is not C^2).
    const double outer = (f(delta + 2 * h) - 2 * f(delta + h) + f(delta)) / (h * h);
    const double inner = (f(delta) - 2 * f(delta - h) + f(delta - 2 * h)) / (h * h);
    BOOST_TEST(outer == mu, boost::test_tools::tolerance(1e-5));
    BOOST_TEST(inner == 1 + mu, boost::test_tools::tolerance(1e-5));
    // The closed-form Hessian: radial curvature 1 + mu just inside, mu just outside.
    BOOST_TEST(u.dot(*loss.hessian(justInside, r) * u) == 1 + mu, boost::test_tools::tolerance(1e-14));
    BOOST_TEST(u.dot(*loss.hessian(justOutside, r) * u) == mu, boost::test_tools::tolerance(1e-10));
  }
  // Exactly on the kink (|theta - x| = delta without rounding) the Hessian is the inner one-sided limit.
  const Record origin{Vector::Zero(1), 1.0};
  BOOST_TEST((*loss.hessian((Vector(1) << delta).finished(), origin))(0, 0) == 1 + mu);
}

BOOST_AUTO_TEST_CASE(huber_pair_gap_is_exact) {
  std::mt19937 rng(23);
  const double delta = 0.5;
  const HuberLoss loss(delta, 0.2);
  const Record a{(Vector(2) << 0.1, 0.2).finished(), 1.0};
  // |a - near| = 0.5 < 2 delta: the gap is |a - b|; |a - far| = 3 > 2 delta: the gap is 2 delta.
  const Record near{(Vector(2) << 0.4, 0.6).finished(), 1.0};
  const Record far{(Vector(2) << 1.9, 2.6).finished(), 1.0};
  for (const Record* b : {&near, &far}) {
    const auto gap = loss.pairGradientGap(a, *b);
    BOOST_REQUIRE(gap.has_value());
    BOOST_TEST(gap->exact);
    BOOST_TEST(gap->value == std::min((a.x - b->x).norm(), 2 * delta), boost::test_tools::tolerance(1e-15));
    // Attained at the midpoint ...
    const Vector mid = 0.5 * (a.x + b->x);
    BOOST_TEST((loss.gradient(mid, a) - loss.gradient(mid, *b)).norm() == gap->value, boost::test_tools::tolerance(1e-14));
    // ... and never exceeded.
    for (int trial = 0; trial < 2000; ++trial) {
      const Vector theta = randomVector(rng, 2, 2.0);
      BOOST_TEST((loss.gradient(theta, a) - loss.gradient(theta, *b)).norm() <= gap->value * (1 + 1e-14));
    }
  }
  BOOST_TEST(loss.pairGradientGap(a, near)->value == 0.5, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(loss.pairGradientGap(a, far)->value == 1.0, boost::test_tools::tolerance(1e-15));
}

BOOST_AUTO_TEST_CASE(double_well_gradient_and_hessian_match_differences) {
  std::mt19937 rng(24);
  const DoubleWellLoss loss(1.3, 0.6);
  for (int d = 1; d <= 3; ++d) {
    for (int trial = 0; trial < 40; ++trial) {
      const Vector theta = randomVector(rng, d, 1.5);
      const Record r{randomVector(rng, d, 1.0), 1.0};
      BOOST_TEST(relativeError(finiteDifferenceGradient(loss, theta, r), loss.gradient(theta, r)) < 1e-8);
      BOOST_TEST(relativeError(gradientDifferences(loss, theta, r), *loss.hessian(theta, r)) < 1e-8);
    }
  }
  const Record r{(Vector(2) << 0.5, -0.25).finished(), 1.0};
  const Vector theta = (Vector(2) << 1.5, 0.75).finished();  // v = (1, 1), |v|^2 = 2
  const double c = 1.3 / (8 * 0.36);
  BOOST_TEST(loss.value(theta, r) == c * (2 - 0.36) * (2 - 0.36), boost::test_tools::tolerance(1e-15));
}

BOOST_AUTO_TEST_CASE(double_well_curvature_is_lambda_across_the_well_and_the_record_is_a_maximum) {
  std::mt19937 rng(25);
  const double lambda = 2.5, w = 0.4;
  const DoubleWellLoss loss(lambda, w);
  for (int d = 1; d <= 3; ++d) {
    const Record r{randomVector(rng, d, 1.0), 1.0};
    const Vector u = unit(rng, d);
    const Vector well = r.x + w * u;
    BOOST_TEST(std::abs(loss.value(well, r)) < 1e-20);  // the wells are the minima (l = 0)
    BOOST_TEST(loss.gradient(well, r).norm() < 1e-14);
    const double h = 1e-4;
    auto along = [&](const Vector& direction, const Vector& at) {
      return (loss.value(at + h * direction, r) - 2 * loss.value(at, r) + loss.value(at - h * direction, r)) / (h * h);
    };
    BOOST_TEST(along(u, well) == lambda, boost::test_tools::tolerance(1e-6));  // across the well: lambda
    BOOST_TEST(u.dot(*loss.hessian(well, r) * u) == lambda, boost::test_tools::tolerance(1e-14));
    if (d >= 2) {
      // Along the well (tangentially): flat to second order.
      Vector t = randomVector(rng, d, 1.0);
      t = (t - t.dot(u) * u).normalized();
      BOOST_TEST(std::abs(along(t, well)) < 1e-6);
    }
    // theta = x: a local maximum with curvature -lambda/2 in every direction.
    BOOST_TEST(along(u, r.x) == -lambda / 2, boost::test_tools::tolerance(1e-6));
    const Matrix atRecord = *loss.hessian(r.x, r);
    BOOST_TEST(relativeError(atRecord, Matrix(-lambda / 2 * Matrix::Identity(d, d))) < 1e-15);
    BOOST_TEST(loss.value(r.x, r) > loss.value(r.x + 0.01 * u, r));
  }
  // Not convex, not globally smooth, no finite pair gap: no constants claimed.
  BOOST_TEST(!loss.strongConvexity().has_value());
  BOOST_TEST(!loss.smoothness(Dataset({Record{Vector::Zero(2), 1.0}})).has_value());
  const Record a{(Vector(2) << 0.0, 0.0).finished(), 1.0}, b{(Vector(2) << 1.0, 0.0).finished(), 1.0};
  BOOST_TEST(!loss.pairGradientGap(a, b).has_value());
  BOOST_TEST(loss.pairGradientGap(a, a)->value == 0.0);
  // The gradient gap indeed grows without bound: |gap| ~ lambda/(2 w^2) |theta|^2 |a - b|.
  const Vector far = (Vector(2) << 0.0, 100.0).finished();
  BOOST_TEST((loss.gradient(far, a) - loss.gradient(far, b)).norm() > 1e4);
}

BOOST_AUTO_TEST_CASE(double_well_hessian_supremum_over_a_box_is_exact) {
  std::mt19937 rng(26);
  const double lambda = 1.7, w = 0.5;
  const DoubleWellLoss loss(lambda, w);
  struct Case {
    std::array<double, 3> lower, upper;
    Vector x;
  };
  // x inside a small box (the maximum -lambda/2 at x dominates), inside a large box (a far corner dominates), and
  // outside the box; in 1, 2 and 3 dimensions.
  const std::vector<Case> cases{
      {{-0.2, -0.15, 0}, {0.2, 0.15, 0}, (Vector(2) << 0.05, -0.02).finished()},
      {{-2.0, -1.0, 0}, {1.5, 2.0, 0}, (Vector(2) << 0.3, 0.1).finished()},
      {{1.0, 1.0, 0}, {1.4, 1.3, 0}, (Vector(2) << 0.0, 0.2).finished()},
      {{-0.4, 0, 0}, {0.5, 0, 0}, (Vector(1) << 0.1).finished()},
      {{-0.3, -0.3, -0.3}, {0.3, 0.4, 0.2}, (Vector(3) << 0.0, 0.1, -0.1).finished()},
  };
  for (const Case& c : cases) {
    const int d = static_cast<int>(c.x.size());
    const Record r{c.x, 1.0};
    const double sup = loss.hessianSupNorm(r, c.lower, c.upper, d);
    auto norm = [&](const Vector& theta) {
      return Eigen::SelfAdjointEigenSolver<Matrix>(*loss.hessian(theta, r)).eigenvalues().cwiseAbs().maxCoeff();
    };
    // Random points never exceed it ...
    double largest = 0;
    for (int trial = 0; trial < 20000; ++trial) {
      Vector theta(d);
      for (int a = 0; a < d; ++a) theta[a] = std::uniform_real_distribution<double>(c.lower[a], c.upper[a])(rng);
      largest = std::max(largest, norm(theta));
    }
    BOOST_TEST(largest <= sup * (1 + 1e-13));
    // ... and the candidates (the point of the box nearest x, every corner) attain it.
    Vector nearest(d);
    for (int a = 0; a < d; ++a) nearest[a] = std::clamp(c.x[a], c.lower[a], c.upper[a]);
    double candidates = norm(nearest);
    for (int corner = 0; corner < (1 << d); ++corner) {
      Vector theta(d);
      for (int a = 0; a < d; ++a) theta[a] = (corner >> a & 1) ? c.upper[a] : c.lower[a];
      candidates = std::max(candidates, norm(theta));
    }
    BOOST_TEST(candidates == sup, boost::test_tools::tolerance(1e-13));
  }
  // Which end wins: for the small box the maximum at x (lambda/2), for the large one a far corner.
  BOOST_TEST(loss.hessianSupNorm(Record{cases[0].x, 1.0}, cases[0].lower, cases[0].upper, 2) == lambda / 2,
             boost::test_tools::tolerance(1e-15));
  BOOST_TEST(loss.hessianSupNorm(Record{cases[1].x, 1.0}, cases[1].lower, cases[1].upper, 2) > lambda / 2);
  // The empirical bound is the mean of the per-record suprema.
  const Dataset data({Record{cases[0].x, 1.0}, Record{(Vector(2) << 1.0, 1.0).finished(), 1.0}});
  const double expected = 0.5 * (loss.hessianSupNorm(data[0], cases[0].lower, cases[0].upper, 2) +
                                 loss.hessianSupNorm(data[1], cases[0].lower, cases[0].upper, 2));
  BOOST_TEST(loss.smoothnessBoundOnBox(data, cases[0].lower, cases[0].upper, 2) == expected,
             boost::test_tools::tolerance(1e-15));
  BOOST_CHECK_THROW(loss.hessianSupNorm(data[0], cases[0].upper, cases[0].lower, 2), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(closed_form_hessians_of_quadratic_and_logistic_match_differences) {
  std::mt19937 rng(27);
  const QuadraticLoss quadratic(0.9);
  const LogisticLoss logistic(0.05);
  for (int d = 1; d <= 3; ++d) {
    for (int trial = 0; trial < 30; ++trial) {
      const Vector theta = randomVector(rng, d, 1.5);
      const Record r{randomVector(rng, d, 1.5), trial % 2 == 0 ? 1.0 : -1.0};
      BOOST_TEST(relativeError(gradientDifferences(quadratic, theta, r), *quadratic.hessian(theta, r)) < 1e-9);
      BOOST_TEST(relativeError(gradientDifferences(logistic, theta, r), *logistic.hessian(theta, r)) < 1e-8);
    }
  }
}

BOOST_AUTO_TEST_CASE(constructors_validate_parameters) {
  BOOST_CHECK_THROW(HuberLoss(0.0), std::invalid_argument);
  BOOST_CHECK_THROW(HuberLoss(1.0, -0.1), std::invalid_argument);
  BOOST_CHECK_THROW(HuberLoss(std::nan("")), std::invalid_argument);
  BOOST_CHECK_THROW(DoubleWellLoss(0.0, 1.0), std::invalid_argument);
  BOOST_CHECK_THROW(DoubleWellLoss(1.0, -1.0), std::invalid_argument);
  BOOST_CHECK_THROW(DoubleWellLoss(1.0, INFINITY), std::invalid_argument);
  const HuberLoss huber(1.0);
  BOOST_CHECK_THROW(huber.value(Vector::Zero(2), Record{Vector::Zero(3), 1.0}), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
