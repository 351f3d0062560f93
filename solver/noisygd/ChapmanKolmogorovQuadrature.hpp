#pragma once
// One noisy-GD step as a quadrature of its transition kernel (MATH.md §2.1 without Pi_C; docs/noisy-gd.md §7):
//
//     p_{k+1}(y) = int p_k(x) N(y; T_D(x), 2 eta Sigma) dx,        T_D(x) = x - eta g_D(x),
//
// evaluated by the midpoint rule on the cell centres x_i of a uniform mesh, with the POINT VALUES p_k(x_i) as the
// state (not cell averages):  p_{k+1}(y_j) = sum_i |cell| p_k(x_i) prod_a phi((y_ja - T_a(x_i)) / s_a) / s_a,
// s_a^2 = 2 eta Sigma_aa (diagonal Sigma).
//
// Why: on a uniform grid the midpoint rule of a smooth integrand that decays inside the box converges faster than any
// power of h; its error is the aliasing term (Poisson summation), about 2 exp(-2 pi^2 w^2 / h^2) per axis and step
// for an integrand of Gaussian width w. Here w >= s_a / |dT/dx| (the kernel seen through the map), so a mesh of about
// 1.5 cells per noise standard deviation already reaches round-off: R_alpha of the 1-D logistic benchmark to 1e-12
// with 250 cells, where the finite-volume routes (fourth order at best) need 12000 cells for 1e-8 (bench/README.md).
// Every term of the sum is non-negative, so far-tail values keep their relative accuracy (no cancellation), down
// to the underflow of the kernel (its reach: 37.5 standard deviations, as GaussianConvolution's).
//
// Limits (checked by the caller or here): a uniform mesh; a diagonal Sigma with noise on every axis; no constraint
// set (Pi_C makes point masses, which point values cannot carry); smooth T_D (a kink in the loss gradient, e.g.
// Huber or clipping, leaves the rule only second order there). Mass the kernel carries beyond the walls is outflow.
#include <array>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include "solver/noisygd/GaussianConvolution.hpp"
#include "solver/noisygd/PushForward.hpp"

namespace fpdp::solver {

class ChapmanKolmogorovQuadrature {
public:
  /// `map`: T_D (PushForward::map, the one home of the noisy-GD map); stddev[a] = sqrt(2 eta Sigma_aa) > 0 on every
  /// axis of the mesh. Throws std::invalid_argument for a non-uniform axis, a missing noise axis, or a kernel table
  /// beyond kMaxKernelEntries.
  ChapmanKolmogorovQuadrature(const meshes::BoxMesh& mesh, const PushForward& map, meshes::AxisValues stddev);

  /// Point values at the cell centres (natural order, non-negative) of p_k -> p_{k+1}, in place. Returns the mass
  /// the kernel puts beyond each wall (axis by axis: source mass times the kernel's tail beyond that wall).
  Outflow apply(std::vector<double>& values) const;

  /// Estimated relative error of one step from the rule's aliasing, sum_a 2 exp(-2 pi^2 (w_a / h_a)^2) with
  /// 1 / w_a = max(1 / s_a, max_x sum_b |dT_b/dx_a| / s_b): the narrowest width of the kernel, as a function of the
  /// target point and of the source point. The density p_k is assumed at least as wide (true after the first step;
  /// the caller rates p_0 with aliasingTerm).
  double aliasingEstimate() const { return aliasing_; }
  /// The midpoint rule's relative error for a Gaussian of standard deviation `width` on spacing h (Poisson
  /// summation, leading term 2 exp(-2 pi^2 width^2 / h^2)): also how a caller rates the start p_0.
  static double aliasingTerm(double width, double h);
  /// Cells per noise standard deviation, worst axis (min_a s_a / h_a).
  double resolution() const { return resolution_; }
  std::string describe() const;

  static constexpr double kTail = GaussianConvolution::kReach;  // kernel reach in standard deviations
  static constexpr std::size_t kMaxKernelEntries = 1u << 28;  // 2 GiB of tabulated kernel values

private:
  const meshes::BoxMesh& mesh_;
  std::array<int, 3> n_{1, 1, 1};
  double volume_ = 1.0;
  struct Window {
    int first = 0, count = 0;  // target cells first .. first + count - 1 along the axis
    std::size_t offset = 0;    // into kernel_
  };
  std::vector<std::array<Window, 3>> windows_;  // per source cell (natural order), per axis
  std::vector<double> kernel_;                  // phi((y_j - T_a) / s_a) / s_a * h_a
  std::vector<std::array<double, 6>> tails_;    // per source: kernel mass below / above each axis's walls
  double aliasing_ = 0.0;
  double resolution_ = 0.0;
};

}  // namespace fpdp::solver
