#pragma once
// The values of a global vector with their ghost layer, for reading, borrowed for the length of one operation.
#include <petscdmda.h>

#include "meshes/DistributedBoxMesh.hpp"
#include "meshes/PetscHandles.hpp"

namespace fpdp::meshes {
/// The ghosted values of a global vector x of the DMDA dm, for reading during one operation. Where the ghosted block
/// is the owned one (one rank, no periodic axis) that is x itself, read in place; elsewhere a local vector
/// borrowed from the DM's pool (DMGetLocalVector), the ghosts exchanged, and given back at the end of the scope:
/// the objects that need a ghosted copy only while they work share the pool's vectors instead of holding one each,
/// and on one rank none is made (peak memory, docs/scaling.md §6). x must not change while this is alive.
class BorrowedLocalVector {
public:
  BorrowedLocalVector(DM dm, Vec x) : dm_(dm) {
    if (ghostedIsOwned(dm)) {
      v_ = x;
      return;
    }
    FPDP_PETSC(DMGetLocalVector(dm, &v_));
    borrowed_ = true;
    FPDP_PETSC(DMGlobalToLocalBegin(dm, x, INSERT_VALUES, v_));
    FPDP_PETSC(DMGlobalToLocalEnd(dm, x, INSERT_VALUES, v_));
  }
  BorrowedLocalVector(const BorrowedLocalVector&) = delete;
  BorrowedLocalVector& operator=(const BorrowedLocalVector&) = delete;
  ~BorrowedLocalVector() {
    if (borrowed_) (void)DMRestoreLocalVector(dm_, &v_);
  }
  operator Vec() const { return v_; }  // NOLINT: passed straight to PETSc calls

private:
  DM dm_;
  Vec v_ = nullptr;
  bool borrowed_ = false;
};

}  // namespace fpdp::meshes
