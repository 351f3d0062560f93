#pragma once
// `fpdp run`: a case from its plan to its summary, as named stages (docs/architecture.md):
//   1. plan:     the models (L_D, L_D', the initial Gaussian), the mesh, the discretisation, the propagator and the
//                exact oracle where a closed form exists (app/run/RunPlan);
//   2. output:   DIR.partial with fpdp.h5, and the observers of every output step (app/observers/: divergence.csv,
//                the privacy profile and bounds, the functionals, the rate checks, exact values, fields and ParaView,
//                the tracing diffusions, checkpoints, progress), each behind app/run/RunObserver;
//   3. stepping: the state from its start (or a checkpoint) to the end, faults checked at every step, the
//                observers notified at every output step (app/run/RunStepper);
//   4. finish:   every observer's part of fpdp.h5 and its files, the plots, DIR.partial renamed to DIR
//                (app/run/OutputDirectory);
//   5. summary:  the final state, conservation, positivity, warnings, bounds and timings (app/run/RunSummary).
// A failed run leaves no half-written DIR; a killed run leaves DIR.partial, which `fpdp run --restart DIR` continues
// from its last checkpoint (app/run/Checkpoint).
#include <functional>
#include <memory>
#include <string>

#include "app/case/Case.hpp"
#include "app/run/OutputDirectory.hpp"
#include "app/run/RunProgress.hpp"
#include "io/CheckpointFile.hpp"

namespace fpdp::app {

struct RunOptions {
  std::string outputDirectory;  // resolved: --output or case.output.directory
  bool quiet = false;
  /// --restart: the checkpoint to continue from (read and checked against the case by the caller; every rank holds
  /// it). The run continues in outputDirectory + ".partial" (app/run/Checkpoint).
  std::shared_ptr<const io::CheckpointData> resume;
  /// Called on rank 0 at every step of the companion solves and of the run (app/run/RunProgress.hpp); it may throw
  /// RunInterrupted, which stops the run and keeps DIR.partial (with its last checkpoint, if any) for a restart.
  ProgressHook progress;
  /// Whether SIGINT, SIGTERM and SIGHUP print the restart hint and end the process while the run steps (the command
  /// line); false leaves the process's own handlers in place (the Python module, whose Ctrl-C reaches the hook).
  bool interruptHint = true;
  /// Where the summary goes: empty prints it on standard output (rank 0), else it is handed to this.
  std::function<void(const std::string&)> summary;
};

/// Collective over PETSC_COMM_WORLD. Returns the process exit status (0 on success).
int runCase(const Case& c, const RunOptions& options);

}  // namespace fpdp::app
