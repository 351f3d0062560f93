#pragma once
// The one table of case-file parameters (docs/parameters.md). The case reader takes from it the set of known keys,
// which keys are required, the default values, the "allowed" text of every error message and the loss type a key
// applies to, and the domain of every scalar key (type, range or choices), which the reader enforces generically and
// from which the "allowed" text is written; parameterSchemaMarkdown() renders the same table as the reference
// documentation. Keeping every use on one table is what stops the documentation, the defaults, the validation and the
// error messages from drifting apart. Rules that tie several keys together (time.dt dividing time.t_end, a batch
// size at most n) are the reader's, named in the entry's `allowed` prose.
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fpdp::app {

/// How a key behaves when the case file leaves it out.
enum class Presence {
  Required,     // error "missing required key"
  Default,      // Parameter::defaultValue is a TOML literal, read exactly as if the user had written it
  Derived,      // Parameter::defaultValue is prose: the reader computes the value from other keys
  Optional,     // no default; defaultValue says what absence means, or when the reader requires the key anyway
};

/// The machine-checked values of a scalar key. Unchecked: an array, a table or a value with a rule of its own (a path,
/// a PETSc name), read by the reader's own code.
struct Domain {
  enum class Kind { Unchecked, Number, Integer, Boolean, Choice };
  Kind kind = Kind::Unchecked;
  double lower = -std::numeric_limits<double>::infinity();  // Number, Integer: the bounds (Integer: whole numbers)
  double upper = std::numeric_limits<double>::infinity();
  bool lowerOpen = false, upperOpen = false;
  std::string_view choices;  // Choice: the allowed strings, ", "-separated
  std::string_view entries;  // non-empty: the key is an array, each entry in the domain; how many ("d", "1 to 64
                             // distinct"), checked by the reader with the array
  /// Whether x lies in [lower, upper] (or the open ends).
  constexpr bool contains(double x) const {
    return (lowerOpen ? x > lower : x >= lower) && (upperOpen ? x < upper : x <= upper);
  }
};

/// A finite number in the interval with these ends (open where said).
constexpr Domain numberIn(double lower, double upper, bool lowerOpen = false, bool upperOpen = false) {
  return {Domain::Kind::Number, lower, upper, lowerOpen, upperOpen, {}, {}};
}
constexpr Domain positiveNumber() { return numberIn(0, std::numeric_limits<double>::infinity(), true, true); }
constexpr Domain nonNegativeNumber() { return numberIn(0, std::numeric_limits<double>::infinity(), false, true); }
/// An integer in [lower, upper] (upper = +infinity: no upper bound; 2^63 - 1 is written as the largest int64).
constexpr Domain integerIn(double lower, double upper = std::numeric_limits<double>::infinity()) {
  return {Domain::Kind::Integer, lower, upper, false, false, {}, {}};
}
constexpr Domain booleanValue() { return {Domain::Kind::Boolean, 0, 1, false, false, {}, {}}; }
constexpr Domain oneOf(std::string_view choices) { return {Domain::Kind::Choice, 0, 0, false, false, choices, {}}; }
/// An array of `count` entries (words: "d", "1 to 64 distinct"), each in `entry`.
constexpr Domain eachEntry(std::string_view count, Domain entry) {
  entry.entries = count;
  return entry;
}

struct Parameter {
  std::string_view table;         // "mesh"
  std::string_view key;           // "cells"
  std::string_view type;          // "array of d integers"
  std::string_view unit;          // "parameter units", or "—"
  Presence presence;
  std::string_view defaultValue;  // TOML literal (Default) or prose (Derived, Optional); empty for Required
  std::string_view allowed;       // the admissible values, quoted after "allowed:" in error messages: in the table, the
                                  // conditions beyond `domain`; parameterSchema() returns it with the domain's
                                  // description in front
  std::string_view appliesTo;     // "" for every case, else the only loss.type the key may be given with
  std::string_view description;   // one line
  std::string_view dynamics = "";  // "" for every dynamics, else the only case.dynamics the key may be given with
  Domain domain = {};
};

/// The words of a Domain, as error messages and docs/parameters.md write them ("a finite number > 0", "an integer in
/// [1, 10^7]", "true, false", "none, box, ball"); empty for an unchecked domain.
std::string describeDomain(const Domain& domain);

/// A top-level table of the case file, in the order the reader validates them.
struct Section {
  std::string_view name;
  std::string_view description;
};

std::span<const Section> caseSections();
std::span<const Parameter> parameterSchema();

/// The entry for table.key; throws std::logic_error if there is none (a programming error, not an input error).
const Parameter& parameter(std::string_view table, std::string_view key);

/// The tables' names, in the schema's order.
std::vector<std::string_view> sectionNames();
/// The keys of `table`, in the schema's order.
std::vector<std::string_view> keysOf(std::string_view table);
/// "a, b, c", each item between prefix and suffix ("[a], [b]").
std::string joined(const std::vector<std::string_view>& items, std::string_view prefix = "",
                   std::string_view suffix = "");

/// Whether `table` has a key named `key` in the schema.
bool isKnownKey(std::string_view table, std::string_view key);

}  // namespace fpdp::app
