#include "validation/CellErrors.hpp"

#include <cmath>
#include <optional>

#include "solver/discretisation/LangevinDiscretisation.hpp"

namespace fpdp::validation {

CellErrors cellErrors(const meshes::DistributedBoxMesh& mesh, Vec u, const models::Gaussian& lawP,
                      const models::Gaussian& lawQ, meshes::FieldRepresentation representation) {
  const bool points = representation == meshes::FieldRepresentation::PointValues;
  const models::Gaussian* laws[2] = {&lawP, &lawQ};
  const auto& vol = mesh.ownedVolumes();
  std::optional<models::TensorCellAverages> averages[2];
  if (!points)
    for (int f = 0; f < 2; ++f) averages[f].emplace(solver::ownedCellAverages(*laws[f], mesh));
  const PetscScalar* a;
  FPDP_PETSC(VecGetArrayRead(u, &a));
  double l1[2] = {0, 0}, rel[2] = {0, 0};
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    for (int f = 0; f < 2; ++f) {
      double exact;
      if (points) {
        models::Vector x(mesh.dim());
        const auto centre = mesh.box().centre(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
        for (int a = 0; a < mesh.dim(); ++a) x[a] = centre[static_cast<std::size_t>(a)];
        exact = laws[f]->density(x);
      } else {
        exact = (*averages[f])(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
      }
      const double err = std::fabs(a[2 * l + f] - exact);
      l1[f] += vol[l] * err;
      if (exact > 0) rel[f] = std::max(rel[f], err / exact);
    }
  });
  FPDP_PETSC(VecRestoreArrayRead(u, &a));
  double gl1[2], grel[2];
  FPDP_PETSC(MPI_Allreduce(l1, gl1, 2, MPI_DOUBLE, MPI_SUM, mesh.comm()));
  FPDP_PETSC(MPI_Allreduce(rel, grel, 2, MPI_DOUBLE, MPI_MAX, mesh.comm()));
  return {gl1[0], gl1[1], grel[0], grel[1]};
}

}  // namespace fpdp::validation
