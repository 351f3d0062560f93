// Case reader internals for every section: values rendered for messages, suggestions and the schema defaults.
#include "app/case/CaseReading.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <type_traits>

namespace fpdp::app::detail {

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

std::string entries(std::size_t count, std::string_view noun, std::string_view plural) {
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

}  // namespace fpdp::app::detail
