#pragma once
// `fpdp worst-case`: the neighbouring dataset that maximises the privacy loss at the last step (docs/sweeps.md).
//
//   fpdp worst-case CASE.toml [--objective eps|renyi] [--delta D] [--order A] [--output DIR] [--jobs N] [--quiet]
//
// The search runs over the case's [worst_case] domain: which record of D is replaced or removed (indices), the
// replacement or added record x' (a box or a ball of records) and its label (logistic). A grid over the domain, then
// rounds of finer grids around the best point so far; every evaluation is a `fpdp run` of the case with
// neighbour.index / neighbour.record / neighbour.label overridden (app/commands/MemberRuns), several at a time. The objective
// is eps_exact at delta (the larger of both directions; default delta: privacy.delta) or R_alpha(p || q) at the last
// step. DIR/worst-case.csv holds every evaluation, DIR/worst-case.png the objective over the domain (1-D, 2-D).
// Exit status: 0 every evaluation succeeded; 1 one failed (the search goes on without it); 2 bad input (nothing is
// run, nothing is written).
#include <optional>
#include <string>

#include "app/commands/MemberRuns.hpp"

namespace fpdp::app {

struct WorstCaseOptions {
  StudyOptions study;                 // the case, --output DIR (default "<case name>-worst-case"), --jobs, --quiet
  std::string objective = "eps";      // eps | renyi
  std::optional<double> delta;        // eps: default privacy.delta
  std::optional<double> order;        // renyi: default the first of divergence.orders
};

/// Parses `fpdp worst-case ...` (argv[1] == "worst-case"). Throws UsageError.
WorstCaseOptions parseWorstCaseCommandLine(int argc, const char* const* argv);

/// Runs the search with child processes of `executable`; returns the exit status. Bad input throws InputError or
/// OutputDirectoryError: the case, the first member or the output directory before anything is written, a later
/// member when it would start (the running members are stopped and DIR.partial removed).
int runWorstCase(const WorstCaseOptions& options, const std::string& executable);

}  // namespace fpdp::app
