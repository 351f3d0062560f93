// Geometric multigrid (solver/propagation/GeometricMultigrid.hpp, pc_type = "mg"): the level count, and the time evolution
// with GMRES + multigrid on all ranks equal to the one with LU on one rank (the same discrete problem, solved by a
// different linear solver). Registered with RANKS 2, so the multigrid run is also the parallel one.
#define BOOST_TEST_MODULE solver_geometric_multigrid
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <petscksp.h>

#include <cmath>
#include <vector>

#include "OuProblem.hpp"
#include "PetscFixture.hpp"
#include "solver/propagation/GeometricMultigrid.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;

namespace {
meshes::DistributedBoxMesh squareMesh(MPI_Comm comm, int dim, int cells) {
  testing::OuSetup s;
  s.dim = dim;
  s.cells = cells;
  return meshes::DistributedBoxMesh(comm, testing::ouBox(s), 2);
}

struct Solution {
  std::vector<double> state;  // gathered on every rank, natural order of the DMDA
  double massDrift = 0.0;
  std::string description;
  PetscInt levels = 0;
  PetscInt lastIterations = 0;  // Krylov iterations of the last step
  std::string fineSmoother;     // PC type of the finest level's smoother (multigrid only)
  std::string fineSmootherName;  // its PCShellGetName (fpdp's level smoother says what runs)
};

Solution solve(MPI_Comm comm, int dim, int cells, const char* ksp, const char* pc) {
  testing::OuSetup s;
  s.dim = dim;
  s.cells = cells;
  s.centreP = {0.3, 0.2, 0.1};
  const meshes::DistributedBoxMesh mesh(comm, testing::ouBox(s), 2);
  const solver::LangevinDiscretisation disc(mesh, testing::ouProblem(s), solver::FaceFluxScheme::ScharfetterGummel);
  solver::TimeIntegration ti;
  ti.dt = 0.05;
  ti.steps = 20;
  ti.kspType = ksp;
  ti.pcType = pc;
  solver::DensityEvolution evo(mesh, disc.spatialOperator().assemble(), ti);
  auto u = mesh.createVector();
  disc.setInitialState(u);
  double mass0 = 0.0;
  Solution out;
  evo.run(u, [&](long step, double, Vec x) {
    PetscScalar sum;
    VecSum(x, &sum);  // uniform mesh: the mass of p + q up to the cell volume
    if (step == 0) mass0 = sum;
    out.massDrift = std::max(out.massDrift, std::fabs(sum - mass0) / mass0);
  });
  out.description = evo.describe();
  SNES snes;
  KSP k;
  PC p;
  TSGetSNES(evo.ts(), &snes);
  SNESGetKSP(snes, &k);
  KSPGetPC(k, &p);
  if (std::string(pc) == PCMG) {
    PCMGGetLevels(p, &out.levels);
    KSP smoother;
    PC smootherPc;
    PCType type;
    PCMGGetSmoother(p, out.levels - 1, &smoother);
    KSPGetPC(smoother, &smootherPc);
    PCGetType(smootherPc, &type);
    out.fineSmoother = type;
    const char* name = nullptr;
    if (out.fineSmoother == PCSHELL) PCShellGetName(smootherPc, &name);
    out.fineSmootherName = name ? name : "";
  }
  KSPGetIterationNumber(k, &out.lastIterations);
  Vec natural, all;
  VecScatter toAll;
  DMDACreateNaturalVector(mesh.dm(), &natural);
  DMDAGlobalToNaturalBegin(mesh.dm(), u, INSERT_VALUES, natural);
  DMDAGlobalToNaturalEnd(mesh.dm(), u, INSERT_VALUES, natural);
  VecScatterCreateToAll(natural, &toAll, &all);
  VecScatterBegin(toAll, natural, all, INSERT_VALUES, SCATTER_FORWARD);
  VecScatterEnd(toAll, natural, all, INSERT_VALUES, SCATTER_FORWARD);
  const PetscScalar* a;
  PetscInt n;
  VecGetLocalSize(all, &n);
  VecGetArrayRead(all, &a);
  out.state.assign(a, a + n);
  VecRestoreArrayRead(all, &a);
  VecScatterDestroy(&toAll);
  VecDestroy(&all);
  VecDestroy(&natural);
  return out;
}
// max |a - reference| / max |reference| over two gathered states of the same mesh.
double maxRelativeDifference(const std::vector<double>& a, const std::vector<double>& reference) {
  BOOST_REQUIRE(a.size() == reference.size());
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    diff = std::max(diff, std::fabs(a[i] - reference[i]));
    scale = std::max(scale, std::fabs(reference[i]));
  }
  return diff / scale;
}
}  // namespace

BOOST_AUTO_TEST_CASE(levels_halve_until_the_coarsest_mesh_has_8_cells_per_axis) {
  // One rank (PETSC_COMM_SELF): 64 -> 32 -> 16 -> 8 is 4 levels; 48 -> 24 -> 12 (6 < 8) is 3; 100 -> 50 -> 25 (odd)
  // is 3; 12 -> 6 (< 8) is 1, i.e. no coarsening.
  BOOST_TEST(solver::multigridLevels(squareMesh(PETSC_COMM_SELF, 2, 64)) == 4);
  BOOST_TEST(solver::multigridLevels(squareMesh(PETSC_COMM_SELF, 2, 48)) == 3);
  BOOST_TEST(solver::multigridLevels(squareMesh(PETSC_COMM_SELF, 2, 100)) == 3);
  BOOST_TEST(solver::multigridLevels(squareMesh(PETSC_COMM_SELF, 2, 12)) == 1);
  BOOST_TEST(solver::multigridLevels(squareMesh(PETSC_COMM_SELF, 3, 32)) == 3);
}

BOOST_AUTO_TEST_CASE(multigrid_on_all_ranks_equals_lu_on_one_rank) {
  PetscMPIInt size;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  BOOST_REQUIRE(size >= 2);  // registered with mpiexec -n 2
  for (const auto& [dim, cells] : std::vector<std::pair<int, int>>{{2, 64}, {3, 16}}) {
    const auto mg = solve(PETSC_COMM_WORLD, dim, cells, KSPGMRES, PCMG);
    const auto lu = solve(PETSC_COMM_SELF, dim, cells, KSPPREONLY, PCLU);
    BOOST_TEST_MESSAGE(dim << "-D " << cells << " cells per axis: " << mg.description << ", " << mg.levels
                           << " levels; mass drift " << mg.massDrift << " (LU " << lu.massDrift << ")");
    BOOST_TEST(mg.description.find("pc_type=mg") != std::string::npos);
    BOOST_TEST(mg.levels == (dim == 2 ? 4 : 2));
    BOOST_REQUIRE(mg.state.size() == lu.state.size());
    const double relative = maxRelativeDifference(mg.state, lu.state);
    BOOST_TEST_MESSAGE("  max |u_mg - u_lu| / max |u_lu| = " << relative);
    // Each step's Krylov solve stops at a relative residual of 1e-12 (DensityEvolution); with the shifted matrix's
    // condition number below 1e3 on these meshes and 20 steps the accumulated difference stays below
    // 20 * 1e3 * 1e-12 = 2e-8 of the solution.
    BOOST_TEST(relative <= 2e-8);
    // Mass: the multigrid solution conserves it to the same relative residual (not to round-off as LU does).
    BOOST_TEST(mg.massDrift <= 2e-8);
  }
}

BOOST_AUTO_TEST_CASE(bilinear_prolongation_is_exact_for_linear_fields_inside) {
  // On every rank's part of a 2-D mesh: a coarse field linear in the cell centres (different for the two fields)
  // is prolongated to the same linear function at the fine centres, except in the fine cells next to a wall (there
  // the missing coarse neighbour's weight goes to the own cell).
  const meshes::DistributedBoxMesh mesh = squareMesh(PETSC_COMM_WORLD, 2, 32);
  FPDP_PETSC(DMDASetInterpolationType(mesh.dm(), DMDA_Q0));
  DM coarse;
  FPDP_PETSC(DMCoarsen(mesh.dm(), MPI_COMM_NULL, &coarse));
  Mat P = solver::cellCentredBilinearInterpolation(coarse, mesh.dm());
  Vec c, f;
  FPDP_PETSC(DMCreateGlobalVector(coarse, &c));
  FPDP_PETSC(DMCreateGlobalVector(mesh.dm(), &f));
  const auto& box = mesh.box();
  const double hx = box.axis(0).width(0), hy = box.axis(1).width(0);
  auto linear = [](int field, double x, double y) { return field == 0 ? 1.0 + 2.0 * x - 0.5 * y : -3.0 + 0.25 * x + y; };
  PetscInt xs, ys, xm, ym;
  FPDP_PETSC(DMDAGetCorners(coarse, &xs, &ys, nullptr, &xm, &ym, nullptr));
  PetscScalar*** ca;
  FPDP_PETSC(DMDAVecGetArrayDOF(coarse, c, &ca));
  for (PetscInt j = ys; j < ys + ym; ++j)
    for (PetscInt i = xs; i < xs + xm; ++i)
      for (int field = 0; field < 2; ++field)
        ca[j][i][field] = linear(field, box.lower()[0] + (2 * i + 1) * hx, box.lower()[1] + (2 * j + 1) * hy);
  FPDP_PETSC(DMDAVecRestoreArrayDOF(coarse, c, &ca));
  FPDP_PETSC(MatMult(P, c, f));
  FPDP_PETSC(DMDAGetCorners(mesh.dm(), &xs, &ys, nullptr, &xm, &ym, nullptr));
  PetscScalar*** fa;
  FPDP_PETSC(DMDAVecGetArrayDOF(mesh.dm(), f, &fa));
  double worstInside = 0, worstWall = 0;
  for (PetscInt j = ys; j < ys + ym; ++j)
    for (PetscInt i = xs; i < xs + xm; ++i)
      for (int field = 0; field < 2; ++field) {
        const double err = std::fabs(fa[j][i][field] - linear(field, box.lower()[0] + (i + 0.5) * hx,
                                                              box.lower()[1] + (j + 0.5) * hy));
        const bool wall = i == 0 || j == 0 || i == box.cells(0) - 1 || j == box.cells(1) - 1;
        (wall ? worstWall : worstInside) = std::max(wall ? worstWall : worstInside, err);
      }
  FPDP_PETSC(DMDAVecRestoreArrayDOF(mesh.dm(), f, &fa));
  BOOST_TEST(worstInside <= 1e-12);
  BOOST_TEST(worstWall <= 2.5 * std::max(hx, hy));  // a quarter of a coarse cell's slope times 2.5 at most
  FPDP_PETSC(VecDestroy(&c));
  FPDP_PETSC(VecDestroy(&f));
  FPDP_PETSC(MatDestroy(&P));
  FPDP_PETSC(DMDestroy(&coarse));
}

BOOST_AUTO_TEST_CASE(multigrid_iterations_do_not_grow_with_the_mesh) {
  // The OU step (dt fixed, so the systems get harder as h shrinks: D dt / h^2 grows 64-fold from 32^2 to 256^2),
  // GMRES + multigrid to the solver's relative residual 1e-12 on 2 ranks: measured 5, 6, 6, 7 iterations in the last
  // step at 32^2 .. 256^2. From 64^2 to 256^2 the count may grow by one at most. With the former piecewise-constant
  // prolongation the same solve took 6, 9, 14, 21 iterations at 64^2 .. 512^2 (one rank, bench_step_cost --dt 0.05
  // -ksp_rtol 1e-12; bilinear: 4, 4, 4, 4).
  std::vector<PetscInt> its;
  for (int cells : {32, 64, 128, 256}) {
    its.push_back(solve(PETSC_COMM_WORLD, 2, cells, KSPGMRES, PCMG).lastIterations);
    BOOST_TEST_MESSAGE(cells << "^2: " << its.back() << " GMRES + multigrid iterations in the last step");
  }
  BOOST_TEST(its.back() <= its[1] + 1);
}

BOOST_AUTO_TEST_CASE(stencil_smoother_equals_petsc_sor) {
  // The default level smoother (symmetric Gauss–Seidel on the star-stencil level matrix, StencilOperator) against
  // PETSc's SOR on the AIJ matrices (-fpdp_mg_aij_smoother): the same arithmetic up to the order of the sums, so the
  // same iteration counts and the same solution to round-off, on all ranks (ghost exchange) in 2-D and 3-D.
  for (const auto& [dim, cells] : std::vector<std::pair<int, int>>{{2, 64}, {3, 16}}) {
    const auto stencil = solve(PETSC_COMM_WORLD, dim, cells, KSPRICHARDSON, PCMG);
    FPDP_PETSC(PetscOptionsSetValue(nullptr, "-fpdp_mg_aij_smoother", "1"));
    const auto aij = solve(PETSC_COMM_WORLD, dim, cells, KSPRICHARDSON, PCMG);
    FPDP_PETSC(PetscOptionsClearValue(nullptr, "-fpdp_mg_aij_smoother"));
    BOOST_TEST(stencil.fineSmootherName.find("star-stencil") != std::string::npos);
    BOOST_TEST(aij.fineSmootherName.find("PETSc's SOR") != std::string::npos);
    BOOST_TEST(aij.fineSmootherName.find("-fpdp_mg_aij_smoother") != std::string::npos);
    BOOST_TEST(stencil.lastIterations == aij.lastIterations);
    BOOST_TEST(stencil.lastIterations >= 1);
    BOOST_REQUIRE(stencil.state.size() == aij.state.size());
    const double relative = maxRelativeDifference(stencil.state, aij.state);
    BOOST_TEST_MESSAGE(dim << "-D: " << stencil.lastIterations << " iterations; max difference " << relative);
    BOOST_TEST(relative <= 1e-12);
  }
}

BOOST_AUTO_TEST_CASE(skipping_the_sweep_from_a_zero_iterate_keeps_the_solution) {
  // Under Richardson, diffusion-dominated levels (couplings >= 3 times the shift) do no smoothing sweep from a zero
  // iterate (-fpdp_mg_skip_presmooth, on by default there). The solution must stay the solver's (rtol 1e-12, so
  // within 1e-9 of the run that sweeps everywhere) and the iteration count must not grow, on 2 ranks.
  for (int cells : {64, 128}) {
    const auto skipping = solve(PETSC_COMM_WORLD, 2, cells, KSPRICHARDSON, PCMG);
    FPDP_PETSC(PetscOptionsSetValue(nullptr, "-fpdp_mg_skip_presmooth", "false"));
    const auto sweeping = solve(PETSC_COMM_WORLD, 2, cells, KSPRICHARDSON, PCMG);
    FPDP_PETSC(PetscOptionsClearValue(nullptr, "-fpdp_mg_skip_presmooth"));
    BOOST_TEST_MESSAGE(cells << "^2 fine level: " << skipping.fineSmootherName << "; " << skipping.lastIterations
                             << " against " << sweeping.lastIterations << " iterations");
    BOOST_TEST(sweeping.fineSmootherName.find("zero iterate") == std::string::npos);
    if (cells == 128) BOOST_TEST(skipping.fineSmootherName.find("no sweep from a zero iterate") != std::string::npos);
    BOOST_TEST(skipping.lastIterations <= sweeping.lastIterations);
    BOOST_REQUIRE(skipping.state.size() == sweeping.state.size());
    const double relative = maxRelativeDifference(skipping.state, sweeping.state);
    BOOST_TEST(relative <= 1e-9);
  }
  // GMRES hands the V-cycle non-smooth search directions: no skipping there unless asked for.
  const auto gmres = solve(PETSC_COMM_WORLD, 2, 128, KSPGMRES, PCMG);
  BOOST_TEST(gmres.fineSmootherName.find("zero iterate") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(options_of_fpdps_level_smoother_refuse_a_replaced_one) {
  // -fpdp_mg_skip_presmooth and -fpdp_mg_midsweep_exchange act in fpdp's level smoother, which -mg_levels_pc_type
  // replaces: asked for together, the run is refused with both names.
  for (const char* option : {"-fpdp_mg_skip_presmooth", "-fpdp_mg_midsweep_exchange"}) {
    FPDP_PETSC(PetscOptionsSetValue(nullptr, option, "true"));
    FPDP_PETSC(PetscOptionsSetValue(nullptr, "-mg_levels_pc_type", "jacobi"));
    try {
      solve(PETSC_COMM_WORLD, 2, 32, KSPRICHARDSON, PCMG);
      BOOST_ERROR(option << " with -mg_levels_pc_type was accepted");
    } catch (const PetscFailure& e) {
      const std::string what = e.what();
      BOOST_TEST(what.find(option) != std::string::npos, what);
      BOOST_TEST(what.find("-mg_levels_pc_type") != std::string::npos);
    }
    FPDP_PETSC(PetscOptionsClearValue(nullptr, option));
    FPDP_PETSC(PetscOptionsClearValue(nullptr, "-mg_levels_pc_type"));
  }
}

BOOST_AUTO_TEST_CASE(matrix_free_transfers_equal_the_assembled_ones) {
  // attachMatrixFreeTransfer: the restriction (MatMultTranspose) and the added prolongation (MatMultAdd) of P run on
  // the DMDA layouts instead of the AIJ entries. They must equal the assembled products to round-off on every rank
  // (ghost exchange of the fine vector for the restriction, of the coarse one for the prolongation), in 1-D to 3-D,
  // for two interlaced fields, on meshes whose axes differ (walls on every side of the taps).
  for (const auto& [dim, cells] : std::vector<std::pair<int, int>>{{1, 64}, {2, 32}, {3, 16}}) {
    testing::OuSetup s;
    s.dim = dim;
    s.cells = cells;
    const meshes::DistributedBoxMesh mesh(PETSC_COMM_WORLD, testing::ouBox(s), 2);
    FPDP_PETSC(DMDASetInterpolationType(mesh.dm(), DMDA_Q0));
    DM coarse;
    FPDP_PETSC(DMCoarsen(mesh.dm(), MPI_COMM_NULL, &coarse));
    Mat assembled = solver::cellCentredBilinearInterpolation(coarse, mesh.dm());
    Mat matrixFree = solver::cellCentredBilinearInterpolation(coarse, mesh.dm());
    BOOST_TEST(solver::attachMatrixFreeTransfer(matrixFree, coarse, mesh.dm()));
    Vec fine, coarseA, coarseB, coarseIn, fineA, fineB;
    FPDP_PETSC(DMCreateGlobalVector(mesh.dm(), &fine));
    FPDP_PETSC(DMCreateGlobalVector(coarse, &coarseIn));
    PetscRandom rnd;
    FPDP_PETSC(PetscRandomCreate(PETSC_COMM_WORLD, &rnd));
    FPDP_PETSC(VecSetRandom(fine, rnd));
    FPDP_PETSC(VecSetRandom(coarseIn, rnd));
    FPDP_PETSC(VecDuplicate(coarseIn, &coarseA));
    FPDP_PETSC(VecDuplicate(coarseIn, &coarseB));
    FPDP_PETSC(MatMultTranspose(assembled, fine, coarseA));
    FPDP_PETSC(MatMultTranspose(matrixFree, fine, coarseB));
    FPDP_PETSC(VecDuplicate(fine, &fineA));
    FPDP_PETSC(VecDuplicate(fine, &fineB));
    FPDP_PETSC(MatMultAdd(assembled, coarseIn, fine, fineA));  // w = y + P x, separate vectors
    FPDP_PETSC(VecCopy(fine, fineB));
    FPDP_PETSC(MatMultAdd(matrixFree, coarseIn, fineB, fineB));  // in place, as PCMG calls it
    auto relativeDifference = [](Vec a, Vec b) {
      PetscReal scale, diff;
      FPDP_PETSC(VecNorm(a, NORM_INFINITY, &scale));
      FPDP_PETSC(VecAXPY(b, -1.0, a));
      FPDP_PETSC(VecNorm(b, NORM_INFINITY, &diff));
      return diff / scale;
    };
    const double restriction = relativeDifference(coarseA, coarseB);
    const double prolongation = relativeDifference(fineA, fineB);
    BOOST_TEST_MESSAGE(dim << "-D: restriction " << restriction << ", prolongation added " << prolongation);
    BOOST_TEST(restriction <= 1e-14);
    BOOST_TEST(prolongation <= 1e-14);
    for (Vec* v : {&fine, &coarseA, &coarseB, &coarseIn, &fineA, &fineB}) FPDP_PETSC(VecDestroy(v));
    FPDP_PETSC(PetscRandomDestroy(&rnd));
    FPDP_PETSC(MatDestroy(&assembled));
    FPDP_PETSC(MatDestroy(&matrixFree));
    FPDP_PETSC(DMDestroy(&coarse));
  }
  // And the whole solve: iteration counts and solution as with PETSc's AIJ transfers (-fpdp_mg_aij_transfers).
  const auto matrixFreeRun = solve(PETSC_COMM_WORLD, 2, 64, KSPRICHARDSON, PCMG);
  FPDP_PETSC(PetscOptionsSetValue(nullptr, "-fpdp_mg_aij_transfers", "1"));
  const auto aijRun = solve(PETSC_COMM_WORLD, 2, 64, KSPRICHARDSON, PCMG);
  FPDP_PETSC(PetscOptionsClearValue(nullptr, "-fpdp_mg_aij_transfers"));
  BOOST_TEST(matrixFreeRun.lastIterations == aijRun.lastIterations);
  const double relative = maxRelativeDifference(matrixFreeRun.state, aijRun.state);
  BOOST_TEST(relative <= 1e-12);
}

BOOST_AUTO_TEST_CASE(exchanging_ghosts_between_the_half_sweeps_saves_cycles_on_several_ranks) {
  // Under Richardson, on several ranks, each Gauss–Seidel sweep exchanges the ghosts between its forward and backward
  // half (-fpdp_mg_midsweep_exchange, on by default there): the backward half reads the neighbours' forward values,
  // as the one-rank sweep does, instead of those from before the sweep. On 2 ranks that must take fewer cycles than
  // the fixed ghosts of PETSc's SOR_LOCAL_SYMMETRIC_SWEEP and keep the solution (rtol 1e-12, so within 1e-9); on one
  // rank there are no ghosts and nothing may change, to the last bit.
  PetscMPIInt size = 1;
  MPI_Comm_size(PETSC_COMM_WORLD, &size);
  for (const auto& [dim, cells] : std::vector<std::pair<int, int>>{{2, 128}, {2, 256}, {3, 32}}) {
    for (const MPI_Comm comm : {PETSC_COMM_SELF, PETSC_COMM_WORLD}) {
      const auto exchanging = solve(comm, dim, cells, KSPRICHARDSON, PCMG);
      FPDP_PETSC(PetscOptionsSetValue(nullptr, "-fpdp_mg_midsweep_exchange", "false"));
      const auto fixed = solve(comm, dim, cells, KSPRICHARDSON, PCMG);
      FPDP_PETSC(PetscOptionsClearValue(nullptr, "-fpdp_mg_midsweep_exchange"));
      PetscMPIInt ranks = 1;
      MPI_Comm_size(comm, &ranks);
      BOOST_TEST_MESSAGE(dim << "-D " << cells << " cells per axis, " << ranks << " rank(s): " << exchanging.lastIterations
                             << " cycles with the exchange, " << fixed.lastIterations << " without");
      BOOST_REQUIRE(exchanging.state.size() == fixed.state.size());
      const double relative = maxRelativeDifference(exchanging.state, fixed.state);
      BOOST_TEST(fixed.fineSmootherName.find("ghosts exchanged") == std::string::npos);
      if (ranks == 1) {
        BOOST_TEST(exchanging.fineSmootherName.find("ghosts exchanged") == std::string::npos);
        BOOST_TEST(exchanging.lastIterations == fixed.lastIterations);
        BOOST_TEST(relative == 0.0);
      } else {
        BOOST_TEST(exchanging.fineSmootherName.find("ghosts exchanged") != std::string::npos);
        BOOST_TEST(exchanging.lastIterations < fixed.lastIterations);
        BOOST_TEST(relative <= 1e-9);
      }
    }
  }
  // GMRES: the fixed ghosts unless asked for.
  const auto gmres = solve(PETSC_COMM_WORLD, 2, 64, KSPGMRES, PCMG);
  BOOST_TEST(gmres.fineSmootherName.find("ghosts exchanged") == std::string::npos);
}
