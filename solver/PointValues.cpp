#include "solver/PointValues.hpp"

#include <cmath>

namespace fpdp::solver {

PointValueReconstruction::PointValueReconstruction(const meshes::DistributedBoxMesh& mesh) : mesh_(mesh) {
  FPDP_PETSC(DMCreateLocalVector(mesh.dm(), local_.out()));
}

void PointValueReconstruction::apply(Vec averages, Vec points) const {
  FPDP_PETSC(DMGlobalToLocalBegin(mesh_.dm(), averages, INSERT_VALUES, local_));
  FPDP_PETSC(DMGlobalToLocalEnd(mesh_.dm(), averages, INSERT_VALUES, local_));
  const PetscScalar* ub;
  PetscScalar* up;
  FPDP_PETSC(VecGetArrayRead(local_, &ub));
  FPDP_PETSC(VecGetArray(points, &up));
  const auto& g = mesh_.ghosted();
  const auto& box = mesh_.box();
  const int F = mesh_.fields(), dim = mesh_.dim();
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const std::array<PetscInt, 3> c{i, j, k};
    const PetscInt centre = g.local(i, j, k);
    for (int f = 0; f < F; ++f) {
      const double uc = ub[centre * F + f];
      double exponent = 0.0;
      if (uc > 0) {
        for (int a = 0; a < dim; ++a) {
          if (c[a] == 0 || c[a] == box.cells(a) - 1) continue;  // wall: no correction along this axis
          std::array<PetscInt, 3> m = c, p = c;
          --m[a];
          ++p[a];
          const double um = ub[g.local(m[0], m[1], m[2]) * F + f], up1 = ub[g.local(p[0], p[1], p[2]) * F + f];
          if (!(um > 0 && up1 > 0)) continue;
          // g_a and g_aa of g = log u by the three-point formulas on the (possibly graded) centres.
          const auto& ax = box.axis(a);
          const double xm = ax.centre(static_cast<int>(m[a])), x0 = ax.centre(static_cast<int>(c[a])),
                       xp = ax.centre(static_cast<int>(p[a]));
          const double lm = std::log(um), l0 = std::log(uc), lp = std::log(up1);
          const double g1 = (lp - lm) / (xp - xm);
          const double g2 = 2.0 * ((lp - l0) / (xp - x0) - (l0 - lm) / (x0 - xm)) / (xp - xm);
          const double h = ax.width(static_cast<int>(c[a]));
          exponent += h * h * (g2 + g1 * g1) / 24.0;
        }
      }
      up[l * F + f] = uc * std::exp(-exponent);
    }
  });
  FPDP_PETSC(VecRestoreArray(points, &up));
  FPDP_PETSC(VecRestoreArrayRead(local_, &ub));
}

}  // namespace fpdp::solver
