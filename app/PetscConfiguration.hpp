#pragma once
// The bridge between a case's [solver] table / the command line and PETSc's options database.
// Precedence: command-line options > case solver.petsc_options > case solver.{ts,ksp,pc}_type > fpdp defaults.
#include <petscsys.h>

#include <stdexcept>
#include <string>

#include "app/Case.hpp"

namespace fpdp::app {

/// A solver choice PETSc rejects (unknown type, unused option): bad input, exit status 2.
struct SolverConfigurationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Adds the case's petsc_options to the options database unless the command line already set them.
void insertCaseOptions(const SolverSpec& solver);
/// Checks the TS/KSP/PC type names of the case and of the command line against PETSc's registries.
void validateSolverTypes(const SolverSpec& solver);

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
