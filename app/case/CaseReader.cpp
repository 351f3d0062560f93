// Case-file reader: TOML text -> validated Case (docs/parameters.md).
//
// The reader works in three passes so that each error is reported where a user would look for it:
//   1. structure: every top-level entry is a known table and every key in it is known (ParameterSchema.cpp);
//   2. values, table by table in schema order; a key left out takes its schema default, which is parsed from the
//      schema's TOML literal and then validated exactly like user input, so a default can never bypass a check;
//   3. the resolved case is serialised back to TOML (Case::resolvedToml) with every default written out.
// The first problem found ends the read with an InputError; nothing is ever silently corrected.
//
// The parser (CaseParser.hpp) is defined by the sections it reads: this file holds the entry points, the order
// of the sections (CaseParser::parse) and pass 1; CaseValues.cpp the typed values every section reads with;
// read/*Section.cpp pass 2, one file per group of tables; CaseSerialiser.cpp pass 3. The helpers they share
// (messages, suggestions, defaults, limits) are CaseReading.hpp.
#include "app/case/CaseReader.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "app/case/CaseParser.hpp"
#include "app/case/CaseReading.hpp"
#include "app/case/ParameterSchema.hpp"
#include "models/InputFile.hpp"

namespace fpdp::app {

InputError::InputError(const std::string& message, std::string keyPath, std::string value, std::string allowed)
    : std::runtime_error(message), keyPath(std::move(keyPath)), value(std::move(value)), allowed(std::move(allowed)) {}

long TimeSpec::steps() const { return std::lround(t_end / dt); }

namespace detail {

// ---- The reader -------------------------------------------------------------------------------------------------

Case CaseParser::parse() {
  checkStructure();
  Case c;
  c.sourcePath = file_;
  readCaseTable(c);
  readMesh(c);
  readLoss(c);
  readData(c);
  readNeighbour(c);
  if (c.dynamics == "noisy_gd") readBatch(c);
  checkLossFinite(c);
  readNoise(c);
  checkDiffusionScale(c);
  readInitial(c);
  checkDynamicsApplicability();
  if (c.dynamics == "langevin") readTime(c);
  else readNoisyGd(c);
  readOutput(c);
  if (c.dynamics == "langevin") checkOutputInterval(c);
  readDivergence(c);
  readPrivacy(c);
  readSolver(c);
  readSampler(c);
  readWorstCase(c);
  readFaults(c);
  readAccuracy(c);
  checkWholeFieldRoute(c);
  c.resolvedToml = serialise(c);
  return c;
}

// ---- pass 1: structure ----

void CaseParser::checkStructure() const {
  const std::vector<std::string_view> sections = sectionNames();
  const std::string tableList = joined(sections, "[", "]");
  for (const auto& [key, node] : root_) {
    const std::string_view name = key.str();
    const bool known = std::find(sections.begin(), sections.end(), name) != sections.end();
    if (!known && node.is_table()) {
      const std::string_view guess = closest(name, sections);
      fail(keyText(name), node,
           "unknown table [" + std::string(name) + "]" +
               (guess.empty() ? "" : " (did you mean [" + std::string(guess) + "]?)"),
           tableList);
    }
    if (!known) {
      const std::string_view home = tableHolding(name, "");
      fail(keyText(name), node,
           "key outside of any table" + (home.empty() ? std::string()
                                                       : " (did you mean " + std::string(home) + "." +
                                                             std::string(name) + ", under [" + std::string(home) +
                                                             "]?)"),
           "the tables " + tableList);
    }
    if (!node.is_table()) {
      fail(std::string(name), node, "must be a table [" + std::string(name) + "], not " + typeName(node),
           "a table holding the keys " + joined(keysOf(name)));
    }
    for (const auto& [childKey, child] : *node.as_table()) {
      const std::string_view keyName = childKey.str();
      if (isKnownKey(name, keyName)) continue;
      const std::vector<std::string_view> keys = keysOf(name);
      std::string hint;
      if (const std::string_view guess = closest(keyName, keys); !guess.empty()) {
        hint = " (did you mean '" + std::string(guess) + "'?)";
      } else if (const std::string_view home = tableHolding(keyName, name); !home.empty()) {
        hint = " (did you mean " + std::string(home) + "." + std::string(keyName) + ", under [" +
               std::string(home) + "]?)";
      }
      fail(std::string(name) + "." + keyText(keyName), child,
           "unknown key in [" + std::string(name) + "]" + hint, joined(keys));
    }
  }
}

}  // namespace detail

using detail::CaseParser;
using detail::oneLine;

namespace {

namespace fs = std::filesystem;

// toml++ builds one nested table per part of a dotted key and recurses over them: 40,000 parts overflowed the stack.
// The text is scanned for the longest dotted key (in key-value pairs, table headers and inline tables) and the
// deepest nesting of arrays and inline tables before toml++ sees it. A case file needs two key parts
// ([table] key, or table.key) and three levels of arrays (noise.covariance); the limits leave room for any TOML a
// person writes.
constexpr std::size_t kMaxKeyParts = 16;
constexpr std::size_t kMaxNesting = 16;

struct NestingScan {
  std::size_t keyParts = 0;  // the most parts of one dotted key
  std::size_t nesting = 0;   // the deepest nesting of arrays and inline tables
  std::size_t keyLine = 0, nestingLine = 0;  // where each maximum was first reached (1-based)
};

// A lenient scan: it never rejects text (toml++ reports syntax errors), it only measures; every step advances.
NestingScan scanNesting(std::string_view t) {
  NestingScan scan;
  std::size_t i = 0, line = 1;
  std::vector<char> open;  // '[' (array) or '{' (inline table) of the value being scanned
  const auto at = [&](std::size_t k) { return k < t.size() ? t[k] : '\0'; };
  const auto advance = [&] {
    if (t[i] == '\n') ++line;
    ++i;
  };
  // Skips a string starting at i (any of TOML's four kinds), escapes and newlines included.
  const auto skipString = [&] {
    const char q = t[i];
    const bool multi = at(i + 1) == q && at(i + 2) == q;
    i += multi ? 3 : 1;
    while (i < t.size()) {
      if (q == '"' && t[i] == '\\') {
        advance();
        if (i < t.size()) advance();
        continue;
      }
      if (t[i] == q && (!multi || (at(i + 1) == q && at(i + 2) == q))) {
        i += multi ? 3 : 1;
        return;
      }
      if (!multi && t[i] == '\n') return;  // an unterminated string: toml++ reports it
      advance();
    }
  };
  const auto skipComment = [&] {
    while (i < t.size() && t[i] != '\n') ++i;
  };
  // Scans a key (bare and quoted parts separated by dots) up to '=', ']' or the end of the line; counts its parts.
  const auto scanKey = [&] {
    std::size_t parts = 1;
    while (i < t.size() && t[i] != '=' && t[i] != ']' && t[i] != '\n' && t[i] != '}' && t[i] != '#') {
      if (t[i] == '"' || t[i] == '\'') skipString();
      else {
        if (t[i] == '.') ++parts;
        advance();
      }
    }
    if (parts > scan.keyParts) {
      scan.keyParts = parts;
      scan.keyLine = line;
    }
  };
  bool lineStart = true;
  while (i < t.size()) {
    const char c = t[i];
    if (open.empty() && lineStart) {
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        advance();
        continue;
      }
      lineStart = false;
      if (c == '#') skipComment();
      else if (c == '[') {
        while (at(i) == '[') ++i;
        scanKey();
        while (i < t.size() && t[i] != '\n') {  // the rest of the header line
          if (t[i] == '"' || t[i] == '\'') skipString();
          else ++i;
        }
      } else {
        scanKey();
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      skipString();
    } else if (c == '#') {
      skipComment();
    } else if (c == '[' || c == '{') {
      open.push_back(c);
      if (open.size() > scan.nesting) {
        scan.nesting = open.size();
        scan.nestingLine = line;
      }
      advance();
      if (c == '{') scanKey();
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
      advance();
    } else if (c == ',' && !open.empty() && open.back() == '{') {
      advance();
      scanKey();
    } else {
      if (c == '\n' && open.empty()) lineStart = true;
      advance();
    }
  }
  return scan;
}

}  // namespace

Case readCaseString(std::string_view text, const std::filesystem::path& pretendPath) {
  toml::table root = parseCaseToml(text, pretendPath);
  return CaseParser(root, pretendPath).parse();
}

toml::table parseCaseToml(std::string_view text, const std::filesystem::path& pretendPath) {
  const NestingScan scan = scanNesting(text);
  if (scan.keyParts > kMaxKeyParts)
    throw InputError(oneLine(pretendPath.string() + ":" + std::to_string(scan.keyLine) +
                             ": a dotted key or table name of " + std::to_string(scan.keyParts) +
                             " parts; allowed: at most " + std::to_string(kMaxKeyParts) +
                             " parts (a case file needs 2: [table] key, or table.key)"),
                     "", "", "");
  if (scan.nesting > kMaxNesting)
    throw InputError(oneLine(pretendPath.string() + ":" + std::to_string(scan.nestingLine) +
                             ": arrays or inline tables " + std::to_string(scan.nesting) +
                             " levels deep; allowed: at most " + std::to_string(kMaxNesting) +
                             " levels (a case file needs 3)"),
                     "", "", "");
  toml::table root;
  try {
    root = toml::parse(text, pretendPath.string());
  } catch (const toml::parse_error& e) {
    const toml::source_position where = e.source().begin;
    throw InputError(oneLine(pretendPath.string() + ":" + std::to_string(where.line) + ":" +
                             std::to_string(where.column) + ": " + std::string(e.description())),
                     "", "", "");
  }
  return root;
}

// Relative data paths are relative to the case file, so a case and its data can be moved together. The path is
// made absolute so that the resolved case written into an output folder still points at the same file.
std::string dataFilePath(const std::filesystem::path& caseFile, const std::string& written) {
  const fs::path joinedPath = caseFile.parent_path() / fs::path(written);
  std::error_code error;
  const fs::path absolute = fs::absolute(joinedPath, error);
  return (error ? joinedPath : absolute).lexically_normal().string();
}

Case readCase(const std::filesystem::path& file) {
  const auto cannotRead = [&file](const std::string& reason) {
    return InputError(oneLine(file.string() + ": cannot read the case file: " + reason), "", "", "");
  };
  std::string text;
  try {
    text = models::readInputFile(file, models::kMaxCaseFileBytes);  // a regular file of bounded size only
  } catch (const models::InputFileError& e) {
    throw cannotRead(e.what());
  }
  return readCaseString(text, file);
}

}  // namespace fpdp::app
