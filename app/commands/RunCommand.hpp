#pragma once
// The commands that run a case on PETSC_COMM_WORLD once MPI and PETSc are started (`fpdp run`, `check`, `sample`,
// `noise-study`; a member of a sweep run in-process under MPI, app/commands/MemberDispatch): the case's PETSc options, the
// command, and every failure turned into one line on stderr and the exit status (0, 1 run-time failure, 2 bad input).
#include <memory>
#include <string>

#include "app/case/Case.hpp"
#include "app/commands/CommandFailure.hpp"
#include "app/platform/CommandLine.hpp"
#include "io/CheckpointFile.hpp"

namespace fpdp::app {

/// Prints "fpdp: <failure's line>" on rank 0 and returns its status.
int reportError(int rank, const CommandFailure& failure);
/// A failure found by the caller, not from an exception: `kind` as in CommandFailure ("error", "run failed").
int reportError(int rank, const std::string& kind, const std::string& message, int status);

/// The output directory a command writes: --output, else noise-study's default, else the case's output.directory.
std::string outputDirectoryOf(const CommandLine& cl, const Case& c);

/// Runs cl.command for the case (read and checked by the caller); `checkpoint` and `restartDir` for run --restart.
/// Collective over PETSC_COMM_WORLD. Returns the exit status.
int runCommand(const CommandLine& cl, const Case& c, std::shared_ptr<const io::CheckpointData> checkpoint,
               const std::string& restartDir);

}  // namespace fpdp::app
