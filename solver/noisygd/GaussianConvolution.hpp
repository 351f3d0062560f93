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
//
// Co-transport (docs/tracing.md §2): coTransport() convolves a non-negative density and, with it, passive signed
// fields (the components of U2 p of the tracing diffusions, MATH.md §2.2): source cell i deposits its passive mass
// w_i with the density's limited quadratic q_i, i.e. target j receives (w_i / m_i) times the density mass cell i
// deposits in j. Plain linear convolution of the passive fields (their own unclamped, unlimited quadratics) would be
// as linear, but where the positivity clamp or the Fritsch–Carlson limiter acts on the density (tails, steep flanks)
// the passive shapes would differ from w_i/m_i times the density's, so a constant ratio V = w/p would not stay
// constant and |V| <= max |V_i| could fail; with the density's shape both hold to round-off.
//
// Two routes to the same sums (docs/noisy-gd.md §3). On a uniform axis the deposits are three discrete convolutions
// of the cells' coefficients (c0, c1, c2) with kernels tabulated once: the direct sum costs about 2 x 37.5 s/h
// deposits per cell, the transform route (TiltedConvolution: FFTs with exponential tilts, every value accurate to
// 1e-13 relative to itself, the far tails included) a few FFTs per line. Route::Automatic takes, per axis, the one
// estimated cheaper. Both deposit every source's mass in full: the transform's line is renormalised to the mass the
// direct sum deposits (a correction of rounding size, checked), and its outflow is the same tail masses. Co-transport
// is the direct route's (its passive deposits are the density's times w_i / m_i to the last bit).
#include <array>
#include <memory>
#include <utility>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include "solver/noisygd/PushForward.hpp"
#include "solver/noisygd/TiltedConvolution.hpp"

namespace fpdp::solver {

class GaussianConvolution {
public:
  /// Kernel reach in standard deviations: beyond it the kernel's tail mass Phi(-u) underflows (Phi(-37.5) ~ 5e-309),
  /// so the deposits cover every target whose mass is representable and R_alpha of high order sees the true far
  /// tails. Shared by every exact Gaussian-kernel deposit of noisy GD (ChapmanKolmogorovQuadrature too).
  static constexpr double kReach = 37.5;
  /// Direct: the sums term by term on every axis. Transform: TiltedConvolution on every uniform axis with noise.
  /// Automatic: per axis, the cheaper by TiltedConvolution::costRelativeToDirect().
  enum class Route { Automatic, Direct, Transform };
  /// stddev[a]: standard deviation along axis a (0 leaves the axis alone).
  GaussianConvolution(const meshes::BoxMesh& mesh, meshes::AxisValues stddev, Route route = Route::Automatic);
  ~GaussianConvolution();
  Outflow apply(std::vector<double>& field) const;
  /// One pass of apply() (which runs them for axes 0, ..., d - 1): for a field split over processes so that the lines
  /// along `axis` are whole (SlabNoisyGd). The same values as inside apply().
  Outflow applyAxis(int axis, std::vector<double>& field) const;
  /// Convolve a non-negative density in place and co-transport the passive signed fields (cell averages, each of the
  /// density's size) with its within-cell shape. The density's result and outflow are exactly those of apply().
  /// Only on the direct route (std::logic_error otherwise: construct with Route::Direct).
  CoTransportOutflow coTransport(std::vector<double>& density, std::vector<std::vector<double>>& passive) const;
  /// Whether axis a is convolved by transforms.
  bool transformsAxis(int axis) const { return transform_[static_cast<std::size_t>(axis)] != nullptr; }
  /// The transform route's work since construction: FFT passes and cells summed directly (bench, tests).
  TiltedConvolution::Work transformWork() const;

private:
  /// onlyAxis >= 0: that axis's pass alone.
  Outflow applyImpl(std::vector<double>& field, std::vector<std::vector<double>>* passive,
                    std::vector<Outflow>* passiveOutflow, int onlyAxis = -1) const;
  /// The direct route on a uniform axis for one line of a density without passive fields: line (cell averages,
  /// stride gridLine.stride) into outLine, outflow added; the buffers are the caller's, reused from line to line.
  void densityLine(const meshes::BoxMesh::Line& gridLine, const double* line, double* outLine,
                   const std::vector<double>& rho, int axis, Outflow& outflow, std::vector<double>& lineIn,
                   std::vector<double>& lineOut, std::vector<double>& tails) const;
  /// The transform route along one axis: field (cell averages) into next, outflow added.
  void transformAxis(int axis, const std::vector<double>& field, std::vector<double>& next, Outflow& outflow) const;

  const meshes::BoxMesh& mesh_;
  meshes::AxisValues s_;
  // Uniform axes: the tail-mass kernels K(offset) for offsets -reach..reach+1 cells (reach_[a] + offset indexes them).
  std::array<std::vector<std::array<double, 3>>, meshes::kMaxDimension> tails_;
  std::array<int, meshes::kMaxDimension> reach_{};
  // The same kernels by coefficient (kernelColumns_[a][k][t] = tails_[a][t][k]): contiguous for densityLine's loop.
  std::array<std::array<std::vector<double>, 3>, meshes::kMaxDimension> kernelColumns_;
  // Transform route: sources 0..first-1 lose mass below the mesh, sources second..n-1 above it.
  std::array<std::pair<int, int>, meshes::kMaxDimension> wallSources_{};
  std::array<std::unique_ptr<TiltedConvolution>, meshes::kMaxDimension> transform_;
};

}  // namespace fpdp::solver
