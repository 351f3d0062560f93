#pragma once
// `fpdp validate`: runs the validation cases of validation/cases/ (app/commands/ValidationSuite) as child processes of this
// same program (`fpdp run`, and `fpdp sample` for the Monte Carlo check), applies their checks
// (validation/ValidationChecks) to the files the runs wrote, compares them with the regression references of
// validation/references/, prints one table row per check and writes REPORT_DIR/report.md (the table, the findings of
// the cases beyond the papers' assumptions, the plots) and REPORT_DIR/results.csv. docs/validation.md.
//
//   fpdp validate [--quick] [--update-references] [--no-plots] [--cases DIR] [--references DIR]
//                 [-o REPORT_DIR | --output REPORT_DIR] [CASE ...]
//
// Exit status: 0 every check PASS (or SKIPPED/INFO); 1 a check FAILED (or a run failed); 2 bad command line or bad
// validation files (nothing is run, nothing is written).
#include <filesystem>
#include <string>
#include <vector>

namespace fpdp::app {

struct ValidateOptions {
  bool quick = false;
  bool updateReferences = false;
  bool plots = true;
  bool schema = false;                       // --schema: print the checks-file reference and exit
  bool help = false;                         // --help: print fpdp's help and exit
  std::filesystem::path casesDirectory;      // default: the source tree's validation/cases
  std::filesystem::path referencesDirectory; // default: the source tree's validation/references
  std::filesystem::path reportDirectory = "validation-report";
  std::vector<std::string> cases;            // empty: every case (of the quick suite with --quick)
};

/// Parses `fpdp validate ...` (argv[1] == "validate"). Throws UsageError.
ValidateOptions parseValidateCommandLine(int argc, const char* const* argv);

/// Runs the suite; `executable` is this program (the child runs use it). Returns the exit status.
int runValidation(const ValidateOptions& options, const std::string& executable);

}  // namespace fpdp::app
