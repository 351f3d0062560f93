#pragma once
// Exact convolution of a density, given by cell averages, with the Gaussian N(0, diag(s_1^2, ..., s_d^2)): the
// cross-check of the diffusion part of a noisy-GD step (MATH.md §2.1: p <- p * N(0, 2 eta Sigma); docs/noisy-gd.md §3).
//
// Separable, so it is applied axis by axis. Along a line, the density inside cell i is the derivative of the monotone
// cubic Hermite of the cumulative mass (PushForward.hpp), a non-negative quadratic q_i(t). The new mass of target
// cell j is the exact integral
//     sum_i int_cell_i q_i(x) [Phi((x_{j+1} - x)/s) - Phi((x_j - x)/s)] dx,
// evaluated with the antiderivatives of u^k Phi(u), k = 0, 1, 2 (no quadrature error, any ratio s/h). Conservative
// (each source cell's mass is deposited in full) and non-negative (q_i >= 0). Mass beyond the mesh is outflow.
// Only diagonal covariances: a full Sigma is not separable (the Fokker–Planck diffusion handles it).
#include <array>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include "solver/PushForward.hpp"

namespace fpdp::solver {

class GaussianConvolution {
public:
  /// stddev[a]: standard deviation along axis a (0 leaves the axis alone).
  GaussianConvolution(const meshes::BoxMesh& mesh, std::array<double, 3> stddev);
  Outflow apply(std::vector<double>& field) const;

private:
  const meshes::BoxMesh& mesh_;
  std::array<double, 3> s_;
};

}  // namespace fpdp::solver
