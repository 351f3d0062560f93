#pragma once
// Helpers shared by the loss tests: central differences, relative errors, random vectors.
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <random>

#include "models/Loss.hpp"

namespace fpdp::models::test {

/// Central differences of l(.; r) with a step scaled to theta: error O(h^2) + O(eps/h) ~ 1e-10 relative.
inline Vector finiteDifferenceGradient(const Loss& loss, const Vector& theta, const Record& r) {
  Vector g(theta.size());
  for (Eigen::Index i = 0; i < theta.size(); ++i) {
    const double h = 1e-5 * std::max(1.0, std::abs(theta[i]));
    Vector plus = theta, minus = theta;
    plus[i] += h;
    minus[i] -= h;
    g[i] = (loss.value(plus, r) - loss.value(minus, r)) / (plus[i] - minus[i]);
  }
  return g;
}

inline double relativeError(const Vector& approx, const Vector& exact) {
  return (approx - exact).norm() / exact.norm();
}
inline double relativeError(const Matrix& approx, const Matrix& exact) {
  return (approx - exact).norm() / exact.norm();
}

inline Vector randomVector(std::mt19937& rng, int d, double scale) {
  std::normal_distribution<double> normal(0.0, scale);
  Vector v(d);
  for (int i = 0; i < d; ++i) v[i] = normal(rng);
  return v;
}

}  // namespace fpdp::models::test
