// Case reader, [worst_case]: the domain `fpdp worst-case` searches, read and written back into the resolved case.
#include "app/case/CaseParser.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace fpdp::app::detail {

// [worst_case]: the domain `fpdp worst-case` searches (app/commands/WorstCaseCommand.hpp).
void CaseParser::readWorstCase(Case& c) const {
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

void CaseParser::readWorstCaseSearch(Case& c) const {
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
void CaseParser::serialiseWorstCase(const Case& c, toml::table& root) const {
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

}  // namespace fpdp::app::detail
