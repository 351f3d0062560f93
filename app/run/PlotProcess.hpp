#pragma once
// The plotter of a run: scripts/plot-run started when the run starts (its Python and matplotlib imports overlap the
// computation) and told the output directory once the files are complete (docs/output.md, "Plots").
#include <string>
#include <sys/types.h>

namespace fpdp::app {

/// The Python that draws fpdp's plots (Debian's, with matplotlib: scripts/install-dependencies).
inline constexpr const char* kPythonInterpreter = "/usr/bin/python3";

class PlotProcess {
 public:
  /// Starts `/usr/bin/python3 scripts/plot-run --stdin`, which imports matplotlib and then waits for a directory on
  /// its standard input. A start that fails is remembered and reported by draw().
  PlotProcess();
  /// A plotter that was never told to draw (the run failed) reads end of file and exits; it is waited for here.
  ~PlotProcess();
  PlotProcess(const PlotProcess&) = delete;
  PlotProcess& operator=(const PlotProcess&) = delete;

  /// Draws every plot of `directory` and waits for the plotter. Returns "" on success, else the warning to print
  /// (the script or python3 missing, matplotlib failing, a PNG not written: the script's last line).
  std::string draw(const std::string& directory);

 private:
  void finish();
  pid_t pid_ = -1;
  int toChild_ = -1;    // the plotter's standard input
  int fromChild_ = -1;  // its standard output and error
  std::string startError_;
};

/// Runs scripts/plot-run on `directory` at once (fpdp validate; the run uses PlotProcess). "" on success, else the
/// warning to print.
std::string drawPlots(const std::string& directory);

}  // namespace fpdp::app
