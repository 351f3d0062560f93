// Noisy gradient descent on the densities (MATH.md §2.1) against the exact Gaussian recursions of MATH.md §6 for the
// quadratic loss: means m <- (1 - eta lambda) m + eta lambda xbar, variances v <- (1 - eta lambda)^2 v + 2 eta Sigma_aa
// (per axis, diagonal Sigma). R_alpha(K) = alpha sum_a dm_a^2 / (2 v_a).
#ifndef FPDP_PROBE
#define BOOST_TEST_MODULE noisy_gd
#endif
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>

#include "PetscFixture.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"
#include "solver/Divergences.hpp"
#include "solver/NoisyGradientDescent.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {

struct QuadraticGd {
  int dim = 1;
  int cells = 1000;
  double halfWidth = 6.0;
  double lambda = 1.0, eta = 0.1;
  std::array<double, 3> variance{1.0, 1.0, 1.0};  // Sigma_aa
  std::array<double, 3> xbarP{0.3, 0.2, 0.1}, xbarQ{0.0, 0.0, 0.0};
  double v0 = 0.5;
  solver::DiffusionMethod method = solver::DiffusionMethod::FokkerPlanck;
  int substeps = 4;
  std::string tsType = "arkimex";
};

struct Result {
  double renyi, exact, kl, klExact, massDrift, minValue;
};

Result run(const QuadraticGd& c, long K, double alpha, MPI_Comm comm = PETSC_COMM_WORLD) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < c.dim; ++a) axes.push_back(meshes::Axis::uniform(-c.halfWidth, c.halfWidth, c.cells));
  const meshes::DistributedBoxMesh mesh(comm, meshes::BoxMesh(std::move(axes)), 2);
  auto grad = [&](std::array<double, 3> xb) {
    return [xb, lambda = c.lambda](const solver::Point3& t) {
      return solver::Point3{lambda * (t[0] - xb[0]), lambda * (t[1] - xb[1]), lambda * (t[2] - xb[2])};
    };
  };
  solver::NoisyGdSettings s;
  s.eta = c.eta;
  s.noiseVariance = c.variance;
  s.diffusion = c.method;
  s.diffusionSubsteps = c.substeps;
  s.diffusionTsType = c.tsType;
  solver::NoisyGradientDescent gd(mesh, grad(c.xbarP), grad(c.xbarQ), s);
  // Initial N(0, v0 I) as exact cell averages, normalised.
  const models::Gaussian g0(models::Vector::Zero(c.dim), c.v0 * models::Matrix::Identity(c.dim, c.dim));
  auto u = mesh.createVector();
  PetscScalar* a;
  VecGetArray(u, &a);
  double localMass = 0;
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    std::array<double, 3> lo{0, 0, 0}, hi{0, 0, 0};
    const std::array<PetscInt, 3> idx{i, j, k};
    for (int d = 0; d < c.dim; ++d) {
      lo[d] = mesh.box().axis(d).face(static_cast<int>(idx[d]));
      hi[d] = mesh.box().axis(d).face(static_cast<int>(idx[d]) + 1);
    }
    a[2 * l] = a[2 * l + 1] = g0.cellAverage(lo, hi);
    localMass += mesh.ownedVolumes()[l] * a[2 * l];
  });
  double mass;
  MPI_Allreduce(&localMass, &mass, 1, MPI_DOUBLE, MPI_SUM, comm);
  for (PetscInt l = 0; l < 2 * mesh.owned().size(); ++l) a[l] /= mass;
  VecRestoreArray(u, &a);
  const solver::DivergenceFunctionals f(mesh, {alpha});
  Result r{};
  double minValue = INFINITY, drift = 0;
  for (long k = 0; k < K; ++k) {
    gd.step(u);
    const auto v = f.evaluate(u);
    minValue = std::min({minValue, v.p.min, v.q.min});
    drift = std::max({drift, std::fabs(v.p.mass - 1.0), std::fabs(v.q.mass - 1.0)});
  }
  const auto v = f.evaluate(u);
  // Exact recursion (MATH.md §6).
  double renyi = 0, kl = 0;
  for (int d = 0; d < c.dim; ++d) {
    double mp = 0, mq = 0, var = c.v0;
    const double cc = 1 - c.eta * c.lambda;
    for (long k = 0; k < K; ++k) {
      mp = cc * mp + c.eta * c.lambda * c.xbarP[d];
      mq = cc * mq + c.eta * c.lambda * c.xbarQ[d];
      var = cc * cc * var + 2 * c.eta * c.variance[d];
    }
    renyi += alpha * (mp - mq) * (mp - mq) / (2 * var);
    kl += (mp - mq) * (mp - mq) / (2 * var);
  }
  r.renyi = v.renyi[0];
  r.exact = renyi;
  r.kl = v.kl;
  r.klExact = kl;
  r.massDrift = drift;
  r.minValue = minValue;
  return r;
}

}  // namespace

#ifndef FPDP_PROBE
BOOST_AUTO_TEST_CASE(quadratic_1d_matches_the_exact_recursion) {
  for (auto method : {solver::DiffusionMethod::FokkerPlanck, solver::DiffusionMethod::ExactConvolution}) {
    QuadraticGd c;
    c.method = method;
    std::printf("\n1-D quadratic noisy GD (%s), relative error of R_2 at K = 200\n%8s %14s %8s\n",
                method == solver::DiffusionMethod::FokkerPlanck ? "fokker_planck" : "exact_convolution", "cells",
                "rel err", "rate");
    double prev = 0;
    for (int cells : {250, 500, 1000, 2000}) {
      c.cells = cells;
      const auto r = run(c, 200, 2.0);
      const double e = std::fabs(r.renyi - r.exact) / r.exact;
      std::printf("%8d %14.4e %8.3f   (KL rel err %.2e, mass drift %.1e, min %.1e)\n", cells, e,
                  prev > 0 ? std::log2(prev / e) : 0.0, std::fabs(r.kl - r.klExact) / r.klExact, r.massDrift,
                  r.minValue);
      std::fflush(stdout);
      prev = e;
    }
  }
}
#endif
