// Parallel runs equal serial runs: the 2-D OU problem solved on all ranks of PETSC_COMM_WORLD (MUMPS LU) and,
// on every rank, alone on PETSC_COMM_SELF (PETSc LU). Divergences must agree to 1e-10 relative.
// Registered with RANKS 2.
#define BOOST_TEST_MODULE solver_parallel
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "OuProblem.hpp"
#include "PetscFixture.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {
solver::DivergenceValues solve(MPI_Comm comm, int dim) {
  testing::OuSetup s;
  s.dim = dim;
  s.cells = dim == 3 ? 20 : 64;
  s.centreP = {0.3, 0.2, 0.1};
  const meshes::DistributedBoxMesh mesh(comm, testing::ouBox(s), 2);
  const solver::LangevinDiscretisation disc(mesh, testing::ouProblem(s), solver::FaceFluxScheme::ScharfetterGummel);
  solver::TimeIntegration ti;
  ti.dt = 0.05;
  ti.steps = 20;
  solver::DensityEvolution evo(mesh, disc.spatialOperator().assemble(), ti);
  const solver::DivergenceFunctionals f(mesh, {1.5, 2.0, 10.0});
  auto u = mesh.createVector();
  disc.setInitialState(u);
  evo.run(u, [](long, double, Vec) {});
  return f.evaluate(u);
}

void requireClose(double a, double b, const char* what) {
  const double rel = std::fabs(a - b) / std::max(std::fabs(b), 1e-300);
  BOOST_TEST_MESSAGE(what << ": parallel " << a << " serial " << b << " rel diff " << rel);
  BOOST_TEST(rel <= 1e-10, what << ": parallel " << a << " vs serial " << b);
}
}  // namespace

BOOST_AUTO_TEST_CASE(two_ranks_equal_one_rank) {
  PetscMPIInt size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  BOOST_TEST_MESSAGE("ranks: " << size);
  BOOST_REQUIRE(size >= 2);  // registered with mpiexec -n 2; a serial launch would test nothing
  for (int dim : {1, 2, 3}) {
    const auto par = solve(PETSC_COMM_WORLD, dim);
    const auto ser = solve(PETSC_COMM_SELF, dim);
    requireClose(par.kl, ser.kl, "KL");
    requireClose(par.tv, ser.tv, "TV");
    requireClose(par.p.mass, ser.p.mass, "mass p");
    for (std::size_t k = 0; k < par.renyi.size(); ++k) requireClose(par.renyi[k], ser.renyi[k], "Renyi");
  }
}
