// End-to-end tests of `fpdp sweep` and `fpdp worst-case` (docs/sweeps.md) on a small fast quadratic noisy-GD case:
// sweep.csv against the members' own epsilon.csv, accuracy.csv, divergence.csv and bounds.csv; a failing member
// reported while the others stay in the table; bad --set refused with nothing written; the worst case of the
// quadratic loss at the far end of the box, equal to a direct run with that record; the worst removed record by
// R_alpha; `fpdp --help`.
#define BOOST_TEST_MODULE app_sweep_worst_case
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ProcessSupport.hpp"
#include "QuadraticNoisyGd1d.hpp"
#include "io/CsvReader.hpp"

namespace fs = std::filesystem;
using namespace fpdp::app::test;

namespace {

// D = {0.3}, D' = {x'}: the gap of the quadratic loss is lambda |x' - 0.3| / n, so the farthest x' of a box is the
// worst case. 400 cells on [-9, 9] keep every eps a root (status 0) up to x' = 2.
const std::string kCase = quadraticNoisyGd1d("sweep-test", "9.0", 400, "[[0.3]]", 10, "",
                                              R"([output]
every = 5
fields = false
[divergence]
orders = [2, 10]
[privacy]
delta_grid = [1e-2, 1e-5]
[worst_case]
record_lower = [-1.0]
record_upper = [2.0]
grid_points = 7
refinement_rounds = 2
)");

struct Outcome {
  int status = -1;
  std::string out;  // stdout and stderr
};

Outcome runFpdp(const std::string& arguments, const fs::path& dir) {
  const fs::path log = dir / "command.log";
  const std::string command =
      shellQuote(FPDP_EXECUTABLE) + " " + arguments + " > " + shellQuote(log.string()) + " 2>&1";
  const int raw = std::system(command.c_str());
  Outcome o;
  if (raw != -1 && WIFEXITED(raw)) o.status = WEXITSTATUS(raw);
  o.out = readText(log);
  return o;
}

/// A CSV file as rows of column -> cell.
std::vector<std::map<std::string, std::string>> table(const fs::path& file) {
  const auto csv = fpdp::io::readCsv(file.string());
  std::vector<std::map<std::string, std::string>> rows;
  for (const auto& r : csv.rows) {
    std::map<std::string, std::string> row;
    for (std::size_t c = 0; c < r.size(); ++c) row[csv.columns[c]] = r[c];
    rows.push_back(std::move(row));
  }
  return rows;
}

double number(const std::string& cell) {
  double v = NAN;
  BOOST_TEST_REQUIRE(fpdp::io::parseCsvNumber(cell, v), "not a number: '" << cell << "'");
  return v;
}

struct Fixture {
  TemporaryDirectory tmp{"fpdp-sweep"};
  fs::path caseFile = tmp.path() / "case.toml";
  Fixture() { writeText(caseFile, kCase); }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(sweep_table_equals_the_members_own_files, Fixture) {
  const fs::path out = tmp.path() / "sweep";
  const Outcome o = runFpdp("sweep " + shellQuote(caseFile.string()) +
                                " --set noisy_gd.steps=4,8 --set noise.sigma=1.0" +
                             " --output " + shellQuote(out.string()) + " --jobs 2",
                         tmp.path());
  BOOST_TEST_REQUIRE(o.status == 0, o.out);
  const auto rows = table(out / "sweep.csv");
  BOOST_TEST_REQUIRE(rows.size() == 2u);
  const std::vector<std::string> steps{"4", "8"};
  for (std::size_t m = 0; m < rows.size(); ++m) {
    const auto& row = rows[m];
    BOOST_TEST(row.at("noisy_gd.steps") == steps[m]);
    BOOST_TEST(row.at("noise.sigma") == "1.0");
    BOOST_TEST(row.at("status") == "ok");
    BOOST_TEST(row.at("exit_status") == "0");
    BOOST_TEST(row.at("step") == steps[m]);  // the last output step
    const fs::path run = out / row.at("directory");
    BOOST_TEST(fs::exists(run / "parameters.toml"));
    BOOST_TEST(!fs::exists(run / "epsilon_delta.png"));  // members draw no plots
    // epsilon.csv at the last step: every delta of the grid, and every column at privacy.delta.
    const auto eps = table(run / "epsilon.csv");
    const auto accuracy = table(run / "accuracy.csv").back();
    std::size_t deltas = 0;
    for (const auto& e : eps) {
      if (e.at("step") != steps[m]) continue;
      const std::string d = e.at("delta") == "1e-05" ? "1e-05" : "0.01";
      BOOST_TEST(row.at("eps_exact_delta_" + d) == e.at("eps_exact"));
      BOOST_TEST(row.at("eps_exact_status_delta_" + d) == e.at("eps_exact_status"));
      BOOST_TEST(row.at("eps_exact_certified_delta_" + d) == accuracy.at("eps_exact_delta_" + d + "_certified"));
      BOOST_TEST(row.at("eps_exact_conservative_delta_" + d) ==
                 accuracy.at("eps_exact_delta_" + d + "_conservative"));
      ++deltas;
      if (e.at("delta") != "1e-05") continue;
      for (const auto& [column, cell] : e)
        if (column != "step" && column != "t" && column != "delta") BOOST_TEST(row.at(column) == cell, column);
      BOOST_TEST(number(row.at("eps_composition")) > 0.0);  // the composition baseline is there
    }
    BOOST_TEST(deltas == 2u);
    const auto divergence = table(run / "divergence.csv").back();
    for (const char* q : {"kl", "tv", "renyi_2", "renyi_10", "status_renyi_2"})
      BOOST_TEST(row.at(q) == divergence.at(q), q);
    BOOST_TEST(row.at("renyi_2_certified") == accuracy.at("renyi_2_certified"));
    BOOST_TEST(row.at("kl_conservative") == accuracy.at("kl_conservative"));
    const auto bounds = table(run / "bounds.csv").back();
    for (const auto& [column, cell] : bounds)
      if (column != "step" && column != "t") BOOST_TEST(row.at(column) == cell, column);
  }
  // More steps, more privacy loss: the two members are different runs.
  BOOST_TEST(number(rows[1].at("eps_exact")) > number(rows[0].at("eps_exact")));
  BOOST_TEST(fs::file_size(out / "sweep.png") > 10000u);
  BOOST_TEST(!fs::exists(out.string() + ".partial"));
}

BOOST_FIXTURE_TEST_CASE(a_failed_member_is_reported_and_the_others_stay, Fixture) {
  const fs::path out = tmp.path() / "sweep";
  // upper = 0.5 puts the initial density at the wall: the member stops with a numerical fault (exit status 1).
  const Outcome o = runFpdp("sweep " + shellQuote(caseFile.string()) + " --set 'mesh.upper=[9.0],[0.5]' --output " +
                             shellQuote(out.string()) + " --jobs 2 --quiet",
                         tmp.path());
  BOOST_TEST(o.status == 1, o.out);
  BOOST_TEST(contains(o.out, "exit status 1: fpdp: run failed: numerical fault 'wall_mass'"), o.out);
  const auto rows = table(out / "sweep.csv");
  BOOST_TEST_REQUIRE(rows.size() == 2u);
  BOOST_TEST(rows[0].at("status") == "ok");
  BOOST_TEST(number(rows[0].at("eps_exact")) > 0.0);
  BOOST_TEST(rows[1].at("status") == "failed");
  BOOST_TEST(rows[1].at("exit_status") == "1");
  BOOST_TEST(rows[1].at("eps_exact").empty());
  BOOST_TEST(contains(readText(out / "members" / "1-upper-0.5" / "stderr.log"), "wall_mass"));
  BOOST_TEST(fs::exists(out / "sweep.png"));
}

BOOST_FIXTURE_TEST_CASE(bad_set_options_write_nothing, Fixture) {
  const fs::path out = tmp.path() / "sweep";
  const std::vector<std::pair<std::string, std::string>> bad{
      {"noise.sigmaa=1,2", "unknown key 'sigmaa' in [noise]; allowed: sigma, multiplier"},
      {"nois.sigma=1", "unknown table [nois]; allowed: the tables case, mesh"},
      {"noise.sigma=0.5,-1", "sweep member 1 (noise.sigma = -1): " + caseFile.string() +
                                 ": noise.sigma = -1: must be > 0; allowed: a finite number > 0"},
      {"noisy_gd.steps=3,2.5", "noisy_gd.steps = 2.5: must be an integer, not a float"},
      {"noise.sigma", "expected KEY=VALUE"},
      {"noise.sigma=[1", "not a TOML value"},
      {"noise.sigma=1,,2", "an empty value for noise.sigma"},
  };
  for (const auto& [set, message] : bad) {
    const Outcome o = runFpdp("sweep " + shellQuote(caseFile.string()) + " --set " + shellQuote(set) + " --output " +
                               shellQuote(out.string()),
                           tmp.path());
    BOOST_TEST(o.status == 2, set);
    BOOST_TEST(contains(o.out, message), set << ": " << o.out);
    BOOST_TEST(!fs::exists(out), set);
    BOOST_TEST(!fs::exists(out.string() + ".partial"), set);
  }
  const Outcome noSet = runFpdp("sweep " + shellQuote(caseFile.string()), tmp.path());
  BOOST_TEST(noSet.status == 2);
  BOOST_TEST(contains(noSet.out, "needs at least one --set"));
  const Outcome twice = runFpdp("sweep " + shellQuote(caseFile.string()) + " --set noise.sigma=1 --set noise.sigma=2",
                             tmp.path());
  BOOST_TEST(twice.status == 2);
  BOOST_TEST(contains(twice.out, "given twice"));
}

BOOST_FIXTURE_TEST_CASE(run_set_overrides_one_key, Fixture) {
  const fs::path out = tmp.path() / "run";
  const Outcome o = runFpdp("run " + shellQuote(caseFile.string()) +
                                " --set noise.sigma=0.5 --set 'neighbour.record=[1.0]'" +
                             " --output " + shellQuote(out.string()) + " --quiet",
                         tmp.path());
  BOOST_TEST_REQUIRE(o.status == 0, o.out);
  const std::string parameters = readText(out / "parameters.toml");
  BOOST_TEST(contains(parameters, "sigma = 0.5"), parameters);
  BOOST_TEST(contains(parameters, "record = [ 1.0 ]"), parameters);
  const Outcome bad = runFpdp("run " + shellQuote(caseFile.string()) + " --set noise.sigma=0", tmp.path());
  BOOST_TEST(bad.status == 2);
  BOOST_TEST(contains(bad.out, "noise.sigma = 0: must be > 0"), bad.out);
}

BOOST_FIXTURE_TEST_CASE(worst_case_of_the_quadratic_loss_is_the_far_end_of_the_box, Fixture) {
  const fs::path out = tmp.path() / "worst";
  const Outcome o =
      runFpdp("worst-case " + shellQuote(caseFile.string()) + " --output " + shellQuote(out.string()) + " --jobs 2",
           tmp.path());
  BOOST_TEST_REQUIRE(o.status == 0, o.out);
  BOOST_TEST(contains(o.out, "maximiser: index 0, x' = [2]"), o.out);
  const auto rows = table(out / "worst-case.csv");
  BOOST_TEST_REQUIRE(rows.size() >= 7u);  // the grid, then the refinement points not tried before
  std::size_t maximisers = 0;
  double largest = -1.0, atLower = NAN;
  std::map<std::string, std::string> top;
  for (const auto& r : rows) {
    BOOST_TEST(r.at("exit_status") == "0");
    const double v = number(r.at("value"));
    largest = std::max(largest, v);
    if (number(r.at("x_1")) == -1.0) atLower = v;
    if (r.at("maximiser") == "1") {
      ++maximisers;
      top = r;
    }
  }
  BOOST_TEST_REQUIRE(maximisers == 1u);
  BOOST_TEST(number(top.at("x_1")) == 2.0);
  BOOST_TEST(number(top.at("value")) == largest);
  BOOST_TEST(number(top.at("value")) > atLower);  // |2 - 0.3| > |-1 - 0.3|
  BOOST_TEST(top.at("status") == "0");
  // A direct run with that record gives the same eps at privacy.delta.
  const fs::path direct = tmp.path() / "direct";
  const Outcome d = runFpdp("run " + shellQuote(caseFile.string()) + " --set 'neighbour.record=[2.0]' --output " +
                             shellQuote(direct.string()) + " --quiet",
                         tmp.path());
  BOOST_TEST_REQUIRE(d.status == 0, d.out);
  double directEps = NAN;
  for (const auto& e : table(direct / "epsilon.csv"))
    if (e.at("step") == "10" && e.at("delta") == "1e-05") directEps = number(e.at("eps_exact"));
  BOOST_TEST(number(top.at("value")) == directEps);
  BOOST_TEST(fs::file_size(out / "worst-case.png") > 10000u);
}

BOOST_FIXTURE_TEST_CASE(worst_case_over_removed_records_by_renyi, Fixture) {
  // Three records, one removed: the search is over the indices only; order 3 is not among the case's (added).
  std::string text = kCase;
  text.replace(text.find("records = [[0.3]]"), 17, "records = [[0.3], [-1.5], [0.8]]");
  text.replace(text.find("index = 0\nrecord = [0.0]"), 24, "kind = \"remove\"\nindex = 0");
  writeText(tmp.path() / "remove.toml", text);
  const fs::path out = tmp.path() / "worst";
  const Outcome o = runFpdp("worst-case " + shellQuote((tmp.path() / "remove.toml").string()) +
                                " --objective renyi --order 3 --output " + shellQuote(out.string()),
                            tmp.path());
  BOOST_TEST_REQUIRE(o.status == 0, o.out);
  BOOST_TEST(contains(o.out, "not used when removing"), o.out);
  const auto rows = table(out / "worst-case.csv");
  BOOST_TEST_REQUIRE(rows.size() == 3u);  // one evaluation per index, no refinement
  double largest = -1.0;
  std::string maximiser, marked;
  for (const auto& r : rows) {
    BOOST_TEST(r.count("x_1") == 0u);
    BOOST_TEST(r.at("objective") == "max(R_alpha(p || q), R_alpha(q || p)) at alpha = 3");
    const auto divergence = table(out / r.at("directory") / "divergence.csv").back();
    // The larger direction: R_3(q || p) from renyi.csv's row of the last step and alpha = 3.
    double reverse = NAN;
    for (const auto& row : table(out / r.at("directory") / "renyi.csv"))
      if (row.at("step") == divergence.at("step") && number(row.at("alpha")) == 3.0) reverse = number(row.at("renyi_reverse"));
    BOOST_TEST_REQUIRE(!std::isnan(reverse));
    const double forward = number(divergence.at("renyi_3"));
    BOOST_TEST(number(r.at("value")) == std::max(forward, reverse));
    if (reverse > forward) BOOST_TEST(r.at("conservative") == "inf");
    if (number(r.at("value")) > largest) {
      largest = number(r.at("value"));
      maximiser = r.at("index");
    }
    if (r.at("maximiser") == "1") marked = r.at("index");
  }
  BOOST_TEST(marked == maximiser);
  // Removing the record farthest from the others' mean moves the minimiser most: -1.5 (index 1).
  BOOST_TEST(maximiser == "1");
  BOOST_TEST(contains(o.out, "maximiser: index 1 "), o.out);
}

BOOST_FIXTURE_TEST_CASE(worst_case_bad_input_writes_nothing, Fixture) {
  const fs::path out = tmp.path() / "worst";
  std::string noDomain = kCase.substr(0, kCase.find("[worst_case]"));
  writeText(tmp.path() / "no-domain.toml", noDomain);
  const Outcome a = runFpdp("worst-case " + shellQuote((tmp.path() / "no-domain.toml").string()) + " --output " +
                             shellQuote(out.string()),
                         tmp.path());
  BOOST_TEST(a.status == 2);
  BOOST_TEST(contains(a.out, "missing [worst_case] record_lower and record_upper (a box) or record_centre and "
                             "record_radius (a ball)"),
             a.out);
  const Outcome b = runFpdp("worst-case " + shellQuote(caseFile.string()) + " --objective tv", tmp.path());
  BOOST_TEST(b.status == 2);
  BOOST_TEST(contains(b.out, "--objective tv: unknown objective; allowed: eps, renyi"));
  const Outcome c = runFpdp("worst-case " + shellQuote(caseFile.string()) + " --delta 2", tmp.path());
  BOOST_TEST(c.status == 2);
  BOOST_TEST(contains(c.out, "--delta 2: not a number in (0, 1)"));
  // 1001^3 grid points of a 3-D record are refused at once, before the grid is built (about 10^9 candidates).
  writeText(tmp.path() / "huge.toml",
            "[case]\nname = \"huge\"\ndynamics = \"noisy_gd\"\n[mesh]\nlower = [-6.0, -6.0, -6.0]\n"
            "upper = [6.0, 6.0, 6.0]\ncells = [8, 8, 8]\n[loss]\ntype = \"quadratic\"\n[data]\n"
            "records = [[0.3, 0.0, 0.0]]\n[neighbour]\nindex = 0\nrecord = [0.0, 0.0, 0.0]\n[noise]\nsigma = 1.0\n"
            "[initial]\ncovariance = 0.5\n[noisy_gd]\neta = 0.1\nsteps = 2\n[worst_case]\n"
            "record_lower = [-1.0, -1.0, -1.0]\nrecord_upper = [1.0, 1.0, 1.0]\ngrid_points = 1001\n");
  const Outcome d = runFpdp("worst-case " + shellQuote((tmp.path() / "huge.toml").string()) + " --output " +
                                shellQuote(out.string()),
                            tmp.path());
  BOOST_TEST(d.status == 2);
  BOOST_TEST(contains(d.out, "asks for 1003003001 evaluations; allowed: at most 20000"), d.out);
  BOOST_TEST(!fs::exists(out));
  BOOST_TEST(!fs::exists(out.string() + ".partial"));
}

BOOST_AUTO_TEST_CASE(help_lists_the_commands_and_their_options) {
  TemporaryDirectory tmp("fpdp-help");
  const Outcome o = runFpdp("--help", tmp.path());
  BOOST_TEST(o.status == 0);
  for (const char* word : {"fpdp sweep CASE.toml --set KEY=V1,V2,...", "fpdp worst-case CASE.toml", "--set KEY=VALUE",
                           "--set KEY=V1,V2,...", "--jobs N", "--objective eps|renyi", "--delta D", "--order A",
                           "sweep.csv", "worst-case.csv"})
    BOOST_TEST(contains(o.out, word), word);
  const Outcome sub = runFpdp("sweep --help", tmp.path());
  BOOST_TEST(sub.status == 0);
  BOOST_TEST(sub.out == o.out);
}
