#pragma once
// The one table of case-file parameters (docs/parameters.md). The case reader takes from it the set of known keys,
// which keys are required, the default values, the "allowed" text of every error message and the loss type a key
// applies to; parameterSchemaMarkdown() renders the same table as the reference documentation. Keeping both uses on
// one table is what stops the documentation, the defaults and the error messages from drifting apart.
#include <span>
#include <string>
#include <string_view>

namespace fpdp::app {

/// How a key behaves when the case file leaves it out.
enum class Presence {
  Required,     // error "missing required key"
  Default,      // Parameter::defaultValue is a TOML literal, read exactly as if the user had written it
  Derived,      // Parameter::defaultValue is prose: the reader computes the value from other keys
  Optional,     // no default; defaultValue says what absence means, or when the reader requires the key anyway
};

struct Parameter {
  std::string_view table;         // "mesh"
  std::string_view key;           // "cells"
  std::string_view type;          // "array of d integers"
  std::string_view unit;          // "parameter units", or "—"
  Presence presence;
  std::string_view defaultValue;  // TOML literal (Default) or prose (Derived, Optional); empty for Required
  std::string_view allowed;       // the admissible values, quoted after "allowed:" in error messages
  std::string_view appliesTo;     // "" for every case, else the only loss.type the key may be given with
  std::string_view description;   // one line
  std::string_view dynamics = "";  // "" for every dynamics, else the only case.dynamics the key may be given with
};

/// A top-level table of the case file, in the order the reader validates them.
struct Section {
  std::string_view name;
  std::string_view description;
};

std::span<const Section> caseSections();
std::span<const Parameter> parameterSchema();

/// The entry for table.key; throws std::logic_error if there is none (a programming error, not an input error).
const Parameter& parameter(std::string_view table, std::string_view key);

/// Whether `table` has a key named `key` in the schema.
bool isKnownKey(std::string_view table, std::string_view key);

}  // namespace fpdp::app
