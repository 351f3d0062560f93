// Rényi divergences between Gaussians with different covariances (MATH.md §3, §6): R_alpha(N(m1, S1) || N(m2, S2))
// is +inf when S_alpha = alpha S2 + (1 - alpha) S1 is not positive definite, but the quadrature on a box is finite.
// DivergenceFunctionals must report +inf there (RenyiStatus::InfiniteDetected), keep finite orders finite, and
// flag a box that merely truncates a finite integrand (equal covariances, tilted centre outside the box) as
// RenyiStatus::TruncatedSuspect, not as infinite. Densities: exact cell averages (models::Gaussian::cellAverage).
#define BOOST_TEST_MODULE solver_anisotropic_divergences
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <numbers>

#include "PetscFixture.hpp"
#include "TestSupport.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"
#include "solver/functionals/Divergences.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;
using solver::RenyiStatus;

namespace {

using fpdp::testing::vec;

models::Matrix rotated(double angle, double e1, double e2) {
  models::Matrix R(2, 2);
  R << std::cos(angle), -std::sin(angle), std::sin(angle), std::cos(angle);
  models::Matrix D = models::Matrix::Zero(2, 2);
  D(0, 0) = e1, D(1, 1) = e2;
  models::Matrix S = R * D * R.transpose();
  return 0.5 * (S + S.transpose());
}

/// Exact cell averages of p and q on a uniform mesh of [-L, L]^dim, and the divergences of the orders.
solver::DivergenceValues divergencesOfExactAverages(const models::Gaussian& p, const models::Gaussian& q, double L,
                                                    int cells, const std::vector<double>& orders,
                                                    MPI_Comm comm = PETSC_COMM_WORLD) {
  const int dim = p.dim();
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < dim; ++a) axes.push_back(meshes::Axis::uniform(-L, L, cells));
  const meshes::DistributedBoxMesh mesh(comm, meshes::BoxMesh(axes), 2);
  std::vector<double> pv(static_cast<std::size_t>(mesh.owned().size())), qv(pv.size());
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    std::array<double, 3> lo{0, 0, 0}, hi{0, 0, 0};
    const std::array<PetscInt, 3> c{i, j, k};
    for (int a = 0; a < dim; ++a) {
      lo[a] = mesh.box().axis(a).face(static_cast<int>(c[a]));
      hi[a] = mesh.box().axis(a).face(static_cast<int>(c[a]) + 1);
    }
    pv[l] = p.cellAverage(lo, hi);
    qv[l] = q.cellAverage(lo, hi);
  });
  const solver::DivergenceFunctionals f(mesh, orders);
  return f.evaluate(pv.data(), qv.data(), 1);
}

void show(const char* what, const std::vector<double>& orders, const solver::DivergenceValues& v,
          const models::Gaussian& p, const models::Gaussian& q) {
  for (std::size_t k = 0; k < orders.size(); ++k) {
    const double exact = models::gaussianRenyi(p.mean(), p.covariance(), q.mean(), q.covariance(), orders[k]);
    const auto& L = v.renyiTailLogMean[k];
    BOOST_TEST_MESSAGE(what << ": alpha " << orders[k] << " exact " << exact << ", reported " << v.renyi[k]
                            << " (box " << v.renyiOnBox[k] << "), " << solver::renyiStatusName(v.renyiStatus[k])
                            << ", wall share " << v.renyiBoundaryShare[k] << ", shell increments " << L[0] - L[1]
                            << " " << L[1] - L[2] << " " << L[2] - L[3]);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(unequal_variances_1d_on_both_sides_of_finiteness) {
  // MATH.md §6 with p = N(0, S1), q = N(0, S2): S_alpha = alpha S2 + (1 - alpha) S1.
  // p = N(0, 2), q = N(0, 1): S_alpha = 2 - alpha, finite iff alpha < 2; the log-integrand is
  // alpha log p + (1 - alpha) log q = -x^2 (2 - alpha)/4 + const, convex for alpha > 2.
  const models::Gaussian wide(vec({0.0}), 2.0 * models::Matrix::Identity(1, 1));
  const models::Gaussian narrow(vec({0.0}), models::Matrix::Identity(1, 1));
  const std::vector<double> orders{1.5, 1.8, 2.5, 3.0, 8.0};
  const auto v = divergencesOfExactAverages(wide, narrow, 12.0, 480, orders);
  show("p = N(0,2), q = N(0,1)", orders, v, wide, narrow);
  for (std::size_t k = 0; k < orders.size(); ++k) {
    if (orders[k] < 2.0) {
      // Finite. The integrand is proportional to exp(-x^2 (2 - alpha)/4), variance 2/(2 - alpha): 4 for
      // alpha = 1.5 (the wall at 12 is 6 standard deviations out: wall share ~1e-9, Finite), 10 for alpha = 1.8
      // (3.8 standard deviations: wall share 2 h f(12)/int f ~ 1e-5 > 1e-6, so the box truncates it: TruncatedSuspect).
      const RenyiStatus expected = orders[k] == 1.5 ? RenyiStatus::Finite : RenyiStatus::TruncatedSuspect;
      BOOST_TEST((v.renyiStatus[k] == expected), "alpha " << orders[k]);
      BOOST_TEST(std::isfinite(v.renyi[k]));
    } else {
      BOOST_TEST((v.renyiStatus[k] == RenyiStatus::InfiniteDetected), "alpha " << orders[k]);
      BOOST_TEST(std::isinf(v.renyi[k]));
      BOOST_TEST(std::isfinite(v.renyiOnBox[k]));  // what the box alone would have said
    }
  }
  // The reverse pair: p = N(0, 1), q = N(0, 2): S_alpha = 1 + alpha > 0 for every
  // alpha > 1, finite for all orders, and the box [-12, 12] holds the integrand (variance 2/(alpha + 1) <= 0.8).
  const auto w = divergencesOfExactAverages(narrow, wide, 12.0, 480, orders);
  show("p = N(0,1), q = N(0,2)", orders, w, narrow, wide);
  for (std::size_t k = 0; k < orders.size(); ++k) {
    BOOST_TEST((w.renyiStatus[k] == RenyiStatus::Finite), "alpha " << orders[k]);
    const double exact = models::gaussianRenyi(narrow.mean(), narrow.covariance(), wide.mean(), wide.covariance(),
                                               orders[k]);
    // Midpoint rule on exact cell averages, h = 0.05: second order, well below 1e-3 relative.
    BOOST_TEST(std::fabs(w.renyi[k] - exact) <= 1e-3 * exact);
  }
}

BOOST_AUTO_TEST_CASE(finite_orders_converge_at_second_order_near_the_boundary) {
  // p = N(0, 2), q = N(0, 1), alpha = 1.8: finite (S_alpha = 0.2) but the integrand has variance 1/(1 - alpha/2)
  // = 10 (standard deviation 3.2); on [-24, 24] (7.6 standard deviations) the quadrature converges at second order.
  const models::Gaussian wide(vec({0.0}), 2.0 * models::Matrix::Identity(1, 1));
  const models::Gaussian narrow(vec({0.0}), models::Matrix::Identity(1, 1));
  const double exact = models::gaussianRenyi(wide.mean(), wide.covariance(), narrow.mean(), narrow.covariance(), 1.8);
  double prev = 0;
  for (int cells : {96, 192, 384}) {
    const auto v = divergencesOfExactAverages(wide, narrow, 24.0, cells, {1.8});
    const double err = std::fabs(v.renyi[0] - exact) / exact;
    BOOST_TEST_MESSAGE("alpha 1.8, " << cells << " cells: rel. error " << err << " status "
                                     << solver::renyiStatusName(v.renyiStatus[0]));
    BOOST_TEST((v.renyiStatus[0] == RenyiStatus::Finite));
    if (prev > 0) BOOST_TEST(std::log2(prev / err) >= 1.8);
    prev = err;
  }
}

BOOST_AUTO_TEST_CASE(unequal_rotated_covariances_2d) {
  // S1 = R diag(1.5, 0.5) R^T (p), S2 = R diag(1, 0.5) R^T (q), R a rotation by 30 degrees:
  // S_alpha = R diag(1.5 - alpha/2, 0.5) R^T, finite iff alpha < 3. For alpha = 4 the log-integrand is convex only
  // along R e_1 (30 degrees from the x axis); along the axis normals it is concave (the Hessian
  // -(alpha S1^-1 + (1 - alpha) S2^-1) = -R diag(-1/3, 2) R^T has diagonal entries -0.25 and -1.42), so a test along
  // the wall normals alone would miss it; the shells see the growth toward the corners.
  const double angle = std::numbers::pi / 6;
  const models::Gaussian p(vec({0.0, 0.0}), rotated(angle, 1.5, 0.5));
  const models::Gaussian q(vec({0.0, 0.0}), rotated(angle, 1.0, 0.5));
  const std::vector<double> orders{1.5, 2.0, 4.0, 6.0};
  std::vector<double> prevErr(orders.size(), 0.0);
  for (int cells : {96, 192}) {
    const auto v = divergencesOfExactAverages(p, q, 12.0, cells, orders);
    show(cells == 96 ? "2-D rotated, 96^2" : "2-D rotated, 192^2", orders, v, p, q);
    for (std::size_t k = 0; k < orders.size(); ++k) {
      const double exact = models::gaussianRenyi(p.mean(), p.covariance(), q.mean(), q.covariance(), orders[k]);
      if (orders[k] < 3.0) {
        // Finite: the integrand's largest standard deviation is sqrt(3) (alpha = 2), 6.9 of them to the walls.
        BOOST_TEST((v.renyiStatus[k] == RenyiStatus::Finite), "alpha " << orders[k]);
        const double err = std::fabs(v.renyi[k] - exact) / exact;
        if (prevErr[k] > 0) BOOST_TEST(std::log2(prevErr[k] / err) >= 1.8, "alpha " << orders[k]);  // second order
        prevErr[k] = err;
      } else {
        BOOST_TEST(std::isinf(exact));
        BOOST_TEST((v.renyiStatus[k] == RenyiStatus::InfiniteDetected), "alpha " << orders[k]);
        BOOST_TEST(std::isinf(v.renyi[k]));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(shifted_equal_covariances_are_truncated_not_infinite) {
  // Equal covariances: R_alpha = alpha |dm|^2 / 2 is finite for every alpha, but the integrand is centred at the
  // tilted mean alpha m_p + (1 - alpha) m_q. For alpha = 10 that is (10, 5), outside [-8, 8]^2: the box number is
  // wrong, the log-integrand increases toward the wall but is concave, so the order is TruncatedSuspect and its
  // box value is reported (not +inf). alpha = 1.5 (tilted mean (1.5, 0.75), 6.5 standard deviations from the walls
  // of [-8, 8]^2) is untouched.
  const models::Gaussian p(vec({1.0, 0.5}), models::Matrix::Identity(2, 2));
  const models::Gaussian q(vec({0.0, 0.0}), models::Matrix::Identity(2, 2));
  const std::vector<double> orders{1.5, 10.0};
  const auto v = divergencesOfExactAverages(p, q, 8.0, 128, orders);
  show("shifted equal covariances", orders, v, p, q);
  BOOST_TEST((v.renyiStatus[0] == RenyiStatus::Finite));
  BOOST_TEST((v.renyiStatus[1] == RenyiStatus::TruncatedSuspect));
  BOOST_TEST(std::isfinite(v.renyi[1]));
  BOOST_TEST(v.renyi[1] == v.renyiOnBox[1]);
  const double exact10 = 10.0 * 1.25 / 2.0;
  BOOST_TEST(v.renyi[1] < exact10);  // the box underestimates
  // Same in 1-D (means 1 apart, alpha = 10, tilted mean 10 outside [-6, 6]).
  const models::Gaussian p1(vec({1.0}), models::Matrix::Identity(1, 1));
  const models::Gaussian q1(vec({0.0}), models::Matrix::Identity(1, 1));
  const auto w = divergencesOfExactAverages(p1, q1, 6.0, 240, {10.0});
  show("shifted equal covariances, 1-D", {10.0}, w, p1, q1);
  BOOST_TEST((w.renyiStatus[0] == RenyiStatus::TruncatedSuspect));
  BOOST_TEST(std::isfinite(w.renyi[0]));
}

BOOST_AUTO_TEST_CASE(negative_q_is_left_out_and_reported) {
  // A negative q (an artefact of a non-positive scheme) must not make KL and R_alpha +inf; the cell is left out and
  // the p-mass there is reported. An exact zero of q where p > 0 stays +inf.
  const int N = 8;
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_SELF, meshes::BoxMesh({meshes::Axis::uniform(0.0, 1.0, N)}), 2);
  const solver::DivergenceFunctionals f(mesh, {2.0});
  std::vector<double> p(N, 1.0), q(N, 1.0);
  q[3] = -1e-20;
  const auto v = f.evaluate(p.data(), q.data(), 1);
  BOOST_TEST(std::isfinite(v.kl));
  BOOST_TEST(std::isfinite(v.renyi[0]));
  BOOST_TEST(v.q.negativeCells == 1);
  BOOST_TEST(std::fabs(v.excludedMassP - 1.0 / 8.0) <= 1e-15);
  q[3] = 0.0;
  const auto z = f.evaluate(p.data(), q.data(), 1);
  BOOST_TEST(std::isinf(z.kl));
  BOOST_TEST(std::isinf(z.renyi[0]));
  BOOST_TEST((z.renyiStatus[0] == RenyiStatus::InfiniteDetected));
}
