// `fpdp validate` end to end (docs/validation.md), on a small suite written by the test into a temporary directory:
//   - a case whose checks pass (with a reference made by --update-references): exit 0, the table, report.md with
//     its plot, results.csv;
//   - the same case with a deliberately wrong reference value and an impossible exact tolerance: FAIL rows and exit
//     status 1; --update-references then shows the old and new values and the relative change per column;
//   - bad command lines and bad checks files (tests/app/bad_validation/, "# expect:" first lines): exit status 2, the
//     message, and no report directory;
//   - a report directory that is not an earlier report is refused; `fpdp --help` lists validate.
#define BOOST_TEST_MODULE app_validate
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "BadCases.hpp"
#include "ProcessSupport.hpp"

namespace fs = std::filesystem;
using fpdp::app::test::readText;
using fpdp::app::test::shellQuote;
using fpdp::app::test::TemporaryDirectory;
using fpdp::app::test::contains;

namespace {

struct Outcome {
  int exitStatus = -1;
  std::string output;
};

Outcome runFpdp(const std::string& arguments, const fs::path& log) {
  const std::string command = shellQuote(FPDP_EXECUTABLE) + " " + arguments + " > " + shellQuote(log.string()) +
                              " 2>&1 < /dev/null";
  const int status = std::system(command.c_str());
  Outcome o;
  if (status != -1 && WIFEXITED(status)) o.exitStatus = WEXITSTATUS(status);
  o.output = fs::exists(log) ? readText(log) : "";
  return o;
}

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

// A small OU case (about 0.3 s): Langevin, quadratic loss, exact.csv.
const char* kCase = R"([case]
name = "tiny-ou"
[mesh]
lower = [-5.0]
upper = [5.0]
cells = [200]
[loss]
type = "quadratic"
lambda = 1.0
[data]
records = [[0.2]]
[neighbour]
index = 0
record = [0.0]
[noise]
sigma = 0.7
[initial]
mean = [0.0]
covariance = 0.05
[time]
t_end = 0.5
dt = 0.01
[output]
every = 10
fields = false
plots = false
[divergence]
orders = [2, 10]
)";

// Checks that hold: the exact errors of this resolution are ~1e-3 (tolerance 1e-2), mass to round-off.
const char* kGoodChecks = R"(description = "tiny OU"
suite = "quick"
[mass]
tolerance = 1e-11
[exact]
from_step = 10
tolerances = { kl = 1e-2, renyi_2 = 1e-2 }
[bounds]
tolerance = 1e-2
[renyi_rate]
rate_tolerance = 1e-2
[regression]
tolerance = 1e-10
)";

// The same with an impossible tolerance: a second-order solver on 200 cells cannot reach 1e-12 relative.
const char* kImpossibleChecks = R"(description = "tiny OU, impossible tolerance"
suite = "quick"
[exact]
from_step = 10
tolerances = { kl = 1e-12 }
[regression]
tolerance = 1e-10
)";

}  // namespace

BOOST_AUTO_TEST_CASE(passing_then_failing_suite) {
  TemporaryDirectory tmp("fpdp-validate");
  const fs::path cases = tmp.path() / "cases", refs = tmp.path() / "references", report = tmp.path() / "report";
  write(cases / "tiny-ou.toml", kCase);
  write(cases / "tiny-ou.checks.toml", kGoodChecks);

  // No reference yet: the regression row fails.
  auto o = runFpdp("validate --cases " + shellQuote(cases.string()) + " --references " + shellQuote(refs.string()) +
                    " --no-plots -o " + shellQuote(report.string()),
                tmp.path() / "log0");
  BOOST_TEST(o.exitStatus == 1, o.output);
  BOOST_TEST(contains(o.output, "create it with fpdp validate --update-references"), o.output);

  // Make the reference deliberately, then everything passes; the plots are in the report.
  o = runFpdp("validate --update-references --no-plots --cases " + shellQuote(cases.string()) + " --references " +
               shellQuote(refs.string()) + " -o " + shellQuote(report.string()),
           tmp.path() / "log1");
  BOOST_TEST(o.exitStatus == 0, o.output);
  BOOST_TEST(contains(o.output, "new reference"), o.output);
  BOOST_TEST(fs::exists(refs / "tiny-ou" / "divergence.csv"));
  o = runFpdp("validate --cases " + shellQuote(cases.string()) + " --references " + shellQuote(refs.string()) + " -o " +
               shellQuote(report.string()),
           tmp.path() / "log2");
  BOOST_TEST(o.exitStatus == 0, o.output);
  BOOST_TEST(contains(o.output, "tiny-ou  regression: divergence.csv"), o.output);
  BOOST_TEST(contains(o.output, "0 FAIL"), o.output);
  // The rate checks read the run's renyi_rate.csv (Langevin): judged, not skipped.
  BOOST_TEST(contains(o.output, "tiny-ou  rate_identity_agreement"), o.output);
  BOOST_TEST(!contains(o.output, "not available in this build"), o.output);
  const std::string md = readText(report / "report.md");
  BOOST_TEST(contains(md, "| tiny-ou | exact: kl rel. error |"), md);
  BOOST_TEST(contains(md, "**PASS**"));
  BOOST_TEST(contains(md, "](runs/tiny-ou/renyi_bounds.png)"), md);
  BOOST_TEST(fs::exists(report / "runs" / "tiny-ou" / "renyi_bounds.png"));
  BOOST_TEST(contains(readText(report / "results.csv"), "case,check,measured,tolerance,status,detail"));

  // A deliberately wrong reference value: the regression check fails, naming the column.
  {
    const fs::path ref = refs / "tiny-ou" / "divergence.csv";
    std::string text = readText(ref);
    const auto header = text.find('\n');
    const auto lastLine = text.rfind('\n', text.size() - 2);
    BOOST_REQUIRE(lastLine > header);
    // Replace the last row's KL (column 5) by 1.5 times itself.
    std::string row = text.substr(lastLine + 1);
    std::vector<std::string> cells;
    for (std::size_t at = 0, next; at <= row.size(); at = next + 1) {
      next = row.find_first_of(",\n", at);
      if (next == std::string::npos) next = row.size();
      cells.push_back(row.substr(at, next - at));
      if (next == row.size() || row[next] == '\n') break;
    }
    cells[4] = std::to_string(1.5 * std::stod(cells[4]));
    std::string newRow;
    for (std::size_t i = 0; i < cells.size(); ++i) newRow += (i ? "," : "") + cells[i];
    write(ref, text.substr(0, lastLine + 1) + newRow + "\n");
  }
  write(cases / "tiny-ou.checks.toml", kImpossibleChecks);
  o = runFpdp("validate --no-plots --cases " + shellQuote(cases.string()) + " --references " + shellQuote(refs.string()) +
               " -o " + shellQuote(report.string()),
           tmp.path() / "log3");
  BOOST_TEST(o.exitStatus == 1, o.output);
  BOOST_TEST(contains(o.output, "2 FAIL"), o.output);
  BOOST_TEST(contains(o.output, "largest relative change: kl row"), o.output);
  BOOST_TEST(contains(readText(report / "report.md"), "**FAIL**"));

  // --update-references shows old vs new, with the relative change per column (kl: 1/3 = 0.5/1.5).
  o = runFpdp("validate --update-references --no-plots --cases " + shellQuote(cases.string()) + " --references " +
               shellQuote(refs.string()) + " -o " + shellQuote(report.string()),
           tmp.path() / "log4");
  BOOST_TEST(contains(o.output, "largest rel. change"), o.output);
  BOOST_TEST(contains(o.output, "    kl                               3.333e-01"), o.output);
  BOOST_TEST(contains(o.output, "    renyi_2                          0.000e+00"), o.output);
}

BOOST_AUTO_TEST_CASE(bad_command_lines_exit_2) {
  TemporaryDirectory tmp("fpdp-validate-cli");
  const fs::path report = tmp.path() / "report";
  struct Bad {
    std::string arguments, message;
  };
  const Bad bad[] = {
      {"--bogus", "unknown option '--bogus' of 'fpdp validate'"},
      {"-o", "-o needs a value"},
      {"--cases", "--cases needs a value"},
      {"--cases --quick", "--cases needs a value, not the option '--quick'"},
      {"no-such-case", "unknown validation case 'no-such-case'"},
      {"--cases /nonexistent/dir", "validation cases directory '/nonexistent/dir' does not exist"},
  };
  for (const auto& b : bad) {
    const auto o = runFpdp("validate -o " + shellQuote(report.string()) + " " + b.arguments, tmp.path() / "log");
    BOOST_TEST(o.exitStatus == 2, b.arguments << ": " << o.output);
    BOOST_TEST(contains(o.output, b.message), b.arguments << ": " << o.output);
    BOOST_TEST(!fs::exists(report), b.arguments);
  }
  const auto notFirst = runFpdp("--quiet validate", tmp.path() / "log");
  BOOST_TEST(notFirst.exitStatus == 2);
  BOOST_TEST(contains(notFirst.output, "'validate' must be the first word"), notFirst.output);
  // A directory that is not an earlier report is never replaced.
  write(tmp.path() / "precious" / "thesis.tex", "x");
  const auto o = runFpdp("validate langevin-ou-1d -o " + shellQuote((tmp.path() / "precious").string()),
                      tmp.path() / "log");
  BOOST_TEST(o.exitStatus == 2, o.output);
  BOOST_TEST(contains(o.output, "is not an earlier fpdp validation report"), o.output);
  BOOST_TEST(fs::exists(tmp.path() / "precious" / "thesis.tex"));
  // docs/validation.md's checks-file table is the one the program generates.
  const auto schema = runFpdp("validate --schema", tmp.path() / "schema");
  BOOST_TEST(schema.exitStatus == 0);
  const std::string doc = readText(fs::path(FPDP_SOURCE_DIR) / "docs" / "validation.md");
  const auto begin = doc.find("| table | key | type |");
  BOOST_REQUIRE(begin != std::string::npos);
  const auto end = doc.find("\n\n", begin);
  BOOST_TEST(doc.substr(begin, end + 1 - begin) == schema.output,
             "docs/validation.md's schema table differs from 'fpdp validate --schema'; regenerate it");
  // --help lists the command.
  const auto help = runFpdp("--help", tmp.path() / "help");
  BOOST_TEST(help.exitStatus == 0);
  BOOST_TEST(contains(help.output, "fpdp validate [--quick]"), help.output);
  const auto validateHelp = runFpdp("validate --help", tmp.path() / "help");
  BOOST_TEST(validateHelp.exitStatus == 0);
  BOOST_TEST(contains(validateHelp.output, "--update-references: rewrite the references"), validateHelp.output);
}

BOOST_AUTO_TEST_CASE(bad_checks_files_exit_2_with_their_message) {
  const fs::path dir = fs::path(FPDP_SOURCE_DIR) / "tests" / "app" / "bad_validation";
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = ".checks.toml";
    if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix) continue;
    ++count;
    const std::string stem = name.substr(0, name.size() - suffix.size());
    const std::string text = readText(entry.path());
    BOOST_REQUIRE_MESSAGE(text.rfind("# expect: ", 0) == 0, name << ": first line must be '# expect: ...'");
    const std::string expected = text.substr(10, text.find('\n') - 10);
    TemporaryDirectory tmp("fpdp-validate-bad");
    write(tmp.path() / "cases" / (stem + ".toml"), kCase);
    fs::copy_file(entry.path(), tmp.path() / "cases" / name);
    const auto o = runFpdp("validate --cases " + shellQuote((tmp.path() / "cases").string()) + " -o " +
                            shellQuote((tmp.path() / "report").string()),
                        tmp.path() / "log");
    BOOST_TEST(o.exitStatus == 2, name << ": " << o.output);
    BOOST_TEST(contains(o.output, expected), name << ": expected '" << expected << "' in: " << o.output);
    BOOST_TEST(!fs::exists(tmp.path() / "report"), name);
  }
  BOOST_TEST(count >= 8);
  // A case without its checks file, a syntax error.
  TemporaryDirectory tmp("fpdp-validate-bad");
  write(tmp.path() / "cases" / "lonely.toml", kCase);
  auto o = runFpdp("validate --cases " + shellQuote((tmp.path() / "cases").string()), tmp.path() / "log");
  BOOST_TEST(o.exitStatus == 2);
  BOOST_TEST(contains(o.output, "lonely.toml: a validation case without lonely.checks.toml"), o.output);
  write(tmp.path() / "cases" / "lonely.checks.toml", "description = \"x\"\nsuite = \n");
  o = runFpdp("validate --cases " + shellQuote((tmp.path() / "cases").string()), tmp.path() / "log");
  BOOST_TEST(o.exitStatus == 2);
  BOOST_TEST(contains(o.output, "lonely.checks.toml:2:"), o.output);
}
