#pragma once
// On SIGINT, SIGTERM or SIGHUP, one line on standard error saying how the interrupted run continues (`fpdp run --restart DIR`
// once it has a checkpoint, else that it must start again); then the process's private MPI session directory is
// removed (app/platform/PetscConfiguration.hpp) and the signal takes its default course (exit 130 for SIGINT, DIR.partial left
// as it is: docs/output.md, "Files during a run").
#include <string>

namespace fpdp::app {

class InterruptHint {
public:
  /// `active`: whether this process prints the line (rank 0).
  InterruptHint(const std::string& finalDir, bool active);
  ~InterruptHint();  // the handlers before it again
  InterruptHint(const InterruptHint&) = delete;
  InterruptHint& operator=(const InterruptHint&) = delete;
  /// After a checkpoint is on disk: from now on the line names --restart.
  static void checkpointWritten();
  /// The line (without its newlines) for the run whose output directory is `finalDir`: how it continues once it
  /// has a checkpoint (`hasCheckpoint`), else that it must start again.
  static std::string message(const std::string& finalDir, bool hasCheckpoint);
};

}  // namespace fpdp::app
