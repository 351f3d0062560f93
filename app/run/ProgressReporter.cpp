#include "app/run/ProgressReporter.hpp"

#include <unistd.h>

#include <cstdio>
#include <limits>
#include <utility>

#include "app/run/NumberFormat.hpp"

namespace fpdp::app {

ProgressReporter::ProgressReporter(long steps, bool active, std::string label, ProgressHook hook, std::string phase)
    : steps_(steps),
      active_(active),
      tty_(isatty(STDOUT_FILENO)),
      label_(std::move(label)),
      phase_(std::move(phase)),
      hook_(std::move(hook)),
      lastPrint_(Clock::now()) {}

void ProgressReporter::everyStep(long step, double t) {
  if (!active_ && !hook_) return;
  const auto now = Clock::now();
  if (firstStep_ < 0) {
    firstStep_ = step;
    firstTime_ = now;
  }
  if (hook_) report(step, t, now);
  if (active_ && std::chrono::duration<double>(now - lastPrint_).count() >= kInterval && step > firstStep_)
    print(step, t);
}

void ProgressReporter::report(long step, double t, Clock::time_point now) {
  RunProgress p;
  p.phase = phase_;
  p.description = label_.empty() ? "run" : label_;
  p.step = step;
  p.steps = steps_;
  p.t = t;
  p.kl = lastKl_ < 0 ? std::numeric_limits<double>::quiet_NaN() : lastKl_;
  p.elapsed = std::chrono::duration<double>(now - firstTime_).count();
  if (step > firstStep_)
    p.remaining = p.elapsed * static_cast<double>(steps_ - step) / static_cast<double>(step - firstStep_);
  hook_(p);
}

void ProgressReporter::observe(const OutputStep& s) { lastKl_ = s.values.kl; }

void ProgressReporter::print(long step, double t) {
  const auto now = Clock::now();
  const double elapsed = std::chrono::duration<double>(now - firstTime_).count();
  const double remaining =
      elapsed * static_cast<double>(steps_ - step) / static_cast<double>(step - firstStep_);
  const std::string kl = lastKl_ < 0 ? std::string("-") : formatNumber(lastKl_, "%.4e");
  std::printf("%s%s%sstep %ld/%ld  t = %.4g  KL = %s  stepping %.1f s  remaining ~%.1f s%s", tty_ ? "\r" : "",
              label_.c_str(), label_.empty() ? "" : ": ", step, steps_, t, kl.c_str(), elapsed, remaining,
              tty_ ? "   " : "\n");
  std::fflush(stdout);
  open_ = tty_;
  lastPrint_ = now;
}

void ProgressReporter::close() {
  if (open_) std::printf("\n");
  open_ = false;
}

}  // namespace fpdp::app
