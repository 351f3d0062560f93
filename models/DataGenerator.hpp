#pragma once
// Seeded synthetic datasets (MATH.md §1 data D), bit-for-bit the same on every platform and standard library:
//   gaussian: x_i = mean + stddev z_i, z_i ~ N(0, I_d), y_i = +1;
//   logistic: x_i as above, y_i = +1 with probability sigmoid(<trueTheta, x_i>), else -1.
// The bits come from std::mt19937_64 (its output sequence is fixed by the C++ standard). Everything built on them is
// done here with IEEE-754 basic operations only (+ - * / and sqrt, all correctly rounded), because
// std::normal_distribution is implementation-defined and std::log / std::exp differ in the last bit between libms:
//   uniform  U = (bits >> 11) 2^-53, in [0, 1);
//   normal   Marsaglia's polar method: u, v = 2U - 1 until 0 < s = u^2 + v^2 < 1, then u f and v f with
//            f = sqrt(-2 log(s) / s) (the second one is kept for the next call), log = portableLog below;
//   label    y = +1 iff U < sigmoid(m), decided as m > log(U) - log(1 - U) (no exp needed; U = 0 gives +1).
// Draw order per record: its d normals (coordinate 1 first), then, for "logistic", one uniform. DataGenerator.cpp is
// compiled with -ffp-contract=off so that no compiler fuses a*b + c into an FMA with a different rounding.
// Exercise: build/tests/models/test_models --run_test=data_generator
#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "models/Dataset.hpp"

namespace fpdp::models {

struct DataGeneratorSpec {
  std::string kind = "gaussian";  // "gaussian" | "logistic"
  std::size_t n = 0;              // number of records, >= 1
  std::uint64_t seed = 0;
  Vector mean;                    // feature mean; its size is the dimension d >= 1
  double stddev = 1.0;            // feature standard deviation per coordinate, > 0
  Vector trueTheta;               // logistic: y = sign of a Bernoulli(sigmoid(<trueTheta, x>)) draw; size d
};

/// The dataset the spec describes; throws std::invalid_argument naming the offending field.
Dataset generateDataset(const DataGeneratorSpec& spec);

/// The random streams generateDataset is built on, for other reproducible samplers.
class ReproducibleRandom {
public:
  explicit ReproducibleRandom(std::uint64_t seed) : bits_(seed) {}
  /// (next 64-bit output >> 11) * 2^-53: uniform on the 2^53 multiples of 2^-53 in [0, 1).
  double uniform();
  /// A standard normal deviate (polar method; see the file comment).
  double normal();

private:
  std::mt19937_64 bits_;
  std::optional<double> spare_;
};

/// Natural logarithm from +, -, *, / only (frexp and ldexp are exact), so it rounds identically everywhere; within
/// a few ulp of std::log. log(0) = -inf, log(x < 0) = NaN, log(inf) = inf.
double portableLog(double x);

}  // namespace fpdp::models
