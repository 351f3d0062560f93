#pragma once
// Per-example losses l(theta; x) and the empirical loss L_D(theta) = (1/n) sum_i l(theta; x_i) (MATH.md §1), with
// optional per-example gradient clipping CLIP_C(v) = v min(1, C/|v|) (MATH.md §2.1, lecture `002`).
// The closed-form losses live here; a loss written as a string expression is models/ExpressionLoss.hpp, and the
// problem constants (lambda, beta, S_g) of a pair of empirical losses are models/LossConstants.hpp.
#include <array>
#include <memory>
#include <optional>
#include <string>

#include "models/Dataset.hpp"

namespace fpdp::models {

class Loss {
public:
  virtual ~Loss() = default;
  virtual std::string name() const = 0;
  virtual double value(const Vector& theta, const Record& r) const = 0;
  virtual Vector gradient(const Vector& theta, const Record& r) const = 0;
  /// The same gradient written into out[0..d), d = r.x.size(), theta given as d contiguous doubles: the Monte Carlo
  /// sampler's inner loop. The closed-form losses (quadratic, logistic) implement their formula here once and
  /// gradient() calls it, so both paths are one definition and allocate nothing; the default falls back on
  /// gradient() (allocating).
  virtual void gradientInto(const double* theta, const Record& r, double* out) const;
  /// sup over theta of |grad l(theta; a) - grad l(theta; b)|_2 in closed form, if the loss has one;
  /// `exact` says whether the value is attained (true) or only an upper bound (false).
  struct PairGap {
    double value;
    bool exact;
  };
  virtual std::optional<PairGap> pairGradientGap(const Record& a, const Record& b) const = 0;
  /// Strong-convexity and smoothness constants of l(.; x) valid for every record, when known.
  virtual std::optional<double> strongConvexity() const { return std::nullopt; }
  virtual std::optional<double> smoothness(const Dataset& /*d*/) const { return std::nullopt; }
  /// Hessian of l(.; r) at theta in closed form, if the loss has one (nullopt: callers use central differences).
  virtual std::optional<Matrix> hessian(const Vector& /*theta*/, const Record& /*r*/) const { return std::nullopt; }
};

/// l(theta; x) = (lambda/2) |theta - x|^2. Gradient lambda (theta - x); lambda-strongly convex, lambda-smooth;
/// pair gap lambda |x_a - x_b| (exact: the gradient difference does not depend on theta).
class QuadraticLoss final : public Loss {
public:
  explicit QuadraticLoss(double lambda);
  std::string name() const override { return "quadratic"; }
  double value(const Vector& theta, const Record& r) const override;
  Vector gradient(const Vector& theta, const Record& r) const override;
  void gradientInto(const double* theta, const Record& r, double* out) const override;
  std::optional<PairGap> pairGradientGap(const Record& a, const Record& b) const override;
  std::optional<double> strongConvexity() const override { return lambda_; }
  std::optional<double> smoothness(const Dataset&) const override { return lambda_; }
  std::optional<Matrix> hessian(const Vector& theta, const Record& r) const override;
  double lambda() const { return lambda_; }

private:
  double lambda_;
};

/// L2-regularised logistic regression, labels y in {-1, +1}:
///   l(theta; x, y) = log(1 + exp(-y <theta, x>)) + (mu/2) |theta|^2,
///   grad l = -y sigmoid(-y <theta, x>) x + mu theta,  Hessian = sigmoid'(<theta, x>) x x^T + mu I.
/// mu-strongly convex, (mu + |x|^2/4)-smooth; |grad l(.;a) - grad l(.;b)| <= |x_a| + |x_b| (a bound).
class LogisticLoss final : public Loss {
public:
  explicit LogisticLoss(double regularization);
  std::string name() const override { return "logistic"; }
  double value(const Vector& theta, const Record& r) const override;
  Vector gradient(const Vector& theta, const Record& r) const override;
  void gradientInto(const double* theta, const Record& r, double* out) const override;
  std::optional<PairGap> pairGradientGap(const Record& a, const Record& b) const override;
  std::optional<double> strongConvexity() const override { return mu_; }
  std::optional<double> smoothness(const Dataset& d) const override;
  std::optional<Matrix> hessian(const Vector& theta, const Record& r) const override;
  double regularization() const { return mu_; }

private:
  double mu_;
};

/// Huber loss with an L2 regulariser (labels ignored):
///   l(theta; x) = H_delta(|theta - x|) + (mu/2)|theta|^2,  H_delta(r) = r^2/2 (r <= delta), delta (r - delta/2) (r > delta);
///   grad l = (theta - x) min(1, delta/|theta - x|) + mu theta = CLIP_delta(theta - x) + mu theta  (0 + mu x at theta = x).
/// mu-strongly convex (only convex for mu = 0), (1 + mu)-smooth. Pair gap sup_theta |grad l(.;a) - grad l(.;b)| =
/// min(|x_a - x_b|, 2 delta), EXACT: CLIP_delta is the projection onto the delta-ball (1-Lipschitz, |CLIP| <= delta),
/// and theta = (x_a + x_b)/2 attains it. l is C^1 but not C^2: the radial curvature jumps from 1 + mu to mu at
/// |theta - x| = delta, outside the twice-differentiable setting the papers assume.
class HuberLoss final : public Loss {
public:
  explicit HuberLoss(double delta, double regularization = 0.0);
  std::string name() const override { return "huber"; }
  double value(const Vector& theta, const Record& r) const override;
  Vector gradient(const Vector& theta, const Record& r) const override;
  std::optional<PairGap> pairGradientGap(const Record& a, const Record& b) const override;
  std::optional<double> strongConvexity() const override { return mu_; }
  std::optional<double> smoothness(const Dataset&) const override { return 1.0 + mu_; }
  /// Inside (|theta - x| <= delta, the kink included: the inner one-sided limit) (1 + mu) I; outside
  /// (delta/r)(I - u u^T) + mu I with u = (theta - x)/r.
  std::optional<Matrix> hessian(const Vector& theta, const Record& r) const override;
  double delta() const { return delta_; }
  double regularization() const { return mu_; }

private:
  double delta_;
  double mu_;
};

/// Double well around each record (labels ignored), width w > 0, curvature lambda > 0 across the well:
///   l(theta; x) = (lambda / (8 w^2)) (|theta - x|^2 - w^2)^2,   grad l = (lambda / (2 w^2)) (|theta - x|^2 - w^2)(theta - x),
///   Hessian = (lambda / (2 w^2)) [ (r^2 - w^2) I + 2 (theta - x)(theta - x)^T ],  r = |theta - x|:
/// radial eigenvalue (lambda/(2w^2))(3r^2 - w^2) (= lambda on the well r = w), tangential (lambda/(2w^2))(r^2 - w^2)
/// (0 on the well), -lambda/2 in every direction at theta = x (a local maximum). Not convex (strongConvexity() =
/// nullopt), not globally smooth (smoothness() = nullopt: the Hessian grows like r^2; see hessianSupNorm for a box),
/// pair gap infinite on R^d for x_a != x_b (the gradient difference grows like r^2 |x_a - x_b|): nullopt.
class DoubleWellLoss final : public Loss {
public:
  DoubleWellLoss(double lambda, double width);
  std::string name() const override { return "double-well"; }
  double value(const Vector& theta, const Record& r) const override;
  Vector gradient(const Vector& theta, const Record& r) const override;
  std::optional<PairGap> pairGradientGap(const Record& a, const Record& b) const override;
  std::optional<Matrix> hessian(const Vector& theta, const Record& r) const override;
  /// sup over theta in the box [lower, upper] (first dim entries) of the spectral norm of the Hessian of l(.; r),
  /// EXACT: (lambda/(2w^2)) max(w^2 - s_min, 3 s_max - w^2), with s_min, s_max the least and largest |theta - x|^2 on
  /// the box (the largest |eigenvalue| is (lambda/(2w^2)) max(w^2 - s, 3s - w^2), convex in s = r^2).
  double hessianSupNorm(const Record& r, const std::array<double, 3>& lower, const std::array<double, 3>& upper,
                        int dim) const;
  /// (1/n) sum_i hessianSupNorm(x_i): an upper bound on the smoothness of L_D over the box (exact when n = 1).
  double smoothnessBoundOnBox(const Dataset& d, const std::array<double, 3>& lower, const std::array<double, 3>& upper,
                              int dim) const;
  double lambda() const { return lambda_; }
  double width() const { return width_; }

private:
  double lambda_;
  double width_;
};

/// CLIP_C(v) = v min(1, C/|v|) (MATH.md §2.1; lecture `002`, whose printed definition is garbled): the Euclidean
/// projection onto the ball of radius C, hence 1-Lipschitz. C > 0.
Vector clipToNorm(const Vector& v, double clipNorm);
/// The same, in place on d contiguous doubles (one definition: clipToNorm calls it).
void clipToNormInPlace(double* v, int d, double clipNorm);

/// L_D(theta) = (1/n) sum_i l(theta; x_i). With a clip norm C, gradient(theta) = (1/n) sum_i CLIP_C(grad l(theta; x_i))
/// (the drift of clipped noisy GD, MATH.md §2.1) while value(theta) stays the unclipped mean loss; the clipped field is
/// in general not the gradient of any potential.
class EmpiricalLoss {
public:
  EmpiricalLoss(std::shared_ptr<const Loss> loss, Dataset data);
  /// clipNorm: per-example clipping at this norm (> 0, finite), or nullopt for none.
  EmpiricalLoss(std::shared_ptr<const Loss> loss, Dataset data, std::optional<double> clipNorm);
  /// L_D(theta). For the quadratic loss, (lambda/2) (|theta - xbar|^2 + (1/n) sum_i |x_i - xbar|^2): the same sum in
  /// closed form, one term instead of n (a case of 10^7 records evaluates it at every cell), equal up to rounding.
  double value(const Vector& theta) const;
  Vector gradient(const Vector& theta) const;
  /// The same drift written into out[0..d) (d = data().dim()), theta as d contiguous doubles, with no allocation for
  /// the quadratic and logistic losses: the Monte Carlo sampler's inner loop (validation/MonteCarloSampler).
  /// Sums the per-example terms in record order, exactly as gradient() does; for the unclipped quadratic loss it
  /// uses grad L_D = lambda (theta - xbar) instead (one term instead of n; equal to gradient() up to rounding).
  /// out must not alias theta.
  void gradientInto(const double* theta, double* out) const;
  /// The minibatch drift g_B = (1/divisor) sum over `count` records (indices into data(), summed in the order given)
  /// of the per-example gradients, clipped when there is a clip norm (MATH.md §8), written into out[0..d). No
  /// allocation for d <= 16. out must not alias theta.
  void batchGradientInto(const double* theta, const std::size_t* records, std::size_t count, double divisor,
                         double* out) const;
  /// grad l(theta; r), clipped to the clip norm if there is one: one term of gradient().
  Vector perExampleGradient(const Vector& theta, const Record& r) const;
  const Loss& loss() const { return *loss_; }
  const Dataset& data() const { return data_; }
  std::optional<double> clipNorm() const { return clipNorm_; }
  /// true iff gradient() is grad L_D exactly (no clipping).
  bool gradientIsExact() const { return !clipNorm_.has_value(); }

private:
  std::shared_ptr<const Loss> loss_;
  Dataset data_;
  std::optional<double> clipNorm_;
  const QuadraticLoss* quadratic_ = nullptr;           // set when the loss is quadratic: the shortcuts below apply
  const QuadraticLoss* quadraticUnclipped_ = nullptr;  // set when the quadratic shortcut of gradientInto applies
  Vector mean_;                                        // xbar, for the quadratic shortcuts
  double meanSquaredDeviation_ = 0.0;                  // (1/n) sum_i |x_i - xbar|^2, for value()'s
};

/// Gradient sensitivity S_g of one pair of records (MATH.md §1): sup_theta |G(theta; a) - G(theta; b)| with G = grad l,
/// or G = CLIP_C(grad l) when clipNorm is given. Without clipping: loss.pairGradientGap(a, b). With clipping:
/// min(pair gap, 2C) (CLIP_C is 1-Lipschitz and bounded by C), or 2C when the loss has no pair gap; exact only for
/// the quadratic loss (there the sup over theta of |CLIP_C(u) - CLIP_C(u + lambda (x_a - x_b))| is attained at
/// u = -lambda (x_a - x_b)/2), otherwise a bound. nullopt when there is neither a closed form nor clipping.
std::optional<Loss::PairGap> sensitivityBound(const Loss& loss, const Record& a, const Record& b,
                                              std::optional<double> clipNorm);

}  // namespace fpdp::models
