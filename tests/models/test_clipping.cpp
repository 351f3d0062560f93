// Per-example gradient clipping (MATH.md §2.1, lecture `002`): CLIP_C(v) = v min(1, C/|v|), the clipped empirical
// gradient against a hand computation, the unclipped value, and the sensitivity bound min(pair gap, 2C).
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "models/Loss.hpp"

using namespace fpdp::models;

namespace {

Vector randomVector(std::mt19937& rng, int d, double scale) {
  std::normal_distribution<double> normal(0.0, scale);
  Vector v(d);
  for (int i = 0; i < d; ++i) v[i] = normal(rng);
  return v;
}

Vector vec2(double a, double b) { return (Vector(2) << a, b).finished(); }

}  // namespace

BOOST_AUTO_TEST_SUITE(clipping)

BOOST_AUTO_TEST_CASE(clip_projects_onto_the_ball) {
  std::mt19937 rng(41);
  const double C = 0.7;
  for (int trial = 0; trial < 200; ++trial) {
    const Vector v = randomVector(rng, 3, 1.0);
    const Vector clipped = clipToNorm(v, C);
    BOOST_TEST(clipped.norm() <= C * (1 + 1e-15));
    if (v.norm() <= C) {
      BOOST_TEST(clipped == v);  // short vectors are left alone
    } else {
      BOOST_TEST(clipped.norm() == C, boost::test_tools::tolerance(1e-15));
      BOOST_TEST((clipped - (C / v.norm()) * v).norm() == 0.0);  // same direction
    }
  }
  BOOST_TEST(clipToNorm(Vector::Zero(2), C) == Vector::Zero(2));
}

BOOST_AUTO_TEST_CASE(clipped_empirical_gradient_by_hand) {
  // Quadratic loss, lambda = 1, theta = 0: per-example gradients -x_i = (-3, 0), (0, -0.5), (0.6, 0.8).
  // With C = 1: (-1, 0), (0, -0.5) unchanged, (0.6, 0.8) unchanged (norm exactly 1): mean (-0.4/3, 0.3/3).
  const auto loss = std::make_shared<QuadraticLoss>(1.0);
  const Dataset data({Record{vec2(3.0, 0.0), 1.0}, Record{vec2(0.0, 0.5), 1.0}, Record{vec2(-0.6, -0.8), 1.0}});
  const EmpiricalLoss clipped(loss, data, 1.0);
  const EmpiricalLoss plain(loss, data);
  const Vector theta = Vector::Zero(2);
  const Vector g = clipped.gradient(theta);
  BOOST_TEST(g[0] == (-1.0 + 0.0 + 0.6) / 3, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(g[1] == (0.0 - 0.5 + 0.8) / 3, boost::test_tools::tolerance(1e-15));
  // Unclipped: (-3 + 0 + 0.6)/3, (0 - 0.5 + 0.8)/3.
  BOOST_TEST(plain.gradient(theta)[0] == -2.4 / 3, boost::test_tools::tolerance(1e-15));
  // The value is the unclipped mean loss in both: (9 + 0.25 + 1)/2/3.
  BOOST_TEST(clipped.value(theta) == 10.25 / 6, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(clipped.value(theta) == plain.value(theta));
  BOOST_TEST(!clipped.gradientIsExact());
  BOOST_TEST(plain.gradientIsExact());
  BOOST_TEST(*clipped.clipNorm() == 1.0);
  BOOST_TEST(!plain.clipNorm().has_value());
  BOOST_TEST(!EmpiricalLoss(loss, data, std::nullopt).clipNorm().has_value());
}

BOOST_AUTO_TEST_CASE(every_clipped_per_example_gradient_is_within_C) {
  std::mt19937 rng(42);
  const double C = 0.3;
  std::vector<Record> records;
  for (int i = 0; i < 8; ++i) records.push_back(Record{randomVector(rng, 2, 2.0), i % 2 == 0 ? 1.0 : -1.0});
  const Dataset data(records);
  for (const auto& loss : std::vector<std::shared_ptr<const Loss>>{std::make_shared<QuadraticLoss>(2.0),
                                                                   std::make_shared<LogisticLoss>(0.1),
                                                                   std::make_shared<DoubleWellLoss>(1.0, 0.5)}) {
    const EmpiricalLoss clipped(loss, data, C);
    for (int trial = 0; trial < 100; ++trial) {
      const Vector theta = randomVector(rng, 2, 3.0);
      Vector mean = Vector::Zero(2);
      for (const Record& r : records) {
        const Vector g = clipped.perExampleGradient(theta, r);
        BOOST_TEST(g.norm() <= C * (1 + 1e-15));
        mean += clipToNorm(loss->gradient(theta, r), C);
      }
      mean /= static_cast<double>(records.size());
      BOOST_TEST((clipped.gradient(theta) - mean).norm() <= 1e-15 * (1 + mean.norm()));
      BOOST_TEST(clipped.gradient(theta).norm() <= C * (1 + 1e-15));
    }
  }
}

BOOST_AUTO_TEST_CASE(invalid_clip_norms_are_rejected) {
  const auto loss = std::make_shared<QuadraticLoss>(1.0);
  const Dataset data({Record{vec2(0, 0), 1.0}});
  for (const double C : {0.0, -1.0, std::numeric_limits<double>::infinity(), std::nan("")}) {
    BOOST_CHECK_THROW(EmpiricalLoss(loss, data, C), std::invalid_argument);
    BOOST_CHECK_THROW(sensitivityBound(*loss, data[0], data[0], C), std::invalid_argument);
  }
}

BOOST_AUTO_TEST_CASE(sensitivity_bound_is_min_of_gap_and_2C) {
  const Record a{vec2(1.0, 0.0), 1.0}, b{vec2(-1.0, 0.5), -1.0};
  const double distance = (a.x - b.x).norm();
  const QuadraticLoss quadratic(2.0);  // gap 2 |a - b| = 4.47
  // Without clipping: the loss's own gap.
  const auto none = sensitivityBound(quadratic, a, b, std::nullopt);
  BOOST_TEST(none->value == 2 * distance, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(none->exact);
  // 2C below the gap: 2C, exact for the quadratic loss (attained at theta = (a + b)/2).
  const auto tight = sensitivityBound(quadratic, a, b, 1.0);
  BOOST_TEST(tight->value == 2.0);
  BOOST_TEST(tight->exact);
  const Vector mid = 0.5 * (a.x + b.x);
  BOOST_TEST((clipToNorm(quadratic.gradient(mid, a), 1.0) - clipToNorm(quadratic.gradient(mid, b), 1.0)).norm() == 2.0,
             boost::test_tools::tolerance(1e-15));
  // 2C above the gap: the gap (still attained, clipping inactive at the midpoint).
  const auto loose = sensitivityBound(quadratic, a, b, 10.0);
  BOOST_TEST(loose->value == 2 * distance, boost::test_tools::tolerance(1e-15));
  BOOST_TEST(loose->exact);

  // Logistic: min(|x_a| + |x_b|, 2C), a bound either way.
  const LogisticLoss logistic(0.1);
  const auto logisticClipped = sensitivityBound(logistic, a, b, 0.25);
  BOOST_TEST(logisticClipped->value == 0.5);
  BOOST_TEST(!logisticClipped->exact);
  BOOST_TEST(sensitivityBound(logistic, a, b, 100.0)->value == a.x.norm() + b.x.norm(),
             boost::test_tools::tolerance(1e-15));

  // Double well: no gap on R^d; clipping makes it 2C (a bound); without clipping nothing.
  const DoubleWellLoss doubleWell(1.0, 0.5);
  BOOST_TEST(!sensitivityBound(doubleWell, a, b, std::nullopt).has_value());
  const auto wellClipped = sensitivityBound(doubleWell, a, b, 0.4);
  BOOST_TEST(wellClipped->value == 0.8);
  BOOST_TEST(!wellClipped->exact);

  // The bounds hold at random points for the clipped per-example gradients.
  std::mt19937 rng(43);
  for (int trial = 0; trial < 1000; ++trial) {
    const Vector theta = randomVector(rng, 2, 3.0);
    auto gap = [&](const Loss& loss, double C) {
      return (clipToNorm(loss.gradient(theta, a), C) - clipToNorm(loss.gradient(theta, b), C)).norm();
    };
    BOOST_TEST(gap(logistic, 0.25) <= 0.5 * (1 + 1e-15));
    BOOST_TEST(gap(doubleWell, 0.4) <= 0.8 * (1 + 1e-15));
    BOOST_TEST(gap(quadratic, 1.0) <= 2.0 * (1 + 1e-15));
  }
}

BOOST_AUTO_TEST_CASE(clipped_empirical_gap_is_within_sensitivity_over_n) {
  // sup_theta |grad L_D - grad L_D'| <= S_g / n (MATH.md §1) with the clipped per-example gradients.
  std::mt19937 rng(44);
  std::vector<Record> records;
  for (int i = 0; i < 5; ++i) records.push_back(Record{randomVector(rng, 2, 1.0), i % 2 == 0 ? 1.0 : -1.0});
  const Dataset D(records);
  const Neighbour neighbour{2, Record{vec2(4.0, -3.0), -1.0}};
  const Dataset DPrime = neighbour.apply(D);
  const auto loss = std::make_shared<LogisticLoss>(0.01);
  const double C = 0.5;
  const EmpiricalLoss LD(loss, D, C), LDPrime(loss, DPrime, C);
  const double S = sensitivityBound(*loss, D[2], neighbour.replacement, C)->value;
  BOOST_TEST(S == 2 * C);
  double largest = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const Vector theta = randomVector(rng, 2, 5.0);
    largest = std::max(largest, (LD.gradient(theta) - LDPrime.gradient(theta)).norm());
  }
  BOOST_TEST(largest <= S / 5 * (1 + 1e-14));
  BOOST_TEST(largest > 0.5 * S / 5);  // clipping is active and the bound is not vacuous
}

BOOST_AUTO_TEST_SUITE_END()
