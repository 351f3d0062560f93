// Parallel = serial for the divergence functionals (solver/functionals/Divergences.hpp): the same exact cell averages of a 2-D
// unequal-covariance pair, evaluated on all ranks of PETSC_COMM_WORLD and, on every rank, alone on PETSC_COMM_SELF.
// d R/d alpha, E_alpha, the information ratios (whose gradients read ghost cells across the rank boundary), the
// hockey-stick curves and the privacy-loss histograms must agree to 1e-12 relative (sums in a different order), the
// statuses exactly; R_alpha(q || p) likewise; eps(delta) to the root finder's tolerance, and bit for bit on every
// rank. Registered with RANKS 2.
#define BOOST_TEST_MODULE solver_divergence_functionals_parallel
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <numbers>

#include "DivergenceFunctionalsFixture.hpp"
#include "PetscFixture.hpp"
#include "meshes/DistributedBoxMesh.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {

void requireClose(double a, double b, const std::string& what) {
  if (std::isnan(a) && std::isnan(b)) return;
  const double rel = a == b ? 0.0 : std::fabs(a - b) / std::max(std::fabs(b), 1e-300);
  BOOST_TEST(rel <= 1e-12, what << ": parallel " << a << " vs serial " << b);
}

void requireClose(const std::vector<double>& a, const std::vector<double>& b, const std::string& what) {
  BOOST_REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) requireClose(a[i], b[i], what + "[" + std::to_string(i) + "]");
}

}  // namespace

BOOST_AUTO_TEST_CASE(two_ranks_equal_one_rank) {
  PetscMPIInt size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  BOOST_REQUIRE(size >= 2);  // registered with mpiexec -n 2; a serial launch would test nothing
  const double angle = std::numbers::pi / 6;
  models::Matrix R(2, 2), D1 = models::Matrix::Zero(2, 2), D2 = models::Matrix::Zero(2, 2);
  R << std::cos(angle), -std::sin(angle), std::sin(angle), std::cos(angle);
  D1(0, 0) = 1.5, D1(1, 1) = 0.5, D2(0, 0) = 1.0, D2(1, 1) = 0.5;
  models::Vector m1(2), m2(2);
  m1 << 0.3, 0.0;
  m2 << 0.0, 0.1;
  const models::Gaussian p(m1, R * D1 * R.transpose()), q(m2, R * D2 * R.transpose());
  models::Matrix Sigma(2, 2);
  Sigma << 0.5, 0.1, 0.1, 0.3;
  // Orders on both sides of the critical order 3, an eps grid, 64 histogram bins.
  solver::FunctionalSettings s{{1.5, 2.0, 2.9, 4.0}, models::uniformEpsGrid(2.0, 0.25), 64, Sigma};
  s.epsilonDeltas = {0.2, 1e-3, 1e-8};
  s.reverseDirection = true;
  const auto par = testing::functionalsOfExactAverages(p, q, 12.0, 64, s, PETSC_COMM_WORLD);
  const auto ser = testing::functionalsOfExactAverages(p, q, 12.0, 64, s, PETSC_COMM_SELF);
  requireClose(par.kl, ser.kl, "KL");
  requireClose(par.renyi, ser.renyi, "R");
  requireClose(par.renyiOnBox, ser.renyiOnBox, "R on box");
  requireClose(par.logEAlpha, ser.logEAlpha, "log E");
  requireClose(par.eAlphaMinusOne, ser.eAlphaMinusOne, "E - 1");
  requireClose(par.dRenyiDAlpha, ser.dRenyiDAlpha, "dR/dalpha");
  requireClose(par.informationRatio, ser.informationRatio, "I/E");
  requireClose(par.informationRatioSigma, ser.informationRatioSigma, "I^Sigma/E");
  requireClose(par.informationExcludedMassP, ser.informationExcludedMassP, "excluded");
  requireClose(par.hockeyStickPQ, ser.hockeyStickPQ, "delta_pq");
  requireClose(par.hockeyStickQP, ser.hockeyStickQP, "delta_qp");
  for (std::size_t k = 0; k < s.orders.size(); ++k) {
    BOOST_TEST((par.renyiStatus[k] == ser.renyiStatus[k]), "status of order " << s.orders[k]);
    BOOST_TEST_MESSAGE("order " << s.orders[k] << ": " << solver::renyiStatusName(par.renyiStatus[k]) << ", R "
                                << par.renyi[k] << ", dR/dalpha " << par.dRenyiDAlpha[k] << ", I/E "
                                << par.informationRatio[k]);
  }
  // R_alpha(q || p) and KL(q || p), and eps(delta) of both directions: every rank takes the same root-finding path
  // (the sums are reduced on rank 0 and broadcast), so the ranks hold bit-identical values; against one rank the
  // sums differ in the order of the additions, the roots by the root finder's tolerance (1e-10 relative) at most.
  requireClose(par.reverse.renyi, ser.reverse.renyi, "R(q||p)");
  requireClose(par.reverse.kl, ser.reverse.kl, "KL(q||p)");
  for (std::size_t k = 0; k < s.orders.size(); ++k)
    BOOST_TEST((par.reverse.renyiStatus[k] == ser.reverse.renyiStatus[k]), "reverse status of order " << s.orders[k]);
  BOOST_TEST_REQUIRE(par.exactEpsilon.size() == s.epsilonDeltas.size());
  std::vector<double> mine;
  for (std::size_t j = 0; j < s.epsilonDeltas.size(); ++j) {
    for (auto [a, b] : {std::pair{&par.exactEpsilon[j].pair.pq, &ser.exactEpsilon[j].pair.pq},
                        std::pair{&par.exactEpsilon[j].pair.qp, &ser.exactEpsilon[j].pair.qp}}) {
      BOOST_TEST((a->status == b->status));
      BOOST_TEST(std::fabs(a->epsilon - b->epsilon) <= 2e-10 * b->epsilon, "eps " << a->epsilon << " vs " << b->epsilon);
      mine.insert(mine.end(), {a->epsilon, a->lower, a->deltaAtEpsilon, static_cast<double>(a->rounds)});
    }
    BOOST_TEST_MESSAGE("delta " << s.epsilonDeltas[j] << ": eps p||q " << par.exactEpsilon[j].pair.pq.epsilon
                                << ", q||p " << par.exactEpsilon[j].pair.qp.epsilon);
  }
  std::vector<double> all(mine.size() * static_cast<std::size_t>(size));
  MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, all.data(), static_cast<int>(mine.size()),
                MPI_DOUBLE, PETSC_COMM_WORLD);
  for (int r = 1; r < size; ++r)
    for (std::size_t i = 0; i < mine.size(); ++i)
      BOOST_TEST(all[static_cast<std::size_t>(r) * mine.size() + i] == all[i], "rank " << r << " value " << i);
  for (auto [a, b] : {std::pair{&par.privacyLossP, &ser.privacyLossP}, std::pair{&par.privacyLossQ, &ser.privacyLossQ}}) {
    // The range moves with the normalisation (masses summed in another order): 1e-15 relative.
    requireClose(a->lower, b->lower, "histogram lower");
    requireClose(a->upper, b->upper, "histogram upper");
    requireClose(a->mass, b->mass, "histogram");
    requireClose(a->massInfinity, b->massInfinity, "mass at +inf");
  }
}

BOOST_AUTO_TEST_CASE(a_rank_with_one_cell_gets_no_information_but_every_other_functional) {
  // 3 cells on 2 ranks: one rank owns a single cell, too few for the width-2 gradient stencils. The information
  // ratios are then NaN with the reason stated (the run prints it); the other functionals are unaffected.
  PetscMPIInt size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  BOOST_REQUIRE(size == 2);
  const meshes::DistributedBoxMesh par(PETSC_COMM_WORLD, meshes::BoxMesh({meshes::Axis::uniform(0.0, 1.0, 3)}), 2);
  const meshes::DistributedBoxMesh ser(PETSC_COMM_SELF, meshes::BoxMesh({meshes::Axis::uniform(0.0, 1.0, 3)}), 2);
  const solver::FunctionalSettings s{{2.0}, {0.0, 0.5}, 4, std::nullopt};
  const solver::DivergenceFunctionals fPar(par, s), fSer(ser, s);
  BOOST_TEST_MESSAGE("2 ranks: " << fPar.informationUnavailable());
  BOOST_TEST(!fPar.informationUnavailable().empty());
  BOOST_TEST(fSer.informationUnavailable().empty());
  const double pAll[3] = {0.8, 1.0, 1.2}, qAll[3] = {1.0, 1.0, 1.0};
  const auto& o = par.owned();
  const auto vPar = fPar.evaluate(pAll + o.start[0], qAll + o.start[0], 1);
  const auto vSer = fSer.evaluate(pAll, qAll, 1);
  BOOST_TEST(std::isnan(vPar.informationRatio[0]));
  BOOST_TEST(std::isfinite(vSer.informationRatio[0]));
  requireClose(vPar.renyi[0], vSer.renyi[0], "R_2");
  requireClose(vPar.dRenyiDAlpha[0], vSer.dRenyiDAlpha[0], "dR/dalpha");
  requireClose(vPar.hockeyStickPQ, vSer.hockeyStickPQ, "delta_pq");
}
