#pragma once
// How a command of fpdp that failed ends, in one home for every front end: the command line prints
// "fpdp: <line>" and exits with the status; the Python module (python/) raises the same message as an exception
// (bad input: fpdp.CaseError, a ValueError; a failure: fpdp.RunError).
#include <exception>
#include <string>

#include "app/platform/PetscConfiguration.hpp"

namespace fpdp::app {

struct CommandFailure {
  int status = 1;       // 2: bad input (the case, the command line, the output directory, a checkpoint); 1: failure
  std::string kind;     // "error" (status 2) or the failure's word, e.g. "run failed"
  std::string message;  // the one-line reason
  /// What the command line prints after "fpdp: ".
  std::string line() const { return kind + ": " + message; }
};

/// The failure the exception `e` stands for. `petscErrors`: the PETSc errors recorded while the command ran (null
/// outside PETSc), whose first message replaces the call site's and which decide whether PETSc refused the solver
/// configuration (bad input); `failed`: the word for a failure ("run failed", "sweep failed").
CommandFailure describeFailure(std::exception_ptr e, const PetscErrorCapture* petscErrors,
                               const std::string& failed = "run failed");

}  // namespace fpdp::app
