#pragma once
// Push-forward of a density, given by cell averages, through a map T (MATH.md §2.1: T_D(theta) = theta - eta g(theta)),
// conservative and non-negative (docs/noisy-gd.md §2).
//
// 1-D. The pushed measure's cumulative mass G(y) = mass{x : f(x) <= y} is known exactly at the images y_i = f(x_i)
// of the source faces (G jumps by the cell mass m_i across [y_i, y_{i+1}]). Inside each source cell's image the mass is
// distributed by the cubic Hermite interpolant H with H(y_i) = 0, H(y_{i+1}) = m_i and end slopes
// rho(x_i)/|f'(x_i)|, rho(x_{i+1})/|f'(x_{i+1})| (the pushed density at the image faces), limited by Fritsch–Carlson so
// that H is monotone. Target cell masses are differences of H at the target faces. Hence:
//   * exactly conservative (each source cell's mass is deposited in full, by telescoping),
//   * non-negative (H is monotone),
//   * third order for smooth data and maps on uniform meshes (face densities from the fourth-order formula
//     (-a_{i-2} + 7a_{i-1} + 7a_i - a_{i+1})/12, f' by central differences), and folds of f (non-monotone maps, beyond
//     the papers' eta < 1/beta) are handled cell by cell, at reduced accuracy next to the fold.
// Mass imaged beyond the outer faces is returned as outflow (left, right), never dropped silently.
//
// d-D. T is written exactly as a composition of shears, each changing one coordinate:
//   S_1: theta_d <- theta_d - eta g_d(theta),  S_2: theta_{d-1} <- theta_{d-1} - eta g_{d-1}(theta), ...
// where theta is the original point, recovered from the current one by inverting the earlier shears (1-D monotone
// solves). Each shear is a family of 1-D maps along grid lines, taken at the cell centres of the other coordinates
// (an O(h^2) approximation within the cell), and remapped with the 1-D scheme above.
//
// Co-transport (docs/tracing.md §2). coTransport() pushes a non-negative density together with passive signed
// fields (cell averages, e.g. the components of U2 p of the tracing diffusions, MATH.md §2.2) through the same
// shears: in every 1-D remap, source cell i deposits its passive mass w_i with the density's within-cell
// distribution, i.e. target cell j receives (w_i / m_i) times the density mass cell i deposits in j. The density
// itself is remapped exactly as by apply() (bitwise the same numbers). Consequences: the passive fields are pushed
// linearly; each passive cell average divided by the density's is a convex combination (weights >= 0, summing to 1,
// up to round-off) of the source cells' ratios w_i/m_i, so a constant ratio stays exactly constant and
// |V| <= max_i |V_i| holds cell by cell; the ratio is piecewise constant within each source cell, which makes the
// pushed ratio first order pointwise where the map stretches (second order for translations and in the weak sense).
//
// Works on the whole field (natural order, x fastest) held by one process; callers gather and scatter.
// Exercised by: tests/solver/test_noisy_gd.cpp, tests/solver/test_tracing.cpp
#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "meshes/BoxMesh.hpp"

namespace fpdp::solver {

/// A point of parameter space (entries >= the mesh's dimension are 0).
using ParameterPoint = meshes::AxisValues;
/// A gradient field g on R^d (components >= the mesh's dimension are 0): the map T(theta) = theta - eta g(theta).
using GradientField = std::function<ParameterPoint(const ParameterPoint&)>;

/// Mass carried beyond the mesh by a push-forward, per axis and side (index 2a = lower wall of axis a, 2a+1 = upper).
struct Outflow {
  std::array<double, 2 * meshes::kMaxDimension> mass{};
  double total() const {
    double s = 0;
    for (double m : mass) s += m;
    return s;
  }
};

/// Outflows of a co-transport: the density's, and one per passive field (signed, in passive-mass units).
struct CoTransportOutflow {
  Outflow density;
  std::vector<Outflow> passive;
};

/// One-dimensional remap of cell masses through a map f given at the source faces (images) and its derivative.
/// sourceFaces/targetFaces: strictly increasing; masses: one per source cell (>= 0 for positivity; signed inputs
/// are remapped linearly, used for the vector-valued measures of the tracing diffusions).
/// faceDensity[i]: density estimate at source face i; imageFaces[i] = f(x_i); imageSlope[i] = f'(x_i).
/// Adds the deposited masses into `out` (size = target cells); returns the mass beyond the first/last target face.
std::array<double, 2> remapLine(const std::vector<double>& targetFaces, const std::vector<double>& masses,
                                const std::vector<double>& faceDensity, const std::vector<double>& imageFaces,
                                const std::vector<double>& imageSlope, double* out, std::ptrdiff_t outStride);

/// Co-transport along a line: remaps `masses` exactly as the overload above (same deposits, same return value) and
/// with them passive signed masses: passiveMasses[f][i] is passive field f's mass in source cell i, deposited with
/// the density's shape (target j receives passiveMasses[f][i] / masses[i] times the density mass cell i puts in j;
/// a source cell without density mass but with passive mass spreads it uniformly over its image). Passive deposits
/// are added into passiveOut[f][j * outStride]; passive mass beyond the first/last face is added to passiveOutflow[f].
std::array<double, 2> remapLine(const std::vector<double>& targetFaces, const std::vector<double>& masses,
                                const std::vector<double>& faceDensity, const std::vector<double>& imageFaces,
                                const std::vector<double>& imageSlope, double* out, std::ptrdiff_t outStride,
                                const std::vector<const double*>& passiveMasses, const std::vector<double*>& passiveOut,
                                std::vector<std::array<double, 2>>& passiveOutflow);

/// f' at the faces from the face images f(x_i) (central differences: fourth order on uniform lines, second order
/// otherwise): the imageSlope argument of remapLine.
std::vector<double> imageSlopes(const std::vector<double>& faces, const std::vector<double>& images);

/// Face density estimates from cell averages along a line (fourth order on uniform lines, second order otherwise),
/// clamped at 0 for non-negative data.
std::vector<double> faceDensities(const std::vector<double>& faces, const double* averages, std::ptrdiff_t stride,
                                  bool clampNonNegative);

class PushForward {
public:
  /// g: the gradient field; T(theta) = theta - eta g(theta). cacheShare in (0, 1]: the share of the face-map cache's
  /// limit this map may take (a caller holding many maps, a Poisson mixture's, divides the limit among them).
  PushForward(const meshes::BoxMesh& mesh, GradientField gradient, double eta, double cacheShare = 1.0);

  /// Push cell averages `field` (natural order) through T in place. Non-negative data stays non-negative; signed
  /// data (allowSigned) is remapped linearly with the same weights' construction but no clamping.
  Outflow apply(std::vector<double>& field, bool allowSigned = false) const;
  /// One shear of apply(), the one that changes coordinate `axis` (apply runs them for axes d - 1, ..., 0): for a field
  /// split over processes so that the lines along `axis` are whole (SlabNoisyGd). The same values as inside apply().
  Outflow applyShear(int axis, std::vector<double>& field) const;

  /// Push a non-negative density (cell averages, natural order) through T in place, co-transporting the passive
  /// signed fields (cell averages, each of the density's size) with the density's within-cell shape (see the header
  /// comment). The density's result and outflow are exactly those of apply(density).
  CoTransportOutflow coTransport(std::vector<double>& density, std::vector<std::vector<double>>& passive) const;

  /// T(theta) = theta - eta g(theta).
  ParameterPoint map(const ParameterPoint& theta) const;

private:
  /// Image of coordinate `axis` under shear stage for axis `axis`, at point `current` (other coordinates current).
  double shearImage(int axis, const ParameterPoint& current) const;
  /// Recover the original point from a point on which the shears of axes > axis have been applied.
  ParameterPoint original(int axis, ParameterPoint current) const;
  /// onlyAxis >= 0: that axis's shear alone.
  Outflow applyImpl(std::vector<double>& field, bool allowSigned, std::vector<std::vector<double>>* passive,
                    std::vector<Outflow>* passiveOutflow, int onlyAxis = -1) const;

  /// The face images and slopes of every line of every shear (in forEachLine's order): they depend on the mesh and
  /// the map only, so they are computed on the first application and kept, where they take at most kMaxCachedValues
  /// (kMaxCachedValuesBeyondDmda on meshes of more than 3 axes, where each face's image costs a Newton solve in up to
  /// d - 1 coordinates and recomputing the maps was half of a step: 32^4 cells, 1.8 of 3.6 s).
  struct LineMaps {
    std::vector<double> images, slopes;
  };
  const std::vector<LineMaps>* cachedMaps(int axis) const;
  LineMaps lineMaps(int axis, const meshes::BoxMesh::Line& line) const;
  static constexpr double kMaxCachedValues = 2097152.0;              // 16 MiB of doubles
  static constexpr double kMaxCachedValuesBeyondDmda = 134217728.0;  // 1 GiB of doubles (24^5 cells: 0.66 GiB)

  const meshes::BoxMesh& mesh_;
  GradientField gradient_;
  double eta_;
  double cacheShare_ = 1.0;
  struct MapCache {
    std::mutex mutex;
    std::array<std::unique_ptr<std::vector<LineMaps>>, meshes::kMaxDimension> maps;
  };
  std::unique_ptr<MapCache> cache_;  // behind a pointer: PushForward stays movable
};

}  // namespace fpdp::solver
