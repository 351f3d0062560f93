// ExponentialEvolution (solver/propagation/ExponentialEvolution.hpp, docs/scheme.md §3): the Chebyshev coefficients against the
// library's Bessel functions; exp(T A) u against the exact matrix exponential of small operators (dense
// eigen-decomposition of the symmetrised operator); the detailed-balance check accepting the Scharfetter–Gummel
// operator and refusing a perturbed one; the observed steps, early stop, restart; 2 ranks equal 1 rank.
// Registered with RANKS 2.
#define BOOST_TEST_MODULE solver_exponential_evolution
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <Eigen/Dense>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "OuProblem.hpp"
#include "PetscFixture.hpp"
#include "solver/propagation/ExponentialEvolution.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {
std::vector<double> values(Vec v) {
  PetscInt n;
  const PetscScalar* a;
  VecGetLocalSize(v, &n);
  VecGetArrayRead(v, &a);
  std::vector<double> out(a, a + n);
  VecRestoreArrayRead(v, &a);
  return out;
}

struct Setup {
  testing::OuSetup s;
  meshes::DistributedBoxMesh mesh;
  solver::LangevinDiscretisation disc;
  meshes::VecHandle weights;
  Setup(MPI_Comm comm, int dim, int cells)
      : s(testing::distinctCentresSetup(dim, cells)), mesh(comm, testing::ouBox(s), 2),
        disc(mesh, testing::ouProblem(s), solver::FaceFluxScheme::ScharfetterGummel), weights(mesh.createVector()) {
    disc.setSymmetrisingWeights(weights);
  }
};

/// exp(T A) as a dense matrix, from the eigen-decomposition of B = W^-1 A W (symmetric by detailed balance).
Eigen::MatrixXd exactExponential(Mat A, Vec w, double T) {
  PetscInt n;
  MatGetSize(A, &n, nullptr);
  Eigen::MatrixXd dense = Eigen::MatrixXd::Zero(n, n);
  for (PetscInt i = 0; i < n; ++i) {
    PetscInt nc;
    const PetscInt* cols;
    const PetscScalar* vals;
    MatGetRow(A, i, &nc, &cols, &vals);
    for (PetscInt k = 0; k < nc; ++k) dense(i, cols[k]) = vals[k];
    MatRestoreRow(A, i, &nc, &cols, &vals);
  }
  const auto wv = values(w);
  const Eigen::Map<const Eigen::VectorXd> W(wv.data(), n);
  Eigen::MatrixXd B = W.cwiseInverse().asDiagonal() * dense * W.asDiagonal();
  B = 0.5 * (B + B.transpose()).eval();
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(B);
  BOOST_TEST(eig.eigenvalues().maxCoeff() <= 1e-9 * eig.eigenvalues().cwiseAbs().maxCoeff());  // spectrum <= 0
  const Eigen::MatrixXd expB =
      eig.eigenvectors() * (T * eig.eigenvalues()).array().exp().matrix().asDiagonal() * eig.eigenvectors().transpose();
  return W.asDiagonal() * expB * W.cwiseInverse().asDiagonal();
}
}  // namespace

BOOST_AUTO_TEST_CASE(coefficients_are_the_scaled_bessel_functions) {
  for (double c : {0.3, 4.0, 40.0, 400.0}) {
    const auto a = solver::scaledBesselCoefficients(c, 1e-15);
    double worst = 0.0, sum = a[0];
    for (std::size_t k = 0; k < a.size(); ++k) {
      const double ref = std::exp(-c) * std::cyl_bessel_i(static_cast<double>(k), c);
      if (ref > 1e-290) worst = std::max(worst, std::fabs(a[k] - ref) / ref);
      if (k > 0) sum += 2.0 * a[k];
    }
    BOOST_TEST_MESSAGE("c = " << c << ": " << a.size() << " terms, largest relative error " << worst
                              << ", 1 - (a_0 + 2 sum a_k) = " << 1.0 - sum);
    BOOST_TEST(worst <= 1e-12, "c = " << c);
    // The dropped tail: 2 sum_{k > K} a_k <= 1e-15, and the kept terms sum to e^c e^-c = 1 less that tail.
    BOOST_TEST(1.0 - sum <= 1.5e-15, "c = " << c);
    BOOST_TEST(1.0 - sum >= -1e-14, "c = " << c);
    const auto longer = solver::scaledBesselCoefficients(c, 1e-30);
    double tail = 0.0;
    for (std::size_t k = a.size(); k < longer.size(); ++k) tail += 2.0 * longer[k];
    BOOST_TEST(tail <= 1e-15, "c = " << c << ": tail " << tail);
  }
  BOOST_TEST(solver::scaledBesselCoefficients(0.0, 1e-15).size() == 1u);
  BOOST_CHECK_THROW(solver::scaledBesselCoefficients(-1.0, 1e-15), std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(propagation_equals_the_exact_matrix_exponential) {
  for (int dim : {1, 2, 3}) {
    for (double T : {0.05, 2.0}) {
      Setup st(PETSC_COMM_SELF, dim, dim == 1 ? 60 : dim == 2 ? 14 : 7);
      auto A = st.disc.spatialOperator().assemble();
      const Eigen::MatrixXd E = exactExponential(A, st.weights, T);
      solver::ExponentialEvolution evo(st.mesh, std::move(A), st.weights, {T, 1, 1});
      auto u = st.mesh.createVector();
      st.disc.setInitialState(u);
      const auto u0 = values(u);
      evo.propagate(u, T);
      const auto uT = values(u);
      const Eigen::VectorXd ref = E * Eigen::Map<const Eigen::VectorXd>(u0.data(), static_cast<Eigen::Index>(u0.size()));
      double worst = 0.0, massDrift = 0.0, mass0 = 0.0, massT = 0.0;
      for (std::size_t i = 0; i < uT.size(); ++i) {
        worst = std::max(worst, std::fabs(uT[i] - ref[static_cast<Eigen::Index>(i)]));
        mass0 += u0[i];
        massT += uT[i];
      }
      worst /= ref.cwiseAbs().maxCoeff();
      massDrift = std::fabs(massT - mass0) / mass0;
      BOOST_TEST(evo.describe().find("star-stencil") != std::string::npos, evo.describe());
      BOOST_TEST_MESSAGE(dim << "-D, T = " << T << ": " << evo.operatorProducts() << " products with A, spectral bound "
                             << evo.spectralBound() << ", max error / max " << worst << ", mass drift " << massDrift
                             << ", detailed-balance defect " << evo.detailedBalanceDefectOfA());
      BOOST_TEST(worst <= 1e-12);
      BOOST_TEST(massDrift <= 1e-13);
      BOOST_TEST(evo.detailedBalanceDefectOfA() <= 1e-13);
    }
  }
}

BOOST_AUTO_TEST_CASE(an_operator_without_detailed_balance_is_refused) {
  Setup st(PETSC_COMM_SELF, 2, 10);
  auto A = st.disc.spatialOperator().assemble();
  // One rate changed by 1e-6 relative breaks a_ij pi_j V_i = a_ji pi_i V_j for that pair.
  PetscInt nc;
  const PetscInt* cols;
  const PetscScalar* vals;
  MatGetRow(A, 40, &nc, &cols, &vals);
  PetscInt col = -1;
  double v = 0.0;
  for (PetscInt k = 0; k < nc; ++k)
    if (cols[k] != 40) col = cols[k], v = vals[k];
  MatRestoreRow(A, 40, &nc, &cols, &vals);
  BOOST_REQUIRE(col >= 0);
  MatSetValue(A, 40, col, v * (1.0 + 1e-6), INSERT_VALUES);
  MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY);
  MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY);
  const double defect = solver::detailedBalanceDefect(A, st.weights);
  BOOST_TEST_MESSAGE("defect after the perturbation: " << defect);
  BOOST_TEST(defect > 5e-7);
  BOOST_TEST(defect < 2e-6);
  BOOST_CHECK_THROW(solver::ExponentialEvolution(st.mesh, std::move(A), st.weights, {0.1, 10, 1}),
                    std::invalid_argument);

  // Anisotropic noise: no Gibbs density to symmetrise with.
  testing::OuSetup s = testing::distinctCentresSetup(2, 10);
  auto problem = testing::ouProblem(s);
  models::Matrix sigma(2, 2);
  sigma << 0.5, 0.0, 0.0, 0.2;
  problem.sigmaMatrix = sigma;
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_SELF, testing::ouBox(s), 2);
  const solver::LangevinDiscretisation disc(mesh, problem, solver::FaceFluxScheme::ScharfetterGummel);
  auto w = mesh.createVector();
  BOOST_CHECK_THROW(disc.setSymmetrisingWeights(w), std::logic_error);
}

BOOST_AUTO_TEST_CASE(observer_sees_the_output_steps_and_restart_is_bit_identical) {
  Setup st(PETSC_COMM_SELF, 2, 24);
  solver::ExponentialEvolution evo(st.mesh, st.disc.spatialOperator().assemble(), st.weights, {0.05, 25, 10});
  auto u = st.mesh.createVector();
  st.disc.setInitialState(u);
  std::vector<long> steps;
  std::vector<double> times;
  solver::IntegratorState at10;
  meshes::VecHandle u10 = st.mesh.createVector();
  evo.run(u, [&](long step, double t, Vec x) {
    steps.push_back(step);
    times.push_back(t);
    if (step == 10) {
      at10 = evo.captureState();
      VecCopy(x, u10);
    }
  });
  BOOST_TEST(steps == (std::vector<long>{0, 10, 20, 25}), boost::test_tools::per_element());
  BOOST_TEST(times == (std::vector<double>{0.0, 0.5, 1.0, 1.25}), boost::test_tools::per_element());
  BOOST_TEST(at10.tsType == "exponential");
  // 25 products would serve all three intervals (10, 10 and 5 steps) if each took the terms of a full interval.
  BOOST_TEST(evo.operatorProducts() <= 3 * (evo.termsPerInterval() - 1));
  BOOST_TEST(evo.describe().find(std::to_string(evo.termsPerInterval()) + " terms") != std::string::npos);
  {  // An output interval longer than the run: the run's length counts.
    solver::ExponentialEvolution longer(st.mesh, st.disc.spatialOperator().assemble(), st.weights, {0.05, 25, 1000});
    BOOST_TEST(longer.termsPerInterval() == static_cast<long>(solver::scaledBesselCoefficients(
                                                0.5 * 0.05 * 25 * longer.spectralBound(), solver::kChebyshevTruncation)
                                                .size()));
  }
  BOOST_TEST(at10.step == 10);
  const auto uninterrupted = values(u);

  // Continued from the state at step 10: the same steps after it, bit for bit the same state.
  solver::ExponentialEvolution again(st.mesh, st.disc.spatialOperator().assemble(), st.weights, {0.05, 25, 10});
  std::vector<long> resumed;
  again.resume(u10, [&](long step, double, Vec) { resumed.push_back(step); }, at10);
  BOOST_TEST(resumed == (std::vector<long>{20, 25}), boost::test_tools::per_element());
  BOOST_TEST(values(u10) == uninterrupted, boost::test_tools::per_element());

  // stopAfter from the observer ends the run there.
  st.disc.setInitialState(u);
  std::vector<long> stopped;
  evo.run(u, [&](long step, double, Vec) {
    stopped.push_back(step);
    if (step == 10) evo.stopAfter(step);
  });
  BOOST_TEST(stopped == (std::vector<long>{0, 10}), boost::test_tools::per_element());
  BOOST_TEST(evo.stepsTaken() == 10);
  // A stop at the initial state (a fault in it) ends the run before the first interval.
  stopped.clear();
  evo.run(u, [&](long step, double, Vec) {
    stopped.push_back(step);
    evo.stopAfter(step);
  });
  BOOST_TEST(stopped == (std::vector<long>{0}), boost::test_tools::per_element());
  BOOST_TEST(evo.operatorProducts() == 0);
}

BOOST_AUTO_TEST_CASE(two_ranks_equal_one_rank) {
  PetscMPIInt size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  BOOST_REQUIRE(size >= 2);  // registered with mpiexec -n 2
  // Ranks x product: the star-stencil term with ghost exchange on 2 ranks, and PETSc's AIJ product, against one rank.
  for (int dim : {1, 2, 3}) {
    std::vector<solver::DivergenceValues> results;
    for (const auto& [comm, aij] : {std::pair{PETSC_COMM_WORLD, false}, std::pair{PETSC_COMM_SELF, false},
                                    std::pair{PETSC_COMM_WORLD, true}}) {
      Setup st(comm, dim, dim == 3 ? 12 : 48);
      if (aij) PetscOptionsSetValue(nullptr, "-fpdp_exponential_aij", "1");
      solver::ExponentialEvolution evo(st.mesh, st.disc.spatialOperator().assemble(), st.weights, {0.1, 10, 5});
      PetscOptionsClearValue(nullptr, "-fpdp_exponential_aij");
      BOOST_TEST((evo.describe().find(aij ? "AIJ" : "star-stencil") != std::string::npos), evo.describe());
      auto u = st.mesh.createVector();
      st.disc.setInitialState(u);
      evo.run(u, [](long, double, Vec) {});
      results.push_back(solver::DivergenceFunctionals(st.mesh, {1.5, 2.0, 10.0}).evaluate(u));
    }
    const auto& ser = results[1];
    auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-12 * std::fabs(b); };
    for (std::size_t r : {0u, 2u}) {
      const auto& par = results[r];
      BOOST_TEST(close(par.kl, ser.kl), dim << "-D, run " << r << ": KL " << par.kl << " vs " << ser.kl);
      BOOST_TEST(close(par.p.mass, ser.p.mass));
      for (std::size_t k = 0; k < par.renyi.size(); ++k)
        BOOST_TEST(close(par.renyi[k], ser.renyi[k]), dim << "-D, run " << r << ": R " << par.renyi[k] << " vs "
                                                          << ser.renyi[k]);
    }
  }
}

// Built from the operator's rows (no assembled matrix) the integrator is the matrix-built one to the last bit: the
// same stencil coefficients, the same spectral bound (the norms summed in MatNorm's order), the same first term.
// Where the rows are not a star it falls back to the matrix, whose check refuses the operator; -fpdp_exponential_aij
// takes the matrix path.
BOOST_AUTO_TEST_CASE(built_from_the_rows_equals_built_from_the_matrix) {
  for (const MPI_Comm comm : {PETSC_COMM_SELF, PETSC_COMM_WORLD})
    for (int dim : {1, 2, 3}) {
      Setup st(comm, dim, dim == 3 ? 12 : 48);
      solver::ExponentialEvolution fromRows(st.mesh, st.disc.spatialOperator(), st.weights, {0.1, 10, 5});
      solver::ExponentialEvolution fromMatrix(st.mesh, st.disc.spatialOperator().assemble(), st.weights, {0.1, 10, 5});
      BOOST_TEST(fromRows.spectralBound() == fromMatrix.spectralBound());
      BOOST_TEST(fromRows.describe() == fromMatrix.describe());
      BOOST_TEST(std::fabs(fromRows.detailedBalanceDefectOfA() - fromMatrix.detailedBalanceDefectOfA()) <= 1e-15);
      auto u = st.mesh.createVector(), v = st.mesh.createVector();
      st.disc.setInitialState(u);
      st.disc.setInitialState(v);
      fromRows.run(u, [](long, double, Vec) {});
      fromMatrix.run(v, [](long, double, Vec) {});
      const auto a = values(u), b = values(v);
      double worst = 0.0;
      for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]));
      BOOST_TEST(worst == 0.0, dim << "-D: largest difference " << worst);
    }
  // Cross-diffusion: not a star, so the matrix path, whose detailed-balance check refuses it.
  testing::OuSetup s = testing::distinctCentresSetup(2, 10);
  auto problem = testing::ouProblem(s);
  models::Matrix sigma(2, 2);
  sigma << 0.5, 0.1, 0.1, 0.3;
  problem.sigmaMatrix = problem.sigmaMatrixPrime = sigma;
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_SELF, testing::ouBox(s), 2, meshes::StencilShape::Box);
  const solver::LangevinDiscretisation disc(mesh, problem, solver::FaceFluxScheme::ScharfetterGummel);
  Setup st(PETSC_COMM_SELF, 2, 10);  // weights of a balanced problem: the check must still fail on the operator
  BOOST_CHECK_THROW(solver::ExponentialEvolution(mesh, disc.spatialOperator(), st.weights, {0.1, 10, 1}),
                    std::invalid_argument);
  // -fpdp_exponential_aij: the matrix and PETSc's product.
  PetscOptionsSetValue(nullptr, "-fpdp_exponential_aij", "1");
  solver::ExponentialEvolution aij(st.mesh, st.disc.spatialOperator(), st.weights, {0.1, 10, 5});
  PetscOptionsClearValue(nullptr, "-fpdp_exponential_aij");
  BOOST_TEST(aij.describe().find("AIJ") != std::string::npos, aij.describe());
}

BOOST_AUTO_TEST_CASE(the_norm_factor_is_small_for_the_gibbs_density_and_huge_for_a_start_it_makes_improbable) {
  // G = max W ||u / W||_2 / max |u| (chiSquaredToMaxNormFactor). For u = c W^2 V (the Gibbs density pi, W = sqrt(pi /
  // V)) with equal volumes: G = max(W) sqrt(sum c^2 W^2 V^2) / max(c W^2 V) = sqrt(sum W^2) / max W >= 1, at most
  // sqrt(cells); for u equal to 1 in a cell where W is 1e-200 of its maximum, G >= 1e200 (+inf when u / W overflows).
  Setup s(PETSC_COMM_WORLD, 1, 40);
  auto u = s.mesh.createVector();
  PetscInt n;
  PetscScalar* a;
  const PetscScalar* w;
  BOOST_REQUIRE(VecGetLocalSize(u, &n) == 0);
  BOOST_REQUIRE(VecGetArray(u, &a) == 0);
  BOOST_REQUIRE(VecGetArrayRead(s.weights, &w) == 0);
  for (PetscInt i = 0; i < n; ++i) a[i] = w[i] * w[i];
  BOOST_REQUIRE(VecRestoreArrayRead(s.weights, &w) == 0);
  BOOST_REQUIRE(VecRestoreArray(u, &a) == 0);
  const double gibbs = solver::chiSquaredToMaxNormFactor(s.weights, u, 2);
  BOOST_TEST(gibbs >= 1.0);
  BOOST_TEST(gibbs <= std::sqrt(40.0) * (1 + 1e-12));
  // Mass only where the weight is smallest: G = max W / min W there, far beyond the allowed factor.
  BOOST_REQUIRE(VecGetArray(u, &a) == 0);
  BOOST_REQUIRE(VecGetArrayRead(s.weights, &w) == 0);
  double wMin = INFINITY, wMax = 0;
  PetscInt at = 0;
  for (PetscInt i = 0; i < n; i += 2) {
    if (w[i] < wMin) wMin = w[i], at = i;
    wMax = std::max(wMax, w[i]);
  }
  for (PetscInt i = 0; i < n; ++i) a[i] = i == at ? 1.0 : 0.0;
  BOOST_REQUIRE(VecRestoreArrayRead(s.weights, &w) == 0);
  BOOST_REQUIRE(VecRestoreArray(u, &a) == 0);
  double globalMin = 0, globalMax = 0;
  MPI_Allreduce(&wMin, &globalMin, 1, MPI_DOUBLE, MPI_MIN, PETSC_COMM_WORLD);
  MPI_Allreduce(&wMax, &globalMax, 1, MPI_DOUBLE, MPI_MAX, PETSC_COMM_WORLD);
  const double displaced = solver::chiSquaredToMaxNormFactor(s.weights, u, 2);
  BOOST_TEST_MESSAGE("Gibbs start: G = " << gibbs << "; unit mass in the least probable cell: G = " << displaced
                                         << " (max W / min W = " << globalMax / globalMin << ")");
  BOOST_TEST(displaced >= 0.99 * globalMax / globalMin);
  BOOST_TEST(displaced > solver::kLargestNormFactor);
}
