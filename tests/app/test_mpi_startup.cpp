// The singleton start-up choice (app/PetscConfiguration.hpp): a process no launcher started selects Open MPI's ob1
// point-to-point layer, unless the user chose one; launched processes are left alone.
#define BOOST_TEST_MODULE app_mpi_startup
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <string>

#include "app/PetscConfiguration.hpp"

namespace {

const char* const kLauncherVariables[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMI_SIZE",
                                          "PMIX_RANK"};

/// Clears the variables the choice depends on (ctest starts this test without a launcher).
void clearEnvironment() {
  for (const char* name : kLauncherVariables) unsetenv(name);
  unsetenv("OMPI_MCA_pml");
}

std::string pml() {
  const char* v = std::getenv("OMPI_MCA_pml");
  return v ? v : "(unset)";
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_singleton_selects_ob1) {
  clearEnvironment();
  BOOST_TEST(!fpdp::app::launchedByMpiLauncher());
  BOOST_TEST(fpdp::app::preferLightSingletonMpiStartup());
  BOOST_TEST(pml() == "ob1");
}

BOOST_AUTO_TEST_CASE(the_users_choice_is_kept) {
  clearEnvironment();
  setenv("OMPI_MCA_pml", "ucx", 1);
  BOOST_TEST(!fpdp::app::preferLightSingletonMpiStartup());
  BOOST_TEST(pml() == "ucx");
}

BOOST_AUTO_TEST_CASE(launched_ranks_are_left_alone) {
  for (const char* name : kLauncherVariables) {
    BOOST_TEST_CONTEXT(name) {
      clearEnvironment();
      setenv(name, "0", 1);
      BOOST_TEST(fpdp::app::launchedByMpiLauncher());
      BOOST_TEST(!fpdp::app::preferLightSingletonMpiStartup());
      BOOST_TEST(pml() == "(unset)");
    }
  }
}
