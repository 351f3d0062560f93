#include "meshes/DistributedBoxMesh.hpp"

#include <algorithm>

#include <stdexcept>
#include <string>

namespace fpdp::meshes {

DistributedBoxMesh::DistributedBoxMesh(MPI_Comm comm, BoxMesh mesh, int fields, StencilShape stencil, int stencilWidth)
    : mesh_(std::move(mesh)), fields_(fields), stencil_(stencil), stencilWidth_(stencilWidth) {
  if (fields < 1) throw std::invalid_argument("DistributedBoxMesh: fields must be >= 1");
  if (stencilWidth < 1 || stencilWidth > 2) throw std::invalid_argument("DistributedBoxMesh: stencil width must be 1 or 2");
  if (mesh_.dim() > 3)
    throw std::invalid_argument("DistributedBoxMesh: PETSc's DMDA holds at most 3 axes, the mesh has " +
                                std::to_string(mesh_.dim()));
  const PetscInt sw = stencilWidth;
  const DMBoundaryType none = DM_BOUNDARY_NONE;
  const PetscInt nx = mesh_.cells(0), ny = mesh_.cells(1), nz = mesh_.cells(2);
  const DMDAStencilType shape = stencil == StencilShape::Box ? DMDA_STENCIL_BOX : DMDA_STENCIL_STAR;
  switch (mesh_.dim()) {
    case 1:
      FPDP_PETSC(DMDACreate1d(comm, none, nx, fields, sw, nullptr, dm_.out()));
      break;
    case 2:
      FPDP_PETSC(DMDACreate2d(comm, none, none, shape, nx, ny, PETSC_DECIDE, PETSC_DECIDE, fields, sw,
                              nullptr, nullptr, dm_.out()));
      break;
    default:
      FPDP_PETSC(DMDACreate3d(comm, none, none, none, shape, nx, ny, nz, PETSC_DECIDE, PETSC_DECIDE,
                              PETSC_DECIDE, fields, sw, nullptr, nullptr, nullptr, dm_.out()));
  }
  // No DMSetFromOptions: the mesh comes from the case file only, so -da_grid_x cannot silently override it.
  if (fields > 1) {
    // Field f couples only to field f, in its own cell and in the neighbours.
    std::vector<PetscInt> identity(static_cast<std::size_t>(fields * fields), 0);
    for (int f = 0; f < fields; ++f) identity[f * fields + f] = 1;
    FPDP_PETSC(DMDASetBlockFills(dm_, identity.data(), identity.data()));
  }
  // A box stencil is a superset: matrices get only the entries the operator sets (e.g. the 7 of 9 neighbours of
  // the oriented mixed-derivative stencil in 2-D, 13 of 27 in 3-D), not explicit zeros for the rest, which would
  // only add fill to the LU factors.
  if (stencil == StencilShape::Box) FPDP_PETSC(DMSetMatrixPreallocateOnly(dm_, PETSC_TRUE));
  FPDP_PETSC(DMSetUp(dm_));
  owned_ = dmdaBlock(dm_, false);
  ghosted_ = dmdaBlock(dm_, true);
  volumes_.resize(static_cast<std::size_t>(owned_.size()));
  forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) { volumes_[l] = mesh_.cellVolume(i, j, k); });
}

OwnedBlock dmdaBlock(DM dm, bool ghosted) {
  PetscInt dim = 0, s[3], m[3];
  FPDP_PETSC(DMDAGetInfo(dm, &dim, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                         nullptr, nullptr, nullptr));
  if (ghosted)
    FPDP_PETSC(DMDAGetGhostCorners(dm, &s[0], &s[1], &s[2], &m[0], &m[1], &m[2]));
  else
    FPDP_PETSC(DMDAGetCorners(dm, &s[0], &s[1], &s[2], &m[0], &m[1], &m[2]));
  OwnedBlock b;
  for (PetscInt a = 0; a < dim; ++a) b.start[static_cast<std::size_t>(a)] = s[a], b.count[static_cast<std::size_t>(a)] = m[a];
  return b;
}

bool ghostedIsOwned(DM dm) {
  const OwnedBlock owned = dmdaBlock(dm, false), ghosted = dmdaBlock(dm, true);
  return owned.start == ghosted.start && owned.count == ghosted.count;
}

MPI_Comm DistributedBoxMesh::comm() const { return PetscObjectComm(reinterpret_cast<PetscObject>(dm_.get())); }

VecHandle DistributedBoxMesh::createVector() const {
  VecHandle v;
  FPDP_PETSC(DMCreateGlobalVector(dm_, v.out()));
  return v;
}

DM DistributedBoxMesh::scalarDM() const {
  if (!scalarDm_) FPDP_PETSC(DMDACreateCompatibleDMDA(dm_, 1, scalarDm_.out()));
  return scalarDm_;
}

VecHandle DistributedBoxMesh::createScalarVector() const {
  VecHandle v;
  FPDP_PETSC(DMCreateGlobalVector(scalarDM(), v.out()));
  return v;
}

void copyLocalValues(Vec v, double* out) {
  PetscInt n;
  const PetscScalar* a;
  FPDP_PETSC(VecGetLocalSize(v, &n));
  FPDP_PETSC(VecGetArrayRead(v, &a));
  std::copy(a, a + n, out);
  FPDP_PETSC(VecRestoreArrayRead(v, &a));
}

std::vector<double> localValues(Vec v) {
  PetscInt n;
  FPDP_PETSC(VecGetLocalSize(v, &n));
  std::vector<double> out(static_cast<std::size_t>(n));
  copyLocalValues(v, out.data());
  return out;
}

MatHandle DistributedBoxMesh::createMatrix() const {
  MatHandle A;
  if (dim() > 1 || stencilWidth_ < 2) {
    FPDP_PETSC(DMCreateMatrix(dm_, A.out()));
    return A;
  }
  // 1-D, width w: each row couples to the 2w + 1 cells around it, every field to every field (what DMCreateMatrix
  // allocates for a star stencil); the stencil indices are the ghosted block's, the columns mapped to global ones.
  const PetscInt dof = fields_, w = stencilWidth_;
  const PetscInt ownedRows = owned_.count[0] * dof;
  FPDP_PETSC(MatCreate(comm(), A.out()));
  FPDP_PETSC(MatSetSizes(A, ownedRows, ownedRows, PETSC_DETERMINE, PETSC_DETERMINE));
  FPDP_PETSC(MatSetType(A, MATAIJ));
  FPDP_PETSC(MatSeqAIJSetPreallocation(A, (2 * w + 1) * dof, nullptr));
  FPDP_PETSC(MatMPIAIJSetPreallocation(A, (2 * w + 1) * dof, nullptr, 2 * w * dof, nullptr));
  ISLocalToGlobalMapping map;
  FPDP_PETSC(DMGetLocalToGlobalMapping(dm_, &map));
  FPDP_PETSC(MatSetLocalToGlobalMapping(A, map, map));
  const PetscInt dims[1] = {ghosted_.count[0]}, starts[1] = {ghosted_.start[0]};
  FPDP_PETSC(MatSetStencil(A, 1, dims, starts, dof));
  FPDP_PETSC(MatSetOption(A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_TRUE));
  return A;
}

}  // namespace fpdp::meshes
