// StencilOperator (solver/discretisation/StencilOperator.hpp): its residual and symmetric Gauss–Seidel sweep, and ClenshawWavefront's
// recurrence at several depths (the same bits at every depth), equal PETSc's MatResidual, MatMult and MatSOR (SOR_LOCAL_SYMMETRIC_SWEEP, omega 1, zero and nonzero initial guess) on
// the shifted Scharfetter–Gummel operator J = a I - A of the OU problem, in 1-D, 2-D and 3-D, on one rank (global
// arrays used directly) and on two (ghost exchange, owned values copied back); build() refuses a matrix that is
// not a field-separated star stencil; built from the Fokker–Planck rows without a matrix, the stencil equals the one
// read from the assembled matrix, and refuses cross-diffusion and fourth-order rows; its norms and detailed-balance
// defect equal MatNorm's and detailedBalanceDefect's of the matrix. Registered with RANKS 2.
#define BOOST_TEST_MODULE solver_stencil_operator
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <petscmat.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "OuProblem.hpp"
#include "PetscFixture.hpp"
#include "solver/propagation/ClenshawWavefront.hpp"
#include "solver/propagation/ExponentialEvolution.hpp"
#include "solver/discretisation/StencilOperator.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {
struct Problem {
  testing::OuSetup s;
  meshes::DistributedBoxMesh mesh;
  meshes::MatHandle J;
  Problem(MPI_Comm comm, int dim, int cells) : s(testing::distinctCentresSetup(dim, cells)), mesh(comm, testing::ouBox(s), 2) {
    const solver::LangevinDiscretisation disc(mesh, testing::ouProblem(s), solver::FaceFluxScheme::ScharfetterGummel);
    J = disc.spatialOperator().assemble();
    FPDP_PETSC(MatScale(J, -1.0));
    FPDP_PETSC(MatShift(J, 150.0));  // BDF2 at dt = 0.01: a = 1.5 / dt
  }
  meshes::VecHandle randomVector(unsigned seed) const {
    auto v = mesh.createVector();
    PetscInt lo, hi;
    FPDP_PETSC(VecGetOwnershipRange(v, &lo, &hi));
    for (PetscInt i = lo; i < hi; ++i) {
      const double x = std::sin(0.37 * static_cast<double>(i) + seed) + 0.1 * std::cos(1.3 * static_cast<double>(i));
      FPDP_PETSC(VecSetValue(v, i, x, INSERT_VALUES));
    }
    FPDP_PETSC(VecAssemblyBegin(v));
    FPDP_PETSC(VecAssemblyEnd(v));
    return v;
  }
};

// max |a - b| / max |b|, over all ranks.
double relativeDifference(Vec a, Vec b) {
  meshes::VecHandle d;
  FPDP_PETSC(VecDuplicate(a, d.out()));
  FPDP_PETSC(VecWAXPY(d, -1.0, b, a));
  PetscReal num, den;
  FPDP_PETSC(VecNorm(d, NORM_INFINITY, &num));
  FPDP_PETSC(VecNorm(b, NORM_INFINITY, &den));
  return num / den;
}

// Runs f(x_ghosted_array, ...) the way the callers do: on the global array on one rank, on a ghosted copy otherwise.
template <class F>
void withGhosted(const solver::StencilOperator& op, DM dm, Vec x, bool writeBack, F&& f) {
  if (op.ghostedIsOwned()) {
    PetscScalar* a;
    FPDP_PETSC(VecGetArray(x, &a));
    f(a);
    FPDP_PETSC(VecRestoreArray(x, &a));
    return;
  }
  meshes::VecHandle local;
  FPDP_PETSC(DMCreateLocalVector(dm, local.out()));
  FPDP_PETSC(DMGlobalToLocalBegin(dm, x, INSERT_VALUES, local));
  FPDP_PETSC(DMGlobalToLocalEnd(dm, x, INSERT_VALUES, local));
  PetscScalar *l, *a;
  FPDP_PETSC(VecGetArray(local, &l));
  f(l);
  FPDP_PETSC(VecGetArray(x, &a));
  if (writeBack) op.copyOwned(l, a);
  FPDP_PETSC(VecRestoreArray(x, &a));
  FPDP_PETSC(VecRestoreArray(local, &l));
}

// ClenshawWavefront's recurrence b_K = 2 a_K y, b_k = s4 J b_(k+1) + 2 b_(k+1) - b_(k+2) + 2 a_k y against the same by
// MatMult and vector updates (14 terms, so the passes of depth 5 and 8 end short), at depths 1, 2, 3, 5 and 8: each
// within round-off of the reference, and every depth the same bits as depth 1.
void checkClenshaw(const Problem& p, const solver::StencilOperator& op) {
  auto y = p.randomVector(4);
  std::vector<double> a(15);
  for (std::size_t k = 0; k < a.size(); ++k) a[k] = 0.5 / static_cast<double>(k + 1) + 0.01 * std::sin(double(k));
  const double s4 = 1e-3;
  meshes::VecHandle prev, cur, Jx;
  FPDP_PETSC(VecDuplicate(y, prev.out()));
  FPDP_PETSC(VecDuplicate(y, cur.out()));
  FPDP_PETSC(VecDuplicate(y, Jx.out()));
  FPDP_PETSC(VecZeroEntries(prev));
  FPDP_PETSC(VecCopy(y, cur));
  FPDP_PETSC(VecScale(cur, 2.0 * a.back()));
  for (std::size_t k = a.size() - 2; k >= 1; --k) {
    FPDP_PETSC(MatMult(p.J, cur, Jx));
    FPDP_PETSC(VecAXPBYPCZ(prev, s4, 2.0, -1.0, Jx, cur));
    FPDP_PETSC(VecAXPY(prev, 2.0 * a[k], y));
    std::swap(prev, cur);
  }
  std::vector<double> depthOne;
  for (const int depth : {1, 2, 3, 5, 8}) {
    solver::ClenshawWavefront wavefront(op, p.mesh.dm(), depth);
    auto b1 = p.mesh.createVector(), b2 = p.mesh.createVector();
    wavefront.run(y, a, s4, b1, b2);
    BOOST_TEST(relativeDifference(b1, cur) <= 1e-13, "b_1, dim " << p.mesh.dim() << " depth " << depth);
    BOOST_TEST(relativeDifference(b2, prev) <= 1e-13, "b_2, dim " << p.mesh.dim() << " depth " << depth);
    std::vector<double> values = meshes::localValues(b1);
    const auto second = meshes::localValues(b2);
    values.insert(values.end(), second.begin(), second.end());
    if (depth == 1) depthOne = values;
    BOOST_TEST(std::memcmp(values.data(), depthOne.data(), sizeof(double) * values.size()) == 0,
               "depth " << depth << " against depth 1");
  }
}

void checkKernels(MPI_Comm comm, int dim, int cells) {
  Problem p(comm, dim, cells);
  solver::StencilOperator op;
  BOOST_REQUIRE(op.build(p.J, p.mesh.dm(), /*forSmoothing=*/true));
  BOOST_TEST(op.points() == 2 * dim + 1);
  auto x = p.randomVector(1), b = p.randomVector(2);

  // Residual against MatResidual.
  auto r = p.mesh.createVector(), rRef = p.mesh.createVector();
  FPDP_PETSC(MatResidual(p.J, b, x, rRef));
  {
    const PetscScalar* bb;
    PetscScalar* rr;
    FPDP_PETSC(VecGetArrayRead(b, &bb));
    FPDP_PETSC(VecGetArray(r, &rr));
    withGhosted(op, p.mesh.dm(), x, false, [&](double* xl) { op.residual(xl, bb, rr); });
    FPDP_PETSC(VecRestoreArray(r, &rr));
    FPDP_PETSC(VecRestoreArrayRead(b, &bb));
  }
  BOOST_TEST(relativeDifference(r, rRef) <= 1e-14, "residual, dim " << dim << " cells " << cells);

  // The Clenshaw recurrence by ClenshawWavefront at several depths against MatMult and vector updates, and the
  // depths against each other to the last bit.
  checkClenshaw(p, op);

  // Symmetric Gauss–Seidel against MatSOR, from a nonzero and from a zero initial guess.
  for (const bool zero : {false, true}) {
    auto xs = p.randomVector(5);
    meshes::VecHandle xRef;
    FPDP_PETSC(VecDuplicate(xs, xRef.out()));
    FPDP_PETSC(VecCopy(xs, xRef));
    const MatSORType type =
        zero ? static_cast<MatSORType>(SOR_LOCAL_SYMMETRIC_SWEEP | SOR_ZERO_INITIAL_GUESS) : SOR_LOCAL_SYMMETRIC_SWEEP;
    FPDP_PETSC(MatSOR(p.J, b, 1.0, type, 0.0, 1, 1, xRef));
    const PetscScalar* bb;
    FPDP_PETSC(VecGetArrayRead(b, &bb));
    if (zero) FPDP_PETSC(VecSet(xs, 1e300));  // must not be read
    withGhosted(op, p.mesh.dm(), xs, true, [&](double* xl) { op.symmetricGaussSeidel(xl, bb, zero); });
    FPDP_PETSC(VecRestoreArrayRead(b, &bb));
    BOOST_TEST(relativeDifference(xs, xRef) <= 1e-13, "Gauss-Seidel, dim " << dim << " zero guess " << zero);
  }
}
}  // namespace

BOOST_AUTO_TEST_CASE(kernels_equal_petsc_on_one_rank) {
  checkKernels(PETSC_COMM_SELF, 1, 40);
  checkKernels(PETSC_COMM_SELF, 2, 24);
  checkKernels(PETSC_COMM_SELF, 3, 10);
}

BOOST_AUTO_TEST_CASE(kernels_equal_petsc_on_all_ranks) {
  PetscMPIInt size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  BOOST_REQUIRE(size >= 2);  // registered with mpiexec -n 2: the ghosted layout differs from the owned one
  checkKernels(PETSC_COMM_WORLD, 1, 40);
  checkKernels(PETSC_COMM_WORLD, 2, 24);
  checkKernels(PETSC_COMM_WORLD, 3, 10);
}

// The AVX2 + FMA copies of the residual and the Clenshaw terms (ClenshawWavefront) against the portable ones: the same bits (every
// multiply-add is fused in both; StencilKernels.hpp). On a processor without AVX2 + FMA both runs are portable.
BOOST_AUTO_TEST_CASE(vector_and_portable_kernels_give_the_same_bits) {
  if (!solver::StencilOperator::vectorKernels())
    BOOST_TEST_MESSAGE("no AVX2 + FMA on this processor: the portable kernels are compared with themselves");
  for (const int dim : {1, 2, 3}) {
    Problem p(PETSC_COMM_WORLD, dim, dim == 3 ? 10 : 24);
    solver::StencilOperator op;
    BOOST_REQUIRE(op.build(p.J, p.mesh.dm()));
    auto x = p.randomVector(1), b = p.randomVector(2);
    std::vector<double> results[2];
    for (const bool vector : {true, false}) {
      solver::StencilOperator::useVectorKernels(vector);
      auto r = p.mesh.createVector(), b1 = p.mesh.createVector(), b2 = p.mesh.createVector(), y = p.randomVector(4);
      PetscScalar* rr;
      const PetscScalar* bb;
      FPDP_PETSC(VecGetArrayRead(b, &bb));
      FPDP_PETSC(VecGetArray(r, &rr));
      withGhosted(op, p.mesh.dm(), x, false, [&](double* xl) { op.residual(xl, bb, rr); });
      FPDP_PETSC(VecRestoreArray(r, &rr));
      FPDP_PETSC(VecRestoreArrayRead(b, &bb));
      solver::ClenshawWavefront(op, p.mesh.dm(), 3).run(y, {0.5, 0.25, 0.125, 0.0625, 0.03125}, 1e-3, b1, b2);
      for (Vec v : {r.get(), b1.get(), b2.get()}) {
        const auto values = meshes::localValues(v);
        results[vector ? 0 : 1].insert(results[vector ? 0 : 1].end(), values.begin(), values.end());
      }
    }
    solver::StencilOperator::useVectorKernels(true);
    BOOST_REQUIRE(results[0].size() == results[1].size());
    long differing = 0;
    for (std::size_t i = 0; i < results[0].size(); ++i)
      differing += std::memcmp(&results[0][i], &results[1][i], sizeof(double)) != 0;
    BOOST_TEST(differing == 0, "dim " << dim << ": " << differing << " values differ");
  }
}

BOOST_AUTO_TEST_CASE(build_refuses_what_is_not_a_field_separated_star) {
  for (const int kind : {0, 1}) {
    Problem p(PETSC_COMM_WORLD, 2, 12);
    // kind 0: a diagonal neighbour (cell (1,1) -> (0,0), field 0); kind 1: field 0 coupled to field 1 of the cell.
    PetscInt rows[1], cols[1];
    {
      ISLocalToGlobalMapping ltog;
      FPDP_PETSC(DMGetLocalToGlobalMapping(p.mesh.dm(), &ltog));
      const meshes::OwnedBlock& g = p.mesh.ghosted();
      const meshes::OwnedBlock& o = p.mesh.owned();
      // The owned cell at the start of this rank's block and its lower-left neighbour (inside the ghosted block, or
      // the cell itself when that lies outside the box).
      const PetscInt i = o.start[0] + 1, j = o.start[1] + 1;
      const PetscInt self = (i - g.start[0]) + g.count[0] * (j - g.start[1]);
      const PetscInt corner = (i - 1 - g.start[0]) + g.count[0] * (j - 1 - g.start[1]);
      PetscInt local[2] = {self * 2, kind == 0 ? corner * 2 : self * 2 + 1};
      PetscInt global[2];
      FPDP_PETSC(ISLocalToGlobalMappingApply(ltog, 2, local, global));
      rows[0] = global[0];
      cols[0] = global[1];
    }
    FPDP_PETSC(MatSetOption(p.J, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_FALSE));
    FPDP_PETSC(MatSetValue(p.J, rows[0], cols[0], 0.5, INSERT_VALUES));
    FPDP_PETSC(MatAssemblyBegin(p.J, MAT_FINAL_ASSEMBLY));
    FPDP_PETSC(MatAssemblyEnd(p.J, MAT_FINAL_ASSEMBLY));
    solver::StencilOperator op;
    BOOST_TEST(!op.build(p.J, p.mesh.dm()), "kind " << kind);
    BOOST_TEST(op.empty());
  }
}

namespace {
// check(comm, dim, cells) on one rank and on all, in 1-D (40 cells per axis), 2-D (24) and 3-D (10).
template <class Check>
void onEveryCommunicatorAndDimension(Check check) {
  for (const MPI_Comm comm : {PETSC_COMM_SELF, PETSC_COMM_WORLD}) {
    check(comm, 1, 40);
    check(comm, 2, 24);
    check(comm, 3, 10);
  }
}

// The stencil built from the Fokker–Planck rows (FokkerPlanckOperator::buildStencil, no assembled matrix) against
// the one read from the assembled matrix: equal coefficients, so an equal residual to the last bit; and the same
// positivity report as the assembly's.
void checkBuiltFromRows(MPI_Comm comm, int dim, int cells) {
  const testing::OuSetup s = testing::distinctCentresSetup(dim, cells);
  const meshes::DistributedBoxMesh mesh(comm, testing::ouBox(s), 2);
  const solver::LangevinDiscretisation fromRows(mesh, testing::ouProblem(s), solver::FaceFluxScheme::ScharfetterGummel);
  const solver::LangevinDiscretisation fromMatrix(mesh, testing::ouProblem(s), solver::FaceFluxScheme::ScharfetterGummel);
  solver::StencilOperator rowsOp, matrixOp;
  BOOST_REQUIRE(fromRows.spatialOperator().buildStencil(rowsOp));
  const auto A = fromMatrix.spatialOperator().assemble();
  BOOST_REQUIRE(matrixOp.build(A, mesh.dm()));
  BOOST_TEST(rowsOp.points() == matrixOp.points());
  Problem p(comm, dim, cells);  // for its random vectors
  auto x = p.randomVector(7), zero = mesh.createVector();
  auto r1 = mesh.createVector(), r2 = mesh.createVector();
  meshes::VecHandle ghosted;
  if (!rowsOp.ghostedIsOwned()) FPDP_PETSC(DMCreateLocalVector(mesh.dm(), ghosted.out()));
  FPDP_PETSC(solver::residual(rowsOp, mesh.dm(), x, zero, r1, ghosted));
  FPDP_PETSC(solver::residual(matrixOp, mesh.dm(), x, zero, r2, ghosted));
  PetscReal norm, diff;
  FPDP_PETSC(VecNorm(r2, NORM_INFINITY, &norm));
  FPDP_PETSC(VecAXPY(r1, -1.0, r2));
  FPDP_PETSC(VecNorm(r1, NORM_INFINITY, &diff));
  BOOST_TEST(norm > 0.0);
  BOOST_TEST(diff == 0.0, "dim " << dim << ": residuals differ by " << diff);
  const auto a = fromRows.spatialOperator().positivity(), b = fromMatrix.spatialOperator().positivity();
  BOOST_TEST(a.rows == b.rows);
  BOOST_TEST(a.rows == 2 * static_cast<long>(mesh.box().totalCells()));
  BOOST_TEST(a.violatingRows == b.violatingRows);
  BOOST_TEST(a.holds == b.holds);
  BOOST_TEST(a.mostNegativeOffDiagonal == b.mostNegativeOffDiagonal);
}
}  // namespace

BOOST_AUTO_TEST_CASE(built_from_the_rows_equals_built_from_the_assembled_matrix) {
  onEveryCommunicatorAndDimension(checkBuiltFromRows);
}

BOOST_AUTO_TEST_CASE(built_from_the_rows_refuses_cross_diffusion_and_fourth_order_fluxes) {
  const testing::OuSetup s = testing::distinctCentresSetup(2, 16);
  {
    auto problem = testing::ouProblem(s);
    models::Matrix sigma(2, 2);
    sigma << 0.5, 0.1, 0.1, 0.3;  // cross-diffusion: diagonal neighbours
    problem.sigmaMatrix = problem.sigmaMatrixPrime = sigma;
    const meshes::DistributedBoxMesh mesh(PETSC_COMM_WORLD, testing::ouBox(s), 2, meshes::StencilShape::Box);
    const solver::LangevinDiscretisation disc(mesh, problem, solver::FaceFluxScheme::ScharfetterGummel);
    solver::StencilOperator op;
    BOOST_TEST(!disc.spatialOperator().buildStencil(op));
    BOOST_TEST(op.empty());
  }
  {
    solver::SpatialAccuracy fourth;
    fourth.order = 4;
    const meshes::DistributedBoxMesh mesh(PETSC_COMM_WORLD, testing::ouBox(s), 2, meshes::StencilShape::Box, 2);
    const solver::LangevinDiscretisation disc(mesh, testing::ouProblem(s), solver::FaceFluxScheme::ScharfetterGummel,
                                              fourth);
    BOOST_REQUIRE(disc.spatialOperator().highOrderFaces() > 0);
    solver::StencilOperator op;
    BOOST_TEST(!disc.spatialOperator().buildStencil(op));
    BOOST_TEST(op.empty());
  }
}

namespace {
// The stencil's norms and detailed-balance defect against MatNorm and detailedBalanceDefect of the assembled matrix
// (solver/propagation/ExponentialEvolution.hpp): to the last bit on one rank, to round-off on several (PETSc sums the
// off-process block apart); and a broken pair found alike.
void checkNormsAndDefect(MPI_Comm comm, int dim, int cells) {
  const testing::OuSetup s = testing::distinctCentresSetup(dim, cells);
  const meshes::DistributedBoxMesh mesh(comm, testing::ouBox(s), 2);
  const solver::LangevinDiscretisation disc(mesh, testing::ouProblem(s), solver::FaceFluxScheme::ScharfetterGummel);
  auto w = mesh.createVector();
  disc.setSymmetrisingWeights(w);
  const auto A = disc.spatialOperator().assemble();
  solver::StencilOperator op;
  BOOST_REQUIRE(op.build(A, mesh.dm()));
  PetscMPIInt size;
  MPI_Comm_size(comm, &size);
  const double tol = size == 1 ? 0.0 : 1e-14;
  PetscReal n1, nInf;
  FPDP_PETSC(MatNorm(A, NORM_1, &n1));
  FPDP_PETSC(MatNorm(A, NORM_INFINITY, &nInf));
  const auto norms = op.norms(mesh.dm());
  BOOST_TEST(std::fabs(norms[0] - nInf) <= tol * nInf, "dim " << dim << " ranks " << size << ": inf-norm " << norms[0] << " against " << nInf);
  BOOST_TEST(std::fabs(norms[1] - n1) <= tol * n1, "dim " << dim << " ranks " << size << ": 1-norm " << norms[1] << " against " << n1);
  const double defect = op.detailedBalanceDefect(mesh.dm(), w), reference = solver::detailedBalanceDefect(A, w);
  BOOST_TEST(reference <= 1e-13);
  BOOST_TEST(std::fabs(defect - reference) <= 1e-15, "dim " << dim << ": defect " << defect << " against " << reference);
}
}  // namespace

BOOST_AUTO_TEST_CASE(norms_and_detailed_balance_defect_equal_the_assembled_matrix) {
  onEveryCommunicatorAndDimension(checkNormsAndDefect);
}

BOOST_AUTO_TEST_CASE(a_broken_detailed_balance_is_found_in_the_stencil_as_in_the_matrix) {
  Problem p(PETSC_COMM_WORLD, 2, 12);
  const testing::OuSetup s = testing::distinctCentresSetup(2, 12);
  const solver::LangevinDiscretisation disc(p.mesh, testing::ouProblem(s), solver::FaceFluxScheme::ScharfetterGummel);
  auto w = p.mesh.createVector();
  disc.setSymmetrisingWeights(w);
  auto A = disc.spatialOperator().assemble();
  // One rate of the first owned row changed by 1e-6 relative (as test_exponential_evolution does with the matrix).
  PetscInt lo, hi;
  FPDP_PETSC(MatGetOwnershipRange(A, &lo, &hi));
  PetscInt nc;
  const PetscInt* cols;
  const PetscScalar* vals;
  PetscInt col = -1;
  double v = 0.0;
  FPDP_PETSC(MatGetRow(A, lo + 20, &nc, &cols, &vals));
  for (PetscInt k = 0; k < nc; ++k)
    if (cols[k] != lo + 20 && vals[k] != 0.0) col = cols[k], v = vals[k];
  FPDP_PETSC(MatRestoreRow(A, lo + 20, &nc, &cols, &vals));
  BOOST_REQUIRE(col >= 0);
  FPDP_PETSC(MatSetValue(A, lo + 20, col, v * (1.0 + 1e-6), INSERT_VALUES));
  FPDP_PETSC(MatAssemblyBegin(A, MAT_FINAL_ASSEMBLY));
  FPDP_PETSC(MatAssemblyEnd(A, MAT_FINAL_ASSEMBLY));
  solver::StencilOperator op;
  BOOST_REQUIRE(op.build(A, p.mesh.dm()));
  const double defect = op.detailedBalanceDefect(p.mesh.dm(), w), reference = solver::detailedBalanceDefect(A, w);
  BOOST_TEST(reference > 5e-7);
  BOOST_TEST(std::fabs(defect - reference) <= 1e-15 * reference);
}

namespace {
// The starts of a StaggeredArrays' arrays: 64-byte aligned, no overlap, and pairwise at least one cache line apart
// modulo 4 KiB (so in distinct sets of a 4 KiB-indexed L1, docs/scaling.md §2).
void checkStaggered(const std::vector<const double*>& starts, std::size_t length, const std::string& what) {
  for (std::size_t a = 0; a < starts.size(); ++a) {
    const auto pa = reinterpret_cast<std::uintptr_t>(starts[a]);
    BOOST_TEST(pa % 64 == 0u, what << ": array " << a << " is not 64-byte aligned");
    for (std::size_t b = a + 1; b < starts.size(); ++b) {
      const auto pb = reinterpret_cast<std::uintptr_t>(starts[b]);
      const std::uintptr_t gap = (pb - pa) % 4096, apart = std::min<std::uintptr_t>(gap, 4096 - gap);
      BOOST_TEST(apart >= 64u, what << ": arrays " << a << " and " << b << " start " << apart << " B apart modulo 4 KiB");
      BOOST_TEST((pb >= pa + 8 * length || pa >= pb + 8 * length), what << ": arrays " << a << " and " << b << " overlap");
    }
  }
}
}  // namespace

BOOST_AUTO_TEST_CASE(coefficient_arrays_start_in_distinct_cache_sets) {
  // Separately allocated, arrays of 1 MiB (256^2 cells, two fields) started at the same offset modulo 4 KiB and
  // 128 KiB; StaggeredArrays places them apart. Lengths around and at multiples of the 4 KiB span.
  for (const std::size_t length : {std::size_t{1}, std::size_t{100}, std::size_t{512}, std::size_t{131072},
                                   std::size_t{131075}, std::size_t{1} << 21}) {
    solver::StaggeredArrays s(7, length);
    std::vector<const double*> starts;
    for (std::size_t a = 0; a < 7; ++a) starts.push_back(s[a]);
    checkStaggered(starts, length, "length " + std::to_string(length));
    // Zero at construction, and each array its own: writing one leaves the others zero.
    bool zero = true;
    for (std::size_t a = 0; a < 7; ++a) zero = zero && std::all_of(s[a], s[a] + length, [](double v) { return v == 0.0; });
    BOOST_TEST(zero);
    std::fill(s[3], s[3] + length, 3.0);
    BOOST_TEST(std::all_of(s[2], s[2] + length, [](double v) { return v == 0.0; }));
    BOOST_TEST(std::all_of(s[4], s[4] + length, [](double v) { return v == 0.0; }));
    // A copy has the values in its own, again staggered, storage; a move keeps the storage.
    const solver::StaggeredArrays copy = s;
    BOOST_TEST(std::equal(copy[3], copy[3] + length, s[3]));
    BOOST_TEST(copy[3] != s[3]);
    std::vector<const double*> copyStarts;
    for (std::size_t a = 0; a < 7; ++a) copyStarts.push_back(copy[a]);
    checkStaggered(copyStarts, length, "copy, length " + std::to_string(length));
    const double* before = s[5];
    const solver::StaggeredArrays moved = std::move(s);
    BOOST_TEST(moved[5] == before);
    BOOST_TEST(moved.span(3).size() == length);
  }
  // The stencil of the 256^2 two-field operator: its five points' arrays.
  Problem p(PETSC_COMM_SELF, 2, 256);
  solver::StencilOperator op;
  BOOST_REQUIRE(op.build(p.J, p.mesh.dm()));
  std::vector<const double*> starts;
  for (int o = 0; o < op.points(); ++o) starts.push_back(op.coefficients(o).data());
  BOOST_TEST(starts.size() == 5u);
  checkStaggered(starts, op.coefficients(0).size(), "256^2 stencil");
}
