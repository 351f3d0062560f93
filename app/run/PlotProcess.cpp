#include "app/run/PlotProcess.hpp"

#include <csignal>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

#ifndef FPDP_PLOT_SCRIPT
#error "FPDP_PLOT_SCRIPT (the path of scripts/plot-run) must be defined by the build"
#endif

extern char** environ;

namespace fpdp::app {
namespace fs = std::filesystem;

namespace {

const char* const kPython = kPythonInterpreter;

}  // namespace

PlotProcess::PlotProcess() {
  const fs::path script(FPDP_PLOT_SCRIPT);
  std::error_code ec;
  if (!fs::exists(script, ec)) {
    startError_ = "the plotting script " + script.string() + " does not exist (source tree moved?); no plots were drawn";
    return;
  }
  if (!fs::exists(kPython, ec)) {
    startError_ = std::string(kPython) + " is missing; no plots were drawn (scripts/install-dependencies)";
    return;
  }
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0) {
    startError_ = std::string("cannot start the plotter: ") + std::strerror(errno);
    return;
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    startError_ = std::string("cannot start the plotter: ") + std::strerror(errno);
    close(in[0]);
    close(in[1]);
    return;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  const std::string scriptPath = script.string();
  char* argv[] = {const_cast<char*>(kPython), const_cast<char*>(scriptPath.c_str()), const_cast<char*>("--stdin"),
                  nullptr};
  const int rc = posix_spawn(&pid_, kPython, &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    pid_ = -1;
    close(in[1]);
    close(out[0]);
    startError_ = std::string("cannot start ") + kPython + ": " + std::strerror(rc);
    return;
  }
  toChild_ = in[1];
  fromChild_ = out[0];
}

PlotProcess::~PlotProcess() { finish(); }

void PlotProcess::finish() {
  if (toChild_ >= 0) close(toChild_);  // end of file: a plotter still waiting exits
  toChild_ = -1;
  if (fromChild_ >= 0) close(fromChild_);
  fromChild_ = -1;
  if (pid_ > 0) {
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

std::string PlotProcess::draw(const std::string& directory) {
  if (!startError_.empty()) return startError_;
  if (pid_ <= 0) return "the plotter has already run";
  const std::string line = directory + "\n";
  // A plotter that died early (matplotlib fails to import) closes its end: SIGPIPE must not end the run.
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &previous);
  std::size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = write(toChild_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the plotter is gone; its output says why
    written += static_cast<std::size_t>(n);
  }
  sigaction(SIGPIPE, &previous, nullptr);
  close(toChild_);
  toChild_ = -1;
  std::string output;
  std::array<char, 512> buffer{};
  for (;;) {
    const ssize_t n = read(fromChild_, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buffer.data(), static_cast<std::size_t>(n));
  }
  close(fromChild_);
  fromChild_ = -1;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    // The last line of the script's output says what failed (e.g. ModuleNotFoundError: matplotlib).
    std::string lastLine = output;
    while (!lastLine.empty() && lastLine.back() == '\n') lastLine.pop_back();
    if (const auto nl = lastLine.rfind('\n'); nl != std::string::npos) lastLine = lastLine.substr(nl + 1);
    return std::string("plotting failed (") + FPDP_PLOT_SCRIPT + " exit status " +
           std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + "): " + lastLine;
  }
  return "";
}

std::string drawPlots(const std::string& directory) {
  PlotProcess plotter;
  return plotter.draw(directory);
}

}  // namespace fpdp::app
