// Minibatch noisy SGD (MATH.md §8): the batch schedule (models/MinibatchSchedule.hpp), the minibatch drift
// (EmpiricalLoss::batchGradientInto) and the closed forms of models/MinibatchReferences.hpp against facts that need no
// sampling: gamma = 1 and one cyclic batch of all records reduce to full-batch noisy GD (Gaussian closed forms);
// K = 1 mixtures written out by hand; the 1-D mixture quadrature against Gaussian closed forms and a dense
// trapezoid rule.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <memory>

#include "models/ExpressionLoss.hpp"
#include "models/GaussianFunctionals.hpp"
#include "models/MinibatchReferences.hpp"
#include "models/MinibatchSchedule.hpp"

using namespace fpdp::models;

namespace {

Dataset data1d(std::initializer_list<double> xs) {
  std::vector<Record> r;
  for (double x : xs) r.push_back(Record{Vector::Constant(1, x), 1.0});
  return Dataset(r);
}

Record record1d(double x) { return Record{Vector::Constant(1, x), 1.0}; }

std::shared_ptr<const Loss> linearLoss() {
  return std::make_shared<ExpressionLoss>(1, "-x1*theta1", std::vector<std::string>{"-x1"});
}

Matrix scalar(double v) { return Matrix::Constant(1, 1, v); }

using Batches = std::vector<std::vector<std::size_t>>;

GaussianMixture gaussianMixture(std::initializer_list<std::pair<double, double>> weightAndMean, double variance) {
  GaussianMixture m;
  for (const auto& [w, mu] : weightAndMean) {
    m.weights.push_back(w);
    m.means.push_back(Vector::Constant(1, mu));
  }
  m.covariance = scalar(variance);
  return m;
}

/// int f over [a, b] by the trapezoid rule on n intervals: an independent, slow reference.
template <class F>
double trapezoid(F&& f, double a, double b, long n) {
  const double h = (b - a) / static_cast<double>(n);
  double s = 0.5 * (f(a) + f(b));
  for (long i = 1; i < n; ++i) s += f(a + h * static_cast<double>(i));
  return s * h;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(minibatch_references)

BOOST_AUTO_TEST_CASE(cyclic_batches_of_the_neighbours) {
  // n = 5, size 2: {0, 1}, {2, 3}, {4}.
  const auto replace = cyclicBatches(5, 2, Neighbour::replace(3, record1d(9)));
  BOOST_TEST((replace.batches[0] == Batches{{0, 1}, {2, 3}, {4}}));
  BOOST_TEST((replace.batches[1] == Batches{{0, 1}, {2, 3}, {4}}));
  BOOST_TEST(replace.cycleLength() == 3u);
  BOOST_TEST((replace.atStep(1, 4) == std::vector<std::size_t>{2, 3}));
  // The added record is D''s index 5 and joins the last batch.
  const auto add = cyclicBatches(5, 2, Neighbour::add(record1d(9)));
  BOOST_TEST((add.batches[1] == Batches{{0, 1}, {2, 3}, {4, 5}}));
  // Removing record 1 leaves its batch one short; D''s later records are renumbered, not re-batched.
  const auto remove = cyclicBatches(5, 2, Neighbour::remove(1));
  BOOST_TEST((remove.batches[1] == Batches{{0}, {1, 2}, {3}}));
  BOOST_CHECK_THROW(cyclicBatches(5, 0, Neighbour::remove(1)), std::invalid_argument);
  BOOST_CHECK_THROW(cyclicBatches(5, 2, Neighbour::remove(5)), std::out_of_range);
}

BOOST_AUTO_TEST_CASE(batch_gradient_sums_the_batch_over_b) {
  const Dataset D = data1d({1.2, -0.8, 1.5, 0.3});
  const EmpiricalLoss logistic(std::make_shared<LogisticLoss>(0.5), D, 0.7);  // clipped at 0.7
  const double theta = 0.4;
  const std::size_t batch[] = {0, 2, 3};
  double g = 0;
  logistic.batchGradientInto(&theta, batch, 3, 2.0, &g);
  double expected = 0;
  for (std::size_t i : batch) expected += logistic.perExampleGradient(Vector::Constant(1, theta), D[i])[0];
  BOOST_TEST(g == expected / 2.0, boost::test_tools::tolerance(1e-15));
  // Every record with b = n: the full-batch drift, bit for bit (the same loop).
  const std::size_t all[] = {0, 1, 2, 3};
  double full = 0, batched = 0;
  logistic.gradientInto(&theta, &full);
  logistic.batchGradientInto(&theta, all, 4, 4.0, &batched);
  BOOST_TEST(full == batched);
}

BOOST_AUTO_TEST_CASE(cyclic_quadratic_by_hand) {
  // lambda = 2, eta = 0.1, b = 2, D = {1, 3, 4}: batches {0, 1}, {2}; D' replaces record 2 by 10.
  const auto loss = std::make_shared<QuadraticLoss>(2.0);
  const Dataset D = data1d({1.0, 3.0, 4.0});
  const Neighbour nb = Neighbour::replace(2, record1d(10.0));
  const EmpiricalLoss LD(loss, D), LDp(loss, nb.apply(D));
  const double eta = 0.1, lambda = 2.0, b = 2.0, sigma2 = 0.3;
  const Gaussian initial(Vector::Constant(1, 0.5), scalar(0.2));
  const auto ref = CyclicQuadraticReference::forLosses(LD, LDp, cyclicBatches(3, 2, nb), b, eta, scalar(sigma2), initial);
  BOOST_REQUIRE(ref);
  // Three steps by hand: batches {1, 3} (a = 1 - eta lambda), {4 | 10} (a = 1 - eta lambda / 2), {1, 3} again.
  double m = 0.5, mq = 0.5, v = 0.2;
  const double a2 = 1 - eta * lambda, a1 = 1 - eta * lambda / 2;
  m = a2 * m + eta * lambda / b * 4.0, mq = a2 * mq + eta * lambda / b * 4.0, v = a2 * a2 * v + 2 * eta * sigma2;
  m = a1 * m + eta * lambda / b * 4.0, mq = a1 * mq + eta * lambda / b * 10.0, v = a1 * a1 * v + 2 * eta * sigma2;
  m = a2 * m + eta * lambda / b * 4.0, mq = a2 * mq + eta * lambda / b * 4.0, v = a2 * a2 * v + 2 * eta * sigma2;
  BOOST_TEST(ref->lawP(3).mean()[0] == m, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(ref->lawQ(3).mean()[0] == mq, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(ref->lawP(3).covariance()(0, 0) == v, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(ref->lawQ(3).covariance()(0, 0) == v, boost::test_tools::tolerance(1e-14));
  // Clipped or non-quadratic losses have no such form.
  const EmpiricalLoss clipped(loss, D, 1.0);
  BOOST_TEST(!CyclicQuadraticReference::forLosses(clipped, LDp, cyclicBatches(3, 2, nb), b, eta, scalar(sigma2), initial));
}

BOOST_AUTO_TEST_CASE(one_cyclic_batch_of_all_records_is_full_batch_gd) {
  // size = n, b = n: m <- (1 - eta lambda) m + eta lambda xbar, V <- (1 - eta lambda)^2 V + 2 eta Sigma (MATH.md §6).
  const auto loss = std::make_shared<QuadraticLoss>(1.5);
  const Dataset D = data1d({1.0, -2.0, 0.5, 4.0});
  const Neighbour nb = Neighbour::replace(0, record1d(3.0));
  const EmpiricalLoss LD(loss, D), LDp(loss, nb.apply(D));
  const double eta = 0.2;
  const Gaussian initial(Vector::Constant(1, 0.0), scalar(0.5));
  const auto ref = CyclicQuadraticReference::forLosses(LD, LDp, cyclicBatches(4, 4, nb), 4.0, eta, scalar(0.1), initial);
  BOOST_REQUIRE(ref);
  double m = 0.0, v = 0.5;
  const double a = 1 - eta * 1.5;
  for (int k = 0; k < 7; ++k) m = a * m + eta * 1.5 * D.mean()[0], v = a * a * v + 2 * eta * 0.1;
  BOOST_TEST(ref->lawP(7).mean()[0] == m, boost::test_tools::tolerance(1e-13));
  BOOST_TEST(ref->lawP(7).covariance()(0, 0) == v, boost::test_tools::tolerance(1e-13));
}

BOOST_AUTO_TEST_CASE(constant_gradients_are_recognised) {
  const Dataset D = data1d({1.0, 2.0});
  BOOST_TEST(constantPerExampleGradients(EmpiricalLoss(linearLoss(), D)).has_value());
  // Clipping the constant gradients: still constant, clipped.
  const auto clipped = constantPerExampleGradients(EmpiricalLoss(linearLoss(), D, 1.5));
  BOOST_REQUIRE(clipped);
  BOOST_TEST((*clipped)[1][0] == -1.5);
  // A gradient that names theta, central differences, or a closed-form loss: no.
  const auto curved = std::make_shared<ExpressionLoss>(1, "-x1*theta1 + theta1^2",
                                                       std::vector<std::string>{"-x1 + 2*theta1"});
  BOOST_TEST(!constantPerExampleGradients(EmpiricalLoss(curved, D)).has_value());
  const auto byDifferences = std::make_shared<ExpressionLoss>(1, "-x1*theta1");
  BOOST_TEST(!constantPerExampleGradients(EmpiricalLoss(byDifferences, D)).has_value());
  BOOST_TEST(!constantPerExampleGradients(EmpiricalLoss(std::make_shared<QuadraticLoss>(1.0), D)).has_value());
}

BOOST_AUTO_TEST_CASE(poisson_one_step_by_hand) {
  // l = -x theta, D = {1, 2, 3}, gamma = 0.3, b = gamma n = 0.9, eta = 0.1, K = 1: shifts (eta/b) sum_{i in B} x_i.
  // The subsets {3} and {1, 2} give the same shift 3: one component of weight g(1-g)^2 + g^2(1-g).
  const double g = 0.3, eta = 0.1, b = 0.9, sigma2 = 0.25;
  const Dataset D = data1d({1.0, 2.0, 3.0});
  const EmpiricalLoss L(linearLoss(), D);
  const Gaussian initial(Vector::Constant(1, 0.2), scalar(0.01));
  const auto ref = PoissonShiftReference::forLosses(L, L, g, b, eta, scalar(sigma2), initial);
  BOOST_REQUIRE(ref);
  const GaussianMixture mix = ref->lawP(1);
  const double h = 1 - g;
  const double expectedWeight[] = {h * h * h, g * h * h, g * h * h, g * h * h + g * g * h, g * g * h, g * g * h, g * g * g};
  BOOST_REQUIRE(mix.size() == 7u);
  for (std::size_t j = 0; j < 7; ++j) {
    BOOST_TEST_INFO("component " << j);
    BOOST_TEST(mix.means[j][0] == 0.2 + eta / b * static_cast<double>(j), boost::test_tools::tolerance(1e-13));
    BOOST_TEST(mix.weights[j] == expectedWeight[j], boost::test_tools::tolerance(1e-13));
  }
  BOOST_TEST(mix.covariance(0, 0) == 0.01 + 2 * eta * sigma2, boost::test_tools::tolerance(1e-15));
  // Equal records are one group: D = {1, 1}, K = 2: counts Binomial(4, gamma) at shifts 0 .. 4 eta / b.
  const EmpiricalLoss twins(linearLoss(), data1d({1.0, 1.0}));
  const GaussianMixture t = PoissonShiftReference::forLosses(twins, twins, g, 0.6, eta, scalar(sigma2), initial)->lawP(2);
  BOOST_REQUIRE(t.size() == 5u);
  BOOST_TEST(t.weights[2] == 6 * g * g * h * h, boost::test_tools::tolerance(1e-13));
  BOOST_TEST(t.means[4][0] == 0.2 + 4 * eta / 0.6, boost::test_tools::tolerance(1e-13));
}

BOOST_AUTO_TEST_CASE(poisson_added_record) {
  // D = {1}, D' = D + {2} (appended), gamma = 0.5, b = gamma |D| = 0.5 for both, eta = 0.1, K = 1: p has shifts 0 and
  // eta/b, q has 0, eta/b, 2 eta/b, 3 eta/b with weight 1/4 each.
  const Dataset D = data1d({1.0});
  const EmpiricalLoss LD(linearLoss(), D), LDp(linearLoss(), Neighbour::add(record1d(2.0)).apply(D));
  const Gaussian initial(Vector::Constant(1, 0.0), scalar(0.01));
  const auto ref = PoissonShiftReference::forLosses(LD, LDp, 0.5, 0.5, 0.1, scalar(0.04), initial);
  BOOST_REQUIRE(ref);
  const GaussianMixture p = ref->lawP(1), q = ref->lawQ(1);
  BOOST_REQUIRE(p.size() == 2u);
  BOOST_REQUIRE(q.size() == 4u);
  for (std::size_t j = 0; j < 4; ++j) {
    BOOST_TEST(q.means[j][0] == 0.2 * static_cast<double>(j), boost::test_tools::tolerance(1e-14));
    BOOST_TEST(q.weights[j] == 0.25, boost::test_tools::tolerance(1e-14));
  }
  BOOST_TEST(p.means[1][0] == 0.2, boost::test_tools::tolerance(1e-14));
}

BOOST_AUTO_TEST_CASE(poisson_with_rate_one_is_the_gaussian_closed_form) {
  // gamma = 1, b = n: every record every step, theta_K ~ N(m0 + K eta xbar, V0 + 2 eta K sigma^2) for D and D'.
  const Dataset D = data1d({1.0, 2.0, -0.5});
  const Neighbour nb = Neighbour::replace(1, record1d(-1.0));
  const EmpiricalLoss LD(linearLoss(), D), LDp(linearLoss(), nb.apply(D));
  const double eta = 0.05, sigma2 = 0.04;
  const long K = 6;
  const Gaussian initial(Vector::Constant(1, 0.0), scalar(0.02));
  const auto ref = PoissonShiftReference::forLosses(LD, LDp, 1.0, 3.0, eta, scalar(sigma2), initial);
  BOOST_REQUIRE(ref);
  const GaussianMixture p = ref->lawP(K), q = ref->lawQ(K);
  BOOST_REQUIRE(p.size() == 1u);
  BOOST_REQUIRE(q.size() == 1u);
  const Vector mp = Vector::Constant(1, K * eta * D.mean()[0]), mq = Vector::Constant(1, K * eta * nb.apply(D).mean()[0]);
  const Matrix V = scalar(0.02 + 2 * eta * K * sigma2);
  BOOST_TEST(p.means[0][0] == mp[0], boost::test_tools::tolerance(1e-14));
  BOOST_TEST(q.means[0][0] == mq[0], boost::test_tools::tolerance(1e-14));
  const MixturePair1d pair(p, q);
  const auto kl = pair.kl();
  BOOST_TEST(kl.value == gaussianKL(mp, V, mq, V), boost::test_tools::tolerance(1e-11));
  BOOST_TEST(kl.errorBound <= 1e-11 * kl.value);
  for (double alpha : {1.5, 2.0, 10.0, 100.0}) {
    BOOST_TEST_INFO("alpha = " << alpha);
    const auto r = pair.renyi(alpha);
    BOOST_TEST(r.value == gaussianRenyi(mp, V, mq, V, alpha), boost::test_tools::tolerance(1e-11));
    BOOST_TEST(r.errorBound <= 1e-11 * r.value);
  }
  BOOST_TEST(pair.tv() == gaussianHockeyStick(mp, V, mq, V, 0.0), boost::test_tools::tolerance(1e-12));
  for (double eps : {0.1, 1.0, 3.0})
    BOOST_TEST(pair.hockeyStick(eps) == gaussianHockeyStick(mp, V, mq, V, eps), boost::test_tools::tolerance(1e-10));
  for (double delta : {1e-2, 1e-5})
    BOOST_TEST(mixtureExactEpsilon(pair, delta) == gaussianExactEpsilon(mp, V, mq, V, delta),
               boost::test_tools::tolerance(1e-10));
}

BOOST_AUTO_TEST_CASE(mixture_quadrature_against_a_dense_trapezoid_rule) {
  // Two mixtures with crossings of p = e^eps q on both sides; the trapezoid rule on 4e5 intervals of [-12, 14.5]
  // (20 standard deviations beyond the extreme centres; q underflows further out).
  const GaussianMixture p = gaussianMixture({{0.5, 0.0}, {0.3, 1.0}, {0.2, 2.5}}, 0.36);
  const GaussianMixture q = gaussianMixture({{0.2, 0.0}, {0.6, 1.0}, {0.2, 2.0}}, 0.36);
  const MixturePair1d pair(p, q);
  auto dens = [](const GaussianMixture& m, double x) { return m.density(Vector::Constant(1, x)); };
  const double a = -12, b = 14.5;
  const long n = 400000;
  const double kl = trapezoid([&](double x) { const double u = dens(p, x), v = dens(q, x); return u > 0 ? u * std::log(u / v) : 0.0; }, a, b, n);
  BOOST_TEST(pair.kl().value == kl, boost::test_tools::tolerance(1e-8));
  const double e3 = trapezoid([&](double x) { return std::pow(dens(p, x), 3.0) * std::pow(dens(q, x), -2.0); }, a, b, n);
  BOOST_TEST(pair.renyi(3.0).value == std::log(e3) / 2.0, boost::test_tools::tolerance(1e-8));
  for (double eps : {0.0, 0.3}) {
    // Kinks at p = e^eps q: the trapezoid rule is O(h^2) there (h = 1.3e-4).
    const double hs = trapezoid([&](double x) { return std::max(0.0, dens(p, x) - std::exp(eps) * dens(q, x)); }, a, b, n);
    BOOST_TEST_INFO("eps = " << eps);
    BOOST_TEST(pair.hockeyStick(eps) == hs, boost::test_tools::tolerance(1e-7));
    const double hsReverse = trapezoid([&](double x) { return std::max(0.0, dens(q, x) - std::exp(eps) * dens(p, x)); }, a, b, n);
    BOOST_TEST(pair.reversed().hockeyStick(eps) == hsReverse, boost::test_tools::tolerance(1e-7));
  }
  // eps(delta): delta(eps) at the root is delta (the curve is continuous).
  const double eps = mixtureExactEpsilon(pair, 1e-3);
  BOOST_TEST(std::max(pair.hockeyStick(eps), pair.reversed().hockeyStick(eps)) == 1e-3,
             boost::test_tools::tolerance(1e-9));
  BOOST_CHECK_THROW(MixturePair1d(p, gaussianMixture({{1.0, 0.0}}, 0.5)), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
