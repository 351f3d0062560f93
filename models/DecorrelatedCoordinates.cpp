#include "models/DecorrelatedCoordinates.hpp"

#include <Eigen/Cholesky>

#include <algorithm>
#include <stdexcept>

namespace fpdp::models {

DecorrelatedCoordinates::DecorrelatedCoordinates(const Matrix& sigma) {
  const auto d = sigma.rows();
  if (d < 1 || sigma.cols() != d || (sigma - sigma.transpose()).cwiseAbs().maxCoeff() > 0.0)
    throw std::invalid_argument("DecorrelatedCoordinates: Sigma must be square and symmetric");
  const Eigen::LLT<Matrix> llt(sigma);
  if (llt.info() != Eigen::Success)
    throw std::invalid_argument("DecorrelatedCoordinates: Sigma must be positive definite");
  const Matrix C = llt.matrixL();
  L_ = Matrix::Identity(d, d);
  variances_ = Vector(d);
  for (Eigen::Index j = 0; j < d; ++j) {
    variances_[j] = C(j, j) * C(j, j);
    for (Eigen::Index i = j + 1; i < d; ++i) {
      L_(i, j) = C(i, j) / C(j, j);
      if (L_(i, j) != 0.0) identity_ = false;
    }
  }
  if (identity_) {
    // Sigma diagonal: D is its diagonal itself (not the square of its square root).
    for (Eigen::Index j = 0; j < d; ++j) variances_[j] = sigma(j, j);
    inverse_ = L_;
  } else {
    inverse_ = L_.triangularView<Eigen::UnitLower>().solve(Matrix::Identity(d, d));
  }
}

Matrix DecorrelatedCoordinates::stateCovariance(const Matrix& thetaCovariance) const {
  if (identity_) return thetaCovariance;
  Matrix c = inverse_ * thetaCovariance * inverse_.transpose();
  return 0.5 * (c + c.transpose());  // exactly symmetric
}

void DecorrelatedCoordinates::stateBox(const std::vector<double>& lower, const std::vector<double>& upper,
                                       std::vector<double>& stateLower, std::vector<double>& stateUpper) const {
  const auto d = inverse_.rows();
  stateLower.assign(static_cast<std::size_t>(d), 0.0);
  stateUpper.assign(static_cast<std::size_t>(d), 0.0);
  for (Eigen::Index i = 0; i < d; ++i) {
    // A linear form's extremes over a box: each term at the end its coefficient's sign picks.
    double lo = 0.0, hi = 0.0;
    for (Eigen::Index j = 0; j < d; ++j) {
      const double a = inverse_(i, j) * lower[static_cast<std::size_t>(j)], b = inverse_(i, j) * upper[static_cast<std::size_t>(j)];
      lo += std::min(a, b);
      hi += std::max(a, b);
    }
    stateLower[static_cast<std::size_t>(i)] = lo;
    stateUpper[static_cast<std::size_t>(i)] = hi;
  }
}

}  // namespace fpdp::models
