// DensityEvolution with BDF and a direct solver factorises the constant-step matrix once (the two start steps of
// PETSc's BDF are solved by GMRES preconditioned with it): one factorisation instead of three, and the same
// solution as factorising every shift (GMRES + ILU to a relative residual of 1e-12 rebuilds all three).
#define BOOST_TEST_MODULE solver_density_evolution
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "OuProblem.hpp"
#include "PetscFixture.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {
struct Run {
  std::vector<double> state;
  long builds = 0;
  double massDrift = 0.0;
};

Run solve(const char* ksp, const char* pc, int bdfOrder) {
  testing::OuSetup s;
  s.dim = 2;
  s.cells = 40;
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_SELF, testing::ouBox(s), 2);
  const solver::LangevinDiscretisation disc(mesh, testing::ouProblem(s), solver::FaceFluxScheme::ScharfetterGummel);
  solver::TimeIntegration ti;
  ti.dt = 0.1;
  ti.steps = 10;
  ti.kspType = ksp;
  ti.pcType = pc;
  PetscOptionsSetValue(nullptr, "-ts_bdf_order", std::to_string(bdfOrder).c_str());
  solver::DensityEvolution evo(mesh, disc.spatialOperator().assemble(), ti);
  PetscOptionsClearValue(nullptr, "-ts_bdf_order");
  auto u = mesh.createVector();
  disc.setInitialState(u);
  Run r;
  double mass0 = 0.0;
  evo.run(u, [&](long step, double, Vec x) {
    PetscScalar sum;
    VecSum(x, &sum);
    if (step == 0) mass0 = sum;
    r.massDrift = std::max(r.massDrift, std::fabs(sum - mass0) / mass0);
  });
  r.builds = evo.jacobianBuilds();
  const PetscScalar* a;
  PetscInt n;
  VecGetLocalSize(u, &n);
  VecGetArrayRead(u, &a);
  r.state.assign(a, a + n);
  VecRestoreArrayRead(u, &a);
  return r;
}
}  // namespace

double maxRelativeDifference(const Run& a, const Run& b) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < a.state.size(); ++i) {
    diff = std::max(diff, std::fabs(a.state[i] - b.state[i]));
    scale = std::max(scale, std::fabs(a.state[i]));
  }
  return diff / scale;
}

// The control: GMRES + Jacobi rebuilds its preconditioner from J = shift I - A at every new shift.
BOOST_AUTO_TEST_CASE(bdf_with_lu_factorises_once_and_matches_every_shift_factorised) {
  for (int order : {2, 3}) {
    const auto lu = solve(KSPPREONLY, PCLU, order);
    const auto control = solve(KSPGMRES, PCJACOBI, order);
    BOOST_TEST_MESSAGE("BDF" << order << ": LU builds " << lu.builds << ", GMRES+Jacobi builds " << control.builds
                             << ", mass drift LU " << lu.massDrift);
    BOOST_TEST(lu.builds == 1);
    BOOST_TEST(control.builds >= 3);  // PETSc starts with BDF1 and BDF2 on half steps, then the constant steps
    const double d = maxRelativeDifference(lu, control);
    BOOST_TEST_MESSAGE("  max difference / max = " << d);
    // Both solve every step to a relative residual of 1e-12; 10 steps with a condition number below 1e2 on this
    // mesh keep the difference below 10 * 1e2 * 1e-12 = 1e-9.
    BOOST_TEST(d <= 1e-9);
    // Mass: the two GMRES start steps conserve it to their residual, the direct steps to round-off.
    BOOST_TEST(lu.massDrift <= 1e-11);
  }
}

// Serial ILU(0) is factorised in place, once (DensityEvolution::enableInPlaceIlu): the Krylov method applies the
// exact shift I - A of every step (BDF's start steps included) through a shell, so the result is that of the
// direct solver to the solve tolerance.
BOOST_AUTO_TEST_CASE(in_place_ilu_factorises_once_and_matches_the_direct_solve) {
  for (int order : {2, 3}) {
    const auto lu = solve(KSPPREONLY, PCLU, order);
    for (const char* ksp : {KSPGMRES, KSPBCGS}) {
      const auto ilu = solve(ksp, PCILU, order);
      const double d = maxRelativeDifference(lu, ilu);
      BOOST_TEST_MESSAGE("BDF" << order << ", " << ksp << " + in-place ILU: builds " << ilu.builds
                               << ", max difference / max = " << d << ", mass drift " << ilu.massDrift);
      BOOST_TEST(ilu.builds == 1);
      BOOST_TEST(d <= 1e-9);
      BOOST_TEST(ilu.massDrift <= 1e-10);
    }
  }
}
