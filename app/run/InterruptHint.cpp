#include "app/run/InterruptHint.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>

namespace fpdp::app {

namespace {

// Composed before any signal can arrive: the handler only writes them (async-signal-safe).
char gBeforeCheckpoint[1024] = {};
char gAfterCheckpoint[1024] = {};
volatile std::sig_atomic_t gHasCheckpoint = 0;
volatile std::sig_atomic_t gActive = 0;

extern "C" void onInterrupt(int signal) {
  if (gActive) {
    const char* line = gHasCheckpoint ? gAfterCheckpoint : gBeforeCheckpoint;
    (void)!::write(STDERR_FILENO, line, std::strlen(line));
  }
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

InterruptHint::InterruptHint(const std::string& finalDir, bool active) {
  const std::string partial = finalDir + ".partial";
  const std::string after = "\nfpdp: interrupted; continue from the last checkpoint with 'fpdp run --restart " +
                            finalDir + "' (the run so far is in " + partial + ")\n";
  const std::string before = "\nfpdp: interrupted before the first checkpoint; nothing to continue: run the case "
                             "again (" + partial + " holds the files written so far)\n";
  std::snprintf(gAfterCheckpoint, sizeof gAfterCheckpoint, "%s", after.c_str());
  std::snprintf(gBeforeCheckpoint, sizeof gBeforeCheckpoint, "%s", before.c_str());
  gHasCheckpoint = 0;
  gActive = active ? 1 : 0;
  std::signal(SIGINT, onInterrupt);
  std::signal(SIGTERM, onInterrupt);
}

InterruptHint::~InterruptHint() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  gActive = 0;
}

void InterruptHint::checkpointWritten() { gHasCheckpoint = 1; }

}  // namespace fpdp::app
