#include "app/ChildProcesses.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <utility>

extern char** environ;

namespace fpdp::app {

namespace fs = std::filesystem;

namespace {

pid_t spawnChild(const std::string& executable, const ChildJob& job) {
  std::vector<std::string> words{executable};
  words.insert(words.end(), job.args.begin(), job.args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, job.stdoutFile.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (job.stderrFile == job.stdoutFile)
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  else
    posix_spawn_file_actions_addopen(&actions, 2, job.stderrFile.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid = 0;
  const int err = posix_spawn(&pid, executable.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) throw std::runtime_error("cannot start " + executable + ": " + std::strerror(err));
  return pid;
}

thread_local const ChildWaitCheck* tCheck = nullptr;

int statusOf(int waitStatus) {
  if (WIFEXITED(waitStatus)) return WEXITSTATUS(waitStatus);
  return 128 + (WIFSIGNALED(waitStatus) ? WTERMSIG(waitStatus) : 0);
}

}  // namespace

ChildWaitCheck::ChildWaitCheck(std::function<void()> check) : check_(std::move(check)), previous_(tCheck) {
  tCheck = this;
}

ChildWaitCheck::~ChildWaitCheck() { tCheck = previous_; }

void ChildWaitCheck::operator()() const { check_(); }

int runChild(const std::string& executable, const std::vector<std::string>& args, const fs::path& log) {
  return runChildren(executable, {ChildJob{args, log, log}}, 1, [](std::size_t, int) {}).front();
}

std::vector<int> runChildren(const std::string& executable, const std::vector<ChildJob>& jobs, int parallel,
                             const std::function<void(std::size_t, int)>& finished) {
  std::vector<int> statuses(jobs.size(), -1);
  std::vector<std::pair<pid_t, std::size_t>> running;
  std::size_t next = 0;
  std::string startFailure;
  const std::size_t slots = static_cast<std::size_t>(std::max(1, parallel));
  while (next < jobs.size() || !running.empty()) {
    while (startFailure.empty() && next < jobs.size() && running.size() < slots) {
      try {
        running.emplace_back(spawnChild(executable, jobs[next]), next);
        ++next;
      } catch (const std::runtime_error& e) {
        startFailure = e.what();
      }
    }
    if (!startFailure.empty()) next = jobs.size();  // start no more; wait for the running ones
    if (running.empty()) break;
    // Only this function's own children are waited for (by pid), never another part of the program's.
    bool ended = false;
    for (auto it = running.begin(); it != running.end();) {
      int waitStatus = 0;
      const pid_t r = waitpid(it->first, &waitStatus, WNOHANG);
      if (r == it->first) {
        statuses[it->second] = statusOf(waitStatus);
        finished(it->second, statuses[it->second]);
        it = running.erase(it);
        ended = true;
      } else if (r < 0 && errno != EINTR) {
        throw std::runtime_error("waitpid failed for " + executable + ": " + std::strerror(errno));
      } else {
        ++it;
      }
    }
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (tCheck) {
      try {
        (*tCheck)();
      } catch (...) {
        for (const auto& child : running) ::kill(child.first, SIGINT);
        for (const auto& child : running) {
          int waitStatus = 0;
          while (waitpid(child.first, &waitStatus, 0) < 0 && errno == EINTR) {
          }
        }
        throw;
      }
    }
  }
  if (!startFailure.empty()) throw std::runtime_error(startFailure);
  return statuses;
}

std::string runPlotScript(const fs::path& script, const std::vector<std::string>& args, const fs::path& log) {
  std::error_code ec;
  if (!fs::exists(script, ec)) return "the plotting script " + script.string() + " does not exist; no plot drawn";
  if (!fs::exists(kPythonInterpreter, ec)) return std::string(kPythonInterpreter) + " is missing; no plot drawn";
  std::vector<std::string> words{script.string()};
  words.insert(words.end(), args.begin(), args.end());
  int status = 0;
  try {
    status = runChild(kPythonInterpreter, words, log);
  } catch (const std::runtime_error& e) {
    return std::string(e.what()) + "; no plot drawn";
  }
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
