// What `fpdp run --output DIR` may delete or replace (docs/faults.md, "Output directories"): only directories fpdp
// made (the owner mark .fpdp-output), replaced by an atomic exchange; never the current directory or one containing
// it, a user's folder that happens to be called DIR.partial, an earlier version's output, or an interrupted run's
// checkpoint. Each refusal exits 2 and leaves every file as it was.
#define BOOST_TEST_MODULE app_output_directories
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "ProcessSupport.hpp"

namespace fs = std::filesystem;
using fpdp::app::test::contains;
using fpdp::app::test::readText;
using fpdp::app::test::shellQuote;
using fpdp::app::test::TemporaryDirectory;
using fpdp::app::test::writeText;

namespace {

/// A 1-D Ornstein–Uhlenbeck case small enough to run in a fraction of a second.
std::string smallCase(double sigma) {
  return "[case]\nname = \"small\"\n[mesh]\nlower = [-6.0]\nupper = [6.0]\ncells = [64]\n"
         "[loss]\ntype = \"quadratic\"\n[data]\nrecords = [[0.2]]\n[neighbour]\nindex = 0\nrecord = [0.0]\n"
         "[noise]\nsigma = " + std::to_string(sigma) + "\n[initial]\nmean = [0.0]\ncovariance = 0.5\n"
         "[time]\nt_end = 0.2\ndt = 0.05\n[output]\nevery = 2\nplots = false\n[divergence]\norders = [2]\n";
}

struct Outcome {
  int status = -1;  // exit status, -1 if killed by a signal
  std::string output;
};

/// `environment`: assignments put before the command (e.g. "FPDP_TEST_FAIL_AFTER_CHECKPOINT=2").
Outcome runFpdp(const fs::path& workDir, const std::string& arguments, const std::string& environment = "") {
  const fs::path log = workDir.parent_path() / "fpdp.log";
  const std::string command = "cd " + shellQuote(workDir.string()) + " && " + environment + " " +
                              shellQuote(FPDP_EXECUTABLE) + " " +
                              arguments + " > " + shellQuote(log.string()) + " 2>&1 < /dev/null";
  const int raw = std::system(command.c_str());
  Outcome o;
  if (raw != -1 && WIFEXITED(raw)) o.status = WEXITSTATUS(raw);
  o.output = readText(log);
  return o;
}

/// Every file below `dir` with its content: what a refused run must leave exactly as it was.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    files[fs::relative(e.path(), dir).string()] = e.is_regular_file() ? readText(e.path()) : "<dir>";
  return files;
}

struct Fixture {
  TemporaryDirectory tmp{"fpdp-output-dirs"};
  fs::path work = tmp.path() / "work";
  fs::path caseA = tmp.path() / "a.toml", caseB = tmp.path() / "b.toml";
  Fixture() {
    fs::create_directories(work);
    writeText(caseA, smallCase(0.7));
    writeText(caseB, smallCase(0.8));
  }
  void expectRefused(const std::string& arguments, const std::string& message) {
    const auto before = snapshot(tmp.path());
    const Outcome o = runFpdp(work, arguments);
    BOOST_TEST(o.status == 2, arguments << ": " << o.output);
    BOOST_TEST(contains(o.output, message), arguments << ": " << o.output);
    auto after = snapshot(tmp.path());
    after.erase("fpdp.log");
    auto expected = before;
    expected.erase("fpdp.log");
    BOOST_TEST((after == expected), arguments << ": files changed");
  }
};

}  // namespace

BOOST_FIXTURE_TEST_CASE(the_current_directory_and_its_parents_are_never_replaced, Fixture) {
  writeText(work / "parameters.toml", "a file of the user's that looks like an output\n");
  writeText(work / "notes.txt", "mine\n");
  expectRefused("run " + shellQuote(caseA.string()) + " --output .", "names no directory of its own");
  expectRefused("run " + shellQuote(caseA.string()) + " --output ./", "names no directory of its own");
  expectRefused("run " + shellQuote(caseA.string()) + " --output ..", "names no directory of its own");
  expectRefused("run " + shellQuote(caseA.string()) + " --output /", "names no directory of its own");
  expectRefused("run " + shellQuote(caseA.string()) + " --output " + shellQuote(tmp.path().string()),
                "contains the current directory");
  expectRefused("run " + shellQuote(caseA.string()) + " --output ../work", "contains the current directory");
}

BOOST_FIXTURE_TEST_CASE(a_rerun_replaces_only_fpdps_own_output, Fixture) {
  const fs::path out = tmp.path() / "out";
  Outcome o = runFpdp(work, "run " + shellQuote(caseA.string()) + " --output " + shellQuote(out.string()) + " --quiet");
  BOOST_REQUIRE_MESSAGE(o.status == 0, o.output);
  BOOST_TEST(fs::is_regular_file(out / ".fpdp-output"));
  BOOST_TEST(!fs::exists(out / "checkpoint.h5"));
  // A trailing separator names the same directory: the new run replaces the old one (it used to write into
  // out/.partial and then delete out with it).
  o = runFpdp(work, "run " + shellQuote(caseB.string()) + " --output " + shellQuote(out.string() + "/") + " --quiet");
  BOOST_REQUIRE_MESSAGE(o.status == 0, o.output);
  BOOST_TEST(contains(readText(out / "parameters.toml"), "sigma = 0.8"));
  BOOST_TEST(!fs::exists(out / ".partial"));
  BOOST_TEST(!fs::exists(tmp.path() / "out.partial"));
  BOOST_TEST(fs::is_empty(work));
  // An output written without the owner mark (an earlier version's, or a copy someone edited) is not replaced.
  fs::remove(out / ".fpdp-output");
  expectRefused("run " + shellQuote(caseA.string()) + " --output " + shellQuote(out.string()), "not fpdp's mark");
}

BOOST_FIXTURE_TEST_CASE(a_users_folder_called_dir_partial_is_left_alone, Fixture) {
  const fs::path out = tmp.path() / "out";
  fs::create_directories(tmp.path() / "out.partial");
  writeText(tmp.path() / "out.partial" / "thesis.tex", "years of work\n");
  expectRefused("run " + shellQuote(caseA.string()) + " --output " + shellQuote(out.string()), "was not made by fpdp");
  // A symbolic link in its place is not followed either.
  fs::remove_all(tmp.path() / "out.partial");
  fs::create_directories(tmp.path() / "elsewhere");
  writeText(tmp.path() / "elsewhere" / "data.csv", "1,2\n");
  fs::create_directory_symlink(tmp.path() / "elsewhere", tmp.path() / "out.partial");
  expectRefused("run " + shellQuote(caseA.string()) + " --output " + shellQuote(out.string()), "was not made by fpdp");
}

BOOST_FIXTURE_TEST_CASE(an_interrupted_runs_checkpoint_is_kept, Fixture) {
  const fs::path out = tmp.path() / "out";
  // fpdp's own DIR.partial with a checkpoint: what a killed run leaves.
  fs::create_directories(tmp.path() / "out.partial");
  writeText(tmp.path() / "out.partial" / ".fpdp-output", "made by fpdp\n");
  writeText(tmp.path() / "out.partial" / "checkpoint.h5", "state\n");
  expectRefused("run " + shellQuote(caseA.string()) + " --output " + shellQuote(out.string()), "--restart");
  // Without a checkpoint there is nothing to continue: fpdp's own leftovers are replaced.
  fs::remove(tmp.path() / "out.partial" / "checkpoint.h5");
  const Outcome o =
      runFpdp(work, "run " + shellQuote(caseA.string()) + " --output " + shellQuote(out.string()) + " --quiet");
  BOOST_REQUIRE_MESSAGE(o.status == 0, o.output);
  BOOST_TEST(fs::is_regular_file(out / "divergence.csv"));
  BOOST_TEST(!fs::exists(tmp.path() / "out.partial"));
}

BOOST_FIXTURE_TEST_CASE(a_failed_write_keeps_the_checkpoint_for_a_restart, Fixture) {
  // The case with checkpoints at every output step; the run fails after the checkpoint of step 2 as a full disk would.
  std::string text = smallCase(0.7);
  text.replace(text.find("plots = false"), 13, "plots = false\ncheckpoint_every = 1");
  writeText(caseA, text);
  const fs::path whole = tmp.path() / "whole", out = tmp.path() / "out";
  Outcome o = runFpdp(work, "run " + shellQuote(caseA.string()) + " --output " + shellQuote(whole.string()) + " --quiet");
  BOOST_REQUIRE_MESSAGE(o.status == 0, o.output);
  o = runFpdp(work, "run " + shellQuote(caseA.string()) + " --output " + shellQuote(out.string()) + " --quiet",
              "FPDP_TEST_FAIL_AFTER_CHECKPOINT=2");
  BOOST_TEST(o.status == 1, o.output);
  BOOST_TEST(contains(o.output, "No space left on device"), o.output);
  BOOST_TEST(contains(o.output, "--restart"), o.output);
  BOOST_REQUIRE(fs::is_regular_file(tmp.path() / "out.partial" / "checkpoint.h5"));
  BOOST_TEST(!fs::exists(out));
  o = runFpdp(work, "run --restart " + shellQuote(out.string()) + " --quiet");
  BOOST_REQUIRE_MESSAGE(o.status == 0, o.output);
  BOOST_TEST(readText(out / "divergence.csv") == readText(whole / "divergence.csv"));
  BOOST_TEST(readText(out / "accuracy.csv") == readText(whole / "accuracy.csv"));
}
