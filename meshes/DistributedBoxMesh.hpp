#pragma once
// A BoxMesh distributed over MPI ranks with a PETSc DMDA (`fields` unknowns per cell, interlaced; stencil of width 1,
// star (face neighbours) by default or box (face, edge and corner neighbours, needed by the mixed derivatives of a
// full diffusion matrix, solver/discretisation/FokkerPlanckOperator.hpp); no periodicity: the walls are handled by the flux terms,
// which simply omit the wall faces).
// The fields are uncoupled in space (each couples only to itself in neighbouring cells), which the DMDA is told
// so that matrices hold no blocks that are always zero.
//
// Rank-local geometry (cell widths, centres, volumes of the owned cells) is computed once here, so no
// callback recomputes it.
#include <petscdmda.h>

#include <array>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include "meshes/PetscHandles.hpp"

namespace fpdp::meshes {

using DMHandle = PetscHandle<DM, DMDestroy>;
using VecHandle = PetscHandle<Vec, VecDestroy>;
using MatHandle = PetscHandle<Mat, MatDestroy>;

/// A copy of this rank's values of v (its local array).
std::vector<double> localValues(Vec v);
/// The same into out, which must hold v's local size.
void copyLocalValues(Vec v, double* out);

/// Index range owned by this rank along each axis: [start[a], start[a] + count[a]).
struct OwnedBlock {
  std::array<PetscInt, 3> start{0, 0, 0};
  std::array<PetscInt, 3> count{1, 1, 1};
  PetscInt size() const { return count[0] * count[1] * count[2]; }
  /// Position of owned cell (i, j, k) in the rank-local array of a global vector.
  PetscInt local(PetscInt i, PetscInt j, PetscInt k) const {
    return (i - start[0]) + count[0] * ((j - start[1]) + count[1] * (k - start[2]));
  }
};

/// This rank's block of a DMDA: its owned cells, or with ghosted its owned cells and ghost layer (axes beyond the
/// DMDA's dimension: start 0, count 1).
OwnedBlock dmdaBlock(DM dm, bool ghosted);
/// Whether this rank's ghosted block of the DMDA is its owned block (one rank, no periodic axis): a global vector's
/// array is then its own ghosted layout, read without a ghost exchange.
bool ghostedIsOwned(DM dm);

/// Which neighbours a cell's matrix row may couple to: the 2d face neighbours (Star) or all 3^d - 1 (Box).
enum class StencilShape { Star, Box };

class DistributedBoxMesh {
public:
  /// `stencilWidth` is the ghost width: 1 for the second-order operators, 2 for the fourth-order fluxes.
  DistributedBoxMesh(MPI_Comm comm, BoxMesh mesh, int fields = 1, StencilShape stencil = StencilShape::Star,
                     int stencilWidth = 1);

  const BoxMesh& box() const { return mesh_; }
  int dim() const { return mesh_.dim(); }
  DM dm() const { return dm_; }
  MPI_Comm comm() const;
  int fields() const { return fields_; }
  StencilShape stencil() const { return stencil_; }
  int stencilWidth() const { return stencilWidth_; }
  const OwnedBlock& owned() const { return owned_; }

  /// Owned block grown by the stencil ghost layer (what a local vector holds).
  const OwnedBlock& ghosted() const { return ghosted_; }
  /// Volumes of the owned cells, in local order.
  const std::vector<double>& ownedVolumes() const { return volumes_; }

  /// A global vector with fields() interlaced unknowns per cell.
  VecHandle createVector() const;
  /// A matrix on the layout, preallocated for the stencil, that takes MatSetValuesStencil. Collective. PETSc's
  /// DMCreateMatrix refuses a 1-D DMDA of stencil width 2 (the fourth-order fluxes); that one is built here.
  MatHandle createMatrix() const;
  /// A global vector with one unknown per cell on the same layout (for a single field, e.g. output). Collective.
  VecHandle createScalarVector() const;
  /// The DMDA of one unknown per cell on the same layout, made on the first call (collective then, so every rank
  /// must make it): a run without field output never holds its index maps, some 20 B per cell in 3-D.
  DM scalarDM() const;

  /// Calls f(i, j, k, localIndex) for every owned cell, x fastest.
  template <class F>
  void forEachOwnedCell(F&& f) const {
    const auto& o = owned_;
    PetscInt l = 0;
    for (PetscInt k = o.start[2]; k < o.start[2] + o.count[2]; ++k)
      for (PetscInt j = o.start[1]; j < o.start[1] + o.count[1]; ++j)
        for (PetscInt i = o.start[0]; i < o.start[0] + o.count[0]; ++i, ++l) f(i, j, k, l);
  }

private:
  BoxMesh mesh_;
  int fields_;
  StencilShape stencil_;
  int stencilWidth_ = 1;
  DMHandle dm_;
  mutable DMHandle scalarDm_;  // null until scalarDM() is first called
  OwnedBlock owned_;
  OwnedBlock ghosted_;
  std::vector<double> volumes_;
};

}  // namespace fpdp::meshes
