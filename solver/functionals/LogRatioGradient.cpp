#include "solver/functionals/LogRatioGradient.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fpdp::solver {

namespace {
/// Weights of the derivative at node x[i] of the Lagrange interpolant through the nodes x[0..n): exact for
/// polynomials of degree n - 1, so order n - 1 for smooth functions, on any spacing.
std::array<double, 5> derivativeWeights(const double* x, int n, int i) {
  std::array<double, 5> w{};
  for (int j = 0; j < n; ++j) {
    if (j == i) {
      for (int k = 0; k < n; ++k)
        if (k != i) w[j] += 1.0 / (x[i] - x[k]);
      continue;
    }
    double num = 1.0, den = 1.0;
    for (int k = 0; k < n; ++k) {
      if (k != j) den *= x[j] - x[k];
      if (k != i && k != j) num *= x[i] - x[k];
    }
    w[j] = num / den;
  }
  return w;
}
}  // namespace

std::string LogRatioGradient::unsupportedReason(const meshes::DistributedBoxMesh& mesh) {
  PetscInt procs[3] = {1, 1, 1};
  FPDP_PETSC(DMDAGetInfo(mesh.dm(), nullptr, nullptr, nullptr, nullptr, &procs[0], &procs[1], &procs[2], nullptr,
                         nullptr, nullptr, nullptr, nullptr, nullptr));
  const PetscInt* ranges[3] = {nullptr, nullptr, nullptr};
  FPDP_PETSC(DMDAGetOwnershipRanges(mesh.dm(), &ranges[0], &ranges[1], &ranges[2]));
  for (int a = 0; a < mesh.dim(); ++a)
    for (PetscInt r = 0; r < procs[a]; ++r)
      if (ranges[a][r] < 2)
        return "a rank owns " + std::to_string(ranges[a][r]) + " cell(s) along axis " + std::to_string(a) +
               "; the gradient stencils of log r need at least 2 (use fewer ranks or more cells)";
  return "";
}

void LogRatioGradient::createWidthTwoTwin(PetscInt m, PetscInt n, PetscInt p, const PetscInt* const ranges[3]) {
  const auto& box = mesh_.box();
  const int dim = mesh_.dim();
  const DMBoundaryType none = DM_BOUNDARY_NONE;
  const PetscInt nx = box.cells(0), ny = dim > 1 ? box.cells(1) : 1, nz = dim > 2 ? box.cells(2) : 1;
  const PetscInt width = 2;  // no rank's share is smaller (checked above)
  switch (dim) {
    case 1:
      FPDP_PETSC(DMDACreate1d(mesh_.comm(), none, nx, 2, width, ranges[0], dm_.out()));
      break;
    case 2:
      FPDP_PETSC(DMDACreate2d(mesh_.comm(), none, none, DMDA_STENCIL_STAR, nx, ny, m, n, 2, width, ranges[0],
                              ranges[1], dm_.out()));
      break;
    default:
      FPDP_PETSC(DMDACreate3d(mesh_.comm(), none, none, none, DMDA_STENCIL_STAR, nx, ny, nz, m, n, p, 2, width,
                              ranges[0], ranges[1], ranges[2], dm_.out()));
  }
  FPDP_PETSC(DMSetUp(dm_));
  FPDP_PETSC(DMCreateLocalVector(dm_, local_.out()));
  PetscInt gxs, gys, gzs, gxm, gym, gzm;
  FPDP_PETSC(DMDAGetGhostCorners(dm_, &gxs, &gys, &gzs, &gxm, &gym, &gzm));
  ghosted_.start = {gxs, dim > 1 ? gys : 0, dim > 2 ? gzs : 0};
  ghosted_.count = {gxm, dim > 1 ? gym : 1, dim > 2 ? gzm : 1};
  PetscInt xs, ys, zs, xm, ym, zm;
  FPDP_PETSC(DMDAGetCorners(dm_, &xs, &ys, &zs, &xm, &ym, &zm));
  const auto& own = mesh_.owned();
  if (own.start[0] != xs || own.count[0] != xm || (dim > 1 && (own.start[1] != ys || own.count[1] != ym)) ||
      (dim > 2 && (own.start[2] != zs || own.count[2] != zm)))
    throw std::logic_error("LogRatioGradient: the width-2 DMDA does not reproduce the mesh's ownership");
}

LogRatioGradient::LogRatioGradient(const meshes::DistributedBoxMesh& mesh) : mesh_(mesh) {
  if (mesh.fields() != 2) throw std::invalid_argument("LogRatioGradient: the mesh must carry the 2 fields p and q");
  if (const std::string why = unsupportedReason(mesh); !why.empty()) throw std::runtime_error("LogRatioGradient: " + why);
  const auto& box = mesh.box();
  const int dim = mesh.dim();
  PetscInt m = 1, n = 1, p = 1;
  FPDP_PETSC(DMDAGetInfo(mesh.dm(), nullptr, nullptr, nullptr, nullptr, &m, &n, &p, nullptr, nullptr, nullptr,
                         nullptr, nullptr, nullptr));
  const PetscInt* ranges[3] = {nullptr, nullptr, nullptr};
  FPDP_PETSC(DMDAGetOwnershipRanges(mesh.dm(), &ranges[0], &ranges[1], &ranges[2]));
  if (meshes::ghostedIsOwned(mesh.dm())) {
    // One rank and no periodic axis: the ghosted block is the owned one at any width, so the global vector is read
    // directly (the width-2 twin and its local vector, about 40 B per cell of a 3-D run, are not needed).
    ghosted_ = mesh.owned();
  } else {
    createWidthTwoTwin(m, n, p, ranges);
  }
  for (int a = 0; a < dim; ++a) {
    const auto& ax = box.axis(a);
    const int N = ax.cells();
    stencils_[a].resize(static_cast<std::size_t>(N));
    for (int i = 0; i < N; ++i) {
      Stencil s;
      if (N == 2) {
        s.first = 0, s.count = 2;
      } else if (N < 5 || i < 2 || i > N - 3) {
        s.count = 3;
        s.first = i == 0 ? 0 : (i == N - 1 ? N - 3 : i - 1);
        if (i == 1) s.first = 0;
        if (i == N - 2) s.first = N - 3;
      } else {
        s.first = i - 2, s.count = 5;
      }
      double x[5];
      for (int k = 0; k < s.count; ++k) x[k] = ax.centre(s.first + k);
      s.weight = derivativeWeights(x, s.count, i - s.first);
      stencils_[a][static_cast<std::size_t>(i)] = s;
    }
  }
}

void LogRatioGradient::apply(Vec points, std::vector<std::array<double, 3>>& grad) const {
  // points has the layout and ownership of the width-2 DMDA's global vectors (checked at construction), so its
  // scatter reads points directly: no global copy (16 B per cell, docs/scaling.md §6).
  // One rank: points is its own ghosted block.
  lastPoints_ = points;
  if (dm_) {
    FPDP_PETSC(DMGlobalToLocalBegin(dm_, points, INSERT_VALUES, local_));
    FPDP_PETSC(DMGlobalToLocalEnd(dm_, points, INSERT_VALUES, local_));
  }
  const Vec source = dm_ ? local_.get() : points;
  const PetscScalar* a;
  FPDP_PETSC(VecGetArrayRead(source, &a));
  const auto& g = ghosted_;
  // u = log(p/q) on every ghosted cell (NaN where undefined). Ghost cells outside the star stencil are never read.
  std::vector<double> u(static_cast<std::size_t>(g.size()));
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t c = 0; c < u.size(); ++c) {
    const double p = a[2 * c], q = a[2 * c + 1];
    if (!(p > 0 && q > 0) || !std::isfinite(p) || !std::isfinite(q)) {
      u[c] = nan;
      continue;
    }
    const double rho = (p - q) / q;
    u[c] = std::fabs(rho) < 0.5 ? std::log1p(rho) : std::log(p) - std::log(q);
  }
  FPDP_PETSC(VecRestoreArrayRead(source, &a));
  const int dim = mesh_.dim();
  grad.assign(static_cast<std::size_t>(mesh_.owned().size()), {0.0, 0.0, 0.0});
  // The stencil's cells by strides from the centre (the same values in the same order as by their indices).
  const PetscInt stride[3] = {1, g.count[0], g.count[0] * g.count[1]};
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const std::array<PetscInt, 3> c{i, j, k};
    const PetscInt centre = g.local(i, j, k);
    for (int ax = 0; ax < dim; ++ax) {
      const Stencil& s = stencils_[ax][static_cast<std::size_t>(c[ax])];
      const double* first = u.data() + centre + (s.first - c[ax]) * stride[ax];
      double d = 0.0;
      for (int m = 0; m < s.count; ++m) d += s.weight[m] * first[m * stride[ax]];
      grad[l][ax] = d;
    }
  });
}

}  // namespace fpdp::solver
