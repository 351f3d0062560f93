// Projected noisy GD (MATH.md §2.1) on 2 ranks equals the serial run: the push-forward, the exact convolution and
// Pi_C work on gathered whole fields (the same numbers on every rank), the boundary bins are replicated, and the
// Fokker–Planck diffusion is distributed (parallel LU: equal up to the round-off of the linear solves).
// Run with RANKS 2 (tests/solver/CMakeLists.txt).
#define BOOST_TEST_MODULE projection_parallel
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>

#include "PetscFixture.hpp"
#include "ProjectedGd.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;
using projected_gd::Setup;

namespace {
models::Vector vec2(double a, double b) {
  models::Vector x(2);
  x << a, b;
  return x;
}

double maxDifference(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}
}  // namespace

BOOST_AUTO_TEST_CASE(two_ranks_equal_serial_box_and_ball) {
  PetscMPIInt size, rank;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  BOOST_TEST(size == 2);
  Setup s;
  s.dim = 2;
  s.cells = {40, 40, 1};
  s.xP = vec2(0.8, -0.4);
  s.xQ = vec2(0.0, 0.0);
  s.m0 = vec2(0.5, 0.5);
  s.v0 = 0.3;
  s.clip = 1.0;
  s.substeps = 4;
  for (const bool ball : {false, true})
    for (const auto method : {solver::DiffusionMethod::ExactConvolution, solver::DiffusionMethod::FokkerPlanck}) {
      s.C = ball ? models::ConstraintSet::ball(vec2(0.2, -0.1), 1.3)
                 : models::ConstraintSet::box(vec2(-1.5, -0.9), vec2(1.2, 1.5));
      s.method = method;
      const auto par = projected_gd::runSolver(s, 4, PETSC_COMM_WORLD);
      const auto ser = projected_gd::runSolver(s, 4, PETSC_COMM_SELF);
      const double dCells = std::max(maxDifference(par.p, ser.p), maxDifference(par.q, ser.q));
      const double dBins = std::max(maxDifference(par.binsP, ser.binsP), maxDifference(par.binsQ, ser.binsQ));
      if (rank == 0)
        std::printf("%s, %s: max |parallel - serial| cells %.2e, bins %.2e\n", ball ? "ball" : "box",
                    method == solver::DiffusionMethod::FokkerPlanck ? "fokker_planck" : "exact_convolution", dCells,
                    dBins);
      if (method == solver::DiffusionMethod::ExactConvolution) {
        // Everything runs on the gathered fields, the same operations in the same order; only the initial
        // normalisation (a mass summed over ranks in another order) differs, by ~1e-16 relative (values are O(1)).
        BOOST_TEST(dCells <= 1e-14);
        BOOST_TEST(dBins <= 1e-14);
      } else {
        // Distributed LU (MUMPS) against serial LU: round-off of the solves (values are O(1)).
        BOOST_TEST(dCells <= 1e-12);
        BOOST_TEST(dBins <= 1e-12);
      }
    }
}
