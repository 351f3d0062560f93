#pragma once
// Child processes of fpdp (this same program, or a plotting script): `fpdp validate` runs its cases one after the
// other, `fpdp sweep` and `fpdp worst-case` run their members several at a time. Each child's standard output and
// error go to files, so that a failure can be reported with its last lines.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fpdp::app {

/// The Python that draws the plots of studies and of the validation report (Debian's, with matplotlib:
/// scripts/install-dependencies).
inline constexpr const char* kPythonInterpreter = "/usr/bin/python3";

struct ChildJob {
  std::vector<std::string> args;       // after the executable
  std::filesystem::path stdoutFile;    // appended to
  std::filesystem::path stderrFile;    // appended to; the same as stdoutFile for one log
  std::vector<std::string> environment;  // NAME=VALUE set for the child, beside this process's environment
};

/// While alive, runChildren on this thread calls `check` between its waits (about every 10 ms); an exception from it
/// stops the children still running (SIGINT, which leaves a run's DIR.partial as the command line's Ctrl-C does;
/// then waits for them) and is thrown on. The Python module's Ctrl-C (python/module).
class ChildWaitCheck {
public:
  explicit ChildWaitCheck(std::function<void()> check);
  ~ChildWaitCheck();
  void operator()() const;
  ChildWaitCheck(const ChildWaitCheck&) = delete;
  ChildWaitCheck& operator=(const ChildWaitCheck&) = delete;

private:
  std::function<void()> check_;
  const ChildWaitCheck* previous_;
};

/// Runs `executable args...` with stdout and stderr appended to `log`; returns the exit status (or 128 + signal).
int runChild(const std::string& executable, const std::vector<std::string>& args, const std::filesystem::path& log,
             const std::vector<std::string>& environment = {});

/// Runs every job, at most `parallel` at a time, in the order given; `finished(job, status)` is called as each ends
/// (status: the exit status, or 128 + signal). Returns the statuses in the jobs' order. A job that cannot be started
/// throws std::runtime_error after the jobs already running have ended.
///
/// The children die with this process (docs/sweeps.md): each is started with PR_SET_PDEATHSIG (SIGTERM when this
/// process ends, however it ends, SIGKILL included) in a process group of its own, and while children run, SIGINT,
/// SIGTERM and SIGHUP to this process send SIGTERM to every child's group before this process ends by the signal.
std::vector<int> runChildren(const std::string& executable, const std::vector<ChildJob>& jobs, int parallel,
                             const std::function<void(std::size_t, int)>& finished);

/// runChildren for jobs made one at a time, as a slot frees: `next(i)` makes job i (i = 0, 1, ...) just before it
/// starts, returns nullopt when there is none left, and may throw: then no further job starts, the running ones are
/// stopped (SIGTERM to their groups) and waited for, and the exception propagates. `finished` as above; returns the
/// statuses of the jobs made, in order.
std::vector<int> runChildrenAsMade(const std::string& executable,
                                   const std::function<std::optional<ChildJob>(std::size_t)>& next, int parallel,
                                   const std::function<void(std::size_t, int)>& finished);

/// Runs `/usr/bin/python3 script args...` (a plotting script) with its output in `log`, removed on success. Returns ""
/// on success, else the warning to print (python3 or the script missing, the script failing: its last line); never
/// throws for a plotter that cannot start, so that what was computed stays. matplotlib's configuration and cache go
/// to a private directory beside the log (MPLCONFIGDIR, XDG_CONFIG_HOME, XDG_CACHE_HOME), removed afterwards: the
/// plot writes nothing outside the directory it draws into (not $HOME/.cache/matplotlib).
std::string runPlotScript(const std::filesystem::path& script, const std::vector<std::string>& args,
                          const std::filesystem::path& log);

/// The last `n` lines of a text file joined by " | " (what a failed child said last).
std::string lastLines(const std::filesystem::path& file, int n);

/// This program's own path (/proc/self/exe), else argv0.
std::string selfExecutable(const char* argv0);

}  // namespace fpdp::app
