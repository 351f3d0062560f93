#pragma once
// What a run tells a caller of its progress, and how that caller stops it. The command line prints progress lines
// (app/run/ProgressReporter) and ends on SIGINT with a restart hint (app/run/InterruptHint); a caller in the
// same process that handles SIGINT itself (the Python module, python/) gives a progress hook instead: it is called
// on rank 0 at every step of the companion solves and of the run, and stops the run by throwing RunInterrupted,
// which keeps DIR.partial and its last checkpoint for a restart (app/commands/RunCase).
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>

namespace fpdp::app {

struct RunProgress {
  std::string phase;        // "companion_2h", "companion_4h" (the error estimate's solves) or "run"
  std::string description;  // the phase in words, e.g. "error estimate, 2x coarser mesh (64x64 cells)"
  long step = 0;            // this phase's step and its last step
  long steps = 0;
  double t = 0.0;           // the time of the dynamics (noisy GD: eta k)
  double kl = std::numeric_limits<double>::quiet_NaN();  // KL at the phase's last output step (NaN: none yet)
  double elapsed = 0.0;     // seconds since the phase's first step in this process
  double remaining = std::numeric_limits<double>::quiet_NaN();  // the estimate of ProgressReporter (NaN: none yet)
};

using ProgressHook = std::function<void(const RunProgress&)>;

/// Thrown by a progress hook to stop the run (rank 0 only: a hook is for runs of one process).
struct RunInterrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace fpdp::app
