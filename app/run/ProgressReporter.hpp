#pragma once
// The progress line of a run on standard output (rank 0, not with --quiet): the step, the time, the KL of the last
// output step, the elapsed and the estimated remaining wall time, at least every 2 s of stepping (at every step of
// noisy GD and of a PETSc integrator; the exponential integrator reports at its output steps, between which it takes
// no steps). On a terminal the line is rewritten in place; elsewhere (a log file, mpiexec's forwarding) each update
// is a line of its own. The remaining time extrapolates the stepping rate since the first step of this process, so
// the set-up (and, for a continued run, the steps before the checkpoint) do not inflate it. The companion solves of
// the error estimate report the same way, their lines prefixed with what they solve. A progress hook
// (app/run/RunProgress.hpp) is called at every step with the same figures.
#include <chrono>
#include <string>

#include "app/run/RunObserver.hpp"
#include "app/run/RunProgress.hpp"

namespace fpdp::app {

class ProgressReporter final : public RunObserver {
public:
  /// `steps`: the last step; `active`: whether this process prints; `label`: what the lines are about, before the
  /// step ("" for the run itself); `hook`: called at every step (empty: none) with `phase` and the label's words.
  ProgressReporter(long steps, bool active, std::string label = "", ProgressHook hook = {},
                   std::string phase = "run");
  void everyStep(long step, double t) override;
  void observe(const OutputStep& s) override;
  /// Ends a line left open on a terminal.
  void close() override;

  static constexpr double kInterval = 1.0;  // seconds between updates (the promise is "at least every 2 s")

private:
  using Clock = std::chrono::steady_clock;
  void print(long step, double t);
  void report(long step, double t, Clock::time_point now);

  long steps_;
  bool active_, tty_;
  std::string label_, phase_;
  ProgressHook hook_;
  bool open_ = false;       // a terminal line waits for its end
  long firstStep_ = -1;     // the first step this process took
  Clock::time_point firstTime_, lastPrint_;
  double lastKl_ = -1.0;    // KL at the last output step (negative: none yet)
};

}  // namespace fpdp::app
