#pragma once
// The PNG plots of a run (docs/output.md, "Plots"), drawn from its output directory by io/plot: renyi_bounds.png,
// epsilon_delta.png, epsilon_steps.png, step_contributions.png, divergences.png and densities.png. Every panel marks
// +inf values, values a log axis cannot show, suspect statuses and uncertified values, shows the closed forms of
// exact.csv and the error estimates of accuracy.csv, and keeps its legend in a panel beside the data (at most a
// quarter of the width); with many Rényi orders a representative six are drawn.
#include <string>
#include <vector>

namespace fpdp::app::plots {

struct PlotOutcome {
  std::vector<std::string> written;  // the PNG files, in the order drawn
  std::string description;           // with `describe`: a JSON array, one object per figure (io/plot describe())
};

/// Draws every plot of the run output directory `dir`. Throws std::runtime_error with a one-line reason (a missing
/// divergence.csv, a font that cannot be loaded, a file that cannot be written).
PlotOutcome drawRunPlots(const std::string& dir, bool describe);

/// drawRunPlots for a run or a validation case: "" when every plot was written, else the warning to print
/// ("plotting failed: <reason>"); what was computed stays whatever happens here.
std::string drawRunPlotsOrWarn(const std::string& dir);

/// `fpdp plot [--describe] DIR`: redraws DIR's plots; prints the description with --describe. Exit status 0, 1 with
/// a one-line reason on standard error when a plot cannot be drawn, 2 for a wrong command line.
int plotCommand(int argc, char** argv);

}  // namespace fpdp::app::plots
