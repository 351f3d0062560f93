// `fpdp sweep` and `fpdp worst-case` under mpiexec (app/commands/MemberDispatch, docs/scaling.md §7): with 2 ranks and one
// rank per member the members run on two sub-communicators at once, and every file of the study (the tables, each
// member's outputs) is byte for byte the serial study's; with both ranks on one member, the numbers are a parallel
// run's (within 1e-9); a --ranks-per-member that does not divide the ranks is refused with nothing written.
#define BOOST_TEST_MODULE app_study_ranks
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ProcessSupport.hpp"
#include "QuadraticNoisyGd1d.hpp"
#include "io/CsvReader.hpp"

namespace fs = std::filesystem;
using namespace fpdp::app::test;

namespace {

const std::string kCase = quadraticNoisyGd1d("ranks-test", "9.0", 300, "[[0.3]]", 8, "",
                                              R"([output]
every = 4
fields = false
[divergence]
orders = [2]
[privacy]
delta_grid = [1e-2, 1e-5]
[worst_case]
record_lower = [-1.0]
record_upper = [1.0]
grid_points = 3
refinement_rounds = 1
refinement_points = 3
)");

/// Runs fpdp (on 2 ranks when `ranks`) with its output in `log`; the exit status, and the log on failure in `what`.
int run(const std::string& arguments, const fs::path& log, bool ranks) {
  const std::string launcher = ranks ? shellQuote(FPDP_MPIEXEC) + " --allow-run-as-root --oversubscribe -n 2 " : "";
  const std::string command = launcher + shellQuote(FPDP_EXECUTABLE) + " " + arguments + " > " +
                              shellQuote(log.string()) + " 2>&1";
  const int raw = std::system(command.c_str());
  return raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
}

/// run(...) must succeed; its log is the message otherwise.
void require(const std::string& arguments, const fs::path& log, bool ranks) {
  const int status = run(arguments, log, ranks);
  BOOST_TEST_REQUIRE(status == 0, readText(log));
}

/// Every file under a equal in bytes to b's, and the same files.
void requireSameFiles(const fs::path& a, const fs::path& b) {
  std::size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(a)) {
    // Not the plots, the logs (timings) and fpdp.h5 (HDF5 stores object times; its numbers are in the CSV files).
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || ext == ".png" || ext == ".log" || ext == ".h5") continue;
    const fs::path other = b / fs::relative(e.path(), a);
    BOOST_TEST_REQUIRE(fs::exists(other), other.string());
    BOOST_TEST(readText(e.path()) == readText(other), e.path().string());
    ++files;
  }
  for (const auto& e : fs::recursive_directory_iterator(b))
    if (e.is_regular_file()) BOOST_TEST(fs::exists(a / fs::relative(e.path(), b)), e.path().string());
  BOOST_TEST(files > 10u);
}

struct Fixture {
  TemporaryDirectory tmp{"fpdp-ranks"};
  fs::path caseFile = tmp.path() / "case.toml";
  Fixture() { writeText(caseFile, kCase); }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(sweep_on_two_ranks_is_the_serial_sweep, Fixture) {
  const std::string sweep = "sweep " + shellQuote(caseFile.string()) + " --set noise.sigma=0.8,1.0,1.3 --quiet";
  require(sweep + " --jobs 1 --output " + shellQuote((tmp.path() / "serial").string()),
                         tmp.path() / "serial.log", false);
  require(sweep + " --output " + shellQuote((tmp.path() / "ranks").string()), tmp.path() / "ranks.log",
                         true);
  requireSameFiles(tmp.path() / "serial", tmp.path() / "ranks");
  // Both ranks on every member: a parallel run's numbers.
  require(sweep + " --ranks-per-member 2 --output " + shellQuote((tmp.path() / "pairs").string()),
                         tmp.path() / "pairs.log", true);
  const auto a = fpdp::io::readCsv((tmp.path() / "serial" / "sweep.csv").string());
  const auto b = fpdp::io::readCsv((tmp.path() / "pairs" / "sweep.csv").string());
  BOOST_TEST_REQUIRE(a.columns == b.columns);
  BOOST_TEST_REQUIRE(a.rows.size() == b.rows.size());
  for (std::size_t r = 0; r < a.rows.size(); ++r)
    for (std::size_t c = 0; c < a.columns.size(); ++c) {
      double x = NAN, y = NAN;
      if (fpdp::io::parseCsvNumber(a.rows[r][c], x) && fpdp::io::parseCsvNumber(b.rows[r][c], y) && std::isfinite(x))
        BOOST_TEST(std::abs(x - y) <= 1e-9 * std::max(std::abs(x), 1e-300), a.columns[c]);
      else
        BOOST_TEST(a.rows[r][c] == b.rows[r][c], a.columns[c]);
    }
}

BOOST_FIXTURE_TEST_CASE(worst_case_on_two_ranks_is_the_serial_search, Fixture) {
  const std::string search = "worst-case " + shellQuote(caseFile.string()) + " --quiet";
  require(search + " --jobs 1 --output " + shellQuote((tmp.path() / "serial").string()),
                         tmp.path() / "serial.log", false);
  require(search + " --output " + shellQuote((tmp.path() / "ranks").string()), tmp.path() / "ranks.log",
                         true);
  requireSameFiles(tmp.path() / "serial", tmp.path() / "ranks");
}

BOOST_FIXTURE_TEST_CASE(ranks_per_member_must_divide_the_ranks, Fixture) {
  const fs::path out = tmp.path() / "bad";
  const int status = run("sweep " + shellQuote(caseFile.string()) + " --set noise.sigma=1.0 --ranks-per-member 3" +
                             " --output " + shellQuote(out.string()),
                         tmp.path() / "bad.log", true);
  BOOST_TEST(status == 2);
  BOOST_TEST(readText(tmp.path() / "bad.log").find("--ranks-per-member 3 does not divide the 2 ranks") != std::string::npos);
  BOOST_TEST(!fs::exists(out));
  BOOST_TEST(!fs::exists(out.string() + ".partial"));
}
