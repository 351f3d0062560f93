#pragma once
// The coordinates in which a full noise covariance is diagonal, for the whole-field noisy-GD steps of 4 to 6 axes,
// whose convolution is one pass per axis. With Sigma = L D L^T (L unit lower triangular, D diagonal: the Cholesky
// factor with its diagonal divided out), the state y = L^-1 theta makes noisy GD
//   y_{k+1} = y_k - eta L^-1 g(L y_k) + N(0, 2 eta D),
// a push-forward through a map of the same form and a convolution with independent axes. The divergences, the
// hockey-stick curves and everything computed from them are invariant under the change of variables (one map for
// both densities). L is triangular, not an eigenbasis, so a covariance with small correlations gives small shears and
// a state box (the bounding box of L^-1 of the parameter box) close to the parameter box; y_0 = theta_0.
#include <vector>

#include "models/Dataset.hpp"

namespace fpdp::models {

class DecorrelatedCoordinates {
public:
  /// sigma symmetric positive definite (std::invalid_argument otherwise).
  explicit DecorrelatedCoordinates(const Matrix& sigma);
  /// theta = L y.
  const Matrix& parametersFromState() const { return L_; }
  /// y = L^-1 theta.
  const Matrix& stateFromParameters() const { return inverse_; }
  /// D: the noise covariance in the state coordinates is diag(D) (times 2 eta for one step).
  const Vector& noiseVariances() const { return variances_; }
  /// Whether L is the identity (Sigma diagonal): the state is the parameters.
  bool isIdentity() const { return identity_; }
  /// The mean and covariance of a law of theta as a law of y.
  Vector stateMean(const Vector& thetaMean) const { return inverse_ * thetaMean; }
  Matrix stateCovariance(const Matrix& thetaCovariance) const;
  /// A gradient of theta as the state's drift direction: L^-1 g.
  Vector stateGradient(const Vector& thetaGradient) const { return inverse_ * thetaGradient; }
  /// The smallest box of y holding L^-1 of the parameter box [lower, upper] (its corners' images' extent per axis).
  void stateBox(const std::vector<double>& lower, const std::vector<double>& upper, std::vector<double>& stateLower,
                std::vector<double>& stateUpper) const;

private:
  Matrix L_, inverse_;
  Vector variances_;
  bool identity_ = true;
};

}  // namespace fpdp::models
