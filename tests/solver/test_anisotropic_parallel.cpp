// Parallel runs equal serial runs with a full diffusion matrix: the 2-D and 3-D anisotropic, unequal-noise OU
// problems (cross terms on, box stencil) solved on all ranks of PETSC_COMM_WORLD (MUMPS LU) and, on every rank,
// alone on PETSC_COMM_SELF (PETSc LU). Divergences, masses, the positivity report and the Rényi status (including an
// order whose true value is +inf) must agree; values to 1e-10 relative. Registered with RANKS 2.
#define BOOST_TEST_MODULE solver_anisotropic_parallel
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include "PetscFixture.hpp"
#include "test_anisotropic_problem.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {

void requireClose(double a, double b, const char* what) {
  const double rel = a == b ? 0.0 : std::fabs(a - b) / std::max(std::fabs(b), 1e-300);
  BOOST_TEST_MESSAGE(what << ": parallel " << a << " serial " << b << " rel diff " << rel);
  BOOST_TEST(rel <= 1e-10, what << ": parallel " << a << " vs serial " << b);
}

}  // namespace

BOOST_AUTO_TEST_CASE(two_ranks_equal_one_rank_with_cross_diffusion) {
  PetscMPIInt size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  BOOST_TEST_MESSAGE("ranks: " << size);
  BOOST_REQUIRE(size >= 2);  // registered with mpiexec -n 2; a serial launch would test nothing
  const std::vector<double> orders{1.5, 2.0, 6.0};
  for (int dim : {2, 3}) {
    const auto s = testing::rotatedUnequalProblem(dim);
    const int cells = dim == 2 ? 64 : 20;
    const double L = dim == 2 ? 6.0 : 5.0;
    std::vector<meshes::Axis> axes;
    for (int a = 0; a < dim; ++a) axes.push_back(meshes::Axis::uniform(-L, L, cells));
    const auto par = testing::solveAnisotropic(s, axes, 1.0, 20, orders, PETSC_COMM_WORLD);
    const auto ser = testing::solveAnisotropic(s, axes, 1.0, 20, orders, PETSC_COMM_SELF);
    BOOST_TEST_MESSAGE(dim << "-D, exact R_6 = " << s.reference().renyi(6.0, 1.0));
    requireClose(par.div.kl, ser.div.kl, "KL");
    requireClose(par.div.tv, ser.div.tv, "TV");
    requireClose(par.div.p.mass, ser.div.p.mass, "mass p");
    requireClose(par.div.q.mass, ser.div.q.mass, "mass q");
    requireClose(par.err.l1P, ser.err.l1P, "L1 error p");
    for (int a = 0; a < dim; ++a)
      for (int b = 0; b < dim; ++b) requireClose(par.momentsP.covariance(a, b), ser.momentsP.covariance(a, b), "cov p");
    for (std::size_t k = 0; k < orders.size(); ++k) {
      BOOST_TEST((par.div.renyiStatus[k] == ser.div.renyiStatus[k]), "status of order " << orders[k]);
      BOOST_TEST_MESSAGE("  order " << orders[k] << ": " << solver::renyiStatusName(par.div.renyiStatus[k]));
      requireClose(par.div.renyiOnBox[k], ser.div.renyiOnBox[k], "Renyi (box)");
      requireClose(par.div.renyiBoundaryShare[k], ser.div.renyiBoundaryShare[k], "wall share");
      for (int m = 0; m < solver::DivergenceFunctionals::kTailShells; ++m)
        requireClose(par.div.renyiTailLogMean[k][m], ser.div.renyiTailLogMean[k][m], "tail shell");
    }
    BOOST_TEST(par.positivity.violatingRows == ser.positivity.violatingRows);
    BOOST_TEST(par.positivity.rows == ser.positivity.rows);
    requireClose(par.positivity.mostNegativeOffDiagonal, ser.positivity.mostNegativeOffDiagonal, "most negative");
  }
}

BOOST_AUTO_TEST_CASE(two_ranks_equal_one_rank_with_fourth_order_fluxes) {
  // The fourth-order fluxes reach two cells on each side (stencil width 2): the ghost exchange and the per-face
  // choice between the two fluxes must not depend on the partition.
  PetscMPIInt size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  BOOST_REQUIRE(size >= 2);
  solver::SpatialAccuracy fourth;
  fourth.order = 4;
  for (int dim : {2, 3}) {
    const auto s = testing::rotatedUnequalProblem(dim);
    const int cells = dim == 2 ? 48 : 16;
    const double L = dim == 2 ? 6.0 : 5.0;
    std::vector<meshes::Axis> axes;
    for (int a = 0; a < dim; ++a) axes.push_back(meshes::Axis::uniform(-L, L, cells));
    const auto par = testing::solveAnisotropic(s, axes, 1.0, 10, {2.0}, PETSC_COMM_WORLD, {}, false, fourth);
    const auto ser = testing::solveAnisotropic(s, axes, 1.0, 10, {2.0}, PETSC_COMM_SELF, {}, false, fourth);
    BOOST_TEST(par.highOrderFaces > 0);
    BOOST_TEST(par.highOrderFaces == ser.highOrderFaces);
    requireClose(par.div.kl, ser.div.kl, "KL");
    requireClose(par.div.renyiOnBox[0], ser.div.renyiOnBox[0], "R_2 (box)");
    requireClose(par.div.p.mass, ser.div.p.mass, "mass p");
    requireClose(par.err.l1P, ser.err.l1P, "L1 error p");
    requireClose(par.err.l1Q, ser.err.l1Q, "L1 error q");
    BOOST_TEST(par.positivity.violatingRows == ser.positivity.violatingRows);
  }
}
