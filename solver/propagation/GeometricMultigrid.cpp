#include "solver/propagation/GeometricMultigrid.hpp"

#include <petscdmda.h>
#include <petscksp.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "solver/propagation/BoolOption.hpp"
#include "solver/discretisation/StencilOperator.hpp"

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
// -fpdp_mg_skip_presmooth: levels whose couplings are at least this many times their shift (couplingToShiftRatio)
// skip the sweep from a zero iterate. Measured in docs/scaling.md §1.
constexpr double kSkipPresmoothCouplingToShift = 3.0;

bool optionGiven(const char* prefix, const char* name) {
  PetscBool set = PETSC_FALSE;
  FPDP_PETSC(PetscOptionsHasName(nullptr, prefix, name, &set));
  return set == PETSC_TRUE;
}

// The level smoother: one symmetric Gauss–Seidel sweep per smoothing step, the arithmetic of PETSc's SOR
// (SOR_LOCAL_SYMMETRIC_SWEEP, omega = 1) on the level's matrix in stencil form (StencilOperator). Where the level
// matrix is not a star stencil (the Galerkin coarse levels, anisotropic noise) PETSc's SOR runs. On a
// diffusion-dominated level it may skip the sweep from a zero iterate (-fpdp_mg_skip_presmooth, see
// configureGeometricMultigrid). The level matrix carries its smoother, so that the level's residual
// (PCMGSetResidual) finds the stencil form.
constexpr const char* kSmootherKey = "fpdp_stencil_smoother";

struct LevelSmoother {
  bool stencilAllowed = true;  // false: PETSc's SOR on every level (-fpdp_mg_aij_smoother, for comparison)
  bool maySkipZeroGuessSweep = false;  // -fpdp_mg_skip_presmooth (configureGeometricMultigrid)
  bool skipZeroGuessSweep = false;     // ... and the level matrix is diffusion-dominated (smootherSetUp)
  double couplingToShift = 0.0;        // couplingToShiftRatio of the level matrix, measured at set-up
  Mat owner = nullptr;  // the level matrix the stencil was built from (referenced; it carries a pointer to this)
  meshes::DMHandle levelDm;  // the level's DMDA (PCMG does not give its level PCs one when the transfers are set)
  StencilOperator op;
  PetscHandle<PC, PCDestroy> fallback;  // PETSc's SOR where op is empty
  meshes::VecHandle ghosted;  // the level DM's local vector (several ranks)
  bool midSweepExchange = false;  // -fpdp_mg_midsweep_exchange (configureGeometricMultigrid); several ranks only
};

// How strongly a level's couplings dominate its shift: the mean over the rows of (a_ii - s_i) / s_i with the row sum
// s_i = sum_j a_ij. For the shifted operator shift I - A with zero row sums in A, s_i is the shift and a_ii - s_i the
// couplings, so this is nu = (sum of the couplings) / shift (4 dt D / h^2 per BDF weight on the 2-D star). The
// Galerkin products restrict row sums (the prolongation keeps constants), so the measure carries over to the coarse
// levels, whose 21-point rows have couplings of both signs; there it reads lower, since the restricted shift (the
// mass matrix R P) is spread over the stencil too. Drift makes A's row sums small but not zero; rows whose sum is
// not positive are left out (none on the benchmark), and a level with no other row counts as shift-dominated.
PetscErrorCode couplingToShiftRatio(Mat A, double* ratio) {
  PetscFunctionBeginUser;
  PetscInt first, last;
  PetscCall(MatGetOwnershipRange(A, &first, &last));
  double sums[2] = {0.0, 0.0};  // sum of the row ratios, rows counted
  for (PetscInt row = first; row < last; ++row) {
    PetscInt n;
    const PetscInt* cols;
    const PetscScalar* vals;
    PetscCall(MatGetRow(A, row, &n, &cols, &vals));
    double diag = 0.0, rowSum = 0.0;
    for (PetscInt k = 0; k < n; ++k) {
      rowSum += vals[k];
      if (cols[k] == row) diag = vals[k];
    }
    PetscCall(MatRestoreRow(A, row, &n, &cols, &vals));
    if (rowSum > 0.0) sums[0] += (diag - rowSum) / rowSum, sums[1] += 1.0;
  }
  PetscCall(MPIU_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, PetscObjectComm(reinterpret_cast<PetscObject>(A))));
  *ratio = sums[1] > 0.0 ? sums[0] / sums[1] : 0.0;
  PetscFunctionReturn(0);
}

PetscErrorCode smootherSetUp(PC pc) {
  PetscFunctionBeginUser;
  LevelSmoother* s = nullptr;
  PetscCall(PCShellGetContext(pc, &s));
  Mat A, P;
  PetscCall(PCGetOperators(pc, &A, &P));
  // PCSetUp calls this only for new operators or new values (a new shift, new Galerkin products).
  DM dm = s->levelDm;
  try {
    if (!s->stencilAllowed || !dm || !s->op.build(P, dm, /*forSmoothing=*/true)) s->op = StencilOperator{};
  } catch (const std::exception& e) {
    SETERRQ(PetscObjectComm(reinterpret_cast<PetscObject>(pc)), PETSC_ERR_LIB, "%s", e.what());
  }
  if (s->maySkipZeroGuessSweep) {
    PetscCall(couplingToShiftRatio(P, &s->couplingToShift));
    s->skipZeroGuessSweep = s->couplingToShift >= kSkipPresmoothCouplingToShift;
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
  std::string name = !s->op.empty()         ? "fpdp level smoother: symmetric Gauss-Seidel on the star-stencil "
                                              "coefficient arrays (PETSc's SOR local symmetric arithmetic, omega 1)"
                     : s->stencilAllowed ? "fpdp level smoother: PETSc's SOR (local symmetric, omega 1; the level "
                                           "matrix is not a star stencil)"
                                         : "fpdp level smoother: PETSc's SOR (local symmetric, omega 1; "
                                           "-fpdp_mg_aij_smoother)";
  if (s->midSweepExchange) name += "; ghosts exchanged between the forward and the backward sweep";
  if (s->maySkipZeroGuessSweep) {
    char share[160];
    std::snprintf(share, sizeof share, "; couplings/shift %.3g: %s", s->couplingToShift,
                  s->skipZeroGuessSweep ? "no sweep from a zero iterate (-fpdp_mg_skip_presmooth)"
                                        : "sweeps from a zero iterate too");
    name += share;
  }
  PetscCall(PCShellSetName(pc, name.c_str()));
  if (s->op.empty() && !s->midSweepExchange) {  // with the exchange, smootherSweeps calls MatSOR itself
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
  LevelSmoother* s = nullptr;
  PetscCall(PCShellGetContext(pc, &s));
  if (its <= 0) PetscFunctionReturn(0);
  if (s->op.empty() && s->midSweepExchange) {
    // PETSc's SOR in two calls, each of which first exchanges the ghosts (none for the zero iterate's forward half).
    Mat A, P;
    PetscCall(PCGetOperators(pc, &A, &P));
    for (PetscInt it = 0; it < its; ++it) {
      const int zero = guessZero == PETSC_TRUE && it == 0 ? SOR_ZERO_INITIAL_GUESS : 0;
      PetscCall(MatSOR(P, b, 1.0, static_cast<MatSORType>(SOR_LOCAL_FORWARD_SWEEP | zero), 0.0, 1, 1, x));
      PetscCall(MatSOR(P, b, 1.0, SOR_LOCAL_BACKWARD_SWEEP, 0.0, 1, 1, x));
    }
    PetscFunctionReturn(0);
  }
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
    s->op.gaussSeidelSweep(xl, bb, /*backward=*/false, zero);
    if (s->midSweepExchange) {
      // The backward half reads the neighbours' values of the forward half (the owned parts of their local vectors).
      PetscCall(VecRestoreArray(s->ghosted, &xl));
      PetscCall(DMLocalToLocalBegin(s->levelDm, s->ghosted, INSERT_VALUES, s->ghosted));
      PetscCall(DMLocalToLocalEnd(s->levelDm, s->ghosted, INSERT_VALUES, s->ghosted));
      PetscCall(VecGetArray(s->ghosted, &xl));
    }
    s->op.gaussSeidelSweep(xl, bb, /*backward=*/true, false);
    PetscCall(VecGetArray(x, &xx));
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
  LevelSmoother* s = nullptr;
  PetscCall(PCShellGetContext(pc, &s));
  PetscInt sweeps = its;
  if (guessZero == PETSC_TRUE && s->skipZeroGuessSweep && sweeps > 0) {
    // x = 0 exactly; VecSet caches its norms as 0, so levelResidual returns b without a product.
    PetscCall(VecSet(x, 0.0));
    --sweeps;
  }
  PetscCall(smootherSweeps(pc, b, x, sweeps, guessZero));
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
  LevelSmoother* s = nullptr;
  PetscCall(PCShellGetContext(pc, &s));
  // The matrix may outlive the preconditioner (TS keeps the Jacobian): withdraw the pointer to this smoother.
  if (s->owner) PetscCall(PetscObjectCompose(reinterpret_cast<PetscObject>(s->owner), kSmootherKey, nullptr));
  PetscCall(MatDestroy(&s->owner));
  delete s;
  PetscFunctionReturn(0);
}

// The level residual r = b - A x. Where the pre-smoother is skipped, x is zero (VecSet caches its norms, and any
// later change of x drops them), so r = b without a product. Else in stencil form where A carries a stencil smoother
// (built from A), else PETSc's.
PetscErrorCode levelResidual(Mat A, Vec b, Vec x, Vec r) {
  PetscFunctionBeginUser;
  PetscBool normKnown = PETSC_FALSE;
  PetscReal norm = 0.0;
  PetscCall(VecNormAvailable(x, NORM_INFINITY, &normKnown, &norm));
  if (normKnown && norm == 0.0) {
    PetscCall(VecCopy(b, r));
    PetscFunctionReturn(0);
  }
  PetscContainer container = nullptr;
  PetscCall(PetscObjectQuery(reinterpret_cast<PetscObject>(A), kSmootherKey, reinterpret_cast<PetscObject*>(&container)));
  LevelSmoother* s = nullptr;
  if (container) PetscCall(PetscContainerGetPointer(container, reinterpret_cast<void**>(&s)));
  if (!s || s->op.empty()) {
    PetscCall(MatResidual(A, b, x, r));
    PetscFunctionReturn(0);
  }
  PetscCall(residual(s->op, s->levelDm, x, b, r, s->ghosted));
  PetscFunctionReturn(0);
}

void useLevelSmoother(PC pc, DM levelDm, bool stencilAllowed, bool skipZeroGuessSweep, bool midSweepExchange) {
  FPDP_PETSC(PCSetType(pc, PCSHELL));
  auto* s = new LevelSmoother;
  s->stencilAllowed = stencilAllowed;
  s->maySkipZeroGuessSweep = skipZeroGuessSweep;
  PetscMPIInt size = 1;
  FPDP_PETSC(MPI_Comm_size(PetscObjectComm(reinterpret_cast<PetscObject>(pc)), &size));
  s->midSweepExchange = midSweepExchange && size > 1;  // one rank has no ghosts: its sweep is the serial one
  FPDP_PETSC(PetscObjectReference(reinterpret_cast<PetscObject>(levelDm)));
  s->levelDm = meshes::DMHandle(levelDm);
  FPDP_PETSC(PCShellSetContext(pc, s));
  FPDP_PETSC(PCShellSetSetUp(pc, smootherSetUp));
  FPDP_PETSC(PCShellSetApply(pc, smootherApply));
  FPDP_PETSC(PCShellSetApplyRichardson(pc, smootherApplyRichardson));
  FPDP_PETSC(PCShellSetDestroy(pc, smootherDestroy));
}
}  // namespace

void configureGeometricMultigrid(PC pc, const meshes::DistributedBoxMesh& mesh, const char* optionsPrefix,
                                 bool stationaryOuterIteration) {
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
    // The transfer: cell-centred bilinear prolongation on every level (restriction: its transpose), applied
    // matrix-free unless -fpdp_mg_aij_transfers (PETSc's AIJ products, for comparison).
    const bool aijTransfers = boolOption(nullptr, "-fpdp_mg_aij_transfers", false);
    for (PetscInt l = 1; l < levels; ++l) {
      DM coarse = dms[static_cast<std::size_t>(l - 1)], fine = dms[static_cast<std::size_t>(l)];
      Mat P = cellCentredBilinearInterpolation(coarse, fine);
      if (!aijTransfers) attachMatrixFreeTransfer(P, coarse, fine);
      FPDP_PETSC(PCMGSetInterpolation(pc, l, P));
      FPDP_PETSC(MatDestroy(&P));
    }
  }
  const bool kspGiven = optionGiven(optionsPrefix, "-mg_levels_ksp_type");
  const bool pcGiven = optionGiven(optionsPrefix, "-mg_levels_pc_type");
  // -fpdp_mg_aij_smoother: PETSc's SOR on the AIJ level matrices instead of the stencil form (for comparison).
  const bool stencilSmoother = !boolOption(nullptr, "-fpdp_mg_aij_smoother", false);
  // -fpdp_mg_skip_presmooth (default: true under Richardson or preonly): a diffusion-dominated level (couplings at
  // least 3 times the shift, couplingToShiftRatio) does no smoothing sweep from a zero iterate. That is its
  // pre-smoothing in every cycle on a coarse level (its iterate starts at zero) and in the first cycle on the finest.
  // The right-hand side of a time step's correction is as smooth as the density, and so are its restrictions: from
  // zero, a sweep of a diffusion-dominated level only smooths what is smooth already, and the residual of a zero
  // iterate is the right-hand side itself, without a product. Where the shift dominates, the sweep alone nearly
  // solves the level, and it stays. From the second cycle on, the finest level pre-smooths as usual, which is also
  // where PCMG's Richardson iteration tests convergence. Measured in docs/scaling.md §1. Only under a stationary
  // outer iteration (Richardson, or one cycle): a Krylov method hands the V-cycle its search directions, which are
  // not smooth (GMRES + multigrid to 1e-12 at 256^2: 7 iterations became 10).
  bool skipGiven = false;
  const bool skipPresmooth = boolOption(optionsPrefix, "-fpdp_mg_skip_presmooth", stationaryOuterIteration, &skipGiven);
  if (skipGiven && skipPresmooth && pcGiven)
    throw PetscFailure("-fpdp_mg_skip_presmooth needs fpdp's level smoother, and -mg_levels_pc_type replaces it; give "
                       "-fpdp_mg_skip_presmooth false or drop -mg_levels_pc_type");
  // -fpdp_mg_midsweep_exchange (default: true under Richardson or preonly; several ranks only): each rank's symmetric
  // Gauss–Seidel sweep exchanges the ghosts between its forward and its backward half, so that the backward half
  // reads the neighbours' forward values instead of those from before the sweep (PETSc's SOR_LOCAL_SYMMETRIC_SWEEP
  // keeps them fixed). On one rank the lexicographic sweep solves the smooth correction of a time step almost
  // exactly (one V-cycle: 1e-7 of the residual at 256^2); split over ranks, the stale interface values cost that,
  // mostly on the coarse levels, where the interface is a larger share of the cells. 1024^2 on 2 ranks,
  // Richardson + multigrid to 1e-6: 3 cycles and 118 ms per step without, 2 and 88 ms with (one rank: 1 cycle,
  // 78 ms). Under GMRES the count stayed at 3 and the exchanges cost 5 %, so it is off there unless asked for
  // (docs/scaling.md §1).
  bool exchangeGiven = false;
  const bool midSweepExchange =
      boolOption(optionsPrefix, "-fpdp_mg_midsweep_exchange", stationaryOuterIteration, &exchangeGiven);
  if (exchangeGiven && midSweepExchange && pcGiven)
    throw PetscFailure("-fpdp_mg_midsweep_exchange needs fpdp's level smoother, and -mg_levels_pc_type replaces it; "
                       "give -fpdp_mg_midsweep_exchange false or drop -mg_levels_pc_type");
  for (PetscInt l = 1; l < levels; ++l) {
    KSP smoother;
    FPDP_PETSC(PCMGGetSmoother(pc, l, &smoother));
    if (!kspGiven) {
      FPDP_PETSC(KSPSetType(smoother, KSPRICHARDSON));
      FPDP_PETSC(KSPSetTolerances(smoother, PETSC_DEFAULT, PETSC_DEFAULT, PETSC_DEFAULT, 1));
    }
    if (pcGiven) continue;
    PC smootherPc;
    FPDP_PETSC(KSPGetPC(smoother, &smootherPc));
    useLevelSmoother(smootherPc, dms[static_cast<std::size_t>(l)], stencilSmoother, skipPresmooth, midSweepExchange);
    FPDP_PETSC(PCMGSetResidual(pc, l, levelResidual, nullptr));
  }
}

}  // namespace fpdp::solver
