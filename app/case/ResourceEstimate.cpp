#include "app/case/ResourceEstimate.hpp"

#include <sys/statvfs.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/case/CaseReader.hpp"

namespace fpdp::app {

namespace {

// Peak resident bytes per cell of whole runs (two densities, 2-D), bench/README.md "Peak memory per cell": the
// exponential integrator 487, the cheapest stepping configuration (Crank–Nicolson, BiCGStab + ILU(0)) 919, the
// default stepping configuration (BDF2 with LU) 2763. 1-D and 3-D runs hold at least the 2-D vectors per cell.
constexpr std::uint64_t kExponentialBytesPerCell = 487;
constexpr std::uint64_t kWholeFieldBytesPerCell = 240;  // d > 3: above the 224 B measured at 24^5 (docs/scaling.md §9)
constexpr std::uint64_t kSteppingBytesPerCell = 919;
constexpr std::uint64_t kLuBytesPerCell = 2763;
// In 3-D the factors fill in faster than the cells grow: whole-run peaks of a 3-D BDF2 run with LU (40 steps,
// 2026-12-07, commit f97aa0a), less the 100 MiB per rank: 32^3 13881 B per cell, 40^3 18922 B. Taken as 13881 B times
// the square root of the cells over 32^3 (19399 B at 40^3, above the measured figure).
constexpr double kLu3dBytesPerCellAt32Cubed = 13881.0;
// One process's MPI, PETSc and HDF5 footprint (docs/scaling.md §4: about 100 MiB).
constexpr std::uint64_t kFixedBytesPerRank = std::uint64_t{100} << 20;

long environmentInteger(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' && n > 0 ? n : 0;
}

long runSteps(const Case& c) { return c.dynamics == "langevin" ? c.time.steps() : c.noisyGd.steps; }

std::string gib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return text;
}

}  // namespace

std::uint64_t outputStepCount(const Case& c) {
  const long steps = runSteps(c);
  return static_cast<std::uint64_t>(steps / c.output.every) + 1 + (steps % c.output.every != 0 ? 1 : 0);
}

std::uint64_t estimateTableBytes(const Case& c) {
  // app/observers/FunctionalsOutput.cpp: 12 /renyi series per order, delta_pq and delta_qp per eps of the
  // hockey-stick grid (0, step, ..., max), the masses of both privacy-loss histograms per bin.
  const auto epsPoints =
      static_cast<std::uint64_t>(c.divergence.hockeyStickEpsMax / c.divergence.hockeyStickEpsStep + 1e-9) + 1;
  const std::uint64_t values = 12 * c.divergence.orders.size() + 2 * epsPoints +
                               2 * static_cast<std::uint64_t>(c.divergence.privacyLossBins);
  return outputStepCount(c) * values * 8;
}

MemoryEstimate estimateRunMemory(const Case& c, int ranks, bool solverOptionsGiven) {
  MemoryEstimate e;
  e.cells = 1;
  for (int a = 0; a < c.mesh.dim; ++a) e.cells *= static_cast<std::uint64_t>(c.mesh.cells[static_cast<std::size_t>(a)]);
  if (c.mesh.dim > 3) {
    // The whole-field noisy-GD step (solver::SlabNoisyGd, docs/scaling.md §9): measured 180 B per cell in 4-D and
    // 224 B per cell in 5-D on one rank (the two densities, a slab, the transpose buffers and the face maps); the
    // companions run after the run, on 2^-d as many cells.
    e.bytesPerCell = kWholeFieldBytesPerCell;
    e.basis = "the measured figure of the whole-field noisy-GD step (docs/scaling.md §9)";
    e.bytes = e.cells * e.bytesPerCell + static_cast<std::uint64_t>(ranks) * kFixedBytesPerRank;
    return e;
  }
  const bool exponential = c.dynamics == "langevin" && !exponentialObstacle(c) &&
                           (c.solver.ts_type == kAutoTsType || c.solver.ts_type == kExponentialTsType) &&
                           c.solver.petsc_options.empty();
  if (solverOptionsGiven || exponential || c.dynamics != "langevin") {
    e.bytesPerCell = kExponentialBytesPerCell;
    e.basis = solverOptionsGiven ? "the lowest measured figure, as PETSc options may choose the integrator"
                                 : exponential ? "the exponential integrator's measured figure"
                                               : "the lowest measured figure";
  } else if (c.solver.pc_type == "lu") {
    e.bytesPerCell = kLuBytesPerCell;
    e.basis = "the measured figure of stepping with LU";
    if (c.mesh.dim == 3) {
      const double perCell = kLu3dBytesPerCellAt32Cubed * std::sqrt(static_cast<double>(e.cells) / 32768.0);
      e.bytesPerCell = std::max(e.bytesPerCell, static_cast<std::uint64_t>(std::ceil(perCell)));
      e.basis = "the measured figure of stepping with LU in 3-D, growing per cell as the square root of the cells "
                "(the factors' fill; GMRES with ILU(0), solver.ksp_type = \"gmres\" and solver.pc_type = \"ilu\", "
                "held a twentieth of it at 40^3)";
    }
  } else {
    e.bytesPerCell = kSteppingBytesPerCell;
    e.basis = "the lowest measured figure of a stepping integrator";
  }
  // The error estimate's companion on the 2x coarser mesh is solved while the run's plan exists (docs/scheme.md §8):
  // 2^-d more cells at the peak (the 4x coarser one comes after it).
  if (c.accuracy.estimate) {
    e.bytesPerCell += e.bytesPerCell >> c.mesh.dim;
    e.basis += ", with the error estimate's companion solve";
  }
  e.bytes = e.cells * e.bytesPerCell + static_cast<std::uint64_t>(ranks) * kFixedBytesPerRank;
  return e;
}

MemoryEstimate estimateSampleMemory(const Case& c, int ranks, int threads) {
  MemoryEstimate e = estimateRunMemory(c, ranks, false);
  const std::uint64_t sets = 2 * c.sampler.outputSteps.size() * (static_cast<std::uint64_t>(threads) + 1);
  e.bytesPerCell = 8 * sets;
  e.basis = "8 B per cell for each of " + std::to_string(sets) +
            " histograms (2 datasets x output steps x (threads + 1))";
  e.bytes = e.cells * e.bytesPerCell + static_cast<std::uint64_t>(ranks) * kFixedBytesPerRank;
  return e;
}

std::optional<std::uint64_t> availableMemory() {
  std::ifstream meminfo("/proc/meminfo");
  std::optional<std::uint64_t> available, total;
  for (std::string line; std::getline(meminfo, line);) {
    std::istringstream fields(line);
    std::string name;
    std::uint64_t kib = 0;
    if (!(fields >> name >> kib)) continue;
    if (name == "MemAvailable:") available = kib * 1024;
    if (name == "MemTotal:") total = kib * 1024;
  }
  return available ? available : total;
}

namespace {

// The run's tables of every output step, held by each of the node's `ranks` beside `meshBytes`, against `available`.
void requireTablesFit(const Case& c, std::uint64_t meshBytes, std::uint64_t ranks, std::uint64_t available) {
  const std::uint64_t tables = estimateTableBytes(c);
  if (tables <= (available - meshBytes) / ranks) return;
  const std::uint64_t outputs = outputStepCount(c);
  const std::string message =
      c.sourcePath.string() + ": output.every = " + std::to_string(c.output.every) + ": the run keeps at least " +
      gib(tables) + " of tables per rank in memory until its end (" + std::to_string(outputs) +
      " output steps x " + std::to_string(tables / outputs / 8) + " numbers: " +
      std::to_string(c.divergence.orders.size()) + " Rényi orders, the hockey-stick grid and " +
      std::to_string(c.divergence.privacyLossBins) + " divergence.privacy_loss_bins per density), but this machine has " +
      gib(available) + " available (MemAvailable) beside the mesh's " + gib(meshBytes) +
      "; allowed: output steps whose tables fit in the memory available (a larger output.every, fewer "
      "divergence.privacy_loss_bins, a larger divergence.hockey_stick_eps_step, fewer divergence.orders)";
  throw InputError(message, "output.every", std::to_string(c.output.every),
                   "output steps whose tables fit in the memory available");
}

}  // namespace

void requireMemoryFits(const Case& c, bool solverOptionsGiven, std::optional<int> samplerThreads) {
  const auto available = availableMemory();
  if (!available) return;  // no /proc/meminfo: nothing to compare with
  const long world = std::max(1L, environmentInteger("OMPI_COMM_WORLD_SIZE") > 0 ? environmentInteger("OMPI_COMM_WORLD_SIZE")
                                                                                : environmentInteger("PMI_SIZE"));
  const long local = std::min(world, environmentInteger("OMPI_COMM_WORLD_LOCAL_SIZE") > 0
                                         ? environmentInteger("OMPI_COMM_WORLD_LOCAL_SIZE")
                                         : world);
  const MemoryEstimate e = samplerThreads ? estimateSampleMemory(c, static_cast<int>(world), *samplerThreads)
                                          : estimateRunMemory(c, static_cast<int>(world), solverOptionsGiven);
  // This node's share: its ranks' part of the cells and their fixed footprints.
  const std::uint64_t node = e.cells * e.bytesPerCell / static_cast<std::uint64_t>(world) * static_cast<std::uint64_t>(local) +
                             static_cast<std::uint64_t>(local) * kFixedBytesPerRank;
  if (node <= *available) {
    // Every rank of a run keeps the tables of every output step (the sampler keeps none of them).
    if (!samplerThreads) requireTablesFit(c, node, static_cast<std::uint64_t>(local), *available);
    return;
  }
  std::string cells;
  for (int a = 0; a < c.mesh.dim; ++a) cells += (a ? ", " : "") + std::to_string(c.mesh.cells[static_cast<std::size_t>(a)]);
  const std::string ranks = world > 1 ? " for the " + std::to_string(local) + " of " + std::to_string(world) +
                                            " ranks on this node"
                                      : "";
  const std::string message = c.sourcePath.string() + ": mesh.cells = [" + cells + "]: the run needs at least " +
                              gib(node) + ranks + " (" + std::to_string(e.cells) + " cells x " +
                              std::to_string(e.bytesPerCell) + " B per cell, " + e.basis +
                              ", + 100 MiB per rank), but this machine has " + gib(*available) +
                              " available (MemAvailable); allowed: a mesh whose run fits in the memory available "
                              "(fewer cells, or more nodes" + (samplerThreads ? std::string(", fewer threads or sampler.output_steps") : std::string()) + ")";
  throw InputError(message, "mesh.cells", "[" + cells + "]", "a mesh whose run fits in the memory available");
}

std::uint64_t estimateFieldBytes(const Case& c) {
  if (!c.output.fields) return 0;
  std::uint64_t cells = 1;
  for (int a = 0; a < c.mesh.dim; ++a) cells *= static_cast<std::uint64_t>(c.mesh.cells[static_cast<std::size_t>(a)]);
  return outputStepCount(c) * cells * 16 * (c.output.vtk ? 2 : 1);
}

std::uint64_t estimateOutputBytes(const Case& c) { return estimateFieldBytes(c) + estimateTableBytes(c); }

void requireOutputFits(const Case& c, const std::string& outputDirectory) {
  const std::uint64_t needed = estimateOutputBytes(c);
  if (needed == 0) return;
  std::error_code ec;
  std::filesystem::path at = std::filesystem::absolute(outputDirectory, ec);
  if (ec) return;
  while (!std::filesystem::exists(at, ec) && at.has_parent_path() && at.parent_path() != at) at = at.parent_path();
  struct statvfs fs {};
  if (statvfs(at.c_str(), &fs) != 0) return;  // nothing to compare with
  const std::uint64_t available = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  if (needed <= available) return;
  const std::string message =
      c.sourcePath.string() + ": output.every = " + std::to_string(c.output.every) + ": the run writes at least " +
      gib(needed) + " (" + std::to_string(outputStepCount(c)) + " output steps of " +
      (c.output.fields ? std::string("the fields p and q") + (c.output.vtk ? ", also as VTK files, " : " ") + "and " : "") +
      "the tables of fpdp.h5), but the file system of '" + at.string() + "' has " + gib(available) +
      " available; allowed: fewer output steps (a larger output.every), output.fields = false, output.vtk = false, or "
      "smaller tables (fewer divergence.privacy_loss_bins, a larger divergence.hockey_stick_eps_step)";
  throw InputError(message, "output.every", std::to_string(c.output.every), "output steps whose fields and tables fit on the disk");
}

}  // namespace fpdp::app
