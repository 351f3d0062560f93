#include "solver/GeometricMultigrid.hpp"

#include <petscdmda.h>
#include <petscksp.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

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

Mat cellCentredBilinearInterpolation(DM coarse, DM fine) {
  PetscInt dim = 0, dof = 0, Mc[3] = {1, 1, 1}, Mf[3] = {1, 1, 1};
  FPDP_PETSC(DMDAGetInfo(fine, &dim, &Mf[0], &Mf[1], &Mf[2], nullptr, nullptr, nullptr, &dof, nullptr, nullptr,
                         nullptr, nullptr, nullptr));
  FPDP_PETSC(DMDAGetInfo(coarse, nullptr, &Mc[0], &Mc[1], &Mc[2], nullptr, nullptr, nullptr, nullptr, nullptr,
                         nullptr, nullptr, nullptr, nullptr));
  for (PetscInt a = 0; a < dim; ++a)
    if (Mf[a] != 2 * Mc[a])
      throw std::invalid_argument("cellCentredBilinearInterpolation: the coarse DMDA does not halve the fine one");
  PetscInt fs[3], fm[3], fgs[3], fgm[3], cs[3], cm[3], cgs[3], cgm[3];
  FPDP_PETSC(DMDAGetCorners(fine, &fs[0], &fs[1], &fs[2], &fm[0], &fm[1], &fm[2]));
  FPDP_PETSC(DMDAGetGhostCorners(fine, &fgs[0], &fgs[1], &fgs[2], &fgm[0], &fgm[1], &fgm[2]));
  FPDP_PETSC(DMDAGetCorners(coarse, &cs[0], &cs[1], &cs[2], &cm[0], &cm[1], &cm[2]));
  FPDP_PETSC(DMDAGetGhostCorners(coarse, &cgs[0], &cgs[1], &cgs[2], &cgm[0], &cgm[1], &cgm[2]));
  ISLocalToGlobalMapping ltogF, ltogC;
  FPDP_PETSC(DMGetLocalToGlobalMapping(fine, &ltogF));
  FPDP_PETSC(DMGetLocalToGlobalMapping(coarse, &ltogC));
  const PetscInt *idxF, *idxC;
  FPDP_PETSC(ISLocalToGlobalMappingGetBlockIndices(ltogF, &idxF));
  FPDP_PETSC(ISLocalToGlobalMappingGetBlockIndices(ltogC, &idxC));
  MPI_Comm comm;
  FPDP_PETSC(PetscObjectGetComm(reinterpret_cast<PetscObject>(fine), &comm));
  Mat P;
  FPDP_PETSC(MatCreate(comm, &P));
  FPDP_PETSC(MatSetSizes(P, fm[0] * fm[1] * fm[2] * dof, cm[0] * cm[1] * cm[2] * dof, PETSC_DETERMINE,
                         PETSC_DETERMINE));
  FPDP_PETSC(MatSetType(P, MATAIJ));
  const PetscInt perRow = PetscInt(1) << dim;
  FPDP_PETSC(MatSeqAIJSetPreallocation(P, perRow, nullptr));
  FPDP_PETSC(MatMPIAIJSetPreallocation(P, perRow, nullptr, perRow, nullptr));
  // Per axis: fine cell i lies in coarse cell i/2, a quarter of a coarse width from its centre towards the coarse
  // neighbour on its own side (i even: I - 1, i odd: I + 1); linear interpolation between the two coarse centres
  // gives weights 3/4 and 1/4. At a wall the missing neighbour's weight goes to the own cell (constant extrapolation,
  // the no-flux condition's mirror).
  std::array<std::array<PetscInt, 2>, 3> I{};
  std::array<std::array<double, 2>, 3> W{};
  std::array<int, 3> count{};
  for (PetscInt k = fs[2]; k < fs[2] + fm[2]; ++k)
    for (PetscInt j = fs[1]; j < fs[1] + fm[1]; ++j)
      for (PetscInt i = fs[0]; i < fs[0] + fm[0]; ++i) {
        const PetscInt f[3] = {i, j, k};
        for (PetscInt a = 0; a < 3; ++a) {
          if (a >= dim) {
            I[a] = {0, 0}, W[a] = {1.0, 0.0}, count[a] = 1;
            continue;
          }
          const PetscInt own = f[a] / 2, other = f[a] % 2 == 0 ? own - 1 : own + 1;
          if (other < 0 || other >= Mc[a]) {
            I[a] = {own, own}, W[a] = {1.0, 0.0}, count[a] = 1;
          } else {
            I[a] = {own, other}, W[a] = {0.75, 0.25}, count[a] = 2;
          }
        }
        auto coarseBlock = [&](PetscInt ci, PetscInt cj, PetscInt ck) {
          const PetscInt li = ci - cgs[0], lj = cj - cgs[1], lk = ck - cgs[2];
          if (li < 0 || li >= cgm[0] || lj < 0 || lj >= cgm[1] || lk < 0 || lk >= cgm[2])
            throw std::runtime_error("cellCentredBilinearInterpolation: a coarse neighbour lies beyond the ghost layer");
          return idxC[li + cgm[0] * (lj + cgm[1] * lk)];
        };
        const PetscInt fineBlock = idxF[(i - fgs[0]) + fgm[0] * ((j - fgs[1]) + fgm[1] * (k - fgs[2]))];
        PetscInt cols[8];
        double vals[8];
        int n = 0;
        for (int c = 0; c < count[2]; ++c)
          for (int b = 0; b < count[1]; ++b)
            for (int a = 0; a < count[0]; ++a) {
              cols[n] = coarseBlock(I[0][a], I[1][b], I[2][c]);
              vals[n] = W[0][a] * W[1][b] * W[2][c];
              ++n;
            }
        for (PetscInt comp = 0; comp < dof; ++comp) {
          const PetscInt row = fineBlock * dof + comp;
          PetscInt dofCols[8];
          for (int m = 0; m < n; ++m) dofCols[m] = cols[m] * dof + comp;
          FPDP_PETSC(MatSetValues(P, 1, &row, n, dofCols, vals, INSERT_VALUES));
        }
      }
  FPDP_PETSC(ISLocalToGlobalMappingRestoreBlockIndices(ltogF, &idxF));
  FPDP_PETSC(ISLocalToGlobalMappingRestoreBlockIndices(ltogC, &idxC));
  FPDP_PETSC(MatAssemblyBegin(P, MAT_FINAL_ASSEMBLY));
  FPDP_PETSC(MatAssemblyEnd(P, MAT_FINAL_ASSEMBLY));
  return P;
}

void configureGeometricMultigrid(PC pc, const meshes::DistributedBoxMesh& mesh, const char* optionsPrefix) {
  FPDP_PETSC(DMDASetInterpolationType(mesh.dm(), DMDA_Q0));  // DMCoarsen halves the cell counts
  if (!optionGiven(optionsPrefix, "-pc_mg_levels"))
    FPDP_PETSC(PCMGSetLevels(pc, multigridLevels(mesh), nullptr));
  if (!optionGiven(optionsPrefix, "-pc_mg_galerkin")) FPDP_PETSC(PCMGSetGalerkin(pc, PC_MG_GALERKIN_BOTH));
  PetscInt levels = 1;
  FPDP_PETSC(PCMGGetLevels(pc, &levels));
  // The transfer: cell-centred bilinear prolongation on every level (restriction: its transpose). PCMG coarsens the
  // same DM the same way when it sets up, so these matrices fit its levels; it builds its own (Q0) only where none
  // is set.
  if (levels > 1) {
    std::vector<DM> dms(static_cast<std::size_t>(levels));
    dms.back() = mesh.dm();
    for (PetscInt l = levels - 2; l >= 0; --l)
      FPDP_PETSC(DMCoarsen(dms[static_cast<std::size_t>(l + 1)], MPI_COMM_NULL, &dms[static_cast<std::size_t>(l)]));
    for (PetscInt l = 1; l < levels; ++l) {
      Mat P = cellCentredBilinearInterpolation(dms[static_cast<std::size_t>(l - 1)], dms[static_cast<std::size_t>(l)]);
      FPDP_PETSC(PCMGSetInterpolation(pc, l, P));
      FPDP_PETSC(MatDestroy(&P));
    }
    for (PetscInt l = 0; l + 1 < levels; ++l) FPDP_PETSC(DMDestroy(&dms[static_cast<std::size_t>(l)]));
  }
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
