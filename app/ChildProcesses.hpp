#pragma once
// Child processes of fpdp (this same program, or a plotting script): `fpdp validate` runs its cases one after the
// other, `fpdp sweep` and `fpdp worst-case` run their members several at a time. Each child's standard output and
// error go to files, so that a failure can be reported with its last lines.
#include <cstddef>
#include <filesystem>
#include <functional>
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
int runChild(const std::string& executable, const std::vector<std::string>& args, const std::filesystem::path& log);

/// Runs every job, at most `parallel` at a time, in the order given; `finished(job, status)` is called as each ends
/// (status: the exit status, or 128 + signal). Returns the statuses in the jobs' order. A job that cannot be started
/// throws std::runtime_error after the jobs already running have ended.
std::vector<int> runChildren(const std::string& executable, const std::vector<ChildJob>& jobs, int parallel,
                             const std::function<void(std::size_t, int)>& finished);

/// Runs `/usr/bin/python3 script args...` (a plotting script) with its output in `log`, removed on success. Returns ""
/// on success, else the warning to print (python3 or the script missing, the script failing: its last line); never
/// throws for a plotter that cannot start, so that what was computed stays.
std::string runPlotScript(const std::filesystem::path& script, const std::vector<std::string>& args,
                          const std::filesystem::path& log);

/// The last `n` lines of a text file joined by " | " (what a failed child said last).
std::string lastLines(const std::filesystem::path& file, int n);

/// This program's own path (/proc/self/exe), else argv0.
std::string selfExecutable(const char* argv0);

}  // namespace fpdp::app
