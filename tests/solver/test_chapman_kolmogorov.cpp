// The chapman_kolmogorov noisy-GD route (solver/noisygd/ChapmanKolmogorovQuadrature.hpp, docs/noisy-gd.md §7) against the
// exact Gaussian recursion of MATH.md §6 for the quadratic loss: per axis m <- c m + eta lambda xbar,
// v <- c^2 v + 2 eta Sigma_aa (c = 1 - eta lambda), equal covariances for p and q, R_alpha = alpha sum_a dm_a^2/(2 v_a).
// The midpoint rule on the cell centres converges spectrally: measured errors fall by orders of magnitude per
// refinement and reach round-off at about 1.5-2 cells per noise standard deviation. Runs on 2 ranks: the
// distributed run must equal the serial one.
#define BOOST_TEST_MODULE chapman_kolmogorov
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "PetscFixture.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "solver/functionals/Divergences.hpp"
#include "solver/noisygd/NoisyGradientDescent.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {

struct QuadraticCase {
  int dim = 1;
  int cells = 60;
  double halfWidth = 9.0;
  double lambda = 1.0, eta = 0.1;
  std::array<double, 3> variance{1.0, 1.0, 1.0};  // Sigma_aa
  std::array<double, 3> xbarP{0.3, 0.2, 0.1}, xbarQ{0.0, 0.0, 0.0};
  double v0 = 0.5;
  std::vector<double> orders{2.0, 10.0};
};

struct Outcome {
  std::vector<double> renyi, exact;
  double massDefect = 0;        // |mass on the mesh + reported outflow - 1|, worst step
  double aliasingEstimate = 0;  // per step, the quadrature's own figure
  std::vector<double> p;        // final point values of p (natural order, every rank)
};

Outcome run(const QuadraticCase& c, long K, MPI_Comm comm = PETSC_COMM_WORLD) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < c.dim; ++a) axes.push_back(meshes::Axis::uniform(-c.halfWidth, c.halfWidth, c.cells));
  const meshes::DistributedBoxMesh mesh(comm, meshes::BoxMesh(std::move(axes)), 2);
  auto grad = [&](std::array<double, 3> xb) {
    return [xb, lambda = c.lambda](const solver::ParameterPoint& t) {
      return solver::ParameterPoint{lambda * (t[0] - xb[0]), lambda * (t[1] - xb[1]), lambda * (t[2] - xb[2])};
    };
  };
  solver::NoisyGdSettings s;
  s.eta = c.eta;
  s.noiseVariance = c.variance;
  s.diffusion = solver::DiffusionMethod::ChapmanKolmogorov;
  solver::NoisyGradientDescent gd(mesh, grad(c.xbarP), grad(c.xbarQ), s);
  BOOST_TEST((gd.representation() == meshes::FieldRepresentation::PointValues));
  // Initial N(0, v0 I) as point values at the centres, normalised to unit discrete mass.
  auto u = mesh.createVector();
  {
    PetscScalar* a;
    FPDP_PETSC(VecGetArray(u, &a));
    double local = 0;
    const auto& vol = mesh.ownedVolumes();
    mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
      const auto x = mesh.box().centre(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
      double r2 = 0;
      for (int d = 0; d < c.dim; ++d) r2 += x[d] * x[d];
      a[2 * l] = a[2 * l + 1] = std::exp(-0.5 * r2 / c.v0);
      local += vol[l] * a[2 * l];
    });
    double mass = 0;
    MPI_Allreduce(&local, &mass, 1, MPI_DOUBLE, MPI_SUM, comm);
    for (std::size_t l = 0; l < 2 * vol.size(); ++l) a[l] /= mass;
    FPDP_PETSC(VecRestoreArray(u, &a));
  }
  solver::FunctionalSettings fs;
  fs.orders = c.orders;
  fs.representation = meshes::FieldRepresentation::PointValues;
  const solver::DivergenceFunctionals f(mesh, fs);
  Outcome out;
  out.aliasingEstimate = gd.kernelQuadrature()->aliasingEstimate();
  double outP = 0, outQ = 0;
  for (long k = 0; k < K; ++k) {
    const auto report = gd.step(u);
    outP += report.diffP.total();
    outQ += report.diffQ.total();
    const auto v = f.evaluate(u);
    out.massDefect = std::max({out.massDefect, std::fabs(v.p.mass + outP - 1.0), std::fabs(v.q.mass + outQ - 1.0)});
  }
  out.renyi = f.evaluate(u).renyi;
  const double cc = 1 - c.eta * c.lambda;
  double quadratic = 0;
  for (int a = 0; a < c.dim; ++a) {
    double mp = 0, mq = 0, v = c.v0;
    for (long k = 0; k < K; ++k) {
      mp = cc * mp + c.eta * c.lambda * c.xbarP[a];
      mq = cc * mq + c.eta * c.lambda * c.xbarQ[a];
      v = cc * cc * v + 2 * c.eta * c.variance[a];
    }
    quadratic += (mp - mq) * (mp - mq) / v;
  }
  for (double alpha : c.orders) out.exact.push_back(alpha * quadratic / 2);
  solver::FieldGatherer gather(mesh);
  out.p = gather.gather(u, 0);
  return out;
}

double relativeError(const Outcome& o, std::size_t k) { return std::fabs(o.renyi[k] - o.exact[k]) / o.exact[k]; }

}  // namespace

BOOST_AUTO_TEST_CASE(quadratic_1d_converges_spectrally) {
  // Kernel N(0, 2 eta) = N(0, 0.2): s = 0.447; K = 1000 steps (the stationary law N(0.3, 1.05)). Box [-12, 12]: the
  // tilted law of E_10 centres at 3, and [-9, 9] would cut off 2.5e-9 of it (measured: R_10 then stalls at 9e-10).
  QuadraticCase c;
  c.halfWidth = 12.0;
  std::printf("\n1-D quadratic noisy GD (chapman_kolmogorov), K = 1000\n%6s %10s %12s %12s %12s %12s\n", "cells",
              "s/h", "R_2 rel err", "R_10 rel err", "mass defect", "aliasing est");
  std::vector<double> e2;
  for (int cells : {40, 54, 80, 120}) {
    c.cells = cells;
    const auto o = run(c, 1000);
    const double s = std::sqrt(2 * c.eta * c.variance[0]), h = 2 * c.halfWidth / cells;
    std::printf("  %6d %10.3f %12.3e %12.3e %12.3e %12.3e\n", cells, s / h, relativeError(o, 0), relativeError(o, 1),
                o.massDefect, o.aliasingEstimate);
    std::fflush(stdout);
    e2.push_back(relativeError(o, 0));
    if (cells >= 80) {  // 1.5 cells per standard deviation and more: round-off (1000 steps of it for the mass)
      BOOST_TEST(relativeError(o, 0) <= 1e-11);
      BOOST_TEST(relativeError(o, 1) <= 1e-11);
      BOOST_TEST(o.massDefect <= 1e-11);
    }
  }
  // Spectral, not algebraic: from 40 to 54 cells (1.35 times finer) a fourth-order scheme's error would fall by
  // 1.35^4 = 3.3; this one falls by orders of magnitude.
  BOOST_TEST(e2[0] / e2[1] >= 100.0);
}

BOOST_AUTO_TEST_CASE(narrow_start_keeps_far_tails_for_large_orders) {
  // theta_0 ~ N(0, 0.01) spread by N(0, 0.2): after one step the dominant term of E_10 sits about 3.8 out, where
  // both densities are ~1e-15 of their peaks (the test that once broke the exact convolution, test_noisy_gd.cpp).
  // Every term of the rule is non-negative, so these tails keep their relative accuracy.
  QuadraticCase c;
  c.v0 = 0.01;
  c.halfWidth = 7.0;
  c.cells = 280;  // h = 0.05: 2 cells per standard deviation of the start
  for (long K : {1L, 2L, 3L}) {
    const auto o = run(c, K);
    std::printf("narrow start, K = %ld: R_2 rel err %.3e, R_10 rel err %.3e\n", K, relativeError(o, 0),
                relativeError(o, 1));
    BOOST_TEST(relativeError(o, 0) <= 1e-11);
    BOOST_TEST(relativeError(o, 1) <= 1e-10);
  }
}

BOOST_AUTO_TEST_CASE(quadratic_2d_anisotropic_noise_and_parallel_equals_serial) {
  // Sigma = diag(1, 0.25): s = (0.447, 0.224); box [-9, 9]^2 (the tilted law of E_10 centres 3 out on axis 0) with
  // 120^2 cells (s/h = 3.0 and 1.5).
  QuadraticCase c;
  c.dim = 2;
  c.halfWidth = 9.0;
  c.cells = 120;
  c.variance = {1.0, 0.25, 1.0};
  const auto parallel = run(c, 20, PETSC_COMM_WORLD);
  std::printf("2-D anisotropic, K = 20: R_2 rel err %.3e, R_10 rel err %.3e, mass defect %.2e\n",
              relativeError(parallel, 0), relativeError(parallel, 1), parallel.massDefect);
  BOOST_TEST(relativeError(parallel, 0) <= 1e-10);
  BOOST_TEST(relativeError(parallel, 1) <= 1e-10);
  BOOST_TEST(parallel.massDefect <= 1e-12);
  // The same run on each rank alone: every rank forms the whole sum in the same order, so the fields differ only
  // through the initial normalisation's reduction order (a few ulps), as do the divergences.
  const auto serial = run(c, 20, PETSC_COMM_SELF);
  BOOST_TEST(serial.p.size() == parallel.p.size());
  double worst = 0;
  for (std::size_t i = 0; i < serial.p.size(); ++i)
    if (serial.p[i] > 0) worst = std::max(worst, std::fabs(serial.p[i] - parallel.p[i]) / serial.p[i]);
  BOOST_TEST(worst <= 1e-13);
  for (std::size_t k = 0; k < c.orders.size(); ++k)
    BOOST_TEST(std::fabs(serial.renyi[k] - parallel.renyi[k]) <= 1e-13 * serial.renyi[k]);
}

BOOST_AUTO_TEST_CASE(refuses_what_point_values_cannot_carry) {
  const meshes::DistributedBoxMesh uniform(PETSC_COMM_WORLD, meshes::BoxMesh({meshes::Axis::uniform(-3, 3, 40)}), 2);
  const meshes::DistributedBoxMesh graded(PETSC_COMM_WORLD,
                                          meshes::BoxMesh({meshes::Axis::graded(-3, 3, 40, 1.05)}), 2);
  auto zero = [](const solver::ParameterPoint&) { return solver::ParameterPoint{0, 0, 0}; };
  solver::NoisyGdSettings s;
  s.diffusion = solver::DiffusionMethod::ChapmanKolmogorov;
  BOOST_CHECK_THROW(solver::NoisyGradientDescent(graded, zero, zero, s), std::invalid_argument);
  s.constraint = models::ConstraintSet::box(models::Vector::Constant(1, -1.0), models::Vector::Constant(1, 1.0));
  BOOST_CHECK_THROW(solver::NoisyGradientDescent(uniform, zero, zero, s), std::invalid_argument);
  s.constraint = models::ConstraintSet{};
  BOOST_CHECK_NO_THROW(solver::NoisyGradientDescent(uniform, zero, zero, s));
}
