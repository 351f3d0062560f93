#include "solver/GeometricMultigrid.hpp"

#include <petscdmda.h>
#include <petscksp.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "solver/StencilOperator.hpp"

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

// The level smoother: one symmetric Gauss–Seidel sweep per smoothing step, the arithmetic of PETSc's SOR
// (SOR_LOCAL_SYMMETRIC_SWEEP, omega = 1) on the level's matrix in stencil form (StencilOperator). Where the level
// matrix is not a star stencil (the Galerkin coarse levels, anisotropic noise) PETSc's SOR runs.
// The level matrix carries its smoother, so that the level's residual (PCMGSetResidual) finds the stencil form.
constexpr const char* kSmootherKey = "fpdp_stencil_smoother";

struct StencilSmoother {
  Mat owner = nullptr;  // the level matrix the stencil was built from (referenced; it carries a pointer to this)
  meshes::DMHandle levelDm;  // the level's DMDA (PCMG does not give its level PCs one when the transfers are set)
  StencilOperator op;
  PetscHandle<PC, PCDestroy> fallback;  // PETSc's SOR where op is empty
  meshes::VecHandle ghosted;  // the level DM's local vector (several ranks)
};

PetscErrorCode smootherSetUp(PC pc) {
  PetscFunctionBeginUser;
  StencilSmoother* s = nullptr;
  PetscCall(PCShellGetContext(pc, &s));
  Mat A, P;
  PetscCall(PCGetOperators(pc, &A, &P));
  // PCSetUp calls this only for new operators or new values (a new shift, new Galerkin products).
  DM dm = s->levelDm;
  try {
    if (!dm || !s->op.build(P, dm, /*forSmoothing=*/true)) s->op = StencilOperator{};
  } catch (const std::exception& e) {
    SETERRQ(PetscObjectComm(reinterpret_cast<PetscObject>(pc)), PETSC_ERR_LIB, "%s", e.what());
  }
  s->ghosted.reset();
  if (!s->op.empty() && !s->op.ghostedIsOwned()) PetscCall(DMCreateLocalVector(dm, s->ghosted.out()));
  if (s->owner != P) {  // the smoother holds a reference, so that it can withdraw its pointer from the matrix
    if (s->owner) PetscCall(PetscObjectCompose(reinterpret_cast<PetscObject>(s->owner), kSmootherKey, nullptr));
    PetscCall(MatDestroy(&s->owner));
    PetscCall(PetscObjectReference(reinterpret_cast<PetscObject>(P)));
    s->owner = P;
    PetscContainer container;
    PetscCall(PetscContainerCreate(PetscObjectComm(reinterpret_cast<PetscObject>(P)), &container));
    PetscCall(PetscContainerSetPointer(container, s));
    PetscCall(PetscObjectCompose(reinterpret_cast<PetscObject>(P), kSmootherKey, reinterpret_cast<PetscObject>(container)));
    PetscCall(PetscContainerDestroy(&container));
  }
  // -ksp_view names what runs on this level.
  PetscCall(PCShellSetName(pc, s->op.empty() ? "fpdp level smoother: PETSc's SOR (local symmetric, omega 1; the level "
                                               "matrix is not a star stencil)"
                                             : "fpdp level smoother: symmetric Gauss-Seidel on the star-stencil "
                                               "coefficient arrays (PETSc's SOR local symmetric arithmetic, omega 1)"));
  if (s->op.empty()) {
    if (!s->fallback) {
      PetscCall(PCCreate(PetscObjectComm(reinterpret_cast<PetscObject>(pc)), s->fallback.out()));
      PetscCall(PCSetType(s->fallback, PCSOR));
      PetscCall(PCSORSetSymmetric(s->fallback, SOR_LOCAL_SYMMETRIC_SWEEP));
    }
    PetscCall(PCSetOperators(s->fallback, A, P));
    PetscCall(PCSetUp(s->fallback));
  }
  PetscFunctionReturn(0);
}

// `its` sweeps on x for A x = b; with guessZero the incoming x counts as 0.
PetscErrorCode smootherSweeps(PC pc, Vec b, Vec x, PetscInt its, PetscBool guessZero) {
  PetscFunctionBeginUser;
  StencilSmoother* s = nullptr;
  PetscCall(PCShellGetContext(pc, &s));
  if (s->op.empty()) {
    PetscInt done;
    PCRichardsonConvergedReason reason;
    PetscCall(PCApplyRichardson(s->fallback, b, x, nullptr, 0.0, 0.0, 0.0, its, guessZero, &done, &reason));
    PetscFunctionReturn(0);
  }
  const PetscScalar* bb;
  PetscCall(VecGetArrayRead(b, &bb));
  for (PetscInt it = 0; it < its; ++it) {
    const bool zero = guessZero == PETSC_TRUE && it == 0;
    if (!s->ghosted) {  // one rank: the global array is the ghosted one
      PetscScalar* xx;
      PetscCall(VecGetArray(x, &xx));
      s->op.symmetricGaussSeidel(xx, bb, zero);
      PetscCall(VecRestoreArray(x, &xx));
      continue;
    }
    if (!zero) {  // a zero guess needs no ghosts: the sweep zeroes them
      try {
        ghostedInput(s->levelDm, x, s->ghosted);
      } catch (const std::exception& e) {
        SETERRQ(PetscObjectComm(reinterpret_cast<PetscObject>(pc)), PETSC_ERR_LIB, "%s", e.what());
      }
    }
    PetscScalar *xl, *xx;
    PetscCall(VecGetArray(s->ghosted, &xl));
    PetscCall(VecGetArray(x, &xx));
    s->op.symmetricGaussSeidel(xl, bb, zero);
    s->op.copyOwned(xl, xx);
    PetscCall(VecRestoreArray(x, &xx));
    PetscCall(VecRestoreArray(s->ghosted, &xl));
  }
  PetscCall(VecRestoreArrayRead(b, &bb));
  PetscFunctionReturn(0);
}

PetscErrorCode smootherApplyRichardson(PC pc, Vec b, Vec x, Vec, PetscReal, PetscReal, PetscReal, PetscInt its,
                                       PetscBool guessZero, PetscInt* done, PCRichardsonConvergedReason* reason) {
  PetscFunctionBeginUser;
  PetscCall(smootherSweeps(pc, b, x, its, guessZero));
  *done = its;
  *reason = PCRICHARDSON_CONVERGED_ITS;
  PetscFunctionReturn(0);
}

// As a preconditioner on its own (a smoother KSP other than Richardson): one sweep from x = 0.
PetscErrorCode smootherApply(PC pc, Vec b, Vec x) {
  PetscFunctionBeginUser;
  PetscCall(smootherSweeps(pc, b, x, 1, PETSC_TRUE));
  PetscFunctionReturn(0);
}

PetscErrorCode smootherDestroy(PC pc) {
  PetscFunctionBeginUser;
  StencilSmoother* s = nullptr;
  PetscCall(PCShellGetContext(pc, &s));
  // The matrix may outlive the preconditioner (TS keeps the Jacobian): withdraw the pointer to this smoother.
  if (s->owner) PetscCall(PetscObjectCompose(reinterpret_cast<PetscObject>(s->owner), kSmootherKey, nullptr));
  PetscCall(MatDestroy(&s->owner));
  delete s;
  PetscFunctionReturn(0);
}

// The level residual r = b - A x: in stencil form where A carries a stencil smoother (built from A), else PETSc's.
PetscErrorCode stencilResidual(Mat A, Vec b, Vec x, Vec r) {
  PetscFunctionBeginUser;
  PetscContainer container = nullptr;
  PetscCall(PetscObjectQuery(reinterpret_cast<PetscObject>(A), kSmootherKey, reinterpret_cast<PetscObject*>(&container)));
  StencilSmoother* s = nullptr;
  if (container) PetscCall(PetscContainerGetPointer(container, reinterpret_cast<void**>(&s)));
  if (!s || s->op.empty()) {
    PetscCall(MatResidual(A, b, x, r));
    PetscFunctionReturn(0);
  }
  Vec xv;
  try {
    xv = ghostedInput(s->levelDm, x, s->ghosted);
  } catch (const std::exception& e) {
    SETERRQ(PetscObjectComm(reinterpret_cast<PetscObject>(A)), PETSC_ERR_LIB, "%s", e.what());
  }
  const PetscScalar *xx, *bb;
  PetscScalar* rr;
  PetscCall(VecGetArrayRead(xv, &xx));
  PetscCall(VecGetArrayRead(b, &bb));
  PetscCall(VecGetArray(r, &rr));
  s->op.residual(xx, bb, rr);
  PetscCall(VecRestoreArray(r, &rr));
  PetscCall(VecRestoreArrayRead(b, &bb));
  PetscCall(VecRestoreArrayRead(xv, &xx));
  PetscFunctionReturn(0);
}

void useStencilSmoother(PC pc, DM levelDm) {
  FPDP_PETSC(PCSetType(pc, PCSHELL));
  auto* s = new StencilSmoother;
  FPDP_PETSC(PetscObjectReference(reinterpret_cast<PetscObject>(levelDm)));
  s->levelDm = meshes::DMHandle(levelDm);
  FPDP_PETSC(PCShellSetContext(pc, s));
  FPDP_PETSC(PCShellSetSetUp(pc, smootherSetUp));
  FPDP_PETSC(PCShellSetApply(pc, smootherApply));
  FPDP_PETSC(PCShellSetApplyRichardson(pc, smootherApplyRichardson));
  FPDP_PETSC(PCShellSetDestroy(pc, smootherDestroy));
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
  // The level DMs: PCMG coarsens the same DM the same way when it sets up, so the transfers and the smoothers'
  // stencils built on these fit its levels; it builds its own (Q0) transfers only where none is set.
  std::vector<meshes::DMHandle> dms(static_cast<std::size_t>(levels));
  if (levels > 1) {
    FPDP_PETSC(PetscObjectReference(reinterpret_cast<PetscObject>(mesh.dm())));
    dms.back() = meshes::DMHandle(mesh.dm());
    for (PetscInt l = levels - 2; l >= 0; --l)
      FPDP_PETSC(DMCoarsen(dms[static_cast<std::size_t>(l + 1)], MPI_COMM_NULL, dms[static_cast<std::size_t>(l)].out()));
    // The transfer: cell-centred bilinear prolongation on every level (restriction: its transpose).
    for (PetscInt l = 1; l < levels; ++l) {
      Mat P = cellCentredBilinearInterpolation(dms[static_cast<std::size_t>(l - 1)], dms[static_cast<std::size_t>(l)]);
      FPDP_PETSC(PCMGSetInterpolation(pc, l, P));
      FPDP_PETSC(MatDestroy(&P));
    }
  }
  const bool kspGiven = optionGiven(optionsPrefix, "-mg_levels_ksp_type");
  // -fpdp_mg_aij_smoother: PETSc's SOR on the AIJ level matrices instead of the stencil form (for comparison).
  PetscBool aijSmoother = PETSC_FALSE;
  FPDP_PETSC(PetscOptionsGetBool(nullptr, nullptr, "-fpdp_mg_aij_smoother", &aijSmoother, nullptr));
  const bool stencilSmoother = aijSmoother == PETSC_FALSE;
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
      if (stencilSmoother) {
        useStencilSmoother(smootherPc, dms[static_cast<std::size_t>(l)]);
        FPDP_PETSC(PCMGSetResidual(pc, l, stencilResidual, nullptr));
      } else {
        FPDP_PETSC(PCSetType(smootherPc, PCSOR));
        FPDP_PETSC(PCSORSetSymmetric(smootherPc, SOR_LOCAL_SYMMETRIC_SWEEP));
      }
    }
  }
}

}  // namespace fpdp::solver
