#pragma once
// The validation suite of `fpdp validate` (docs/validation.md): validation/cases/NAME.toml is an ordinary case file
// (runnable with `fpdp run`), validation/cases/NAME.checks.toml says which checks the run must pass and with which
// tolerances, and validation/references/NAME/ holds the regression references. This file reads the checks files
// (TOML is parsed in app/ only); the checks themselves are validation/ValidationChecks.
//
// The schema of a checks file is the table kChecksSchema in ValidationSuite.cpp (one place); `fpdp validate --schema`
// prints it. A checks file that breaks it is an InputError (exit status 2) naming the file, the key, the value and
// what is allowed.
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "app/case/Case.hpp"

namespace fpdp::app {

struct ValidationChecks {
  std::string description;
  std::string suite = "quick";  // "quick": in the quick suite (and the full one); "full": only in the full suite
  bool beyondAssumptions = false;
  std::vector<std::string> expectedWarnings;  // substrings of WARNING lines that are INFO, not failures

  std::optional<double> boundsTolerance;           // [bounds] tolerance
  struct LowerBound {
    std::vector<std::string> bounds;
    long fromStep = 0;
    double tolerance = 0.0;
  };
  std::optional<LowerBound> lowerBound;            // [lower_bound]
  struct Exact {
    long fromStep = 1;
    std::vector<std::pair<std::string, double>> tolerances;  // quantity -> tolerance
  };
  std::optional<Exact> exact;                      // [exact]
  std::optional<double> lemma4Tolerance;           // [lemma4] tolerance
  std::optional<double> massTolerance;             // [mass] tolerance
  struct MonteCarlo {
    long particles = 100000;
    long seed = 1;
    int threads = 2;
  };
  std::optional<MonteCarlo> monteCarlo;            // [monte_carlo]
  struct RenyiRate {
    double rateTolerance = 0.0, lsiTolerance = 0.0;
  };
  std::optional<RenyiRate> renyiRate;              // [renyi_rate]
  struct Regression {
    double tolerance = 0.0;
    std::vector<std::string> files;
  };
  std::optional<Regression> regression;            // [regression]
  struct Exchanged {
    std::string of;  // the case with D and D' the other way round
    double tolerance = 0.0;
  };
  std::optional<Exchanged> exchanged;              // [exchanged]
};

struct ValidationCase {
  std::string name;                    // NAME
  std::filesystem::path caseFile;      // NAME.toml
  std::filesystem::path checksFile;    // NAME.checks.toml
  Case runCase;                        // the case, read and validated
  ValidationChecks checks;
};

/// Reads NAME.checks.toml against the schema and against the case it belongs to (e.g. [lemma4] needs
/// noisy_gd.tracing_substeps > 0). Throws InputError.
ValidationChecks readValidationChecks(const std::filesystem::path& file, const Case& c);

/// The cases of `directory` (every NAME.toml with a NAME.checks.toml beside it; a case file without checks, or
/// checks without a case, is an InputError), sorted by name; only the named ones when `names` is not empty (an
/// unknown name is an InputError listing the known ones); only suite = "quick" when `quick`.
std::vector<ValidationCase> readValidationSuite(const std::filesystem::path& directory,
                                                const std::vector<std::string>& names, bool quick);

/// The checks-file reference (Markdown table generated from kChecksSchema).
std::string validationChecksSchemaMarkdown();

}  // namespace fpdp::app
