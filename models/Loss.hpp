#pragma once
// Per-example losses l(theta; x) and the empirical loss L_D(theta) = (1/n) sum_i l(theta; x_i) (MATH.md §1).
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
};

/// l(theta; x) = (lambda/2) |theta - x|^2. Gradient lambda (theta - x); lambda-strongly convex, lambda-smooth.
class QuadraticLoss final : public Loss {
public:
  explicit QuadraticLoss(double lambda);
  std::string name() const override { return "quadratic"; }
  double value(const Vector& theta, const Record& r) const override;
  Vector gradient(const Vector& theta, const Record& r) const override;
  std::optional<PairGap> pairGradientGap(const Record& a, const Record& b) const override;
  std::optional<double> strongConvexity() const override { return lambda_; }
  std::optional<double> smoothness(const Dataset&) const override { return lambda_; }
  double lambda() const { return lambda_; }

private:
  double lambda_;
};

/// L2-regularised logistic regression, labels y in {-1, +1}:
///   l(theta; x, y) = log(1 + exp(-y <theta, x>)) + (mu/2) |theta|^2,
///   grad l = -y sigmoid(-y <theta, x>) x + mu theta.
/// mu-strongly convex, (mu + |x|^2/4)-smooth; |grad l(.;a) - grad l(.;b)| <= |x_a| + |x_b| (a bound).
class LogisticLoss final : public Loss {
public:
  explicit LogisticLoss(double regularization);
  std::string name() const override { return "logistic"; }
  double value(const Vector& theta, const Record& r) const override;
  Vector gradient(const Vector& theta, const Record& r) const override;
  std::optional<PairGap> pairGradientGap(const Record& a, const Record& b) const override;
  std::optional<double> strongConvexity() const override { return mu_; }
  std::optional<double> smoothness(const Dataset& d) const override;
  double regularization() const { return mu_; }

private:
  double mu_;
};

/// L_D(theta) = (1/n) sum_i l(theta; x_i).
class EmpiricalLoss {
public:
  EmpiricalLoss(std::shared_ptr<const Loss> loss, Dataset data);
  double value(const Vector& theta) const;
  Vector gradient(const Vector& theta) const;
  const Loss& loss() const { return *loss_; }
  const Dataset& data() const { return data_; }

private:
  std::shared_ptr<const Loss> loss_;
  Dataset data_;
};

}  // namespace fpdp::models
