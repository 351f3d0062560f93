#include "app/case/CaseOverrides.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>

#include "app/case/CaseReader.hpp"
#include "app/platform/CommandLine.hpp"
#include "app/case/ParameterSchema.hpp"
#include "io/NumberText.hpp"
#include "models/InputFile.hpp"

namespace fpdp::app {

namespace fs = std::filesystem;

namespace {

/// KEY must be table.key of the schema.
void checkKey(const std::string& option, const std::string& key) {
  const auto dot = key.find('.');
  if (dot == std::string::npos || key.find('.', dot + 1) != std::string::npos)
    throw UsageError(option + " " + key + ": the key must be a case-file key path table.key (e.g. noise.sigma); "
                     "allowed: a key of docs/parameters.md under one of the tables " + joined(sectionNames()));
  const std::string table = key.substr(0, dot), name = key.substr(dot + 1);
  bool tableKnown = false;
  for (const Section& s : caseSections()) tableKnown = tableKnown || s.name == table;
  if (!tableKnown)
    throw UsageError(option + " " + key + ": unknown table [" + table + "]; allowed: the tables " +
                     joined(sectionNames()));
  if (!isKnownKey(table, name))
    throw UsageError(option + " " + key + ": unknown key '" + name + "' in [" + table + "]; allowed: " +
                     joined(keysOf(table)));
}

bool isBareWord(const std::string& v) {
  if (v.empty() || !(std::isalpha(static_cast<unsigned char>(v[0])) || v[0] == '_')) return false;
  return std::all_of(v.begin(), v.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.';
  });
}

/// The value as a one-key TOML table {v = VALUE}; nullopt when VALUE is not exactly one TOML value.
std::optional<toml::table> parseValue(const std::string& literal) {
  if (literal.find_first_of("\n\r") != std::string::npos) return std::nullopt;
  try {
    toml::table t = toml::parse("v = " + literal);
    if (t.size() != 1 || !t.contains("v")) return std::nullopt;
    return t;
  } catch (const toml::parse_error&) {
    return std::nullopt;
  }
}

/// The values of "V1,V2,...": split at the commas outside brackets, braces and quotes.
std::vector<std::string> splitValues(const std::string& text) {
  std::vector<std::string> values;
  std::string current;
  int depth = 0;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quote) {
      if (ch == '\\' && quote == '"' && i + 1 < text.size()) current += text[i++];
      else if (ch == quote) quote = 0;
    } else if (ch == '"' || ch == '\'') {
      quote = ch;
    } else if (ch == '[' || ch == '{') {
      ++depth;
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    } else if (ch == ',' && depth == 0) {
      values.push_back(current);
      current.clear();
      continue;
    }
    current += ch;
  }
  values.push_back(current);
  for (auto& v : values) {
    const auto first = v.find_first_not_of(" \t"), last = v.find_last_not_of(" \t");
    v = first == std::string::npos ? "" : v.substr(first, last - first + 1);
  }
  return values;
}

/// The alternatives of one quantity: setting one removes the others.
const std::vector<std::vector<std::string>>& alternatives() {
  static const std::vector<std::vector<std::string>> groups{{"noise.sigma", "noise.multiplier", "noise.covariance"},
                                                            {"data.records", "data.file", "data.generator"}};
  return groups;
}

toml::table parseCaseText(const CaseSource& source) { return parseCaseToml(source.text, source.path); }

}  // namespace

OverrideAxis parseOverrideOption(const std::string& text, bool several) {
  const std::string option = "--set";
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(option + " '" + text + "': expected KEY=VALUE" + (several ? "[,VALUE...]" : "") +
                     " with KEY a case-file key path such as noise.sigma");
  OverrideAxis axis;
  axis.key = text.substr(0, eq);
  checkKey(option, axis.key);
  const std::vector<std::string> values = several ? splitValues(text.substr(eq + 1))
                                                  : std::vector<std::string>{text.substr(eq + 1)};
  for (const std::string& v : values) {
    if (v.empty())
      throw UsageError(option + " " + text + ": an empty value for " + axis.key + "; allowed: " +
                       (several ? "TOML values separated by commas (V1,V2,...)" : "one TOML value"));
    std::string literal = v;
    if (!parseValue(literal)) {
      if (!isBareWord(v))
        throw UsageError(option + " " + axis.key + "=" + v + ": not a TOML value; allowed: a number, true/false, "
                         "a quoted string, an array [a, b] or a bare word taken as a string" +
                         std::string(several ? " (several values separated by commas outside brackets and quotes)"
                                             : ""));
      literal = "\"" + v + "\"";
    }
    if (std::find(axis.literals.begin(), axis.literals.end(), literal) != axis.literals.end())
      throw UsageError(option + " " + axis.key + "=" + v + ": the value is given twice; allowed: distinct values");
    axis.literals.push_back(literal);
  }
  return axis;
}

CaseSource readCaseSource(const fs::path& path) {
  try {
    return {path, models::readInputFile(path, models::kMaxCaseFileBytes)};
  } catch (const models::InputFileError& e) {
    throw InputError(path.string() + ": cannot read the case file: " + e.what(), "", "", "");
  }
}

std::string overriddenCaseText(const CaseSource& source, const std::vector<CaseOverride>& overrides) {
  toml::table root = parseCaseText(source);
  for (const CaseOverride& o : overrides) {
    const auto dot = o.key.find('.');
    const std::string table = o.key.substr(0, dot), key = o.key.substr(dot + 1);
    auto value = parseValue(o.literal);
    if (!value) throw InputError("override " + o.key + " = " + o.literal + ": not a TOML value", o.key, o.literal, "");
    if (!root.contains(table) || !root[table].is_table()) root.insert_or_assign(table, toml::table{});
    toml::table& section = *root[table].as_table();
    for (const auto& group : alternatives())
      if (std::find(group.begin(), group.end(), o.key) != group.end())
        for (const std::string& other : group)
          if (other != o.key) section.erase(other.substr(dot + 1));
    value->get("v")->visit([&](auto&& node) { section.insert_or_assign(key, node); });
  }
  // A data file named relative to the case's folder (in the file or by an override), found from wherever the
  // overridden case is read.
  if (auto* file = root.at_path("data.file").as_string(); file && fs::path(file->get()).is_relative())
    *file = dataFilePath(source.path, file->get());
  std::ostringstream out;
  out << root << '\n';
  return out.str();
}

Case readOverriddenCase(const CaseSource& source, const std::vector<CaseOverride>& overrides) {
  return readCaseString(overriddenCaseText(source, overrides), source.path);
}

std::string tomlNumber(double v) { return io::shortestText(v); }

}  // namespace fpdp::app
