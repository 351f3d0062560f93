#include "solver/functionals/PointValues.hpp"

#include <cfloat>
#include <cmath>

#include "meshes/BorrowedLocalVector.hpp"

namespace fpdp::solver {

namespace {
constexpr double kLargestCurvatureCorrection = 1.0;  // in the exponent: a factor e
}

PointValueReconstruction::PointValueReconstruction(const meshes::DistributedBoxMesh& mesh) : mesh_(mesh) {
  for (int a = 0; a < mesh.dim(); ++a) {
    auto& g = axes_[static_cast<std::size_t>(a)];
    const auto& ax = mesh.box().axis(a);
    g.first = mesh.owned().start[static_cast<std::size_t>(a)];
    g.cells = mesh.box().cells(a);
    const PetscInt n = mesh.owned().count[static_cast<std::size_t>(a)];
    for (PetscInt c = g.first; c < g.first + n; ++c) {
      const bool interior = c > 0 && c < g.cells - 1;  // walls get no correction along this axis
      const double xm = interior ? ax.centre(static_cast<int>(c - 1)) : 0.0, x0 = ax.centre(static_cast<int>(c)),
                   xp = interior ? ax.centre(static_cast<int>(c + 1)) : 0.0;
      // Wall cells are never read (apply skips them); 0 there instead of 1/0 keeps the set-up free of a division by
      // zero, so that a run under PETSc's -fp_trap does not stop here.
      g.inverseLower.push_back(interior ? 1.0 / (x0 - xm) : 0.0);
      g.inverseUpper.push_back(interior ? 1.0 / (xp - x0) : 0.0);
      g.inverseSpan.push_back(interior ? 1.0 / (xp - xm) : 0.0);
      g.width.push_back(ax.width(static_cast<int>(c)));
    }
  }
}

void PointValueReconstruction::apply(Vec averages, Vec points) const {
  const meshes::BorrowedLocalVector local(mesh_.dm(), averages);
  const PetscScalar* ub;
  PetscScalar* up;
  FPDP_PETSC(VecGetArrayRead(local, &ub));
  FPDP_PETSC(VecGetArray(points, &up));
  // The logarithms of the ghosted averages, once each (the stencils below use each up to 2 d + 1 times); only those
  // of normal values (>= DBL_MIN) are read.
  PetscInt nLocal;
  FPDP_PETSC(VecGetLocalSize(local, &nLocal));
  std::vector<double> logWork(static_cast<std::size_t>(nLocal));  // a local: freed before the next time step
  for (PetscInt i = 0; i < nLocal; ++i) logWork[i] = ub[i] >= DBL_MIN ? std::log(ub[i]) : 0.0;
  const double* logU = logWork.data();
  const auto& g = mesh_.ghosted();
  const int F = mesh_.fields(), dim = mesh_.dim();
  // Strides of the ghosted layout per axis, in values.
  const PetscInt stride[3] = {F, F * g.count[0], F * g.count[0] * g.count[1]};
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const std::array<PetscInt, 3> c{i, j, k};
    const PetscInt centre = g.local(i, j, k);
    for (int f = 0; f < F; ++f) {
      const double uc = ub[centre * F + f];
      double exponent = 0.0;
      // Subnormal values carry few significant digits: their logarithms are not the density's, so they count as
      // unresolved (no correction from or at them).
      if (uc >= DBL_MIN) {
        for (int a = 0; a < dim; ++a) {
          const auto& geo = axes_[static_cast<std::size_t>(a)];
          if (c[a] == 0 || c[a] == geo.cells - 1) continue;  // wall: no correction along this axis
          const PetscInt im = centre * F + f - stride[a], ip = centre * F + f + stride[a];
          const double um = ub[im], up1 = ub[ip];
          if (!(um >= DBL_MIN && up1 >= DBL_MIN)) continue;
          // g_a and g_aa of g = log u by the three-point formulas on the (possibly graded) centres.
          const std::size_t n = static_cast<std::size_t>(c[a] - geo.first);
          const double lm = logU[im], l0 = logU[centre * F + f], lp = logU[ip];
          const double g1 = (lp - lm) * geo.inverseSpan[n];
          const double g2 = 2.0 * ((lp - l0) * geo.inverseUpper[n] - (l0 - lm) * geo.inverseLower[n]) * geo.inverseSpan[n];
          const double h = geo.width[n];
          // The correction is O(h^2) where log u is resolved on the mesh. Its curvature part h^2 g_aa / 24 beyond 1
          // (a factor e) means log u is not resolved there: a spike or cliff in the far tail (next to underflow, or
          // a kernel narrower than the cell), where extrapolating could scale a 1e-300 average up by e^38 or more;
          // such an axis gets no correction. (The slope part h^2 g_a^2 / 24 only ever lowers the value, and is the
          // right correction for the steep but resolved log-linear flanks of a tail.)
          if (std::fabs(h * h * g2) > 24.0 * kLargestCurvatureCorrection) continue;
          exponent += h * h * (g2 + g1 * g1) / 24.0;
        }
      }
      up[l * F + f] = uc * std::exp(-exponent);
    }
  });
  FPDP_PETSC(VecRestoreArray(points, &up));
  FPDP_PETSC(VecRestoreArrayRead(local, &ub));
}

}  // namespace fpdp::solver
