// Case reader, [output], [divergence], [privacy], [faults] and [accuracy]: what a run writes and checks.
#include "app/case/CaseParser.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "models/DivergenceGrids.hpp"

namespace fpdp::app::detail {

void CaseParser::readOutput(Case& c) const {
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

void CaseParser::readDivergence(Case& c) const {
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
void CaseParser::readFunctionalGrids(Case& c) const {
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
void CaseParser::readPrivacy(Case& c) const {
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

// [faults]: the names of the faults that stop a run and the two tolerances (app/run/NumericalFaults.hpp).

void CaseParser::readFaults(Case& c) const {
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

void CaseParser::readAccuracy(Case& c) const {
  c.accuracy.estimate = booleanAt("accuracy", "estimate");
  c.accuracy.rtol = numberAt("accuracy", "rtol");
  c.accuracy.certify = choiceAt("accuracy", "certify");
  c.accuracy.certifySeconds = numberAt("accuracy", "certify_seconds");
  c.accuracy.certifyMaxCells = integerAt("accuracy", "certify_max_cells");
}

}  // namespace fpdp::app::detail
