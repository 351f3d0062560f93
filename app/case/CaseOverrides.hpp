#pragma once
// Case-file overrides: `--set KEY=VALUE` of `fpdp run`/`fpdp check`, `--set KEY=V1,V2,...` of `fpdp sweep`, and the
// neighbour records `fpdp worst-case` tries (docs/sweeps.md). One home for them: an override replaces one key of the
// case file's TOML (toml++), and the changed text is then read and validated by the ordinary case reader, so an
// overridden value passes every check a written one does.
//
// KEY is a case-file key path table.key (noise.sigma, noisy_gd.steps); VALUE a TOML literal (0.5, 20, [1.0, 2.0],
// "poisson"), or a bare word (poisson) taken as a string. A list of values is split at the commas outside brackets,
// braces and quotes: noise.sigma=0.5,1,2 has three values, neighbour.record=[0.5, 1],[2, 3] two.
#include <filesystem>
#include <string>
#include <vector>

#include "app/case/Case.hpp"

namespace fpdp::app {

struct CaseOverride {
  std::string key;      // "noise.sigma"
  std::string literal;  // the value as TOML text, as written (a bare word quoted)
};

/// One `--set KEY=V1,V2,...`: the key and its values.
struct OverrideAxis {
  std::string key;
  std::vector<std::string> literals;
};

/// Parses `--set` text "KEY=V1,V2,..." (`several`: more than one value allowed). Checks that KEY is a key of the
/// schema and that every value is one TOML literal (not yet that it is allowed: the case reader does that). Throws
/// UsageError naming the option, the key, the value and what is allowed.
OverrideAxis parseOverrideOption(const std::string& text, bool several);

/// The case file as given, read once (models::readInputFile's limits).
struct CaseSource {
  std::filesystem::path path;
  std::string text;
};
/// Throws InputError (an unreadable file).
CaseSource readCaseSource(const std::filesystem::path& path);

/// The case text with the overrides applied (in order; a key set twice takes the last value), for a case file that
/// will be read from another folder: a relative data.file is made absolute (resolved against the case's folder).
/// Setting one of the alternatives noise.sigma / noise.multiplier / noise.covariance removes the other two; likewise
/// data.records / data.file / data.generator. Throws InputError for a case text that is not TOML.
std::string overriddenCaseText(const CaseSource& source, const std::vector<CaseOverride>& overrides);

/// Reads and validates the overridden case (readCaseString, messages naming the case file). Throws InputError.
Case readOverriddenCase(const CaseSource& source, const std::vector<CaseOverride>& overrides);

/// A double as a TOML literal that reads back to the same double (io::shortestText; inf, nan as TOML spells them).
std::string tomlNumber(double v);

}  // namespace fpdp::app
