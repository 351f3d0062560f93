#include "app/observers/ProgressReporter.hpp"

#include <unistd.h>

#include <cstdio>

#include "app/NumberFormat.hpp"

namespace fpdp::app {

ProgressReporter::ProgressReporter(std::chrono::steady_clock::time_point wallStart, long steps, bool active)
    : wallStart_(wallStart), lastProgress_(std::chrono::steady_clock::now()), steps_(steps), active_(active), tty_(isatty(STDOUT_FILENO)) {}

void ProgressReporter::observe(const OutputStep& s) {
  const auto now = std::chrono::steady_clock::now();
  if (!active_ || std::chrono::duration<double>(now - lastProgress_).count() <= 1.0) return;
  const double elapsed = std::chrono::duration<double>(now - wallStart_).count();
  const double eta =
      s.step > 0 ? elapsed * static_cast<double>(steps_ - s.step) / static_cast<double>(s.step) : 0.0;
  std::printf("%sstep %ld/%ld  t = %.4g  KL = %s  elapsed %.1f s  remaining ~%.1f s%s", tty_ ? "\r" : "", s.step,
              steps_, s.t, formatNumber(s.values.kl, "%.4e").c_str(), elapsed, eta, tty_ ? "   " : "\n");
  std::fflush(stdout);
  lastProgress_ = now;
}

}  // namespace fpdp::app
