#pragma once
// Exact cell averages of two Gaussians p, q on a uniform box mesh, as the interlaced (p, q) state the solver keeps,
// and the divergence functionals of it (point-value reconstruction + midpoint rule: the production path).
#include <petscvec.h>

#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"
#include "solver/functionals/Divergences.hpp"

namespace fpdp::testing {

inline meshes::DistributedBoxMesh uniformMesh(MPI_Comm comm, int dim, double L, int cells) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < dim; ++a) axes.push_back(meshes::Axis::uniform(-L, L, cells));
  return meshes::DistributedBoxMesh(comm, meshes::BoxMesh(axes), 2);
}

/// Fills u (a global vector of mesh.dm()) with the exact cell averages of p (field 0) and q (field 1).
inline void fillExactAverages(const meshes::DistributedBoxMesh& mesh, const models::Gaussian& p,
                              const models::Gaussian& q, Vec u) {
  PetscScalar* a;
  VecGetArray(u, &a);
  const int dim = mesh.dim();
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    std::array<double, 3> lo{0, 0, 0}, hi{0, 0, 0};
    const std::array<PetscInt, 3> c{i, j, k};
    for (int ax = 0; ax < dim; ++ax) {
      lo[ax] = mesh.box().axis(ax).face(static_cast<int>(c[ax]));
      hi[ax] = mesh.box().axis(ax).face(static_cast<int>(c[ax]) + 1);
    }
    a[2 * l] = p.cellAverage(lo, hi);
    a[2 * l + 1] = q.cellAverage(lo, hi);
  });
  VecRestoreArray(u, &a);
}

inline solver::DivergenceValues functionalsOfExactAverages(const models::Gaussian& p, const models::Gaussian& q,
                                                           double L, int cells, const solver::FunctionalSettings& s,
                                                           MPI_Comm comm = PETSC_COMM_WORLD) {
  const auto mesh = uniformMesh(comm, p.dim(), L, cells);
  auto u = mesh.createVector();
  fillExactAverages(mesh, p, q, u);
  const solver::DivergenceFunctionals f(mesh, s);
  return f.evaluate(u);
}

}  // namespace fpdp::testing
