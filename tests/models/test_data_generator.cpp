// The seeded data generator (models/DataGenerator.hpp): pinned first records (a reproducibility oracle), sample
// statistics within 4 standard errors, labels with the logistic law, the portable logarithm, and validation.
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "models/DataGenerator.hpp"

using namespace fpdp::models;

namespace {

DataGeneratorSpec gaussianSpec(std::size_t n, std::uint64_t seed) {
  DataGeneratorSpec s;
  s.kind = "gaussian";
  s.n = n;
  s.seed = seed;
  s.mean = (Vector(2) << 1.0, -2.0).finished();
  s.stddev = 0.5;
  return s;
}

DataGeneratorSpec logisticSpec(std::size_t n, std::uint64_t seed) {
  DataGeneratorSpec s = gaussianSpec(n, seed);
  s.kind = "logistic";
  s.mean = (Vector(2) << 0.5, 0.25).finished();
  s.stddev = 1.0;
  s.trueTheta = (Vector(2) << 2.0, -1.0).finished();
  return s;
}

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

}  // namespace

BOOST_AUTO_TEST_SUITE(data_generator)

// These numbers were computed once by this generator (Debian 12, GCC 12, x86-64, -O2 and -O0 alike; the uniforms and
// the Gaussian records were also reproduced by an independent Python implementation of MT19937-64 and the polar
// method) and pin it: the same seed must give the same records bit for bit on every platform, compiler and standard
// library, now and later. A change here means every seeded dataset, and every result computed on one, has changed.
BOOST_AUTO_TEST_CASE(seed_1_reproduces_the_pinned_records) {
  ReproducibleRandom random(1);
  const double expectedUniforms[3] = {0.13387664401253263, 0.13640703636619722, 0.45121490384453811};
  for (const double u : expectedUniforms) BOOST_TEST(random.uniform() == u);

  const Dataset gaussian = generateDataset(gaussianSpec(4, 1));
  const double expectedGaussian[4][2] = {{0.98030002162292229, -2.1934158808105195},
                                         {0.87552607683242745, -1.6565881804103375},
                                         {0.97267657383931416, -2.3975731218547462},
                                         {1.5004762155079514, -1.0310268977643089}};
  for (std::size_t i = 0; i < 4; ++i) {
    BOOST_TEST(gaussian[i].x[0] == expectedGaussian[i][0]);
    BOOST_TEST(gaussian[i].x[1] == expectedGaussian[i][1]);
    BOOST_TEST(gaussian[i].y == 1.0);
  }
  const Dataset logistic = generateDataset(logisticSpec(8, 1));
  const double expectedLogistic[8][3] = {{0.46060004324584469, -0.13683176162103949, 1.0},
                                         {1.3755659606878401, 0.18774659972183191, 1.0},
                                         {1.5009524310159028, 2.1879462044713822, 1.0},
                                         {0.77656966159430385, 1.6759614986762674, 1.0},
                                         {0.0046223923911169473, -1.2740645803127149, 1.0},
                                         {1.9044734613183538, 0.1323283259317527, 1.0},
                                         {-0.34545832544076371, 1.2338900508942396, -1.0},
                                         {-0.67885862706175915, -0.83414022750892225, 1.0}};
  for (std::size_t i = 0; i < 8; ++i) {
    BOOST_TEST(logistic[i].x[0] == expectedLogistic[i][0]);
    BOOST_TEST(logistic[i].x[1] == expectedLogistic[i][1]);
    BOOST_TEST(logistic[i].y == expectedLogistic[i][2]);
  }
}

BOOST_AUTO_TEST_CASE(same_seed_same_data_other_seed_other_data) {
  const Dataset a = generateDataset(logisticSpec(50, 7)), b = generateDataset(logisticSpec(50, 7));
  const Dataset c = generateDataset(logisticSpec(50, 8));
  bool differs = false;
  for (std::size_t i = 0; i < 50; ++i) {
    BOOST_TEST(a[i].x == b[i].x);
    BOOST_TEST(a[i].y == b[i].y);
    differs = differs || a[i].x != c[i].x;
  }
  BOOST_TEST(differs);
  // A prefix of a longer dataset is the shorter dataset (records are drawn in order).
  const Dataset longer = generateDataset(logisticSpec(80, 7));
  for (std::size_t i = 0; i < 50; ++i) BOOST_TEST(longer[i].x == a[i].x);
}

BOOST_AUTO_TEST_CASE(gaussian_sample_statistics_within_four_standard_errors) {
  const std::size_t n = 10000;
  const DataGeneratorSpec spec = gaussianSpec(n, 2024);
  const Dataset data = generateDataset(spec);
  BOOST_TEST(data.size() == n);
  BOOST_TEST(data.dim() == 2);
  const Vector mean = data.mean();
  Vector variance = Vector::Zero(2);
  double covariance = 0;
  for (const Record& r : data.records()) {
    variance += (r.x - mean).cwiseAbs2();
    covariance += (r.x[0] - mean[0]) * (r.x[1] - mean[1]);
  }
  variance /= static_cast<double>(n - 1);
  covariance /= static_cast<double>(n - 1);
  const double sd = spec.stddev, N = static_cast<double>(n);
  for (int a = 0; a < 2; ++a) {
    BOOST_TEST_MESSAGE("axis " << a << ": mean " << mean[a] << " (expected " << spec.mean[a] << "), std "
                               << std::sqrt(variance[a]) << " (expected " << sd << ")");
    BOOST_TEST(std::abs(mean[a] - spec.mean[a]) < 4 * sd / std::sqrt(N));           // SE of the mean
    BOOST_TEST(std::abs(std::sqrt(variance[a]) - sd) < 4 * sd / std::sqrt(2 * N));  // SE of the std
  }
  BOOST_TEST(std::abs(covariance) < 4 * sd * sd / std::sqrt(N));  // independent coordinates
}

BOOST_AUTO_TEST_CASE(normal_deviates_have_gaussian_moments) {
  // Moments 1..4 of N(0, 1): 0, 1, 0, 3, with standard errors sqrt(1/N), sqrt(2/N), sqrt(15/N), sqrt(96/N).
  ReproducibleRandom random(99);
  const int N = 200000;
  double m1 = 0, m2 = 0, m3 = 0, m4 = 0;
  for (int i = 0; i < N; ++i) {
    const double z = random.normal();
    m1 += z;
    m2 += z * z;
    m3 += z * z * z;
    m4 += z * z * z * z;
  }
  m1 /= N, m2 /= N, m3 /= N, m4 /= N;
  BOOST_TEST_MESSAGE("moments " << m1 << " " << m2 << " " << m3 << " " << m4);
  BOOST_TEST(std::abs(m1) < 4 * std::sqrt(1.0 / N));
  BOOST_TEST(std::abs(m2 - 1) < 4 * std::sqrt(2.0 / N));
  BOOST_TEST(std::abs(m3) < 4 * std::sqrt(15.0 / N));
  BOOST_TEST(std::abs(m4 - 3) < 4 * std::sqrt(96.0 / N));
  // Uniforms: mean 1/2, variance 1/12, in [0, 1).
  double u1 = 0, u2 = 0, smallest = 1, largest = 0;
  for (int i = 0; i < N; ++i) {
    const double u = random.uniform();
    u1 += u;
    u2 += u * u;
    smallest = std::min(smallest, u);
    largest = std::max(largest, u);
  }
  u1 /= N, u2 /= N;
  BOOST_TEST(std::abs(u1 - 0.5) < 4 * std::sqrt(1.0 / 12 / N));
  BOOST_TEST(std::abs(u2 - u1 * u1 - 1.0 / 12) < 4 * std::sqrt(1.0 / 180 / N));
  BOOST_TEST(smallest >= 0.0);
  BOOST_TEST(largest < 1.0);
}

BOOST_AUTO_TEST_CASE(logistic_labels_follow_the_sigmoid_law) {
  const std::size_t n = 10000;
  const DataGeneratorSpec spec = logisticSpec(n, 5);
  const Dataset data = generateDataset(spec);
  // sum_i (1[y_i = +1] - sigmoid(m_i)) has mean 0 and variance sum_i s_i (1 - s_i) given the features.
  double excess = 0, variance = 0, agreement = 0, positives = 0;
  for (const Record& r : data.records()) {
    BOOST_TEST((r.y == 1.0 || r.y == -1.0));
    const double m = spec.trueTheta.dot(r.x), s = sigmoid(m);
    excess += (r.y > 0 ? 1.0 : 0.0) - s;
    variance += s * (1 - s);
    agreement += r.y * m;
    positives += r.y > 0 ? 1 : 0;
  }
  BOOST_TEST_MESSAGE("positives " << positives << ", excess over the sigmoid law " << excess << " (sd "
                                  << std::sqrt(variance) << ")");
  BOOST_TEST(std::abs(excess) < 4 * std::sqrt(variance));
  BOOST_TEST(agreement > 0);  // labels agree in sign with the true margin more often than not
  // <trueTheta, mean> = 0.75 > 0: more positives than negatives (a flipped label rule would fail this and the above).
  BOOST_TEST(positives > 0.55 * static_cast<double>(n));
}

BOOST_AUTO_TEST_CASE(portable_log_is_within_a_few_ulp_of_std_log) {
  std::mt19937_64 bits(3);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    // Arguments spread over many binades, plus the polar method's range (0, 1).
    const double x = i % 2 == 0 ? std::ldexp(1.0 + static_cast<double>(bits() >> 11) * 0x1.0p-53,
                                             static_cast<int>(bits() % 2000) - 1000)
                                : static_cast<double>(bits() >> 11) * 0x1.0p-53;
    if (x == 0) continue;
    const double exact = std::log(x);
    const double error = std::abs(portableLog(x) - exact) / std::max(std::abs(exact), std::numeric_limits<double>::min());
    worst = std::max(worst, error);
  }
  BOOST_TEST_MESSAGE("portableLog: worst relative difference from std::log " << worst);
  BOOST_TEST(worst < 4 * std::numeric_limits<double>::epsilon());
  BOOST_TEST(portableLog(1.0) == 0.0);
  BOOST_TEST(std::abs(portableLog(1.0 + 0x1.0p-52) - 0x1.0p-52) <= 0x1.0p-104);  // no cancellation near 1
  BOOST_TEST(std::abs(portableLog(1.0 - 0x1.0p-53) + 0x1.0p-53) <= 0x1.0p-104);
  BOOST_TEST(portableLog(0.0) == -std::numeric_limits<double>::infinity());
  BOOST_TEST(std::isnan(portableLog(-1.0)));
  BOOST_TEST(portableLog(std::numeric_limits<double>::infinity()) == std::numeric_limits<double>::infinity());
  BOOST_TEST(portableLog(std::numeric_limits<double>::denorm_min()) == std::log(std::numeric_limits<double>::denorm_min()),
             boost::test_tools::tolerance(1e-15));
}

BOOST_AUTO_TEST_CASE(invalid_specs_name_the_field) {
  auto message = [](DataGeneratorSpec s) -> std::string {
    try {
      generateDataset(s);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "no error";
  };
  auto bad = gaussianSpec(10, 1);
  bad.kind = "uniform";
  BOOST_TEST(message(bad).find("kind") != std::string::npos);
  bad = gaussianSpec(0, 1);
  BOOST_TEST(message(bad).find("n must") != std::string::npos);
  bad = gaussianSpec(10, 1);
  bad.stddev = 0;
  BOOST_TEST(message(bad).find("stddev") != std::string::npos);
  bad = gaussianSpec(10, 1);
  bad.mean = Vector();
  BOOST_TEST(message(bad).find("mean") != std::string::npos);
  bad = logisticSpec(10, 1);
  bad.trueTheta = Vector::Zero(3);
  BOOST_TEST(message(bad).find("trueTheta") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
