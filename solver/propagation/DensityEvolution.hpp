#pragma once
// Time integration of du/dt = A u with PETSc TS, for a constant (assembled once) spatial operator A:
// the method of lines for the coupled Fokker–Planck equations of p and q (both fields in one vector).
//
// Space and time are kept apart: FokkerPlanckOperator supplies A; TS owns time. The problem is given to TS in
// implicit form, declared TS_LINEAR:
//   IFunction  F(t, u, udot) = udot - A u,
//   IJacobian  J = dF/du + shift dF/dudot = shift I - A,
// and J is rebuilt only when TS asks for a new shift. With a fixed step the shift is constant after the start-up
// step, the matrix state does not change, and PETSc keeps the LU factors (or the multigrid hierarchy): one
// factorisation per distinct shift instead of one per step. A is never re-assembled.
// Defaults (second-order BDF, direct LU; MUMPS in parallel) are set before *SetFromOptions, so -ts_type,
// -ksp_type, -pc_type and every other PETSc option on the command line override them.
//
// Observers run from a TS monitor after each completed step (never inside a residual).
#include <petscts.h>

#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "solver/propagation/DensityPropagator.hpp"
#include "solver/discretisation/StencilOperator.hpp"

namespace fpdp::solver {

struct TimeIntegration {
  double dt = 0.01;
  long steps = 100;
  std::string tsType = "bdf";
  std::string kspType = "preonly";
  std::string pcType = "lu";
  std::string optionsPrefix;  // PETSc options prefix of this integrator (e.g. "diffusion_" -> -diffusion_ts_type)
};

class DensityEvolution final : public DensityPropagator {
public:
  /// Takes ownership of A.
  DensityEvolution(const meshes::DistributedBoxMesh& mesh, meshes::MatHandle A, const TimeIntegration& ti);

  /// The observer is called for step 0 (initial state) and then after every step.
  void setUp(Vec u) override;
  void run(Vec u, const Observer& observer, double startTime = 0.0) override;
  void resume(Vec u, const Observer& observer, const IntegratorState& state) override;
  /// Throws PetscFailure for a TS type whose history cannot be captured (supported: bdf, and the one-step
  /// arkimex and beuler, which carry nothing from step to step in the configuration fpdp sets).
  IntegratorState captureState() const override;
  void requireCheckpointable() const override;
  /// TS stops after the step under way.
  void stopAfter(long step) override;

  TS ts() const { return ts_; }
  Mat op() const { return A_; }
  std::string describe() const override;
  long stepsTaken() const override { return stepsTaken_; }
  /// How many times the matrix the preconditioner is built from (shift I - A) was rebuilt (each one means a new
  /// factorisation).
  long jacobianBuilds() const { return jacobianBuilds_; }

private:
  void restoreState(const IntegratorState& state, Vec u);
  static PetscErrorCode monitor(TS ts, PetscInt step, PetscReal time, Vec u, void* ctx);
  void solveObserved(Vec u);  // TSSolve, rethrowing what the observer threw as itself
  static PetscErrorCode implicitFunction(TS ts, PetscReal t, Vec u, Vec udot, Vec F, void* ctx);
  static PetscErrorCode implicitJacobian(TS ts, PetscReal t, Vec u, Vec udot, PetscReal shift, Mat J, Mat P,
                                         void* ctx);
  const meshes::DistributedBoxMesh& mesh_;
  meshes::MatHandle A_;
  // A in star-stencil form for the implicit function udot - A u (one pass, as a residual), where A is a star and the
  // memory-lean in-place ILU path is not in use; empty otherwise (then MatMult).
  StencilOperator stencilA_;
  meshes::VecHandle ghostedU_;  // the mesh's local vector for stencilA_ (several ranks)
  meshes::MatHandle J_;             // shift I - A for the current shift
  PetscReal jacobianShift_ = -1.0;  // the shift J_ holds (none yet)
  // One factorisation for BDF with a direct solver (enableSingleFactorisation): P_ holds steadyShift_ I - A.
  void enableSingleFactorisation(KSP ksp, PC pc);
  // Serial ILU(0) (enableInPlaceIlu): the Krylov method applies shift I - A through the shell S_ (A and the current
  // shift), and P_ = s I - A, built once, is factorised in place by the PC, so neither J_ nor a separate factor is
  // stored: one assembled matrix fewer (docs/scaling.md §3).
  void enableInPlaceIlu(PC pc);
  static PetscErrorCode shellMult(Mat S, Vec x, Vec y);
  meshes::MatHandle S_;
  bool inPlaceIlu_ = false;
  meshes::MatHandle P_;
  PetscReal steadyShift_ = -1.0;         // alpha_k / dt of the constant-step BDF (-1: not in use)
  PetscReal preconditionerTargetShift_ = -1.0;  // in-place ILU: the shift P_ is built with (-1: the first one)
  PetscReal preconditionerShift_ = -1.0;  // the shift P_ holds (none yet)
  KSP ksp_ = nullptr;
  long jacobianBuilds_ = 0;
  PetscHandle<TS, TSDestroy> ts_;
  TimeIntegration ti_;
  const Observer* observer_ = nullptr;
  // What the observer threw inside TSSolve's monitor: it crosses PETSc as an error and is rethrown as itself.
  std::exception_ptr observerException_;
  long stepsTaken_ = 0;
  long skipObserverAt_ = -1;  // resume(): the step whose observer call the uninterrupted run already made
};

/// Checks that every PETSc option given (command line or case file) was used by the configured objects,
/// ignoring viewer/monitor options that PETSc only reads later. Returns the unused names (empty if none).
std::vector<std::string> unusedPetscOptions();

}  // namespace fpdp::solver
