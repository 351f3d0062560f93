#pragma once
// The commands that run a case on PETSC_COMM_WORLD once MPI and PETSc are started (`fpdp run`, `check`, `sample`,
// `noise-study`; a member of a sweep run in-process under MPI, app/MemberDispatch): the case's PETSc options, the
// command, and every failure turned into one line on stderr and the exit status (0, 1 run-time failure, 2 bad input).
#include <memory>
#include <string>

#include "app/Case.hpp"
#include "app/CommandLine.hpp"
#include "io/CheckpointFile.hpp"

namespace fpdp::app {

/// Prints "fpdp: <kind><what>" on rank 0 and returns `status`.
int reportError(int rank, const char* kind, const std::string& what, int status);

/// Runs cl.command for the case (read and checked by the caller); `checkpoint` and `restartDir` for run --restart.
/// Collective over PETSC_COMM_WORLD. Returns the exit status.
int runCommand(const CommandLine& cl, const Case& c, std::shared_ptr<const io::CheckpointData> checkpoint,
               const std::string& restartDir);

}  // namespace fpdp::app
