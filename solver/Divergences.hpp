#pragma once
// Divergences between the two densities p (trained on D) and q (on D'), by quadrature on the mesh (MATH.md §3).
//
// Quadrature: the cell-average (midpoint) rule  int f(p, q) dtheta ~= sum_c |c| f(p_c, q_c), second order in h for
// smooth integrands; it is the one rule every functional here uses (CellQuadrature).
// The densities are normalised by their computed masses first (they are probability densities; the solver
// conserves mass to round-off), r = p/q, rho = r - 1. Each divergence is written as a sum of non-negative terms
// so that tiny divergences (1e-10 and below) lose no digits:
//   E_alpha - 1 = int q g_alpha(r),  g_alpha(r) = r^alpha - 1 - alpha (r - 1) = em1l(alpha u) + alpha l1l(rho),
//   KL          = int q h(r),        h(r) = r log r - r + 1 = rho u + l1l(rho),          u = log1p(rho),
// with em1l(x) = e^x - 1 - x and l1l(x) = log(1+x) - x (StableFunctions.hpp). Both integrands vanish to second
// order at r = 1 and the extra terms integrate to zero because int p = int q = 1.
//   R_alpha = log1p(E_alpha - 1)/(alpha - 1) while E_alpha - 1 < 1; for larger values (or overflow) the
//   log-sum-exp of log q + alpha log r is used instead, so R_alpha never overflows for large orders.
//   TV = (1/2) int |p - q|.
// Infinite values: where q = 0 and p > 0 (r = inf) R_alpha and KL are +inf. Negative cell values (which a
// non-positive time integrator may produce) are counted and reported with the minimum, and enter the integrands
// as 0; they are never dropped silently. Truncation by the box is measured (renyiBoundaryShare).
#include <petscvec.h>

#include <limits>
#include <string>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"

namespace fpdp::solver {

struct DensityHealth {
  double mass = 0.0;          // sum |c| u_c (raw, before normalisation)
  double min = 0.0;           // smallest cell value
  double max = 0.0;
  long negativeCells = 0;
  bool finite = true;         // no NaN/Inf
};

struct DivergenceValues {
  DensityHealth p, q;
  double kl = 0.0;                     // KL(p || q)
  double tv = 0.0;                     // total variation distance
  std::vector<double> renyi;           // R_alpha(p || q), one per order
  std::vector<double> eAlphaMinusOne;  // E_alpha - 1 (may be +inf)
  // Share of int p^alpha q^(1-alpha) that lies in the cells touching the box walls, per order. A share that is
  // not negligible means the box truncates the integrand (its tilted centre alpha m_p + (1-alpha) m_q lies
  // near or outside the box) and R_alpha is underestimated: the run warns instead of trusting the number.
  std::vector<double> renyiBoundaryShare;
};

/// The quadrature rule shared by every functional: weights = cell volumes of the owned cells.
class CellQuadrature {
public:
  explicit CellQuadrature(const meshes::DistributedBoxMesh& mesh) : mesh_(mesh) {}
  const std::vector<double>& weights() const { return mesh_.ownedVolumes(); }
  MPI_Comm comm() const { return mesh_.comm(); }
  static constexpr int order = 2;  // for smooth integrands, in the cell width
private:
  const meshes::DistributedBoxMesh& mesh_;
};

class DivergenceFunctionals {
public:
  DivergenceFunctionals(const meshes::DistributedBoxMesh& mesh, std::vector<double> orders);
  /// u holds p (field 0) and q (field 1) interlaced, as the DensityEvolution state.
  DivergenceValues evaluate(Vec u) const;
  /// Same, from rank-local arrays of owned cells (used by tests and by evaluate).
  DivergenceValues evaluate(const double* p, const double* q, std::ptrdiff_t stride) const;
  const std::vector<double>& orders() const { return orders_; }

private:
  CellQuadrature quadrature_;
  std::vector<double> orders_;
  std::vector<char> onBoundary_;  // owned cells that touch a wall
};

}  // namespace fpdp::solver
