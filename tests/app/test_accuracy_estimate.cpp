// The error estimate of every number (accuracy.csv; docs/scheme.md §8) against the truth of closed-form cases
// (exact.csv): wherever the estimate exists it must be at least the true error, and a number marked certified must be
// within accuracy.rtol of the truth. A start narrower than a cell (the Figure 1 setting, where R_10 comes out 35 %
// low after one step) must be flagged, not certified. An estimator that returned 0, or one too small, fails here.
#define BOOST_TEST_MODULE app_accuracy_estimate
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ProcessSupport.hpp"

namespace fs = std::filesystem;
using fpdp::app::test::readText;
using fpdp::app::test::shellQuote;
using fpdp::app::test::TemporaryDirectory;
using fpdp::app::test::writeText;

namespace {

const fs::path kSourceDir = FPDP_SOURCE_DIR;

using Table = std::vector<std::map<std::string, double>>;

Table readCsv(const fs::path& file) {
  std::istringstream in(readText(file));
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::istringstream h(line); std::getline(h, line, ',');) header.push_back(line);
  Table rows;
  while (std::getline(in, line)) {
    std::map<std::string, double> row;
    std::istringstream cells(line);
    std::string cell;
    for (std::size_t k = 0; std::getline(cells, cell, ','); ++k) row[header.at(k)] = std::strtod(cell.c_str(), nullptr);
    rows.push_back(row);
  }
  return rows;
}

void run(const fs::path& caseFile, const fs::path& out) {
  const auto r = fpdp::app::test::runCaseFile(caseFile, out);
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.log);
}

/// For every output step after the start and every quantity with a closed form: estimate >= |computed - exact|,
/// and certified only within rtol of the truth. Returns how many numbers were certified.
/// The quantities: KL, TV, R_alpha at `orders` and eps_exact at every delta of `deltas`.
int checkAgainstTruth(const fs::path& out, const std::vector<std::string>& orders, double rtol,
                      const std::vector<std::string>& deltas = {}) {
  const Table exact = readCsv(out / "exact.csv"), accuracy = readCsv(out / "accuracy.csv");
  BOOST_REQUIRE_EQUAL(exact.size(), accuracy.size());
  int certified = 0;
  for (std::size_t n = 1; n < exact.size(); ++n) {
    std::vector<std::pair<std::string, std::string>> quantities{{"kl", "kl_exact"}, {"tv", "tv_exact"}};
    for (const auto& o : orders) quantities.push_back({"renyi_" + o, "renyi_" + o + "_exact"});
    for (const auto& d : deltas) quantities.push_back({"eps_exact_delta_" + d, "eps_exact_delta_" + d + "_exact"});
    for (const auto& [q, truthColumn] : quantities) {
      const auto& a = accuracy[n];
      const double value = a.at(q), truth = exact[n].at(truthColumn), estimate = a.at(q + "_error_estimate");
      const double error = std::fabs(value - truth);
      BOOST_TEST_INFO("step " << a.at("step") << ", " << q << " = " << value << ", exact " << truth << ", estimate "
                              << estimate);
      BOOST_TEST(estimate >= error);
      if (a.at(q + "_certified") == 1.0) {
        ++certified;
        BOOST_TEST(error <= rtol * std::fabs(truth) * (1 + 1e-12));
      }
      BOOST_TEST(a.at(q + "_conservative") >= truth);
    }
  }
  return certified;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_estimate_covers_the_true_error_of_a_langevin_ou_case) {
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "ou.toml";
  writeText(caseFile,
            "[case]\nname = \"ou\"\n[mesh]\nlower = [-6.0]\nupper = [6.0]\ncells = [96]\n[loss]\ntype = \"quadratic\"\n"
            "[data]\nrecords = [[0.2]]\n[neighbour]\nindex = 0\nrecord = [0.0]\n[noise]\nsigma = 0.7\n"
            "[initial]\nmean = [0.0]\ncovariance = 0.5\n[time]\nt_end = 2.0\ndt = 0.05\n[output]\nevery = 8\n"
            "plots = false\nfields = false\n[divergence]\norders = [2, 10]\n[accuracy]\nrtol = 1e-2\n");
  run(caseFile, tmp.path() / "out");
  const int certified = checkAgainstTruth(tmp.path() / "out", {"2", "10"}, 1e-2);
  BOOST_TEST(certified > 0, "nothing certified: the test would not see a wrong certification");
}

BOOST_AUTO_TEST_CASE(a_start_narrower_than_a_cell_is_flagged) {
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "narrow-start.toml";
  // Langevin from N(0, 1e-6) on cells of 0.03: the start is a point mass at the mesh's scale, and the early numbers
  // are off by more than the scheme's order predicts.
  writeText(caseFile, "[case]\nname = \"narrow\"\n[mesh]\nlower = [-3.0]\nupper = [3.0]\ncells = [200]\n"
                      "[loss]\ntype = \"quadratic\"\n[data]\nrecords = [[0.3]]\n[neighbour]\nindex = 0\n"
                      "record = [0.0]\n[noise]\nsigma = 0.5\n[initial]\nmean = [0.0]\ncovariance = 1e-6\n"
                      "[time]\nt_end = 0.5\ndt = 0.01\n[output]\nevery = 5\nplots = false\nfields = false\n"
                      "[divergence]\norders = [2, 10]\n");
  run(caseFile, tmp.path() / "out");
  checkAgainstTruth(tmp.path() / "out", {"2", "10"}, 1e-3);
  const Table accuracy = readCsv(tmp.path() / "out" / "accuracy.csv");
  for (std::size_t n = 1; n + 1 < accuracy.size(); ++n)
    BOOST_TEST(accuracy[n].at("renyi_10_certified") == 0.0, "R_10 certified at step " << accuracy[n].at("step"));
}

// A box that cuts the densities (faults relaxed so that the run goes on): the companions share the box, so their
// estimate says nothing of what it cuts off. KL and TV were certified 9.9 % and 2.9 % and R_10 53 % below the closed
// form, and R_10's "conservative value" was below the truth; every number resting on the walls must be flagged with a
// conservative value at or above the truth.
BOOST_AUTO_TEST_CASE(a_box_that_cuts_the_densities_certifies_nothing_it_cuts) {
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "box.toml";
  writeText(caseFile,
            "[case]\nname = \"box\"\n[mesh]\nlower = [-1.5]\nupper = [1.5]\ncells = [96]\n[loss]\n"
            "type = \"quadratic\"\n[data]\nrecords = [[0.2]]\n[neighbour]\nindex = 0\nrecord = [-0.4]\n[noise]\n"
            "sigma = 0.7\n[initial]\nmean = [0.0]\ncovariance = 0.5\n[time]\nt_end = 2.0\ndt = 0.05\n[output]\n"
            "every = 8\nplots = false\nfields = false\n[divergence]\norders = [2, 10]\n[faults]\nstop_on = []\n");
  run(caseFile, tmp.path() / "out");
  checkAgainstTruth(tmp.path() / "out", {"2", "10"}, 1e-3, {"1e-05"});
  const Table accuracy = readCsv(tmp.path() / "out" / "accuracy.csv");
  for (const char* q : {"kl", "tv", "renyi_10"})
    BOOST_TEST(accuracy.back().at(std::string(q) + "_certified") == 0.0, q << " certified at the end");
}

BOOST_AUTO_TEST_CASE(the_default_case_certifies_no_eps_beyond_its_error) {
  // 2-D Langevin, 128^2 with companions on 64^2 and 32^2: for small delta the 32^2 mesh is not yet asymptotic while
  // 64^2 and 128^2 can agree by chance (measured 2026-11-26: eps_exact at delta 1e-11, relative errors 5.8e-4 and
  // 4.5e-4, an estimate from the finer pair alone of 1.3e-4 would have certified a number off by 1.5e-3 against
  // rtol 1e-3 x 3.26). Every delta of the default grid is checked against the closed form.
  TemporaryDirectory tmp("fpdp-accuracy");
  std::string text = readText(kSourceDir / "cases" / "default.toml");
  const auto at = text.find("[output]");
  BOOST_REQUIRE(at != std::string::npos);
  text.insert(at + 8, "\nplots = false\nfields = false");
  writeText(tmp.path() / "default.toml", text);
  run(tmp.path() / "default.toml", tmp.path() / "out");
  std::vector<std::string> deltas;
  for (int e = 1; e <= 12; ++e) deltas.push_back(e < 4 ? "0." + std::string(static_cast<std::size_t>(e - 1), '0') + "1"
                                                        : "1e-" + std::string(e < 10 ? "0" : "") + std::to_string(e));
  checkAgainstTruth(tmp.path() / "out", {"1.5", "2", "5", "10"}, 1e-3, deltas);
  // hockey_stick_accuracy.csv: delta(eps) both ways on the eps grid against the closed form of two Gaussians with one
  // covariance, delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), mu^2 = 2 KL (MATH.md §6). The
  // conservative value is never below the truth, a certified value is within rtol of it, and the values past the
  // box's reach (delta below 1e-30 or so on this box) are flagged truncated_suspect, not certified.
  const Table exact = readCsv(tmp.path() / "out" / "exact.csv");
  std::map<long, double> klExact;
  for (const auto& row : exact) klExact[static_cast<long>(row.at("step"))] = row.at("kl_exact");
  const auto Phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  int certified = 0, flagged = 0;
  for (const auto& row : readCsv(tmp.path() / "out" / "hockey_stick_accuracy.csv")) {
    const long step = static_cast<long>(row.at("step"));
    if (step == 0) continue;
    const double mu = std::sqrt(2 * klExact.at(step)), eps = row.at("eps");
    const double truth = Phi(-eps / mu + mu / 2) - std::exp(eps) * Phi(-eps / mu - mu / 2);
    for (const char* dir : {"delta_pq", "delta_qp"}) {
      const std::string d(dir);
      BOOST_TEST_INFO("step " << step << ", eps " << eps << ", " << d << " = " << row.at(d) << ", exact " << truth);
      BOOST_TEST(row.at(d + "_conservative") >= truth * (1 - 1e-12));
      if (row.at(d + "_certified") == 1.0) {
        ++certified;
        BOOST_TEST(std::fabs(row.at(d) - truth) <= 1e-3 * truth);
      }
      if (row.at(d + "_status") == 4.0) ++flagged;
    }
  }
  BOOST_TEST(certified > 0, "no delta(eps) certified: the test would not see a wrong certification");
  BOOST_TEST(flagged > 0, "no delta(eps) flagged: the box's reach was not tested");
}
