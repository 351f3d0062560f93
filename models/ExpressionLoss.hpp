#pragma once
// A per-example loss written by the user as a string expression (muParser syntax), MATH.md §1:
//   l(theta; x, y) = <value expression in theta1..thetad, x1..xd, y and named constants>,
//   grad l = the d gradient expressions (d l / d theta_i), or central differences of the value:
//     g_i = (l(theta + h_i e_i) - l(theta - h_i e_i)) / (2 h_i),  h_i = cbrt(eps) max(1, |theta_i|),
//   error O(h^2 l''') + O(eps l / h), about 1e-10 relative on smooth losses (docs/models.md).
// Syntax: + - * / ^, unary minus, comparisons and a ? b : c, functions sin cos tan asin acos atan sinh cosh tanh
// exp log (natural) ln log2 log10 sqrt abs sign rint min max sum avg, constants _pi _e, and the numerically safe
// additions log1p(z), expm1(z), softplus(z) = log(1 + e^z), sigmoid(z) = 1/(1 + e^-z).
// Thread safety: value() and gradient() may be called concurrently. muParser objects are not thread-safe, so every
// thread evaluates with a parser set (bound to its own variables) of its own, compiled on the thread's first call and
// kept in a thread-local table: no lock on the evaluation path (parsing anew per call would cost ~35 us; docs/models.md
// has the measured figures).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/Loss.hpp"

namespace fpdp::models {

class ExpressionLoss final : public Loss {
public:
  /// dim >= 1: the number of theta (and x) coordinates. gradientExpressions: empty (central differences) or exactly
  /// dim expressions, the i-th being d l / d theta_i. constants: extra named numbers usable in every expression (not
  /// named like a variable). Throws std::invalid_argument on a parse error, quoting the expression and muParser's
  /// message with the 0-based character position.
  ExpressionLoss(int dim, std::string valueExpression, std::vector<std::string> gradientExpressions = {},
                 std::map<std::string, double> constants = {});
  ~ExpressionLoss() override;
  ExpressionLoss(const ExpressionLoss&) = delete;
  ExpressionLoss& operator=(const ExpressionLoss&) = delete;

  std::string name() const override { return "expression"; }
  double value(const Vector& theta, const Record& r) const override;
  Vector gradient(const Vector& theta, const Record& r) const override;
  /// No closed form for a user expression.
  std::optional<PairGap> pairGradientGap(const Record& a, const Record& b) const override;

  int dim() const { return dim_; }
  const std::string& valueExpression() const { return valueExpression_; }
  const std::vector<std::string>& gradientExpressions() const { return gradientExpressions_; }
  bool hasGradientExpressions() const { return !gradientExpressions_.empty(); }
  /// Whether the gradient is given by expressions none of which uses a theta<k> (muParser's list of the variables an
  /// expression uses): grad l(theta; x) is then the same at every theta, as for the linear loss -<x, theta>.
  bool gradientIndependentOfTheta() const { return gradientFreeOfTheta_; }
  /// The central-difference step h_i for a coordinate of value theta_i: cbrt(eps) max(1, |theta_i|).
  static double finiteDifferenceStep(double thetaComponent);

private:
  struct Evaluator;
  struct ThreadSets;
  /// This thread's parser set for this loss (made on first use).
  Evaluator& evaluator() const;

  int dim_;
  std::string valueExpression_;
  std::vector<std::string> gradientExpressions_;
  std::map<std::string, double> constants_;
  bool gradientFreeOfTheta_ = false;
  std::uint64_t serial_;  // this loss's key in every thread's table of parser sets

  std::unique_ptr<Evaluator> makeEvaluator() const;
  void requireDimensions(const Vector& theta, const Record& r) const;
};

}  // namespace fpdp::models
