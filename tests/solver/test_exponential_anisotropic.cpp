// The exponential integrator for operators without detailed balance (full-tensor and unequal noise: the forward
// Chebyshev expansion with a posteriori control, solver/propagation/ExponentialEvolution.hpp, docs/scheme.md §3): the
// box-stencil product against the assembled matrix; the time error negligible against BDF2 with a small step at the
// same mesh (2-D and 3-D, against the exact Gaussian laws) and the error's second order in h; the integrator's own
// estimate against a reference of a much tighter tolerance; mass to round-off; restart bit for bit; 2 ranks equal 1
// rank. Registered with RANKS 2.
#define BOOST_TEST_MODULE solver_exponential_anisotropic
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <utility>
#include <vector>

#include "PetscFixture.hpp"
#include "test_anisotropic_problem.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {
std::vector<meshes::Axis> cube(int dim, double L, int cells) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < dim; ++a) axes.push_back(meshes::Axis::uniform(-L, L, cells));
  return axes;
}

solver::TimeIntegration exponential() {
  solver::TimeIntegration ti;
  ti.tsType = "exponential";
  return ti;
}

/// The run's largest relative difference from another's state (both kept, rank-local), relative to the other's
/// largest value; collective.
double relativeDifference(const std::vector<double>& a, const std::vector<double>& b) {
  double local[2] = {0.0, 0.0};
  for (std::size_t i = 0; i < a.size(); ++i) {
    local[0] = std::max(local[0], std::fabs(a[i] - b[i]));
    local[1] = std::max(local[1], std::fabs(b[i]));
  }
  double global[2];
  MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD);
  return global[0] / global[1];
}
}  // namespace

// Both forms of the box stored as the rows stream in (StencilOperator::buildStreamed): without drift on a uniform
// mesh the diagonal edges' coefficients are the same along every run of a line (the nominal width, also where it is
// not a binary fraction: 10/24, 10/12) and kept as one value per run (compressed); with drift (the fitted edges carry
// it, FokkerPlanckOperator::buildFittedEdgeRow) or on a graded mesh they vary and get full arrays from the row where
// they first vary. Either way the product equals the assembled matrix's to round-off.
BOOST_AUTO_TEST_CASE(box_stencil_product_equals_the_assembled_matrix) {
  for (const auto& [dim, cells, graded, drift] :
       {std::tuple{2, 24, false, true}, std::tuple{2, 32, false, true}, std::tuple{2, 24, true, true},
        std::tuple{3, 10, false, true}, std::tuple{3, 12, false, true}, std::tuple{3, 12, true, true},
        std::tuple{2, 24, false, false}, std::tuple{3, 12, false, false}}) {
    const bool compressed = !graded && !drift;
    const auto s = testing::rotatedUnequalProblem(dim);
    std::vector<meshes::Axis> axes = cube(dim, 5.0, cells);
    if (graded) axes[0] = meshes::Axis::graded(-5.0, 5.0, cells, 1.05);
    const meshes::DistributedBoxMesh mesh(PETSC_COMM_WORLD, meshes::BoxMesh(axes), 2, meshes::StencilShape::Box);
    const solver::LangevinDiscretisation disc(mesh, s.problem(), solver::FaceFluxScheme::ScharfetterGummel);
    // Without drift: the same two diffusion matrices, zero potentials.
    std::vector<solver::DriftDiffusionEquation> pure(2);
    for (int f = 0; f < 2; ++f) {
      pure[f].potential = [](const solver::Point&) { return 0.0; };
      solver::setDiffusionMatrix(pure[f], f == 0 ? s.sigmaP : s.sigmaQ);
    }
    const solver::FokkerPlanckOperator driftless(mesh, pure, solver::FaceFluxScheme::ScharfetterGummel);
    const solver::FokkerPlanckOperator& op = drift ? disc.spatialOperator() : driftless;
    solver::StencilOperator star, box;
    BOOST_TEST(!op.buildStencil(star));  // a star refuses the cross terms
    BOOST_REQUIRE(op.buildStencil(box, solver::StencilOperator::Shape::Box));
    BOOST_TEST(box.points() == (dim == 2 ? 9 : 19));  // the edges, no corners: the cross terms couple pairs of axes
    BOOST_TEST(box.compressed() == compressed,
               dim << "-D, " << cells << " cells per axis, graded " << graded << ", drift " << drift);
    BOOST_TEST(box.storedPoints() == (compressed ? 2 * dim + 1 : box.points()));
    auto x = mesh.createVector(), zero = mesh.createVector(), r = mesh.createVector(), y = mesh.createVector();
    disc.setInitialState(x);
    meshes::VecHandle ghosted;
    if (!box.ghostedIsOwned()) FPDP_PETSC(DMCreateLocalVector(mesh.dm(), ghosted.out()));
    FPDP_PETSC(solver::residual(box, mesh.dm(), x, zero, r, ghosted));  // r = -A x
    const auto A = op.assemble();
    FPDP_PETSC(MatMult(A, x, y));
    PetscReal norm, diff;
    FPDP_PETSC(VecNorm(y, NORM_INFINITY, &norm));
    FPDP_PETSC(VecAXPY(r, 1.0, y));
    FPDP_PETSC(VecNorm(r, NORM_INFINITY, &diff));
    BOOST_TEST(norm > 0.0);
    BOOST_TEST(diff <= 1e-13 * norm, dim << "-D, " << cells << " cells, graded " << graded << ": |stencil - matrix| = "
                                         << diff << " of " << norm);
  }
}

// L1 errors of p and q and the R_2 error against the exact laws: the exponential integrator's equal the BDF2 run's
// at the same mesh (BDF2 with a step small enough that its time error is negligible too), and converge at second
// order in h.
BOOST_AUTO_TEST_CASE(time_error_is_negligible_and_the_error_converges_at_second_order) {
  const auto s = testing::rotatedUnequalProblem(2);
  const auto ref = s.reference();
  const double T = 1.0, L = 6.0;
  const double exactR2 = ref.renyi(2.0, T);
  std::printf("\n2-D rotated unequal noise to t = 1: exponential (a posteriori) against BDF2 (dt = T / 4N)\n");
  std::printf("%5s %11s %11s %11s %11s %11s %11s %9s %6s %9s\n", "N", "L1 p exp", "L1 p bdf", "L1 q exp", "L1 q bdf",
              "R_2 exp", "R_2 bdf", "estimate", "rate", "products");
  double previous = 0.0;
  for (int N : {32, 64, 128}) {
    const auto e = testing::solveAnisotropic(s, cube(2, L, N), T, 1, {2.0}, PETSC_COMM_WORLD, exponential());
    const auto b = testing::solveAnisotropic(s, cube(2, L, N), T, 4 * N, {2.0}, PETSC_COMM_WORLD);
    const double r2e = std::fabs(e.div.renyi[0] - exactR2) / exactR2, r2b = std::fabs(b.div.renyi[0] - exactR2) / exactR2;
    const double rateP = previous > 0.0 ? testing::rate(previous, e.err.l1P) : 0.0;
    std::printf("%5d %11.4e %11.4e %11.4e %11.4e %11.4e %11.4e %9.2e %6.3f %9ld\n", N, e.err.l1P, b.err.l1P,
                e.err.l1Q, b.err.l1Q, r2e, r2b, e.integratorEstimate, rateP, e.products);
    BOOST_TEST(e.solver.find("a posteriori") != std::string::npos, e.solver);
    BOOST_TEST(std::fabs(e.err.l1P - b.err.l1P) <= 0.01 * e.err.l1P, "N " << N);
    BOOST_TEST(std::fabs(e.err.l1Q - b.err.l1Q) <= 0.01 * e.err.l1Q, "N " << N);
    // The R_2 values themselves: their difference is the time error, far below the spatial error.
    // (At N = 32 the mesh does not resolve R_2: 18.8 and 22.5 against 1.62, each its integrator's noise.)
    if (N >= 64)
      BOOST_TEST(std::fabs(e.div.renyi[0] - b.div.renyi[0]) <= 0.05 * std::fabs(e.div.renyi[0] - exactR2), "N " << N);
    if (N >= 64) BOOST_TEST(rateP >= 1.8, "N " << N);
    previous = e.err.l1P;
  }
}

BOOST_AUTO_TEST_CASE(time_error_is_negligible_in_3d) {
  const auto s = testing::rotatedUnequalProblem(3);
  const auto e = testing::solveAnisotropic(s, cube(3, 5.0, 20), 1.0, 1, {2.0}, PETSC_COMM_WORLD, exponential());
  const auto b = testing::solveAnisotropic(s, cube(3, 5.0, 20), 1.0, 80, {2.0}, PETSC_COMM_WORLD);
  BOOST_TEST_MESSAGE("3-D 20^3: L1 p exponential " << e.err.l1P << ", BDF2 " << b.err.l1P << "; L1 q " << e.err.l1Q
                                                   << ", " << b.err.l1Q << "; " << e.products << " products");
  BOOST_TEST(std::fabs(e.err.l1P - b.err.l1P) <= 0.01 * e.err.l1P);
  BOOST_TEST(std::fabs(e.err.l1Q - b.err.l1Q) <= 0.01 * e.err.l1Q);
}

// The Chebyshev expansion's estimate (the sum over the substeps of the truncation estimates, relative to max |u|) against the actual
// difference from a run with a tolerance a thousand times tighter and growth limited to 4: the estimate bounds it,
// and both are far below the spatial error.
BOOST_AUTO_TEST_CASE(the_error_estimate_bounds_the_error_of_a_much_tighter_reference) {
  const auto s = testing::rotatedUnequalProblem(2);
  for (const double T : {0.2, 2.0}) {
    solver::ExponentialSettings chebyshev;  // the default: the Chebyshev expansion
    const auto run = testing::solveAnisotropic(s, cube(2, 6.0, 48), T, 1, {2.0}, PETSC_COMM_WORLD, exponential(),
                                               true, {}, chebyshev);
    solver::ExponentialSettings tight = chebyshev;
    tight.aposterioriTolerance = 1e-3 * solver::kAposterioriTolerance;
    tight.largestGrowth = 4.0;
    const auto ref =
        testing::solveAnisotropic(s, cube(2, 6.0, 48), T, 1, {2.0}, PETSC_COMM_WORLD, exponential(), true, {}, tight);
    const double actual = relativeDifference(run.state, ref.state);
    BOOST_TEST_MESSAGE("t = " << T << ": estimate " << run.integratorEstimate << ", difference from the reference "
                              << actual << " (reference estimate " << ref.integratorEstimate << ", "
                              << run.products << " against " << ref.products << " products)");
    BOOST_TEST(run.integratorEstimate > 0.0);
    BOOST_TEST(actual <= run.integratorEstimate);
    BOOST_TEST(run.integratorEstimate <= 1e-10);
    BOOST_TEST(ref.products > run.products);
  }
}

// The positive series' weights: the Poisson probabilities (against lgamma, to the relative accuracy the ratios from
// the mode keep), summing to 1, and carried past the mode until the weighted tail falls geometrically.
BOOST_AUTO_TEST_CASE(the_positive_series_weights_are_the_poisson_probabilities) {
  for (const double lambda : {0.3, 7.5, 120.0, 5000.0}) {
    for (const double growth : {1.0, 1.3}) {
      const auto w = solver::poissonWeights(lambda, growth);
      double sum = 0.0, worst = 0.0;
      for (std::size_t k = 0; k < w.size(); ++k) {
        sum += w[k];
        const double exact =
            std::exp(-lambda + static_cast<double>(k) * std::log(lambda) - std::lgamma(static_cast<double>(k) + 1.0));
        if (exact > 1e-200) worst = std::max(worst, std::fabs(w[k] - exact) / exact);
      }
      BOOST_TEST_MESSAGE("lambda " << lambda << ", growth " << growth << ": " << w.size() << " weights, largest "
                                   << "relative difference from lgamma " << worst);
      BOOST_TEST(std::fabs(sum - 1.0) <= 1e-14);
      BOOST_TEST(worst <= 1e-9 * std::max(1.0, std::sqrt(lambda)));  // lgamma's own error grows with k
      BOOST_TEST(w.back() * std::sqrt(lambda + 1.0) <= 1e-299);
      BOOST_TEST(lambda * growth / static_cast<double>(w.size()) <= 0.5);
    }
  }
  BOOST_CHECK_THROW(solver::poissonWeights(-1.0), std::invalid_argument);
  BOOST_CHECK_THROW(solver::poissonWeights(1e9), std::invalid_argument);
}

// The positive series knows every cell to a relative round-off, however far below the peak. A diagonal Sigma, a
// quadratic potential centred at m, and a start at the Gibbs state of one centred elsewhere: the law moves, its far
// tails by a hundred orders of magnitude. exp(T A) u is computed in one interval and as exp(T A / 16)^16 in sixteen:
// the truncations and the rounding differ, the exact results do not, so the two agree cell by cell to a relative
// round-off down to the smallest cell (1e-95 of the peak), and the truncation bound is 1e-60 of the peak. The
// Chebyshev expansion's bound is its tolerance relative to the peak (1e-11 here): the cells below it are not known
// to it, although on this problem its two results agree to 1.6e-10 (printed for comparison).
BOOST_AUTO_TEST_CASE(the_positive_series_is_relatively_accurate_in_every_cell) {
  const int cells = 24;
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_WORLD, meshes::BoxMesh(cube(2, 6.0, cells)), 1,
                                        meshes::StencilShape::Box);
  models::Matrix S(2, 2);
  S << 0.5, 0.0, 0.0, 0.2;
  const double lambda = 2.0, T = 2.0;
  const double m[2] = {0.7, -0.4}, start[2] = {-2.0, 1.5};
  solver::DriftDiffusionEquation eq;
  eq.potential = [&](const solver::Point& x) {
    return 0.5 * lambda * ((x[0] - m[0]) * (x[0] - m[0]) + (x[1] - m[1]) * (x[1] - m[1]));
  };
  solver::setDiffusionMatrix(eq, S);
  const solver::FokkerPlanckOperator op(mesh, {eq}, solver::FaceFluxScheme::ScharfetterGummel);
  auto u0 = mesh.createVector();
  PetscScalar* a;
  VecGetArray(u0, &a);
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const auto c = mesh.box().centre(i, j, k);
    a[l] = std::exp(-0.5 * lambda *
                    ((c[0] - start[0]) * (c[0] - start[0]) / S(0, 0) + (c[1] - start[1]) * (c[1] - start[1]) / S(1, 1)));
  });
  VecRestoreArray(u0, &a);
  for (const bool positive : {true, false}) {
    std::vector<double> states[2];
    double bound = 0.0;
    for (const long intervals : {1L, 16L}) {
      solver::ExponentialSettings settings{T / 16.0, 16, 16 / intervals};
      settings.positiveSeries = positive;
      solver::ExponentialEvolution evo(mesh, op, settings);
      BOOST_TEST(evo.positiveSeries() == positive);
      auto u = mesh.createVector();
      VecCopy(u0, u);
      evo.run(u, [](long, double, Vec) {});
      const PetscScalar* x;
      PetscInt n;
      VecGetLocalSize(u, &n);
      VecGetArrayRead(u, &x);
      states[intervals == 1 ? 0 : 1].assign(x, x + n);
      VecRestoreArrayRead(u, &x);
      bound = std::max(bound, evo.stateErrorBound());
    }
    double local[3] = {0.0, 1.0, 0.0};  // the largest relative difference, the smallest and the largest value
    for (std::size_t i = 0; i < states[0].size(); ++i) {
      const double x = states[0][i], y = states[1][i];
      local[0] = std::max(local[0], std::fabs(x - y) / std::fabs(y));
      local[1] = std::min(local[1], std::fabs(y));
      local[2] = std::max(local[2], std::fabs(y));
    }
    double worst = 0.0, smallest = 0.0, largest = 0.0;
    MPI_Allreduce(&local[0], &worst, 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD);
    MPI_Allreduce(&local[1], &smallest, 1, MPI_DOUBLE, MPI_MIN, PETSC_COMM_WORLD);
    MPI_Allreduce(&local[2], &largest, 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD);
    BOOST_TEST_MESSAGE((positive ? "positive series" : "Chebyshev")
                       << ": one interval against sixteen, largest relative difference " << worst
                       << " (smallest cell " << smallest / largest << " of the largest; state error bound " << bound
                       << ")");
    if (positive) {
      BOOST_TEST(smallest <= 1e-95 * largest);
      BOOST_TEST(worst <= 1e-12);
      BOOST_TEST(bound <= 1e-55 * largest);
    }
  }
}

// Graded meshes (full cross-diffusion arrays, the face widths) and uniform ones whose width is not a binary fraction
// (one value per run, the nominal width for the cross terms, AnisotropicDiffusion.hpp): mass to round-off on both.
BOOST_AUTO_TEST_CASE(mass_is_kept_to_round_off_on_graded_and_uniform_meshes) {
  for (const auto& [dim, graded] : {std::pair{2, true}, std::pair{3, true}, std::pair{2, false}, std::pair{3, false}}) {
    const auto s = testing::rotatedUnequalProblem(dim);
    std::vector<meshes::Axis> axes;
    for (int a = 0; a < dim; ++a)
      axes.push_back(graded ? testing::geometricAxis(6.0, dim == 2 ? 40 : 16, 1.1)
                            : meshes::Axis::uniform(-6.0, 6.0, dim == 2 ? 42 : 18));  // widths 2/7, 2/3
    const auto r = testing::solveAnisotropic(s, axes, 2.0, 4, {2.0}, PETSC_COMM_WORLD, exponential());
    BOOST_TEST_MESSAGE(dim << "-D, graded " << graded << ": relative mass drift " << r.maxMassDrift
                           << ", min/max density " << r.minDensity / r.maxDensity << ", positivity violations "
                           << r.positivity.violatingRows);
    BOOST_TEST(r.maxMassDrift <= 1e-13);
    // exp(tA) of a Metzler matrix is non-negative; the truncation may leave values of the tolerance's size.
    if (r.positivity.holds) BOOST_TEST(r.minDensity >= -1e-12 * r.maxDensity);
  }
}

BOOST_AUTO_TEST_CASE(two_ranks_equal_one_rank_and_restart_is_bit_identical) {
  PetscMPIInt size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  BOOST_REQUIRE(size >= 2);  // registered with mpiexec -n 2
  for (int dim : {2, 3}) {
    const auto s = testing::rotatedUnequalProblem(dim);
    const auto axes = cube(dim, 5.0, dim == 2 ? 40 : 14);
    const auto par = testing::solveAnisotropic(s, axes, 1.0, 1, {2.0}, PETSC_COMM_WORLD, exponential());
    const auto ser = testing::solveAnisotropic(s, axes, 1.0, 1, {2.0}, PETSC_COMM_SELF, exponential());
    // The same terms and substeps, the same estimate (to round-off: the initial state is normalised by a sum over
    // the ranks); the sums of the functionals differ in their order only.
    BOOST_TEST(par.products == ser.products);
    BOOST_TEST(std::fabs(par.integratorEstimate - ser.integratorEstimate) <= 1e-12 * ser.integratorEstimate);
    BOOST_TEST(std::fabs(par.err.l1P - ser.err.l1P) <= 1e-12 * ser.err.l1P);
    BOOST_TEST(std::fabs(par.div.kl - ser.div.kl) <= 1e-12 * ser.div.kl);
  }
  // Restart: resumed from the state at an output step, the same later steps to the last bit.
  const auto s = testing::rotatedUnequalProblem(2);
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_WORLD, meshes::BoxMesh(cube(2, 5.0, 32)), 2,
                                        meshes::StencilShape::Box);
  const solver::LangevinDiscretisation disc(mesh, s.problem(), solver::FaceFluxScheme::ScharfetterGummel);
  const solver::ExponentialSettings settings{0.1, 10, 4};
  solver::ExponentialEvolution evo(mesh, disc.spatialOperator(), settings);
  auto u = mesh.createVector(), u4 = mesh.createVector();
  disc.setInitialState(u);
  solver::IntegratorState at4;
  evo.run(u, [&](long step, double, Vec x) {
    if (step == 4) at4 = evo.captureState(), VecCopy(x, u4);
  });
  solver::ExponentialEvolution again(mesh, disc.spatialOperator(), settings);
  std::vector<long> steps;
  again.resume(u4, [&](long step, double, Vec) { steps.push_back(step); }, at4);
  BOOST_TEST(steps == (std::vector<long>{8, 10}), boost::test_tools::per_element());
  PetscBool equal = PETSC_FALSE;
  FPDP_PETSC(VecEqual(u, u4, &equal));
  BOOST_TEST(equal == PETSC_TRUE);
  // The integrator's error bound carries on through the restart (the divergences' noise floor).
  BOOST_TEST(evo.stateErrorBound() > 0.0);
  BOOST_TEST(again.stateErrorBound() == evo.stateErrorBound());
}
