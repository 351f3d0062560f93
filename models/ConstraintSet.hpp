#pragma once
// The constraint set C of projected noisy gradient descent (MATH.md §2.1, CYS Algorithm 1):
// theta_{k+1} = Pi_C( theta_k - eta g(theta_k) + sqrt(2 eta) Sigma^{1/2} Z ), with Pi_C the Euclidean projection.
// C is the whole space, an axis-aligned box, or a closed ball. One definition, used by the density solver (which
// keeps the projected mass as boundary measures) and by the Monte Carlo sampler, so the two cannot drift apart.
#include <string>

#include "models/Dataset.hpp"

namespace fpdp::models {

enum class ConstraintKind { None, Box, Ball };

class ConstraintSet {
public:
  ConstraintSet() = default;  // the whole space: no projection
  static ConstraintSet box(const Vector& lower, const Vector& upper);  // lower < upper componentwise
  static ConstraintSet ball(const Vector& centre, double radius);      // radius > 0

  ConstraintKind kind() const { return kind_; }
  bool isNone() const { return kind_ == ConstraintKind::None; }
  int dimension() const;                // 0 for None
  const Vector& lower() const { return a_; }   // box: lower corner; ball: centre
  const Vector& upper() const { return b_; }   // box: upper corner
  const Vector& centre() const { return a_; }
  double radius() const { return radius_; }

  /// Is theta in C (within tol, measured in the Euclidean norm outside C)?
  bool contains(const Vector& theta, double tol = 0.0) const;
  /// Euclidean projection Pi_C(theta); identity when C is the whole space.
  Vector project(const Vector& theta) const;
  /// Same, in place on d = dimension() contiguous doubles (the sampler's inner loop; no allocation).
  void projectInPlace(double* theta, int d) const;
  std::string describe() const;

private:
  ConstraintKind kind_ = ConstraintKind::None;
  Vector a_, b_;
  double radius_ = 0.0;
};

}  // namespace fpdp::models
