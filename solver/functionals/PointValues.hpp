#pragma once
// Point values at cell centres from cell averages, to fourth order, for the divergence quadrature (docs/scheme.md §5).
//
// For u = e^g smooth, the average over a cell of widths h_a is
//     ubar = u(x_c) (1 + sum_a (h_a^2/24)(g_aa + g_a^2) + O(h^4)),
// so u(x_c) = ubar exp(-sum_a (h_a^2/24)(g_aa + g_a^2)) + O(h^4), with g_a, g_aa the central differences of log ubar.
// The exponential form keeps every value positive; a cell next to a wall, or whose neighbours along an axis are not
// all positive normal numbers, gets no correction along that axis (there the density is negligible in a well-posed
// run); nor does an axis whose curvature term h^2 g_aa/24 exceeds 1 (log u not resolved: spikes and cliffs in far
// tails next to underflow).
// Why: the midpoint rule applied to cell AVERAGES of p^alpha q^(1-alpha) errs by O(h^2) (the average of a product is not
// the product of averages); applied to POINT values it errs only by boundary terms (Euler–Maclaurin), which vanish
// for densities that decay inside the box. The quadrature then has the order of this reconstruction, four.
#include <petscvec.h>

#include <array>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"

namespace fpdp::solver {

class PointValueReconstruction {
public:
  explicit PointValueReconstruction(const meshes::DistributedBoxMesh& mesh);
  /// averages and points: global vectors of the mesh's DM (all fields); points may not alias averages.
  void apply(Vec averages, Vec points) const;

private:
  const meshes::DistributedBoxMesh& mesh_;
  /// Per axis and owned index along it: the reciprocals of the centre distances x_c - x_(c-1), x_(c+1) - x_c,
  /// x_(c+1) - x_(c-1) (multiplications per cell, not divisions) and the width h_c, read once at construction (the
  /// per-cell lookups through the box were half of apply's time).
  struct AxisGeometry {
    std::vector<double> inverseLower, inverseUpper, inverseSpan, width;
    PetscInt first = 0, cells = 0;  // the owned indices; the box's cells along the axis
  };
  std::array<AxisGeometry, 3> axes_;
};

}  // namespace fpdp::solver
