#include "solver/functionals/PointValues.hpp"

#include <cfloat>
#include <cmath>

#include "meshes/BorrowedLocalVector.hpp"

namespace fpdp::solver {

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
          exponent += pointValueExponent(logU[im], logU[centre * F + f], logU[ip], geo.inverseLower[n],
                                         geo.inverseUpper[n], geo.inverseSpan[n], geo.width[n]);
        }
      }
      up[l * F + f] = uc * std::exp(-exponent);
    }
  });
  FPDP_PETSC(VecRestoreArray(points, &up));
  FPDP_PETSC(VecRestoreArrayRead(local, &ub));
}

void pointValuesOfWholeField(const meshes::BoxMesh& mesh, const double* averages, double* points) {
  const std::size_t N = mesh.totalCells();
  std::vector<double> logU(N), exponent(N, 0.0);
  for (std::size_t c = 0; c < N; ++c) logU[c] = averages[c] >= DBL_MIN ? std::log(averages[c]) : 0.0;
  for (int a = 0; a < mesh.dim(); ++a) {
    const auto& ax = mesh.axis(a);
    const int n = ax.cells();
    // The reciprocal centre distances per index of the axis, once (not per cell of every line).
    std::vector<double> inverseLower(static_cast<std::size_t>(n));
    std::vector<double> inverseUpper(inverseLower), inverseSpan(inverseLower);
    for (int i = 1; i + 1 < n; ++i) {
      const double xm = ax.centre(i - 1), x0 = ax.centre(i), xp = ax.centre(i + 1);
      inverseLower[i] = 1.0 / (x0 - xm);
      inverseUpper[i] = 1.0 / (xp - x0);
      inverseSpan[i] = 1.0 / (xp - xm);
    }
    mesh.forEachLine(a, [&](const meshes::BoxMesh::Line& line) {
      for (int i = 1; i + 1 < n; ++i) {  // wall cells: no correction along this axis
        const std::ptrdiff_t c = line.offset + i * line.stride, m = c - line.stride, p = c + line.stride;
        if (!(averages[c] >= DBL_MIN && averages[m] >= DBL_MIN && averages[p] >= DBL_MIN)) continue;
        exponent[static_cast<std::size_t>(c)] += pointValueExponent(
            logU[static_cast<std::size_t>(m)], logU[static_cast<std::size_t>(c)], logU[static_cast<std::size_t>(p)],
            inverseLower[i], inverseUpper[i], inverseSpan[i], ax.width(i));
      }
    });
  }
  for (std::size_t c = 0; c < N; ++c) points[c] = averages[c] * std::exp(-exponent[c]);
}

}  // namespace fpdp::solver
