#pragma once
// `fpdp sweep`: the case solved for every combination of the values given to some of its keys (docs/sweeps.md).
//
//   fpdp sweep CASE.toml --set KEY=V1,V2,... [--set KEY2=...] [--output DIR] [--jobs N] [--quiet]
//
//   fpdp sweep --restart DIR [--jobs N] [--quiet]   (continue an interrupted sweep: its finished members are kept)
//
// Every member (one combination) is validated as it is started (the first starts at once; an invalid one stops the
// sweep: exit 2, nothing kept); the members run as `fpdp run` child processes, N at a
// time; DIR/sweep.csv holds one row per member (its last output step: eps, divergences, bounds, the composition
// baseline) and DIR/sweep.png eps against the swept parameter (docs/output.md, "sweep.csv").
// Exit status: 0 every member succeeded; 1 a member failed (the others are still in the table); 2 bad input
// (nothing is run, nothing is written).
#include <optional>
#include <string>
#include <vector>

#include "app/case/CaseOverrides.hpp"
#include "app/commands/MemberRuns.hpp"

namespace fpdp::app {

struct SweepOptions {
  StudyOptions study;                 // the case, --output DIR (default "<case name>-sweep"), --jobs, --quiet, --help,
                                      // --restart DIR (then no case and no --set: the interrupted study's own)
  std::vector<OverrideAxis> axes;     // one per --set, in the order given
};

/// Parses `fpdp sweep ...` (argv[1] == "sweep"). Throws UsageError.
SweepOptions parseSweepCommandLine(int argc, const char* const* argv);

/// Runs the sweep with child processes of `executable`; returns the exit status. Bad input throws InputError or
/// OutputDirectoryError: the case, the first member or the output directory before anything is written, a later
/// member when it would start (the running members are stopped and DIR.partial removed).
int runSweep(const SweepOptions& options, const std::string& executable);

}  // namespace fpdp::app
