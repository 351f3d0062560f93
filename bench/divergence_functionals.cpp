// Wall time of one output step's divergence functionals (solver/functionals/Divergences.hpp) on one rank: a 2-D pair of
// Gaussians with unequal covariances (exact cell averages) on N^2 cells, with the dense dp_accounting order grid
// (156 orders), the hockey-stick grid 0..10 by 0.05 and 1000-bin privacy-loss histograms; then the orders alone, and
// the two orders of the default case. Target: <= 50 ms per output step at 256^2 with ~150 orders.
//   bench_divergence_functionals [N] [REPEATS]      (defaults 256, 9)
#include <petscsys.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"
#include "solver/functionals/Divergences.hpp"

using namespace fpdp;

int main(int argc, char** argv) {
  const int N = argc > 1 ? std::atoi(argv[1]) : 256;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 9;
  PetscCall(PetscInitialize(&argc, &argv, nullptr, nullptr));
  {
    const meshes::DistributedBoxMesh mesh(PETSC_COMM_SELF,
                                          meshes::BoxMesh({meshes::Axis::uniform(-8, 8, N), meshes::Axis::uniform(-8, 8, N)}), 2);
    models::Matrix S1(2, 2), S2(2, 2);
    S1 << 1.0, 0.2, 0.2, 0.8;
    S2 << 1.1, 0.1, 0.1, 0.9;
    models::Vector m1(2), m2(2);
    m1 << 0.2, -0.1;
    m2 << 0.0, 0.0;
    const models::Gaussian p(m1, S1), q(m2, S2);
    auto u = mesh.createVector();
    PetscScalar* a;
    PetscCall(VecGetArray(u, &a));
    mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt, PetscInt l) {
      const auto& x = mesh.box().axis(0);
      const auto& y = mesh.box().axis(1);
      const std::array<double, 3> lo{x.face(i), y.face(j), 0}, hi{x.face(i + 1), y.face(j + 1), 0};
      a[2 * l] = p.cellAverage(lo, hi);
      a[2 * l + 1] = q.cellAverage(lo, hi);
    });
    PetscCall(VecRestoreArray(u, &a));
    // privacy.delta_grid's default 1e-1 .. 1e-12 and privacy.delta = 1e-5 (among them): 12 deltas.
    std::vector<double> runDeltas;
    for (int k = 1; k <= 12; ++k) runDeltas.push_back(std::pow(10.0, -k));
    struct Config {
      const char* name;
      solver::FunctionalSettings settings;
    };
    const std::vector<Config> configs{
        {"dense orders + hockey-stick (201 eps) + PLD (1000 bins)",
         {models::denseRenyiOrders(), models::uniformEpsGrid(10.0, 0.05), 1000, std::nullopt}},
        {"dense orders only", {models::denseRenyiOrders(), {}, 0, std::nullopt}},
        {"dense orders + hockey-stick + PLD + roots + R_alpha(q || p) (a run's set with dense orders)",
         {models::denseRenyiOrders(), models::uniformEpsGrid(10.0, 0.05), 1000, std::nullopt,
          meshes::FieldRepresentation::CellAverages, runDeltas, true}},
        {"orders [2, 10] only", {{2.0, 10.0}, {}, 0, std::nullopt}},
        {"orders [2, 10] + hockey-stick (201 eps)", {{2.0, 10.0}, models::uniformEpsGrid(10.0, 0.05), 0, std::nullopt}},
        {"orders [2, 10] + PLD (1000 bins)", {{2.0, 10.0}, {}, 1000, std::nullopt}},
        {"orders [2, 10] + eps(delta) roots (12 deltas, both directions)",
         {{2.0, 10.0}, {}, 0, std::nullopt, meshes::FieldRepresentation::CellAverages, runDeltas, false}},
        {"orders [2, 10] + R_alpha(q || p)",
         {{2.0, 10.0}, {}, 0, std::nullopt, meshes::FieldRepresentation::CellAverages, {}, true}},
        {"a run's default: orders [2, 10] + hockey-stick + PLD + roots + R_alpha(q || p)",
         {{2.0, 10.0}, models::uniformEpsGrid(10.0, 0.05), 1000, std::nullopt,
          meshes::FieldRepresentation::CellAverages, runDeltas, true}},
        {"a run's default without roots and R_alpha(q || p)",
         {{2.0, 10.0}, models::uniformEpsGrid(10.0, 0.05), 1000, std::nullopt}},
    };
    std::printf("divergence functionals, %dx%d cells, 1 rank, %d repeats: median and minimum wall time per evaluation,\n"
                "and the median CPU time of the process (what a loaded machine does not inflate)\n\n",
                N, N, repeats);
    std::printf("| functionals | orders | wall median (ms) | wall min (ms) | CPU median (ms) |\n|---|---|---|---|---|\n");
    for (const auto& c : configs) {
      const solver::DivergenceFunctionals f(mesh, c.settings);
      std::vector<double> ms, cpu;
      double sink = 0;
      for (int r = 0; r < repeats; ++r) {
        timespec c0, c1;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
        const auto t0 = std::chrono::steady_clock::now();
        const auto v = f.evaluate(u);
        const auto t1 = std::chrono::steady_clock::now();
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
        sink += v.renyi[0];
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        cpu.push_back(1e3 * (c1.tv_sec - c0.tv_sec) + 1e-6 * (c1.tv_nsec - c0.tv_nsec));
      }
      std::sort(ms.begin(), ms.end());
      std::sort(cpu.begin(), cpu.end());
      std::printf("| %s | %zu | %.1f | %.1f | %.1f |\n", c.name, c.settings.orders.size(), ms[ms.size() / 2], ms[0],
                  cpu[cpu.size() / 2]);
      if (!std::isfinite(sink)) std::printf("  (R_alpha not finite)\n");
    }
  }
  PetscCall(PetscFinalize());
  return 0;
}
