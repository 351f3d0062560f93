#include "app/platform/ChildProcesses.hpp"

#include "io/OutputFile.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

extern char** environ;

namespace fpdp::app {

namespace fs = std::filesystem;

namespace {

// The children now running, for the signal handler that stops them (async-signal-safe: a fixed array of pids, each
// the leader of its own process group; 0 is a free slot).
constexpr std::size_t kMaxChildren = 4096;
volatile sig_atomic_t gChildren[kMaxChildren] = {};
struct sigaction gPreviousHandlers[3] {};
constexpr int kForwarded[3] = {SIGINT, SIGTERM, SIGHUP};

extern "C" void stopChildrenAndEnd(int signal) {
  for (std::size_t i = 0; i < kMaxChildren; ++i)
    if (const pid_t pid = static_cast<pid_t>(gChildren[i]); pid > 0) ::kill(-pid, SIGTERM);
  // Then this process's own course for the signal: the handler that was there before, or the end of the process.
  for (std::size_t k = 0; k < 3; ++k)
    if (kForwarded[k] == signal) ::sigaction(signal, &gPreviousHandlers[k], nullptr);
  ::raise(signal);
}

void remember(pid_t pid) {
  for (std::size_t i = 0; i < kMaxChildren; ++i)
    if (gChildren[i] == 0) {
      gChildren[i] = pid;
      return;
    }
}

void forget(pid_t pid) {
  for (std::size_t i = 0; i < kMaxChildren; ++i)
    if (gChildren[i] == pid) gChildren[i] = 0;
}

/// While children run, SIGINT, SIGTERM and SIGHUP stop them first (a signal this process ignores stays ignored).
struct ForwardSignals {
  bool installed[3] = {false, false, false};
  ForwardSignals() {
    for (std::size_t k = 0; k < 3; ++k) {
      struct sigaction stop {};
      stop.sa_handler = stopChildrenAndEnd;
      sigemptyset(&stop.sa_mask);
      if (::sigaction(kForwarded[k], nullptr, &gPreviousHandlers[k]) == 0 &&
          gPreviousHandlers[k].sa_handler != SIG_IGN)
        installed[k] = ::sigaction(kForwarded[k], &stop, nullptr) == 0;
    }
  }
  ~ForwardSignals() {
    for (std::size_t k = 0; k < 3; ++k)
      if (installed[k]) ::sigaction(kForwarded[k], &gPreviousHandlers[k], nullptr);
  }
  ForwardSignals(const ForwardSignals&) = delete;
  ForwardSignals& operator=(const ForwardSignals&) = delete;
};

pid_t spawnChild(const std::string& executable, const ChildJob& job) {
  // The logs are opened here as every output file is (io/OutputFile: no link followed, no special file), and handed
  // to the child as its standard output and error.
  const io::OutputFile out = io::OutputFile::open(job.stdoutFile, io::OutputMode::Append);
  const io::OutputFile errors = job.stderrFile == job.stdoutFile
                                    ? io::OutputFile()
                                    : io::OutputFile::open(job.stderrFile, io::OutputMode::Append);
  // Everything the child needs is made before the fork: between fork and exec only async-signal-safe calls.
  std::vector<std::string> words{executable};
  words.insert(words.end(), job.args.begin(), job.args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::vector<std::string> variables = job.environment;
  std::vector<char*> envp;
  for (auto& v : variables) envp.push_back(v.data());
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const auto name = entry.substr(0, entry.find('=') + 1);
    const bool overridden = std::any_of(job.environment.begin(), job.environment.end(),
                                        [&](const std::string& v) { return v.rfind(name, 0) == 0; });
    if (!overridden) envp.push_back(*e);
  }
  envp.push_back(nullptr);
  const int outFd = out.descriptor(), errFd = errors.isOpen() ? errors.descriptor() : out.descriptor();
  const pid_t parent = ::getpid();
  sigset_t all, previous;
  sigfillset(&all);
  ::sigprocmask(SIG_BLOCK, &all, &previous);  // no handler of this process runs in the child
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // the parent ended before the line above: end too
    for (const int s : kForwarded) ::signal(s, SIG_DFL);
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    if (::dup2(outFd, 1) < 0 || ::dup2(errFd, 2) < 0) ::_exit(127);
    ::execve(executable.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  const int forkError = errno;
  if (pid > 0) {
    ::setpgid(pid, pid);  // also here: whichever of parent and child comes first
    remember(pid);
  }
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  if (pid < 0) throw std::runtime_error("cannot start " + executable + ": " + std::strerror(forkError));
  return pid;
}

thread_local const ChildWaitCheck* tCheck = nullptr;

int statusOf(int waitStatus) {
  if (WIFEXITED(waitStatus)) return WEXITSTATUS(waitStatus);
  return 128 + (WIFSIGNALED(waitStatus) ? WTERMSIG(waitStatus) : 0);
}

/// The exit status (or 128 + signal) of the child `pid` once it has ended, reaped; nullopt while it runs. An ended
/// child is seen before it is reaped (WNOWAIT): whatever it left running in its process group is stopped while its pid,
/// and so the group's id, cannot be reused by another process.
std::optional<int> reapIfEnded(pid_t pid, const std::string& executable) {
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno == EINTR) return std::nullopt;
    throw std::runtime_error("waitid failed for " + executable + ": " + std::strerror(errno));
  }
  if (info.si_pid != pid) return std::nullopt;
  ::kill(-pid, SIGTERM);
  forget(pid);  // before the pid is freed: the signal handler must not signal a group of that id afterwards
  int waitStatus = 0;
  while (::waitpid(pid, &waitStatus, 0) < 0 && errno == EINTR) {
  }
  return statusOf(waitStatus);
}

}  // namespace

ChildWaitCheck::ChildWaitCheck(std::function<void()> check) : check_(std::move(check)), previous_(tCheck) {
  tCheck = this;
}

ChildWaitCheck::~ChildWaitCheck() { tCheck = previous_; }

void ChildWaitCheck::operator()() const { check_(); }

int runChild(const std::string& executable, const std::vector<std::string>& args, const fs::path& log,
             const std::vector<std::string>& environment) {
  return runChildren(executable, {ChildJob{args, log, log, environment}}, 1, [](std::size_t, int) {}).front();
}

std::vector<int> runChildren(const std::string& executable, const std::vector<ChildJob>& jobs, int parallel,
                             const std::function<void(std::size_t, int)>& finished) {
  return runChildrenAsMade(
      executable, [&](std::size_t i) { return i < jobs.size() ? std::optional<ChildJob>(jobs[i]) : std::nullopt; },
      parallel, finished);
}

std::vector<int> runChildrenAsMade(const std::string& executable,
                                   const std::function<std::optional<ChildJob>(std::size_t)>& next, int parallel,
                                   const std::function<void(std::size_t, int)>& finished) {
  const ForwardSignals forward;
  std::vector<int> statuses;
  std::vector<std::pair<pid_t, std::size_t>> running;
  std::string startFailure;
  std::exception_ptr makeFailure;
  bool more = true;
  const std::size_t slots = static_cast<std::size_t>(std::max(1, std::min(parallel, static_cast<int>(kMaxChildren))));
  while (more || !running.empty()) {
    while (more && startFailure.empty() && !makeFailure && running.size() < slots) {
      std::optional<ChildJob> job;
      try {
        job = next(statuses.size());
      } catch (...) {
        makeFailure = std::current_exception();
        break;
      }
      if (!job) {
        more = false;
        break;
      }
      try {
        const pid_t pid = spawnChild(executable, *job);
        statuses.push_back(-1);
        running.emplace_back(pid, statuses.size() - 1);
      } catch (const std::runtime_error& e) {
        startFailure = e.what();
      }
    }
    if (!startFailure.empty() || makeFailure) {
      more = false;  // start no more; a job that could not be made stops the running ones
      if (makeFailure)
        for (const auto& r : running) ::kill(-r.first, SIGTERM);
    }
    if (running.empty()) break;
    // Only this function's own children are waited for (by pid), never another part of the program's.
    bool ended = false;
    for (auto it = running.begin(); it != running.end();) {
      if (const std::optional<int> status = reapIfEnded(it->first, executable)) {
        statuses[it->second] = *status;
        finished(it->second, statuses[it->second]);
        it = running.erase(it);
        ended = true;
      } else {
        ++it;
      }
    }
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (tCheck) {
      try {
        (*tCheck)();
      } catch (...) {
        for (const auto& child : running) ::kill(-child.first, SIGINT);  // each child leads its process group
        for (const auto& child : running) {
          int waitStatus = 0;
          while (waitpid(child.first, &waitStatus, 0) < 0 && errno == EINTR) {
          }
          forget(child.first);
        }
        throw;
      }
    }
  }
  if (makeFailure) std::rethrow_exception(makeFailure);
  if (!startFailure.empty()) throw std::runtime_error(startFailure);
  return statuses;
}

std::string runPlotScript(const fs::path& script, const std::vector<std::string>& args, const fs::path& log) {
  std::error_code ec;
  if (!fs::exists(script, ec)) return "the plotting script " + script.string() + " does not exist; no plot drawn";
  if (!fs::exists(kPythonInterpreter, ec)) return std::string(kPythonInterpreter) + " is missing; no plot drawn";
  std::vector<std::string> words{script.string()};
  words.insert(words.end(), args.begin(), args.end());
  // matplotlib's configuration and font cache in a private directory beside the log, removed afterwards.
  const fs::path config = log.string() + ".matplotlib";
  fs::remove_all(config, ec);
  fs::create_directory(config, ec);
  const std::vector<std::string> environment{"MPLCONFIGDIR=" + config.string(), "XDG_CONFIG_HOME=" + config.string(),
                                             "XDG_CACHE_HOME=" + config.string(), "MPLBACKEND=Agg"};
  int status = 0;
  try {
    status = runChild(kPythonInterpreter, words, log, environment);
  } catch (const std::runtime_error& e) {
    fs::remove_all(config, ec);
    return std::string(e.what()) + "; no plot drawn";
  }
  fs::remove_all(config, ec);
  if (status != 0)
    return "plotting failed (" + script.string() + " exit status " + std::to_string(status) + "): " + lastLines(log, 1);
  fs::remove(log, ec);
  return "";
}

std::string lastLines(const fs::path& file, int n) {
  std::ifstream in(file);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  std::string out;
  for (std::size_t i = lines.size() > static_cast<std::size_t>(n) ? lines.size() - n : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

std::string selfExecutable(const char* argv0) {
  std::error_code ec;
  const auto self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(argv0) : self.string();
}

}  // namespace fpdp::app
