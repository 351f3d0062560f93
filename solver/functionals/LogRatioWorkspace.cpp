#include "solver/functionals/LogRatioWorkspace.hpp"

// PetscObjectStateGet, the counter every change of a PETSc object advances, is declared in PETSc's implementation
// header (exported, but not in the public headers of PETSc 3.18).
#include <petsc/private/petscimpl.h>

namespace fpdp::solver {

void LogRatioWorkspace::fillPoints(Vec u, bool pointValues) {
  PetscObjectId id;
  PetscObjectState state;
  FPDP_PETSC(PetscObjectGetId(reinterpret_cast<PetscObject>(u), &id));
  FPDP_PETSC(PetscObjectStateGet(reinterpret_cast<PetscObject>(u), &state));
  int fresh = id == sourceId_ && state == sourceState_ && pointValues == sourcePointValues_ ? 1 : 0, all = 0;
  FPDP_PETSC(MPI_Allreduce(&fresh, &all, 1, MPI_INT, MPI_MIN, mesh->comm()));  // every rank takes the same path
  if (all) return;
  writablePoints();
  if (pointValues) FPDP_PETSC(VecCopy(u, points));
  else reconstruction.apply(u, points);
  sourceId_ = id, sourceState_ = state, sourcePointValues_ = pointValues;
  gradientValid_ = false;
}

const std::vector<std::array<double, 3>>& LogRatioWorkspace::logRatioGradient() {
  if (!gradientValid_) gradient->apply(points, gradientValues_);
  gradientValid_ = true;
  return gradientValues_;
}

}  // namespace fpdp::solver
