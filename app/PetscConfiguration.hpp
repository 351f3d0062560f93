#pragma once
// The bridge between a case's [solver] table / the command line and PETSc's options database.
// Precedence: command-line options > case solver.petsc_options > case solver.{ts,ksp,pc}_type > fpdp defaults.
#include <petscsys.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "app/Case.hpp"

namespace fpdp::app {

/// This process's rank as the MPI launcher (mpiexec, srun, hydra) put it in the environment, before MPI starts; none
/// when no launcher started it.
std::optional<int> launcherRank();
/// True when an MPI launcher started this process: its environment names a rank or a world size.
bool launchedByMpiLauncher();
/// Before MPI starts: a process no launcher started is an Open MPI singleton, and Open MPI's default point-to-point
/// layer (UCX) spends about 0.2 s probing network devices one process never uses. For such a run only, and only if
/// the user has not chosen one (OMPI_MCA_pml unset), selects the ob1 layer (self and shared memory), which starts in
/// a fraction of that. Launched runs are left alone: every rank must agree, and a cluster wants its fabric.
/// Returns true if it set the choice (other MPI implementations ignore the variable).
bool preferLightSingletonMpiStartup();

/// A solver choice PETSc rejects (unknown type, unused option): bad input, exit status 2.
struct SolverConfigurationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Adds the case's petsc_options to the options database unless the command line already set them.
void insertCaseOptions(const SolverSpec& solver);
/// The time integrator in effect: -ts_type from the command line or petsc_options, else solver.ts_type; "auto" resolves
/// to "exponential" (solver::ExponentialEvolution) for Langevin runs with Sigma and Sigma' multiples of the identity and
/// solver.spatial_order = 2, and to "bdf" otherwise. Reading -ts_type marks it used.
std::string effectiveTsType(const Case& c);
/// -ts_type from the command line or petsc_options, else solver.ts_type, unresolved ("auto" stays "auto").
std::string requestedTsType(const SolverSpec& solver);
/// Checks the TS/KSP/PC type names of the case and of the command line against PETSc's registries.
void validateSolverTypes(const Case& c);

/// While alive, PETSc errors are not printed but recorded; message() is the first one's text.
class PetscErrorCapture {
public:
  PetscErrorCapture();
  ~PetscErrorCapture();
  const std::string& message() const { return message_; }

private:
  static PetscErrorCode handler(MPI_Comm, int, const char*, const char*, PetscErrorCode, PetscErrorType, const char*,
                                void*);
  std::string message_;
};

}  // namespace fpdp::app
