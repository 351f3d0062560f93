#include "solver/GeometricMultigrid.hpp"

#include <petscdmda.h>
#include <petscksp.h>

#include <algorithm>
#include <string>

namespace fpdp::solver {

int multigridLevels(const meshes::DistributedBoxMesh& mesh, int minCoarseCells) {
  PetscInt procs[3] = {1, 1, 1};
  FPDP_PETSC(DMDAGetInfo(mesh.dm(), nullptr, nullptr, nullptr, nullptr, &procs[0], &procs[1], &procs[2], nullptr,
                         nullptr, nullptr, nullptr, nullptr, nullptr));
  int levels = 1;
  for (long factor = 2;; factor *= 2) {
    bool ok = true;
    for (int a = 0; a < mesh.dim(); ++a) {
      const long n = mesh.box().cells(a);
      // Q0 coarsening halves the cell count exactly; each rank must keep at least 2 cells of the coarse axis.
      ok = ok && n % factor == 0 && n / factor >= minCoarseCells && n / factor >= 2 * procs[a];
    }
    if (!ok) break;
    ++levels;
  }
  return levels;
}

namespace {
bool optionGiven(const char* prefix, const char* name) {
  PetscBool set = PETSC_FALSE;
  FPDP_PETSC(PetscOptionsHasName(nullptr, prefix, name, &set));
  return set == PETSC_TRUE;
}
}  // namespace

void configureGeometricMultigrid(PC pc, const meshes::DistributedBoxMesh& mesh, const char* optionsPrefix) {
  FPDP_PETSC(DMDASetInterpolationType(mesh.dm(), DMDA_Q0));
  if (!optionGiven(optionsPrefix, "-pc_mg_levels"))
    FPDP_PETSC(PCMGSetLevels(pc, multigridLevels(mesh), nullptr));
  if (!optionGiven(optionsPrefix, "-pc_mg_galerkin")) FPDP_PETSC(PCMGSetGalerkin(pc, PC_MG_GALERKIN_BOTH));
  PetscInt levels = 1;
  FPDP_PETSC(PCMGGetLevels(pc, &levels));
  const bool kspGiven = optionGiven(optionsPrefix, "-mg_levels_ksp_type");
  const bool pcGiven = optionGiven(optionsPrefix, "-mg_levels_pc_type");
  for (PetscInt l = 1; l < levels; ++l) {
    KSP smoother;
    PC smootherPc;
    FPDP_PETSC(PCMGGetSmoother(pc, l, &smoother));
    if (!kspGiven) {
      FPDP_PETSC(KSPSetType(smoother, KSPRICHARDSON));
      FPDP_PETSC(KSPSetTolerances(smoother, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT, 1));
    }
    FPDP_PETSC(KSPGetPC(smoother, &smootherPc));
    if (!pcGiven) {
      FPDP_PETSC(PCSetType(smootherPc, PCSOR));
      FPDP_PETSC(PCSORSetSymmetric(smootherPc, SOR_LOCAL_SYMMETRIC_SWEEP));
    }
  }
}

}  // namespace fpdp::solver
