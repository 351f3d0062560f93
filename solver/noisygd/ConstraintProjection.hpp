#pragma once
// The projection step of projected noisy gradient descent on cell averages (MATH.md §2.1, CYS Algorithm 1):
//
//   p_{k+1} = Pi_C # ( (T_D # p_k) * N(0, 2 eta Sigma) ),   Pi_C the Euclidean projection onto C (box or ball),
//
// with the mass Pi_C moves onto the boundary of C kept as *boundary bins* (docs/noisy-gd.md §6): a p_k is the pair
// (cell averages inside C, masses of the bins), and every divergence sees both (SingularMasses, Divergences.hpp).
//
// Box C = [l, u] (its faces on mesh faces, which the case reader enforces). A point outside C is classified per axis
// as below / inside / above, and Pi_C clamps exactly the below/above coordinates. A cell outside C has one class per
// axis (its faces are mesh faces, and so are C's), so its whole mass goes to the piece of the boundary its classes
// name (1-D: the two end atoms; 2-D: four edges and four corner atoms; 3-D: six faces, twelve edges, eight corners),
// into the bin given by its inside-axis cell indices. This is the exact finite-volume image of Pi_C: the mass of the
// cell lands where Pi_C sends every one of its points, to the resolution of the bins (one bin per mesh cell along
// the piece). Conservative to round-off.
//
// Ball C = B(c, r) (2-D and 3-D; a 1-D ball is the box [c - r, c + r]). Angular bins on the sphere: 2-D, N_theta
// equal angles; 3-D, N_band bands of equal height in z (equal areas, Archimedes) times N_phi equal azimuths. Cells
// whose corners are all in C are kept; every other cell keeps the share of its mass given by its exact measure inside
// C (meshes/BallCellIntersection), and the rest goes to the bins of the projected midpoints of those of its
// kSubcellPoints^d equal sub-cells that lie outside C, in equal parts. The split assumes the density constant on a cut
// cell: O(h) of the cell's mass moved wrongly on O(1/h^(d-1)) cut cells of mass O(h^d), second order in h overall.
// (Before, the kept share was the count of sub-cell midpoints in C, an O(h / kSubcellPoints) error per cut cell: first
// order; the 2-D ball case's eps stayed pre_asymptotic through 1024^2.) Conservative to round-off.
//
// Bins are laid out independently of the mesh they are applied on (BoundaryBins), so that the same bins serve the
// run's mesh and the padded mesh of the exact-convolution route (NoisyGradientDescent.cpp).
// Exercised by: tests/solver/test_projection.cpp
#include <array>
#include <limits>
#include <string>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include "models/ConstraintSet.hpp"
#include "solver/noisygd/PushForward.hpp"

namespace fpdp::solver {

/// The boundary bins of a constraint set C on a mesh: their number, representative points (on the boundary of C)
/// and how a projected point finds its bin.
class BoundaryBins {
public:
  BoundaryBins() = default;  // no constraint: no bins
  /// Throws std::invalid_argument if C does not fit the mesh (a box or 1-D ball face that is not a mesh face, or C
  /// not inside the mesh), naming the nearest admissible values. angularBins (ball): bins per full turn (2-D: N_theta;
  /// 3-D: N_phi, with N_band = ceil(N_phi / pi) bands); 0 chooses about one bin per mesh cell width along the sphere.
  BoundaryBins(const meshes::BoxMesh& mesh, const models::ConstraintSet& C, int angularBins = 0);

  std::size_t size() const { return points_.size(); }
  bool empty() const { return points_.empty(); }
  /// Bin b's representative point: box, the centre of the bin's patch of the boundary (cell centres along the inside
  /// axes, the clamped coordinate on the others); ball, the point of the sphere at the bin's mid angles.
  const std::vector<ParameterPoint>& points() const { return points_; }
  /// The piece of the boundary bin b belongs to: box, one character per axis, '-' below, '0' inside, '+' above
  /// (e.g. "-0": the edge x = lower_x; "-+": the corner (lower_x, upper_y)); ball, "sphere".
  std::string pieceName(std::size_t b) const;
  std::string describe() const;

  bool isBox() const { return box_; }
  const std::array<double, 3>& lower() const { return lo_; }   // box faces (ball: centre - r)
  const std::array<double, 3>& upper() const { return hi_; }
  const std::array<double, 3>& centre() const { return c_; }   // ball
  double radius() const { return r_; }
  int dim() const { return dim_; }

  /// Box: the bin of a piece (per-axis classes 0 below, 1 inside, 2 above; not all inside) and the cell offsets of
  /// the inside axes (0-based from C's lower face).
  std::size_t boxBin(const std::array<int, 3>& classes, const std::array<int, 3>& insideOffset) const;
  /// Ball: the bin of a point of the sphere (or any point other than the centre: its radial projection's bin).
  std::size_t ballBin(const ParameterPoint& x) const;

  static constexpr std::size_t kInterior = std::numeric_limits<std::size_t>::max();
  /// The bin of a point theta = Pi_C(x) (dim() coordinates), or kInterior when theta is in the interior of C (its
  /// mass belongs to the mesh cells); `projected`: whether Pi_C moved x. The classification of a single point, for
  /// samplers of the algorithm (validation/MonteCarloSampler); ConstraintProjection applies the same bins to cells.
  /// Box: theta_a is on a face exactly when it equals l_a or u_a (Pi_C clamps, so the equality is exact, and an
  /// unprojected coordinate equals a face with probability 0; `projected` is not needed); the inside axes give the
  /// cell offsets from C's lower face. For x in a mesh cell outside C this is the bin that cell's mass goes to.
  /// Ball (and the 1-D ball): the radial projection leaves |theta - c| = r only up to rounding, so `projected` decides.
  std::size_t projectedPointBin(const double* theta, bool projected) const;

private:
  int dim_ = 0;
  bool box_ = true;
  std::array<double, 3> lo_{0, 0, 0}, hi_{0, 0, 0}, c_{0, 0, 0};
  double r_ = 0;
  std::array<int, 3> inside_{1, 1, 1};  // box: mesh cells inside C per axis
  std::array<std::vector<double>, 3> insideFaces_;  // box: the mesh faces from l_a to u_a per axis
  std::array<std::size_t, 27> pieceOffset_{};
  std::array<std::size_t, 27> pieceSize_{};
  int nTheta_ = 0, nBand_ = 0, nPhi_ = 0;  // ball bins
  std::vector<ParameterPoint> points_;
  std::vector<int> pieceOfBin_;
};

class ConstraintProjection {
public:
  static constexpr int kSubcellPoints = 4;  // ball: sub-cells per axis of a cell the sphere cuts or that is outside

  /// `mesh`: any mesh holding the cells inside C (the run's mesh, or a padded copy of it).
  ConstraintProjection(const meshes::BoxMesh& mesh, const BoundaryBins& bins);

  /// Pi_C # in place: `field` (cell averages in natural order on the mesh) keeps the part in C; the rest is added to
  /// `binMasses` (size bins.size()).
  void project(std::vector<double>& field, std::vector<double>& binMasses) const;
  const BoundaryBins& bins() const { return bins_; }

private:
  struct Share {
    std::size_t bin;
    double fraction;
  };
  const meshes::BoxMesh& mesh_;
  const BoundaryBins& bins_;
  // Cells that are not wholly kept: index, kept fraction, and their shares (CSR in shareStart_).
  std::vector<std::size_t> cell_;
  std::vector<double> keep_;
  std::vector<std::size_t> shareStart_;
  std::vector<Share> shares_;
};

/// Adds `mass` at point y to `field` (cell averages, natural order) by the linear (cloud-in-cell) weights between
/// neighbouring cell centres: conservative, non-negative, and exact for the first moment away from the walls (a
/// point beyond the outermost centre goes to the outermost cell).
void depositLinear(const meshes::BoxMesh& mesh, const ParameterPoint& y, double mass, std::vector<double>& field);

/// Adds mass * N(y, diag(s^2)) integrated over each cell to `field` (cell averages): the exact convolution of a point
/// mass with the Gaussian. Kernel mass beyond the outermost faces goes to the outermost cells (conservative); the
/// kernel is cut at 9 standard deviations (Phi(-9) = 1e-19). s[a] = 0 on unused axes.
void depositGaussian(const meshes::BoxMesh& mesh, const ParameterPoint& y, double mass, const meshes::AxisValues& s,
                     std::vector<double>& field);

}  // namespace fpdp::solver
