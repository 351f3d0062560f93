#pragma once
// The progress line of a run on standard output (rank 0, not with --quiet): the step, the time, KL, the elapsed
// and the estimated remaining wall time, at most once a second; rewritten in place on a terminal.
#include <chrono>

#include "app/run/RunObserver.hpp"

namespace fpdp::app {

class ProgressReporter final : public RunObserver {
public:
  /// `wallStart`: when the run started; `steps`: the last step.
  ProgressReporter(std::chrono::steady_clock::time_point wallStart, long steps, bool active);
  void observe(const OutputStep& s) override;

private:
  std::chrono::steady_clock::time_point wallStart_, lastProgress_;
  long steps_;
  bool active_;
  bool tty_;
};

}  // namespace fpdp::app
