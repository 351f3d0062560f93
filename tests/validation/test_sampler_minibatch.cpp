// The Monte Carlo sampler's minibatches (MATH.md §8, validation/MonteCarloSampler, models/MinibatchSchedule):
//   - cyclic batches on the quadratic loss: the sample's moments against the Gaussian laws of
//     models::CyclicQuadraticReference;
//   - Poisson batches on the linear loss -x theta: moments and histograms against the lattice mixture of
//     models::PoissonShiftReference (a chi-square and L1 test of the whole law, not only its moments);
//   - Poisson batches give the same bits on 1, 2 and 3 threads;
//   - full batches, one cyclic batch of all n records and Poisson batches with gamma = 1 give the same bits for one
//     seed (the noise stream does not depend on the batches, and a batch of every record with b = n takes the
//     full-batch drift).
// Tolerances are quantiles at total level kGamma, Bonferroni-corrected over the checks of a test case.
#define BOOST_TEST_MODULE validation_sampler_minibatch
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "../solver/PetscFixture.hpp"
#include "SamplerTestSupport.hpp"
#include "models/ExpressionLoss.hpp"
#include "models/GaussianFunctionals.hpp"
#include "models/MinibatchReferences.hpp"
#include "validation/SampleAgreement.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {

constexpr double kGamma = 1e-3;

double zFor(int checks) { return validation::normalQuantileTwoSided(1.0 - kGamma / checks); }

meshes::BoxMesh line(double lo, double hi, int cells) { return meshes::BoxMesh({meshes::Axis::uniform(lo, hi, cells)}); }

validation::SamplerSettings settings(long particles, std::uint64_t seed, int threads) {
  validation::SamplerSettings s;
  s.particles = particles;
  s.seed = seed;
  s.threads = threads;
  return s;
}

/// D = {0.5, 1.5, -1, 2, 0.2}, D' replaces record 2 by 3; the sampler problem of `loss` with these data.
validation::SamplerProblem problemWith(std::shared_ptr<const models::Loss> loss, const models::Neighbour& nb,
                                       double eta, long steps, double sigma2) {
  const models::Dataset D = testing::records1d({0.5, 1.5, -1.0, 2.0, 0.2});
  validation::SamplerProblem p;
  p.lossD = std::make_shared<models::EmpiricalLoss>(loss, D);
  p.lossDPrime = std::make_shared<models::EmpiricalLoss>(loss, nb.apply(D));
  p.sigma = p.sigmaPrime = models::Matrix::Constant(1, 1, sigma2);
  p.initialMean = models::Vector::Constant(1, 0.1);
  p.initialCovariance = models::Matrix::Constant(1, 1, 0.05);
  p.step = eta;
  p.steps = steps;
  return p;
}

models::Neighbour replaceTwo() {
  models::Record r;
  r.x = models::Vector::Constant(1, 3.0);
  return models::Neighbour::replace(2, r);
}

/// The mixture's mean and variance.
std::pair<double, double> moments(const models::GaussianMixture& m) {
  double mean = 0, second = 0;
  for (std::size_t j = 0; j < m.size(); ++j) mean += m.weights[j] * m.means[j][0];
  for (std::size_t j = 0; j < m.size(); ++j) second += m.weights[j] * std::pow(m.means[j][0] - mean, 2);
  return {mean, m.covariance(0, 0) + second};
}

/// Sample mean and variance within z standard errors of the exact ones, the errors not trivially wide.
void checkMoments(const validation::SampleMoments& m, double mean, double variance, double z, const std::string& what) {
  BOOST_TEST_INFO(what);
  BOOST_TEST(std::abs(m.mean[0] - mean) <= z * m.meanStandardError[0],
             "mean " << m.mean[0] << " exact " << mean << " se " << m.meanStandardError[0]);
  BOOST_TEST(std::abs(m.covariance(0, 0) - variance) <= z * m.covarianceStandardError(0, 0),
             "variance " << m.covariance(0, 0) << " exact " << variance << " se " << m.covarianceStandardError(0, 0));
  BOOST_TEST(z * m.meanStandardError[0] < 0.03 * std::sqrt(variance));
  BOOST_TEST(z * m.covarianceStandardError(0, 0) < 0.05 * variance);
}

std::shared_ptr<const models::Loss> linearLoss() {
  return std::make_shared<models::ExpressionLoss>(1, "-x1*theta1", std::vector<std::string>{"-x1"});
}

}  // namespace

BOOST_AUTO_TEST_CASE(cyclic_quadratic_moments) {
  // n = 5, size 2: batches {0, 1}, {2, 3}, {4}; b = 2; D' differs in batch 1 only.
  const auto nb = replaceTwo();
  auto p = problemWith(std::make_shared<models::QuadraticLoss>(1.0), nb, 0.3, 7, 0.2);
  p.batches = {models::BatchSampling::Cyclic, 2, 1.0, 2.0};
  p.cyclicBatches = models::cyclicBatches(5, 2, nb);
  p.outputSteps = {1, 2, 3, 7};
  const long N = 200000;
  const auto snaps = validation::MonteCarloSampler(p, line(-8, 10, 90), settings(N, 20261126, 2)).run();
  const auto ref = models::CyclicQuadraticReference::forLosses(*p.lossD, *p.lossDPrime, p.cyclicBatches, 2.0, p.step,
                                                               p.sigma, models::Gaussian(p.initialMean, p.initialCovariance));
  BOOST_REQUIRE(ref);
  const double z = zFor(static_cast<int>(snaps.size()) * 2 * 2);
  for (const auto& snap : snaps)
    for (int s = 0; s < 2; ++s) {
      const models::Gaussian law = s ? ref->lawQ(snap.step) : ref->lawP(snap.step);
      checkMoments(snap.moments[s], law.mean()[0], law.covariance()(0, 0), z,
                   "step " + std::to_string(snap.step) + " process " + std::to_string(s));
    }
  // The batches matter: step 1 (batch {0, 1}) leaves p and q equal in law, step 2 (batch {2, 3}) does not.
  BOOST_TEST(ref->lawP(1).mean()[0] == ref->lawQ(1).mean()[0]);
  BOOST_TEST(std::abs(ref->lawP(2).mean()[0] - ref->lawQ(2).mean()[0]) > 0.5);
}

BOOST_AUTO_TEST_CASE(poisson_linear_law) {
  // l = -x theta, gamma = 0.4, b = gamma n = 2: theta_K = theta_0 + (eta/b) sum_i c_i x_i + N(0, 2 eta K sigma^2).
  const auto nb = replaceTwo();
  auto p = problemWith(linearLoss(), nb, 0.25, 6, 0.01);
  p.batches = {models::BatchSampling::Poisson, 0, 0.4, 2.0};
  p.outputSteps = {1, 6};
  const long N = 400000;
  const meshes::BoxMesh mesh = line(-1.5, 6.5, 320);  // the largest shift is (eta/b) K sum_i x_i = 5.4 (D')
  const auto snaps = validation::MonteCarloSampler(p, mesh, settings(N, 7, 2)).run();
  const auto ref = models::PoissonShiftReference::forLosses(*p.lossD, *p.lossDPrime, 0.4, 2.0, p.step, p.sigma,
                                                            models::Gaussian(p.initialMean, p.initialCovariance));
  BOOST_REQUIRE(ref);
  const double z = zFor(static_cast<int>(snaps.size()) * 2 * 2);
  for (const auto& snap : snaps)
    for (int s = 0; s < 2; ++s) {
      const models::GaussianMixture law = s ? ref->lawQ(snap.step) : ref->lawP(snap.step);
      const auto [mean, variance] = moments(law);
      const std::string what = "step " + std::to_string(snap.step) + " process " + std::to_string(s);
      checkMoments(snap.moments[s], mean, variance, z, what);
      // The whole law: cell masses of the mixture against the histogram (L1 band and chi-square at level kGamma/4).
      std::vector<double> mass(static_cast<std::size_t>(mesh.cells(0)), 0.0);
      const double sd = std::sqrt(law.covariance(0, 0));
      for (int c = 0; c < mesh.cells(0); ++c)
        for (std::size_t j = 0; j < law.size(); ++j)
          mass[static_cast<std::size_t>(c)] +=
              law.weights[j] * models::normalIntervalProbability((mesh.axis(0).face(c) - law.means[j][0]) / sd,
                                                                 (mesh.axis(0).face(c + 1) - law.means[j][0]) / sd);
      const auto agreement = validation::compareHistogram(snap.histogram[s].cells, snap.histogram[s].outside, mass,
                                                          1.0 - kGamma / 4);
      BOOST_TEST_INFO(what << ": L1 " << agreement.l1 << " band " << agreement.l1Band << " chi2 "
                           << agreement.chiSquare << "/" << agreement.degreesOfFreedom << " p " << agreement.pValue);
      BOOST_TEST(agreement.agrees);
    }
  // A mixture indeed: after 6 steps p has many components, and its variance exceeds the Gaussian part's.
  const models::GaussianMixture p6 = ref->lawP(6);
  BOOST_TEST(p6.size() > 20u);
  BOOST_TEST(moments(p6).second > 1.5 * p6.covariance(0, 0));
}

BOOST_AUTO_TEST_CASE(poisson_batches_do_not_depend_on_threads) {
  auto p = testing::logisticProblem(0.1, 12, 0.3);
  p.batches = {models::BatchSampling::Poisson, 0, 0.5, 3.0};
  p.outputSteps = {0, 5, 12};
  const meshes::BoxMesh mesh = line(-3, 4, 140);
  const auto one = validation::MonteCarloSampler(p, mesh, settings(20000, 99, 1)).run();
  for (int threads : {2, 3}) {
    const auto many = validation::MonteCarloSampler(p, mesh, settings(20000, 99, threads)).run();
    for (std::size_t o = 0; o < one.size(); ++o) BOOST_TEST(testing::identical(one[o], many[o]));
  }
  // The batches are drawn: the same seed with full batches gives other bits.
  auto full = p;
  full.batches = {};
  BOOST_TEST(!testing::identical(one.back(), validation::MonteCarloSampler(full, mesh, settings(20000, 99, 1)).run().back()));
}

BOOST_AUTO_TEST_CASE(full_equals_one_cyclic_batch_equals_poisson_rate_one) {
  // Bit for bit, for the logistic loss (the per-example loop) and the quadratic loss (the full-batch drift's
  // closed form lambda (theta - xbar), which a batch of every record also takes).
  const meshes::BoxMesh mesh = line(-3, 4, 140);
  for (int lossKind = 0; lossKind < 2; ++lossKind) {
    auto full = lossKind == 0 ? testing::logisticProblem(0.1, 10, 0.3)
                              : problemWith(std::make_shared<models::QuadraticLoss>(1.0), replaceTwo(), 0.2, 10, 0.3);
    const std::size_t n = full.lossD->data().size();
    full.outputSteps = {3, 10};
    auto cyclic = full;
    cyclic.batches = {models::BatchSampling::Cyclic, static_cast<long>(n), 1.0, static_cast<double>(n)};
    cyclic.cyclicBatches = models::cyclicBatches(n, static_cast<long>(n), models::Neighbour::replace(0, full.lossDPrime->data()[0]));
    auto poisson = full;
    poisson.batches = {models::BatchSampling::Poisson, 0, 1.0, static_cast<double>(n)};
    const auto a = validation::MonteCarloSampler(full, mesh, settings(5000, 3, 2)).run();
    const auto b = validation::MonteCarloSampler(cyclic, mesh, settings(5000, 3, 2)).run();
    const auto c = validation::MonteCarloSampler(poisson, mesh, settings(5000, 3, 1)).run();
    for (std::size_t o = 0; o < a.size(); ++o) {
      BOOST_TEST_INFO("loss " << lossKind << " output " << o);
      BOOST_TEST(testing::identical(a[o], b[o]));
      BOOST_TEST(testing::identical(a[o], c[o]));
    }
  }
}

BOOST_AUTO_TEST_CASE(bad_batches_are_refused) {
  auto p = testing::logisticProblem(0.1, 2, 0.3);
  const meshes::BoxMesh mesh = line(-3, 4, 14);
  auto poisson = p;
  poisson.batches = {models::BatchSampling::Poisson, 0, 1.5, 3.0};
  BOOST_CHECK_THROW(validation::MonteCarloSampler(poisson, mesh, settings(100, 1, 1)), std::invalid_argument);
  auto cyclic = p;
  cyclic.batches = {models::BatchSampling::Cyclic, 2, 1.0, 2.0};  // no batches given
  BOOST_CHECK_THROW(validation::MonteCarloSampler(cyclic, mesh, settings(100, 1, 1)), std::invalid_argument);
  cyclic.cyclicBatches.batches[0] = {{0, 1}, {2, 9}};
  cyclic.cyclicBatches.batches[1] = {{0, 1}, {2, 3}};
  BOOST_CHECK_THROW(validation::MonteCarloSampler(cyclic, mesh, settings(100, 1, 1)), std::invalid_argument);
}
