#include "solver/propagation/DensityEvolution.hpp"

#include "solver/propagation/TsHistory.hpp"

#include <cmath>
#include <sstream>
#include <utility>
#include <vector>

#include "solver/propagation/BoolOption.hpp"
#include "solver/propagation/GeometricMultigrid.hpp"

namespace fpdp::solver {

namespace {
/// M = shift I - A (M has A's non-zero pattern): the system matrix of an implicit step with TS's shift.
PetscErrorCode shiftedOperator(Mat A, PetscReal shift, Mat M) {
  PetscFunctionBeginUser;
  PetscCall(MatCopy(A, M, SAME_NONZERO_PATTERN));
  PetscCall(MatScale(M, -1.0));
  PetscCall(MatShift(M, shift));
  PetscFunctionReturn(0);
}

/// The shift of a constant-step BDFk, whose step is (1/dt) sum_j a_j u_{n+1-j}: a_0 / dt = (1 + 1/2 + ... + 1/k) / dt.
/// -1 when ts is not TSBDF of order >= minOrder with a fixed step (-ts_adapt_type basic: the step, and with it the
/// shift, changes).
PetscReal fixedStepBdfShift(TS ts, double dt, PetscInt minOrder) {
  TSType tsType;
  FPDP_PETSC(TSGetType(ts, &tsType));
  if (std::string(tsType) != TSBDF) return -1.0;
  PetscInt order = 2;
  FPDP_PETSC(TSBDFGetOrder(ts, &order));
  PetscBool fixedStep = PETSC_FALSE;
  TSAdapt adapt;
  FPDP_PETSC(TSGetAdapt(ts, &adapt));
  FPDP_PETSC(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(adapt), TSADAPTNONE, &fixedStep));
  if (order < minOrder || !fixedStep) return -1.0;
  double a0 = 0.0;
  for (PetscInt j = 1; j <= order; ++j) a0 += 1.0 / static_cast<double>(j);
  return a0 / dt;
}
}  // namespace

DensityEvolution::DensityEvolution(const meshes::DistributedBoxMesh& mesh, meshes::MatHandle A,
                                   const TimeIntegration& ti)
    : mesh_(mesh), A_(std::move(A)), ti_(ti) {
  MPI_Comm comm = mesh_.comm();
  FPDP_PETSC(TSCreate(comm, ts_.out()));
  FPDP_PETSC(TSSetDM(ts_, mesh_.dm()));
  if (!ti_.optionsPrefix.empty()) FPDP_PETSC(TSSetOptionsPrefix(ts_, ti_.optionsPrefix.c_str()));
  FPDP_PETSC(TSSetProblemType(ts_, TS_LINEAR));
  FPDP_PETSC(MatDuplicate(A_, MAT_DO_NOT_COPY_VALUES, J_.out()));
  FPDP_PETSC(TSSetIFunction(ts_, nullptr, &DensityEvolution::implicitFunction, this));
  FPDP_PETSC(TSSetIJacobian(ts_, J_, J_, &DensityEvolution::implicitJacobian, this));
  FPDP_PETSC(TSSetType(ts_, ti_.tsType.c_str()));
  if (ti_.tsType == TSARKIMEX) {
    // L-stable SDIRK of order 2 (equal diagonal: one shift, one factorisation), all terms implicit.
    FPDP_PETSC(TSARKIMEXSetType(ts_, TSARKIMEXL2));
    FPDP_PETSC(TSARKIMEXSetFullyImplicit(ts_, PETSC_TRUE));
  }
  FPDP_PETSC(TSSetTimeStep(ts_, ti_.dt));
  FPDP_PETSC(TSSetMaxSteps(ts_, ti_.steps));
  FPDP_PETSC(TSSetMaxTime(ts_, ti_.dt * static_cast<double>(ti_.steps) * (1.0 + 1e-12)));
  FPDP_PETSC(TSSetExactFinalTime(ts_, TS_EXACTFINALTIME_STEPOVER));
  // Fixed steps: the output steps are steps of time.dt (fpdp refuses -ts_adapt_type, app/platform/PetscOptionPolicy.hpp).
  TSAdapt adapt;
  FPDP_PETSC(TSGetAdapt(ts_, &adapt));
  FPDP_PETSC(TSAdaptSetType(adapt, TSADAPTNONE));
  SNES snes;
  KSP ksp;
  PC pc;
  FPDP_PETSC(TSGetSNES(ts_, &snes));
  FPDP_PETSC(SNESGetKSP(snes, &ksp));
  FPDP_PETSC(KSPSetType(ksp, ti_.kspType.c_str()));
  FPDP_PETSC(KSPGetPC(ksp, &pc));
  FPDP_PETSC(PCSetType(pc, ti_.pcType.c_str()));
  PetscMPIInt size;
  FPDP_PETSC(MPI_Comm_size(comm, &size));
  // PETSc's own LU is serial only. SuperLU_dist, not MUMPS: MUMPS's parallel factorisation differed from run to run
  // in the last bits (two identical 2-rank BDF2 runs of the OU case: divergence.csv rows apart by 1e-16, so a 2-rank
  // restart was not bit-identical); SuperLU_dist's gives the same bits every run, at the same speed (OU 128^2, 200
  // BDF2 steps on 2 ranks: 0.94-1.07 s with either, 2026-11-26). -pc_factor_mat_solver_type overrides it.
  if (size > 1) FPDP_PETSC(PCFactorSetMatSolverType(pc, MATSOLVERSUPERLU_DIST));
  FPDP_PETSC(KSPSetTolerances(ksp, 1e-12, 1e-50, PETSC_DEFAULT, PETSC_DEFAULT));
  FPDP_PETSC(TSSetFromOptions(ts_));
  // pc_type mg (case file or -pc_type): geometric multigrid on the mesh (GeometricMultigrid.hpp).
  PCType chosenPc;
  FPDP_PETSC(PCGetType(pc, &chosenPc));
  if (std::string(chosenPc) == PCMG) {
    const char* prefix = ti_.optionsPrefix.empty() ? nullptr : ti_.optionsPrefix.c_str();
    KSPType outer;
    FPDP_PETSC(KSPGetType(ksp, &outer));
    configureGeometricMultigrid(pc, mesh_, prefix,
                                std::string(outer) == KSPRICHARDSON || std::string(outer) == KSPPREONLY);
    FPDP_PETSC(PCSetFromOptions(pc));  // explicit -mg_* options over the defaults just set
  }
  enableSingleFactorisation(ksp, pc);
  enableInPlaceIlu(pc);
  // The implicit function in stencil form (docs/scaling.md §2); -fpdp_aij_function: PETSc's MatMult, for comparison.
  if (!inPlaceIlu_ && !boolOption(nullptr, "-fpdp_aij_function", false) && stencilA_.build(A_, mesh_.dm()) && !stencilA_.ghostedIsOwned())
    FPDP_PETSC(DMCreateLocalVector(mesh_.dm(), ghostedU_.out()));
  FPDP_PETSC(TSMonitorSet(ts_, &DensityEvolution::monitor, this, nullptr));
}

// PETSc's BDF of order k >= 2 starts with two half steps (BDF1, then BDF2 with the half step) before the
// constant-step BDFk, so the system matrix shift I - A has three different shifts (20, 30, 15 for BDF2 at dt = 0.1),
// and a direct solver factorises three times (profile of 2026-11-22, commit 72a96a7: 3 of the 4.2 s of the 256^2
// benchmark run went into factorisations). Here the matrix of the constant step (shift alpha_k / dt) is factorised
// once: the start steps solve their own systems by GMRES preconditioned with that factorisation (a few iterations,
// to the same tolerance), and every later step is the plain direct solve.
void DensityEvolution::enableSingleFactorisation(KSP ksp, PC pc) {
  KSPType kspType;
  PCType pcType;
  FPDP_PETSC(KSPGetType(ksp, &kspType));
  FPDP_PETSC(PCGetType(pc, &pcType));
  if (std::string(kspType) != KSPPREONLY || (std::string(pcType) != PCLU && std::string(pcType) != PCCHOLESKY))
    return;
  const PetscReal shift = fixedStepBdfShift(ts_, ti_.dt, 2);  // BDF1 has a single shift anyway
  if (shift < 0) return;
  // A non-finite operator (e.g. a loss gradient that is NaN somewhere on the box) would make the start steps' GMRES
  // fail inside TS; the plain direct solve lets the NaN through to the run's numerical-fault check instead.
  PetscReal norm = 0.0;
  FPDP_PETSC(MatNorm(A_, NORM_FROBENIUS, &norm));
  if (!std::isfinite(norm)) return;
  steadyShift_ = shift;
  ksp_ = ksp;
  FPDP_PETSC(MatDuplicate(A_, MAT_DO_NOT_COPY_VALUES, P_.out()));
  FPDP_PETSC(TSSetIJacobian(ts_, J_, P_, &DensityEvolution::implicitJacobian, this));
}

// ILU(0) on one rank: the factor can overwrite the matrix it is computed from (PCFactorSetUseInPlace) when the
// Krylov method does not need that matrix. Here the Krylov method applies shift I - A through a shell (one SpMV with
// A and a vector update, the traffic of one SpMV with J), and the preconditioner is the ILU(0) of s I - A, built and
// factorised once: s is the constant-step shift (BDF with a fixed step: alpha_k / dt, known in advance; other
// integrators: the first shift TS asks for, which is the constant one for Crank–Nicolson, backward Euler and
// ARKIMEX L2). BDF's start steps, whose shifts differ, are solved exactly by the Krylov method with that
// preconditioner. Saves the stored J = shift I - A (about 143 B per cell for two densities in 2-D).
void DensityEvolution::enableInPlaceIlu(PC pc) {
  if (steadyShift_ > 0) return;  // the direct-solver path above
  PCType pcType;
  FPDP_PETSC(PCGetType(pc, &pcType));
  PetscMPIInt size;
  FPDP_PETSC(MPI_Comm_size(mesh_.comm(), &size));
  if (std::string(pcType) != PCILU || size != 1) return;
  PetscInt levels = 0;
  FPDP_PETSC(PCFactorGetLevels(pc, &levels));
  if (levels != 0) return;  // ILU(k > 0) has fill: the factor does not fit in the matrix
  preconditionerTargetShift_ = fixedStepBdfShift(ts_, ti_.dt, 1);  // -1 (the first shift) for other integrators
  PetscInt m, n, M, N;
  FPDP_PETSC(MatGetLocalSize(A_, &m, &n));
  FPDP_PETSC(MatGetSize(A_, &M, &N));
  FPDP_PETSC(MatCreateShell(mesh_.comm(), m, n, M, N, this, S_.out()));
  FPDP_PETSC(MatShellSetOperation(S_, MATOP_MULT, reinterpret_cast<void (*)(void)>(&DensityEvolution::shellMult)));
  FPDP_PETSC(MatDuplicate(A_, MAT_DO_NOT_COPY_VALUES, P_.out()));
  FPDP_PETSC(TSSetIJacobian(ts_, S_, P_, &DensityEvolution::implicitJacobian, this));
  FPDP_PETSC(PCFactorSetUseInPlace(pc, PETSC_TRUE));
  J_.reset();  // TS no longer refers to it
  inPlaceIlu_ = true;
}

PetscErrorCode DensityEvolution::shellMult(Mat S, Vec x, Vec y) {
  PetscFunctionBeginUser;
  DensityEvolution* self = nullptr;
  PetscCall(MatShellGetContext(S, &self));
  PetscCall(MatMult(self->A_, x, y));                     // y = A x
  PetscCall(VecAXPBY(y, self->jacobianShift_, -1.0, x));  // y = shift x - A x
  PetscFunctionReturn(0);
}

PetscErrorCode DensityEvolution::implicitFunction(TS, PetscReal, Vec u, Vec udot, Vec F, void* ctx) {
  PetscFunctionBeginUser;
  auto* self = static_cast<DensityEvolution*>(ctx);
  if (self->stencilA_.empty()) {
    PetscCall(MatMult(self->A_, u, F));  // F = A u
    PetscCall(VecAYPX(F, -1.0, udot));   // F = udot - A u
    PetscFunctionReturn(0);
  }
  PetscCall(residual(self->stencilA_, self->mesh_.dm(), u, udot, F, self->ghostedU_));  // F = udot - A u
  PetscFunctionReturn(0);
}

PetscErrorCode DensityEvolution::implicitJacobian(TS, PetscReal, Vec, Vec, PetscReal shift, Mat J, Mat P, void* ctx) {
  PetscFunctionBeginUser;
  auto* self = static_cast<DensityEvolution*>(ctx);
  if (self->inPlaceIlu_) {  // enableInPlaceIlu: the shell applies the exact shift; P is built once
    self->jacobianShift_ = shift;
    if (self->preconditionerShift_ < 0) {
      const PetscReal s = self->preconditionerTargetShift_ > 0 ? self->preconditionerTargetShift_ : shift;
      PetscCall(shiftedOperator(self->A_, s, P));
      self->preconditionerShift_ = s;
      ++self->jacobianBuilds_;
    }
    PetscFunctionReturn(0);
  }
  if (self->steadyShift_ > 0) {  // enableSingleFactorisation: P holds the constant-step matrix, factorised once
    if (self->preconditionerShift_ < 0) {
      PetscCall(shiftedOperator(self->A_, self->steadyShift_, P));
      self->preconditionerShift_ = self->steadyShift_;
      ++self->jacobianBuilds_;
    }
    const bool steady = std::fabs(shift - self->steadyShift_) <= 1e-12 * std::fabs(shift);
    // A start step: its own matrix J, solved by GMRES with the factorisation of P. A constant step: P is exact.
    PetscCall(KSPSetType(self->ksp_, steady ? KSPPREONLY : KSPGMRES));
    if (!steady && std::fabs(shift - self->jacobianShift_) > 1e-12 * std::fabs(shift)) {
      PetscCall(shiftedOperator(self->A_, shift, J));
      self->jacobianShift_ = shift;
    }
    PetscFunctionReturn(0);
  }
  // TS computes the shift from time differences, so a "constant" shift wobbles in the last bits (75 vs
  // 75.000000000000014 for BDF2 at dt = 0.02). Within 1e-12 relative the old J is kept: the single linear solve
  // of this linear problem then errs by that relative amount, far below the time-discretisation error.
  if (std::fabs(shift - self->jacobianShift_) > 1e-12 * std::fabs(shift)) {
    PetscCall(shiftedOperator(self->A_, shift, J));
    self->jacobianShift_ = shift;
    ++self->jacobianBuilds_;
  }
  PetscFunctionReturn(0);
}

PetscErrorCode DensityEvolution::monitor(TS, PetscInt step, PetscReal time, Vec u, void* ctx) {
  PetscFunctionBeginUser;
  auto* self = static_cast<DensityEvolution*>(ctx);
  self->stepsTaken_ = step;
  if (step == self->skipObserverAt_) PetscFunctionReturn(0);
  if (!self->observer_) PetscFunctionReturn(0);
  // An observer's exception (a stop its caller asked for: a progress hook's RunInterrupted, a --certify budget) must
  // reach the caller as itself, not as PETSc's "error in external library" (which PetscCallCXX would make of it).
  try {
    (*self->observer_)(static_cast<long>(step), static_cast<double>(time), u);
  } catch (...) {
    self->observerException_ = std::current_exception();
    SETERRQ(PETSC_COMM_SELF, PETSC_ERR_USER, "the run's observer stopped the time integration");
  }
  PetscFunctionReturn(0);
}

void DensityEvolution::solveObserved(Vec u) {
  observerException_ = nullptr;
  try {
    FPDP_PETSC(TSSolve(ts_, u));
  } catch (...) {
    if (auto e = std::exchange(observerException_, nullptr)) std::rethrow_exception(e);
    throw;
  }
}

void DensityEvolution::setUp(Vec u) {
  FPDP_PETSC(TSSetSolution(ts_, u));
  FPDP_PETSC(TSSetUp(ts_));
}

void DensityEvolution::run(Vec u, const Observer& observer, double startTime) {
  observer_ = &observer;
  FPDP_PETSC(TSSetTime(ts_, startTime));
  FPDP_PETSC(TSSetStepNumber(ts_, 0));
  FPDP_PETSC(TSSetSolution(ts_, u));
  FPDP_PETSC(TSSetUp(ts_));
  try {
    solveObserved(u);
  } catch (...) {
    observer_ = nullptr;
    throw;
  }
  observer_ = nullptr;
  // A run shorter than BDF's start leaves the start steps' GMRES in place: back to the direct solve.
  if (steadyShift_ > 0) FPDP_PETSC(KSPSetType(ksp_, KSPPREONLY));
  TSConvergedReason reason;
  FPDP_PETSC(TSGetConvergedReason(ts_, &reason));
  if (reason < 0) {
    throw PetscFailure(std::string("time integration failed: ") + TSConvergedReasons[reason]);
  }
}

namespace {
/// The TS types whose step-to-step memory captureState() knows: TSBDF's history (solver/propagation/TsHistory), and ARKIMEX L2
/// without the initial-guess extrapolation, which (no explicit first stage, PETSc 3.18 arkimex.c) carries nothing
/// from one step to the next.
std::string checkpointableType(TS ts) {
  TSType type;
  FPDP_PETSC(TSGetType(ts, &type));
  const std::string t = type;
  if (t == TSBDF) return t;
  if (t == TSARKIMEX) {
    TSARKIMEXType ark;
    FPDP_PETSC(TSARKIMEXGetType(ts, &ark));
    PetscBool extrapolate = PETSC_FALSE;
    FPDP_PETSC(PetscOptionsHasName(nullptr, nullptr, "-ts_arkimex_initial_guess_extrapolate", &extrapolate));
    if (std::string(ark) == TSARKIMEXL2 && !extrapolate) return t;
    throw PetscFailure("checkpoints support ts_type arkimex only with its L2 scheme and no initial-guess "
                       "extrapolation (this run: arkimex " + std::string(ark) + ")");
  }
  throw PetscFailure("checkpoints support ts_type bdf and arkimex (their step-to-step state is known), not '" + t +
                     "'");
}
}  // namespace

void DensityEvolution::requireCheckpointable() const { (void)checkpointableType(ts_); }

void DensityEvolution::stopAfter(long step) { FPDP_PETSC(TSSetMaxSteps(ts_, step)); }

IntegratorState DensityEvolution::captureState() const {
  IntegratorState s;
  s.tsType = checkpointableType(ts_);
  PetscInt step;
  PetscReal time, dt;
  FPDP_PETSC(TSGetStepNumber(ts_, &step));
  FPDP_PETSC(TSGetTime(ts_, &time));
  FPDP_PETSC(TSGetTimeStep(ts_, &dt));
  s.step = step;
  s.time = time;
  s.timeStep = dt;
  s.jacobianShift = jacobianShift_;
  if (s.tsType == TSBDF) {
    const auto h = detail::bdfHistory(ts_);
    s.bdfOrderInUse = h.k;
    s.bdfStored = h.n;
    s.bdfTimes = h.times;
    for (Vec v : h.vectors) {
      s.history.push_back(mesh_.createVector());
      FPDP_PETSC(VecCopy(v, s.history.back()));
    }
  }
  return s;
}

void DensityEvolution::restoreState(const IntegratorState& s, Vec u) {
  if (checkpointableType(ts_) != s.tsType)
    throw PetscFailure("the checkpoint was written by ts_type " + s.tsType + ", this run uses another");
  FPDP_PETSC(TSSetSolution(ts_, u));
  FPDP_PETSC(TSSetUp(ts_));
  if (s.tsType == TSBDF) {
    const auto h = detail::bdfHistory(ts_);  // PETSc's work vectors (allocated by TSSetUp)
    PetscInt order;
    FPDP_PETSC(TSBDFGetOrder(ts_, &order));
    if (s.history.size() != s.bdfTimes.size() || s.history.size() > static_cast<std::size_t>(order))
      throw PetscFailure("the checkpoint's BDF history does not fit this run's BDF order " + std::to_string(order));
    detail::setBdfCounters(ts_, s.bdfOrderInUse, s.bdfStored, s.bdfTimes);
    const auto slots = detail::bdfHistory(ts_);
    for (std::size_t i = 0; i < s.history.size(); ++i) FPDP_PETSC(VecCopy(s.history[i], slots.vectors[i]));
  }
  detail::setContinuing(ts_, s.step, s.time, s.timeStep);
  // The factorised matrix must be the uninterrupted run's: shift I - A at the shift it was built with (TS's shift
  // wobbles in the last bits, implicitJacobian keeps J within 1e-12 of it).
  if (s.jacobianShift > 0 && inPlaceIlu_) {
    jacobianShift_ = s.jacobianShift;  // the shell's shift; P is built at the first step, as in the uninterrupted run
  } else if (s.jacobianShift > 0) {
    FPDP_PETSC(shiftedOperator(A_, s.jacobianShift, J_));
    jacobianShift_ = s.jacobianShift;
  }
}

void DensityEvolution::resume(Vec u, const Observer& observer, const IntegratorState& state) {
  restoreState(state, u);
  observer_ = &observer;
  skipObserverAt_ = state.step;
  try {
    solveObserved(u);
  } catch (...) {
    observer_ = nullptr;
    skipObserverAt_ = -1;
    throw;
  }
  observer_ = nullptr;
  skipObserverAt_ = -1;
  TSConvergedReason reason;
  FPDP_PETSC(TSGetConvergedReason(ts_, &reason));
  if (reason < 0) throw PetscFailure(std::string("time integration failed: ") + TSConvergedReasons[reason]);
}

std::string DensityEvolution::describe() const {
  TSType tsType;
  FPDP_PETSC(TSGetType(ts_, &tsType));
  SNES snes;
  KSP ksp;
  PC pc;
  FPDP_PETSC(TSGetSNES(ts_, &snes));
  FPDP_PETSC(SNESGetKSP(snes, &ksp));
  FPDP_PETSC(KSPGetPC(ksp, &pc));
  KSPType kspType;
  PCType pcType;
  FPDP_PETSC(KSPGetType(ksp, &kspType));
  FPDP_PETSC(PCGetType(pc, &pcType));
  PetscReal dt;
  FPDP_PETSC(TSGetTimeStep(ts_, &dt));
  std::ostringstream os;
  os << "ts_type=" << tsType << " ksp_type=" << kspType << " pc_type=" << pcType;
  if (std::string(tsType) == TSBDF) {
    PetscInt order;
    FPDP_PETSC(TSBDFGetOrder(ts_, &order));
    os << " bdf_order=" << order;
  }
  return os.str();
}

std::vector<std::string> unusedPetscOptions() {
  PetscInt n = 0;
  char** names = nullptr;
  char** values = nullptr;
  FPDP_PETSC(PetscOptionsLeftGet(nullptr, &n, &names, &values));
  std::vector<std::string> out;
  // Options that PETSc reads only at view/log time or during the solve are not "unused" at set-up.
  static const char* lateSuffixes[] = {"_view", "_monitor", "_converged_reason", "_log", "_view_pre", "_view_eigenvalues"};
  for (PetscInt i = 0; i < n; ++i) {
    const std::string name = names[i];
    bool late = name.rfind("log", 0) == 0 || name.rfind("malloc", 0) == 0 || name.rfind("options_", 0) == 0 ||
                name == "info" || name == "help" || name.rfind("on_error", 0) == 0 || name.rfind("history", 0) == 0 ||
                name.rfind("check_pointer", 0) == 0 || name.rfind("fp_trap", 0) == 0;
    for (const char* s : lateSuffixes) {
      const std::string suf = s;
      if (name.size() >= suf.size() && name.compare(name.size() - suf.size(), suf.size(), suf) == 0) late = true;
      if (name.find(suf + "_") != std::string::npos) late = true;
    }
    if (!late) out.push_back("-" + name);
  }
  FPDP_PETSC(PetscOptionsLeftRestore(nullptr, &n, &names, &values));
  return out;
}

}  // namespace fpdp::solver
