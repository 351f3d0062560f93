#pragma once
// Bins for the mass that the projection Pi_C of projected noisy GD (MATH.md §2.1) puts on the boundary of C, so that
// the density solver and the Monte Carlo sampler classify boundary mass the same way (one home for the rule).
//
// Box C = [l, u] (axis-aligned): a projected point has, per axis a, theta_a = l_a (state "below": on the lower face),
// theta_a = u_a ("above"), or l_a < theta_a < u_a ("inside", then the mesh cell index i_a along that axis). A point
// with at least one axis on a face lies on a face (one such axis), an edge (two) or a corner (three); its bin is the
// per-axis code c_a = 0 (below), i_a + 1 (inside, cell i_a), N_a + 1 (above), numbered x fastest over the extended
// grid of (N_a + 2) codes per axis, keeping only the codes with at least one face axis. In 1-D these are the two
// atoms at l and u; in 2-D the four corners and the face segments indexed by the cell along the face.
// Equality is exact: the projection clamps a coordinate to exactly l_a or u_a (std::clamp), and an unprojected
// coordinate equal to a bound has probability zero.
// Ball C = B(c, r): a projected point lies on the sphere |theta - c| = r. Bins: 1-D, the two end points c - r, c + r;
// 2-D, M equal arcs of the angle atan2(y - c_y, x - c_x) in [-pi, pi); 3-D, equal-area bins, M_z bands of
// z = (theta_z - c_z)/r in [-1, 1] times M_phi arcs of the azimuth. Default M: arcs about one smallest mesh cell
// long (M = ceil(2 pi r / h_min), M_z = ceil(2 r / h_min)). The ball's sphere is reached only through the projection,
// so the caller says whether the projection was active (rounding leaves |theta - c| = r (1 +- 1e-16)).
// No PETSc: usable wherever the mesh geometry and the constraint are known.
// Exercise: build/tests/validation/test_validation --run_test=boundary_bins
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include "models/ConstraintSet.hpp"

namespace fpdp::solver {

class ConstraintBoundaryBins {
public:
  /// angularBins: ball only, the number of arcs (2-D) or of azimuth arcs (3-D); 0 takes the default above.
  ConstraintBoundaryBins(const meshes::BoxMesh& mesh, const models::ConstraintSet& constraint, int angularBins = 0);

  /// Number of boundary bins (0 without a constraint).
  std::size_t count() const { return labels_.size(); }
  /// Bin of theta = Pi_C(x) (dim contiguous doubles); projected: whether Pi_C moved x. -1 when theta is not on the
  /// boundary of C (interior points belong to the mesh cells).
  long binOf(const double* theta, bool projected) const;
  /// A readable name of bin b: "x=lower", "x=upper,y:cell 3", "angle bin 5 of 64", ...
  const std::string& label(std::size_t b) const { return labels_[b]; }
  /// Box bins only: per axis the code of the header (0 below, i + 1 inside cell i, N_a + 1 above); empty for a ball.
  const std::array<int, 3>& boxCode(std::size_t b) const { return codes_[b]; }

private:
  meshes::BoxMesh mesh_;
  models::ConstraintSet constraint_;
  int dim_;
  std::array<long, 3> extendedStride_{1, 1, 1};
  std::vector<long> extendedToBin_;  // box: extended code -> bin (-1 for all-inside codes)
  int azimuthBins_ = 0, zBands_ = 1;  // ball
  std::vector<std::string> labels_;
  std::vector<std::array<int, 3>> codes_;
};

}  // namespace fpdp::solver
