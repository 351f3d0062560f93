#pragma once
// The PETSc log stages of a run, so that -log_view splits the whole run (docs/scaling.md §1): set-up (models,
// mesh, operator, integrator, output files opened), stepping (the integrator, output steps excluded), output steps
// (divergences, bounds, reference errors, files at each output step) and finish (the tables and fpdp.h5 closed).
#include <petsclog.h>

#include "meshes/PetscHandles.hpp"

namespace fpdp::app {

struct RunLogStages {
  PetscLogStage setup = 0, stepping = 0, outputSteps = 0, finish = 0;
  static const RunLogStages& get() {
    static const RunLogStages stages = [] {
      RunLogStages r;
      FPDP_PETSC(PetscLogStageRegister("fpdp set-up", &r.setup));
      FPDP_PETSC(PetscLogStageRegister("fpdp stepping", &r.stepping));
      FPDP_PETSC(PetscLogStageRegister("fpdp output steps", &r.outputSteps));
      FPDP_PETSC(PetscLogStageRegister("fpdp finish", &r.finish));
      return r;
    }();
    return stages;
  }
};

/// A log stage pushed for the object's lifetime (popped on every path out, exceptions included).
class ScopedLogStage {
public:
  explicit ScopedLogStage(PetscLogStage stage) { FPDP_PETSC(PetscLogStagePush(stage)); }
  ~ScopedLogStage() { (void)PetscLogStagePop(); }
  ScopedLogStage(const ScopedLogStage&) = delete;
  ScopedLogStage& operator=(const ScopedLogStage&) = delete;
};

}  // namespace fpdp::app
