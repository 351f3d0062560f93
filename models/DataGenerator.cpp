// Seeded synthetic datasets, reproducible bit for bit (see DataGenerator.hpp for the recipe and the draw order).
// Every floating-point operation here is a single IEEE-754 basic operation written out by hand (no Eigen
// expressions, whose vectorised reductions may reorder sums by platform; no libm transcendental functions); the file
// is compiled with -ffp-contract=off (models/CMakeLists.txt).
// Exercise: build/tests/models/test_models --run_test=data_generator
#include "models/DataGenerator.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace fpdp::models {

double portableLog(double x) {
  if (std::isnan(x) || x < 0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0) return -std::numeric_limits<double>::infinity();
  if (std::isinf(x)) return x;
  // x = m 2^e exactly; move m into [1/sqrt 2, sqrt 2) so that log m is small and m - 1 is exact (Sterbenz).
  int e = 0;
  double m = std::frexp(x, &e);
  if (m < 0.70710678118654752440) {
    m = m * 2.0;
    e = e - 1;
  }
  // log m = 2 atanh(z) = 2 (z + z^3/3 + z^5/5 + ...), z = (m - 1)/(m + 1), |z| <= 0.1716, z^2 <= 0.0295: thirteen
  // terms leave a truncation error below 1e-20 relative.
  const double z = (m - 1.0) / (m + 1.0);
  const double z2 = z * z;
  double series = 1.0 / 25.0;
  for (int k = 11; k >= 0; --k) series = series * z2 + 1.0 / (2.0 * k + 1.0);
  const double logM = 2.0 * z * series;
  // ln 2 split as in fdlibm: ln2Hi has trailing zero bits, so e * ln2Hi is exact for every binary exponent.
  constexpr double ln2Hi = 6.93147180369123816490e-01;
  constexpr double ln2Lo = 1.90821492927058770002e-10;
  const double de = static_cast<double>(e);
  return de * ln2Hi + (logM + de * ln2Lo);
}

double ReproducibleRandom::uniform() {
  return static_cast<double>(bits_() >> 11) * 0x1.0p-53;
}

double ReproducibleRandom::normal() {
  if (spare_) {
    const double z = *spare_;
    spare_.reset();
    return z;
  }
  double u = 0, v = 0, s = 0;
  do {
    u = 2.0 * uniform() - 1.0;
    v = 2.0 * uniform() - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  const double factor = std::sqrt(-2.0 * portableLog(s) / s);
  spare_ = v * factor;
  return u * factor;
}

Dataset generateDataset(const DataGeneratorSpec& spec) {
  const bool logistic = spec.kind == "logistic";
  if (!logistic && spec.kind != "gaussian") {
    throw std::invalid_argument("generateDataset: kind must be \"gaussian\" or \"logistic\", got \"" + spec.kind + "\"");
  }
  if (spec.n == 0) throw std::invalid_argument("generateDataset: n must be at least 1");
  const Eigen::Index d = spec.mean.size();
  if (d == 0) throw std::invalid_argument("generateDataset: mean must have at least one coordinate (it sets d)");
  if (!spec.mean.allFinite()) throw std::invalid_argument("generateDataset: mean must be finite");
  if (!(spec.stddev > 0) || !std::isfinite(spec.stddev)) {
    throw std::invalid_argument("generateDataset: stddev must be positive and finite, got " + std::to_string(spec.stddev));
  }
  if (logistic && (spec.trueTheta.size() != d || !spec.trueTheta.allFinite())) {
    throw std::invalid_argument("generateDataset: trueTheta must have the dimension of mean (" + std::to_string(d) +
                                ") and be finite, got dimension " + std::to_string(spec.trueTheta.size()));
  }

  ReproducibleRandom random(spec.seed);
  std::vector<Record> records(spec.n);
  for (Record& r : records) {
    r.x.resize(d);
    for (Eigen::Index j = 0; j < d; ++j) r.x[j] = spec.mean[j] + spec.stddev * random.normal();
    r.y = 1.0;
    if (logistic) {
      double margin = 0.0;  // <trueTheta, x> summed in coordinate order
      for (Eigen::Index j = 0; j < d; ++j) margin = margin + spec.trueTheta[j] * r.x[j];
      const double U = random.uniform();
      // U < sigmoid(m)  <=>  U e^{-m} < 1 - U  <=>  m > log U - log(1 - U)   (1 - U is exact; log 0 = -inf).
      r.y = margin > portableLog(U) - portableLog(1.0 - U) ? 1.0 : -1.0;
    }
  }
  return Dataset(std::move(records));
}

}  // namespace fpdp::models
