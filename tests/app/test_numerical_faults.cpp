// Numerical faults of `fpdp run` (app/run/NumericalFaults.hpp, docs/faults.md): every case in fault_cases/ provokes one
// fault (a NaN blow-up, a box too small for the run, the negative mass of the fourth-order flux at a high cell Péclet
// number, a box too small for noisy GD with the exact convolution). Each is run by the fpdp executable and must
//   - stop with exit status 1 and the message of its first line "# expect: ..." (fault, step, time, figure) naming
//     the tolerance, leaving neither the output directory nor DIR.partial behind;
//   - run to the end (exit 0, output written) once its second line "# relax: KEY = VALUE" is added under [faults];
//   - run to the end with stop_on = [], the fault then reported as a WARNING in the summary.
// The box-too-small case is also run on 2 ranks (the decision is collective: every rank stops at the same step).
#define BOOST_TEST_MODULE app_numerical_faults
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ProcessSupport.hpp"

namespace fs = std::filesystem;
using fpdp::app::test::shellQuote;
using fpdp::app::test::TemporaryDirectory;
using fpdp::app::test::readText;

namespace {

const fs::path kFaultCases = fs::path(FPDP_SOURCE_DIR) / "tests" / "app" / "fault_cases";

struct Outcome {
  int exitStatus = -1;  // -1: did not exit normally
  std::string out, err;
  std::string all() const { return "stdout:\n" + out + "\nstderr:\n" + err; }
};

Outcome run(const std::string& launcher, const fs::path& caseFile, const fs::path& output) {
  const fs::path outLog = output.string() + ".stdout", errLog = output.string() + ".stderr";
  const std::string command = launcher + shellQuote(FPDP_EXECUTABLE) + " run " + shellQuote(caseFile.string()) +
                              " --output " + shellQuote(output.string()) + " --quiet > " +
                              shellQuote(outLog.string()) + " 2> " + shellQuote(errLog.string()) + " < /dev/null";
  const int status = std::system(command.c_str());
  Outcome o;
  if (status != -1 && WIFEXITED(status)) o.exitStatus = WEXITSTATUS(status);
  o.out = readText(outLog);
  o.err = readText(errLog);
  return o;
}

struct FaultCase {
  fs::path file;
  std::string expect, relax;
};

std::vector<FaultCase> faultCases() {
  std::vector<FaultCase> cases;
  for (const auto& entry : fs::directory_iterator(kFaultCases)) {
    if (entry.path().extension() != ".toml") continue;
    std::ifstream in(entry.path());
    std::string expect, relax;
    std::getline(in, expect);
    std::getline(in, relax);
    const std::string e = "# expect: ", r = "# relax: ";
    BOOST_TEST_REQUIRE(expect.rfind(e, 0) == 0u, entry.path() << ": first line must be '" << e << "...'");
    BOOST_TEST_REQUIRE(relax.rfind(r, 0) == 0u, entry.path() << ": second line must be '" << r << "...'");
    cases.push_back({entry.path(), expect.substr(e.size()), relax.substr(r.size())});
  }
  std::sort(cases.begin(), cases.end(), [](const auto& a, const auto& b) { return a.file < b.file; });
  return cases;
}

fs::path withFaultsTable(const FaultCase& fc, const std::string& keyLine, const fs::path& dir) {
  const fs::path out = dir / (fc.file.stem().string() + "-relaxed.toml");
  std::ofstream(out) << readText(fc.file) << "\n[faults]\n" << keyLine << "\n";
  return out;
}

void checkStopped(const Outcome& o, const FaultCase& fc, const fs::path& output) {
  BOOST_TEST(o.exitStatus == 1, fc.file.filename() << ": " << o.all());
  BOOST_TEST(o.err.find(fc.expect) != std::string::npos, fc.file.filename() << ": expected '" << fc.expect << "'; "
                                                                            << o.all());
  // The message names the tolerance it broke and how to relax it.
  BOOST_TEST((o.err.find("tolerance") != std::string::npos && o.err.find("[faults]") != std::string::npos), o.all());
  BOOST_TEST(!fs::exists(output), output << " exists after a failed run");
  BOOST_TEST(!fs::exists(output.string() + ".partial"), output << ".partial left behind");
}

}  // namespace

BOOST_AUTO_TEST_CASE(each_fault_stops_the_run_and_the_faults_table_relaxes_it) {
  const auto cases = faultCases();
  BOOST_TEST_REQUIRE(cases.size() >= 4u);
  TemporaryDirectory tmp("fpdp-faults");
  for (const FaultCase& fc : cases) {
    BOOST_TEST_CONTEXT(fc.file.filename()) {
      const fs::path out = tmp.path() / fc.file.stem();
      checkStopped(run("", fc.file, out), fc, out);

      const Outcome relaxed = run("", withFaultsTable(fc, fc.relax, tmp.path()), out);
      BOOST_TEST(relaxed.exitStatus == 0, relaxed.all());
      BOOST_TEST(fs::exists(out / "divergence.csv"));
      BOOST_TEST(relaxed.out.find("numerical faults (docs/faults.md), largest at any step") != std::string::npos,
                 relaxed.all());
      fs::remove_all(out);

      const Outcome warned = run("", withFaultsTable(fc, "stop_on = []", tmp.path()), out);
      BOOST_TEST(warned.exitStatus == 0, warned.all());
      // The fault's name (the text before its step) appears in the summary's warning.
      const std::string name = fc.expect.substr(0, fc.expect.find(" at step"));
      BOOST_TEST(warned.out.find("WARNING: not stopping the run (not in faults.stop_on)") != std::string::npos,
                 warned.all());
      BOOST_TEST(warned.out.find(name) != std::string::npos, warned.all());
      fs::remove_all(out);
    }
  }
}

BOOST_AUTO_TEST_CASE(two_ranks_stop_together) {
  TemporaryDirectory tmp("fpdp-faults-mpi");
  for (const FaultCase& fc : faultCases()) {
    if (fc.file.filename() != "box_too_small.toml") continue;
    const fs::path out = tmp.path() / "out";
    const Outcome o = run(shellQuote(FPDP_MPIEXEC) + " --allow-run-as-root --oversubscribe -n 2 ", fc.file, out);
    BOOST_TEST(o.exitStatus != 0, o.all());
    BOOST_TEST(o.err.find(fc.expect) != std::string::npos, o.all());
    BOOST_TEST(!fs::exists(out));
    BOOST_TEST(!fs::exists(out.string() + ".partial"));
    return;
  }
  BOOST_FAIL("fault_cases/box_too_small.toml not found");
}
