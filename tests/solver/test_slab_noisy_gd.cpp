// Noisy-GD steps split over MPI ranks in slabs (SlabNoisyGd) against the same steps on one process (PushForward and
// GaussianConvolution on the whole mesh): the gathered fields and the summed outflows are bitwise equal, in 2-D, 4-D
// and 5-D, with a Hessian that couples every axis (each shear's inversion involves every later coordinate); the
// divergences summed part by part equal those of the whole fields to round-off.
// Run on 2 ranks (and 1).
#define BOOST_TEST_MODULE slab_noisy_gd
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <vector>

#include "PetscFixture.hpp"
#include "meshes/BoxMesh.hpp"
#include "solver/noisygd/SlabNoisyGd.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {

solver::GradientField coupledQuadratic(int d, double shift) {
  // g(theta) = H (theta - c) with H = I + 0.25 (next-neighbour couplings), plus a smooth non-linear term.
  return [d, shift](const solver::ParameterPoint& t) {
    solver::ParameterPoint g{};
    for (int a = 0; a < d; ++a) {
      g[a] = t[a] - (a == 0 ? shift : 0.1 * a) + 0.1 * std::tanh(t[a]);
      if (a > 0) g[a] += 0.25 * t[a - 1];
      if (a + 1 < d) g[a] += 0.25 * t[a + 1];
    }
    return g;
  };
}

void compareWithOneProcess(int d, int n, int steps) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < d; ++a) axes.push_back(meshes::Axis::uniform(-3.0 - 0.1 * a, 3.0, n + (a % 2)));
  const meshes::BoxMesh mesh(std::move(axes));
  const double eta = 0.15;
  meshes::AxisValues s{};
  for (int a = 0; a < d; ++a) s[a] = 0.3 + 0.02 * a;
  // A start that is not a product of axis functions.
  std::vector<double> start(mesh.totalCells());
  for (std::size_t c = 0; c < start.size(); ++c) {
    const auto x = mesh.centreAt(mesh.indexOf(c));
    double r2 = 0.0, cross = 0.0;
    for (int a = 0; a < d; ++a) {
      r2 += x[a] * x[a];
      if (a > 0) cross += x[a] * x[a - 1];
    }
    start[c] = std::exp(-0.5 * (r2 + 0.4 * cross) / 0.4);
  }
  // One process: the whole mesh.
  const solver::PushForward pushD(mesh, coupledQuadratic(d, 0.5), eta), pushDPrime(mesh, coupledQuadratic(d, 0.0), eta);
  const solver::GaussianConvolution noise(mesh, s);
  std::vector<double> p = start, q = start;
  double outflowP = 0.0, outflowQ = 0.0;
  for (int k = 0; k < steps; ++k) {
    outflowP += pushD.apply(p).total();
    outflowP += noise.apply(p).total();
    outflowQ += pushDPrime.apply(q).total();
    outflowQ += noise.apply(q).total();
  }
  // Slabs over the ranks.
  const solver::SlabNoisyGd slabs(PETSC_COMM_WORLD, mesh, coupledQuadratic(d, 0.5), coupledQuadratic(d, 0.0), eta, s);
  auto pp = slabs.part(start), qq = slabs.part(start);
  BOOST_TEST(pp.size() == slabs.stateMesh().totalCells());
  std::array<double, 2> outflow{0.0, 0.0};
  for (int k = 0; k < steps; ++k) {
    const auto o = slabs.step(pp, qq);
    outflow[0] += o[0].total();
    outflow[1] += o[1].total();
  }
  const auto wholeP = slabs.gather(pp), wholeQ = slabs.gather(qq);
  std::size_t differentP = 0, differentQ = 0;
  for (std::size_t c = 0; c < p.size(); ++c) {
    differentP += wholeP[c] != p[c];
    differentQ += wholeQ[c] != q[c];
  }
  BOOST_TEST(differentP == 0u, d << "-D: " << differentP << " cells of p differ from the one-process step");
  BOOST_TEST(differentQ == 0u, d << "-D: " << differentQ << " cells of q differ");
  std::array<double, 2> summed{};
  MPI_Allreduce(outflow.data(), summed.data(), 2, MPI_DOUBLE, MPI_SUM, PETSC_COMM_WORLD);
  // The outflows are sums of the same terms in another grouping: equal to round-off.
  BOOST_TEST(std::fabs(summed[0] - outflowP) <= 1e-15 + 1e-12 * outflowP);
  BOOST_TEST(std::fabs(summed[1] - outflowQ) <= 1e-15 + 1e-12 * outflowQ);
  BOOST_TEST(outflowP > 0.0);  // the box cuts the start: the walls are exercised
  // The divergences of the parts against those of the whole fields.
  const solver::WholeFieldSettings settings{{2.0, 10.0}, {0.0, 0.5, 1.0}, {1e-2, 1e-4}};
  const auto whole = solver::wholeFieldDivergences(mesh, p, q, settings);
  const auto parts = slabs.divergences(pp, qq, settings);
  const auto close = [](double a, double b) { return std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), 1e-300); };
  BOOST_TEST(close(parts.pq.kl, whole.pq.kl), parts.pq.kl << " against " << whole.pq.kl);
  BOOST_TEST(close(parts.qp.kl, whole.qp.kl));
  BOOST_TEST(close(parts.tv, whole.tv));
  BOOST_TEST(close(parts.massP, whole.massP));
  BOOST_TEST(close(parts.spreadQ[static_cast<std::size_t>(d - 1)], whole.spreadQ[static_cast<std::size_t>(d - 1)]));
  for (std::size_t k = 0; k < 2; ++k) {
    BOOST_TEST(close(parts.pq.renyi[k], whole.pq.renyi[k]), parts.pq.renyi[k] << " against " << whole.pq.renyi[k]);
    BOOST_TEST(close(parts.qp.renyi[k], whole.qp.renyi[k]));
    // A root found on sums that differ in rounding ends in a bracket of its own: equal to the root finder's tolerance.
    const double rootTolerance = 4.0 * models::kExactEpsilonTolerance;
    BOOST_TEST(std::fabs(parts.pq.epsilon[k].epsilon - whole.pq.epsilon[k].epsilon) <=
               rootTolerance * whole.pq.epsilon[k].epsilon);
    BOOST_TEST(std::fabs(parts.qp.epsilon[k].epsilon - whole.qp.epsilon[k].epsilon) <=
               rootTolerance * whole.qp.epsilon[k].epsilon);
  }
  for (std::size_t k = 0; k < 3; ++k) BOOST_TEST(close(parts.pq.hockeyStick[k], whole.pq.hockeyStick[k]));
  BOOST_TEST(close(parts.pq.klWallShare, whole.pq.klWallShare));  // the wall flags of the parts: the global walls only
}

}  // namespace

BOOST_AUTO_TEST_CASE(two_axes_split_over_the_ranks_equal_one_process) { compareWithOneProcess(2, 24, 3); }

BOOST_AUTO_TEST_CASE(four_axes_split_over_the_ranks_equal_one_process) { compareWithOneProcess(4, 9, 2); }

BOOST_AUTO_TEST_CASE(five_axes_split_over_the_ranks_equal_one_process) { compareWithOneProcess(5, 6, 2); }

BOOST_AUTO_TEST_CASE(cyclic_batches_split_over_the_ranks_equal_one_process) {
  // Three cyclic batches (gradients with different centres) in 4-D, 5 steps: step k takes batch k mod 3 on both
  // sides; the gathered fields equal those of the batches' push-forwards applied in that order on one process.
  const int d = 4;
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < d; ++a) axes.push_back(meshes::Axis::uniform(-3.0, 3.0, 8 + a));
  const meshes::BoxMesh mesh(std::move(axes));
  const double eta = 0.2;
  const meshes::AxisValues s{0.35, 0.3, 0.32, 0.3};
  std::vector<solver::GradientField> batchesD, batchesDPrime;
  for (int b = 0; b < 3; ++b) {
    batchesD.push_back(coupledQuadratic(d, 0.4 * b - 0.3));
    batchesDPrime.push_back(coupledQuadratic(d, b == 1 ? 0.9 : 0.4 * b - 0.3));  // D' differs in batch 1
  }
  std::vector<double> start(mesh.totalCells());
  for (std::size_t c = 0; c < start.size(); ++c) {
    const auto x = mesh.centreAt(mesh.indexOf(c));
    double r2 = 0.0;
    for (int a = 0; a < d; ++a) r2 += x[a] * x[a];
    start[c] = std::exp(-r2);
  }
  std::vector<double> p = start, q = start;
  const solver::GaussianConvolution noise(mesh, s);
  for (long k = 0; k < 5; ++k) {
    const solver::PushForward pushD(mesh, batchesD[static_cast<std::size_t>(k % 3)], eta);
    const solver::PushForward pushDPrime(mesh, batchesDPrime[static_cast<std::size_t>(k % 3)], eta);
    pushD.apply(p);
    noise.apply(p);
    pushDPrime.apply(q);
    noise.apply(q);
  }
  const solver::SlabNoisyGd slabs(PETSC_COMM_WORLD, mesh, batchesD, batchesDPrime, eta, s);
  auto pp = slabs.part(start), qq = slabs.part(start);
  for (long k = 0; k < 5; ++k) slabs.step(pp, qq, k);
  BOOST_TEST((slabs.gather(pp) == p));
  BOOST_TEST((slabs.gather(qq) == q));
  BOOST_TEST((p != q));  // the batch that differs made a difference
  BOOST_CHECK_THROW(solver::SlabNoisyGd(PETSC_COMM_WORLD, mesh, batchesD, {batchesDPrime[0]}, eta, s),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(poisson_mixtures_split_over_the_ranks_equal_one_process) {
  // Poisson sampling's step (MATH.md §8): sum_B w_B T_B # p, then one convolution; D with three batch maps, D' with
  // four (an added record), 3 steps in 4-D. On one process: each map's PushForward on a copy, the images summed with
  // their weights in the maps' order, then the convolution.
  const int d = 4;
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < d; ++a) axes.push_back(meshes::Axis::uniform(-3.0, 3.0, 9 + a % 2));
  const meshes::BoxMesh mesh(std::move(axes));
  const double eta = 0.2;
  const meshes::AxisValues s{0.35, 0.3, 0.32, 0.3};
  std::vector<solver::SlabNoisyGd::WeightedBatch> mixD, mixDPrime;
  const std::vector<double> wD{0.25, 0.5, 0.25}, wDPrime{0.125, 0.375, 0.375, 0.125};
  for (std::size_t b = 0; b < wD.size(); ++b) mixD.push_back({wD[b], coupledQuadratic(d, 0.3 * static_cast<double>(b))});
  for (std::size_t b = 0; b < wDPrime.size(); ++b)
    mixDPrime.push_back({wDPrime[b], coupledQuadratic(d, 0.3 * static_cast<double>(b) - 0.2)});
  std::vector<double> start(mesh.totalCells());
  for (std::size_t c = 0; c < start.size(); ++c) {
    const auto x = mesh.centreAt(mesh.indexOf(c));
    double r2 = 0.0;
    for (int a = 0; a < d; ++a) r2 += (x[a] - 0.1 * a) * (x[a] - 0.1 * a);
    start[c] = std::exp(-r2);
  }
  const solver::GaussianConvolution noise(mesh, s);
  const auto stepOneProcess = [&](std::vector<double>& field, const std::vector<solver::SlabNoisyGd::WeightedBatch>& mix) {
    std::vector<double> sum(field.size(), 0.0);
    for (const auto& b : mix) {
      std::vector<double> image = field;
      solver::PushForward(mesh, b.gradient, eta).apply(image);
      for (std::size_t c = 0; c < sum.size(); ++c) sum[c] += b.weight * image[c];
    }
    noise.apply(sum);
    field = std::move(sum);
  };
  std::vector<double> p = start, q = start;
  const solver::SlabNoisyGd slabs(PETSC_COMM_WORLD, mesh, mixD, mixDPrime, eta, s);
  auto pp = slabs.part(start), qq = slabs.part(start);
  for (long k = 0; k < 3; ++k) {
    stepOneProcess(p, mixD);
    stepOneProcess(q, mixDPrime);
    slabs.step(pp, qq, k);
  }
  BOOST_TEST((slabs.gather(pp) == p));
  BOOST_TEST((slabs.gather(qq) == q));
  BOOST_TEST((p != q));
  // A map of weight 0 or without maps: refused.
  auto zero = mixD;
  zero[1].weight = 0.0;
  BOOST_CHECK_THROW(solver::SlabNoisyGd(PETSC_COMM_WORLD, mesh, zero, mixDPrime, eta, s), std::invalid_argument);
  BOOST_CHECK_THROW(solver::SlabNoisyGd(PETSC_COMM_WORLD, mesh, mixD, std::vector<solver::SlabNoisyGd::WeightedBatch>{},
                                        eta, s),
                    std::invalid_argument);
}

BOOST_AUTO_TEST_CASE(too_few_cells_for_the_ranks_are_refused) {
  int ranks = 1;
  MPI_Comm_size(PETSC_COMM_WORLD, &ranks);
  if (ranks < 2) return;
  const meshes::BoxMesh mesh({meshes::Axis::uniform(-1, 1, 1), meshes::Axis::uniform(-1, 1, 4)});
  BOOST_CHECK_THROW(solver::SlabNoisyGd(PETSC_COMM_WORLD, mesh, coupledQuadratic(2, 0.0), coupledQuadratic(2, 0.0), 0.1,
                                        meshes::AxisValues{0.3, 0.3}),
                    std::invalid_argument);
}
