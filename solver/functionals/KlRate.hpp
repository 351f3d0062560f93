#pragma once
// The rate of KL(p || q) for two Langevin diffusions with drifts b = -grad L_D, b' = -grad L_D' and constant diffusion
// matrices Sigma, Sigma' (MATH.md §4, BKPP Thm 2.2 proof; re-derived there):
//   d/dt KL = -E_p[ (grad log r)^T Sigma (grad log r) ] + E_p[ <grad log r, (b - b') - (Sigma - Sigma') grad log q> ],
// and the integrand of the integrated (Young) bound
//   KL_t <= KL_0 + (1/4) int_0^t E_{p_s} | Sigma^{-1/2} ( b - b' - (Sigma - Sigma') grad log q_s ) |^2 ds.
// Evaluated by the cell quadrature at the cell centres: grad log p, grad log q by central differences of the log of
// the cell values (one-sided at walls), second order; cells where p or q is not positive are left out (their p-mass
// is reported).
#include <array>
#include <functional>
#include <memory>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "models/Dataset.hpp"
#include "solver/noisygd/PushForward.hpp"

namespace fpdp::solver {

struct KlRate {
  double identity = 0.0;         // d/dt KL from the identity above
  double boundIntegrand = 0.0;   // (1/4) E_p |Sigma^{-1/2}(b - b' - (Sigma - Sigma') grad log q)|^2
  double excludedMass = 0.0;     // p-mass of the cells left out
  std::array<double, 3> gapSquared{0, 0, 0};  // E_p[(b - b')_a^2] per axis (the noise-shape study's inputs)
};

/// grad L_D - grad L_D' at the owned cell centres (local order; components >= dim are 0): the drift gap g1 - g2 =
/// -(b - b') of two Langevin diffusions, read at every output step by the KL rate and the Rényi rate
/// (RenyiRate.hpp). Computed once per run and shared between them (24 B per cell, docs/scaling.md §6).
using CellDriftGap = std::vector<std::array<double, 3>>;
std::shared_ptr<const CellDriftGap> gradientGapAtCells(const meshes::DistributedBoxMesh& mesh,
                                                       const GradientField& gradD,
                                                       const GradientField& gradDPrime);

class KlRateFunctional {
public:
  /// gradients: grad L_D and grad L_D' (b = -grad L).
  KlRateFunctional(const meshes::DistributedBoxMesh& mesh, const GradientField& gradD,
                   const GradientField& gradDPrime, const models::Matrix& Sigma,
                   const models::Matrix& SigmaPrime);
  /// gradientGap: gradientGapAtCells of the two losses.
  KlRateFunctional(const meshes::DistributedBoxMesh& mesh, std::shared_ptr<const CellDriftGap> gradientGap,
                   const models::Matrix& Sigma, const models::Matrix& SigmaPrime);
  /// u: the interlaced (p, q) state (cell averages). Collective.
  KlRate evaluate(Vec u) const;

private:
  const meshes::DistributedBoxMesh& mesh_;
  models::Matrix Sigma_, SigmaPrime_, SigmaInv_;
  std::shared_ptr<const CellDriftGap> gradientGap_;  // grad L_D - grad L_D' = -(b - b') at owned cell centres
};

}  // namespace fpdp::solver
