// The command-line contract for bad input: for every malformed case in tests/app/bad_cases/,
//   fpdp check FILE            and            fpdp run FILE --output DIR
// print "fpdp: error: <message>" (the reader's InputError::what()) and exit with status exactly 2, creating nothing:
// not DIR, and nothing else in the working directory either (such as the case's default "<name>-output").
#define BOOST_TEST_MODULE app_cli_bad_input
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <cstdlib>  // mkdtemp (POSIX), std::system
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "BadCases.hpp"

#include "ProcessSupport.hpp"

namespace fs = std::filesystem;
using fpdp::app::test::BadCase;
using fpdp::app::test::loadBadCases;
using fpdp::app::test::readText;

using fpdp::app::test::shellQuote;
using fpdp::app::test::TemporaryDirectory;

namespace {



struct Outcome {
  bool exited = false;   // terminated normally (not by a signal)
  int exitStatus = -1;
  std::string output;    // stdout and stderr together
};

// Runs `fpdp <arguments>` with `workDir` as its working directory; the log lives outside workDir so that workDir
// can be checked to stay empty.
Outcome runFpdp(const std::string& arguments, const fs::path& workDir, const fs::path& log) {
  const std::string command = "cd " + shellQuote(workDir.string()) + " && " + shellQuote(FPDP_EXECUTABLE) + " " +
                              arguments + " > " + shellQuote(log.string()) + " 2>&1 < /dev/null";
  const int status = std::system(command.c_str());
  Outcome outcome;
  outcome.exited = status != -1 && WIFEXITED(status);
  if (outcome.exited) outcome.exitStatus = WEXITSTATUS(status);
  outcome.output = fs::exists(log) ? readText(log) : std::string();
  return outcome;
}

void resetDirectory(const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
}

}  // namespace

BOOST_AUTO_TEST_CASE(bad_cases_exit_2_print_the_error_and_create_nothing) {
  const std::vector<BadCase> cases = loadBadCases();
  BOOST_TEST_REQUIRE(cases.size() >= fpdp::app::test::kMinimumBadCases);
  TemporaryDirectory temporary("fpdp-cli-test");
  const fs::path work = temporary.path() / "work";
  const fs::path log = temporary.path() / "log.txt";
  const fs::path out = work / "out";

  for (const BadCase& bad : cases) {
    const std::string file = shellQuote(bad.file.string());
    const std::vector<std::pair<std::string, std::string>> invocations = {
        {"check", "check " + file}, {"run", "run " + file + " --output " + shellQuote(out.string())}};
    for (const auto& [mode, arguments] : invocations) {
      BOOST_TEST_CONTEXT("fpdp " << mode << " " << bad.file.filename().string()) {
        resetDirectory(work);
        const Outcome outcome = runFpdp(arguments, work, log);
        BOOST_TEST(outcome.exited, "fpdp did not exit normally; output: " << outcome.output);
        BOOST_TEST(outcome.exitStatus == 2, "output: " << outcome.output);
        BOOST_TEST(outcome.output.find("fpdp: error: ") != std::string::npos, "output: " << outcome.output);
        BOOST_TEST(outcome.output.find(bad.expected) != std::string::npos, "output: " << outcome.output);
        BOOST_TEST(!fs::exists(out));
        BOOST_TEST(fs::is_empty(work), "fpdp created files in its working directory");
      }
    }
  }
}

// The control for the test above: the valid cases the corpus is derived from pass `fpdp check` (status 0, nothing
// created), so the failures above are caused by the one defect in each bad case.
BOOST_AUTO_TEST_CASE(base_cases_pass_check) {
  TemporaryDirectory temporary("fpdp-cli-test");
  const fs::path work = temporary.path() / "work";
  const fs::path log = temporary.path() / "log.txt";
  for (const char* name : {"quadratic.toml", "logistic.toml", "logistic_file.toml", "noisy_gd.toml", "generated.toml"}) {
    BOOST_TEST_CONTEXT("fpdp check " << name) {
      resetDirectory(work);
      const Outcome outcome =
          runFpdp("check " + shellQuote((fpdp::app::test::goodCaseDir() / name).string()), work, log);
      BOOST_TEST(outcome.exited);
      BOOST_TEST(outcome.exitStatus == 0, "output: " << outcome.output);
      BOOST_TEST(fs::is_empty(work), "fpdp check created files");
    }
  }
}
