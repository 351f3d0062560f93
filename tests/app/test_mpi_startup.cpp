// The singleton start-up choices (app/platform/PetscConfiguration.hpp): a process no launcher started selects Open MPI's ob1
// point-to-point layer, unless the user chose one, as do the ranks of a job on one node, and starts as an isolated
// singleton with a private session directory, which it removes; launched processes keep their start-up. End to end: serial runs that overlap, one of them
// writing a checkpoint file through MPI-IO at every output step, do not disturb each other.
#define BOOST_TEST_MODULE app_mpi_startup
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "app/platform/PetscConfiguration.hpp"
#include "tests/app/RestartSupport.hpp"

namespace {

const char* const kLauncherVariables[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMI_SIZE",
                                          "PMIX_RANK"};

/// Clears the variables the choices depend on (ctest starts this test without a launcher).
void clearEnvironment() {
  for (const char* name : kLauncherVariables) unsetenv(name);
  unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  unsetenv("OMPI_MCA_pml");
  unsetenv("OMPI_MCA_ess_singleton_isolated");
  unsetenv("OMPI_MCA_orte_tmpdir_base");
  unsetenv("HWLOC_COMPONENTS");
}

std::string variable(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "(unset)";
}

std::string pml() {
  const char* v = std::getenv("OMPI_MCA_pml");
  return v ? v : "(unset)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_singleton_selects_ob1) {
  clearEnvironment();
  BOOST_TEST(!fpdp::app::launchedByMpiLauncher());
  BOOST_TEST(fpdp::app::preferSharedMemoryMpiTransport());
  BOOST_TEST(pml() == "ob1");
}

BOOST_AUTO_TEST_CASE(the_users_choice_is_kept) {
  clearEnvironment();
  setenv("OMPI_MCA_pml", "ucx", 1);
  BOOST_TEST(!fpdp::app::preferSharedMemoryMpiTransport());
  BOOST_TEST(pml() == "ucx");
}

BOOST_AUTO_TEST_CASE(launched_ranks_are_left_alone) {
  for (const char* name : kLauncherVariables) {
    BOOST_TEST_CONTEXT(name) {
      clearEnvironment();
      setenv(name, "0", 1);
      BOOST_TEST(fpdp::app::launchedByMpiLauncher());
      BOOST_TEST(!fpdp::app::preferSharedMemoryMpiTransport());
      BOOST_TEST(pml() == "(unset)");
    }
  }
}

BOOST_AUTO_TEST_CASE(a_job_on_one_node_selects_ob1_and_a_job_across_nodes_is_left_alone) {
  // What Open MPI's mpiexec puts in each rank's environment: every rank of a one-node job sees local size = size.
  const auto launched = [](const char* size, const char* localSize, const char* rank) {
    clearEnvironment();
    setenv("OMPI_COMM_WORLD_SIZE", size, 1);
    if (localSize) setenv("OMPI_COMM_WORLD_LOCAL_SIZE", localSize, 1);
    setenv("OMPI_COMM_WORLD_RANK", rank, 1);
  };
  for (const char* rank : {"0", "1"}) {
    launched("2", "2", rank);
    BOOST_TEST(fpdp::app::openMpiJobOnOneNode());
    BOOST_TEST(fpdp::app::preferSharedMemoryMpiTransport());
    BOOST_TEST(pml() == "ob1");
  }
  launched("2", "2", "0");  // the user's choice, also on one node
  setenv("OMPI_MCA_pml", "ucx", 1);
  BOOST_TEST(!fpdp::app::preferSharedMemoryMpiTransport());
  BOOST_TEST(pml() == "ucx");
  for (const char* localSize : {"2", "1"}) {  // 4 ranks, 2 (or 1) on this node: across nodes
    launched("4", localSize, "0");
    BOOST_TEST(!fpdp::app::openMpiJobOnOneNode());
    BOOST_TEST(!fpdp::app::preferSharedMemoryMpiTransport());
    BOOST_TEST(pml() == "(unset)");
  }
  for (const char* localSize : {static_cast<const char*>(nullptr), "", "2x", "-2"}) {  // no usable local size
    launched("2", localSize, "0");
    BOOST_TEST(!fpdp::app::openMpiJobOnOneNode());
    BOOST_TEST(!fpdp::app::preferSharedMemoryMpiTransport());
    BOOST_TEST(pml() == "(unset)");
  }
  clearEnvironment();
}

BOOST_AUTO_TEST_CASE(a_singleton_starts_isolated_in_a_private_directory_it_removes) {
  clearEnvironment();
  std::string base;
  {
    fpdp::app::LightSingletonStartup startup;
    BOOST_TEST_REQUIRE(startup.isolated());
    base = startup.privateBase();
    BOOST_TEST(std::filesystem::is_directory(base));
    BOOST_TEST(variable("OMPI_MCA_ess_singleton_isolated") == "1");
    BOOST_TEST(variable("OMPI_MCA_orte_tmpdir_base") == base);
    BOOST_TEST(variable("HWLOC_COMPONENTS") == "-pci,-linuxio,-opencl,-gl");
    std::ofstream(base + "/left-by-a-failed-run") << "x";  // what MPI_Finalize did not remove goes too
    startup.releaseEnvironment();
    BOOST_TEST(variable("OMPI_MCA_ess_singleton_isolated") == "(unset)");
    BOOST_TEST(variable("OMPI_MCA_orte_tmpdir_base") == "(unset)");
    BOOST_TEST(variable("HWLOC_COMPONENTS") == "(unset)");
    BOOST_TEST(std::filesystem::is_directory(base));  // until MPI has finished
  }
  BOOST_TEST(!std::filesystem::exists(base));
}

BOOST_AUTO_TEST_CASE(isolation_leaves_the_users_settings_and_launched_ranks_alone) {
  for (const char* name : {"OMPI_MCA_ess_singleton_isolated", "OMPI_MCA_orte_tmpdir_base"}) {
    BOOST_TEST_CONTEXT(name) {
      clearEnvironment();
      setenv(name, "0", 1);
      fpdp::app::LightSingletonStartup startup;
      BOOST_TEST(!startup.isolated());
      BOOST_TEST(variable(name) == "0");
      startup.releaseEnvironment();
      BOOST_TEST(variable(name) == "0");
    }
  }
  for (const char* name : kLauncherVariables) {
    BOOST_TEST_CONTEXT(name) {
      clearEnvironment();
      setenv(name, "0", 1);
      fpdp::app::LightSingletonStartup startup;
      BOOST_TEST(!startup.isolated());
      BOOST_TEST(variable("OMPI_MCA_ess_singleton_isolated") == "(unset)");
      BOOST_TEST(variable("HWLOC_COMPONENTS") == "(unset)");
    }
  }
  // The user's hwloc choice is kept, and stays after the release.
  clearEnvironment();
  setenv("HWLOC_COMPONENTS", "linux", 1);
  {
    fpdp::app::LightSingletonStartup startup;
    BOOST_TEST(startup.isolated());
    BOOST_TEST(variable("HWLOC_COMPONENTS") == "linux");
    startup.releaseEnvironment();
    BOOST_TEST(variable("HWLOC_COMPONENTS") == "linux");
  }
}

// Isolated singletons that shared one session directory broke this: the first run to finish removed the directory
// while the other still opened its checkpoint file through MPI-IO there ("mca_sharedfp_sm_component_file_query:
// Error, unable to open file for mmap", seen with 1 run checkpointing at every output step beside 12 short ones).
BOOST_AUTO_TEST_CASE(overlapping_serial_runs_do_not_disturb_each_other) {
  clearEnvironment();
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("fpdp-test-mpi-startup-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "tmp");
  // The 1-D restart case: a checkpoint at every output step, 100 of them.
  std::string text;
  {
    std::ifstream in(std::string(FPDP_SOURCE_DIR) + "/tests/app/restart_cases/langevin-1d.toml");
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  text = std::regex_replace(text, std::regex("every = 10\n"), "every = 1\ncheckpoint_every = 1\nfields = false\n");
  std::ofstream((dir / "long.toml").string()) << text;
  const std::string env = "TMPDIR=" + fpdp::app::test::shellQuote((dir / "tmp").string());
  fpdp::app::test::Outcome longRun;
  std::thread first([&] {
    longRun = fpdp::app::test::runFpdp({"run", (dir / "long.toml").string(), "--output", (dir / "long").string(),
                                        "--quiet"}, 1, env);
  });
  std::vector<fpdp::app::test::Outcome> shortRuns;
  for (int i = 0; i < 8; ++i)
    shortRuns.push_back(fpdp::app::test::runFpdp({"run", std::string(FPDP_SOURCE_DIR) +
                                                  "/tests/app/restart_cases/langevin-1d.toml", "--output",
                                                  (dir / ("short" + std::to_string(i))).string(), "--quiet",
                                                  "-ts_type", "exponential"}, 1, env));
  first.join();
  BOOST_TEST(longRun.status == 0, longRun.output);
  BOOST_TEST(longRun.output.find("mca_") == std::string::npos, longRun.output);
  for (const auto& r : shortRuns) {
    BOOST_TEST(r.status == 0, r.output);
    BOOST_TEST(r.output.find("mca_") == std::string::npos, r.output);
  }
  // Every run removed its private directory.
  BOOST_TEST(fs::is_empty(dir / "tmp"));
  fs::remove_all(dir);
}
