#pragma once
// `fpdp sweep`: the case solved for every combination of the values given to some of its keys (docs/sweeps.md).
//
//   fpdp sweep CASE.toml --set KEY=V1,V2,... [--set KEY2=...] [--output DIR] [--jobs N] [--quiet]
//
// Every member (one combination) is validated before any runs; the members run as `fpdp run` child processes, N at a
// time; DIR/sweep.csv holds one row per member (its last output step: eps, divergences, bounds, the composition
// baseline) and DIR/sweep.png eps against the swept parameter (docs/output.md, "sweep.csv").
// Exit status: 0 every member succeeded; 1 a member failed (the others are still in the table); 2 bad input
// (nothing is run, nothing is written).
#include <optional>
#include <string>
#include <vector>

#include "app/CaseOverrides.hpp"
#include "app/MemberRuns.hpp"

namespace fpdp::app {

struct SweepOptions {
  StudyOptions study;                 // the case, --output DIR (default "<case name>-sweep"), --jobs, --quiet, --help
  std::vector<OverrideAxis> axes;     // one per --set, in the order given
};

/// Parses `fpdp sweep ...` (argv[1] == "sweep"). Throws UsageError.
SweepOptions parseSweepCommandLine(int argc, const char* const* argv);

/// Runs the sweep with child processes of `executable`; returns the exit status. Bad input (the case, a member,
/// the output directory) throws InputError or OutputDirectoryError before anything is written.
int runSweep(const SweepOptions& options, const std::string& executable);

}  // namespace fpdp::app
