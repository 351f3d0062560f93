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
#include <cmath>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"

namespace fpdp::solver {

/// The curvature part of a correction's exponent beyond which log u counts as not resolved (a factor e).
inline constexpr double kLargestCurvatureCorrection = 1.0;

/// One axis's part of the exponent above, at a cell of width h whose log-averages are lm, l0, lp at its neighbours
/// and itself (inverseLower = 1/(x_c - x_(c-1)), inverseUpper = 1/(x_(c+1) - x_c), inverseSpan = 1/(x_(c+1) - x_(c-1))):
/// h^2 (g_aa + g_a^2)/24 by the three-point formulas, or 0 where the curvature part exceeds
/// kLargestCurvatureCorrection. The one home of the formula (PointValueReconstruction, pointValuesOfWholeField).
inline double pointValueExponent(double lm, double l0, double lp, double inverseLower, double inverseUpper,
                                 double inverseSpan, double h) {
  const double g1 = (lp - lm) * inverseSpan;
  const double g2 = 2.0 * ((lp - l0) * inverseUpper - (l0 - lm) * inverseLower) * inverseSpan;
  // The correction is O(h^2) where log u is resolved on the mesh. Its curvature part h^2 g_aa / 24 beyond 1
  // (a factor e) means log u is not resolved there: a spike or cliff in the far tail (next to underflow, or
  // a kernel narrower than the cell), where extrapolating could scale a 1e-300 average up by e^38 or more;
  // such an axis gets no correction. (The slope part h^2 g_a^2 / 24 only ever lowers the value, and is the
  // right correction for the steep but resolved log-linear flanks of a tail.)
  if (std::fabs(h * h * g2) > 24.0 * kLargestCurvatureCorrection) return 0.0;
  return h * h * (g2 + g1 * g1) / 24.0;
}

/// The point values of one whole field (cell averages in natural order, any dimension of the box) by the same
/// reconstruction: points[c] = averages[c] exp(-sum_a exponent_a), walls and unresolved neighbours as above.
void pointValuesOfWholeField(const meshes::BoxMesh& mesh, const double* averages, double* points);

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
