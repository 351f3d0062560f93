// Case reader, every section: the errors, lookups, typed values and schema-checked scalars the sections read with.
#include "app/case/CaseParser.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace fpdp::app::detail {

// ---- errors ----

void CaseParser::fail(const std::string& keyPath, const toml::node& node, const std::string& problem,
                      std::string_view allowed) const {
  const std::string value = renderValue(node);
  const std::string message =
      oneLine(fileLabel_ + ": " + keyPath + " = " + value + ": " + problem + "; allowed: " + std::string(allowed));
  throw InputError(message, keyPath, value, std::string(allowed));
}

// `missing` is what the message calls missing; usually the key path itself.
void CaseParser::failMissing(const std::string& keyPath, std::string_view type, std::string_view allowed,
                             const std::string& missing) const {
  throw InputError(oneLine(fileLabel_ + ": missing required key " + (missing.empty() ? keyPath : missing) + " (" +
                           std::string(type) + "); allowed: " + std::string(allowed)),
                   keyPath, "", std::string(allowed));
}

// ---- lookups ----

const toml::node* CaseParser::given(std::string_view table, std::string_view key) const {
  const toml::table* section = root_.get_as<toml::table>(table);
  return section ? section->get(key) : nullptr;
}

// The written value, else the schema default; nullptr for an omitted key without a literal default.
const toml::node* CaseParser::lookup(const Parameter& p) const {
  if (const toml::node* node = given(p.table, p.key)) return node;
  if (p.presence == Presence::Required) failMissing(parameterPath(p), p.type, p.allowed);
  if (p.presence == Presence::Default) return &defaultNode(p);
  return nullptr;
}

// ---- typed values ----

// Integers are accepted where numbers are expected (TOML's 1 means 1.0 here); booleans never are.
double CaseParser::number(const toml::node& node, const std::string& path, std::string_view allowed) const {
  if (const auto* f = node.as_floating_point()) {
    if (!std::isfinite(f->get())) fail(path, node, "must be finite", allowed);
    return f->get();
  }
  if (const auto* i = node.as_integer()) return static_cast<double>(i->get());
  fail(path, node, "must be a number, not " + typeName(node), allowed);
}

// Floats are never accepted as integers, not even 2.0: a count written as a float is likely a mistake.
std::int64_t CaseParser::integer(const toml::node& node, const std::string& path, std::string_view allowed) const {
  if (const auto* i = node.as_integer()) return i->get();
  fail(path, node, "must be an integer, not " + typeName(node), allowed);
}

bool CaseParser::boolean(const toml::node& node, const std::string& path, std::string_view allowed) const {
  if (const auto* b = node.as_boolean()) return b->get();
  fail(path, node, "must be a boolean (true or false), not " + typeName(node), allowed);
}

const std::string& CaseParser::string(const toml::node& node, const std::string& path, std::string_view allowed) const {
  if (const auto* s = node.as_string()) return s->get();
  fail(path, node, "must be a string, not " + typeName(node), allowed);
}

const toml::array& CaseParser::array(const toml::node& node, const std::string& path, std::string_view allowed) const {
  if (const auto* a = node.as_array()) return *a;
  fail(path, node, "must be an array, not " + typeName(node), allowed);
}

double CaseParser::positive(const toml::node& node, const std::string& path, std::string_view allowed) const {
  const double x = number(node, path, allowed);
  if (!(x > 0)) fail(path, node, "must be > 0", allowed);
  return x;
}

// An array of exactly `length` finite numbers; `lengthReason` says where the expected length comes from.
models::Vector CaseParser::numbers(const toml::node& node, const std::string& path, std::size_t length,
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

models::Vector CaseParser::pointOfDimension(const toml::node& node, const std::string& path,
                                            std::string_view allowed) const {
  return numbers(node, path, dim_, dimensionReason_, allowed);
}

double CaseParser::label(const toml::node& node, const std::string& path, std::string_view allowed) const {
  const std::int64_t y = integer(node, path, allowed);
  if (y != 1 && y != -1) fail(path, node, "must be -1 or 1", allowed);
  return static_cast<double>(y);
}

// ---- scalar keys, checked against their schema domain (app/case/ParameterSchema.hpp, Domain) ----

// What a value outside the domain is told: "must be > 0" / "must be >= 1" for a half line, else "out of range".
std::string CaseParser::rangeProblem(const Domain& d) {
  if (std::isfinite(d.upper)) return "out of range";
  return std::string("must be ") + (d.lowerOpen ? "> " : ">= ") + shortestDouble(d.lower);
}

const Parameter& CaseParser::scalarParameter(std::string_view table, std::string_view key, Domain::Kind kind) const {
  const Parameter& p = parameter(table, key);
  if (p.domain.kind != kind) throw std::logic_error(parameterPath(p) + " has no domain of the kind read");
  return p;
}

// `path`: the key's path, or an entry's ("mesh.cells[1]") for an array key whose entries have the domain.
double CaseParser::numberOf(const Parameter& p, const toml::node& node, const std::string& path) const {
  const double x = number(node, path, p.allowed);
  if (!p.domain.contains(x)) fail(path, node, rangeProblem(p.domain), p.allowed);
  return x;
}

std::int64_t CaseParser::integerOf(const Parameter& p, const toml::node& node, const std::string& path) const {
  const std::int64_t v = integer(node, path, p.allowed);
  if (!p.domain.contains(static_cast<double>(v))) fail(path, node, rangeProblem(p.domain), p.allowed);
  return v;
}

std::int64_t CaseParser::integerOf(const Parameter& p, const toml::node& node) const {
  return integerOf(p, node, parameterPath(p));
}

std::string CaseParser::choiceOf(const Parameter& p, const toml::node& node) const {
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
double CaseParser::numberAt(std::string_view table, std::string_view key) const {
  const Parameter& p = scalarParameter(table, key, Domain::Kind::Number);
  return numberOf(p, required(p));
}

std::int64_t CaseParser::integerAt(std::string_view table, std::string_view key) const {
  const Parameter& p = scalarParameter(table, key, Domain::Kind::Integer);
  return integerOf(p, required(p));
}

bool CaseParser::booleanAt(std::string_view table, std::string_view key) const {
  const Parameter& p = scalarParameter(table, key, Domain::Kind::Boolean);
  return boolean(required(p), parameterPath(p), p.allowed);
}

std::string CaseParser::choiceAt(std::string_view table, std::string_view key) const {
  const Parameter& p = scalarParameter(table, key, Domain::Kind::Choice);
  return choiceOf(p, required(p));
}

// An optional key: nullopt when the case leaves it out.
std::optional<double> CaseParser::optionalNumberAt(std::string_view table, std::string_view key) const {
  const Parameter& p = scalarParameter(table, key, Domain::Kind::Number);
  if (const toml::node* node = lookup(p)) return numberOf(p, *node);
  return std::nullopt;
}

}  // namespace fpdp::app::detail
