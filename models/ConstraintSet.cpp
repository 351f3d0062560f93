#include "models/ConstraintSet.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace fpdp::models {

ConstraintSet ConstraintSet::box(const Vector& lower, const Vector& upper) {
  if (lower.size() != upper.size() || lower.size() == 0)
    throw std::invalid_argument("ConstraintSet::box: lower and upper must have the same, non-zero length");
  for (Eigen::Index i = 0; i < lower.size(); ++i)
    if (!(lower[i] < upper[i])) throw std::invalid_argument("ConstraintSet::box: lower < upper is required on every axis");
  ConstraintSet c;
  c.kind_ = ConstraintKind::Box;
  c.a_ = lower;
  c.b_ = upper;
  return c;
}

ConstraintSet ConstraintSet::ball(const Vector& centre, double radius) {
  if (centre.size() == 0) throw std::invalid_argument("ConstraintSet::ball: empty centre");
  if (!(radius > 0.0) || !std::isfinite(radius)) throw std::invalid_argument("ConstraintSet::ball: radius must be > 0");
  ConstraintSet c;
  c.kind_ = ConstraintKind::Ball;
  c.a_ = centre;
  c.radius_ = radius;
  return c;
}

int ConstraintSet::dimension() const { return kind_ == ConstraintKind::None ? 0 : static_cast<int>(a_.size()); }

bool ConstraintSet::contains(const Vector& theta, double tol) const {
  if (kind_ == ConstraintKind::None) return true;
  return (project(theta) - theta).norm() <= tol;
}

Vector ConstraintSet::project(const Vector& theta) const {
  Vector out = theta;
  projectInPlace(out.data(), static_cast<int>(out.size()));
  return out;
}

void ConstraintSet::projectInPlace(double* theta, int d) const {
  switch (kind_) {
    case ConstraintKind::None: return;
    case ConstraintKind::Box:
      for (int i = 0; i < d; ++i) theta[i] = std::clamp(theta[i], a_[i], b_[i]);
      return;
    case ConstraintKind::Ball: {
      double r2 = 0.0;
      for (int i = 0; i < d; ++i) r2 += (theta[i] - a_[i]) * (theta[i] - a_[i]);
      if (r2 <= radius_ * radius_) return;
      const double scale = radius_ / std::sqrt(r2);  // radial projection onto the sphere
      for (int i = 0; i < d; ++i) theta[i] = a_[i] + scale * (theta[i] - a_[i]);
      return;
    }
  }
}

std::string ConstraintSet::describe() const {
  std::ostringstream s;
  s.precision(17);
  auto vec = [&s](const Vector& v) {
    s << '[';
    for (Eigen::Index i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
    s << ']';
  };
  switch (kind_) {
    case ConstraintKind::None: s << "none (no projection)"; break;
    case ConstraintKind::Box: s << "box lower = "; vec(a_); s << ", upper = "; vec(b_); break;
    case ConstraintKind::Ball: s << "ball centre = "; vec(a_); s << ", radius = " << radius_; break;
  }
  return s.str();
}

}  // namespace fpdp::models
