// Per-example losses l(theta; x) and the empirical loss L_D(theta) = (1/n) sum_i l(theta; x_i) (MATH.md §1), with
// optional per-example clipping of the gradient (MATH.md §2.1).
// grad L_D is the drift of the Langevin Fokker–Planck equation (MATH.md §2.3) and the map of noisy GD (§2.1), so it
// is evaluated at every mesh cell: the logistic terms are written to stay finite and accurate for any margin.
// Exercise: build/tests/models/test_models --run_test=losses,robust_losses,clipping
#include "models/Loss.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

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
  Vector g(theta.size());
  gradientInto(theta.data(), r, g.data());
  return g;
}

void QuadraticLoss::gradientInto(const double* theta, const Record& r, double* out) const {
  const Eigen::Index d = r.x.size();
  for (Eigen::Index a = 0; a < d; ++a) out[a] = lambda_ * (theta[a] - r.x[a]);
}

// grad l(theta; a) - grad l(theta; b) = lambda (x_b - x_a) does not depend on theta: the gap is exact.
std::optional<Loss::PairGap> QuadraticLoss::pairGradientGap(const Record& a, const Record& b) const {
  if (a.x.size() != b.x.size()) throw std::invalid_argument("QuadraticLoss: records of different dimensions");
  return PairGap{lambda_ * (a.x - b.x).norm(), true};
}

std::optional<Matrix> QuadraticLoss::hessian(const Vector& theta, const Record& r) const {
  requireSameDimension(theta, r, "QuadraticLoss");
  return Matrix(lambda_ * Matrix::Identity(theta.size(), theta.size()));
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
  Vector g(theta.size());
  gradientInto(theta.data(), r, g.data());
  return g;
}

void LogisticLoss::gradientInto(const double* theta, const Record& r, double* out) const {
  const double y = checkedLabel(r);
  const Eigen::Index d = r.x.size();
  double margin = 0.0;
  for (Eigen::Index a = 0; a < d; ++a) margin += theta[a] * r.x[a];
  margin *= y;
  const double weight = -y * sigmoid(-margin);
  for (Eigen::Index a = 0; a < d; ++a) out[a] = weight * r.x[a] + mu_ * theta[a];
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

// sigmoid'(m) = sigmoid(m) sigmoid(-m) is even in m, so the label drops out.
std::optional<Matrix> LogisticLoss::hessian(const Vector& theta, const Record& r) const {
  requireSameDimension(theta, r, "LogisticLoss");
  checkedLabel(r);
  const double margin = theta.dot(r.x);
  const double weight = sigmoid(margin) * sigmoid(-margin);
  return Matrix(weight * r.x * r.x.transpose() + mu_ * Matrix::Identity(theta.size(), theta.size()));
}

// ---- Huber loss: l = H_delta(|theta - x|) + (mu/2)|theta|^2 ----

HuberLoss::HuberLoss(double delta, double regularization) : delta_(delta), mu_(regularization) {
  if (!(delta > 0) || !std::isfinite(delta)) {
    throw std::invalid_argument("HuberLoss: delta must be positive and finite, got " + std::to_string(delta));
  }
  if (!(regularization >= 0) || !std::isfinite(regularization)) {
    throw std::invalid_argument("HuberLoss: the regularisation mu must be non-negative and finite, got " +
                                std::to_string(regularization));
  }
}

double HuberLoss::value(const Vector& theta, const Record& r) const {
  requireSameDimension(theta, r, "HuberLoss");
  const double distance = (theta - r.x).norm();
  const double huber = distance <= delta_ ? 0.5 * distance * distance : delta_ * (distance - 0.5 * delta_);
  return huber + 0.5 * mu_ * theta.squaredNorm();
}

Vector HuberLoss::gradient(const Vector& theta, const Record& r) const {
  requireSameDimension(theta, r, "HuberLoss");
  return clipToNorm(theta - r.x, delta_) + mu_ * theta;
}

// grad l(.; a) - grad l(.; b) = P(theta - x_a) - P(theta - x_b), P the projection onto the delta-ball (the regulariser
// cancels). P is 1-Lipschitz and |P| <= delta, so the gap is <= min(|x_a - x_b|, 2 delta); at theta = (x_a + x_b)/2 the
// two arguments are -+ (x_a - x_b)/2, whose projections are -+ min(|x_a - x_b|/2, delta) along x_a - x_b: attained.
std::optional<Loss::PairGap> HuberLoss::pairGradientGap(const Record& a, const Record& b) const {
  if (a.x.size() != b.x.size()) throw std::invalid_argument("HuberLoss: records of different dimensions");
  return PairGap{std::min((a.x - b.x).norm(), 2.0 * delta_), true};
}

std::optional<Matrix> HuberLoss::hessian(const Vector& theta, const Record& r) const {
  requireSameDimension(theta, r, "HuberLoss");
  const Eigen::Index d = theta.size();
  const Vector v = theta - r.x;
  const double distance = v.norm();
  const Matrix identity = Matrix::Identity(d, d);
  if (distance <= delta_) return Matrix((1.0 + mu_) * identity);
  const Vector u = v / distance;
  return Matrix((delta_ / distance) * (identity - u * u.transpose()) + mu_ * identity);
}

// ---- Double well: l = (lambda/(8 w^2)) (|theta - x|^2 - w^2)^2 ----

DoubleWellLoss::DoubleWellLoss(double lambda, double width) : lambda_(lambda), width_(width) {
  if (!(lambda > 0) || !std::isfinite(lambda)) {
    throw std::invalid_argument("DoubleWellLoss: lambda must be positive and finite, got " + std::to_string(lambda));
  }
  if (!(width > 0) || !std::isfinite(width)) {
    throw std::invalid_argument("DoubleWellLoss: the width w must be positive and finite, got " + std::to_string(width));
  }
}

double DoubleWellLoss::value(const Vector& theta, const Record& r) const {
  requireSameDimension(theta, r, "DoubleWellLoss");
  const double excess = (theta - r.x).squaredNorm() - width_ * width_;
  return lambda_ / (8.0 * width_ * width_) * excess * excess;
}

Vector DoubleWellLoss::gradient(const Vector& theta, const Record& r) const {
  requireSameDimension(theta, r, "DoubleWellLoss");
  const Vector v = theta - r.x;
  return (lambda_ / (2.0 * width_ * width_) * (v.squaredNorm() - width_ * width_)) * v;
}

// grad l(.; a) - grad l(.; b) = c [(|v_a|^2 - w^2) v_a - (|v_b|^2 - w^2) v_b], v = theta - x: for x_a != x_b it grows
// like |theta|^2 |x_a - x_b| along theta, so the supremum over R^d is infinite. Over a box: see LossConstants.
std::optional<Loss::PairGap> DoubleWellLoss::pairGradientGap(const Record& a, const Record& b) const {
  if (a.x.size() != b.x.size()) throw std::invalid_argument("DoubleWellLoss: records of different dimensions");
  if (a.x == b.x) return PairGap{0.0, true};
  return std::nullopt;
}

std::optional<Matrix> DoubleWellLoss::hessian(const Vector& theta, const Record& r) const {
  requireSameDimension(theta, r, "DoubleWellLoss");
  const Eigen::Index d = theta.size();
  const Vector v = theta - r.x;
  const double c = lambda_ / (2.0 * width_ * width_);
  return Matrix(c * ((v.squaredNorm() - width_ * width_) * Matrix::Identity(d, d) + 2.0 * v * v.transpose()));
}

double DoubleWellLoss::hessianSupNorm(const Record& r, const std::array<double, 3>& lower,
                                      const std::array<double, 3>& upper, int dim) const {
  if (dim < 1 || dim > 3 || r.x.size() != dim) {
    throw std::invalid_argument("DoubleWellLoss::hessianSupNorm: dimension " + std::to_string(dim) +
                                " must be 1..3 and match the record's " + std::to_string(r.x.size()));
  }
  // s = |theta - x|^2 is separable: its least value on the box is the squared distance to the clamp of x into the
  // box, its largest the squared distance to the farthest corner.
  double sMin = 0, sMax = 0;
  for (int a = 0; a < dim; ++a) {
    if (!(lower[a] < upper[a])) throw std::invalid_argument("DoubleWellLoss::hessianSupNorm: empty box");
    const double xa = r.x[a];
    const double nearest = std::clamp(xa, lower[a], upper[a]) - xa;
    const double farthest = std::max(std::abs(lower[a] - xa), std::abs(upper[a] - xa));
    sMin += nearest * nearest;
    sMax += farthest * farthest;
  }
  const double w2 = width_ * width_;
  // Eigenvalues (c(3s - w^2), c(s - w^2)): the largest magnitude is c max(w^2 - s, 3s - w^2) for s >= 0, a convex
  // function of s, so its maximum over [sMin, sMax] sits at an end.
  return lambda_ / (2.0 * w2) * std::max(w2 - sMin, 3.0 * sMax - w2);
}

double DoubleWellLoss::smoothnessBoundOnBox(const Dataset& d, const std::array<double, 3>& lower,
                                            const std::array<double, 3>& upper, int dim) const {
  if (d.size() == 0) throw std::invalid_argument("DoubleWellLoss::smoothnessBoundOnBox: the dataset is empty");
  double sum = 0;
  for (const Record& r : d.records()) sum += hessianSupNorm(r, lower, upper, dim);
  return sum / static_cast<double>(d.size());
}

// ---- Default allocation-free gradient: through the Eigen interface ----

void Loss::gradientInto(const double* theta, const Record& r, double* out) const {
  const Eigen::Index d = r.x.size();
  const Vector g = gradient(Eigen::Map<const Vector>(theta, d), r);
  for (Eigen::Index a = 0; a < d; ++a) out[a] = g[a];
}

// ---- Clipping (MATH.md §2.1) ----

Vector clipToNorm(const Vector& v, double clipNorm) {
  Vector out = v;
  clipToNormInPlace(out.data(), static_cast<int>(out.size()), clipNorm);
  return out;
}

void clipToNormInPlace(double* v, int d, double clipNorm) {
  double squared = 0.0;
  for (int a = 0; a < d; ++a) squared += v[a] * v[a];
  const double norm = std::sqrt(squared);
  if (norm <= clipNorm) return;
  const double scale = clipNorm / norm;
  for (int a = 0; a < d; ++a) v[a] *= scale;
}

namespace {
void requireValidClipNorm(double clipNorm, const char* who) {
  if (!(clipNorm > 0) || !std::isfinite(clipNorm)) {
    throw std::invalid_argument(std::string(who) + ": the clip norm C must be positive and finite, got " +
                                std::to_string(clipNorm));
  }
}
}  // namespace

std::optional<Loss::PairGap> sensitivityBound(const Loss& loss, const Record& a, const Record& b,
                                              std::optional<double> clipNorm) {
  const std::optional<Loss::PairGap> gap = loss.pairGradientGap(a, b);
  if (!clipNorm) return gap;
  requireValidClipNorm(*clipNorm, "sensitivityBound");
  const double twoC = 2.0 * *clipNorm;
  if (!gap) return Loss::PairGap{twoC, false};
  // Quadratic: grad l(.; a) - grad l(.; b) is the constant lambda (x_b - x_a), and for a constant shift w the sup over u
  // of |CLIP_C(u) - CLIP_C(u + w)| is min(|w|, 2C), attained at u = -w/2 (as for the Huber gap).
  const bool exact = gap->exact && dynamic_cast<const QuadraticLoss*>(&loss) != nullptr;
  return Loss::PairGap{std::min(gap->value, twoC), exact};
}

// ---- Empirical loss L_D = (1/n) sum_i l(.; x_i) ----

EmpiricalLoss::EmpiricalLoss(std::shared_ptr<const Loss> loss, Dataset data)
    : EmpiricalLoss(std::move(loss), std::move(data), std::nullopt) {}

EmpiricalLoss::EmpiricalLoss(std::shared_ptr<const Loss> loss, Dataset data, std::optional<double> clipNorm)
    : loss_(std::move(loss)), data_(std::move(data)), clipNorm_(clipNorm) {
  if (!loss_) throw std::invalid_argument("EmpiricalLoss: no loss given");
  if (data_.size() == 0) throw std::invalid_argument("EmpiricalLoss: the dataset is empty");
  if (clipNorm_) requireValidClipNorm(*clipNorm_, "EmpiricalLoss");
  quadratic_ = dynamic_cast<const QuadraticLoss*>(loss_.get());
  if (!clipNorm_) quadraticUnclipped_ = quadratic_;
  if (quadratic_) {
    mean_ = data_.mean();
    // Two passes (the mean first): the deviations' squares lose nothing to cancellation.
    double sum = 0;
    for (const Record& r : data_.records()) sum += (r.x - mean_).squaredNorm();
    meanSquaredDeviation_ = sum / static_cast<double>(data_.size());
  }
}

double EmpiricalLoss::value(const Vector& theta) const {
  if (theta.size() != data_.dim()) {
    throw std::invalid_argument("EmpiricalLoss: theta has dimension " + std::to_string(theta.size()) +
                                " but the data have dimension " + std::to_string(data_.dim()));
  }
  if (quadratic_) return 0.5 * quadratic_->lambda() * ((theta - mean_).squaredNorm() + meanSquaredDeviation_);
  double sum = 0;
  for (const Record& r : data_.records()) sum += loss_->value(theta, r);
  return sum / static_cast<double>(data_.size());
}

Vector EmpiricalLoss::perExampleGradient(const Vector& theta, const Record& r) const {
  Vector g = loss_->gradient(theta, r);
  if (clipNorm_) g = clipToNorm(g, *clipNorm_);
  return g;
}

Vector EmpiricalLoss::gradient(const Vector& theta) const {
  if (theta.size() != data_.dim()) {
    throw std::invalid_argument("EmpiricalLoss: theta has dimension " + std::to_string(theta.size()) +
                                " but the data have dimension " + std::to_string(data_.dim()));
  }
  Vector sum = Vector::Zero(theta.size());
  for (const Record& r : data_.records()) sum += perExampleGradient(theta, r);
  return sum / static_cast<double>(data_.size());
}

namespace {

/// out = (1/divisor) sum of the (clipped) per-example gradients of the records record(0..count), in that order: the
/// one loop of gradientInto and batchGradientInto.
template <class RecordAt>
void sumPerExampleGradients(const Loss& loss, std::optional<double> clipNorm, int d, const double* theta,
                            std::size_t count, RecordAt record, double divisor, double* out) {
  constexpr int kMaxDim = 16;  // the per-example term lives on the stack up to this dimension
  double termStack[kMaxDim];
  std::vector<double> termHeap(d > kMaxDim ? static_cast<std::size_t>(d) : 0);
  double* term = d > kMaxDim ? termHeap.data() : termStack;
  for (int a = 0; a < d; ++a) out[a] = 0.0;
  for (std::size_t i = 0; i < count; ++i) {
    loss.gradientInto(theta, record(i), term);
    if (clipNorm) clipToNormInPlace(term, d, *clipNorm);
    for (int a = 0; a < d; ++a) out[a] += term[a];
  }
  for (int a = 0; a < d; ++a) out[a] /= divisor;  // divided, as gradient() does, so the two agree bit for bit
}

}  // namespace

void EmpiricalLoss::gradientInto(const double* theta, double* out) const {
  const int d = data_.dim();
  if (quadraticUnclipped_) {  // (1/n) sum_i lambda (theta - x_i) = lambda (theta - xbar)
    const double lambda = quadraticUnclipped_->lambda();
    for (int a = 0; a < d; ++a) out[a] = lambda * (theta[a] - mean_[a]);
    return;
  }
  const auto& records = data_.records();
  sumPerExampleGradients(*loss_, clipNorm_, d, theta, records.size(), [&](std::size_t i) -> const Record& {
    return records[i];
  }, static_cast<double>(data_.size()), out);
}

void EmpiricalLoss::batchGradientInto(const double* theta, const std::size_t* indices, std::size_t count,
                                      double divisor, double* out) const {
  const auto& records = data_.records();
  sumPerExampleGradients(*loss_, clipNorm_, data_.dim(), theta, count, [&](std::size_t i) -> const Record& {
    return records[indices[i]];
  }, divisor, out);
}

}  // namespace fpdp::models
