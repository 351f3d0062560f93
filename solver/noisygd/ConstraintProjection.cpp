#include "solver/noisygd/ConstraintProjection.hpp"

#include "meshes/BallCellIntersection.hpp"
#include "solver/numerics/StableFunctions.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

namespace fpdp::solver {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kFaceTolerance = 1e-9;  // relative to the adjacent cell width: "on a mesh face" up to round-off
constexpr double kTail = 9.0;            // Gaussian deposit cut, in standard deviations (standardNormalCdf(-9) = 1.1e-19)

std::string num(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  return s.str();
}

/// Index of the face of `ax` at x (within round-off), or throws naming the nearest faces.
int faceIndex(const meshes::Axis& ax, double x, int axis, const char* what) {
  const int i = ax.faceIndexAt(x, kFaceTolerance);
  if (i >= 0) return i;
  const auto [below, above] = ax.nearestFaces(x);
  throw std::invalid_argument("the constraint's " + std::string(what) + " on axis " + std::to_string(axis) + " (" +
                              num(x) + ") is not a mesh face; the nearest faces are " + num(below) + " and " +
                              num(above));
}

constexpr int kAllInside = 1 + 3 + 9;

}  // namespace

BoundaryBins::BoundaryBins(const meshes::BoxMesh& mesh, const models::ConstraintSet& C, int angularBins) {
  if (C.isNone()) return;
  dim_ = mesh.dim();
  if (C.dimension() != dim_)
    throw std::invalid_argument("the constraint set has dimension " + std::to_string(C.dimension()) +
                                ", the mesh " + std::to_string(dim_));
  box_ = C.kind() == models::ConstraintKind::Box || dim_ == 1;  // a 1-D ball is the box [c - r, c + r]
  for (int a = 0; a < dim_; ++a) {
    if (C.kind() == models::ConstraintKind::Box) {
      lo_[a] = C.lower()[a];
      hi_[a] = C.upper()[a];
    } else {
      c_[a] = C.centre()[a];
      lo_[a] = C.centre()[a] - C.radius();
      hi_[a] = C.centre()[a] + C.radius();
    }
    const auto& ax = mesh.axis(a);
    const double tol = kFaceTolerance * std::min(ax.width(0), ax.width(ax.cells() - 1));
    if (lo_[a] < ax.lower() - tol || hi_[a] > ax.upper() + tol)
      throw std::invalid_argument("the constraint set leaves the mesh on axis " + std::to_string(a) + " ([" +
                                  num(lo_[a]) + ", " + num(hi_[a]) + "] vs the mesh [" + num(ax.lower()) + ", " +
                                  num(ax.upper()) + "])");
  }
  r_ = C.kind() == models::ConstraintKind::Ball ? C.radius() : 0.0;
  if (box_) {
    std::array<int, 3> loIndex{0, 0, 0};
    for (int a = 0; a < dim_; ++a) {
      loIndex[a] = faceIndex(mesh.axis(a), lo_[a], a, "lower face");
      inside_[a] = faceIndex(mesh.axis(a), hi_[a], a, "upper face") - loIndex[a];
      const auto& f = mesh.axis(a).faces();
      insideFaces_[a].assign(f.begin() + loIndex[a], f.begin() + loIndex[a] + inside_[a] + 1);
    }
    // Pieces by id = sum_a class_a 3^a (class 0 below, 1 inside, 2 above; unused axes are always inside).
    std::size_t offset = 0;
    for (int id = 0; id < 27; ++id) {
      const std::array<int, 3> cls{id % 3, (id / 3) % 3, id / 9};
      std::size_t n = id == kAllInside ? 0 : 1;
      for (int a = 0; a < 3; ++a) {
        if (a >= dim_ && cls[a] != 1) n = 0;
        if (cls[a] == 1) n *= static_cast<std::size_t>(inside_[a]);
      }
      pieceOffset_[id] = offset;
      pieceSize_[id] = n;
      for (std::size_t b = 0; b < n; ++b) {
        std::size_t rest = b;
        ParameterPoint x{0, 0, 0};
        for (int a = 0; a < dim_; ++a) {
          if (cls[a] == 0) x[a] = lo_[a];
          else if (cls[a] == 2) x[a] = hi_[a];
          else {
            const int off = static_cast<int>(rest % static_cast<std::size_t>(inside_[a]));
            rest /= static_cast<std::size_t>(inside_[a]);
            x[a] = mesh.axis(a).centre(loIndex[a] + off);
          }
        }
        points_.push_back(x);
        pieceOfBin_.push_back(id);
      }
      offset += n;
    }
  } else {
    const double h = mesh.minWidth();
    if (dim_ == 2) {
      nTheta_ = angularBins > 0 ? angularBins : std::max(16, static_cast<int>(std::ceil(2.0 * kPi * r_ / h)));
      for (int b = 0; b < nTheta_; ++b) {
        const double th = -kPi + (b + 0.5) * 2.0 * kPi / nTheta_;
        points_.push_back({c_[0] + r_ * std::cos(th), c_[1] + r_ * std::sin(th), 0.0});
      }
    } else {
      nPhi_ = angularBins > 0 ? angularBins : std::max(8, static_cast<int>(std::ceil(2.0 * kPi * r_ / h)));
      nBand_ = std::max(2, static_cast<int>(std::ceil(nPhi_ / kPi)));
      for (int band = 0; band < nBand_; ++band) {
        const double z = -1.0 + (band + 0.5) * 2.0 / nBand_, rho = std::sqrt(1.0 - z * z);
        for (int k = 0; k < nPhi_; ++k) {
          const double ph = -kPi + (k + 0.5) * 2.0 * kPi / nPhi_;
          points_.push_back({c_[0] + r_ * rho * std::cos(ph), c_[1] + r_ * rho * std::sin(ph), c_[2] + r_ * z});
        }
      }
    }
    pieceOfBin_.assign(points_.size(), -1);
  }
}

std::size_t BoundaryBins::boxBin(const std::array<int, 3>& classes, const std::array<int, 3>& insideOffset) const {
  const int id = classes[0] + 3 * classes[1] + 9 * classes[2];
  std::size_t index = 0, stride = 1;
  for (int a = 0; a < 3; ++a)
    if (classes[a] == 1) {
      index += static_cast<std::size_t>(insideOffset[a]) * stride;
      stride *= static_cast<std::size_t>(inside_[a]);
    }
  return pieceOffset_[id] + index;
}

std::size_t BoundaryBins::ballBin(const ParameterPoint& x) const {
  const double v0 = x[0] - c_[0], v1 = x[1] - c_[1], v2 = x[2] - c_[2];
  const double ph = std::atan2(v1, v0);  // [-pi, pi]
  if (dim_ == 2) return static_cast<std::size_t>(std::clamp(static_cast<int>((ph + kPi) / (2 * kPi) * nTheta_), 0,
                                                            nTheta_ - 1));
  const double z = v2 / std::sqrt(v0 * v0 + v1 * v1 + v2 * v2);
  const int band = std::clamp(static_cast<int>((z + 1.0) / 2.0 * nBand_), 0, nBand_ - 1);
  const int k = std::clamp(static_cast<int>((ph + kPi) / (2 * kPi) * nPhi_), 0, nPhi_ - 1);
  return static_cast<std::size_t>(band) * static_cast<std::size_t>(nPhi_) + static_cast<std::size_t>(k);
}

std::size_t BoundaryBins::projectedPointBin(const double* theta, bool projected) const {
  if (empty()) return kInterior;
  if (!box_) return projected ? ballBin({theta[0], theta[1], dim_ == 3 ? theta[2] : 0.0}) : kInterior;
  std::array<int, 3> cls{1, 1, 1}, off{0, 0, 0};
  if (r_ > 0) {  // the 1-D ball [c - r, c + r]: its two atoms
    if (!projected) return kInterior;
    cls[0] = theta[0] < c_[0] ? 0 : 2;
    return boxBin(cls, off);
  }
  bool onFace = false;
  for (int a = 0; a < dim_; ++a) {
    if (theta[a] == lo_[a]) cls[a] = 0;
    else if (theta[a] == hi_[a]) cls[a] = 2;
    else {
      // The cell of C holding theta_a (a coordinate on a face of C lies in [l_a, u_a]; clamped against rounding).
      const auto& f = insideFaces_[a];
      off[a] = std::clamp(static_cast<int>(std::upper_bound(f.begin(), f.end(), theta[a]) - f.begin()) - 1, 0,
                          inside_[a] - 1);
      continue;
    }
    onFace = true;
  }
  return onFace ? boxBin(cls, off) : kInterior;
}

std::string BoundaryBins::pieceName(std::size_t b) const {
  if (!box_) return "sphere";
  const int id = pieceOfBin_.at(b);
  std::string s;
  for (int a = 0; a < dim_; ++a) s += "-0+"[(id / (a == 0 ? 1 : a == 1 ? 3 : 9)) % 3];
  return s;
}

std::string BoundaryBins::describe() const {
  if (dim_ == 0) return "none";
  std::ostringstream s;
  if (box_) {
    std::size_t atoms = 0;
    for (int id = 0; id < 27; ++id) {
      bool corner = id != kAllInside;
      for (int a = 0; a < 3; ++a) corner = corner && ((a < dim_) ? (id / (a == 0 ? 1 : a == 1 ? 3 : 9)) % 3 != 1
                                                                   : true);
      if (corner) atoms += pieceSize_[id];
    }
    s << size() << " boundary bins (" << atoms << " corner atoms, the rest one per mesh cell along the edges/faces)";
  } else if (dim_ == 2) {
    s << size() << " boundary bins (equal angles on the circle)";
  } else {
    s << size() << " boundary bins (" << nBand_ << " equal-area bands x " << nPhi_ << " azimuths on the sphere)";
  }
  return s.str();
}

ConstraintProjection::ConstraintProjection(const meshes::BoxMesh& mesh, const BoundaryBins& bins)
    : mesh_(mesh), bins_(bins) {
  shareStart_.push_back(0);
  if (bins.empty()) return;
  const int d = mesh.dim();
  std::array<int, 3> loIndex{0, 0, 0};
  if (bins.isBox())
    for (int a = 0; a < d; ++a) loIndex[a] = faceIndex(mesh.axis(a), bins.lower()[a], a, "lower face");
  const double r2 = bins.radius() * bins.radius();
  const auto& c = bins.centre();
  auto inBall = [&](const ParameterPoint& x) {
    double s = 0;
    for (int a = 0; a < d; ++a) s += (x[a] - c[a]) * (x[a] - c[a]);
    return s <= r2;
  };
  const int S = kSubcellPoints;
  const int subPoints = d == 2 ? S * S : S * S * S;
  std::size_t index = 0;
  for (int k = 0; k < mesh.cells(2); ++k)
    for (int j = 0; j < mesh.cells(1); ++j)
      for (int i = 0; i < mesh.cells(0); ++i, ++index) {
        const std::array<int, 3> idx{i, j, k};
        if (bins.isBox()) {
          std::array<int, 3> cls{1, 1, 1}, off{0, 0, 0};
          for (int a = 0; a < d; ++a) {
            const double x = mesh.axis(a).centre(idx[a]);
            cls[a] = x < bins.lower()[a] ? 0 : x > bins.upper()[a] ? 2 : 1;
            off[a] = idx[a] - loIndex[a];
          }
          if (cls[0] == 1 && cls[1] == 1 && cls[2] == 1) continue;
          cell_.push_back(index);
          keep_.push_back(0.0);
          shares_.push_back({bins.boxBin(cls, off), 1.0});
          shareStart_.push_back(shares_.size());
          continue;
        }
        const auto [lo, hi] = mesh.cellBounds(i, j, k);
        bool allIn = true;
        for (int corner = 0; corner < (1 << d) && allIn; ++corner) {
          ParameterPoint x{0, 0, 0};
          for (int a = 0; a < d; ++a) x[a] = (corner >> a) & 1 ? hi[a] : lo[a];
          allIn = inBall(x);
        }
        if (allIn) continue;
        // The kept share is the cell's exact measure inside the ball (second order overall: the density's variation
        // within a cut cell is all that is left); the sub-cells outside only say which bins the rest goes to.
        double volume = 1.0;
        for (int a = 0; a < d; ++a) volume *= hi[a] - lo[a];
        const double keep = std::clamp(meshes::cellMeasureInBall(lo, hi, c, bins.radius(), d) / volume, 0.0, 1.0);
        int outside = 0;
        std::map<std::size_t, int> count;
        for (int s = 0; s < subPoints; ++s) {
          ParameterPoint x{0, 0, 0};
          int rest = s;
          for (int a = 0; a < d; ++a) {
            x[a] = lo[a] + (rest % S + 0.5) * (hi[a] - lo[a]) / S;
            rest /= S;
          }
          if (!inBall(x)) ++outside, ++count[bins.ballBin(x)];
        }
        if (outside == 0) {  // a sliver beyond every sub-cell's midpoint: the bin of the farthest corner
          ParameterPoint far{0, 0, 0};
          for (int a = 0; a < d; ++a) far[a] = std::fabs(lo[a] - c[a]) > std::fabs(hi[a] - c[a]) ? lo[a] : hi[a];
          count[bins.ballBin(far)] = outside = 1;
        }
        cell_.push_back(index);
        keep_.push_back(keep);
        for (const auto& [b, n] : count) shares_.push_back({b, (1.0 - keep) * n / outside});
        shareStart_.push_back(shares_.size());
      }
}

void ConstraintProjection::project(std::vector<double>& field, std::vector<double>& binMasses) const {
  if (binMasses.size() != bins_.size()) throw std::invalid_argument("ConstraintProjection: wrong number of bins");
  const std::array<int, 3> n{mesh_.cells(0), mesh_.cells(1), mesh_.cells(2)};
  for (std::size_t m = 0; m < cell_.size(); ++m) {
    const std::size_t c = cell_[m];
    const int i = static_cast<int>(c % n[0]), j = static_cast<int>((c / n[0]) % n[1]),
              k = static_cast<int>(c / (static_cast<std::size_t>(n[0]) * n[1]));
    const double mass = field[c] * mesh_.cellVolume(i, j, k);
    if (mass == 0.0) continue;
    field[c] *= keep_[m];
    for (std::size_t s = shareStart_[m]; s < shareStart_[m + 1]; ++s)
      binMasses[shares_[s].bin] += mass * shares_[s].fraction;
  }
}

namespace {
/// Per-axis (cell, weight) pairs; weights sum to 1.
using AxisWeights = std::vector<std::pair<int, double>>;

void depositTensor(const meshes::BoxMesh& mesh, const std::array<AxisWeights, 3>& w, double mass,
                   std::vector<double>& field) {
  const std::ptrdiff_t nx = mesh.cells(0), nxy = nx * mesh.cells(1);
  for (const auto& [k, wk] : w[2])
    for (const auto& [j, wj] : w[1])
      for (const auto& [i, wi] : w[0]) {
        const double m = mass * wi * wj * wk;
        if (m != 0.0) field[static_cast<std::size_t>(i + j * nx + k * nxy)] += m / mesh.cellVolume(i, j, k);
      }
}
}  // namespace

void depositLinear(const meshes::BoxMesh& mesh, const ParameterPoint& y, double mass, std::vector<double>& field) {
  std::array<AxisWeights, 3> w{AxisWeights{{0, 1.0}}, AxisWeights{{0, 1.0}}, AxisWeights{{0, 1.0}}};
  for (int a = 0; a < mesh.dim(); ++a) {
    const auto& ax = mesh.axis(a);
    const int n = ax.cells();
    if (n == 1 || y[a] <= ax.centre(0)) continue;  // (0, 1)
    if (y[a] >= ax.centre(n - 1)) {
      w[a] = {{n - 1, 1.0}};
      continue;
    }
    const auto& f = ax.faces();
    int j = static_cast<int>(std::upper_bound(f.begin(), f.end(), y[a]) - f.begin()) - 1;  // cell holding y
    if (y[a] < ax.centre(j)) --j;                                                           // centre(j) <= y
    j = std::clamp(j, 0, n - 2);
    const double t = (y[a] - ax.centre(j)) / (ax.centre(j + 1) - ax.centre(j));
    w[a] = {{j, 1.0 - t}, {j + 1, t}};
  }
  depositTensor(mesh, w, mass, field);
}

void depositGaussian(const meshes::BoxMesh& mesh, const ParameterPoint& y, double mass, const meshes::AxisValues& s,
                     std::vector<double>& field) {
  std::array<AxisWeights, 3> w{AxisWeights{{0, 1.0}}, AxisWeights{{0, 1.0}}, AxisWeights{{0, 1.0}}};
  for (int a = 0; a < mesh.dim(); ++a) {
    const auto& ax = mesh.axis(a);
    const auto& f = ax.faces();
    const int n = ax.cells();
    if (!(s[a] > 0)) {  // no noise on this axis: the cell holding y
      const int j = std::clamp(static_cast<int>(std::upper_bound(f.begin(), f.end(), y[a]) - f.begin()) - 1, 0, n - 1);
      w[a] = {{j, 1.0}};
      continue;
    }
    const int jLo = std::clamp(
        static_cast<int>(std::upper_bound(f.begin(), f.end(), y[a] - kTail * s[a]) - f.begin()) - 1, 0, n - 1);
    const int jHi = std::clamp(
        static_cast<int>(std::lower_bound(f.begin(), f.end(), y[a] + kTail * s[a]) - f.begin()) - 1, jLo, n - 1);
    // Cumulative kernel mass below each face, 0 below the range and 1 above it: the weights telescope to exactly 1.
    w[a].clear();
    double below = 0.0;
    for (int j = jLo; j <= jHi; ++j) {
      const double upTo = j == jHi ? 1.0 : std::max(below, standardNormalCdf((f[j + 1] - y[a]) / s[a]));
      w[a].push_back({j, upTo - below});
      below = upTo;
    }
  }
  depositTensor(mesh, w, mass, field);
}

}  // namespace fpdp::solver
