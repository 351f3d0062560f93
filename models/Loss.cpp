// Per-example losses l(theta; x) and the empirical loss L_D(theta) = (1/n) sum_i l(theta; x_i) (MATH.md §1).
// grad L_D is the drift of the Langevin Fokker–Planck equation (MATH.md §2.3) and the map of noisy GD (§2.1), so it
// is evaluated at every mesh cell: the logistic terms are written to stay finite and accurate for any margin.
#include "models/Loss.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace fpdp::models {

namespace {

void requireSameDimension(const Vector& theta, const Record& r, const char* who) {
  if (theta.size() != r.x.size()) {
    throw std::invalid_argument(std::string(who) + ": theta has dimension " + std::to_string(theta.size()) +
                                " but the record has dimension " + std::to_string(r.x.size()));
  }
}

// log(1 + e^z) without overflow for large z and without losing the tiny value for very negative z.
double softplus(double z) { return std::max(z, 0.0) + std::log1p(std::exp(-std::abs(z))); }

// 1 / (1 + e^{-z}); the branch keeps the exponent non-positive so neither e^{-z} nor 1 - sigmoid is computed by
// overflow or cancellation.
double sigmoid(double z) {
  if (z >= 0) return 1.0 / (1.0 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1.0 + e);
}

double checkedLabel(const Record& r) {
  if (r.y != 1.0 && r.y != -1.0) {
    throw std::invalid_argument("LogisticLoss: labels must be -1 or +1, got " + std::to_string(r.y));
  }
  return r.y;
}

}  // namespace

// ---- Quadratic loss: l = (lambda/2)|theta - x|^2 (the loss of MATH.md §5 items 4, 6, 7) ----

QuadraticLoss::QuadraticLoss(double lambda) : lambda_(lambda) {
  if (!(lambda > 0) || !std::isfinite(lambda)) {
    throw std::invalid_argument("QuadraticLoss: lambda must be positive and finite, got " + std::to_string(lambda));
  }
}

double QuadraticLoss::value(const Vector& theta, const Record& r) const {
  requireSameDimension(theta, r, "QuadraticLoss");
  return 0.5 * lambda_ * (theta - r.x).squaredNorm();
}

Vector QuadraticLoss::gradient(const Vector& theta, const Record& r) const {
  requireSameDimension(theta, r, "QuadraticLoss");
  return lambda_ * (theta - r.x);
}

// grad l(theta; a) - grad l(theta; b) = lambda (x_b - x_a) does not depend on theta: the gap is exact.
std::optional<Loss::PairGap> QuadraticLoss::pairGradientGap(const Record& a, const Record& b) const {
  if (a.x.size() != b.x.size()) throw std::invalid_argument("QuadraticLoss: records of different dimensions");
  return PairGap{lambda_ * (a.x - b.x).norm(), true};
}

// ---- L2-regularised logistic loss ----

LogisticLoss::LogisticLoss(double regularization) : mu_(regularization) {
  if (!(regularization >= 0) || !std::isfinite(regularization)) {
    throw std::invalid_argument("LogisticLoss: the regularisation mu must be non-negative and finite, got " +
                                std::to_string(regularization));
  }
}

double LogisticLoss::value(const Vector& theta, const Record& r) const {
  requireSameDimension(theta, r, "LogisticLoss");
  const double margin = checkedLabel(r) * theta.dot(r.x);
  return softplus(-margin) + 0.5 * mu_ * theta.squaredNorm();
}

Vector LogisticLoss::gradient(const Vector& theta, const Record& r) const {
  requireSameDimension(theta, r, "LogisticLoss");
  const double y = checkedLabel(r);
  const double margin = y * theta.dot(r.x);
  return (-y * sigmoid(-margin)) * r.x + mu_ * theta;
}

// grad l(.; a) - grad l(.; b) = -y_a s_a x_a + y_b s_b x_b with s in (0, 1): at most |x_a| + |x_b|. The
// regulariser cancels. The bound is approached but in general not attained, hence exact = false.
std::optional<Loss::PairGap> LogisticLoss::pairGradientGap(const Record& a, const Record& b) const {
  if (a.x.size() != b.x.size()) throw std::invalid_argument("LogisticLoss: records of different dimensions");
  return PairGap{a.x.norm() + b.x.norm(), false};
}

// Hessian = sigma'(.) x x^T + mu I with sigma' <= 1/4, so l(.; x) is (mu + |x|^2/4)-smooth; take the worst record.
std::optional<double> LogisticLoss::smoothness(const Dataset& d) const {
  double maxSquaredNorm = 0;
  for (const Record& r : d.records()) maxSquaredNorm = std::max(maxSquaredNorm, r.x.squaredNorm());
  return mu_ + 0.25 * maxSquaredNorm;
}

// ---- Empirical loss L_D = (1/n) sum_i l(.; x_i) ----

EmpiricalLoss::EmpiricalLoss(std::shared_ptr<const Loss> loss, Dataset data)
    : loss_(std::move(loss)), data_(std::move(data)) {
  if (!loss_) throw std::invalid_argument("EmpiricalLoss: no loss given");
  if (data_.size() == 0) throw std::invalid_argument("EmpiricalLoss: the dataset is empty");
}

double EmpiricalLoss::value(const Vector& theta) const {
  if (theta.size() != data_.dim()) {
    throw std::invalid_argument("EmpiricalLoss: theta has dimension " + std::to_string(theta.size()) +
                                " but the data have dimension " + std::to_string(data_.dim()));
  }
  double sum = 0;
  for (const Record& r : data_.records()) sum += loss_->value(theta, r);
  return sum / static_cast<double>(data_.size());
}

Vector EmpiricalLoss::gradient(const Vector& theta) const {
  if (theta.size() != data_.dim()) {
    throw std::invalid_argument("EmpiricalLoss: theta has dimension " + std::to_string(theta.size()) +
                                " but the data have dimension " + std::to_string(data_.dim()));
  }
  Vector sum = Vector::Zero(theta.size());
  for (const Record& r : data_.records()) sum += loss_->gradient(theta, r);
  return sum / static_cast<double>(data_.size());
}

}  // namespace fpdp::models
