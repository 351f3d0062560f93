#pragma once
// A local (ghosted) vector borrowed from a DM's pool for the length of one operation.
#include <petscdm.h>

#include "meshes/PetscHandles.hpp"

namespace fpdp::meshes {
/// A local (ghosted) vector of dm borrowed from the DM's pool (DMGetLocalVector) for one operation and given back at
/// the end of the scope: the objects that need a ghosted copy only while they work share the pool's vectors instead
/// of holding one each (peak memory, docs/scaling.md §6). Its values on entry are whatever the last borrower left.
class BorrowedLocalVector {
public:
  explicit BorrowedLocalVector(DM dm) : dm_(dm) { FPDP_PETSC(DMGetLocalVector(dm, &v_)); }
  BorrowedLocalVector(const BorrowedLocalVector&) = delete;
  BorrowedLocalVector& operator=(const BorrowedLocalVector&) = delete;
  ~BorrowedLocalVector() { (void)DMRestoreLocalVector(dm_, &v_); }
  operator Vec() const { return v_; }  // NOLINT: passed straight to PETSc calls

private:
  DM dm_;
  Vec v_ = nullptr;
};

}  // namespace fpdp::meshes
