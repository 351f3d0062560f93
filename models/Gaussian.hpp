#pragma once
// Gaussian densities: exact cell averages on boxes, and the closed forms of MATH.md §6 used as oracles.
#include <array>
#include <optional>
#include <span>
#include <vector>

#include "models/Dataset.hpp"

namespace fpdp::models {

/// The n-point Gauss–Legendre rule on [-1, 1] (1 <= n <= 16; computed once by Newton's method on P_n).
struct GaussLegendreRule {
  std::vector<double> nodes;
  std::vector<double> weights;
};
const GaussLegendreRule& gaussLegendre(int n);

class Gaussian {
public:
  Gaussian(Vector mean, Matrix covariance);  // covariance symmetric positive definite (checked)
  int dim() const { return static_cast<int>(mean_.size()); }
  const Vector& mean() const { return mean_; }
  const Matrix& covariance() const { return cov_; }
  double density(const Vector& x) const;
  /// (1/|cell|) * integral of the density over the box [lo, hi] (first dim() entries used).
  /// Diagonal covariance: a product of erf differences (exact to round-off). Full covariance: the last
  /// coordinate is integrated exactly given the others (conditional Gaussian), the others by tensor
  /// Gauss–Legendre with `gaussPoints` per axis; error far below any second-order scheme's.
  double cellAverage(const std::array<double, 3>& lo, const std::array<double, 3>& hi, int gaussPoints = 8) const;
  /// Probability of the box [lo, hi].
  double boxProbability(const std::array<double, 3>& lo, const std::array<double, 3>& hi, int gaussPoints = 8) const;

  /// Probabilities of the n boxes [faces[m], faces[m + 1]] on `axis` times [lo, hi] on the other axes, into out
  /// (n = faces.size() - 1 = out.size()). Full covariance: as boxProbability but with `axis` the exactly integrated
  /// coordinate, so that the outer nodes are shared by the whole line and each face's tail probability by its two
  /// cells (about n^2 fewer transcendental evaluations per cell than n calls); within ~1e-13 relative of it.
  /// floor > 0: a box whose probability is bounded by at most floor (the density's largest value on the box, from the
  /// precision's smallest eigenvalue and the box's distance to the mean, times its volume) gets half that bound,
  /// within floor/2 of its probability, and no quadrature: for sums of absolute errors, which need no relative
  /// accuracy in the far tails, where the quadrature's panels must resolve a steep log-density.
  void lineBoxProbabilities(int axis, std::span<const double> faces, const std::array<double, 3>& lo,
                            const std::array<double, 3>& hi, std::span<double> out, int gaussPoints = 8,
                            double floor = 0.0) const;

  /// Whether the covariance is diagonal: the box probability is then the product of the axis probabilities.
  bool isDiagonal() const { return diagonal_; }
  /// P(lo <= x_axis <= hi) under the marginal of one coordinate (erfc differences, tails kept relatively accurate).
  double axisProbability(int axis, double lo, double hi) const;

private:
  Vector mean_;
  Matrix cov_;
  Matrix covInv_;
  double logNorm_;
  bool diagonal_;
};

/// Exact cell averages of one Gaussian on the cells of a tensor-product grid: with a diagonal covariance from per-axis
/// probabilities computed once (n_x + n_y + n_z erfc differences instead of d per cell, which the reference errors at
/// every output step and the initial state would otherwise pay), else line by line along axis 0
/// (Gaussian::lineBoxProbabilities, the line of the last cell asked for cached: ask in the order i fastest). Diagonal:
/// the same values as cellAverage (the same products, in the same order); full covariance: within ~1e-13 relative.
/// Not thread-safe (the line cache).
class TensorCellAverages {
public:
  /// faces[a]: the faces of axis a (unused axes: empty); the cells asked for must lie in [start[a], start[a] + count[a]).
  /// Keeps its own copies of g and the faces. probabilityFloor > 0 (full covariance only): cells whose probability is
  /// bounded by that floor get an average within floor/2 of theirs over their volume, not a relatively accurate one
  /// (Gaussian::lineBoxProbabilities): for absolute errors, not for a state.
  TensorCellAverages(const Gaussian& g, std::array<std::vector<double>, 3> faces, std::array<int, 3> start,
                     std::array<int, 3> count, double probabilityFloor = 0.0);
  double operator()(int i, int j, int k) const;

private:
  Gaussian g_;
  std::array<std::vector<double>, 3> faces_;
  std::array<int, 3> start_;
  std::array<std::vector<double>, 3> axisProbability_;  // per axis, the probability of each cell's interval (diagonal only)
  std::array<int, 3> count_;
  double probabilityFloor_ = 0.0;
  // Full covariance: the cell averages of the owned cells on line (j, k) of axis 0.
  mutable std::vector<double> line_;
  mutable std::array<int, 2> lineIndex_{-1, -1};
};

/// Rényi divergence of order alpha > 1 between N(m1, S1) and N(m2, S2) (Gil–Alajaji–Linder, MATH.md §6).
/// Returns +infinity when S_alpha = alpha S2 + (1 - alpha) S1 is not positive definite.
double gaussianRenyi(const Vector& m1, const Matrix& S1, const Vector& m2, const Matrix& S2, double alpha);
/// KL(N(m1,S1) || N(m2,S2)) (MATH.md §6).
double gaussianKL(const Vector& m1, const Matrix& S1, const Vector& m2, const Matrix& S2);

/// Law at time t of the Ornstein–Uhlenbeck process d theta = -A (theta - c) dt + sqrt(2 Sigma) dW started from
/// N(m0, C0) (MATH.md §6): mean c + e^{-At}(m0 - c), covariance solving C' = -AC - CA^T + 2 Sigma.
/// A must be symmetric positive definite here (true for quadratic losses); computed in A's eigenbasis.
Gaussian ornsteinUhlenbeckLaw(const Matrix& A, const Vector& c, const Matrix& Sigma, const Vector& m0, const Matrix& C0,
                              double t);

}  // namespace fpdp::models
