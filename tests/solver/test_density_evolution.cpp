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

BOOST_AUTO_TEST_CASE(bdf_with_lu_factorises_once_and_matches_every_shift_factorised) {
  for (int order : {2, 3}) {
    const auto lu = solve(KSPPREONLY, PCLU, order);
    const auto ilu = solve(KSPGMRES, PCILU, order);
    BOOST_TEST_MESSAGE("BDF" << order << ": LU builds " << lu.builds << ", GMRES+ILU builds " << ilu.builds
                             << ", mass drift LU " << lu.massDrift);
    BOOST_TEST(lu.builds == 1);
    BOOST_TEST(ilu.builds >= 3);  // PETSc starts with BDF1 and BDF2 on half steps, then the constant steps
    double diff = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < lu.state.size(); ++i) {
      diff = std::max(diff, std::fabs(lu.state[i] - ilu.state[i]));
      scale = std::max(scale, std::fabs(lu.state[i]));
    }
    BOOST_TEST_MESSAGE("  max difference / max = " << diff / scale);
    // Both solve every step to a relative residual of 1e-12; 10 steps with a condition number below 1e2 on this
    // mesh keep the difference below 10 * 1e2 * 1e-12 = 1e-9.
    BOOST_TEST(diff / scale <= 1e-9);
    // Mass: the two GMRES start steps conserve it to their residual, the direct steps to round-off.
    BOOST_TEST(lu.massDrift <= 1e-11);
  }
}
