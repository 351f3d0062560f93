// Parallel = serial for the Rényi rate functional (solver/functionals/RenyiRate.hpp): the exact cell averages of a 2-D Gaussian
// pair and a position-dependent drift gap, evaluated on all ranks of PETSC_COMM_WORLD and, on every rank, alone on
// PETSC_COMM_SELF. I/E (both forms), the cross term, the identity's rate, the measured gap and the excluded share must
// agree to 1e-12 relative (sums in a different order; the gradients read ghost cells across the rank boundary).
// Registered with RANKS 2.
#define BOOST_TEST_MODULE solver_renyi_rate_parallel
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "PetscFixture.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"
#include "solver/functionals/RenyiRate.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {

solver::RenyiRateValues evaluateOn(MPI_Comm comm, const std::vector<double>& orders) {
  const meshes::DistributedBoxMesh mesh(
      comm, meshes::BoxMesh({meshes::Axis::uniform(-6.0, 6.0, 64), meshes::Axis::uniform(-6.0, 6.0, 48)}), 2);
  models::Vector m1(2), m2(2);
  m1 << 0.4, -0.2;
  m2 << 0.0, 0.1;
  models::Matrix S1(2, 2), S2(2, 2), Sigma(2, 2);
  S1 << 0.8, 0.1, 0.1, 0.6;
  S2 << 0.7, 0.0, 0.0, 0.7;
  Sigma << 0.5, 0.1, 0.1, 0.3;
  const models::Gaussian p(m1, S1), q(m2, S2);
  auto u = mesh.createVector();
  PetscScalar* a;
  VecGetArray(u, &a);
  std::vector<std::array<double, 3>> gap(static_cast<std::size_t>(mesh.owned().size()));
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const auto [lo, hi] = mesh.box().cellBounds(i, j, k);
    a[2 * l] = p.cellAverage(lo, hi);
    a[2 * l + 1] = q.cellAverage(lo, hi);
    const auto x = mesh.box().centre(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
    gap[l] = {0.3 * std::tanh(x[0]), -0.2 + 0.05 * x[1], 0};  // a logistic-like, position-dependent gap
  });
  VecRestoreArray(u, &a);
  const solver::RenyiRateFunctional rate(mesh, orders, Sigma);
  return rate.evaluate(u, gap);
}

void requireClose(double a, double b, const std::string& what) {
  const double rel = a == b ? 0.0 : std::fabs(a - b) / std::max(std::fabs(b), 1e-300);
  BOOST_TEST(rel <= 1e-12, what << ": parallel " << a << " vs serial " << b);
}

}  // namespace

BOOST_AUTO_TEST_CASE(two_ranks_equal_one_rank) {
  PetscMPIInt size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  BOOST_REQUIRE(size >= 2);  // registered with mpiexec -n 2; a serial launch would test nothing
  const std::vector<double> orders{1.5, 2.0, 4.0};
  const auto par = evaluateOn(PETSC_COMM_WORLD, orders);
  const auto ser = evaluateOn(PETSC_COMM_SELF, orders);
  for (std::size_t k = 0; k < orders.size(); ++k) {
    const std::string o = " alpha " + std::to_string(orders[k]);
    requireClose(par[k].informationRatio, ser[k].informationRatio, "I/E" + o);
    requireClose(par[k].informationRatioSigma, ser[k].informationRatioSigma, "I^Sigma/E" + o);
    requireClose(par[k].cross, ser[k].cross, "X" + o);
    requireClose(par[k].rateIdentity, ser[k].rateIdentity, "rate" + o);
    requireClose(par[k].supDriftGap, ser[k].supDriftGap, "sup gap" + o);
    requireClose(par[k].supDriftGapSigma, ser[k].supDriftGapSigma, "sup gap Sigma" + o);
    BOOST_TEST(par[k].excludedShare == 0.0);
    BOOST_TEST(ser[k].excludedShare == 0.0);
    BOOST_TEST(std::isfinite(par[k].rateIdentity));
  }
}
