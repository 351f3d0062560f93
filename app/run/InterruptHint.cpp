#include "app/run/InterruptHint.hpp"

#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>

#include "app/platform/PetscConfiguration.hpp"

namespace fpdp::app {

namespace {

// Composed before any signal can arrive: the handler only writes them (async-signal-safe).
char gBeforeCheckpoint[1024] = {};
char gAfterCheckpoint[1024] = {};
volatile std::sig_atomic_t gHasCheckpoint = 0;
volatile std::sig_atomic_t gActive = 0;
// The handlers before this one, again after the run (fpdp's removal of its MPI session directory,
// app/platform/PetscConfiguration.hpp, or the default course, also where the signal was ignored).
struct sigaction gPreviousInterrupt {}, gPreviousTerminate {}, gPreviousHangup {};

extern "C" void onInterrupt(int signal) {
  if (gActive) {
    const char* line = gHasCheckpoint ? gAfterCheckpoint : gBeforeCheckpoint;
    (void)!::write(STDERR_FILENO, line, std::strlen(line));
  }
  removeMpiSessionBaseInSignalHandler();
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

}  // namespace

std::string InterruptHint::message(const std::string& finalDir, bool hasCheckpoint) {
  const std::string partial = finalDir + ".partial";
  if (hasCheckpoint)
    return "interrupted; continue from the last checkpoint with 'fpdp run --restart " + finalDir +
           "' (the run so far is in " + partial + ")";
  return "interrupted before the first checkpoint; nothing to continue: run the case again (" + partial +
         " holds the files written so far)";
}

InterruptHint::InterruptHint(const std::string& finalDir, bool active) {
  const std::string after = "\nfpdp: " + message(finalDir, true) + "\n";
  const std::string before = "\nfpdp: " + message(finalDir, false) + "\n";
  std::snprintf(gAfterCheckpoint, sizeof gAfterCheckpoint, "%s", after.c_str());
  std::snprintf(gBeforeCheckpoint, sizeof gBeforeCheckpoint, "%s", before.c_str());
  gHasCheckpoint = 0;
  gActive = active ? 1 : 0;
  struct sigaction hint {};
  hint.sa_handler = onInterrupt;
  sigemptyset(&hint.sa_mask);
  sigaction(SIGINT, &hint, &gPreviousInterrupt);
  sigaction(SIGTERM, &hint, &gPreviousTerminate);
  // SIGHUP (a closed terminal, a batch system) went to PETSc's handler: a PETSc error trace, MPI_Abort (status 59)
  // and no word of the restart.
  sigaction(SIGHUP, &hint, &gPreviousHangup);
  // After the run, a signal the parent had ignored (SIGINT of a shell's background job) ends the process, as before.
  for (struct sigaction* previous : {&gPreviousInterrupt, &gPreviousTerminate, &gPreviousHangup})
    if (previous->sa_handler == SIG_IGN) previous->sa_handler = SIG_DFL;
}

InterruptHint::~InterruptHint() {
  sigaction(SIGINT, &gPreviousInterrupt, nullptr);
  sigaction(SIGTERM, &gPreviousTerminate, nullptr);
  sigaction(SIGHUP, &gPreviousHangup, nullptr);
  gActive = 0;
}

void InterruptHint::checkpointWritten() { gHasCheckpoint = 1; }

}  // namespace fpdp::app
