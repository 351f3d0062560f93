#pragma once
// Boost.Test global fixture: PETSc is initialised once per test executable (and finalised at exit).
#include <petscsys.h>

#include <boost/test/unit_test.hpp>

struct PetscFixture {
  PetscFixture() {
    auto& m = boost::unit_test::framework::master_test_suite();
    PetscInitialize(&m.argc, &m.argv, nullptr, nullptr);
  }
  ~PetscFixture() { PetscFinalize(); }
};
