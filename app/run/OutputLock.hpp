#pragma once
// One writer per output directory (docs/faults.md §4): every command that writes an output directory DIR (run,
// run --restart, noise-study, sample, plot, sweep, worst-case) first takes an advisory lock on the file
// DIR.fpdp-lock beside it, and holds it until it ends. The lock covers DIR, DIR.partial and DIR.sample-partial
// alike: it is taken before any of them is looked at, so two runs into one --output can never both find DIR.partial
// absent, and two restarts of one DIR.partial can never both append to it.
//
// The lock is a POSIX record lock (fcntl F_SETLK) on the whole file: the kernel releases it when its process ends,
// however it ends (SIGKILL included), so a killed run never blocks the next one. It is never waited for: a second
// writer is refused at once, naming the holder's process id (F_GETLK). The holder removes the file when it is done;
// a lock taken on a file that was removed (or replaced) between open and lock is dropped and taken again on the file
// now at that name, so the removal cannot let two writers in.
#include <string>

namespace fpdp::app {

class OutputLock {
public:
  /// Takes the lock of the output directory `dir` (as normalised by normaliseOutputDirectory) or throws
  /// OutputDirectoryError at once: "output directory 'DIR' is in use by another fpdp process (pid N) ...", or why the
  /// lock file cannot be made (a link, a special file, a file fpdp did not write under that name, no permission).
  explicit OutputLock(const std::string& dir);
  /// Removes the lock file, then releases the lock.
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

  /// The lock file of `dir`: dir + ".fpdp-lock".
  static std::string lockFile(const std::string& dir);

private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace fpdp::app
