// The schema's domains (app/case/ParameterSchema.hpp, Domain) are what the reader enforces: for every scalar key with a
// domain, a value just outside each finite end, a value of the wrong type and an unlisted word are rejected naming the
// key, and each end inside the domain, every listed choice and both booleans are not rejected as out of the domain.
// What this cannot see: rules of the reader that tie several keys together (they are probed by the bad cases).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <toml++/toml.h>
#include <vector>

#include "BadCases.hpp"
#include "app/case/CaseReader.hpp"
#include "app/case/ParameterSchema.hpp"

using namespace fpdp::app;
using fpdp::app::test::goodCaseDir;

namespace {

// A valid case in which table.key applies, with what the key needs beside it (a sampling mode, a constraint).
toml::table baseFor(const Parameter& p) {
  const std::string table(p.table), key(p.key);
  std::string file = p.dynamics == "noisy_gd" ? "noisy_gd.toml" : "quadratic.toml";
  if (table == "data" && key != "records" && key != "file") file = "generated.toml";
  if (std::string_view(p.appliesTo).find("quadratic") == std::string_view::npos && !p.appliesTo.empty() &&
      std::string_view(p.appliesTo).find("logistic") != std::string_view::npos)
    file = "logistic.toml";
  toml::table root = toml::parse_file((goodCaseDir() / file).string());
  auto set = [&](const char* t, const char* k, auto value) {
    if (!root.contains(t)) root.insert(t, toml::table{});
    root[t].as_table()->insert_or_assign(k, value);
  };
  if (p.appliesTo == "huber") {
    set("loss", "type", "huber");
    root["loss"].as_table()->erase("lambda");
  }
  if (p.appliesTo == "double_well") set("loss", "type", "double_well");
  if (table == "batch" && key == "size") set("batch", "sampling", "cyclic");
  if (table == "batch" && key == "rate") set("batch", "sampling", "poisson");
  if (table == "noise" && key == "multiplier") {
    root["noise"].as_table()->erase("sigma");
    set("noisy_gd", "clip_norm", 1.0);
  }
  if (table == "worst_case" && key == "record_radius") set("worst_case", "record_centre", toml::array{0.0, 0.0});
  if (key == "constraint_radius") {
    set("noisy_gd", "constraint", "ball");
    set("noisy_gd", "constraint_centre", toml::array{0.0, 0.0});
  }
  return root;
}

struct Outcome {
  bool rejected = false;
  std::string keyPath, message;
};

// An array key (Domain::entries) gets the probe as its first entry, the other entries as in the base case (or the
// default); a scalar key gets the probe itself.
Outcome readWith(const Parameter& p, const toml::node& value) {
  toml::table root = baseFor(p);
  if (!root.contains(p.table)) root.insert(p.table, toml::table{});
  toml::table& table = *root[p.table].as_table();
  if (p.domain.entries.empty()) {
    table.insert_or_assign(p.key, value);
  } else {
    toml::array entries;
    if (const toml::array* written = table[p.key].as_array()) entries = *written;
    else if (p.presence == Presence::Default) entries = *toml::parse("v = " + std::string(p.defaultValue))["v"].as_array();
    if (entries.empty()) {  // d entries (the base case's mesh.lower has d), or one, each at the domain's lower end
      const std::size_t count = p.domain.entries == "d" ? root["mesh"]["lower"].as_array()->size() : 1;
      for (std::size_t i = 0; i < count; ++i) entries.push_back(p.domain.lower);
    }
    entries.replace(entries.begin(), value);
    table.insert_or_assign(p.key, entries);
  }
  std::ostringstream text;
  text << root;
  try {
    readCaseString(text.str(), goodCaseDir() / "probe.toml");
  } catch (const InputError& e) {
    return {true, e.keyPath, e.what()};
  }
  return {};
}

std::string path(const Parameter& p) {
  return std::string(p.table) + "." + std::string(p.key) + (p.domain.entries.empty() ? "" : "[0]");
}

// Rejected naming this key.
void requireRejected(const Parameter& p, const toml::node& value, const std::string& what) {
  const Outcome o = readWith(p, value);
  BOOST_TEST((o.rejected && o.keyPath == path(p)), path(p) << " " << what << ": " << (o.rejected ? o.message : "accepted"));
}

// Not rejected as outside the domain (another rule of the reader may still refuse the value, e.g. a step too small).
void requireInDomain(const Parameter& p, const toml::node& value, const std::string& what) {
  const Outcome o = readWith(p, value);
  const bool domainError = o.rejected && o.keyPath == path(p) &&
                           (o.message.find("out of range") != std::string::npos ||
                            o.message.find(": must be ") != std::string::npos ||
                            o.message.find("is not one of the allowed values") != std::string::npos);
  BOOST_TEST(!domainError, path(p) << " " << what << ": " << o.message);
}

toml::value<double> numberNode(double x) { return toml::value<double>(x); }

}  // namespace

BOOST_AUTO_TEST_CASE(every_scalar_domain_is_enforced_by_the_reader) {
  int probed = 0;
  for (const Parameter& p : parameterSchema()) {
    const Domain& d = p.domain;
    if (d.kind == Domain::Kind::Unchecked) continue;
    ++probed;
    switch (d.kind) {
      case Domain::Kind::Number: {
        requireRejected(p, toml::value<std::string>("1"), "a string");
        const double span = std::isfinite(d.upper) ? d.upper - d.lower : std::max(1.0, std::abs(d.lower));
        const double outsideLower = d.lowerOpen ? d.lower : d.lower - 1e-3 * span;
        requireRejected(p, numberNode(outsideLower), "just below the lower end");
        requireInDomain(p, numberNode(d.lowerOpen ? d.lower + 1e-3 * span : d.lower), "at the lower end");
        if (std::isfinite(d.upper)) {
          requireRejected(p, numberNode(d.upperOpen ? d.upper : d.upper + 1e-3 * span), "just above the upper end");
          requireInDomain(p, numberNode(d.upperOpen ? d.upper - 1e-3 * span : d.upper), "at the upper end");
        }
        break;
      }
      case Domain::Kind::Integer: {
        requireRejected(p, toml::value<double>(d.lower + 0.5), "a float");
        requireRejected(p, toml::value<std::int64_t>(static_cast<std::int64_t>(d.lower) - 1), "below the lower end");
        if (d.upper < 1e15) {
          requireRejected(p, toml::value<std::int64_t>(static_cast<std::int64_t>(d.upper) + 1), "above the upper end");
        }
        break;
      }
      case Domain::Kind::Boolean:
        requireRejected(p, toml::value<std::int64_t>(1), "an integer");
        requireInDomain(p, toml::value<bool>(false), "false");
        requireInDomain(p, toml::value<bool>(true), "true");
        break;
      case Domain::Kind::Choice: {
        requireRejected(p, toml::value<std::string>("no_such_choice"), "an unlisted word");
        std::string_view rest = d.choices;
        while (!rest.empty()) {
          const std::size_t comma = rest.find(", ");
          requireInDomain(p, toml::value<std::string>(std::string(rest.substr(0, comma))), "a listed choice");
          rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 2);
        }
        break;
      }
      case Domain::Kind::Unchecked:
        break;
    }
  }
  BOOST_TEST(probed >= 40);
}

// The words of a domain are what the docs and the error messages print.
BOOST_AUTO_TEST_CASE(domain_descriptions) {
  BOOST_TEST(describeDomain(positiveNumber()) == "a finite number > 0");
  BOOST_TEST(describeDomain(numberIn(0, 1, true, false)) == "a finite number in (0, 1]");
  BOOST_TEST(describeDomain(integerIn(1, 1e7)) == "an integer in [1, 10^7]");
  BOOST_TEST(describeDomain(integerIn(0)) == "an integer >= 0");
  BOOST_TEST(describeDomain(integerIn(0, 9223372036854775807.0)) == "an integer in [0, 2^63 - 1]");
  BOOST_TEST(describeDomain(oneOf("a, b")) == "a, b");
  BOOST_TEST(parameter("noisy_gd", "steps").allowed == "an integer in [1, 10^7]");
  BOOST_TEST(parameter("loss", "lambda").allowed ==
             "a finite number > 0 with which the loss and its gradient are finite on the mesh");
}
