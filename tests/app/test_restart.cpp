// Checkpoint and restart of `fpdp run` (docs/output.md, "Checkpoint and restart"; app/run/Checkpoint):
//   - a run interrupted right after a checkpoint (FPDP_TEST_KILL_AFTER_CHECKPOINT) and continued with --restart
//     writes the same files, byte for byte (fpdp.h5 dataset by dataset), and the same summary as an uninterrupted
//     run: Langevin with BDF2 (the integrator's history), projected noisy GD (the boundary bins), noisy GD with
//     tracing, minibatch noisy SGD (cyclic and Poisson, enumerated and on the displacement lattice); serial and on 2
//     ranks;
//   - runs killed with SIGKILL at seeded random moments leave only readable files, and continue to the same result;
//   - bad restarts exit with status 2 and a message naming what is wrong, and leave the interrupted run intact.
#define BOOST_TEST_MODULE app_restart
#include <boost/test/unit_test.hpp>

#include <random>

#include "io/CheckpointFile.hpp"
#include "tests/app/RestartSupport.hpp"

using namespace fpdp::app::test;

namespace {

const fs::path kCases = fs::path(FPDP_SOURCE_DIR) / "tests/app/restart_cases";

std::string killEnv(long step) { return "FPDP_TEST_KILL_AFTER_CHECKPOINT=" + std::to_string(step); }

/// Reference run A; run B killed by the hook right after the checkpoint of `killStep`; B continued; A == B.
void checkRestartIsExact(const std::string& caseFile, long killStep, int ranks,
                         const std::vector<std::string>& petscOptions = {}) {
  TemporaryDirectory tmp("fpdp-restart");
  const std::string c = (kCases / caseFile).string();
  const std::string a = (tmp.path() / "A").string(), b = (tmp.path() / "B").string();
  auto withOptions = [&petscOptions](std::vector<std::string> args) {
    args.insert(args.end(), petscOptions.begin(), petscOptions.end());
    return args;
  };
  const auto ra = runFpdp(withOptions({"run", c, "--output", a, "--quiet"}), ranks);
  BOOST_REQUIRE_MESSAGE(ra.status == 0, ra.output);
  const auto rb = runFpdp(withOptions({"run", c, "--output", b, "--quiet"}), ranks, killEnv(killStep));
  BOOST_REQUIRE_MESSAGE(rb.status != 0, "the hook did not interrupt the run: " + rb.output);
  BOOST_REQUIRE(!fs::exists(b));
  BOOST_REQUIRE(fs::exists(b + ".partial/checkpoint.h5"));
  BOOST_TEST(checkReadable(b + ".partial") == "");
  const auto ck = fpdp::io::readCheckpointFile(b + ".partial/checkpoint.h5");
  BOOST_TEST(ck.arrays.at("/run/step").at(0) == static_cast<double>(killStep));
  const auto rc = runFpdp(withOptions({"run", "--restart", b, "--quiet"}), ranks);
  BOOST_REQUIRE_MESSAGE(rc.status == 0, rc.output);
  BOOST_TEST(!fs::exists(b + ".partial"));
  BOOST_TEST(!fs::exists(b + "/checkpoint.h5"));
  BOOST_TEST(!fs::exists(b + "/fields"));
  BOOST_TEST(compareOutputs(a, b) == "");
  BOOST_TEST(stableSummary(ra.output) == stableSummary(rc.output));
}

}  // namespace

BOOST_AUTO_TEST_CASE(langevin_bdf2_restart_is_bit_identical) {
  checkRestartIsExact("langevin-1d.toml", 40, 1, {"-ts_type", "bdf"});  // constant-step BDF2 (history of 2 solutions)
}

// BiCGStab with the in-place ILU(0) (solver/propagation/DensityEvolution.cpp, enableInPlaceIlu): the continued run builds its
// preconditioner at the first step again, with the same constant-step shift as the uninterrupted run.
BOOST_AUTO_TEST_CASE(langevin_bdf2_in_place_ilu_restart_is_bit_identical) {
  checkRestartIsExact("langevin-1d.toml", 40, 1, {"-ts_type", "bdf", "-ksp_type", "bcgs", "-pc_type", "ilu"});
}

BOOST_AUTO_TEST_CASE(langevin_exponential_restart_is_bit_identical) {
  checkRestartIsExact("langevin-1d.toml", 40, 1, {"-ts_type", "exponential"});  // exp(T A) between output steps
}

BOOST_AUTO_TEST_CASE(projected_noisy_gd_restart_is_bit_identical) {
  checkRestartIsExact("gd-box-2d.toml", 6, 1);
}

BOOST_AUTO_TEST_CASE(noisy_gd_with_tracing_restart_is_bit_identical) {
  checkRestartIsExact("gd-tracing-1d.toml", 4, 1);
}

// Minibatch noisy SGD (docs/noisy-gd.md §9): the cyclic batch of each step follows from the step number.
BOOST_AUTO_TEST_CASE(cyclic_minibatch_restart_is_bit_identical) { checkRestartIsExact("gd-cyclic-1d.toml", 4, 1); }

BOOST_AUTO_TEST_CASE(poisson_minibatch_restart_is_bit_identical) { checkRestartIsExact("gd-poisson-1d.toml", 4, 1); }

BOOST_AUTO_TEST_CASE(poisson_lattice_restart_is_bit_identical) {
  checkRestartIsExact("gd-poisson-lattice-1d.toml", 4, 1);
}

BOOST_AUTO_TEST_CASE(poisson_plane_lattice_restart_is_bit_identical) {
  checkRestartIsExact("gd-poisson-lattice-2d.toml", 4, 1);
}

BOOST_AUTO_TEST_CASE(restart_on_two_ranks_is_bit_identical) {
  // MUMPS LU, distributed history. (Projected noisy GD on a 2-D mesh is not tested here: two uninterrupted 2-rank
  // runs of it already differ in the last bit now and then, MUMPS's dynamic scheduling of the 2-D diffusion solves,
  // so a restart cannot be bit-identical to them; serial it is, above.)
  checkRestartIsExact("langevin-1d.toml", 50, 2, {"-ts_type", "bdf"});
  checkRestartIsExact("gd-tracing-1d.toml", 6, 2);
}

// SIGKILL at seeded random moments: every file left is readable; the restart (or a fresh run, when no checkpoint
// had been written yet) ends with the uninterrupted run's outputs. A moment is "after the R-th row of
// divergence.csv, plus J ms" (R, J seeded), so that kills land during the time stepping on a fast or a loaded
// machine alike: before, while and after outputs, fields and checkpoints are written.
BOOST_AUTO_TEST_CASE(killed_runs_leave_readable_files_and_continue_exactly) {
  TemporaryDirectory tmp("fpdp-kill");
  const std::string c = (kCases / "langevin-kill-1d.toml").string();
  const std::string a = (tmp.path() / "A").string();
  const auto ra = runFpdp({"run", c, "--output", a, "--quiet"});
  BOOST_REQUIRE_MESSAGE(ra.status == 0, ra.output);
  std::ifstream rowsIn(a + "/divergence.csv");
  long totalRows = -1;
  for (std::string l; std::getline(rowsIn, l);) ++totalRows;
  const unsigned seed = 20261122;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<long> row(0, totalRows);
  std::uniform_int_distribution<int> jitter(0, 40);
  constexpr int kTrials = 4;
  int restarted = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const long r = row(rng);
    const int j = jitter(rng);
    const std::string b = (tmp.path() / ("B" + std::to_string(trial))).string();
    const bool finished = runAndKill({"run", c, "--output", b, "--quiet"}, b + ".partial/divergence.csv", r,
                                     std::chrono::milliseconds(j));
    BOOST_TEST_MESSAGE("kill test (seed " << seed << "): trial " << trial << " killed after row " << r << " of "
                                          << totalRows << " + " << j << " ms" << (finished ? " (had finished)" : ""));
    if (finished) {
      BOOST_TEST(compareOutputs(a, b) == "");
      continue;
    }
    const std::string partial = b + ".partial";
    if (!fs::exists(partial)) continue;  // killed before the output directory existed
    BOOST_TEST_INFO("trial " << trial);
    BOOST_TEST(checkReadable(partial) == "");
    const bool checkpointed = fs::exists(partial + "/checkpoint.h5");
    const auto rc = runFpdp({"run", "--restart", b, "--quiet"});
    if (checkpointed) {
      BOOST_REQUIRE_MESSAGE(rc.status == 0, rc.output);
      BOOST_TEST(compareOutputs(a, b) == "");
      BOOST_TEST(stableSummary(ra.output) == stableSummary(rc.output));
      ++restarted;
    } else {
      BOOST_TEST(rc.status == 2);
      BOOST_TEST(rc.output.find("has no checkpoint.h5") != std::string::npos, rc.output);
    }
  }
  BOOST_TEST_MESSAGE("kill test: " << restarted << " of " << kTrials << " trials continued from a checkpoint");
  BOOST_TEST(restarted >= 2);  // rows r >= 2 come after the first checkpoint (none at step 0) but for a kill in between
}

BOOST_AUTO_TEST_CASE(bad_restarts_exit_2_and_leave_the_run_intact) {
  TemporaryDirectory tmp("fpdp-bad-restart");
  const std::string c = (kCases / "langevin-1d.toml").string();
  const std::string a = (tmp.path() / "A").string(), b = (tmp.path() / "B").string();
  auto expect2 = [](const Outcome& o, const std::string& message) {
    BOOST_TEST(o.status == 2, o.output);
    BOOST_TEST(o.output.find(message) != std::string::npos, "expected '" << message << "' in: " << o.output);
  };
  expect2(runFpdp({"run", "--restart", (tmp.path() / "nothing").string()}), "no interrupted run there");
  expect2(runFpdp({"run", c, "--restart", b, "--output", b}), "--output cannot be combined");
  expect2(runFpdp({"check", c, "--restart", b}), "--restart is an option of 'fpdp run'");

  const auto ra = runFpdp({"run", c, "--output", a, "--quiet"});
  BOOST_REQUIRE_MESSAGE(ra.status == 0, ra.output);
  // No checkpoint at step 0 (a restart would save nothing): the hook at step 0 never fires and the run finishes.
  {
    const std::string z = (tmp.path() / "Z").string();
    const auto rz = runFpdp({"run", c, "--output", z, "--quiet"}, 1, killEnv(0));
    BOOST_TEST(rz.status == 0, rz.output);
    BOOST_TEST(fs::exists(z + "/fpdp.h5"));
  }
  // Interrupted at the first checkpoint (step 10, the first output step after 0).
  BOOST_REQUIRE(runFpdp({"run", c, "--output", b, "--quiet"}, 1, killEnv(10)).status != 0);
  const std::string partial = b + ".partial";
  const std::string divergenceBefore = readFile(partial + "/divergence.csv");

  // A different case: the message names the line of the resolved case that differs.
  std::string other = readFile(c);
  other.replace(other.find("sigma = 0.7"), 11, "sigma = 0.8");
  const std::string otherCase = (tmp.path() / "other.toml").string();
  std::ofstream(otherCase) << other;
  const auto wrongCase = runFpdp({"run", "--restart", b, otherCase});
  expect2(wrongCase, "differs from the checkpoint's");
  BOOST_TEST(wrongCase.output.find("sigma = 0.8") != std::string::npos, wrongCase.output);

  // Another rank count: bit-equality would not hold.
  expect2(runFpdp({"run", "--restart", b}, 2), "was written by a run on 1 rank(s), this one has 2");

  // A corrupted checkpoint (one byte flipped after the seal block): named, nothing changed.
  const std::string ckPath = partial + "/checkpoint.h5";
  const std::string original = readFile(ckPath);
  std::string flipped = original;
  flipped[flipped.size() / 2] = static_cast<char>(flipped[flipped.size() / 2] ^ 0x10);
  std::ofstream(ckPath, std::ios::binary | std::ios::trunc) << flipped;
  expect2(runFpdp({"run", "--restart", b}), "checkpoint '" + ckPath + "': corrupted");
  std::ofstream(ckPath, std::ios::binary | std::ios::trunc) << original;

  // DIR occupied by something that is not an fpdp output: the finished run would replace it, so it is refused.
  const std::string occupied = (tmp.path() / "C").string();
  fs::copy(partial, occupied + ".partial", fs::copy_options::recursive);
  fs::create_directories(occupied);
  std::ofstream(occupied + "/notes.txt") << "mine\n";
  expect2(runFpdp({"run", "--restart", occupied}), "is not an fpdp output");
  BOOST_TEST(fs::exists(occupied + "/notes.txt"));

  BOOST_TEST(readFile(partial + "/divergence.csv") == divergenceBefore);
  // The same case given explicitly is accepted, and the run then finishes.
  const auto ok = runFpdp({"run", "--restart", b, c, "--quiet"});
  BOOST_TEST(ok.status == 0, ok.output);
  BOOST_TEST(compareOutputs(a, b) == "");
  BOOST_TEST(stableSummary(ra.output) == stableSummary(ok.output));
  // A finished run has nothing to continue.
  expect2(runFpdp({"run", "--restart", b}), "is finished");
}
