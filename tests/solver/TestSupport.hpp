#pragma once
// Small helpers shared by the solver tests: vectors from literals, and a normalised Gaussian initial state.
#include <petscvec.h>

#include <initializer_list>

#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"

namespace fpdp::testing {

inline models::Vector vec(std::initializer_list<double> v) {
  models::Vector x(static_cast<Eigen::Index>(v.size()));
  Eigen::Index i = 0;
  for (double a : v) x[i++] = a;
  return x;
}

/// Sets both interlaced fields of u (p and q) to the exact cell averages of g0, normalised to unit discrete mass.
inline void setNormalisedGaussianState(const meshes::DistributedBoxMesh& mesh, Vec u, const models::Gaussian& g0) {
  PetscScalar* a;
  VecGetArray(u, &a);
  double localMass = 0;
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const auto [lo, hi] = mesh.box().cellBounds(i, j, k);
    a[2 * l] = a[2 * l + 1] = g0.cellAverage(lo, hi);
    localMass += mesh.ownedVolumes()[l] * a[2 * l];
  });
  double mass;
  MPI_Allreduce(&localMass, &mass, 1, MPI_DOUBLE, MPI_SUM, mesh.comm());
  for (PetscInt l = 0; l < 2 * static_cast<PetscInt>(mesh.owned().size()); ++l) a[l] /= mass;
  VecRestoreArray(u, &a);
}

}  // namespace fpdp::testing
