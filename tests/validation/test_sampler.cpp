// The Monte Carlo sampler (validation/MonteCarloSampler) against exact laws and against the density solver.
//   - quadratic loss: the iterates are Gaussian (MATH.md §6 recursions, validation/NoisyGdReference); sample means and
//     covariances lie within their confidence intervals, which are checked not to be trivially wide;
//   - projected (box) noisy GD after one step from a narrow Gaussian: the boundary atoms are normal tail
//     probabilities and every bin (cells, faces, edges, corners) has a closed-form mass: L1 band and chi-square;
//   - logistic loss: histograms, divergence estimates and the membership-inference audit against the solver run
//     in-process (solver/noisygd/NoisyGradientDescent, as tests/solver/test_noisy_gd.cpp), tolerances from the sample size;
//   - the same seed gives bit-identical results on 1, 2 and 3 threads;
//   - the normal variates follow N(0, 1) into the tails (histogram and the counts beyond the ziggurat's R).
// Every tolerance is a quantile at a stated level gamma, Bonferroni-corrected over the checks of a test case.
#define BOOST_TEST_MODULE validation_sampler
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <numbers>

#include "../solver/PetscFixture.hpp"
#include "SamplerTestSupport.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"
#include "models/GaussianFunctionals.hpp"
#include "solver/noisygd/ConstraintProjection.hpp"
#include "solver/functionals/Divergences.hpp"
#include "solver/noisygd/NoisyGradientDescent.hpp"
#include "validation/LaneRandom.hpp"
#include "validation/NoisyGdReference.hpp"
#include "validation/SampleAgreement.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {

constexpr double kGamma = 1e-3;  // false-alarm probability allowed per test case (shared out by Bonferroni)

double zFor(int checks) { return validation::normalQuantileTwoSided(1.0 - kGamma / checks); }

double normalCdf(double x) { return 0.5 * std::erfc(-x / std::numbers::sqrt2); }

meshes::BoxMesh uniformMesh(std::initializer_list<std::array<double, 3>> axes) {
  std::vector<meshes::Axis> a;
  for (const auto& [lo, hi, n] : axes) a.push_back(meshes::Axis::uniform(lo, hi, static_cast<int>(n)));
  return meshes::BoxMesh(std::move(a));
}

void checkGaussianMoments(const validation::SamplerProblem& problem, const meshes::BoxMesh& mesh, long particles) {
  const int d = mesh.dim();
  validation::SamplerSettings settings;
  settings.particles = particles;
  settings.seed = 20261121;
  settings.threads = 2;
  const auto snapshots = validation::MonteCarloSampler(problem, mesh, settings).run();
  const auto reference = validation::NoisyGdReference::forQuadratic(
      *problem.lossD, *problem.lossDPrime, problem.step, problem.sigma,
      models::Gaussian(problem.initialMean, problem.initialCovariance));
  BOOST_REQUIRE(reference);
  const int checks = static_cast<int>(snapshots.size()) * 2 * (d + d * (d + 1) / 2);
  const double z = zFor(checks);
  BOOST_TEST_MESSAGE("Gaussian moments, " << d << "-D, N = " << particles << ", z = " << z << " (" << checks
                                           << " checks at total level " << kGamma << ")");
  for (const auto& snap : snapshots)
    for (int s = 0; s < 2; ++s) {
      const models::Gaussian law = s == 0 ? reference->lawP(snap.step) : reference->lawQ(snap.step);
      const auto& m = snap.moments[s];
      BOOST_TEST(m.count == particles);
      for (int a = 0; a < d; ++a) {
        const double sd = std::sqrt(law.covariance()(a, a));
        BOOST_TEST(std::abs(m.mean[a] - law.mean()[a]) <= z * m.meanStandardError[a],
                   "step " << snap.step << " process " << s << " mean[" << a << "] " << m.mean[a] << " exact "
                           << law.mean()[a] << " se " << m.meanStandardError[a]);
        // Not trivially wide: with N >= 1e5 the interval z sd/sqrt(N) resolves the mean to 2% of a standard deviation.
        BOOST_TEST(z * m.meanStandardError[a] < 0.02 * sd);
        for (int b = a; b < d; ++b) {
          const double exact = law.covariance()(a, b);
          const double se = m.covarianceStandardError(a, b);
          BOOST_TEST(std::abs(m.covariance(a, b) - exact) <= z * se,
                     "step " << snap.step << " process " << s << " cov(" << a << "," << b << ") " << m.covariance(a, b)
                             << " exact " << exact << " se " << se);
          const double scale = std::sqrt(law.covariance()(a, a) * law.covariance()(b, b));
          BOOST_TEST(z * se < 0.03 * scale);
          // The batch-means error agrees with the Gaussian theory sqrt((C_aa C_bb + C_ab^2)/N): 64 batches give it
          // to ~9% (one standard deviation, 1/sqrt(2 x 63)); [0.6, 1.4] is beyond 4 of them.
          const double theory = std::sqrt((law.covariance()(a, a) * law.covariance()(b, b) + exact * exact) / particles);
          BOOST_TEST(se / theory > 0.6);
          BOOST_TEST(se / theory < 1.4);
        }
      }
    }
}

}  // namespace

// The sampler counts in the solver's bins (solver::BoundaryBins, docs/output.md "Bin order"): 2-D box on the mesh
// [-1, 1] x [0, 2] of 4 x 2 cells, C = the mesh: 4 corners + 2 x 4 + 2 x 2 edge bins.
BOOST_AUTO_TEST_CASE(boundary_bins) {
  const meshes::BoxMesh mesh = uniformMesh({{-1, 1, 4}, {0, 2, 2}});
  const auto box = models::ConstraintSet::box((models::Vector(2) << -1, 0).finished(), (models::Vector(2) << 1, 2).finished());
  const solver::BoundaryBins bins(mesh, box);
  BOOST_TEST(bins.size() == 4u + 2u * 4u + 2u * 2u);
  const double corner[2] = {-1, 2}, face[2] = {0.3, 0}, interior[2] = {0.3, 0.5};
  const std::size_t c = bins.projectedPointBin(corner, true), f = bins.projectedPointBin(face, true);
  BOOST_TEST(bins.pieceName(c) == "-+");
  BOOST_TEST(c == bins.boxBin({0, 2, 1}, {0, 0, 0}));
  BOOST_TEST(bins.pieceName(f) == "0-");
  BOOST_TEST(f == bins.boxBin({1, 0, 1}, {2, 0, 0}));  // x = 0.3 lies in the third cell of [-1, 1]
  BOOST_TEST(bins.points()[f][0] == 0.25);
  BOOST_TEST((bins.projectedPointBin(interior, false) == solver::BoundaryBins::kInterior));
  const auto ball = models::ConstraintSet::ball(models::Vector::Zero(2), 1.0);
  const solver::BoundaryBins arcs(uniformMesh({{-1, 1, 4}, {-1, 1, 4}}), ball, 8);  // C must lie in the mesh
  BOOST_TEST(arcs.size() == 8u);
  const double east[2] = {1.0, 1e-9}, west[2] = {-1.0, -1e-9};
  BOOST_TEST(arcs.projectedPointBin(east, true) == 4u);  // angle 0+ lies in arc [0, pi/4)
  BOOST_TEST(arcs.projectedPointBin(west, true) == 0u);  // angle -pi+ lies in arc [-pi, -3pi/4)
  BOOST_TEST((arcs.projectedPointBin(east, false) == solver::BoundaryBins::kInterior));
}

// The audit's exact eps(delta) runs over every bin it is given, boundary bins included: p and q equal on the cells
// and different only on two boundary atoms (P = 0.3, 0.1 and Q = 0.1, 0.3 there) have
// delta(eps) = 0.3 - 0.1 e^eps on [0, log 3) for both orders, so eps(delta) = log((0.3 - delta)/0.1); the cells alone
// would give 0.
BOOST_AUTO_TEST_CASE(audit_hockey_stick_includes_the_boundary_bins) {
  const std::vector<double> P{0.3, 0.3, 0.3, 0.1}, Q{0.3, 0.3, 0.1, 0.3};
  const std::vector<std::int64_t> countsP{3000, 3000, 3000, 1000}, countsQ{3000, 3000, 1000, 3000};
  const double delta = 1e-3;
  const auto mia = validation::audit(countsP, 10000, countsQ, 10000, P, Q, delta, 0.99, 4);
  const double exact = std::log((0.3 - delta) / 0.1);
  BOOST_TEST(std::abs(mia.epsilonExact - exact) <= 1e-9 * exact);  // root-finding to 1e-10 relative
  BOOST_TEST(validation::hockeyStick(P, Q, exact) == delta, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(validation::epsilonAtDelta({0.3, 0.3}, {0.3, 0.3}, delta) == 0.0);
}

BOOST_AUTO_TEST_CASE(gaussian_moments_quadratic_1d) {
  auto p = testing::quadraticProblem(models::Vector::Constant(1, 0.3), models::Vector::Zero(1),
                                     models::Matrix::Identity(1, 1), 0.1, 10, models::Vector::Zero(1),
                                     models::Matrix::Constant(1, 1, 0.5));
  p.outputSteps = {0, 5, 10};
  checkGaussianMoments(p, uniformMesh({{-9, 9, 90}}), 200000);
}

BOOST_AUTO_TEST_CASE(gaussian_moments_quadratic_2d_anisotropic) {
  const models::Matrix Sigma = (models::Matrix(2, 2) << 1.0, 0.3, 0.3, 0.5).finished();
  auto p = testing::quadraticProblem((models::Vector(2) << 0.3, 0.2).finished(), models::Vector::Zero(2), Sigma, 0.2, 8,
                                     (models::Vector(2) << 0.5, -0.5).finished(), 0.3 * models::Matrix::Identity(2, 2));
  p.outputSteps = {0, 8};
  checkGaussianMoments(p, uniformMesh({{-6, 6, 30}, {-6, 6, 30}}), 100000);
}

BOOST_AUTO_TEST_CASE(threads_give_identical_results) {
  auto p = testing::logisticProblem(0.1, 15, 0.3);
  p.outputSteps = {0, 7, 15};
  const meshes::BoxMesh mesh = uniformMesh({{-3, 4, 140}});
  validation::SamplerSettings s;
  s.particles = 20000;
  s.seed = 99;
  s.threads = 1;
  const auto one = validation::MonteCarloSampler(p, mesh, s).run();
  for (int threads : {2, 3}) {
    s.threads = threads;
    const auto many = validation::MonteCarloSampler(p, mesh, s).run();
    for (std::size_t o = 0; o < one.size(); ++o) BOOST_TEST(testing::identical(one[o], many[o]));
  }
  s.seed = 100;  // and a different seed changes them
  BOOST_TEST(!testing::identical(one.back(), validation::MonteCarloSampler(p, mesh, s).run().back()));
}

// The lane generator is Random123's Philox4x32-10, word for word, and a particle's stream 3 reads its blocks in order.
BOOST_AUTO_TEST_CASE(lane_philox_is_random123s) {
  constexpr int W = 8;
  const validation::lanes::StreamKey key(0x0123456789ABCDEFull);
  std::uint32_t lo[W], hi[W];
  for (int p = 0; p < W; ++p) {
    const std::uint64_t particle = 0xFFFFFFFCull + static_cast<std::uint64_t>(p);  // across the 32-bit boundary
    lo[p] = static_cast<std::uint32_t>(particle);
    hi[p] = static_cast<std::uint32_t>(particle >> 32);
  }
  validation::lanes::LaneBlock<W> block;
  block.generate(key, 77, lo, hi, 1, validation::lanes::kNoiseStream);
  for (int p = 0; p < W; ++p) {
    const auto expected = r123::Philox4x32()(r123::Philox4x32::ctr_type{{77, lo[p], hi[p], 4 * 1 + 1}},
                                             r123::Philox4x32::key_type{{key.k0, key.k1}});
    for (int w = 0; w < 4; ++w) BOOST_TEST(block.words[w][p] == expected[w]);
  }
  validation::lanes::SpillWords spill(key, 0xFFFFFFFCull, 1);
  validation::lanes::LaneBlock<W> spillBlock;
  for (std::uint32_t b = 0; b < 3; ++b) {
    spillBlock.generate(key, b, lo, hi, 1, validation::lanes::kSpillStream);
    for (int h = 0; h < 2; ++h) BOOST_TEST(spill.next() == spillBlock.word(h, 0));
  }
  // Random123's known answers (its kat_vectors, philox4x32 10): zero counter and key, and the digits of pi.
  const std::uint32_t kat[2][10] = {{0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
                                    {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
                                     0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}};
  for (const auto& v : kat) {
    std::uint64_t c0[1] = {v[0]}, c1[1] = {v[1]}, c2[1] = {v[2]}, c3[1] = {v[3]};
    validation::lanes::philoxRounds<1>(c0, c1, c2, c3, v[4], v[5]);
    BOOST_TEST(c0[0] == v[6]);
    BOOST_TEST(c1[0] == v[7]);
    BOOST_TEST(c2[0] == v[8]);
    BOOST_TEST(c3[0] == v[9]);
  }
}

// The lane loops' copies for AVX-512 / AVX2 and the baseline give the same bits: the logistic lane drift (full and
// Poisson batches, clipped), the quadratic mean shortcut under a box projection in 2-D, and a loss without a lane
// form (Huber: the scalar path).
BOOST_AUTO_TEST_CASE(instruction_set_copies_give_identical_results) {
  BOOST_TEST_MESSAGE("sampler lane loops: " << validation::MonteCarloSampler::vectorKernels());
  auto logistic = testing::logisticProblem(0.1, 12, 0.3);
  logistic.outputSteps = {0, 5, 12};
  auto poisson = logistic;
  poisson.batches.sampling = models::BatchSampling::Poisson;
  poisson.batches.rate = 0.4;
  poisson.batches.divisor = 2.4;
  const auto logisticLoss = std::make_shared<models::LogisticLoss>(0.5);
  poisson.lossD = std::make_shared<models::EmpiricalLoss>(logisticLoss, logistic.lossD->data(), 0.8);
  poisson.lossDPrime = std::make_shared<models::EmpiricalLoss>(logisticLoss, logistic.lossDPrime->data(), 0.8);
  auto projected = testing::quadraticProblem((models::Vector(2) << 0.3, 0.2).finished(), models::Vector::Zero(2),
                                             models::Matrix::Identity(2, 2), 0.2, 6, models::Vector::Zero(2),
                                             models::Matrix::Identity(2, 2));
  projected.constraint = models::ConstraintSet::box((models::Vector(2) << -1.0, -1.0).finished(),
                                                    (models::Vector(2) << 1.0, 1.0).finished());
  auto huber = logistic;
  const auto huberLoss = std::make_shared<models::HuberLoss>(0.5, 0.1);
  huber.lossD = std::make_shared<models::EmpiricalLoss>(huberLoss, logistic.lossD->data());
  huber.lossDPrime = std::make_shared<models::EmpiricalLoss>(huberLoss, logistic.lossDPrime->data());
  validation::SamplerSettings s;
  s.particles = 3000;  // not a multiple of the lane group: the last group's unused lanes are dropped
  s.seed = 5;
  s.threads = 2;
  const meshes::BoxMesh line = uniformMesh({{-3, 4, 70}}), square = uniformMesh({{-1, 1, 20}, {-1, 1, 20}});
  for (const auto* problem : {&logistic, &poisson, &projected, &huber}) {
    const meshes::BoxMesh& mesh = problem == &projected ? square : line;
    validation::MonteCarloSampler::useVectorKernels(true);
    const auto vector = validation::MonteCarloSampler(*problem, mesh, s).run();
    validation::MonteCarloSampler::useVectorKernels(false);
    BOOST_TEST(validation::MonteCarloSampler::vectorKernels() == std::string("baseline"));
    const auto baseline = validation::MonteCarloSampler(*problem, mesh, s).run();
    validation::MonteCarloSampler::useVectorKernels(true);
    for (std::size_t o = 0; o < vector.size(); ++o) BOOST_TEST(testing::identical(vector[o], baseline[o]));
  }
}

// One projected step from theta_0 ~ N(m_0, v_0 I) far inside C = [l, u]: before the projection theta is
// N(m_1, v_1 I), m_1 = (1 - eta) m_0 + eta xbar, v_1 = (1 - eta)^2 v_0 + 2 eta sigma^2 (lambda = 1), independent per
// axis, so each axis puts Phi((l_a - m_1)/s) on the lower face, 1 - Phi((u_a - m_1)/s) on the upper one and the
// normal cell probabilities inside: every bin of the product has a closed-form mass.
BOOST_AUTO_TEST_CASE(box_projection_atoms_are_normal_tails) {
  for (int d : {1, 2}) {
    const models::Vector lower = (models::Vector(2) << -0.5, -0.3).finished().head(d);
    const models::Vector upper = (models::Vector(2) << 0.8, 0.6).finished().head(d);
    const models::Vector xbar = models::Vector::Constant(d, 0.3), m0 = models::Vector::Constant(d, 0.1);
    const double eta = 0.5, sigma = 0.6, v0 = 1e-4;  // theta_0 is 40 standard deviations inside C
    auto p = testing::quadraticProblem(xbar, models::Vector::Zero(d), sigma * sigma * models::Matrix::Identity(d, d),
                                       eta, 1, m0, v0 * models::Matrix::Identity(d, d));
    p.constraint = models::ConstraintSet::box(lower, upper);
    const std::array<int, 2> cells{13, 9};
    std::vector<meshes::Axis> axes;
    for (int a = 0; a < d; ++a) axes.push_back(meshes::Axis::uniform(lower[a], upper[a], cells[a]));
    const meshes::BoxMesh mesh(axes);
    validation::SamplerSettings s;
    s.particles = 200000;
    s.seed = 5;
    s.threads = 2;
    const validation::MonteCarloSampler sampler(p, mesh, s);
    const solver::BoundaryBins& bins = sampler.boundaryBins();
    const auto snap = sampler.run().back();
    const double m1 = (1 - eta) * m0[0] + eta * xbar[0], sd = std::sqrt((1 - eta) * (1 - eta) * v0 + 2 * eta * sigma * sigma);
    // Per axis: mass of code 0 (lower face), i + 1 (cell i), N + 1 (upper face).
    auto axisMass = [&](int a, int code) {
      const meshes::Axis& ax = mesh.axis(a);
      if (code == 0) return normalCdf((ax.lower() - m1) / sd);
      if (code == ax.cells() + 1) return 1.0 - normalCdf((ax.upper() - m1) / sd);
      return normalCdf((ax.face(code) - m1) / sd) - normalCdf((ax.face(code - 1) - m1) / sd);
    };
    std::vector<double> mass;
    std::vector<std::int64_t> counts = snap.histogram[0].cells;
    for (std::size_t c = 0; c < mesh.totalCells(); ++c) {
      const int i = static_cast<int>(c % mesh.cells(0)), j = static_cast<int>(c / mesh.cells(0));
      mass.push_back(axisMass(0, i + 1) * (d > 1 ? axisMass(1, j + 1) : 1.0));
    }
    // A bin's per-axis code from its piece ('-' below, '0' inside, '+' above) and, on the inside axes, the cell
    // holding its representative point (the cell centre along the piece).
    for (std::size_t b = 0; b < bins.size(); ++b) {
      const std::string piece = bins.pieceName(b);
      auto code = [&](int a) {
        const meshes::Axis& ax = mesh.axis(a);
        return piece[a] == '-' ? 0 : piece[a] == '+' ? ax.cells() + 1 : ax.locate(bins.points()[b][a]) + 1;
      };
      mass.push_back(axisMass(0, code(0)) * (d > 1 ? axisMass(1, code(1)) : 1.0));
      counts.push_back(snap.histogram[0].boundary[b]);
    }
    BOOST_TEST(bins.size() == (d == 1 ? 2u : 4u + 2u * 13u + 2u * 9u));
    BOOST_TEST(snap.histogram[0].outside == 0);
    // The atoms themselves (1-D: two bins; 2-D: the lower-left corner), each within z sqrt(N P (1 - P)).
    const double z = zFor(4);
    const std::size_t firstAtom = mesh.totalCells();
    const double N = static_cast<double>(s.particles);
    const double P = mass[firstAtom];
    BOOST_TEST_MESSAGE(d << "-D box: first boundary bin '" << bins.pieceName(0) << "' count " << counts[firstAtom]
                          << ", expected " << N * P);
    BOOST_TEST(std::abs(static_cast<double>(counts[firstAtom]) - N * P) <= z * std::sqrt(N * P * (1 - P)));
    const auto agreement = validation::compareHistogram(counts, 0, mass, 1.0 - kGamma / 4);
    BOOST_TEST_MESSAGE("  L1 " << agreement.l1 << " (expected " << agreement.l1Expected << ", band "
                               << agreement.l1Band << "), chi2 " << agreement.chiSquare << " on "
                               << agreement.degreesOfFreedom << " dof, p = " << agreement.pValue);
    BOOST_TEST(agreement.withinBand);
    BOOST_TEST(agreement.pValue > kGamma / 4);
  }
}

// One projected step onto the disc B(c, R) from theta_0 ~ N(c, v_0 I) (narrow): with the quadratic loss centred at c
// the step is theta_1 = Pi_C(c + (1 - eta)(theta_0 - c) + sqrt(2 eta) sigma Z), isotropic Gaussian about c with
// variance v_1 = (1 - eta)^2 v_0 + 2 eta sigma^2, so the sphere carries P(|theta - c| > R) = exp(-R^2/(2 v_1))
// (Rayleigh) spread uniformly over the angle: each of the M arcs holds exp(-R^2/(2 v_1))/M.
BOOST_AUTO_TEST_CASE(ball_projection_mass_is_a_rayleigh_tail_spread_uniformly) {
  const models::Vector c = (models::Vector(2) << 0.2, -0.1).finished();
  const double eta = 0.5, sigma = 0.5, v0 = 1e-4, R = 0.6;
  auto p = testing::quadraticProblem(c, c, sigma * sigma * models::Matrix::Identity(2, 2), eta, 1, c,
                                     v0 * models::Matrix::Identity(2, 2));
  p.constraint = models::ConstraintSet::ball(c, R);
  const meshes::BoxMesh mesh = uniformMesh({{-0.4, 0.8, 24}, {-0.7, 0.5, 24}});
  validation::SamplerSettings s;
  s.particles = 200000;
  s.seed = 11;
  s.threads = 2;
  const validation::MonteCarloSampler sampler(p, mesh, s);
  const solver::BoundaryBins& bins = sampler.boundaryBins();
  const auto snap = sampler.run().back();
  const double v1 = (1 - eta) * (1 - eta) * v0 + 2 * eta * sigma * sigma;
  const double onSphere = std::exp(-R * R / (2 * v1));
  std::vector<std::int64_t> counts{0};  // bin 0: the interior of the disc (cells and off-mesh together)
  std::vector<double> mass{1.0 - onSphere};
  for (auto n : snap.histogram[0].cells) counts[0] += n;
  counts[0] += snap.histogram[0].outside;
  for (std::size_t b = 0; b < bins.size(); ++b) {
    counts.push_back(snap.histogram[0].boundary[b]);
    mass.push_back(onSphere / static_cast<double>(bins.size()));
  }
  const auto a = validation::compareHistogram(counts, 0, mass, 1.0 - kGamma / 2);
  BOOST_TEST_MESSAGE("ball: " << bins.size() << " arcs, sphere mass " << onSphere << "; L1 " << a.l1 << " (band "
                              << a.l1Band << "), chi2 " << a.chiSquare << "/" << a.degreesOfFreedom << " p = " << a.pValue);
  BOOST_TEST(bins.size() >= 30u);  // arcs about one cell long: 2 pi R / h = 75
  BOOST_TEST(a.withinBand);
  BOOST_TEST(a.pValue > kGamma / 2);
}

// The logistic case against the density solver: after K steps, the sample histograms agree with the solver's cell
// masses within the statistical band, the divergences averaged over the samples agree with the quadrature within
// their confidence intervals (plus the computed gap between the cell-midpoint and the fourth-order quadrature), and
// the membership-inference audit stays inside its band around the exact curve with a lower bound on eps below the
// exact eps(delta).
BOOST_AUTO_TEST_CASE(logistic_agrees_with_the_solver) {
  const double eta = 0.1, sigma = 0.3;
  const long K = 20;
  auto problem = testing::logisticProblem(eta, K, sigma);
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_SELF, meshes::BoxMesh({meshes::Axis::uniform(-3, 4, 700)}), 2);
  auto field = [](std::shared_ptr<const models::EmpiricalLoss> L) {
    return [L](const solver::ParameterPoint& t) {
      double g;
      L->gradientInto(t.data(), &g);
      return solver::ParameterPoint{g, 0, 0};
    };
  };
  solver::NoisyGdSettings settings;
  settings.eta = eta;
  settings.noiseVariance = {sigma * sigma, 1, 1};
  settings.diffusion = solver::DiffusionMethod::ExactConvolution;
  solver::NoisyGradientDescent gd(mesh, field(problem.lossD), field(problem.lossDPrime), settings);
  const models::Gaussian g0(problem.initialMean, problem.initialCovariance);
  auto u = mesh.createVector();
  {
    PetscScalar* a;
    VecGetArray(u, &a);
    mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
      const auto [lo, hi] = mesh.box().cellBounds(i, j, k);
      a[2 * l] = a[2 * l + 1] = g0.cellAverage(lo, hi);
    });
    VecRestoreArray(u, &a);
  }
  for (long k = 0; k < K; ++k) gd.step(u);
  const std::vector<double> orders{2.0};
  const auto quadrature = solver::DivergenceFunctionals(mesh, orders).evaluate(u);
  solver::FieldGatherer gather(mesh);
  const auto p = gather.gather(u, 0), q = gather.gather(u, 1);
  std::vector<double> massP(p.size()), massQ(q.size());
  for (std::size_t c = 0; c < p.size(); ++c) {
    const double volume = mesh.box().cellVolume(static_cast<int>(c), 0, 0);
    massP[c] = volume * std::max(p[c], 0.0);
    massQ[c] = volume * std::max(q[c], 0.0);
  }

  validation::SamplerSettings s;
  s.particles = 200000;
  s.seed = 7;
  s.threads = 2;
  const auto snap = validation::MonteCarloSampler(problem, mesh.box(), s).run().back();
  const double confidence = 1.0 - kGamma / 8;  // 8 checks below
  const double z = validation::normalQuantileTwoSided(confidence);
  for (int proc = 0; proc < 2; ++proc) {
    const auto& h = snap.histogram[proc];
    const auto a = validation::compareHistogram(h.cells, h.outside, proc == 0 ? massP : massQ, confidence);
    BOOST_TEST_MESSAGE("logistic " << (proc ? "q" : "p") << ": L1 " << a.l1 << " expected " << a.l1Expected << " band "
                                   << a.l1Band << ", chi2 " << a.chiSquare << "/" << a.degreesOfFreedom
                                   << " p = " << a.pValue << ", outside " << a.outsideFraction);
    BOOST_TEST(a.withinBand);
    BOOST_TEST(a.pValue > kGamma / 8);
  }
  const auto est = validation::estimateDivergences(snap.histogram[0].cells, snap.histogram[0].total,
                                                   snap.histogram[1].cells, snap.histogram[1].total, massP, massQ,
                                                   orders, confidence);
  BOOST_TEST_MESSAGE("KL: samples " << est.kl.estimate << " +- " << z * est.kl.standardError << ", cell sum "
                                    << est.binKl << ", quadrature " << quadrature.kl << "; plug-in " << est.pluginKl
                                    << " (bias " << est.pluginKlBias << ")");
  BOOST_TEST(quadrature.kl > 0.1);  // a pair that differs visibly, so the checks below have something to see
  BOOST_TEST(std::abs(est.kl.estimate - quadrature.kl) <= z * est.kl.standardError + std::abs(est.binKl - quadrature.kl));
  const double eQuad = std::expm1(quadrature.renyi[0]) + 1.0;  // E_2 = exp(R_2)
  const double eBin = std::exp(est.binRenyi[0]);
  BOOST_TEST_MESSAGE("E_2: samples " << est.eAlpha[0].estimate << " +- " << z * est.eAlpha[0].standardError
                                     << ", cell sum " << eBin << ", quadrature " << eQuad << "; R_2 plug-in "
                                     << est.pluginRenyi[0] << " (bias " << est.pluginRenyiBias[0] << ")");
  BOOST_TEST(std::abs(est.eAlpha[0].estimate - eQuad) <= z * est.eAlpha[0].standardError + std::abs(eBin - eQuad));

  const double delta = 1e-3;
  const auto mia = validation::audit(snap.histogram[0].cells, snap.histogram[0].total, snap.histogram[1].cells,
                                     snap.histogram[1].total, massP, massQ, delta, confidence, 32);
  BOOST_TEST_MESSAGE("audit: eps lower bound " << mia.epsilonLowerBound << " (point " << mia.epsilonPointEstimate
                                               << "), exact eps(" << delta << ") = " << mia.epsilonExact
                                               << ", thresholds " << mia.curve.size() << ", exact outside band "
                                               << mia.exactOutsideBand);
  BOOST_TEST(mia.curve.size() >= 16u);
  BOOST_TEST(mia.exactOutsideBand == 0);
  BOOST_TEST(mia.epsilonLowerBound <= mia.epsilonExact);
  BOOST_TEST(mia.epsilonLowerBound > 0.0);  // the audit detects membership at all
}

// The normal variates (Doornik's ziggurat on Philox words, validation/MonteCarloSampler.hpp) into their tails: the
// initial draw N(0, 1) of 2 x 10^6 particles per dataset, its histogram on [-6, 6] (cells of 0.05) against the normal
// cell probabilities (L1 band and chi-square), and the counts beyond the ziggurat's base layer R = 3.65 and beyond 4.5
// against their binomial expectations (z tests), at total level kGamma.
BOOST_AUTO_TEST_CASE(normal_variates_into_the_tails) {
  auto p = testing::quadraticProblem(models::Vector::Zero(1), models::Vector::Zero(1), models::Matrix::Identity(1, 1),
                                     0.1, 0, models::Vector::Zero(1), models::Matrix::Identity(1, 1));
  p.outputSteps = {0};
  const meshes::BoxMesh mesh = uniformMesh({{-6, 6, 240}});
  validation::SamplerSettings s;
  s.particles = 2000000;
  s.seed = 5;
  s.threads = 2;
  const auto snap = validation::MonteCarloSampler(p, mesh, s).run().front();
  std::vector<double> mass;
  for (int c = 0; c < 240; ++c)
    mass.push_back(models::normalIntervalProbability(mesh.axis(0).face(c), mesh.axis(0).face(c + 1)));
  const double z = zFor(2 * 3);
  for (int k = 0; k < 2; ++k) {
    const auto& h = snap.histogram[k];
    const auto agreement = validation::compareHistogram(h.cells, h.outside, mass, 1.0 - kGamma / 6);
    BOOST_TEST(agreement.agrees, "L1 " << agreement.l1 << " band " << agreement.l1Band << " chi2 "
                                       << agreement.chiSquare << "/" << agreement.degreesOfFreedom);
    for (double edge : {3.7, 4.5}) {  // cell faces: 3.7 is the first face beyond R
      double count = 0;
      for (int c = 0; c < 240; ++c)
        if (std::abs(mesh.axis(0).centre(c)) > edge) count += static_cast<double>(h.cells[static_cast<std::size_t>(c)]);
      count += static_cast<double>(h.outside);
      const double prob = 2.0 * models::normalIntervalProbability(edge, 40.0), n = static_cast<double>(h.total);
      BOOST_TEST(std::abs(count - n * prob) <= z * std::sqrt(n * prob * (1 - prob)),
                 "beyond " << edge << ": " << count << " expected " << n * prob);
    }
  }
}
