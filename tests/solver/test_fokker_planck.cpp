// Verification of the Langevin Fokker–Planck solver against the Ornstein–Uhlenbeck closed forms
// (MATH.md §5 item 7, §6): conservation, positivity, the discrete Gibbs steady state, R_alpha and KL against
// the exact values, and the observed orders of convergence in space and in time (each printed as a table).
#define BOOST_TEST_MODULE solver
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>

#include "OuProblem.hpp"
#include "PetscFixture.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;
using testing::OuSetup;

namespace {

struct OuResult {
  solver::DivergenceValues div;
  validation::GaussianReference::DensityErrors err;
  double minDensity = INFINITY;
  double maxMassDrift = 0.0;
  double exactKL = 0.0;
  std::vector<double> exactRenyi;
};

OuResult solveOu(const OuSetup& s, double T, long steps, const std::string& tsType, std::vector<double> orders = {2.0},
                 MPI_Comm comm = PETSC_COMM_WORLD, std::vector<double>* stateOut = nullptr) {
  const meshes::DistributedBoxMesh mesh(comm, testing::ouBox(s), 2);
  const auto problem = testing::ouProblem(s);
  const solver::LangevinDiscretisation disc(mesh, problem, solver::FaceFluxScheme::ScharfetterGummel);
  solver::TimeIntegration ti;
  ti.dt = T / static_cast<double>(steps);
  ti.steps = steps;
  ti.tsType = tsType;
  solver::DensityEvolution evo(mesh, disc.spatialOperator().assemble(), ti);
  const solver::DivergenceFunctionals funcs(mesh, orders);
  auto u = mesh.createVector();
  disc.setInitialState(u);
  OuResult r;
  double mass0[2] = {0, 0};
  evo.run(u, [&](long step, double, Vec x) {
    const auto v = funcs.evaluate(x);
    if (step == 0) mass0[0] = v.p.mass, mass0[1] = v.q.mass;
    r.maxMassDrift = std::max({r.maxMassDrift, std::fabs(v.p.mass - mass0[0]), std::fabs(v.q.mass - mass0[1])});
    r.minDensity = std::min({r.minDensity, v.p.min, v.q.min});
  });
  r.div = funcs.evaluate(u);
  const auto ref = validation::GaussianReference::forLangevin(*problem.lossD, *problem.lossDPrime, s.sigma,
                                                              problem.initial);
  BOOST_REQUIRE(ref);
  r.err = ref->densityErrors(mesh, u, T);
  r.exactKL = ref->kl(T);
  for (double a : orders) r.exactRenyi.push_back(ref->renyi(a, T));
  if (stateOut) {
    const PetscScalar* a;
    PetscInt n;
    VecGetLocalSize(u, &n);
    VecGetArrayRead(u, &a);
    stateOut->assign(a, a + n);
    VecRestoreArrayRead(u, &a);
  }
  return r;
}

double rate(double eCoarse, double eFine, double ratio = 2.0) { return std::log(eCoarse / eFine) / std::log(ratio); }

}  // namespace

BOOST_AUTO_TEST_CASE(mass_is_conserved_and_densities_stay_non_negative) {
  OuSetup s;
  s.dim = 2;
  s.cells = 64;
  const auto r = solveOu(s, 2.0, 100, "bdf");
  BOOST_TEST(r.maxMassDrift <= 1e-12);
  BOOST_TEST(r.minDensity >= 0.0);
  BOOST_TEST(r.div.p.negativeCells == 0);
}

// Once the propagator holds the operator's stencil or matrix, fpdp run frees the potentials: the positivity report
// computed before stays, and anything that would build rows from them says so instead of reading freed memory.
BOOST_AUTO_TEST_CASE(released_potentials_keep_the_positivity_report_and_refuse_new_rows) {
  OuSetup s;
  s.dim = 2;
  s.cells = 16;
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_WORLD, testing::ouBox(s), 2);
  solver::LangevinDiscretisation disc(mesh, testing::ouProblem(s), solver::FaceFluxScheme::ScharfetterGummel);
  const auto before = disc.spatialOperator().positivity();
  disc.releaseOperatorPotentials();
  const auto after = disc.spatialOperator().positivity();
  BOOST_TEST(after.rows == before.rows);
  BOOST_TEST(after.rows > 0);
  BOOST_TEST(after.violatingRows == before.violatingRows);
  solver::StencilOperator stencil;
  BOOST_CHECK_THROW(disc.spatialOperator().buildStencil(stencil), std::logic_error);
  BOOST_CHECK_THROW(disc.spatialOperator().assemble(), std::logic_error);
  auto w = mesh.createVector();
  BOOST_CHECK_THROW(disc.setSymmetrisingWeights(w), std::logic_error);
}

BOOST_AUTO_TEST_CASE(discrete_gibbs_state_is_stationary) {
  // A non-quadratic potential (logistic, two records) so that the test is not about Gaussians.
  OuSetup s;
  s.dim = 2;
  s.cells = 48;
  s.sigma = 0.6;
  auto logistic = std::make_shared<const models::LogisticLoss>(0.3);
  auto LD = std::make_shared<const models::EmpiricalLoss>(
      logistic, models::Dataset({{testing::vec({1.0, 2.0, 0}, 2), 1.0}, {testing::vec({-1.0, 0.5, 0}, 2), -1.0}}));
  auto LDp = std::make_shared<const models::EmpiricalLoss>(
      logistic, models::Dataset({{testing::vec({1.0, 2.0, 0}, 2), 1.0}, {testing::vec({3.0, -1.0, 0}, 2), 1.0}}));
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_WORLD, testing::ouBox(s), 2);
  const solver::LangevinDiscretisation disc(
      mesh, {LD, LDp, s.sigma, models::Gaussian(testing::vec({0, 0, 0}, 2), models::Matrix::Identity(2, 2))},
      solver::FaceFluxScheme::ScharfetterGummel);
  auto A = disc.spatialOperator().assemble();
  auto u = mesh.createVector(), Au = mesh.createVector();
  disc.setGibbsState(u);
  MatMult(A, u, Au);
  // |A u| relative to the size of the individual flux terms |diag(A)| u.
  Vec d;
  VecDuplicate(u, &d);
  MatGetDiagonal(A, d);
  VecPointwiseMult(d, d, u);
  PetscReal resid, scale;
  VecNorm(Au, NORM_INFINITY, &resid);
  VecNorm(d, NORM_INFINITY, &scale);
  VecDestroy(&d);
  BOOST_TEST_MESSAGE("Gibbs residual |A u|_inf / |diag(A) u|_inf = " << resid / scale);
  BOOST_TEST(resid / scale <= 1e-13);
  // And through the time integrator: 50 BDF2 steps leave it unchanged to 1e-12 relative.
  auto u0 = mesh.createVector();
  VecCopy(u, u0);
  solver::TimeIntegration ti;
  ti.dt = 0.05;
  ti.steps = 50;
  solver::DensityEvolution evo(mesh, std::move(A), ti);
  evo.run(u, [](long, double, Vec) {});
  PetscReal change, size;
  VecAXPY(u0, -1.0, u);
  VecNorm(u0, NORM_INFINITY, &change);
  VecNorm(u, NORM_INFINITY, &size);
  BOOST_TEST_MESSAGE("Gibbs state relative change after 50 steps = " << change / size);
  BOOST_TEST(change / size <= 1e-12);
}

BOOST_AUTO_TEST_CASE(ou_1d_divergences_match_closed_form) {
  OuSetup s;
  s.dim = 1;
  s.centreP = {0.2, 0.1, 0.0};
  s.cells = 400;
  const std::vector<double> orders{1.5, 2.0, 10.0};
  const auto r = solveOu(s, 2.0, 400, "bdf", orders);
  BOOST_TEST_MESSAGE("1-D OU: KL " << r.div.kl << " exact " << r.exactKL);
  BOOST_TEST(std::fabs(r.div.kl - r.exactKL) / r.exactKL <= 2e-4);
  for (std::size_t k = 0; k < orders.size(); ++k) {
    BOOST_TEST_MESSAGE("  R_" << orders[k] << " " << r.div.renyi[k] << " exact " << r.exactRenyi[k]);
    BOOST_TEST(std::fabs(r.div.renyi[k] - r.exactRenyi[k]) / r.exactRenyi[k] <= 2e-4);
  }
  BOOST_TEST(r.err.l1P <= 2e-4);
  // The tilted centre alpha*m_p + (1-alpha)*m_q of R_10 lies 2 units from the origin: well inside the box.
  for (double share : r.div.renyiBoundaryShare) BOOST_TEST(share <= 1e-8);
}

BOOST_AUTO_TEST_CASE(ou_2d_divergences_match_closed_form) {
  OuSetup s;
  s.dim = 2;
  s.centreP = {0.2, 0.1, 0.0};
  s.cells = 128;
  const std::vector<double> orders{2.0, 10.0};
  const auto r = solveOu(s, 2.0, 200, "bdf", orders);
  BOOST_TEST_MESSAGE("2-D OU: KL " << r.div.kl << " exact " << r.exactKL << ", L1(p) " << r.err.l1P);
  BOOST_TEST(std::fabs(r.div.kl - r.exactKL) / r.exactKL <= 2e-3);
  for (std::size_t k = 0; k < orders.size(); ++k)
    BOOST_TEST(std::fabs(r.div.renyi[k] - r.exactRenyi[k]) / r.exactRenyi[k] <= 2e-3);
  for (double share : r.div.renyiBoundaryShare) BOOST_TEST(share <= 1e-8);
  BOOST_TEST(r.err.l1P <= 2e-3);
  BOOST_TEST(r.err.l1Q <= 2e-3);
}

BOOST_AUTO_TEST_CASE(box_truncation_of_high_orders_is_detected) {
  // Means 1 apart: the R_10 integrand is centred at 10, outside [-6, 6]; the quadrature number is wrong and the
  // boundary share must say so, while R_2 (centred at 2) is unaffected.
  OuSetup s;
  s.dim = 1;
  s.cells = 200;
  const auto r = solveOu(s, 1.0, 100, "bdf", {2.0, 10.0});
  BOOST_TEST_MESSAGE("boundary shares: R_2 " << r.div.renyiBoundaryShare[0] << ", R_10 " << r.div.renyiBoundaryShare[1]);
  BOOST_TEST(r.div.renyiBoundaryShare[0] <= 1e-6);
  BOOST_TEST(r.div.renyiBoundaryShare[1] >= 1e-2);
  BOOST_TEST(std::fabs(r.div.renyi[1] - r.exactRenyi[1]) / r.exactRenyi[1] >= 1e-2);
}

BOOST_AUTO_TEST_CASE(observed_order_in_space_is_two) {
  // Time error made negligible: BDF2 with many steps; the mesh is halved four times.
  OuSetup s;
  s.dim = 1;
  const double T = 1.0;
  std::printf("\nspace refinement, 1-D OU to t = %.1f (BDF2, 4000 steps)\n%8s %10s %12s %6s %12s %6s\n", T, "N", "h",
              "L1 err p", "rate", "R_2 rel err", "rate");
  double prevL1 = 0, prevR = 0;
  for (int cells : {50, 100, 200, 400}) {
    s.cells = cells;
    const auto r = solveOu(s, T, 4000, "bdf");
    const double rel = std::fabs(r.div.renyi[0] - r.exactRenyi[0]) / r.exactRenyi[0];
    if (prevL1 > 0) {
      std::printf("%8d %10.4g %12.4e %6.3f %12.4e %6.3f\n", cells, 12.0 / cells, r.err.l1P, rate(prevL1, r.err.l1P),
                  rel, rate(prevR, rel));
      BOOST_TEST(rate(prevL1, r.err.l1P) >= 1.8);
      BOOST_TEST(rate(prevR, rel) >= 1.8);
    } else {
      std::printf("%8d %10.4g %12.4e %6s %12.4e %6s\n", cells, 12.0 / cells, r.err.l1P, "", rel, "");
    }
    prevL1 = r.err.l1P;
    prevR = rel;
  }
}

BOOST_AUTO_TEST_CASE(observed_order_in_time_is_two) {
  // Fixed mesh; errors against the same mesh with 16x smaller steps isolate the time error.
  OuSetup s;
  s.dim = 1;
  s.cells = 200;
  const double T = 1.0;
  for (const std::string ts : {"bdf", "cn"}) {
    std::vector<double> ref;
    solveOu(s, T, 1280, ts, {2.0}, PETSC_COMM_WORLD, &ref);
    std::printf("\ntime refinement (%s), 1-D OU, 200 cells\n%8s %12s %6s\n", ts.c_str(), "steps", "max err", "rate");
    double prev = 0;
    for (long steps : {10, 20, 40, 80}) {
      std::vector<double> x;
      solveOu(s, T, steps, ts, {2.0}, PETSC_COMM_WORLD, &x);
      double e = 0;
      for (std::size_t i = 0; i < x.size(); ++i) e = std::max(e, std::fabs(x[i] - ref[i]));
      double emax;
      MPI_Allreduce(&e, &emax, 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD);
      if (prev > 0) {
        std::printf("%8ld %12.4e %6.3f\n", steps, emax, rate(prev, emax));
        BOOST_TEST(rate(prev, emax) >= 1.8);
      } else {
        std::printf("%8ld %12.4e\n", steps, emax);
      }
      prev = emax;
    }
  }
}
