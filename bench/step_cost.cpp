// Cost of one implicit time step of the Fokker–Planck solver against the cost of one sparse matrix-vector product
// (SpMV) and the machine's memory bandwidth, all measured in this one process, on the benchmark problem
// of bench/cases/ou-2d-256.toml: Langevin diffusion on the quadratic loss (lambda = 1, records (1.2, 0.6),
// (0.8, 0.4); D' replaces the second by (0.4, 0)), sigma^2 = 0.5, start N(0, 0.5 I), box [-6, 6]^d, p and q as the
// two interlaced fields, Scharfetter–Gummel fluxes, BDF2 with dt = 0.01 unless told otherwise.
//
//   bench_step_cost [--cells N] [--dim 2|3] [--steps S] [--repeats R] [--dt DT] [--no-stream] [PETSc options]
//
// Prints one JSON object (rank 0):
//   spmv_s          best-of-R wall time of one MatMult with the assembled operator (the fine-level matrix)
//   spmv_bytes      memory-traffic model of that MatMult: AIJ values (8 B) and column indices (4 B) per non-zero,
//                   row pointers (4 B per row), x read once and y written once (8 B each per row)
//   spmv_gbs        spmv_bytes / spmv_s; stream_gbs the STREAM triad bandwidth measured here (a[i] = b[i] + s c[i]
//                   on three 64 MiB arrays, 24 B per element, best of R), so spmv_fraction = spmv_gbs / stream_gbs
//   step_s          best over R runs of the mean wall time of the steps after the first two (the first steps
//                   include the preconditioner / factorisation set-up of BDF1 and BDF2, reported as setup_s)
//   step_spmv       step_s in SpMV-equivalents: step_s / (spmv_bytes / stream_gbs), i.e. the step's time over the
//                   time one SpMV's traffic takes at the measured STREAM bandwidth; step_over_spmv = step_s / spmv_s
//   step_min_s      the fastest single step after the first two, over all runs (a loaded machine inflates the
//                   minimum least: bench/ci_check.py judges step_min_s / spmv_s)
//   step_cpu_s      the same steps' process CPU time per step
//   rss_peak_mib    peak resident set of the process before the STREAM arrays are allocated; bytes_per_cell its
//                   growth over the resident set before the mesh was built, per cell (both densities)
#include <petscts.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"
#include "models/Loss.hpp"
#include "solver/propagation/DensityEvolution.hpp"
#include "solver/discretisation/LangevinDiscretisation.hpp"

using namespace fpdp;

namespace {
double now() { return MPI_Wtime(); }

double cpuSeconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

double maxRssBytes() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return 1024.0 * static_cast<double>(r.ru_maxrss);
}

double currentRssBytes() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// STREAM triad on one rank (each rank runs its own; the slowest counts), best of `repeats`, GB/s (1e9 B/s).
double streamTriad(MPI_Comm comm, int repeats) {
  const std::size_t n = std::size_t{1} << 23;  // 3 x 64 MiB: far beyond the caches
  std::vector<double> a(n, 0.0), b(n, 1.0), c(n, 2.0);
  double best = 1e300;
  for (int r = 0; r < repeats; ++r) {
    MPI_Barrier(comm);
    const double t0 = now();
    const double s = 3.0 + r;
    for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    double t = now() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
    best = std::min(best, t);
  }
  volatile double sink = a[n / 2];
  (void)sink;
  int size = 1;
  MPI_Comm_size(comm, &size);
  return 24.0 * static_cast<double>(n) * size / best / 1e9;
}
}  // namespace

int main(int argc, char** argv) {
  int cells = 256, dim = 2, steps = 20, repeats = 3;
  double dt = 0.01;
  bool stream = true;
  // Our own arguments come first; everything from the first unknown argument on is for PETSc.
  int first = 1;
  for (; first < argc; ++first) {
    const std::string a = argv[first];
    auto value = [&]() -> const char* {
      if (first + 1 >= argc) {
        std::fprintf(stderr, "bench_step_cost: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++first];
    };
    if (a == "--cells") cells = std::atoi(value());
    else if (a == "--dim") dim = std::atoi(value());
    else if (a == "--steps") steps = std::atoi(value());
    else if (a == "--repeats") repeats = std::atoi(value());
    else if (a == "--dt") dt = std::atof(value());
    else if (a == "--no-stream") stream = false;
    else break;
  }
  if (cells < 8 || (dim != 2 && dim != 3) || steps < 3 || repeats < 1 || !(dt > 0)) {
    std::fprintf(stderr, "bench_step_cost: need --cells >= 8, --dim 2 or 3, --steps >= 3, --repeats >= 1, --dt > 0\n");
    return 2;
  }
  // PETSc sees argv[0] and the PETSc options only.
  std::vector<char*> petscArgv{argv[0]};
  for (int i = first; i < argc; ++i) petscArgv.push_back(argv[i]);
  int petscArgc = static_cast<int>(petscArgv.size());
  petscArgv.push_back(nullptr);
  char** pa = petscArgv.data();
  PetscCall(PetscInitialize(&petscArgc, &pa, nullptr, nullptr));
  {
    MPI_Comm comm = PETSC_COMM_WORLD;
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const double rssBefore = currentRssBytes();
    std::vector<meshes::Axis> axes;
    for (int a = 0; a < dim; ++a) axes.push_back(meshes::Axis::uniform(-6.0, 6.0, cells));
    const meshes::DistributedBoxMesh mesh(comm, meshes::BoxMesh(axes), 2);
    auto point = [&](std::initializer_list<double> x) {
      models::Vector v = models::Vector::Zero(dim);
      int a = 0;
      for (double xi : x) if (a < dim) v[a++] = xi;
      return v;
    };
    auto loss = std::make_shared<const models::QuadraticLoss>(1.0);
    auto LD = std::make_shared<const models::EmpiricalLoss>(
        loss, models::Dataset({{point({1.2, 0.6, 0.0})}, {point({0.8, 0.4, 0.0})}}));
    auto LDp = std::make_shared<const models::EmpiricalLoss>(
        loss, models::Dataset({{point({1.2, 0.6, 0.0})}, {point({0.4, 0.0, 0.0})}}));
    const solver::LangevinDiscretisation disc(
        mesh, {LD, LDp, std::sqrt(0.5), models::Gaussian(models::Vector::Zero(dim), 0.5 * models::Matrix::Identity(dim, dim))},
        solver::FaceFluxScheme::ScharfetterGummel);
    const double cellCount = std::pow(static_cast<double>(cells), dim);

    // One SpMV with the assembled operator.
    auto A = disc.spatialOperator().assemble();
    auto u = mesh.createVector(), y = mesh.createVector();
    disc.setInitialState(u);
    MatInfo info;
    PetscCall(MatGetInfo(A, MAT_GLOBAL_SUM, &info));
    PetscInt rows = 0;
    PetscCall(MatGetSize(A, &rows, nullptr));
    const double nnz = info.nz_used;
    const double spmvBytes = nnz * (8.0 + 4.0) + 4.0 * static_cast<double>(rows + size) + 16.0 * static_cast<double>(rows);
    PetscCall(MatMult(A, u, y));  // warm-up
    double spmv = 1e300;
    const int spmvRepeats = std::max(10, 5 * repeats);
    for (int r = 0; r < spmvRepeats; ++r) {
      PetscCall(MPI_Barrier(comm));
      const double t0 = now();
      PetscCall(MatMult(A, u, y));
      double t = now() - t0;
      MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, comm);
      spmv = std::min(spmv, t);
    }

    // Time steps: R runs of S steps from the initial state, each with a new integrator (set-up included).
    double bestStep = 1e300, bestStepCpu = 1e300, bestSetup = 1e300, fastestStep = 1e300;
    std::string description;
    long jacobianBuilds = 0;
    PetscInt kspIterations = 0;
    for (int r = 0; r < repeats; ++r) {
      solver::TimeIntegration ti{dt, steps, "bdf", "preonly", "lu", ""};
      meshes::MatHandle Ar;
      PetscCall(MatDuplicate(A, MAT_COPY_VALUES, Ar.out()));
      solver::DensityEvolution evolution(mesh, std::move(Ar), ti);
      description = evolution.describe();
      disc.setInitialState(u);
      std::vector<double> stamps, cpuStamps;
      const double start = now();
      evolution.run(u, [&](long, double, Vec) {
        stamps.push_back(now());
        cpuStamps.push_back(cpuSeconds());
      });
      // stamps[k] is after step k (stamps[0] the initial state); steps 1 and 2 carry the set-up.
      double perStep = (stamps.back() - stamps[2]) / static_cast<double>(steps - 2);
      double perStepCpu = (cpuStamps.back() - cpuStamps[2]) / static_cast<double>(steps - 2);
      double setup = stamps[2] - start;
      double fastest = 1e300;  // the fastest single step: what a loaded machine inflates least
      for (std::size_t k = 3; k < stamps.size(); ++k) fastest = std::min(fastest, stamps[k] - stamps[k - 1]);
      MPI_Allreduce(MPI_IN_PLACE, &fastest, 1, MPI_DOUBLE, MPI_MAX, comm);
      fastestStep = std::min(fastestStep, fastest);
      MPI_Allreduce(MPI_IN_PLACE, &perStep, 1, MPI_DOUBLE, MPI_MAX, comm);
      MPI_Allreduce(MPI_IN_PLACE, &perStepCpu, 1, MPI_DOUBLE, MPI_MAX, comm);
      MPI_Allreduce(MPI_IN_PLACE, &setup, 1, MPI_DOUBLE, MPI_MAX, comm);
      bestStep = std::min(bestStep, perStep);
      bestStepCpu = std::min(bestStepCpu, perStepCpu);
      bestSetup = std::min(bestSetup, setup);
      jacobianBuilds = evolution.jacobianBuilds();
      SNES snes;
      KSP ksp;
      PetscCall(TSGetSNES(evolution.ts(), &snes));
      PetscCall(SNESGetKSP(snes, &ksp));
      PetscCall(KSPGetIterationNumber(ksp, &kspIterations));  // of the last step
    }
    double rssPeak = maxRssBytes(), rssGrowth = maxRssBytes() - rssBefore;
    MPI_Allreduce(MPI_IN_PLACE, &rssPeak, 1, MPI_DOUBLE, MPI_SUM, comm);
    MPI_Allreduce(MPI_IN_PLACE, &rssGrowth, 1, MPI_DOUBLE, MPI_SUM, comm);
    const double streamGbs = stream ? streamTriad(comm, std::max(5, 2 * repeats)) : NAN;
    const double spmvGbs = spmvBytes / spmv / 1e9;
    const double spmvAtStream = spmvBytes / (streamGbs * 1e9);
    if (rank == 0) {
      char line[2048];
      std::snprintf(line, sizeof line,
          "{\"dim\": %d, \"cells\": %d, \"ranks\": %d, \"unknowns\": %d, \"dt\": %g, \"steps\": %d, \"repeats\": %d, "
          "\"solver\": \"%s\", \"ksp_iterations_last_step\": %d, \"jacobian_builds\": %ld, "
          "\"spmv_s\": %.6e, \"spmv_bytes\": %.6e, \"spmv_gbs\": %.3f, \"stream_gbs\": %.3f, \"spmv_fraction\": %.3f, "
          "\"step_s\": %.6e, \"step_min_s\": %.6e, \"step_cpu_s\": %.6e, \"setup_s\": %.4e, \"step_over_spmv\": %.2f, \"step_spmv\": %.2f, "
          "\"rss_peak_mib\": %.1f, \"bytes_per_cell\": %.1f}\n",
          dim, cells, size, static_cast<int>(rows), dt, steps, repeats, description.c_str(),
          static_cast<int>(kspIterations), jacobianBuilds, spmv, spmvBytes, spmvGbs, streamGbs, spmvGbs / streamGbs,
          bestStep, fastestStep, bestStepCpu, bestSetup, bestStep / spmv, bestStep / spmvAtStream, rssPeak / 1048576.0,
          rssGrowth / cellCount);
      std::string json = line;  // JSON has no NaN: a quantity not measured (--no-stream) is null
      for (std::size_t at; (at = json.find("nan")) != std::string::npos;) json.replace(at, 3, "null");
      std::printf("%s", json.c_str());
    }
  }
  PetscCall(PetscFinalize());
  return 0;
}
