// Case-file reader: TOML text -> validated Case (docs/parameters.md).
//
// The reader works in three passes so that each error is reported where a user would look for it:
//   1. structure: every top-level entry is a known table and every key in it is known (ParameterSchema.cpp);
//   2. values, table by table in schema order; a key left out takes its schema default, which is parsed from the
//      schema's TOML literal and then validated exactly like user input, so a default can never bypass a check;
//   3. the resolved case is serialised back to TOML (Case::resolvedToml) with every default written out.
// The first problem found ends the read with an InputError; nothing is ever silently corrected.
#include "app/case/CaseReader.hpp"
#include "meshes/BoxMesh.hpp"

#include "models/DataGenerator.hpp"
#include "models/ExpressionLoss.hpp"

#include <toml++/toml.h>

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <sstream>
#include <type_traits>
#include <vector>

#include "app/case/LossBuilding.hpp"
#include "app/case/ParameterSchema.hpp"
#include "app/platform/PetscOptionPolicy.hpp"
#include "io/ContentHash.hpp"
#include "models/Dataset.hpp"
#include "models/InputFile.hpp"
#include "models/DivergenceGrids.hpp"

namespace fpdp::app {

InputError::InputError(const std::string& message, std::string keyPath, std::string value, std::string allowed)
    : std::runtime_error(message), keyPath(std::move(keyPath)), value(std::move(value)), allowed(std::move(allowed)) {}

long TimeSpec::steps() const { return std::lround(t_end / dt); }

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMaxDimension = 3;
constexpr std::int64_t kMaxTotalCells = std::int64_t{1} << 28;
constexpr std::size_t kMaxOrders = 1024;
constexpr double kMaxSteps = 1e9;           // keeps t_end/dt far inside long and exactly representable
constexpr double kStepTolerance = 1e-9;     // relative distance of t_end/dt from an integer
constexpr double kSymmetryTolerance = 1e-12;
// Numerical limits of the run, checked by the reader so that `fpdp check` refuses what the run cannot compute:
constexpr double kMinRelativeCellWidth = 1e-10;  // cells narrower than this share of |coordinates| lose the digits
                                                 // of their centres, faces and Gaussian cell averages
constexpr double kMaxCellRate = 1e100;      // largest diffusion over squared cell width, D / h^2 (per time unit)
constexpr double kMaxOutputInterval = 1e9;  // largest output interval dt * every in cell diffusion times h^2 / D:
                                            // exp(T A) needs about sqrt(T |A|) Chebyshev terms per interval
constexpr std::size_t kMaxLossChecks = 4'000'000;  // loss and gradient evaluations of the finiteness check
constexpr std::size_t kMaxNameLength = 200;  // case.name: "<name>-output.partial" stays within a file name's 255 bytes
constexpr std::size_t kValueWidth = 80;     // rendered values are cut here so a message stays one readable line

// ---- Rendering values for messages ------------------------------------------------------------------------------

// Messages are one line: a control character from the input (a newline in a string, say) would break that.
std::string oneLine(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

// The shortest text that reads back as the same double ("0.1", not toml++'s "0.10000000000000001").
std::string shortestDouble(double x) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, x);
  return std::string(buffer, result.ptr);
}

std::string floatLiteral(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  std::string text = shortestDouble(x);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";  // keep "4.0" recognisably a float
  return text;
}

void appendQuoted(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04X", static_cast<unsigned>(u));
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
}

// Keys that are not bare TOML keys are quoted, so that the key path can be pasted back into a case file.
std::string keyText(std::string_view key) {
  const bool bare = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  if (bare) return std::string(key);
  std::string quoted;
  appendQuoted(quoted, key);
  return quoted;
}

void render(std::string& out, const toml::node& node) {
  if (out.size() > kValueWidth) return;  // the rest would be cut anyway; also bounds the work on huge arrays
  node.visit([&out](const auto& v) {
    using T = std::remove_cvref_t<decltype(v)>;
    if constexpr (std::is_same_v<T, toml::table>) {
      out += "{";
      bool first = true;
      for (const auto& [key, child] : v) {
        out += first ? " " : ", ";
        first = false;
        out += keyText(key.str()) + " = ";
        render(out, child);
        if (out.size() > kValueWidth) return;
      }
      out += first ? "}" : " }";
    } else if constexpr (std::is_same_v<T, toml::array>) {
      out += "[";
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0) out += ", ";
        render(out, *v.get(i));
        if (out.size() > kValueWidth) return;
      }
      out += "]";
    } else if constexpr (std::is_same_v<T, toml::value<std::string>>) {
      appendQuoted(out, v.get());
    } else if constexpr (std::is_same_v<T, toml::value<double>>) {
      out += floatLiteral(v.get());
    } else {
      // Integers (toml++ keeps 0x/0o/0b formats), booleans, dates and times as toml++ prints them.
      std::ostringstream stream;
      stream << v;
      out += stream.str();
    }
  });
}

std::string renderValue(const toml::node& node) {
  std::string out;
  render(out, node);
  if (out.size() > kValueWidth) {
    std::size_t cut = kValueWidth - 3;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
    out.resize(cut);
    out += "...";
  }
  return oneLine(out);
}

std::string typeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

std::string entries(std::size_t count, std::string_view noun = "entry", std::string_view plural = "entries") {
  return std::to_string(count) + " " + std::string(count == 1 ? noun : plural);
}

std::string indexed(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

// ---- Suggestions for unknown names ------------------------------------------------------------------------------

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The closest candidate within edit distance 2, or "" (ties go to the first candidate, i.e. schema order).
std::string_view closest(std::string_view name, const std::vector<std::string_view>& candidates) {
  std::string_view best;
  std::size_t bestDistance = 3;
  for (std::string_view candidate : candidates) {
    const std::size_t distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

// A key misplaced in the wrong table (sigma under [initial]) is a common slip; point to where it belongs.
std::string_view tableHolding(std::string_view key, std::string_view except) {
  for (const Parameter& p : parameterSchema()) {
    if (p.key == key && p.table != except) return p.table;
  }
  return {};
}

std::string parameterPath(const Parameter& p) { return std::string(p.table) + "." + std::string(p.key); }

// ---- Schema defaults --------------------------------------------------------------------------------------------

// Each Presence::Default literal parsed once into its own one-key table, so that an omitted key is handed to the
// same validation code as a written one.
const toml::node& defaultNode(const Parameter& p) {
  static const std::map<std::string, toml::table> defaults = [] {
    std::map<std::string, toml::table> parsed;
    for (const Parameter& q : parameterSchema()) {
      if (q.presence == Presence::Default) {
        parsed.emplace(parameterPath(q), toml::parse("value = " + std::string(q.defaultValue)));
      }
    }
    return parsed;
  }();
  return *defaults.at(parameterPath(p)).get("value");
}

// ---- The reader -------------------------------------------------------------------------------------------------

class CaseParser {
public:
  CaseParser(const toml::table& root, const fs::path& file) : root_(root), file_(file), fileLabel_(file.string()) {}

  Case parse() {
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
    c.resolvedToml = serialise(c);
    return c;
  }

private:
  // ---- errors ----

  [[noreturn]] void fail(const std::string& keyPath, const toml::node& node, const std::string& problem,
                         std::string_view allowed) const {
    const std::string value = renderValue(node);
    const std::string message =
        oneLine(fileLabel_ + ": " + keyPath + " = " + value + ": " + problem + "; allowed: " + std::string(allowed));
    throw InputError(message, keyPath, value, std::string(allowed));
  }

  // `missing` is what the message calls missing; usually the key path itself.
  [[noreturn]] void failMissing(const std::string& keyPath, std::string_view type, std::string_view allowed,
                                const std::string& missing = "") const {
    throw InputError(oneLine(fileLabel_ + ": missing required key " + (missing.empty() ? keyPath : missing) + " (" +
                             std::string(type) + "); allowed: " + std::string(allowed)),
                     keyPath, "", std::string(allowed));
  }

  // ---- pass 1: structure ----

  void checkStructure() const {
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

  // ---- lookups ----

  const toml::node* given(std::string_view table, std::string_view key) const {
    const toml::table* section = root_.get_as<toml::table>(table);
    return section ? section->get(key) : nullptr;
  }

  // The written value, else the schema default; nullptr for an omitted key without a literal default.
  const toml::node* lookup(const Parameter& p) const {
    if (const toml::node* node = given(p.table, p.key)) return node;
    if (p.presence == Presence::Required) failMissing(parameterPath(p), p.type, p.allowed);
    if (p.presence == Presence::Default) return &defaultNode(p);
    return nullptr;
  }

  const toml::node& required(const Parameter& p) const { return *lookup(p); }

  // ---- typed values ----

  // Integers are accepted where numbers are expected (TOML's 1 means 1.0 here); booleans never are.
  double number(const toml::node& node, const std::string& path, std::string_view allowed) const {
    if (const auto* f = node.as_floating_point()) {
      if (!std::isfinite(f->get())) fail(path, node, "must be finite", allowed);
      return f->get();
    }
    if (const auto* i = node.as_integer()) return static_cast<double>(i->get());
    fail(path, node, "must be a number, not " + typeName(node), allowed);
  }

  // Floats are never accepted as integers, not even 2.0: a count written as a float is likely a mistake.
  std::int64_t integer(const toml::node& node, const std::string& path, std::string_view allowed) const {
    if (const auto* i = node.as_integer()) return i->get();
    fail(path, node, "must be an integer, not " + typeName(node), allowed);
  }

  bool boolean(const toml::node& node, const std::string& path, std::string_view allowed) const {
    if (const auto* b = node.as_boolean()) return b->get();
    fail(path, node, "must be a boolean (true or false), not " + typeName(node), allowed);
  }

  const std::string& string(const toml::node& node, const std::string& path, std::string_view allowed) const {
    if (const auto* s = node.as_string()) return s->get();
    fail(path, node, "must be a string, not " + typeName(node), allowed);
  }

  const toml::array& array(const toml::node& node, const std::string& path, std::string_view allowed) const {
    if (const auto* a = node.as_array()) return *a;
    fail(path, node, "must be an array, not " + typeName(node), allowed);
  }

  double positive(const toml::node& node, const std::string& path, std::string_view allowed) const {
    const double x = number(node, path, allowed);
    if (!(x > 0)) fail(path, node, "must be > 0", allowed);
    return x;
  }

  // An array of exactly `length` finite numbers; `lengthReason` says where the expected length comes from.
  models::Vector numbers(const toml::node& node, const std::string& path, std::size_t length,
                         std::string_view lengthReason, std::string_view allowed) const {
    const toml::array& a = array(node, path, allowed);
    if (a.size() != length) {
      fail(path, node, "has " + entries(a.size()) + ", expected " + std::to_string(length) + " (" +
                           std::string(lengthReason) + ")",
           allowed);
    }
    models::Vector v(static_cast<Eigen::Index>(length));
    for (std::size_t i = 0; i < length; ++i) {
      v[static_cast<Eigen::Index>(i)] = number(*a.get(i), indexed(path, i), allowed);
    }
    return v;
  }

  models::Vector pointOfDimension(const toml::node& node, const std::string& path, std::string_view allowed) const {
    return numbers(node, path, dim_, dimensionReason_, allowed);
  }

  double label(const toml::node& node, const std::string& path, std::string_view allowed) const {
    const std::int64_t y = integer(node, path, allowed);
    if (y != 1 && y != -1) fail(path, node, "must be -1 or 1", allowed);
    return static_cast<double>(y);
  }

  // ---- pass 2: values, table by table ----

  // [faults]: the names of the faults that stop a run and the two tolerances (app/run/NumericalFaults.hpp).
  // ---- scalar keys, checked against their schema domain (app/case/ParameterSchema.hpp, Domain) ----

  // What a value outside the domain is told: "must be > 0" / "must be >= 1" for a half line, else "out of range".
  static std::string rangeProblem(const Domain& d) {
    if (std::isfinite(d.upper)) return "out of range";
    return std::string("must be ") + (d.lowerOpen ? "> " : ">= ") + shortestDouble(d.lower);
  }

  const Parameter& scalarParameter(std::string_view table, std::string_view key, Domain::Kind kind) const {
    const Parameter& p = parameter(table, key);
    if (p.domain.kind != kind) throw std::logic_error(parameterPath(p) + " has no domain of the kind read");
    return p;
  }

  // `path`: the key's path, or an entry's ("mesh.cells[1]") for an array key whose entries have the domain.
  double numberOf(const Parameter& p, const toml::node& node, const std::string& path) const {
    const double x = number(node, path, p.allowed);
    if (!p.domain.contains(x)) fail(path, node, rangeProblem(p.domain), p.allowed);
    return x;
  }
  double numberOf(const Parameter& p, const toml::node& node) const { return numberOf(p, node, parameterPath(p)); }

  std::int64_t integerOf(const Parameter& p, const toml::node& node, const std::string& path) const {
    const std::int64_t v = integer(node, path, p.allowed);
    if (!p.domain.contains(static_cast<double>(v))) fail(path, node, rangeProblem(p.domain), p.allowed);
    return v;
  }
  std::int64_t integerOf(const Parameter& p, const toml::node& node) const {
    return integerOf(p, node, parameterPath(p));
  }

  std::string choiceOf(const Parameter& p, const toml::node& node) const {
    const std::string path = parameterPath(p);
    const std::string& value = string(node, path, p.allowed);
    std::string_view rest = p.domain.choices;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(", ");
      if (rest.substr(0, comma) == value) return value;
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
    }
    fail(path, node, "is not one of the allowed values", p.allowed);
  }

  // A required key or one with a default (the written value, else the default's).
  double numberAt(std::string_view table, std::string_view key) const {
    const Parameter& p = scalarParameter(table, key, Domain::Kind::Number);
    return numberOf(p, required(p));
  }
  std::int64_t integerAt(std::string_view table, std::string_view key) const {
    const Parameter& p = scalarParameter(table, key, Domain::Kind::Integer);
    return integerOf(p, required(p));
  }
  bool booleanAt(std::string_view table, std::string_view key) const {
    const Parameter& p = scalarParameter(table, key, Domain::Kind::Boolean);
    return boolean(required(p), parameterPath(p), p.allowed);
  }
  std::string choiceAt(std::string_view table, std::string_view key) const {
    const Parameter& p = scalarParameter(table, key, Domain::Kind::Choice);
    return choiceOf(p, required(p));
  }
  // An optional key: nullopt when the case leaves it out.
  std::optional<double> optionalNumberAt(std::string_view table, std::string_view key) const {
    const Parameter& p = scalarParameter(table, key, Domain::Kind::Number);
    if (const toml::node* node = lookup(p)) return numberOf(p, *node);
    return std::nullopt;
  }

  void readFaults(Case& c) const {
    const Parameter& stopOn = parameter("faults", "stop_on");
    const toml::node& stopNode = required(stopOn);
    const toml::array& names = array(stopNode, "faults.stop_on", stopOn.allowed);
    c.faults.stopOn.clear();
    for (std::size_t i = 0; i < names.size(); ++i) {
      const std::string path = indexed("faults.stop_on", i);
      const std::string& name = string(*names.get(i), path, stopOn.allowed);
      if (name != "non_finite" && name != "negative_mass" && name != "wall_mass")
        fail(path, *names.get(i), "is not a known fault", stopOn.allowed);
      if (c.faults.stops(name)) fail(path, *names.get(i), "is listed twice", stopOn.allowed);
      c.faults.stopOn.push_back(name);
    }
    c.faults.negativeMassTolerance = numberAt("faults", "negative_mass_tolerance");
    c.faults.wallMassTolerance = numberAt("faults", "wall_mass_tolerance");
  }

  void readAccuracy(Case& c) const {
    c.accuracy.estimate = booleanAt("accuracy", "estimate");
    c.accuracy.rtol = numberAt("accuracy", "rtol");
    c.accuracy.certify = choiceAt("accuracy", "certify");
    c.accuracy.certifySeconds = numberAt("accuracy", "certify_seconds");
    c.accuracy.certifyMaxCells = integerAt("accuracy", "certify_max_cells");
  }

  void readCaseTable(Case& c) {
    const Parameter& nameParameter = parameter("case", "name");
    if (const toml::node* node = given("case", "name")) {
      c.name = string(*node, "case.name", nameParameter.allowed);
      if (c.name.empty()) fail("case.name", *node, "must not be empty", nameParameter.allowed);
      // The default output directory "<name>-output" and its ".partial" must be a file name (at most 255 bytes).
      if (c.name.size() > kMaxNameLength)
        fail("case.name", *node, "has " + std::to_string(c.name.size()) + " characters, more than 200",
             nameParameter.allowed);
      for (char ch : c.name) {
        if (!isNameCharacter(ch)) {
          const auto u = static_cast<unsigned char>(ch);
          const std::string what = (u >= 0x20 && u < 0x7f) ? "'" + std::string(1, ch) + "'"
                                                           : std::string("a control or non-ASCII character");
          fail("case.name", *node, "contains " + what + ", which cannot be part of a case name",
               nameParameter.allowed);
        }
      }
    } else {
      c.name = nameFromPath(file_);
    }

    c.dynamics = choiceAt("case", "dynamics");
    dynamics_ = c.dynamics;
  }

  // [time] belongs to Langevin diffusion and [noisy_gd] to noisy GD: a key of the other dynamics is an error, not
  // silently ignored (a user who wrote time.dt for a noisy-GD case believes it has an effect).
  void checkDynamicsApplicability() const {
    for (const Parameter& p : parameterSchema()) {
      if (p.dynamics.empty() || p.dynamics == dynamics_) continue;
      if (const toml::node* node = given(p.table, p.key)) {
        fail(parameterPath(p), *node,
             "applies only to case.dynamics = \"" + std::string(p.dynamics) + "\", but case.dynamics = \"" +
                 dynamics_ + "\"",
             "no " + parameterPath(p) + " with case.dynamics = \"" + dynamics_ + "\"");
      }
    }
  }

  void readNoisyGd(Case& c) const {
    c.noisyGd.eta = numberAt("noisy_gd", "eta");
    c.noisyGd.steps = static_cast<long>(integerAt("noisy_gd", "steps"));
    c.noisyGd.diffusion = choiceAt("noisy_gd", "diffusion");
    const toml::node& diffusionNode = required(parameter("noisy_gd", "diffusion"));
    const bool kernelRoute = c.noisyGd.diffusion == "chapman_kolmogorov";
    if ((c.noisyGd.diffusion == "exact_convolution" || kernelRoute) && c.noise.covariance &&
        !c.noise.covariance->isDiagonal(0.0)) {
      fail("noisy_gd.diffusion", diffusionNode,
           c.noisyGd.diffusion + " needs a diagonal noise.covariance (the Gaussian kernel is applied axis by axis)",
           "fokker_planck with a full noise.covariance");
    }
    if (kernelRoute)
      for (int a = 0; a < c.mesh.dim; ++a)
        if (c.mesh.grading[static_cast<std::size_t>(a)] != 1.0)
          fail("noisy_gd.diffusion", diffusionNode,
               "chapman_kolmogorov needs a uniform mesh (its midpoint rule is spectrally accurate only on equal "
               "cells), but mesh.grading[" + std::to_string(a) + "] = " +
                   floatLiteral(c.mesh.grading[static_cast<std::size_t>(a)]),
               "mesh.grading = 1 (uniform) on every axis, or another noisy_gd.diffusion");
    c.noisyGd.diffusion_substeps = static_cast<long>(integerAt("noisy_gd", "diffusion_substeps"));
    c.noisyGd.tracing_substeps = static_cast<long>(integerAt("noisy_gd", "tracing_substeps"));
    const toml::node& tracingNode = required(parameter("noisy_gd", "tracing_substeps"));
    c.noisyGd.clipNorm = optionalNumberAt("noisy_gd", "clip_norm");
    readConstraint(c);
    if (kernelRoute && !c.noisyGd.constraintSet.isNone())
      fail("noisy_gd.diffusion", diffusionNode,
           "chapman_kolmogorov evolves point values, which cannot carry the point masses Pi_C puts on the boundary "
           "of C (noisy_gd.constraint = \"" + c.noisyGd.constraint + "\")",
           "fokker_planck or exact_convolution with a constraint");
    if (kernelRoute && c.noisyGd.tracing_substeps > 0)
      fail("noisy_gd.tracing_substeps", tracingNode,
           "the tracing diffusions co-transport cell averages (docs/tracing.md); chapman_kolmogorov evolves point "
           "values",
           "0 with noisy_gd.diffusion = \"chapman_kolmogorov\"");
    if (c.noisyGd.tracing_substeps > 0 && !c.noisyGd.constraintSet.isNone())
      fail("noisy_gd.tracing_substeps", tracingNode,
           "the tracing diffusions (MATH.md §2.2) are not defined for projected noisy GD (noisy_gd.constraint = \"" +
               c.noisyGd.constraint + "\")",
           "0 with a constraint");
  }

  // Pi_C maps whole cells only if C's faces are mesh faces (docs/noisy-gd.md §6): a box's faces, a 1-D ball's ends.
  void requireMeshFace(const Case& c, std::size_t axis, double x, const std::string& keyPath, const toml::node& node,
                       const std::string& what, std::string_view allowed) const {
    const auto ax = meshes::Axis::graded(c.mesh.lower[axis], c.mesh.upper[axis], c.mesh.cells[axis],
                                         c.mesh.grading[axis]);
    if (ax.faceIndexAt(x) >= 0) return;
    const auto [below, above] = ax.nearestFaces(x);
    fail(keyPath, node,
         what + " " + floatLiteral(x) + " is not a face of the mesh on axis " + std::to_string(axis) +
             " (the faces of C must be mesh cell faces); the nearest faces are " + floatLiteral(below) + " and " +
             floatLiteral(above),
         allowed);
  }

  // [noisy_gd] constraint: none, a box or a ball inside the mesh box; only the keys of the chosen kind may appear.
  void readConstraint(Case& c) const {
    c.noisyGd.constraint = choiceAt("noisy_gd", "constraint");
    const std::string& k = c.noisyGd.constraint;
    const char* keysOf[][2] = {{"constraint_lower", "box"}, {"constraint_upper", "box"},
                               {"constraint_centre", "ball"}, {"constraint_radius", "ball"}};
    for (const auto& [key, owner] : keysOf) {
      const toml::node* node = given("noisy_gd", key);
      const std::string path = std::string("noisy_gd.") + key;
      if (node && k != owner) {
        fail(path, *node, "applies only to noisy_gd.constraint = \"" + std::string(owner) + "\", but it is \"" + k + "\"",
             "no " + path + " with noisy_gd.constraint = \"" + k + "\"");
      }
      if (!node && k == owner) {
        const Parameter& missing = parameter("noisy_gd", key);
        failMissing(path, missing.type, missing.allowed, path + " (needed by noisy_gd.constraint = \"" + k + "\")");
      }
    }
    const double tol = 1e-12;
    if (k == "box") {
      const Parameter& lp = parameter("noisy_gd", "constraint_lower");
      const Parameter& up = parameter("noisy_gd", "constraint_upper");
      const toml::node& ln = *given("noisy_gd", "constraint_lower");
      const toml::node& un = *given("noisy_gd", "constraint_upper");
      const models::Vector lo = pointOfDimension(ln, "noisy_gd.constraint_lower", lp.allowed);
      const models::Vector hi = pointOfDimension(un, "noisy_gd.constraint_upper", up.allowed);
      for (std::size_t i = 0; i < dim_; ++i) {
        const auto j = static_cast<Eigen::Index>(i);
        const double width = c.mesh.upper[i] - c.mesh.lower[i];
        if (lo[j] < c.mesh.lower[i] - tol * width)
          fail(indexed("noisy_gd.constraint_lower", i), *ln.as_array()->get(i),
               "lies below mesh.lower[" + std::to_string(i) + "] = " + floatLiteral(c.mesh.lower[i]), lp.allowed);
        if (hi[j] > c.mesh.upper[i] + tol * width)
          fail(indexed("noisy_gd.constraint_upper", i), *un.as_array()->get(i),
               "lies above mesh.upper[" + std::to_string(i) + "] = " + floatLiteral(c.mesh.upper[i]), up.allowed);
        if (!(hi[j] > lo[j]))
          fail(indexed("noisy_gd.constraint_upper", i), *un.as_array()->get(i),
               "must be greater than noisy_gd.constraint_lower[" + std::to_string(i) + "] = " + floatLiteral(lo[j]),
               up.allowed);
      }
      for (std::size_t i = 0; i < dim_; ++i) {
        const auto j = static_cast<Eigen::Index>(i);
        requireMeshFace(c, i, lo[j], indexed("noisy_gd.constraint_lower", i), *ln.as_array()->get(i), "the lower face",
                        lp.allowed);
        requireMeshFace(c, i, hi[j], indexed("noisy_gd.constraint_upper", i), *un.as_array()->get(i), "the upper face",
                        up.allowed);
      }
      c.noisyGd.constraintSet = models::ConstraintSet::box(lo, hi);
    } else if (k == "ball") {
      const Parameter& cp = parameter("noisy_gd", "constraint_centre");
      const Parameter& rp = parameter("noisy_gd", "constraint_radius");
      const toml::node& cn = *given("noisy_gd", "constraint_centre");
      const toml::node& rn = *given("noisy_gd", "constraint_radius");
      const models::Vector centre = pointOfDimension(cn, "noisy_gd.constraint_centre", cp.allowed);
      const double radius = numberOf(rp, rn);
      for (std::size_t i = 0; i < dim_; ++i) {
        const auto j = static_cast<Eigen::Index>(i);
        const double width = c.mesh.upper[i] - c.mesh.lower[i];
        if (centre[j] - radius < c.mesh.lower[i] - tol * width || centre[j] + radius > c.mesh.upper[i] + tol * width)
          fail("noisy_gd.constraint_radius", rn,
               "makes the ball leave the mesh box on axis " + std::to_string(i) + " (centre " +
                   floatLiteral(centre[j]) + ", mesh [" + floatLiteral(c.mesh.lower[i]) + ", " +
                   floatLiteral(c.mesh.upper[i]) + "])",
               rp.allowed);
      }
      if (dim_ == 1) {  // a 1-D ball is the box [centre - radius, centre + radius]
        requireMeshFace(c, 0, centre[0] - radius, "noisy_gd.constraint_radius", rn, "a 1-D ball's end centre - radius =",
                        rp.allowed);
        requireMeshFace(c, 0, centre[0] + radius, "noisy_gd.constraint_radius", rn, "a 1-D ball's end centre + radius =",
                        rp.allowed);
      }
      c.noisyGd.constraintSet = models::ConstraintSet::ball(centre, radius);
    }
  }

  static bool isNameCharacter(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-';
  }

  // The default name must itself be a valid name, whatever the file is called.
  static std::string nameFromPath(const fs::path& file) {
    std::string name = file.stem().string();
    for (char& ch : name) {
      if (!isNameCharacter(ch)) ch = '_';
    }
    if (name.size() > kMaxNameLength) name.resize(kMaxNameLength);
    return name.empty() ? std::string("case") : name;
  }

  void readMesh(Case& c) {
    const Parameter& lowerParameter = parameter("mesh", "lower");
    const toml::node& lowerNode = required(lowerParameter);
    const toml::array& lowerArray = array(lowerNode, "mesh.lower", lowerParameter.allowed);
    if (lowerArray.empty() || lowerArray.size() > kMaxDimension) {
      fail("mesh.lower", lowerNode, "has " + entries(lowerArray.size()) + "; the dimension d must be 1, 2 or 3",
           lowerParameter.allowed);
    }
    dim_ = lowerArray.size();
    dimensionReason_ = "d = " + std::to_string(dim_) + ", the length of mesh.lower";
    c.mesh.dim = static_cast<int>(dim_);
    const models::Vector lower = pointOfDimension(lowerNode, "mesh.lower", lowerParameter.allowed);

    const Parameter& upperParameter = parameter("mesh", "upper");
    const toml::node& upperNode = required(upperParameter);
    const models::Vector upper = pointOfDimension(upperNode, "mesh.upper", upperParameter.allowed);
    for (std::size_t i = 0; i < dim_; ++i) {
      const auto k = static_cast<Eigen::Index>(i);
      if (!(upper[k] > lower[k])) {
        fail(indexed("mesh.upper", i), *upperNode.as_array()->get(i),
             "must be greater than mesh.lower[" + std::to_string(i) + "] = " + floatLiteral(lower[k]),
             upperParameter.allowed);
      }
      if (!std::isfinite(upper[k] - lower[k])) {  // e.g. [-1e308, 1e308]: every cell width would be inf
        fail(indexed("mesh.upper", i), *upperNode.as_array()->get(i),
             "the width mesh.upper[" + std::to_string(i) + "] - mesh.lower[" + std::to_string(i) +
                 "] overflows a double",
             upperParameter.allowed);
      }
      c.mesh.lower[i] = lower[k];
      c.mesh.upper[i] = upper[k];
    }

    const Parameter& cellsParameter = parameter("mesh", "cells");
    const toml::node& cellsNode = required(cellsParameter);
    const toml::array& cells = array(cellsNode, "mesh.cells", cellsParameter.allowed);
    if (cells.size() != dim_) {
      fail("mesh.cells", cellsNode,
           "has " + entries(cells.size()) + ", expected " + std::to_string(dim_) + " (" + dimensionReason_ + ")",
           cellsParameter.allowed);
    }
    std::int64_t total = 1;  // at most 65536^3 = 2^48 after the range checks: no overflow
    for (std::size_t i = 0; i < dim_; ++i) {
      const std::string path = indexed("mesh.cells", i);
      const std::int64_t n = integerOf(cellsParameter, *cells.get(i), path);
      c.mesh.cells[i] = static_cast<int>(n);
      total *= n;
    }
    if (total > kMaxTotalCells) {
      fail("mesh.cells", cellsNode, "gives " + std::to_string(total) + " cells in total, more than 268435456",
           cellsParameter.allowed);
    }
    const Parameter& grading = parameter("mesh", "grading");
    if (const toml::node* node = given("mesh", "grading")) {
      pointOfDimension(*node, "mesh.grading", grading.allowed);  // d finite numbers
      for (std::size_t i = 0; i < dim_; ++i)
        c.mesh.grading[i] = numberOf(grading, *node->as_array()->get(i), indexed("mesh.grading", i));
    }
    checkCellWidths(c);
  }

  // The cells the run builds (meshes::Axis::graded) must have distinct faces and widths that are normal doubles
  // and resolvable against the coordinates: e.g. 400 cells on [0, 5e-324] or 65536 cells graded by 1.2 are not.
  void checkCellWidths(const Case& c) {
    for (std::size_t i = 0; i < dim_; ++i) {
      const bool graded = c.mesh.grading[i] != 1.0;
      const std::string path = graded ? indexed("mesh.grading", i) : indexed("mesh.cells", i);
      const toml::node& node = graded ? *given("mesh", "grading")->as_array()->get(i)
                                      : *given("mesh", "cells")->as_array()->get(i);
      const std::string allowed = graded ? std::string(parameter("mesh", "grading").allowed)
                                         : std::string(parameter("mesh", "cells").allowed);
      const std::string axis = " on axis " + std::to_string(i) + " ([" + floatLiteral(c.mesh.lower[i]) + ", " +
                               floatLiteral(c.mesh.upper[i]) + "], " + std::to_string(c.mesh.cells[i]) + " cells";
      double smallest = 0.0, largest = 0.0;
      try {
        const auto ax = meshes::Axis::graded(c.mesh.lower[i], c.mesh.upper[i], c.mesh.cells[i], c.mesh.grading[i]);
        smallest = std::numeric_limits<double>::infinity();
        for (int k = 0; k < ax.cells(); ++k) {
          smallest = std::min(smallest, ax.width(k));
          largest = std::max(largest, ax.width(k));
        }
      } catch (const std::exception&) {
        fail(path, node, "gives cell faces that are not distinct increasing doubles" + axis + ")", allowed);
      }
      const double magnitude = std::max(std::abs(c.mesh.lower[i]), std::abs(c.mesh.upper[i]));
      if (!(smallest >= DBL_MIN) || !std::isfinite(largest) || smallest < kMinRelativeCellWidth * magnitude)
        fail(path, node,
             "gives cells of width " + shortestDouble(smallest) + axis +
                 "): cell widths must be normal doubles of at least 1e-10 of the largest |coordinate|",
             allowed);
      minWidth_[i] = smallest;
    }
  }

  void readLoss(Case& c) {
    c.loss.type = choiceAt("loss", "type");
    const std::string& t = c.loss.type;
    lossType_ = c.loss.type;
    checkApplicability();

    if (t == "quadratic" || t == "double_well") c.loss.lambda = numberAt("loss", "lambda");
    if (t == "logistic" || t == "huber") c.loss.regularization = numberAt("loss", "regularization");
    if (t == "huber") c.loss.delta = numberAt("loss", "delta");
    if (t == "double_well") c.loss.width = numberAt("loss", "width");
    if (t == "expression") {
      const Parameter& expression = parameter("loss", "expression");
      const toml::node* node = given("loss", "expression");
      if (!node) failMissing("loss.expression", expression.type, expression.allowed);
      c.loss.expression = string(*node, "loss.expression", expression.allowed);
      if (c.loss.expression.empty()) fail("loss.expression", *node, "must not be empty", expression.allowed);
      const Parameter& gradient = parameter("loss", "gradient");
      if (const toml::node* g = given("loss", "gradient")) {
        const toml::array& a = array(*g, "loss.gradient", gradient.allowed);
        if (a.size() != dim_) {
          fail("loss.gradient", *g, "has " + entries(a.size()) + ", expected " + std::to_string(dim_) + " (" +
                                        dimensionReason_ + ")",
               gradient.allowed);
        }
        for (std::size_t i = 0; i < a.size(); ++i)
          c.loss.gradient.push_back(string(*a.get(i), indexed("loss.gradient", i), gradient.allowed));
      }
      // The formulas are parsed now, so that a syntax error is an input error naming the key, not a run failure.
      try {
        models::ExpressionLoss probe(static_cast<int>(dim_), c.loss.expression, c.loss.gradient);
      } catch (const std::invalid_argument& e) {
        fail(c.loss.gradient.empty() ? "loss.expression" : "loss.expression / loss.gradient", *node, e.what(),
             expression.allowed);
      }
    }

    c.loss.strongConvexity = optionalNumberAt("loss", "strong_convexity");
    c.loss.smoothness = optionalNumberAt("loss", "smoothness");
    c.loss.sensitivity = optionalNumberAt("loss", "sensitivity");
  }

  // appliesTo is a comma-separated list of loss types.
  static bool appliesTo(std::string_view list, std::string_view type) {
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t end = list.find(',', start);
      if (end == std::string_view::npos) end = list.size();
      std::string_view item = list.substr(start, end - start);
      while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
      if (item == type) return true;
      start = end + 1;
    }
    return false;
  }

  // Keys that only make sense for the other loss type are errors rather than silently ignored: a user who wrote
  // regularization for a quadratic loss believes it has an effect.
  void checkApplicability() const {
    for (const Parameter& p : parameterSchema()) {
      if (p.appliesTo.empty() || appliesTo(p.appliesTo, lossType_)) continue;
      if (const toml::node* node = given(p.table, p.key)) {
        std::string types;  // "quadratic" or "quadratic" or "double_well"
        std::istringstream list{std::string(p.appliesTo)};
        for (std::string item; std::getline(list, item, ',');) {
          item.erase(0, item.find_first_not_of(' '));
          types += (types.empty() ? "\"" : " or \"") + item + "\"";
        }
        fail(parameterPath(p), *node,
             "applies only to loss.type = " + types + ", but loss.type = \"" + lossType_ + "\"",
             "no " + parameterPath(p) + " with loss.type = \"" + lossType_ + "\"");
      }
    }
  }

  void readData(Case& c) {
    const bool logistic = lossType_ == "logistic";
    const Parameter& recordsParameter = parameter("data", "records");
    const Parameter& fileParameter = parameter("data", "file");
    const Parameter& labelsParameter = parameter("data", "labels");
    const toml::node* recordsNode = given("data", "records");
    const toml::node* fileNode = given("data", "file");
    const toml::node* labelsNode = given("data", "labels");
    const toml::node* generatorNode = given("data", "generator");
    const std::string exactlyOne = "exactly one of data.records, data.file and data.generator";

    if (recordsNode && fileNode) fail("data.file", *fileNode, "given together with data.records", exactlyOne);
    if (generatorNode && (recordsNode || fileNode)) {
      fail("data.generator", *generatorNode,
           std::string("given together with data.") + (recordsNode ? "records" : "file"), exactlyOne);
    }
    // The generator's keys mean nothing without it: an error, not silently ignored.
    if (!generatorNode) {
      for (const char* key : {"count", "seed", "mean", "stddev", "true_theta"}) {
        if (const toml::node* node = given("data", key)) {
          fail("data." + std::string(key), *node, "applies only with data.generator", "no data." + std::string(key) +
                                                                                         " without data.generator");
        }
      }
    }
    if (generatorNode) {
      readGenerator(c, *generatorNode, labelsNode);
      readCount(c);
      return;
    }
    if (!recordsNode && !fileNode) {
      failMissing("data.records", std::string(recordsParameter.type) + ", or " + std::string(fileParameter.type),
                  exactlyOne, "data.records, data.file or data.generator");
    }

    std::vector<models::Record> records;
    if (recordsNode) {
      const toml::array& rows = array(*recordsNode, "data.records", recordsParameter.allowed);
      if (rows.empty()) {
        fail("data.records", *recordsNode, "must contain at least one record", recordsParameter.allowed);
      }
      for (std::size_t i = 0; i < rows.size(); ++i) {
        models::Record r;
        r.x = pointOfDimension(*rows.get(i), indexed("data.records", i), recordsParameter.allowed);
        records.push_back(std::move(r));
      }
      if (logistic) {
        if (!labelsNode) failMissing("data.labels", labelsParameter.type, labelsParameter.allowed);
        const toml::array& labels = array(*labelsNode, "data.labels", labelsParameter.allowed);
        if (labels.size() != records.size()) {
          fail("data.labels", *labelsNode,
               "has " + entries(labels.size(), "label", "labels") + " for " +
                   entries(records.size(), "record", "records") + " in data.records",
               labelsParameter.allowed);
        }
        for (std::size_t i = 0; i < labels.size(); ++i) {
          records[i].y = label(*labels.get(i), indexed("data.labels", i), labelsParameter.allowed);
        }
      }
      c.data.records = models::Dataset(std::move(records));
    } else {
      if (labelsNode) {
        fail("data.labels", *labelsNode, "not allowed with data.file: the labels are the CSV file's last column",
             "no data.labels when data.file is given");
      }
      const std::string& written = string(*fileNode, "data.file", fileParameter.allowed);
      if (written.empty()) fail("data.file", *fileNode, "must not be empty", fileParameter.allowed);
      c.data.file = resolveDataPath(written);
      try {
        std::string text;
        try {
          text = models::readInputFile(c.data.file, models::kMaxDataFileBytes);
        } catch (const models::InputFileError& e) {
          throw models::DataFileError("cannot read data file '" + c.data.file + "': " + e.what());
        }
        c.data.fileSha256 = io::sha256Hex(text);  // of the very bytes parsed: what a restart proves unchanged
        c.data.records = models::parseCsvDataset(std::move(text), c.data.file, static_cast<int>(dim_), logistic);
      } catch (const std::exception& e) {  // DataFileError above all; anything else from the reader is also the file's
        fail("data.file", *fileNode, e.what(), fileParameter.allowed);
      }
      if (c.data.records.size() == 0) fail("data.file", *fileNode, "contains no records", fileParameter.allowed);
    }
    readCount(c);
  }

  void readGenerator(Case& c, const toml::node& generatorNode, const toml::node* labelsNode) {
    models::DataGeneratorSpec spec;
    spec.kind = choiceOf(parameter("data", "generator"), generatorNode);
    if (labelsNode) fail("data.labels", *labelsNode, "not allowed with data.generator", "no data.labels with a generator");
    const Parameter& count = parameter("data", "count");
    const toml::node* countNode = given("data", "count");
    if (!countNode) failMissing("data.count", count.type, count.allowed);
    spec.n = static_cast<std::size_t>(integerOf(count, *countNode));
    if (const toml::node* node = given("data", "seed"))
      spec.seed = static_cast<std::uint64_t>(integerOf(parameter("data", "seed"), *node));
    const Parameter& mean = parameter("data", "mean");
    spec.mean = models::Vector::Zero(static_cast<Eigen::Index>(dim_));
    if (const toml::node* node = given("data", "mean")) spec.mean = pointOfDimension(*node, "data.mean", mean.allowed);
    if (const auto stddev = optionalNumberAt("data", "stddev")) spec.stddev = *stddev;
    const Parameter& trueTheta = parameter("data", "true_theta");
    if (const toml::node* node = given("data", "true_theta")) {
      if (spec.kind != "logistic") fail("data.true_theta", *node, "applies only to generator = \"logistic\"", trueTheta.allowed);
      spec.trueTheta = pointOfDimension(*node, "data.true_theta", trueTheta.allowed);
    } else if (spec.kind == "logistic") {
      failMissing("data.true_theta", trueTheta.type, trueTheta.allowed);
    }
    c.data.generator = spec;
    c.data.records = models::generateDataset(spec);
  }

  void readCount(Case& c) const {
    const Parameter& countParameter = parameter("data", "n");
    if (const toml::node* node = lookup(countParameter)) {
      const std::int64_t n = integer(*node, "data.n", countParameter.allowed);
      if (n < 0 || static_cast<std::size_t>(n) != c.data.records.size()) {
        fail("data.n", *node,
             "does not match the " + entries(c.data.records.size(), "record", "records") + " given",
             std::to_string(c.data.records.size()) + " (the number of records given)");
      }
    }
  }

  std::string resolveDataPath(const std::string& written) const { return dataFilePath(file_, written); }

  void readNeighbour(Case& c) const {
    const std::size_t n = c.data.records.size();
    const std::string kind = choiceAt("neighbour", "kind");
    const toml::node& kindNode = required(parameter("neighbour", "kind"));
    c.neighbour.kind = kind == "replace" ? models::NeighbourKind::Replace
                       : kind == "add"   ? models::NeighbourKind::Add
                                         : models::NeighbourKind::Remove;
    const bool needsIndex = kind != "add", needsRecord = kind != "remove";
    const Parameter& indexParameter = parameter("neighbour", "index");
    const Parameter& recordParameter = parameter("neighbour", "record");
    if (!needsIndex) {
      if (const toml::node* node = given("neighbour", "index"))
        fail("neighbour.index", *node, "not used with neighbour.kind = \"add\"", "no neighbour.index when adding");
    }
    if (!needsRecord) {
      if (const toml::node* node = given("neighbour", "record"))
        fail("neighbour.record", *node, "not used with neighbour.kind = \"remove\"", "no neighbour.record when removing");
      if (n < 2) fail("neighbour.kind", kindNode, "removing a record needs n >= 2 records", "add or replace");
    }
    if (needsIndex) readNeighbourIndex(c, n, indexParameter);
    if (needsRecord) {
      const toml::node* node = given("neighbour", "record");
      if (!node) failMissing("neighbour.record", recordParameter.type, recordParameter.allowed);
      c.neighbour.replacement.x = pointOfDimension(*node, "neighbour.record", recordParameter.allowed);
      // Without a label the replacement keeps the replaced record's label (added records: +1).
      c.neighbour.replacement.y = needsIndex ? c.data.records[c.neighbour.index].y : 1.0;
      const Parameter& labelParameter = parameter("neighbour", "label");
      if (lossType_ == "logistic") {
        if (const toml::node* l = lookup(labelParameter)) {
          c.neighbour.replacement.y = label(*l, "neighbour.label", labelParameter.allowed);
        }
      }
    }
  }

  void readNeighbourIndex(Case& c, std::size_t n, const Parameter& indexParameter) const {
    const toml::node* indexPtr = given("neighbour", "index");
    if (!indexPtr) failMissing("neighbour.index", indexParameter.type, indexParameter.allowed);
    const toml::node& indexNode = *indexPtr;
    const std::int64_t index = integer(indexNode, "neighbour.index", indexParameter.allowed);
    const std::string allowed = "an integer with 0 <= index < n = " + std::to_string(n);
    if (index < 0) fail("neighbour.index", indexNode, "out of range: indices start at 0", allowed);
    if (static_cast<std::uint64_t>(index) >= n) {
      fail("neighbour.index", indexNode, "out of range: the dataset has " + entries(n, "record", "records"), allowed);
    }
    c.neighbour.index = static_cast<std::size_t>(index);
  }

  // l(theta; x) and its gradient must be finite where the run evaluates them: "0/0" or an overflowing lambda
  // would otherwise give a NaN drift, S_g = 0 and a "bound" below the computed divergence. Checked at the cell
  // centres of a sub-grid (every cell where cells x records allows, always the wall cells and the middle one) for
  // every record of D and D'.
  void checkLossFinite(const Case& c) const {
    const auto loss = buildLoss(c.loss, static_cast<int>(dim_));
    // The data's records and then the neighbour's, read in place (a copy of 10^7 records held 0.5 GB).
    const models::Dataset& data = c.data.records;
    const std::size_t recordCount = data.size() + (c.neighbour.kind != models::NeighbourKind::Remove ? 1 : 0);
    const auto record = [&](std::size_t r) -> const models::Record& {
      return r < data.size() ? data[r] : c.neighbour.replacement;
    };
    const double perAxis = std::pow(static_cast<double>(kMaxLossChecks) / static_cast<double>(recordCount),
                                    1.0 / static_cast<double>(dim_));
    std::vector<std::vector<double>> points(dim_);
    for (std::size_t a = 0; a < dim_; ++a) {
      const auto ax = meshes::Axis::graded(c.mesh.lower[a], c.mesh.upper[a], c.mesh.cells[a], c.mesh.grading[a]);
      const int n = ax.cells();
      const int m = std::clamp(static_cast<int>(perAxis), 2, n);
      for (int j = 0; j < m; ++j) points[a].push_back(ax.centre(static_cast<int>((static_cast<long>(j) * (n - 1)) / (m - 1))));
      points[a].push_back(ax.centre(n / 2));
    }
    const std::string path = c.loss.type == "expression" ? (c.loss.gradient.empty() ? "loss.expression" : "loss.gradient")
                             : c.loss.type == "quadratic" || c.loss.type == "double_well" ? "loss.lambda"
                                                                                          : "loss.regularization";
    const toml::node* node = given("loss", path.substr(5));
    const toml::node& shown = node ? *node : *given("loss", "type");
    // Very large datasets: every stride-th record (and always the neighbour's), so the check stays within budget.
    std::size_t pointCount = 1;
    for (const auto& p : points) pointCount *= p.size();
    const std::size_t stride = std::max<std::size_t>(1, pointCount * recordCount / kMaxLossChecks);
    std::vector<std::size_t> checked;
    for (std::size_t r = 0; r < recordCount; r += stride) checked.push_back(r);
    if (checked.back() != recordCount - 1) checked.push_back(recordCount - 1);
    std::vector<std::size_t> index(dim_, 0);
    models::Vector theta(static_cast<Eigen::Index>(dim_));
    for (;;) {
      for (std::size_t a = 0; a < dim_; ++a) theta[static_cast<Eigen::Index>(a)] = points[a][index[a]];
      for (std::size_t r : checked) {
        double value = 0.0;
        models::Vector gradient;
        try {
          value = loss->value(theta, record(r));
          gradient = loss->gradient(theta, record(r));
        } catch (const std::exception& e) {
          fail(path, shown, std::string("cannot be evaluated: ") + e.what(), parameter("loss", path.substr(5)).allowed);
        }
        if (!std::isfinite(value) || !gradient.allFinite()) {
          std::string at = "(";
          for (std::size_t a = 0; a < dim_; ++a) at += (a ? ", " : "") + shortestDouble(theta[static_cast<Eigen::Index>(a)]);
          const std::string which = r < data.size() ? "record " + std::to_string(r) + " of the data"
                                                              : std::string("the neighbour's record");
          fail(path, shown,
               std::string(std::isfinite(value) ? "gives a gradient" : "gives a loss value") +
                   " that is not finite at the cell centre theta = " + at + ") with " + which +
                   " (the loss and its gradient must be finite on the whole mesh)",
               parameter("loss", path.substr(5)).allowed);
        }
      }
      std::size_t a = 0;
      while (a < dim_ && ++index[a] == points[a].size()) index[a++] = 0;
      if (a == dim_) break;
    }
  }

  // The noise's diffusion D = Sigma/2 against the cells: its eigenvalues must be normal doubles and D / h^2 (the
  // operator's entries) must stay far from overflow.
  void checkDiffusionScale(const Case& c) {
    const std::string path =
        c.noise.covariance ? "noise.covariance" : (c.noise.multiplier ? "noise.multiplier" : "noise.sigma");
    const toml::node& node = *given("noise", path.substr(6));
    const std::string allowed(parameter("noise", path.substr(6)).allowed);
    double smallest = 0.5 * c.noise.sigma * c.noise.sigma, largest = smallest;
    for (const auto* sigma : {&c.noise.covariance, &c.noise.covariancePrime}) {
      if (!*sigma) continue;
      const auto eigenvalues = Eigen::SelfAdjointEigenSolver<models::Matrix>(**sigma).eigenvalues();
      smallest = std::min(smallest, 0.5 * eigenvalues.minCoeff());
      largest = std::max(largest, 0.5 * eigenvalues.maxCoeff());
    }
    if (!(smallest >= DBL_MIN) || !std::isfinite(largest))
      fail(path, node,
           "gives a diffusion Sigma/2 with eigenvalues in [" + shortestDouble(smallest) + ", " + shortestDouble(largest) +
               "], not normal finite doubles",
           allowed);
    double hmin = minWidth_[0];
    for (std::size_t a = 1; a < dim_; ++a) hmin = std::min(hmin, minWidth_[a]);
    const double rate = largest / hmin / hmin;
    if (!(rate <= kMaxCellRate))
      fail(path, node,
           "gives a diffusion over the squared smallest cell width D / h^2 = " + shortestDouble(rate) +
               ", more than 1e100",
           allowed);
    cellRate_ = rate;
  }

  // The output interval dt * output.every in units of the fastest cell diffusion time h^2 / D (checkDiffusionScale).
  void checkOutputInterval(const Case& c) const {
    const long every = std::min(c.output.every, c.time.steps());
    const double interval = c.time.dt * static_cast<double>(every) * cellRate_;
    if (!(interval <= kMaxOutputInterval))
      fail("time.dt", *given("time", "dt"),
           "times output.every = " + std::to_string(c.output.every) + " is " + shortestDouble(interval) +
               " diffusion times of the smallest cell (h^2 / D), more than 1e9: the run's cost per output step "
               "grows with it",
           parameter("time", "dt").allowed);
  }

  void readNoise(Case& c) const {
    const Parameter& sigma = parameter("noise", "sigma");
    const Parameter& cov = parameter("noise", "covariance");
    const toml::node* sigmaNode = given("noise", "sigma");
    const toml::node* covNode = given("noise", "covariance");
    if (sigmaNode && covNode) {
      fail("noise.covariance", *covNode, "given together with noise.sigma",
           "exactly one of noise.sigma (isotropic) and noise.covariance");
    }
    const Parameter& multiplier = parameter("noise", "multiplier");
    if (given("noise", "multiplier") && c.dynamics != "noisy_gd") checkDynamicsApplicability();
    if (const toml::node* zNode = given("noise", "multiplier"); zNode && c.dynamics == "noisy_gd") {
      if (sigmaNode || covNode)
        fail("noise.multiplier", *zNode, std::string("given together with noise.") + (sigmaNode ? "sigma" : "covariance"),
             "exactly one of noise.sigma, noise.covariance and noise.multiplier");
      const double z = numberOf(multiplier, *zNode);
      const toml::node* clipNode = given("noisy_gd", "clip_norm");
      if (!clipNode)
        failMissing("noisy_gd.clip_norm", parameter("noisy_gd", "clip_norm").type, parameter("noisy_gd", "clip_norm").allowed,
                    "noisy_gd.clip_norm (needed by noise.multiplier: the noise is z times the clip norm)");
      const double clip = numberOf(parameter("noisy_gd", "clip_norm"), *clipNode);
      const double eta = numberAt("noisy_gd", "eta");
      c.noise.multiplier = z;
      c.noise.sigma = sigmaFromNoiseMultiplier(z, clip, eta, c.batch.expectedSize(c.data.records.size()));
      return;
    }
    if (!sigmaNode && !covNode)
      failMissing("noise.sigma", sigma.type, sigma.allowed,
                  dynamics_ == "noisy_gd" ? "noise.sigma, noise.covariance or noise.multiplier"
                                          : "noise.sigma or noise.covariance");
    if (sigmaNode) {
      c.noise.sigma = numberOf(sigma, *sigmaNode);
    } else {
      c.noise.covariance = covarianceMatrix(*covNode, "noise.covariance", cov.allowed);
      // sigma^2 = the largest eigenvalue: the scale reported where one number is needed (e.g. the summary).
      c.noise.sigma = std::sqrt(Eigen::SelfAdjointEigenSolver<models::Matrix>(*c.noise.covariance).eigenvalues().maxCoeff());
    }
    const Parameter& covPrime = parameter("noise", "covariance_prime");
    if (const toml::node* node = given("noise", "covariance_prime")) {
      c.noise.covariancePrime = covarianceMatrix(*node, "noise.covariance_prime", covPrime.allowed);
    }
  }

  // [batch] (MATH.md §8): the batch size must leave at least one record per batch; sampling decides which of size
  // and rate is required, and the other one is an error rather than silently ignored.
  void readBatch(Case& c) const {
    const std::size_t n = c.data.records.size();
    c.batch.sampling = choiceAt("batch", "sampling");
    const toml::node* sizeNode = given("batch", "size");
    const toml::node* rateNode = given("batch", "rate");
    const std::string mode = "batch.sampling = \"" + c.batch.sampling + "\"";
    if (sizeNode && c.batch.sampling != "cyclic")
      fail("batch.size", *sizeNode, "applies only to cyclic batches, but " + mode,
           "no batch.size unless batch.sampling = \"cyclic\"");
    if (rateNode && c.batch.sampling != "poisson")
      fail("batch.rate", *rateNode, "applies only to Poisson sampling, but " + mode,
           "no batch.rate unless batch.sampling = \"poisson\"");
    if (c.batch.sampling == "cyclic") {
      const Parameter& size = parameter("batch", "size");
      if (!sizeNode) failMissing("batch.size", size.type, size.allowed, "batch.size (needed by " + mode + ")");
      const std::int64_t b = integerOf(size, *sizeNode);
      if (static_cast<std::uint64_t>(b) > n)
        fail("batch.size", *sizeNode, "is more than the n = " + std::to_string(n) + " records", size.allowed);
      c.batch.size = static_cast<long>(b);
    } else if (c.batch.sampling == "poisson") {
      const Parameter& rate = parameter("batch", "rate");
      if (!rateNode) failMissing("batch.rate", rate.type, rate.allowed, "batch.rate (needed by " + mode + ")");
      c.batch.rate = numberOf(rate, *rateNode);
    }
    for (const char* key : {"mixture", "mixture_tolerance"})
      if (const toml::node* node = given("batch", key); node && c.batch.sampling != "poisson")
        fail("batch." + std::string(key), *node, "applies only to Poisson sampling, but " + mode,
             "no batch." + std::string(key) + " unless batch.sampling = \"poisson\"");
    if (c.batch.sampling != "poisson") return;
    c.batch.mixture = choiceAt("batch", "mixture");
    c.batch.mixtureTolerance = numberAt("batch", "mixture_tolerance");
  }

  void readInitial(Case& c) const {
    const auto d = static_cast<Eigen::Index>(dim_);
    const Parameter& meanParameter = parameter("initial", "mean");
    if (const toml::node* node = lookup(meanParameter)) {
      c.initial.mean = pointOfDimension(*node, "initial.mean", meanParameter.allowed);
    } else {
      c.initial.mean = models::Vector::Zero(d);
    }

    const Parameter& covParameter = parameter("initial", "covariance");
    c.initial.covariance = covarianceMatrix(required(covParameter), "initial.covariance", covParameter.allowed);
  }

  // A number v (meaning v I) or a symmetric positive-definite d x d array (initial.covariance, noise.covariance).
  models::Matrix covarianceMatrix(const toml::node& node, const std::string& path, std::string_view allowed) const {
    const auto d = static_cast<Eigen::Index>(dim_);
    if (node.is_number()) return positive(node, path, allowed) * models::Matrix::Identity(d, d);
    if (!node.is_array()) fail(path, node, "must be a number or a d x d array, not " + typeName(node), allowed);
    const toml::array& rows = *node.as_array();
    if (rows.size() != dim_) {
      fail(path, node,
           "has " + entries(rows.size(), "row", "rows") + ", expected a " + std::to_string(dim_) + " x " +
               std::to_string(dim_) + " array (" + dimensionReason_ + ")",
           allowed);
    }
    models::Matrix a(d, d);
    for (std::size_t i = 0; i < dim_; ++i) {
      const std::string rowPath = indexed(path, i);
      const toml::node& row = *rows.get(i);
      if (!row.is_array()) fail(rowPath, row, "must be an array (row " + std::to_string(i) + " of the matrix)", allowed);
      a.row(static_cast<Eigen::Index>(i)) = pointOfDimension(row, rowPath, allowed).transpose();
    }
    const double scale = a.cwiseAbs().maxCoeff();
    for (std::size_t i = 0; i < dim_; ++i) {
      for (std::size_t j = i + 1; j < dim_; ++j) {
        const double aij = a(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
        const double aji = a(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(i));
        if (std::abs(aij - aji) > kSymmetryTolerance * scale) {
          fail(path + "[" + std::to_string(i) + "][" + std::to_string(j) + "]", *rows.get(i)->as_array()->get(j),
               "not symmetric: " + path + "[" + std::to_string(j) + "][" + std::to_string(i) + "] = " +
                   floatLiteral(aji),
               allowed);
        }
      }
    }
    if (Eigen::LLT<models::Matrix>(a).info() != Eigen::Success) {
      fail(path, node, "not positive definite (its Cholesky factorisation fails)", allowed);
    }
    // Exact symmetry downstream (Cholesky factors, Gaussian densities) instead of a 1e-12 asymmetry.
    return 0.5 * (a + a.transpose());
  }

  void readTime(Case& c) const {
    c.time.t_end = numberAt("time", "t_end");
    const Parameter& dtParameter = parameter("time", "dt");
    const toml::node& dtNode = required(dtParameter);
    c.time.dt = numberOf(dtParameter, dtNode);
    if (c.time.dt > c.time.t_end) {
      fail("time.dt", dtNode, "is larger than time.t_end = " + floatLiteral(c.time.t_end), dtParameter.allowed);
    }
    const double steps = c.time.t_end / c.time.dt;
    const std::string ratio = "time.t_end / time.dt = " + floatLiteral(c.time.t_end) + " / " +
                              floatLiteral(c.time.dt) + " = " + shortestDouble(steps);
    if (steps > kMaxSteps) fail("time.dt", dtNode, ratio + " steps, more than 10^9", dtParameter.allowed);
    if (std::abs(steps - std::round(steps)) > kStepTolerance * steps) {
      fail("time.dt", dtNode, ratio + " is not an integer number of steps", dtParameter.allowed);
    }
  }

  void readOutput(Case& c) const {
    c.output.every = static_cast<long>(integerAt("output", "every"));
    c.output.checkpointEvery = static_cast<long>(integerAt("output", "checkpoint_every"));
    c.output.fields = booleanAt("output", "fields");
    c.output.plots = booleanAt("output", "plots");
    // VTK files carry the fields, so without fields there is nothing to write: omitted, vtk follows fields.
    const Parameter& vtk = parameter("output", "vtk");
    if (const toml::node* node = given("output", "vtk")) {
      c.output.vtk = boolean(*node, "output.vtk", vtk.allowed);
      if (c.output.vtk && !c.output.fields)
        fail("output.vtk", *node, "needs output.fields = true (the VTK files hold the fields)", vtk.allowed);
    } else {
      c.output.vtk = c.output.fields;
    }

    const Parameter& directory = parameter("output", "directory");
    if (const toml::node* node = lookup(directory)) {
      c.output.directory = string(*node, "output.directory", directory.allowed);
      if (c.output.directory.empty()) fail("output.directory", *node, "must not be empty", directory.allowed);
      if (oneLine(c.output.directory) != c.output.directory) {
        fail("output.directory", *node, "contains a control character", directory.allowed);
      }
    } else {
      c.output.directory = c.name + "-output";
    }
  }

  void readDivergence(Case& c) const {
    const Parameter& ordersParameter = parameter("divergence", "orders");
    const std::string_view allowed = ordersParameter.allowed;
    const toml::node& node = required(ordersParameter);
    if (const auto* name = node.as_string()) {
      if (name->get() != "dense") fail("divergence.orders", node, "is not a known order grid", allowed);
      c.divergence.denseOrders = true;
      for (double alpha : models::denseRenyiOrders()) c.divergence.orders.push_back(RenyiOrder{alpha, shortestDouble(alpha)});
      readFunctionalGrids(c);
      return;
    }
    const toml::array& orders = array(node, "divergence.orders", allowed);
    if (orders.empty()) fail("divergence.orders", node, "must not be empty", allowed);
    if (orders.size() > kMaxOrders) {
      fail("divergence.orders", node, "has " + entries(orders.size()) + ", more than 1024", allowed);
    }
    for (std::size_t i = 0; i < orders.size(); ++i) {
      const std::string path = indexed("divergence.orders", i);
      const toml::node& entry = *orders.get(i);
      const double alpha = numberOf(ordersParameter, entry, path);
      for (std::size_t j = 0; j < c.divergence.orders.size(); ++j) {
        if (c.divergence.orders[j].alpha == alpha) {
          fail(path, entry, "duplicates divergence.orders[" + std::to_string(j) + "]", allowed);
        }
      }
      // The label is the number as written: an integer keeps its digits, a float its shortest round-trip form
      // (so 2.0 and 2 both give "2"); it becomes the CSV column renyi_<label>.
      const std::string label =
          entry.is_integer() ? std::to_string(entry.as_integer()->get()) : shortestDouble(alpha);
      c.divergence.orders.push_back(RenyiOrder{alpha, label});
    }
    readFunctionalGrids(c);
  }

  // The hockey-stick eps grid and the privacy-loss bins (solver/functionals/Divergences.hpp).
  void readFunctionalGrids(Case& c) const {
    constexpr double kMaxEpsPoints = 100000;
    const Parameter& maxParameter = parameter("divergence", "hockey_stick_eps_max");
    c.divergence.hockeyStickEpsMax = numberAt("divergence", "hockey_stick_eps_max");
    const toml::node& stepNode = required(parameter("divergence", "hockey_stick_eps_step"));
    c.divergence.hockeyStickEpsStep = numberAt("divergence", "hockey_stick_eps_step");
    if (c.divergence.hockeyStickEpsMax / c.divergence.hockeyStickEpsStep + 1 > kMaxEpsPoints)
      fail("divergence.hockey_stick_eps_step", stepNode,
           "gives more than 100000 grid points up to hockey_stick_eps_max = " +
               shortestDouble(c.divergence.hockeyStickEpsMax),
           maxParameter.allowed);
    c.divergence.privacyLossBins = static_cast<long>(integerAt("divergence", "privacy_loss_bins"));
  }

  // [privacy]: the delta of the summary table and the delta grid of epsilon.csv (MATH.md §7).
  void readPrivacy(Case& c) const {
    c.privacy.delta = numberAt("privacy", "delta");
    const Parameter& gridParameter = parameter("privacy", "delta_grid");
    std::vector<double> grid;
    if (const toml::node* node = lookup(gridParameter)) {
      const toml::array& entries = array(*node, "privacy.delta_grid", gridParameter.allowed);
      if (entries.empty()) fail("privacy.delta_grid", *node, "must not be empty", gridParameter.allowed);
      if (entries.size() > 64) {
        fail("privacy.delta_grid", *node, "has " + std::to_string(entries.size()) + " entries, more than 64",
             gridParameter.allowed);
      }
      for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::string path = indexed("privacy.delta_grid", i);
        const toml::node& entry = *entries.get(i);
        const double d = numberOf(gridParameter, entry, path);
        for (std::size_t j = 0; j < grid.size(); ++j) {
          if (grid[j] == d) fail(path, entry, "duplicates privacy.delta_grid[" + std::to_string(j) + "]",
                                 gridParameter.allowed);
        }
        grid.push_back(d);
      }
    } else {
      for (int k = 1; k <= 12; ++k) grid.push_back(std::pow(10.0, -k));
    }
    if (std::find(grid.begin(), grid.end(), c.privacy.delta) == grid.end()) grid.push_back(c.privacy.delta);
    std::sort(grid.begin(), grid.end(), std::greater<double>());
    c.privacy.deltaGrid = grid;
  }

  // solver.ts_type = "exponential" (solver/propagation/ExponentialEvolution.hpp) on a case it cannot run (exponentialObstacle):
  // the error names the key in the way. (A -ts_type on the command line is checked when the run builds its operator.)
  void checkExponentialApplies(const Case& c) const {
    const auto obstacle = exponentialObstacle(c);
    if (!obstacle) return;
    const auto dot = obstacle->key.find('.');
    const toml::node* node = given(obstacle->key.substr(0, dot), obstacle->key.substr(dot + 1));
    fail(obstacle->key, node ? *node : *given("solver", "ts_type"), obstacle->reason,
         "\"auto\", a PETSc TS type, or \"exponential\" for Langevin runs with solver.spatial_order = 2");
  }

  void readSolver(Case& c) const {
    const Parameter& order = parameter("solver", "spatial_order");
    const toml::node& orderNode = required(order);
    const std::int64_t o = integer(orderNode, "solver.spatial_order", order.allowed);
    if (o != 2 && o != 4) fail("solver.spatial_order", orderNode, "is not a supported order", order.allowed);
    c.solver.spatial_order = static_cast<int>(o);
    c.solver.ts_type = petscName("ts_type");
    if (c.solver.ts_type == kExponentialTsType) checkExponentialApplies(c);
    c.solver.ksp_type = petscName("ksp_type");
    c.solver.pc_type = petscName("pc_type");

    const Parameter& options = parameter("solver", "petsc_options");
    const toml::node& node = required(options);
    c.solver.petsc_options = string(node, "solver.petsc_options", options.allowed);
    // PETSc would take a stray word as an option value or ignore it; either way the user's intent is lost. Every
    // option is held against the allow-list (app/platform/PetscOptionPolicy.hpp): a shared case must not write files.
    std::istringstream stream(c.solver.petsc_options);
    std::vector<std::string> tokens;
    for (std::string token; stream >> token;) tokens.push_back(token);
    // The same split as insertCaseOptions: "-1" or "-.5" after an option is its value, not an option.
    const auto isName = [](const std::string& t) {
      return t.size() >= 2 && t[0] == '-' && !(t[1] >= '0' && t[1] <= '9') && t[1] != '.';
    };
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (!isName(tokens[i])) {
        fail("solver.petsc_options", node,
             "token '" + tokens[i] + "' is neither an option (starting with '-') nor the value of the option before it",
             options.allowed);
      }
      const std::string name = tokens[i];
      const std::string value = i + 1 < tokens.size() && !isName(tokens[i + 1]) ? tokens[++i] : std::string();
      if (const auto problem = caseFilePetscOptionProblem(name, value))
        fail("solver.petsc_options", node, "option '" + name + "' " + *problem, options.allowed);
    }
  }

  // Only the shape of the name is checked here; whether PETSc knows the type is checked by the solver.
  std::string petscName(std::string_view key) const {
    const Parameter& p = parameter("solver", key);
    const std::string path = "solver." + std::string(key);
    const toml::node& node = required(p);
    const std::string& name = string(node, path, p.allowed);
    const bool valid = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
      return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
    });
    if (!valid) fail(path, node, "is not a PETSc type name", p.allowed);
    return name;
  }

  // ---- pass 3: the resolved case ----

  static toml::array vectorArray(const models::Vector& v) {
    toml::array a;
    for (Eigen::Index i = 0; i < v.size(); ++i) a.push_back(v[i]);
    return a;
  }

  // [sampler]: the Monte Carlo sampler of `fpdp sample` (validation/MonteCarloSampler).
  void readSampler(Case& c) const {
    c.sampler.particles = static_cast<long>(integerAt("sampler", "particles"));
    c.sampler.seed = static_cast<std::uint64_t>(integerAt("sampler", "seed"));
    c.sampler.threads = static_cast<int>(integerAt("sampler", "threads"));
    c.sampler.confidence = numberAt("sampler", "confidence");
    c.sampler.auditDelta = numberAt("sampler", "audit_delta");
    const long K = c.dynamics == "langevin" ? c.time.steps() : c.noisyGd.steps;
    if (c.dynamics == "langevin") {
      const Parameter& p = parameter("sampler", "langevin_dt");
      if (const toml::node* node = given("sampler", "langevin_dt")) {
        const double dt = numberOf(p, *node);
        const double ratio = c.time.dt / dt;
        if (!(ratio >= 1.0 - kStepTolerance) || std::abs(ratio - std::round(ratio)) > kStepTolerance * ratio ||
            ratio > kMaxSteps)
          fail("sampler.langevin_dt", *node,
               "does not divide time.dt = " + floatLiteral(c.time.dt) + " into an integer number of steps", p.allowed);
        c.sampler.langevinDt = c.time.dt / std::round(ratio);
      } else {
        c.sampler.langevinDt = c.time.dt / 10.0;
      }
    }
    const Parameter& steps = parameter("sampler", "output_steps");
    if (const toml::node* node = given("sampler", "output_steps")) {
      const toml::array& a = array(*node, "sampler.output_steps", steps.allowed);
      if (a.empty() || a.size() > 1000) fail("sampler.output_steps", *node, "must hold 1 to 1000 steps", steps.allowed);
      for (std::size_t i = 0; i < a.size(); ++i) {
        const std::string path = indexed("sampler.output_steps", i);
        const std::int64_t k = integer(*a.get(i), path, steps.allowed);
        if (k < 0 || k > K)
          fail(path, *a.get(i), "is not a step of this case (K = " + std::to_string(K) + ")", steps.allowed);
        if (!c.sampler.outputSteps.empty() && k <= c.sampler.outputSteps.back())
          fail(path, *a.get(i), "does not increase", steps.allowed);
        c.sampler.outputSteps.push_back(static_cast<long>(k));
      }
    } else {
      c.sampler.outputSteps = {K};
    }
  }

  // [worst_case]: the domain `fpdp worst-case` searches (app/commands/WorstCaseCommand.hpp).
  void readWorstCase(Case& c) const {
    WorstCaseSpec& w = c.worstCase;
    w.given = root_.get_as<toml::table>("worst_case") != nullptr;
    auto point = [&](const char* key) -> std::optional<models::Vector> {
      const toml::node* node = given("worst_case", key);
      if (!node) return std::nullopt;
      return pointOfDimension(*node, std::string("worst_case.") + key, parameter("worst_case", key).allowed);
    };
    const auto lower = point("record_lower"), upper = point("record_upper"), centre = point("record_centre");
    const toml::node* radius = given("worst_case", "record_radius");
    const bool box = lower || upper, ball = centre || radius;
    if (box && ball) {
      const char* key = lower ? "record_lower" : "record_upper";
      fail(std::string("worst_case.") + key, *given("worst_case", key), "given together with a ball domain",
           "either record_lower and record_upper (a box) or record_centre and record_radius (a ball)");
    }
    if (box) {
      const char* missing = lower ? "record_upper" : "record_lower";
      if (!lower || !upper)
        failMissing(std::string("worst_case.") + missing, parameter("worst_case", missing).type,
                    parameter("worst_case", missing).allowed);
      for (Eigen::Index a = 0; a < lower->size(); ++a)
        if (!((*lower)[a] < (*upper)[a]))
          fail(indexed("worst_case.record_upper", static_cast<std::size_t>(a)),
               *given("worst_case", "record_upper")->as_array()->get(static_cast<std::size_t>(a)),
               "is not above worst_case.record_lower[" + std::to_string(a) + "]",
               parameter("worst_case", "record_upper").allowed);
      w.domain = "box";
      w.lower = *lower;
      w.upper = *upper;
    }
    if (ball) {
      if (!centre)
        failMissing("worst_case.record_centre", parameter("worst_case", "record_centre").type,
                    parameter("worst_case", "record_centre").allowed);
      if (!radius)
        failMissing("worst_case.record_radius", parameter("worst_case", "record_radius").type,
                    parameter("worst_case", "record_radius").allowed);
      w.domain = "ball";
      w.centre = *centre;
      w.radius = numberOf(parameter("worst_case", "record_radius"), *radius);
    }
    readWorstCaseSearch(c);
  }

  void readWorstCaseSearch(Case& c) const {
    WorstCaseSpec& w = c.worstCase;
    w.labels.clear();
    if (lossType_ == "logistic") {
      const Parameter& p = parameter("worst_case", "labels");
      if (const toml::node* node = given("worst_case", "labels")) {
        const toml::array& a = array(*node, "worst_case.labels", p.allowed);
        if (a.empty() || a.size() > 2) fail("worst_case.labels", *node, "must hold one or two labels", p.allowed);
        for (std::size_t i = 0; i < a.size(); ++i) {
          const int y = static_cast<int>(label(*a.get(i), indexed("worst_case.labels", i), p.allowed));
          if (std::find(w.labels.begin(), w.labels.end(), y) != w.labels.end())
            fail(indexed("worst_case.labels", i), *a.get(i), "repeats a label", p.allowed);
          w.labels.push_back(y);
        }
      } else {
        w.labels = {-1, 1};
      }
    }
    const std::size_t n = c.data.records.size();
    const Parameter& ip = parameter("worst_case", "indices");
    const toml::node& indices = required(ip);
    w.indices.clear();
    if (const auto* word = indices.as_string()) {
      if (word->get() != "all") fail("worst_case.indices", indices, "unknown word", ip.allowed);  // empty: all
    } else {
      const toml::array& a = array(indices, "worst_case.indices", ip.allowed);
      if (a.empty() || a.size() > n) fail("worst_case.indices", indices, "must hold 1 to n indices", ip.allowed);
      for (std::size_t i = 0; i < a.size(); ++i) {
        const std::string path = indexed("worst_case.indices", i);
        const std::int64_t k = integer(*a.get(i), path, ip.allowed);
        if (k < 0 || static_cast<std::uint64_t>(k) >= n)
          fail(path, *a.get(i), "out of range: the dataset has " + entries(n, "record", "records"), ip.allowed);
        if (std::find(w.indices.begin(), w.indices.end(), static_cast<std::size_t>(k)) != w.indices.end())
          fail(path, *a.get(i), "repeats an index", ip.allowed);
        w.indices.push_back(static_cast<std::size_t>(k));
      }
    }
    w.gridPoints = static_cast<int>(integerAt("worst_case", "grid_points"));
    w.refinementRounds = static_cast<int>(integerAt("worst_case", "refinement_rounds"));
    w.refinementPoints = static_cast<int>(integerAt("worst_case", "refinement_points"));
    if (w.refinementPoints % 2 == 0)
      fail("worst_case.refinement_points", required(parameter("worst_case", "refinement_points")),
           "must be odd (the grid is centred on the best point)", parameter("worst_case", "refinement_points").allowed);
  }

  // [worst_case] is repeated in the resolved case only when the case file has one (a run ignores it).
  void serialiseWorstCase(const Case& c, toml::table& root) const {
    const WorstCaseSpec& w = c.worstCase;
    if (!w.given) return;
    toml::table t;
    if (w.domain == "box") {
      t.insert("record_lower", vectorArray(w.lower));
      t.insert("record_upper", vectorArray(w.upper));
    } else if (w.domain == "ball") {
      t.insert("record_centre", vectorArray(w.centre));
      t.insert("record_radius", w.radius);
    }
    if (!w.labels.empty()) {
      toml::array labels;
      for (int y : w.labels) labels.push_back(static_cast<std::int64_t>(y));
      t.insert("labels", std::move(labels));
    }
    bool all = w.indices.empty() || w.indices.size() == c.data.records.size();
    for (std::size_t i = 0; all && i < w.indices.size(); ++i) all = w.indices[i] == i;
    if (all) {
      t.insert("indices", "all");
    } else {
      toml::array indices;
      for (std::size_t i : w.indices) indices.push_back(static_cast<std::int64_t>(i));
      t.insert("indices", std::move(indices));
    }
    t.insert("grid_points", static_cast<std::int64_t>(w.gridPoints));
    t.insert("refinement_rounds", static_cast<std::int64_t>(w.refinementRounds));
    t.insert("refinement_points", static_cast<std::int64_t>(w.refinementPoints));
    root.insert("worst_case", std::move(t));
  }

  // The resolved case (every key, defaults filled in), written into every output as parameters.toml: the model (case,
  // mesh, loss, data, neighbour, noise, initial density), then the run (dynamics, output, functionals, solver,
  // sampler, faults, accuracy).
  std::string serialise(const Case& c) const {
    toml::table root;
    serialiseModel(c, root);
    serialiseRun(c, root);
    serialiseWorstCase(c, root);
    std::ostringstream out;
    out << root << '\n';
    return out.str();
  }

  void serialiseModel(const Case& c, toml::table& root) const {
    const bool logistic = c.loss.type == "logistic";
    root.insert("case", toml::table{{"name", c.name}, {"dynamics", c.dynamics}});

    toml::array lower, upper, cells;
    for (int i = 0; i < c.mesh.dim; ++i) {
      lower.push_back(c.mesh.lower[i]);
      upper.push_back(c.mesh.upper[i]);
      cells.push_back(static_cast<std::int64_t>(c.mesh.cells[i]));
    }
    toml::table mesh{{"lower", lower}, {"upper", upper}, {"cells", cells}};
    if (c.mesh.grading[0] != 1.0 || c.mesh.grading[1] != 1.0 || c.mesh.grading[2] != 1.0) {
      toml::array grading;
      for (int i = 0; i < c.mesh.dim; ++i) grading.push_back(c.mesh.grading[i]);
      mesh.insert("grading", std::move(grading));
    }
    root.insert("mesh", std::move(mesh));

    toml::table loss{{"type", c.loss.type}};
    const std::string& t = c.loss.type;
    if (t == "logistic" || t == "huber") loss.insert("regularization", c.loss.regularization);
    if (t == "quadratic" || t == "double_well") loss.insert("lambda", c.loss.lambda);
    if (t == "huber") loss.insert("delta", c.loss.delta);
    if (t == "double_well") loss.insert("width", c.loss.width);
    if (t == "expression") {
      loss.insert("expression", c.loss.expression);
      if (!c.loss.gradient.empty()) {
        toml::array g;
        for (const auto& e : c.loss.gradient) g.push_back(e);
        loss.insert("gradient", std::move(g));
      }
    }
    if (c.loss.sensitivity) loss.insert("sensitivity", *c.loss.sensitivity);
    if (c.loss.strongConvexity) loss.insert("strong_convexity", *c.loss.strongConvexity);
    if (c.loss.smoothness) loss.insert("smoothness", *c.loss.smoothness);
    root.insert("loss", std::move(loss));

    // Data read from a file is referred to, not copied: the resolved case must stay small.
    toml::table data;
    if (c.data.generator) {
      const auto& g = *c.data.generator;
      data.insert("generator", g.kind);
      data.insert("count", static_cast<std::int64_t>(g.n));
      data.insert("seed", static_cast<std::int64_t>(g.seed));
      data.insert("mean", vectorArray(g.mean));
      data.insert("stddev", g.stddev);
      if (g.kind == "logistic") data.insert("true_theta", vectorArray(g.trueTheta));
    } else if (!c.data.file.empty()) {
      data.insert("file", c.data.file);
    } else {
      toml::array records, labels;
      for (const models::Record& r : c.data.records.records()) {
        records.push_back(vectorArray(r.x));
        labels.push_back(static_cast<std::int64_t>(r.y));
      }
      data.insert("records", std::move(records));
      if (logistic) data.insert("labels", std::move(labels));
    }
    data.insert("n", static_cast<std::int64_t>(c.data.records.size()));
    root.insert("data", std::move(data));

    toml::table neighbour{{"kind", models::toString(c.neighbour.kind)}};
    if (c.neighbour.kind != models::NeighbourKind::Add)
      neighbour.insert("index", static_cast<std::int64_t>(c.neighbour.index));
    if (c.neighbour.kind != models::NeighbourKind::Remove) {
      neighbour.insert("record", vectorArray(c.neighbour.replacement.x));
      if (logistic) neighbour.insert("label", static_cast<std::int64_t>(c.neighbour.replacement.y));
    }
    root.insert("neighbour", std::move(neighbour));

    auto matrixArray = [](const models::Matrix& m) {
      toml::array rows;
      for (Eigen::Index i = 0; i < m.rows(); ++i) rows.push_back(vectorArray(m.row(i).transpose()));
      return rows;
    };
    toml::table noise;
    if (c.noise.covariance) noise.insert("covariance", matrixArray(*c.noise.covariance));
    else if (c.noise.multiplier) noise.insert("multiplier", *c.noise.multiplier);
    else noise.insert("sigma", c.noise.sigma);
    if (c.noise.covariancePrime) noise.insert("covariance_prime", matrixArray(*c.noise.covariancePrime));
    root.insert("noise", std::move(noise));

    toml::array covariance;
    for (Eigen::Index i = 0; i < c.initial.covariance.rows(); ++i) {
      covariance.push_back(vectorArray(c.initial.covariance.row(i).transpose()));
    }
    root.insert("initial", toml::table{{"mean", vectorArray(c.initial.mean)}, {"covariance", covariance}});

  }

  void serialiseRun(const Case& c, toml::table& root) const {
    if (c.dynamics == "langevin") {
      root.insert("time", toml::table{{"t_end", c.time.t_end}, {"dt", c.time.dt}});
    } else {
      root.insert("noisy_gd", toml::table{{"eta", c.noisyGd.eta},
                                          {"steps", static_cast<std::int64_t>(c.noisyGd.steps)},
                                          {"diffusion", c.noisyGd.diffusion},
                                          {"diffusion_substeps", static_cast<std::int64_t>(c.noisyGd.diffusion_substeps)},
                                          {"tracing_substeps", static_cast<std::int64_t>(c.noisyGd.tracing_substeps)}});
      if (c.noisyGd.clipNorm) root["noisy_gd"].as_table()->insert("clip_norm", *c.noisyGd.clipNorm);
      toml::table& gd = *root["noisy_gd"].as_table();
      gd.insert("constraint", c.noisyGd.constraint);
      const models::ConstraintSet& C = c.noisyGd.constraintSet;
      if (C.kind() == models::ConstraintKind::Box) {
        gd.insert("constraint_lower", vectorArray(C.lower()));
        gd.insert("constraint_upper", vectorArray(C.upper()));
      } else if (C.kind() == models::ConstraintKind::Ball) {
        gd.insert("constraint_centre", vectorArray(C.centre()));
        gd.insert("constraint_radius", C.radius());
      }
    }
    if (c.dynamics == "noisy_gd") {
      toml::table batch{{"sampling", c.batch.sampling}};
      if (c.batch.sampling == "cyclic") batch.insert("size", static_cast<std::int64_t>(c.batch.size));
      if (c.batch.sampling == "poisson") {
        batch.insert("rate", c.batch.rate);
        batch.insert("mixture", c.batch.mixture);
        batch.insert("mixture_tolerance", c.batch.mixtureTolerance);
      }
      root.insert("batch", std::move(batch));
    }
    root.insert("output", toml::table{{"every", static_cast<std::int64_t>(c.output.every)},
                                      {"checkpoint_every", static_cast<std::int64_t>(c.output.checkpointEvery)},
                                      {"fields", c.output.fields},
                                      {"plots", c.output.plots},
                                      {"vtk", c.output.vtk},
                                      {"directory", c.output.directory}});

    // An order labelled with digits only was an integer (or an integral float): write it as an integer so that
    // reading the resolved case gives the same label.
    toml::array orders;
    for (const RenyiOrder& order : c.divergence.denseOrders ? std::vector<RenyiOrder>{} : c.divergence.orders) {
      std::int64_t asInteger = 0;
      const char* end = order.label.data() + order.label.size();
      const auto result = std::from_chars(order.label.data(), end, asInteger);
      if (result.ec == std::errc() && result.ptr == end) {
        orders.push_back(asInteger);
      } else {
        orders.push_back(order.alpha);
      }
    }
    root.insert("divergence", toml::table{{"hockey_stick_eps_max", c.divergence.hockeyStickEpsMax},
                                          {"hockey_stick_eps_step", c.divergence.hockeyStickEpsStep},
                                          {"privacy_loss_bins", static_cast<std::int64_t>(c.divergence.privacyLossBins)}});
    if (c.divergence.denseOrders) root["divergence"].as_table()->insert("orders", "dense");
    else root["divergence"].as_table()->insert("orders", orders);
    toml::array deltaGrid;
    for (double d : c.privacy.deltaGrid) deltaGrid.push_back(d);
    root.insert("privacy", toml::table{{"delta", c.privacy.delta}, {"delta_grid", deltaGrid}});

    root.insert("solver", toml::table{{"ts_type", c.solver.ts_type},
                                      {"ksp_type", c.solver.ksp_type},
                                      {"pc_type", c.solver.pc_type},
                                      {"petsc_options", c.solver.petsc_options}});
    if (c.dynamics == "langevin")
      root["solver"].as_table()->insert("spatial_order", static_cast<std::int64_t>(c.solver.spatial_order));
    toml::array samplerSteps;
    for (long k : c.sampler.outputSteps) samplerSteps.push_back(static_cast<std::int64_t>(k));
    root.insert("sampler", toml::table{{"particles", static_cast<std::int64_t>(c.sampler.particles)},
                                       {"seed", static_cast<std::int64_t>(c.sampler.seed)},
                                       {"threads", static_cast<std::int64_t>(c.sampler.threads)},
                                       {"output_steps", samplerSteps},
                                       {"confidence", c.sampler.confidence},
                                       {"audit_delta", c.sampler.auditDelta}});
    if (c.dynamics == "langevin") root["sampler"].as_table()->insert("langevin_dt", c.sampler.langevinDt);
    toml::array stopOn;
    for (const auto& f : c.faults.stopOn) stopOn.push_back(f);
    root.insert("faults", toml::table{{"stop_on", stopOn},
                                      {"negative_mass_tolerance", c.faults.negativeMassTolerance},
                                      {"wall_mass_tolerance", c.faults.wallMassTolerance}});
    root.insert("accuracy", toml::table{{"estimate", c.accuracy.estimate},
                                        {"rtol", c.accuracy.rtol},
                                        {"certify", c.accuracy.certify},
                                        {"certify_seconds", c.accuracy.certifySeconds},
                                        {"certify_max_cells", static_cast<std::int64_t>(c.accuracy.certifyMaxCells)}});
  }

  const toml::table& root_;
  fs::path file_;
  std::string fileLabel_;
  std::size_t dim_ = 0;
  double cellRate_ = 0.0;  // D / h^2 of the noise and the smallest cell (checkDiffusionScale)
  double minWidth_[kMaxDimension] = {};  // the smallest cell width per axis (checkCellWidths)
  std::string dimensionReason_;
  std::string lossType_;
  std::string dynamics_;
};

}  // namespace

namespace {

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
