#pragma once
// Reading a case file (TOML, docs/parameters.md) into a validated, defaults-filled Case.
// Every problem with the input is reported as one InputError whose message names the file, the key path (with
// array indices), the value as written and what is allowed, so that `fpdp check` can print it as it stands.
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "app/case/Case.hpp"

namespace fpdp::app {

/// A case file that cannot be used. what() is one line:
///   "<file>: <key.path> = <value>: <problem>; allowed: <allowed>"
/// with two variants: "<file>: missing required key <key.path> (<type>); allowed: <allowed>" and, for TOML syntax
/// errors, "<file>:<line>:<column>: <parser message>" (keyPath, value and allowed are then empty).
struct InputError : std::runtime_error {
  InputError(const std::string& message, std::string keyPath, std::string value, std::string allowed);
  std::string keyPath;  // e.g. "mesh.cells[1]"; empty for syntax errors and unreadable files
  std::string value;    // the offending value rendered as TOML on one line; empty when the key is missing
  std::string allowed;  // what would have been accepted
};

/// data.file as written in the case file `caseFile`, made absolute against the case's folder (the path runs use).
std::string dataFilePath(const std::filesystem::path& caseFile, const std::string& written);

/// Parses, validates and fills the defaults of a case file. Throws InputError and nothing else.
Case readCase(const std::filesystem::path& file);

/// Same as readCase for TOML text; `pretendPath` is used in messages, for the default case name, and as the
/// folder that a relative data.file is resolved against.
Case readCaseString(std::string_view toml, const std::filesystem::path& pretendPath);

/// TOML text of a case, or of a run's parameters.toml, parsed within the reader's limits on dotted keys and nesting
/// (docs/faults.md §2: toml++ recurses per key part, and 40,000 parts overflowed its stack). Throws InputError
/// "<pretendPath>:<line>: ..." for text beyond the limits or that is not TOML.
toml::table parseCaseToml(std::string_view text, const std::filesystem::path& pretendPath);

/// The parameter reference (the body of docs/parameters.md), generated from the schema table in ParameterSchema.cpp.
std::string parameterSchemaMarkdown();

}  // namespace fpdp::app
