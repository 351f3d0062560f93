#pragma once
// The gradient of the log-likelihood ratio u = log r = log(p/q) at the cell centres, for the Rényi information
// I_alpha = E_q[r^alpha |grad log r|^2] and its Sigma-weighted form (MATH.md §3; docs/scheme.md §5).
//
// Rule (finite differences of u on the cell-centre values, per axis, differentiating the Lagrange interpolant
// through the stencil's centres, so graded meshes are handled exactly like uniform ones):
//   - cells at least 2 cells from both walls along the axis: the centred 5-point stencil i-2..i+2 (fourth order;
//     on a uniform mesh (u_{i-2} - 8 u_{i-1} + 8 u_{i+1} - u_{i+2}) / (12 h));
//   - the two cells next to each wall: 3-point stencils inside the box (i = 0: 0,1,2 one-sided; i = 1: 0,1,2
//     centred), second order;
//   - an axis of 2 cells: the 2-point difference (first order; such an axis resolves nothing anyway).
// u is formed cell by cell as log1p((p - q)/q) where p/q is near 1 (so a tiny divergence keeps its digits: the
// differences are of u, never of log p - log q) and log p - log q elsewhere. A component is NaN where a stencil cell
// has p <= 0 or q <= 0 (log r undefined there); the caller leaves such cells out and reports their mass.
// MPI: the values are read from a ghosted local vector of a DMDA with the mesh's ownership ranges and stencil width
// 2, so the rule (and the result, to round-off) is the same on any number of ranks. Each rank must own at least two
// cells along every axis (checked). On one rank the ghosted block is the owned one and the global vector is read
// directly.
#include <petscvec.h>

#include <array>
#include <string>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"

namespace fpdp::solver {

class LogRatioGradient {
public:
  static constexpr int interiorOrder = 4;  // the order near the walls is 2
  /// Why the rule cannot be applied on this mesh's distribution (a rank owns fewer than 2 cells along an axis), or
  /// "" if it can. The same answer on every rank (the ownership ranges are global).
  static std::string unsupportedReason(const meshes::DistributedBoxMesh& mesh);
  /// Collective. The mesh must have 2 fields (p, q interlaced) and unsupportedReason(mesh) must be empty.
  explicit LogRatioGradient(const meshes::DistributedBoxMesh& mesh);
  /// points: a global vector of mesh.dm() holding p (field 0) and q (field 1). Fills grad[l][a] = d_a log(p/q) at
  /// owned cell l (local order), a < dim (0 beyond). Collective.
  void apply(Vec points, std::vector<std::array<double, 3>>& grad) const;
  /// The point values of the last apply with their ghosts (a local vector of the width-2 DMDA, p and q interlaced;
  /// on one rank the vector given to apply, which must still hold them) and its block: for the functionals that need
  /// the neighbours' values (HockeyStickKinks).
  Vec ghostedPoints() const { return dm_ ? local_.get() : lastPoints_; }
  const meshes::OwnedBlock& ghostedBlock() const { return ghosted_; }

private:
  struct Stencil {
    int first = 0;  // global index along the axis of the stencil's first cell
    int count = 0;
    std::array<double, 5> weight{};
  };
  // Several ranks: the width-2 twin of mesh.dm() with the mesh's ownership, and its local vector.
  void createWidthTwoTwin(PetscInt m, PetscInt n, PetscInt p, const PetscInt* const ranges[3]);
  const meshes::DistributedBoxMesh& mesh_;
  meshes::DMHandle dm_;  // null on one rank
  meshes::VecHandle local_;
  mutable Vec lastPoints_ = nullptr;  // the argument of the last apply
  std::array<std::vector<Stencil>, 3> stencils_;  // per axis, per global cell index along it
  meshes::OwnedBlock ghosted_;
};

}  // namespace fpdp::solver
