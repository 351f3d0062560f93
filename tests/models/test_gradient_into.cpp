// The allocation-free gradient path of the Monte Carlo sampler (EmpiricalLoss::gradientInto, Loss::gradientInto) is
// the same definition as the Eigen interface the density solver uses: bit for bit for the per-example sums (logistic,
// clipped or not, and the fallback of the other losses), to rounding for the quadratic shortcut lambda (theta - xbar).
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <memory>
#include <random>

#include "models/Loss.hpp"

using namespace fpdp::models;

namespace {

Dataset randomData(std::mt19937& rng, int n, int d, bool labels) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<Record> records;
  for (int i = 0; i < n; ++i) {
    Record r;
    r.x.resize(d);
    for (int a = 0; a < d; ++a) r.x[a] = normal(rng);
    r.y = labels && (i % 3 == 0) ? -1.0 : 1.0;
    records.push_back(r);
  }
  return Dataset(records);
}

Vector gradientInto(const EmpiricalLoss& L, const Vector& theta) {
  Vector out(theta.size());
  L.gradientInto(theta.data(), out.data());
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gradient_into)

BOOST_AUTO_TEST_CASE(per_example_sums_are_bit_identical) {
  std::mt19937 rng(7);
  std::normal_distribution<double> normal(0.0, 2.0);
  for (int d = 1; d <= 3; ++d) {
    const Dataset data = randomData(rng, 9, d, true);
    const std::vector<std::shared_ptr<const Loss>> losses{std::make_shared<LogisticLoss>(0.1),
                                                          std::make_shared<HuberLoss>(0.5, 0.2),
                                                          std::make_shared<DoubleWellLoss>(1.0, 0.8)};
    for (const auto& loss : losses)
      for (std::optional<double> clip : {std::optional<double>{}, std::optional<double>{0.3}}) {
        const EmpiricalLoss L(loss, data, clip);
        for (int trial = 0; trial < 20; ++trial) {
          Vector theta(d);
          for (int a = 0; a < d; ++a) theta[a] = normal(rng);
          const Vector reference = L.gradient(theta), fast = gradientInto(L, theta);
          for (int a = 0; a < d; ++a) BOOST_TEST(fast[a] == reference[a]);
        }
      }
  }
}

BOOST_AUTO_TEST_CASE(quadratic_shortcut_agrees_to_rounding) {
  std::mt19937 rng(8);
  std::normal_distribution<double> normal(0.0, 2.0);
  for (int d = 1; d <= 3; ++d) {
    const Dataset data = randomData(rng, 50, d, false);
    const EmpiricalLoss plain(std::make_shared<QuadraticLoss>(1.7), data);
    const EmpiricalLoss clipped(std::make_shared<QuadraticLoss>(1.7), data, 0.4);  // no shortcut: the clipped sum
    for (int trial = 0; trial < 20; ++trial) {
      Vector theta(d);
      for (int a = 0; a < d; ++a) theta[a] = normal(rng);
      const Vector reference = plain.gradient(theta), fast = gradientInto(plain, theta);
      // n = 50 terms of size ~ lambda |theta - x| summed in two orders: a few ulps of the largest term.
      BOOST_TEST((fast - reference).norm() <= 1e-13 * (1.0 + 1.7 * (theta.norm() + 3.0)));
      const Vector c = clipped.gradient(theta), cf = gradientInto(clipped, theta);
      for (int a = 0; a < d; ++a) BOOST_TEST(cf[a] == c[a]);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
