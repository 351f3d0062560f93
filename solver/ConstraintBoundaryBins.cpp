#include "solver/ConstraintBoundaryBins.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace fpdp::solver {

ConstraintBoundaryBins::ConstraintBoundaryBins(const meshes::BoxMesh& mesh, const models::ConstraintSet& constraint,
                                               int angularBins)
    : mesh_(mesh), constraint_(constraint), dim_(mesh.dim()) {
  if (constraint.isNone()) return;
  if (constraint.dimension() != dim_)
    throw std::invalid_argument("ConstraintBoundaryBins: the constraint has dimension " +
                                std::to_string(constraint.dimension()) + ", the mesh " + std::to_string(dim_));
  const char* axisName[3] = {"x", "y", "z"};
  if (constraint.kind() == models::ConstraintKind::Box) {
    long total = 1;
    for (int a = 0; a < dim_; ++a) {
      extendedStride_[a] = total;
      total *= mesh.cells(a) + 2;
    }
    extendedToBin_.assign(static_cast<std::size_t>(total), -1);
    for (long e = 0; e < total; ++e) {
      std::array<int, 3> code{0, 0, 0};
      bool onFace = false;
      std::string label;
      for (int a = 0; a < dim_; ++a) {
        code[a] = static_cast<int>((e / extendedStride_[a]) % (mesh.cells(a) + 2));
        const bool below = code[a] == 0, above = code[a] == mesh.cells(a) + 1;
        onFace = onFace || below || above;
        label += std::string(a ? "," : "") + axisName[a] +
                 (below ? "=lower" : above ? "=upper" : ":cell " + std::to_string(code[a] - 1));
      }
      if (!onFace) continue;
      extendedToBin_[static_cast<std::size_t>(e)] = static_cast<long>(labels_.size());
      labels_.push_back(label);
      codes_.push_back(code);
    }
    return;
  }
  // Ball.
  if (dim_ == 1) {
    labels_ = {"x=centre-radius", "x=centre+radius"};
    return;
  }
  const double h = mesh.minWidth();
  const double r = constraint.radius();
  azimuthBins_ = angularBins > 0 ? angularBins : std::max(4, static_cast<int>(std::ceil(2.0 * std::numbers::pi * r / h)));
  zBands_ = dim_ == 3 ? std::max(2, static_cast<int>(std::ceil(2.0 * r / h))) : 1;
  for (int z = 0; z < zBands_; ++z)
    for (int m = 0; m < azimuthBins_; ++m)
      labels_.push_back("angle bin " + std::to_string(m) + " of " + std::to_string(azimuthBins_) +
                        (dim_ == 3 ? ", z band " + std::to_string(z) + " of " + std::to_string(zBands_) : ""));
}

long ConstraintBoundaryBins::binOf(const double* theta, bool projected) const {
  switch (constraint_.kind()) {
    case models::ConstraintKind::None: return -1;
    case models::ConstraintKind::Box: {
      long e = 0;
      bool onFace = false;
      for (int a = 0; a < dim_; ++a) {
        int code;
        if (theta[a] == constraint_.lower()[a]) {
          code = 0;
          onFace = true;
        } else if (theta[a] == constraint_.upper()[a]) {
          code = mesh_.cells(a) + 1;
          onFace = true;
        } else {
          // A face point's inside coordinates lie within C; a C wider than the mesh puts them in the end cells.
          code = std::clamp(mesh_.axis(a).locate(theta[a]), 0, mesh_.cells(a) - 1) + 1;
        }
        e += code * extendedStride_[a];
      }
      return onFace ? extendedToBin_[static_cast<std::size_t>(e)] : -1;
    }
    case models::ConstraintKind::Ball: {
      if (!projected) return -1;
      const auto& c = constraint_.centre();
      if (dim_ == 1) return theta[0] < c[0] ? 0 : 1;
      const double phi = std::atan2(theta[1] - c[1], theta[0] - c[0]);  // [-pi, pi]
      int m = static_cast<int>(std::floor((phi + std::numbers::pi) / (2.0 * std::numbers::pi) * azimuthBins_));
      m = std::clamp(m, 0, azimuthBins_ - 1);
      int z = 0;
      if (dim_ == 3) {
        const double u = (theta[2] - c[2]) / constraint_.radius();  // equal-area bands in u (Archimedes)
        z = std::clamp(static_cast<int>(std::floor((u + 1.0) * 0.5 * zBands_)), 0, zBands_ - 1);
      }
      return static_cast<long>(z) * azimuthBins_ + m;
    }
  }
  return -1;
}

}  // namespace fpdp::solver
