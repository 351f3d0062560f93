// The KL rate identity of MATH.md §4 evaluated by quadrature on computed densities, against the exact derivative of the
// closed-form KL(t) of the OU problem (MATH.md §6); the agreement must improve under refinement (second order).
#define BOOST_TEST_MODULE kl_rate
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>

#include "OuProblem.hpp"
#include "PetscFixture.hpp"
#include "solver/functionals/KlRate.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {
struct Measured {
  double identity, exact, boundIntegrand, exactBoundIntegrand;
};

Measured measure(int dim, int cells, double T) {
  testing::OuSetup s;
  s.dim = dim;
  s.cells = cells;
  s.centreP = {0.4, 0.2, 0.0};
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_WORLD, testing::ouBox(s), 2);
  const auto problem = testing::ouProblem(s);
  const solver::LangevinDiscretisation disc(mesh, problem, solver::FaceFluxScheme::ScharfetterGummel);
  solver::TimeIntegration ti;
  ti.steps = 400;
  ti.dt = T / ti.steps;
  solver::DensityEvolution evo(mesh, disc.spatialOperator().assemble(), ti);
  auto u = mesh.createVector();
  disc.setInitialState(u);
  evo.run(u, [](long, double, Vec) {});
  auto grad = [&](const models::EmpiricalLoss& L) {
    return [&L, dim](const solver::ParameterPoint& x) {
      models::Vector v(dim);
      for (int a = 0; a < dim; ++a) v[a] = x[a];
      const models::Vector g = L.gradient(v);
      solver::ParameterPoint out{0, 0, 0};
      for (int a = 0; a < dim; ++a) out[a] = g[a];
      return out;
    };
  };
  const models::Matrix Sigma = s.sigma * s.sigma * models::Matrix::Identity(dim, dim);
  const solver::KlRateFunctional rate(mesh, grad(*problem.lossD), grad(*problem.lossDPrime), Sigma, Sigma);
  const auto r = rate.evaluate(u);
  const auto ref = validation::GaussianReference::forLangevin(*problem.lossD, *problem.lossDPrime, s.sigma,
                                                              problem.initial);
  const double h = 1e-4;
  const double exact = (ref->kl(T + h) - ref->kl(T - h)) / (2 * h);
  // Equal Sigma: the bound integrand is (1/4) |b - b'|^2 / sigma^2 (constant gap for the quadratic loss).
  const double gap = s.lambda * std::sqrt(std::pow(s.centreP[0] - s.centreQ[0], 2) +
                                          (dim > 1 ? std::pow(s.centreP[1] - s.centreQ[1], 2) : 0.0));
  return {r.identity, exact, r.boundIntegrand, 0.25 * gap * gap / (s.sigma * s.sigma)};
}
}  // namespace

BOOST_AUTO_TEST_CASE(rate_identity_matches_the_derivative_of_the_exact_kl) {
  for (int dim : {1, 2}) {
    std::printf("\nKL rate identity, %d-D OU at t = 1: identity vs d/dt of the exact KL\n%8s %16s %16s %12s %7s\n", dim,
                "cells", "identity", "exact", "rel diff", "rate");
    double prev = 0;
    for (int cells : (dim == 1 ? std::vector<int>{100, 200, 400} : std::vector<int>{48, 96, 192})) {
      const auto m = measure(dim, cells, 1.0);
      const double e = std::fabs(m.identity - m.exact) / std::fabs(m.exact);
      std::printf("%8d %16.10f %16.10f %12.3e %7.3f\n", cells, m.identity, m.exact, e, prev > 0 ? std::log2(prev / e) : 0.0);
      std::fflush(stdout);
      BOOST_TEST(e <= 2e-2);
      if (prev > 0) BOOST_TEST(std::log2(prev / e) >= 1.5);
      // The Young-bound integrand is exact for the quadratic loss up to quadrature (b - b' is constant).
      BOOST_TEST(std::fabs(m.boundIntegrand - m.exactBoundIntegrand) <= 1e-10 * m.exactBoundIntegrand);
      prev = e;
    }
  }
}
