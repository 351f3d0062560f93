// The composition baseline of minibatch runs end to end (app/run/DpSgdAccounting, docs/dpsgd.md): the shipped DP-SGD
// cases' epsilon.csv carries, at every output step and delta, the cyclic batches' exact GDP over the differing
// record's uses and the Poisson accountant's certified eps with its accuracy, each recomputed here from the case's
// numbers; the summary states each eps's neighbouring relation and the DP-SGD vocabulary.
#define BOOST_TEST_MODULE app_dpsgd_baseline_run
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <map>
#include <sstream>

#include "models/GaussianComposition.hpp"
#include "models/PrivacyLossDistribution.hpp"
#include "tests/app/RestartSupport.hpp"

using namespace fpdp::app::test;

namespace {

const fs::path kCases = fs::path(FPDP_SOURCE_DIR) / "cases";

/// epsilon.csv as named columns of numbers (empty cells NaN).
std::map<std::string, std::vector<double>> epsilonColumns(const fs::path& file) {
  std::istringstream in(readFile(file));
  std::string line, cell;
  std::getline(in, line);
  std::vector<std::string> names;
  for (std::istringstream h(line); std::getline(h, cell, ',');) names.push_back(cell);
  std::map<std::string, std::vector<double>> columns;
  while (std::getline(in, line)) {
    std::istringstream r(line);
    for (const auto& name : names) {
      if (!std::getline(r, cell, ',')) cell.clear();
      columns[name].push_back(cell.empty() ? NAN : std::stod(cell));
    }
  }
  return columns;
}

/// `fpdp run cases/dpsgd-<mode>-1d.toml` into tmp/<mode>.
Outcome runShipped(const TemporaryDirectory& tmp, const std::string& mode) {
  return runFpdp({"run", (kCases / ("dpsgd-" + mode + "-1d.toml")).string(), "--output", (tmp.path() / mode).string()});
}

}  // namespace

BOOST_AUTO_TEST_CASE(cyclic_and_poisson_baselines_in_epsilon_csv) {
  TemporaryDirectory tmp("fpdp-dpsgd-baseline");
  for (const std::string mode : {"cyclic", "poisson"}) {
    const auto r = runShipped(tmp, mode);
    BOOST_REQUIRE_MESSAGE(r.status == 0, r.output);
    const fs::path out = tmp.path() / mode;
    BOOST_TEST(contains(r.output, "DP-SGD noise multiplier (add/remove, sensitivity C): z = 2 with clip norm C = 1"),
               r.output);
    BOOST_TEST(contains(r.output, "fpdp's replace-one noise multiplier per step: sigma b sqrt(2/eta) / S_g = 1 with S_g = 2"),
               r.output);
    auto cols = epsilonColumns(out / "epsilon.csv");
    const auto &step = cols["step"], &delta = cols["delta"], &eps = cols["eps_composition"], &mu = cols["composition_mu"],
               &accuracy = cols["eps_composition_accuracy"];
    BOOST_REQUIRE(!step.empty());
    BOOST_REQUIRE(accuracy.size() == step.size());
    for (std::size_t k = 0; k < step.size(); ++k) {
      const long K = static_cast<long>(step[k]);
      BOOST_TEST_INFO(mode << ": step " << K << ", delta " << delta[k]);
      if (mode == "cyclic") {
        // n = 10 in batches of 3: m = 4 batches; record 0 is in batch 0, used in steps 0, 4, 8, 12; one use is a
        // Gaussian mechanism with mu = 1 / z_fpdp = 1 (S_g = 2C, b = 3, z C = 2).
        const long uses = (K + 3) / 4;
        const double m = std::sqrt(static_cast<double>(uses));
        BOOST_TEST(mu[k] == m, boost::test_tools::tolerance(1e-12));
        BOOST_TEST(eps[k] == fpdp::models::gdpEpsilon(m, delta[k]), boost::test_tools::tolerance(1e-10));
        BOOST_TEST(accuracy[k] == 0.0);
      } else {
        // The PLD accountant with mu = 1/z = 1/2 per step and gamma = 0.3 (add/remove).
        // The run extends its composition step by step, so its tail cuts differ from a fresh composition's: both
        // brackets hold the truth, so each upper end lies above the other's lower end.
        const auto ref = fpdp::models::subsampledGaussianEpsilons(0.5, 0.3, K, {delta[k]}).front();
        BOOST_TEST(std::isnan(mu[k]));
        BOOST_TEST(ref.optimistic <= eps[k] * (1 + 1e-12));
        BOOST_TEST(eps[k] - accuracy[k] <= ref.pessimistic * (1 + 1e-12));
        BOOST_TEST(accuracy[k] >= 0.0);
        // The stated accuracy where delta is well above the tail cuts and round-off (docs/dpsgd.md).
        if (delta[k] >= 1e-10) BOOST_TEST(accuracy[k] <= 2e-5 * eps[k] + 1e-5);
      }
    }
    BOOST_TEST(contains(r.output, mode == "cyclic" ? "replace-one neighbours (S_g), the exact GDP composition"
                                                   : "add/remove neighbours (sensitivity C of the summed gradient)"),
               r.output);
    BOOST_TEST(contains(r.output, "fpdp's eps above: the last iterate only, for the case's neighbours (replace record 0)"),
               r.output);
  }
}
