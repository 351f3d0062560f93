// Case reader, [loss]: the loss type and its keys, and the check that the loss is finite on the mesh.
#include "app/case/CaseParser.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/case/LossBuilding.hpp"
#include "meshes/BoxMesh.hpp"
#include "models/ExpressionLoss.hpp"

namespace fpdp::app::detail {

void CaseParser::readLoss(Case& c) {
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
bool CaseParser::appliesTo(std::string_view list, std::string_view type) {
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
void CaseParser::checkApplicability() const {
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

// l(theta; x) and its gradient must be finite where the run evaluates them: "0/0" or an overflowing lambda
// would otherwise give a NaN drift, S_g = 0 and a "bound" below the computed divergence. Checked at the cell
// centres of a sub-grid (every cell where cells x records allows, always the wall cells and the middle one) for
// every record of D and D'.
void CaseParser::checkLossFinite(const Case& c) const {
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

}  // namespace fpdp::app::detail
