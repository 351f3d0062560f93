// Full-tensor (anisotropic, unequal) diffusion: d_t p = div(p grad L_D) + div(Sigma grad p) and the same for q with
// Sigma' (MATH.md §2.3), discretised by Scharfetter–Gummel for drift + Sigma_aa and the oriented mixed-derivative
// fluxes of solver/discretisation/AnisotropicDiffusion.hpp for Sigma_ab. Verified against the Ornstein–Uhlenbeck closed forms
// (MATH.md §6): exactness on quadratics, mass conservation on graded meshes, the positivity report, observed orders
// of convergence in 2-D and 3-D (tables printed), graded meshes, and the FiPy anisotropic example.
#define BOOST_TEST_MODULE solver_anisotropic
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include "PetscFixture.hpp"
#include "TestSupport.hpp"
#include "test_anisotropic_problem.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;
using testing::AnisotropicOu;
using testing::maxAbs;
using testing::rate;

namespace {

using fpdp::testing::vec;

std::vector<meshes::Axis> uniformAxes(int dim, double L, int cells) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < dim; ++a) axes.push_back(meshes::Axis::uniform(-L, L, cells));
  return axes;
}

// The 2-D test problem: Sigma = R(30 deg) diag(0.6, 0.3) R^T, Sigma' = R(-20 deg) diag(0.5, 0.35) R^T, centres
// (0.4, -0.2) and (-0.1, 0.3), start N((0.2, 0.1), [[0.5, 0.1], [0.1, 0.4]]).
AnisotropicOu problem2d() {
  AnisotropicOu s;
  s.dim = 2;
  s.sigmaP = testing::rotatedMatrix(testing::planeRotation(2, 0, 1, std::numbers::pi / 6), {0.6, 0.3});
  s.sigmaQ = testing::rotatedMatrix(testing::planeRotation(2, 0, 1, -std::numbers::pi / 9), {0.5, 0.35});
  s.centreP = vec({0.4, -0.2});
  s.centreQ = vec({-0.1, 0.3});
  s.m0 = vec({0.2, 0.1});
  s.C0 = models::Matrix(2, 2);
  s.C0 << 0.5, 0.1, 0.1, 0.4;
  return s;
}

// The 3-D test problem: Sigma and Sigma' rotated about two axes (all three off-diagonal entries non-zero).
AnisotropicOu problem3d() {
  AnisotropicOu s;
  s.dim = 3;
  const models::Matrix R = testing::planeRotation(3, 0, 1, 0.5) * testing::planeRotation(3, 1, 2, 0.4);
  const models::Matrix Rp = testing::planeRotation(3, 0, 2, -0.45) * testing::planeRotation(3, 0, 1, 0.3);
  s.sigmaP = testing::rotatedMatrix(R, {0.45, 0.3, 0.22});
  s.sigmaQ = testing::rotatedMatrix(Rp, {0.4, 0.3, 0.25});
  s.centreP = vec({0.3, -0.2, 0.1});
  s.centreQ = vec({-0.1, 0.2, -0.2});
  s.m0 = vec({0.1, 0.0, -0.1});
  s.C0 = 0.35 * models::Matrix::Identity(3, 3);
  s.C0(0, 1) = s.C0(1, 0) = 0.05;
  return s;
}

void printMatrix(const char* name, const models::Matrix& m) {
  std::printf("%s =", name);
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    std::printf(" [");
    for (Eigen::Index j = 0; j < m.cols(); ++j) std::printf(" %.4f", m(i, j));
    std::printf(" ]");
  }
  std::printf("\n");
}

}  // namespace

BOOST_AUTO_TEST_CASE(stencil_is_exact_for_quadratics_and_conservative) {
  // With Phi = 0 the operator is div(Sigma grad u); on a uniform mesh both the three-point diagonal part and the
  // oriented mixed stencil are exact for quadratics at cell centres, so for u = x^T Q x / 2 + b . x every interior
  // row gives tr(Sigma Q) exactly (to round-off), whatever the signs of Sigma_ab.
  for (int dim : {2, 3}) {
    for (double sign : {+1.0, -1.0}) {
      std::vector<meshes::Axis> axes{meshes::Axis::uniform(-1.0, 1.0, 10), meshes::Axis::uniform(-1.5, 1.5, 8),
                                     meshes::Axis::uniform(-0.5, 0.7, 6)};
      axes.erase(axes.begin() + dim, axes.end());
      const meshes::DistributedBoxMesh mesh(PETSC_COMM_SELF, meshes::BoxMesh(axes), 1, meshes::StencilShape::Box);
      solver::DriftDiffusionEquation eq;
      eq.potential = [](const solver::Point&) { return 0.0; };
      models::Matrix S(dim, dim);
      if (dim == 2) S << 0.7, 0.25 * sign, 0.25 * sign, 0.4;
      else S << 0.7, 0.2 * sign, -0.1 * sign, 0.2 * sign, 0.5, 0.15, -0.1 * sign, 0.15, 0.6;
      solver::setDiffusionMatrix(eq, S);
      const solver::FokkerPlanckOperator op(mesh, {eq}, solver::FaceFluxScheme::ScharfetterGummel);
      auto A = op.assemble();
      models::Matrix Q(dim, dim);
      if (dim == 2) Q << 1.3, -0.7, -0.7, 0.4;
      else Q << 1.3, -0.7, 0.2, -0.7, 0.4, 0.5, 0.2, 0.5, -0.9;
      const models::Vector b = dim == 2 ? vec({0.3, -0.2}) : vec({0.3, -0.2, 0.1});
      auto u = mesh.createVector(), Au = mesh.createVector();
      PetscScalar* a;
      VecGetArray(u, &a);
      mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
        const auto c = mesh.box().centre(i, j, k);
        models::Vector x(dim);
        for (int d = 0; d < dim; ++d) x[d] = c[d];
        a[l] = 0.5 * x.dot(Q * x) + b.dot(x);
      });
      VecRestoreArray(u, &a);
      MatMult(A, u, Au);
      const double exact = (S * Q).trace();
      double worst = 0.0, columnSum = 0.0, scale = 0.0;
      const PetscScalar* r;
      VecGetArrayRead(Au, &r);
      mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
        const std::array<PetscInt, 3> c{i, j, k};
        bool interior = true;
        for (int d = 0; d < dim; ++d) interior = interior && c[d] > 0 && c[d] < mesh.box().cells(d) - 1;
        if (interior) worst = std::max(worst, std::fabs(r[l] - exact));
      });
      VecRestoreArrayRead(Au, &r);
      // Conservation: the volume-weighted column sums of A vanish (1^T V A = 0).
      auto vol = mesh.createVector(), colSums = mesh.createVector();
      VecGetArray(vol, &a);
      for (std::size_t l = 0; l < mesh.ownedVolumes().size(); ++l) a[l] = mesh.ownedVolumes()[l];
      VecRestoreArray(vol, &a);
      MatMultTranspose(A, vol, colSums);
      VecNorm(colSums, NORM_INFINITY, &columnSum);
      PetscReal diagMax;
      Vec d;
      VecDuplicate(u, &d);
      MatGetDiagonal(A, d);
      VecPointwiseMult(d, d, vol);
      VecNorm(d, NORM_INFINITY, &diagMax);
      VecDestroy(&d);
      scale = diagMax;
      BOOST_TEST_MESSAGE(dim << "-D, sign " << sign << ": max |A u - tr(Sigma Q)| = " << worst
                              << ", |1^T V A|_inf / |V diag A|_inf = " << columnSum / scale);
      BOOST_TEST(worst <= 1e-12);  // entries up to ~50, values O(1): round-off ~1e-14
      BOOST_TEST(columnSum <= 1e-14 * scale);
      // Without drift the off-diagonal entries are >= 0 iff Sigma_aa/h_a^2 >= sum_{b != a} |Sigma_ab|/(h_a h_b).
      bool dominant = true;
      for (int p = 0; p < dim; ++p) {
        const double hp = axes[p].width(0);
        double reduction = 0.0;
        for (int q = 0; q < dim; ++q)
          if (q != p) reduction += std::fabs(S(p, q)) / (hp * axes[q].width(0));
        dominant = dominant && S(p, p) / (hp * hp) >= reduction;
      }
      BOOST_TEST(op.positivity().holds == dominant);
    }
  }
}

BOOST_AUTO_TEST_CASE(positivity_report_counts_negative_off_diagonals) {
  // Uniform mesh, no drift (Phi = 0: Scharfetter–Gummel weights are 1). An interior row's entry for its x
  // neighbours is Sigma_xx/h_x^2 - |Sigma_xy|/(h_x h_y): negative iff |Sigma_xy| > Sigma_xx h_y/h_x.
  const double hx = 0.375, hy = 0.1875;
  const std::vector<meshes::Axis> axes{meshes::Axis::uniform(-6, 6, 32), meshes::Axis::uniform(-6, 6, 64)};
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_WORLD, meshes::BoxMesh(axes), 1, meshes::StencilShape::Box);
  for (double sxy : {0.3, -0.3, 0.15, -0.15}) {
    models::Matrix S(2, 2);
    S << 0.4, sxy, sxy, 0.6;  // positive definite; |Sigma_xy| > Sigma_xx h_y/h_x = 0.2 for 0.3 only
    solver::DriftDiffusionEquation eq;
    eq.potential = [](const solver::Point&) { return 0.0; };
    solver::setDiffusionMatrix(eq, S);
    const solver::FokkerPlanckOperator op(mesh, {eq}, solver::FaceFluxScheme::ScharfetterGummel);
    auto A = op.assemble();
    const auto rep = op.positivity();
    const double interiorEntry = S(0, 0) / (hx * hx) - std::fabs(sxy) / (hx * hy);
    BOOST_TEST_MESSAGE("Sigma_xy = " << sxy << ": violating rows " << rep.violatingRows << " of " << rep.rows
                                     << ", most negative " << rep.mostNegativeOffDiagonal << " (interior formula "
                                     << interiorEntry << ")");
    BOOST_TEST(rep.rows == 32 * 64);
    if (std::fabs(sxy) > S(0, 0) * hy / hx) {
      BOOST_TEST(!rep.holds);
      // Every row whose two x-faces and both y-neighbours exist has the full reduction: (32-2) * (64-2) rows.
      BOOST_TEST(rep.violatingRows >= 30 * 62);
      BOOST_TEST(std::fabs(rep.mostNegativeOffDiagonal - interiorEntry) <= 1e-12 * std::fabs(interiorEntry));
    } else {
      BOOST_TEST(rep.holds);
      BOOST_TEST(rep.violatingRows == 0);
      BOOST_TEST(rep.mostNegativeOffDiagonal == 0.0);
    }
  }
}

BOOST_AUTO_TEST_CASE(fitted_edges_keep_the_sign_and_the_gibbs_state_of_a_quadratic_potential) {
  // Strong drift (lambda = 4 on [-6, 6]^d: cell Peclet numbers up to ~20 at the walls, where the oriented flux's
  // uphill weight B(|P|) ~ 1e-8 could not pay for the cross terms) with a full Sigma, dominant on the mesh. The fitted
  // edges give a Metzler operator, and the Gibbs state exp(-Psi), Psi = lambda (x - m)^T Sigma^-1 (x - m) / 2, is an
  // exact steady state of every row whose edges' midpoint differences are all central (two cells from the walls).
  for (int dim : {2, 3}) {
    const int cells = dim == 2 ? 24 : 12;
    const std::vector<meshes::Axis> axes = uniformAxes(dim, 6.0, cells);
    const meshes::DistributedBoxMesh mesh(PETSC_COMM_SELF, meshes::BoxMesh(axes), 1, meshes::StencilShape::Box);
    models::Matrix S(dim, dim);
    if (dim == 2) S << 0.5, 0.4, 0.4, 0.5;
    else S << 0.7, 0.2, -0.1, 0.2, 0.5, 0.15, -0.1, 0.15, 0.6;
    const double lambda = 4.0;
    const models::Vector m = dim == 2 ? vec({0.7, -0.4}) : vec({0.7, -0.4, 0.3});
    solver::DriftDiffusionEquation eq;
    eq.potential = [&](const solver::Point& x) {
      double r = 0.0;
      for (int d = 0; d < dim; ++d) r += (x[d] - m[d]) * (x[d] - m[d]);
      return 0.5 * lambda * r;
    };
    solver::setDiffusionMatrix(eq, S);
    const solver::FokkerPlanckOperator op(mesh, {eq}, solver::FaceFluxScheme::ScharfetterGummel);
    auto A = op.assemble();
    BOOST_TEST(op.positivity().holds, dim << "-D: " << op.positivity().violatingRows << " rows violate");
    const models::Matrix Sinv = S.inverse();
    auto u = mesh.createVector(), Au = mesh.createVector();
    PetscScalar* a;
    VecGetArray(u, &a);
    mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
      const auto c = mesh.box().centre(i, j, k);
      models::Vector x(dim);
      for (int d = 0; d < dim; ++d) x[d] = c[d] - m[d];
      a[l] = std::exp(-0.5 * lambda * x.dot(Sinv * x));
    });
    VecRestoreArray(u, &a);
    MatMult(A, u, Au);
    PetscReal normA;
    MatNorm(A, NORM_INFINITY, &normA);
    double worst = 0.0;
    const PetscScalar* r;
    VecGetArrayRead(Au, &r);
    mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
      const std::array<PetscInt, 3> c{i, j, k};
      bool interior = true;
      for (int d = 0; d < dim; ++d) interior = interior && c[d] > 1 && c[d] < cells - 2;
      if (interior) worst = std::max(worst, std::fabs(r[l]));
    });
    VecRestoreArrayRead(Au, &r);
    BOOST_TEST_MESSAGE(dim << "-D: max |A exp(-Psi)| over the interior rows = " << worst << " (|A|_inf = " << normA
                           << ", max exp(-Psi) = 1)");
    BOOST_TEST(worst <= 1e-13 * normA);
  }
}

BOOST_AUTO_TEST_CASE(mass_is_conserved_on_graded_meshes_with_cross_terms) {
  // Geometric grading (ratio 1.1 per cell from the centre out) in every direction, cross terms on, 100 BDF2 steps.
  for (int dim : {2, 3}) {
    const auto s = dim == 2 ? problem2d() : problem3d();
    const int cells = dim == 2 ? 40 : 16;
    std::vector<meshes::Axis> axes;
    for (int a = 0; a < dim; ++a) axes.push_back(testing::geometricAxis(6.0, cells, 1.1));
    const auto r = testing::solveAnisotropic(s, axes, 2.0, 100, {2.0}, PETSC_COMM_WORLD);
    BOOST_TEST_MESSAGE(dim << "-D geometric grading: relative mass drift " << r.maxMassDrift << ", min density "
                           << r.minDensity << ", positivity violations " << r.positivity.violatingRows);
    BOOST_TEST(r.maxMassDrift <= 1e-12);
  }
}

BOOST_AUTO_TEST_CASE(ou_2d_rotated_unequal_noise_converges_at_second_order) {
  const auto s = problem2d();
  const auto ref = s.reference();
  const double T = 1.0, L = 6.0;
  const std::vector<double> orders{2.0, 5.0};
  BOOST_REQUIRE(std::isinf(ref.renyi(5.0, T)));
  const auto lawP = ref.lawP(T), lawQ = ref.lawQ(T);
  const double exactKL = ref.kl(T);
  std::vector<double> exactR;
  for (double a : orders) exactR.push_back(ref.renyi(a, T));
  std::printf("\n2-D OU on [-6, 6]^2, rotated unequal noise, to t = %.1f (BDF2, dt = T/N)\n", T);
  printMatrix("Sigma", s.sigmaP);
  printMatrix("Sigma'", s.sigmaQ);
  std::printf("exact: KL %.6e, R_2 %.6e, R_5 %.6e\n", exactKL, exactR[0], exactR[1]);
  std::printf("%6s %8s %11s %6s %11s %6s %11s %6s %11s %6s %11s %6s %11s %6s\n", "N", "h", "L1 p", "rate", "L1 q",
              "rate", "mean err", "rate", "cov err", "rate", "KL rel", "rate", "R_2 rel", "rate");
  std::vector<double> prev;
  for (int N : {32, 64, 128, 256}) {
    const double h = 2 * L / N;
    const auto r = testing::solveAnisotropic(s, uniformAxes(2, L, N), T, N, orders, PETSC_COMM_WORLD);
    const double meanErr = std::max((r.momentsP.mean - lawP.mean()).cwiseAbs().maxCoeff(),
                                    (r.momentsQ.mean - lawQ.mean()).cwiseAbs().maxCoeff());
    const double covErr = std::max(maxAbs(r.momentsP.covariance - lawP.covariance()),
                                   maxAbs(r.momentsQ.covariance - lawQ.covariance()));
    const double klErr = std::fabs(r.div.kl - exactKL) / exactKL;
    const double r2Err = std::fabs(r.div.renyi[0] - exactR[0]) / exactR[0];
    const std::vector<double> e{r.err.l1P, r.err.l1Q, meanErr, covErr, klErr, r2Err};
    std::printf("%6d %8.4f", N, h);
    for (std::size_t i = 0; i < e.size(); ++i) {
      if (prev.empty()) std::printf(" %11.3e %6s", e[i], "");
      else std::printf(" %11.3e %6.3f", e[i], rate(prev[i], e[i]));
    }
    std::printf("   R_2 %s, R_5 %s (%.3g); min p/max p %.1e; positivity violations %ld\n",
                solver::renyiStatusName(r.div.renyiStatus[0]), solver::renyiStatusName(r.div.renyiStatus[1]),
                r.div.renyi[1], r.minDensity / r.maxDensity, r.positivity.violatingRows);
    // Densities and moments from 64 -> 128 on; KL and R_2 (smaller errors, made of the density error and the
    // quadrature error, which partly cancel on coarse meshes) on the finest pair.
    if (!prev.empty() && N >= 128)
      for (std::size_t i = 0; i < e.size(); ++i)
        if (i < 4 || N == 256) BOOST_TEST(rate(prev[i], e[i]) >= 1.8, "quantity " << i << " N " << N);
    if (N == 256) {
      // R_5 = +inf (5 Sigma_q(1) - 4 Sigma_p(1) is indefinite): detected on the resolved mesh; R_2 finite.
      BOOST_TEST((r.div.renyiStatus[0] == solver::RenyiStatus::Finite));
      BOOST_TEST((r.div.renyiStatus[1] == solver::RenyiStatus::InfiniteDetected));
      BOOST_TEST(std::isinf(r.div.renyi[1]));
    }
    prev = e;
  }
}

namespace {
/// The smallest order above 1 at which the exact R_alpha(t) is +inf (MATH.md §6), by bisection on [1, 64]; +inf if
/// none below 64.
double criticalOrder(const validation::GaussianReference& ref, double T) {
  if (!std::isinf(ref.renyi(64.0, T))) return std::numeric_limits<double>::infinity();
  double lo = 1.0, hi = 64.0;
  while (hi - lo > 1e-6) {
    const double mid = 0.5 * (lo + hi);
    (std::isinf(ref.renyi(mid, T)) ? hi : lo) = mid;
  }
  return hi;
}

/// Solves `s` to each time on [-L, L]^dim with N cells per axis and checks every order's status against the closed
/// form: +inf exactly where the exact R_alpha is +inf, finite (and, where reported finite, within `tolerance`
/// relative of the exact value) elsewhere. Orders within 10 % of the critical order are printed, not asserted: there
/// the sign of the fitted P_alpha is as uncertain as the computed tails (docs/scheme.md §5).
void checkOrdersAgainstClosedForm(const AnisotropicOu& s, double L, int N, const std::vector<double>& times,
                                  const std::vector<double>& orders, double tolerance, solver::TimeIntegration ti = {}) {
  const auto ref = s.reference();
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < s.dim; ++a) axes.push_back(meshes::Axis::uniform(-L, L, N));
  for (double T : times) {
    const double crit = criticalOrder(ref, T);
    const auto r = testing::solveAnisotropic(s, axes, T, N, orders, PETSC_COMM_WORLD, ti);
    std::printf("\n%d-D OU, %d^%d cells, t = %g: exact R_alpha finite iff alpha < %.4f\n", s.dim, N, s.dim, T, crit);
    for (std::size_t k = 0; k < orders.size(); ++k) {
      const double exact = ref.renyi(orders[k], T);
      std::printf("  alpha %5.2f exact %10.5g reported %10.5g (box %10.5g) %-17s lambda_min(P_alpha) %+.4e\n",
                  orders[k], exact, r.div.renyi[k], r.div.renyiOnBox[k], solver::renyiStatusName(r.div.renyiStatus[k]),
                  r.div.renyiTailPrecision[k]);
      if (std::fabs(orders[k] - crit) <= 0.1 * crit) continue;
      if (std::isinf(exact)) {
        BOOST_TEST((r.div.renyiStatus[k] == solver::RenyiStatus::InfiniteDetected), "alpha " << orders[k] << " t " << T);
        BOOST_TEST(std::isinf(r.div.renyi[k]));
      } else {
        BOOST_TEST((r.div.renyiStatus[k] != solver::RenyiStatus::InfiniteDetected), "alpha " << orders[k] << " t " << T);
        BOOST_TEST(std::isfinite(r.div.renyi[k]));
        if (r.div.renyiStatus[k] == solver::RenyiStatus::Finite)
          BOOST_TEST(std::fabs(r.div.renyi[k] - exact) <= tolerance * exact, "alpha " << orders[k] << " t " << T);
      }
    }
  }
}
}  // namespace

BOOST_AUTO_TEST_CASE(rotated_unequal_noise_orders_are_infinite_exactly_where_the_closed_form_is) {
  // Finite orders must not be reported +inf, infinite ones must not be reported as the box's finite number (MATH.md
  // §3, §6). Early times: the covariances are still close, the critical order is high and several orders above 3
  // are finite; at t = 1 the critical order is 3.275.
  checkOrdersAgainstClosedForm(problem2d(), 6.0, 128, {0.1, 0.25, 1.0}, {1.5, 2.0, 3.0, 4.0, 5.0, 8.0, 12.0, 20.0},
                               5e-2);
  solver::TimeIntegration ti;
  ti.kspType = "gmres";
  ti.pcType = "ilu";
  checkOrdersAgainstClosedForm(problem3d(), 5.0, 48, {0.25, 1.0}, {1.5, 2.0, 3.0, 5.0, 8.0, 20.0}, 5e-2, ti);
}

namespace {
// One refinement table: errors of p and q (L1), of the moments, of KL and of R_alpha (relative) against the closed
// forms. Columns of TableRow::e: L1 p, L1 q, mean, covariance, KL, then one per order.
struct TableRow {
  int N;
  double h;
  std::vector<double> e;
};

std::vector<TableRow> refinementTable(const AnisotropicOu& s, const std::vector<int>& Ns, double T,
                                      const std::function<std::vector<meshes::Axis>(int)>& axesFor,
                                      const solver::TimeIntegration& ti, const char* title,
                                      const std::vector<double>& orders = {2.0},
                                      const solver::SpatialAccuracy& accuracy = {}, long stepsPerCell = 1) {
  const auto ref = s.reference();
  const auto lawP = ref.lawP(T), lawQ = ref.lawQ(T);
  const double exactKL = ref.kl(T);
  std::printf("\n%s\n%6s %8s %10s %6s %10s %6s %10s %6s %10s %6s %10s %6s", title, "N", "h_max", "L1 p", "rate",
              "L1 q", "rate", "mean err", "rate", "cov err", "rate", "KL rel", "rate");
  for (double a : orders) std::printf("   R_%-4g rel %6s", a, "rate");
  std::printf("\n");
  std::vector<TableRow> rows;
  for (int N : Ns) {
    const auto axes = axesFor(N);
    double hmax = 0.0;
    for (const auto& a : axes)
      for (int i = 0; i < a.cells(); ++i) hmax = std::max(hmax, a.width(i));
    const auto r = testing::solveAnisotropic(s, axes, T, stepsPerCell * N, orders, PETSC_COMM_WORLD, ti, false, accuracy);
    const double meanErr = std::max((r.momentsP.mean - lawP.mean()).cwiseAbs().maxCoeff(),
                                    (r.momentsQ.mean - lawQ.mean()).cwiseAbs().maxCoeff());
    const double covErr = std::max(maxAbs(r.momentsP.covariance - lawP.covariance()),
                                   maxAbs(r.momentsQ.covariance - lawQ.covariance()));
    // KL and R_alpha errors signed (a sign change between two meshes makes their rate meaningless).
    TableRow row{N, hmax, {r.err.l1P, r.err.l1Q, meanErr, covErr, (r.div.kl - exactKL) / exactKL}};
    for (std::size_t k = 0; k < orders.size(); ++k) {
      const double exact = ref.renyi(orders[k], T);
      row.e.push_back((r.div.renyi[k] - exact) / exact);
    }
    std::printf("%6d %8.4f", N, hmax);
    for (std::size_t i = 0; i < row.e.size(); ++i) {
      if (rows.empty()) std::printf(" %10.3e %6s", row.e[i], "");
      else std::printf(" %10.3e %6.3f", row.e[i], rate(std::fabs(rows.back().e[i]), std::fabs(row.e[i]), rows.back().h / hmax));
    }
    std::printf("   (min p/max p %.1e, positivity violations %ld, mass drift %.1e)\n", r.minDensity / r.maxDensity,
                r.positivity.violatingRows, r.maxMassDrift);
    rows.push_back(row);
  }
  return rows;
}
}  // namespace

BOOST_AUTO_TEST_CASE(ou_3d_rotated_unequal_noise_converges_at_second_order) {
  const auto s = problem3d();
  printMatrix("\nSigma", s.sigmaP);
  printMatrix("Sigma'", s.sigmaQ);
  solver::TimeIntegration ti;
  ti.kspType = "gmres";
  ti.pcType = "ilu";
  const auto rows = refinementTable(
      s, {16, 32, 64}, 1.0, [](int N) { return uniformAxes(3, 5.0, N); }, ti,
      "3-D OU on [-5, 5]^3, rotated unequal noise, to t = 1 (BDF2, dt = T/N, GMRES + ILU)", {1.5, 2.0});
  // Asserted on the finest pair: densities, moments, KL and R_1.5. R_2 (printed) weights the far tail of q, where
  // the relative error of the discrete solution is largest; on these meshes it is not yet in its asymptotic range
  // (docs/scheme.md).
  for (std::size_t i = 0; i < 6; ++i)
    BOOST_TEST(rate(std::fabs(rows[rows.size() - 2].e[i]), std::fabs(rows.back().e[i])) >= 1.8, "quantity " << i);
}

// Fourth-order fluxes (docs/scheme.md §7), BDF of order 4 in time so that the time error stays below the spatial
// one: the densities converge at fourth order in 2-D and 3-D, rotated unequal noise.
struct FourthOrderTime {
  FourthOrderTime() { PetscOptionsSetValue(nullptr, "-ts_bdf_order", "4"); }
  ~FourthOrderTime() { PetscOptionsClearValue(nullptr, "-ts_bdf_order"); }
};

BOOST_AUTO_TEST_CASE(fourth_order_fluxes_converge_at_fourth_order) {
  const FourthOrderTime bdf4;
  solver::SpatialAccuracy fourth;
  fourth.order = 4;
  const auto rows2 = refinementTable(
      problem2d(), {32, 64, 128}, 1.0, [](int N) { return uniformAxes(2, 6.0, N); }, {},
      "2-D OU on [-6, 6]^2, rotated unequal noise, spatial order 4 (BDF4, dt = T/N)", {2.0}, fourth);
  solver::TimeIntegration ti;
  ti.kspType = "gmres";
  ti.pcType = "ilu";
  const auto rows3 = refinementTable(
      problem3d(), {16, 32, 48}, 1.0, [](int N) { return uniformAxes(3, 5.0, N); }, ti,
      "3-D OU on [-5, 5]^3, rotated unequal noise, spatial order 4 (BDF4, dt = T/N, GMRES + ILU)", {1.5}, fourth);
  // L1 errors of p and q on the finest pairs (measured 3.90, 3.87 in 2-D; 4.43, 4.48 in 3-D); the moments, KL and
  // R_alpha are printed (their small errors mix the time integrator's start-up and the quadrature).
  for (std::size_t i = 0; i < 2; ++i) {
    BOOST_TEST(rate(rows2[1].e[i], rows2[2].e[i]) >= 3.5, "2-D quantity " << i);
    BOOST_TEST(rate(rows3[1].e[i], rows3[2].e[i], rows3[1].h / rows3[2].h) >= 3.5, "3-D quantity " << i);
  }
}

BOOST_AUTO_TEST_CASE(fourth_order_flux_is_exact_for_cubics_and_conservative) {
  // With Phi = 0, on the rows whose faces all carry the fourth-order flux, A applied to the cell averages of a cubic
  // u gives the cell average of div(Sigma grad u) (a linear function) exactly: the face formulas are exact for
  // cubics. And with a drift, volume-weighted column sums vanish (one flux per face).
  for (int dim : {2, 3}) {
    const int N = dim == 2 ? 12 : 8;
    std::vector<meshes::Axis> axes;
    for (int a = 0; a < dim; ++a) axes.push_back(meshes::Axis::uniform(-1.0, 1.0 + 0.5 * a, N));
    const meshes::DistributedBoxMesh mesh(PETSC_COMM_SELF, meshes::BoxMesh(axes), 1, meshes::StencilShape::Box, 2);
    solver::SpatialAccuracy fourth;
    fourth.order = 4;
    fourth.maxPeclet = 1e300;
    models::Matrix S(dim, dim);
    if (dim == 2) S << 0.7, 0.25, 0.25, 0.4;
    else S << 0.7, 0.2, -0.1, 0.2, 0.5, 0.15, -0.1, 0.15, 0.6;
    solver::DriftDiffusionEquation eq;
    eq.potential = [](const solver::Point&) { return 0.0; };
    solver::setDiffusionMatrix(eq, S);
    const solver::FokkerPlanckOperator op(mesh, {eq}, solver::FaceFluxScheme::ScharfetterGummel, fourth);
    auto A = op.assemble();
    // u = sum of cubic monomials; its cell averages by Gauss–Legendre (exact for cubics): 2 points per axis.
    auto cubic = [dim](const std::array<double, 3>& x) {
      double u = 0.3 * x[0] * x[0] * x[0] - 0.5 * x[0] * x[1] * x[1] + 0.2 * x[0] * x[1] + 0.7 * x[1] * x[1] * x[1];
      if (dim == 3) u += 0.4 * x[2] * x[2] * x[2] - 0.6 * x[0] * x[1] * x[2] + 0.3 * x[2] * x[2] * x[1];
      return u;
    };
    // div(Sigma grad u) = sum_ab Sigma_ab d_a d_b u, linear: its cell average is its value at the centre.
    auto operatorOfCubic = [&](const std::array<double, 3>& x) {
      double H[3][3] = {};
      H[0][0] = 1.8 * x[0];
      H[0][1] = H[1][0] = -1.0 * x[1] + 0.2;
      H[1][1] = -1.0 * x[0] + 4.2 * x[1];
      if (dim == 3) {
        H[2][2] = 2.4 * x[2] + 0.6 * x[1];
        H[0][1] += -0.6 * x[2];
        H[1][0] = H[0][1];
        H[0][2] = H[2][0] = -0.6 * x[1];
        H[1][2] = H[2][1] = -0.6 * x[0] + 0.6 * x[2];
      }
      double sum = 0.0;
      for (int a = 0; a < dim; ++a)
        for (int b = 0; b < dim; ++b) sum += S(a, b) * H[a][b];
      return sum;
    };
    auto u = mesh.createVector(), Au = mesh.createVector();
    PetscScalar* a;
    VecGetArray(u, &a);
    const double g = 0.5 / std::sqrt(3.0);
    mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
      const auto [lo, hi] = mesh.box().cellBounds(i, j, k);
      double avg = 0.0;
      const int nk = dim == 3 ? 2 : 1;
      for (int p = 0; p < 2; ++p)
        for (int q = 0; q < 2; ++q)
          for (int r = 0; r < nk; ++r) {
            std::array<double, 3> x{};
            const int idx[3] = {p, q, r};
            for (int d = 0; d < dim; ++d)
              x[d] = 0.5 * (lo[d] + hi[d]) + (idx[d] ? g : -g) * (hi[d] - lo[d]);
            avg += cubic(x);
          }
      a[l] = avg / (dim == 3 ? 8.0 : 4.0);
    });
    VecRestoreArray(u, &a);
    MatMult(A, u, Au);
    const PetscScalar* r;
    VecGetArrayRead(Au, &r);
    double worst = 0.0;
    long checked = 0;
    mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
      const std::array<PetscInt, 3> c{i, j, k};
      for (int d = 0; d < dim; ++d)
        if (c[d] < 3 || c[d] > N - 4) return;  // rows all of whose faces are fourth order
      worst = std::max(worst, std::fabs(r[l] - operatorOfCubic(mesh.box().centre(i, j, k))));
      ++checked;
    });
    VecRestoreArrayRead(Au, &r);
    BOOST_TEST(checked > 0);
    BOOST_TEST(worst <= 1e-11, dim << "-D: largest deviation " << worst);
    // Conservation with a drift: sum_c |c| (A u)_c = 0 for every u, i.e. the volume-weighted column sums vanish.
    solver::DriftDiffusionEquation drift = eq;
    drift.potential = [](const solver::Point& x) { return 0.5 * (x[0] - 0.2) * (x[0] - 0.2) + 0.3 * x[1] * x[1] * x[1]; };
    const solver::FokkerPlanckOperator opDrift(mesh, {drift}, solver::FaceFluxScheme::ScharfetterGummel, fourth);
    auto B = opDrift.assemble();
    auto w = mesh.createVector(), colSums = mesh.createVector();
    PetscScalar* wv;
    VecGetArray(w, &wv);
    for (std::size_t l = 0; l < mesh.ownedVolumes().size(); ++l) wv[l] = mesh.ownedVolumes()[l];
    VecRestoreArray(w, &wv);
    MatMultTranspose(B, w, colSums);
    PetscReal norm;
    VecNorm(colSums, NORM_INFINITY, &norm);
    BOOST_TEST(opDrift.highOrderFaces() > 0);
    BOOST_TEST(norm <= 1e-12, dim << "-D: largest column sum " << norm);
  }
}

BOOST_AUTO_TEST_CASE(graded_meshes_order_of_convergence) {
  const auto s = problem2d();
  const auto smooth = refinementTable(
      s, {32, 64, 128, 256}, 1.0,
      [](int N) { return std::vector<meshes::Axis>{testing::sinhAxis(6.0, N, 1.5), testing::sinhAxis(6.0, N, 1.5)}; },
      {}, "2-D OU, smoothly graded mesh x = 6 sinh(1.5 xi)/sinh(1.5) (widths 2.35x larger at the walls)");
  const auto rough = refinementTable(
      s, {32, 64, 128, 256}, 1.0,
      [](int N) { return std::vector<meshes::Axis>{testing::roughAxis(6.0, N, 0.2), testing::roughAxis(6.0, N, 0.2)}; },
      {}, "2-D OU, rough mesh: widths alternate h(1 +- 0.2)");
  // Both families converge at second order (the rough one by supraconvergence: its flux error is O(h) but
  // alternates in sign from face to face): densities and moments, on the finest pair. KL and R_2 are printed; on
  // graded meshes their small errors change sign under refinement (the quadrature and the density errors partly
  // cancel), so a rate computed from them says nothing.
  for (const auto* rows : {&smooth, &rough})
    for (std::size_t i = 0; i < 4; ++i)
      BOOST_TEST(rate((*rows)[rows->size() - 2].e[i], rows->back().e[i], (*rows)[rows->size() - 2].h / rows->back().h) >= 1.8,
                 "quantity " << i);
}

BOOST_AUTO_TEST_CASE(fipy_anisotropic_example) {
  // FiPy's anisotropic Fokker–Planck example: 2-D OU on [-6, 6]^2, p_0 = N(0, 0.5 I), drift toward m = (1, 0.5)
  // (lambda = 1), Sigma = [[0.5, 0.4], [0.4, 0.5]] (eigenvalues 0.9 and 0.1: the law is 3 times narrower across the
  // diagonal than along it), t = 2. q: the same with Sigma' = 0.5 I.
  // Targets at 128^2 cells: L1 error of p <= 3e-3, no value below -1e-14 max p, cross-covariance within 1e-3 of the
  // exact one at t = 2 (0.4 (1 - e^{-4}) = 0.39267) and at the stationary state (A C + C A^T = 2 Sigma with A = I:
  // C = Sigma, 0.4). Both spatial orders meet them at 128^2. Order 2 (the fitted edges, docs/scheme.md §3) converges
  // at second order, and its stationary state is the exact discrete Gibbs state exp(-Psi) (the quadratic potential's
  // midpoint differences are exact): the stationary cross-covariance is exact up to the wall rows, the cell
  // moments' w^2/12 correction and the damping of the other modes.
  AnisotropicOu s;
  s.dim = 2;
  s.sigmaP = models::Matrix(2, 2);
  s.sigmaP << 0.5, 0.4, 0.4, 0.5;
  s.sigmaQ = 0.5 * models::Matrix::Identity(2, 2);
  s.centreP = s.centreQ = vec({1.0, 0.5});
  s.m0 = vec({0.0, 0.0});
  s.C0 = 0.5 * models::Matrix::Identity(2, 2);
  const auto ref = s.reference();
  const double T = 2.0;
  const auto law = ref.lawP(T);
  // Stationary state: backward Euler with dt = 0.5 to t = 40 damps every non-stationary mode (decay rate >= 1,
  // factor 1/(1 + 0.5) per step) by (2/3)^80 ~ 1e-14.
  solver::TimeIntegration be;
  be.tsType = "beuler";
  std::printf("\nFiPy example (BDF2, dt = 0.01 to t = 2; stationary: backward Euler, dt = 0.5 to t = 40)\n%6s %6s %11s "
              "%6s %12s %12s %6s %12s %10s\n",
              "order", "N", "L1 p", "rate", "min p/max p", "cov_xy(2) err", "rate", "stat. err", "violations");
  double prevL1 = 0, prevCross = 0;
  for (const auto& [order, N] : {std::pair{2, 128}, std::pair{2, 256}, std::pair{4, 128}}) {
    const auto axes = uniformAxes(2, 6.0, N);
    solver::SpatialAccuracy acc;
    acc.order = order;
    const auto r = testing::solveAnisotropic(s, axes, T, 100 * N / 64, {2.0}, PETSC_COMM_WORLD, {}, false, acc);
    const auto st = testing::solveAnisotropic(s, axes, 40.0, 80, {2.0}, PETSC_COMM_WORLD, be, false, acc);
    const double crossErr = std::fabs(r.momentsP.covariance(0, 1) - law.covariance()(0, 1));
    const double statErr = std::fabs(st.momentsP.covariance(0, 1) - 0.4);
    const bool refined = order == 2 && N == 256;
    std::printf("%6d %6d %11.3e %6s %12.3e %12.3e %6s %12.3e %10ld\n", order, N, r.err.l1P,
                refined ? std::to_string(rate(prevL1, r.err.l1P)).substr(0, 5).c_str() : "",
                r.minDensity / r.maxDensity, crossErr,
                refined ? std::to_string(rate(prevCross, crossErr)).substr(0, 5).c_str() : "", statErr,
                r.positivity.violatingRows);
    {
      BOOST_TEST(r.err.l1P <= 3e-3, "order " << order << ", N " << N);
      BOOST_TEST(r.minDensity >= -1e-14 * r.maxDensity, "order " << order << ", N " << N);
      BOOST_TEST(crossErr <= 1e-3, "order " << order << ", N " << N);
      BOOST_TEST(statErr <= 1e-3, "order " << order << ", N " << N);
      BOOST_TEST(r.maxMassDrift <= 1e-12);
    }
    if (order == 2) {
      BOOST_TEST(r.positivity.holds);  // the fitted edges: a Metzler operator for any drift (Sigma dominant on the mesh)
      BOOST_TEST(statErr <= 1e-9, "order 2, N " << N << ": stationary cov_xy error " << statErr);
    }
    if (refined) {
      BOOST_TEST(rate(prevL1, r.err.l1P) >= 1.8);
      BOOST_TEST(rate(prevCross, crossErr) >= 1.8);
    }
    prevL1 = r.err.l1P, prevCross = crossErr;
  }
}
