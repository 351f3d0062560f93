// Cost of one noisy-GD step on whole fields of 4 to 6 axes (the operators of solver/noisygd beyond PETSc's DMDA):
// the push-forward by shears and the exact Gaussian convolution, for the two densities p (dataset D) and q (D'), on
// the quadratic loss with lambda = 1 of a two-record dataset (D' moves one record), eta = 0.1, sigma = 0.5 (the noise
// kernel's standard deviation sqrt(2 eta) sigma = 0.22), start N(0, 0.3 I), box [-3, 3]^d.
//
//   bench_noisy_gd_many_axes [--dim D] [--cells N] [--steps K] [--slabs]
//   mpiexec -n R bench_noisy_gd_many_axes --slabs ...    (the fields split over R ranks: solver::SlabNoisyGd)
//   [mpiexec -n R] bench_noisy_gd_many_axes --case OUTPUTS --dim D --cells N --steps K
//       what a run of such a case would compute, without its files: the steps on N, N/2 and N/4 cells per axis (the
//       run and the two coarser meshes of fpdp's error estimate), each with the divergences (R_2, R_10, KL, TV, the
//       profile at eps = 0, 0.5, ..., 4 and eps(1e-5), both directions: solver::wholeFieldDivergences) at OUTPUTS
//       evenly spaced steps, on the ranks in slabs; prints the whole wall time, the divergences' share, and
//       eps(1e-5) and R_2 at the last step on each mesh (JSON)
//
// Prints one JSON object:
//   cells, dim, steps
//   setup_s        the first step (it builds the convolution's kernels and, within their memory cap, the push-forward's
//                  face maps), wall time
//   step_s         mean wall time of the later steps, both densities; step_cpu_s their processor time
//   push_share     share of step_s in the push-forward
//   rss_peak_mib   peak resident set; bytes_per_cell its growth over the resident set before the fields were made,
//                  per cell (both densities and every work array); with --slabs: the largest over the ranks, per cell
//                  of that rank's part, and ranks
//   mass_drift     |mass + outflow - start mass| of p after the steps (round-off)
// Timings are measured here; no test asserts them.
#include <mpi.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include "solver/noisygd/GaussianConvolution.hpp"
#include "solver/noisygd/PushForward.hpp"
#include "solver/noisygd/SlabNoisyGd.hpp"

using namespace fpdp;

namespace {

double residentMiB(bool peak) {
  if (peak) {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_maxrss) / 1024.0;
  }
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * 4096.0 / (1024.0 * 1024.0);
}

double cpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

int usage(const char* why) {
  std::fprintf(stderr, "bench_noisy_gd_many_axes: %s\nusage: bench_noisy_gd_many_axes [--dim 4|5|6] [--cells N >= 4] "
                       "[--steps K >= 2] [--slabs] [--case OUTPUTS >= 1]\n", why);
  MPI_Finalize();
  return 2;
}

solver::GradientField quadraticGradient(double shift) {
  // L_D = (1/2) mean_i |theta - x_i|^2 over records x_1 = (0.5, 0.25, ...), x_2 = (shift, 0, ...).
  return [shift](const solver::ParameterPoint& t) {
    solver::ParameterPoint g{};
    for (int a = 0; a < meshes::kMaxDimension; ++a) g[a] = t[a] - 0.5 * (0.5 / (a + 1) + (a == 0 ? shift : 0.0));
    return g;
  };
}

constexpr double kEta = 0.1, kSigma = 0.5, kStartVariance = 0.3;

/// The start N(0, 0.3 I) at the cell centres of a (part of a) mesh.
std::vector<double> startField(const meshes::BoxMesh& local, int dim) {
  std::vector<double> p(local.totalCells());
  for (std::size_t c = 0; c < p.size(); ++c) {
    const auto x = local.centreAt(local.indexOf(c));
    double r2 = 0.0;
    for (int a = 0; a < dim; ++a) r2 += x[a] * x[a];
    p[c] = std::exp(-0.5 * r2 / kStartVariance) / std::pow(2.0 * M_PI * kStartVariance, 0.5 * dim);
  }
  return p;
}

/// --case: the run and its two coarser meshes, with the divergences at the output steps.
int caseLike(int rank, int dim, int cells, int steps, int outputs) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  double divergenceSeconds = 0.0;
  std::string levels;
  const solver::WholeFieldSettings settings{{2.0, 10.0}, {0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0}, {1e-5}};
  for (int level = 0; level < 3; ++level) {
    const int n = cells >> level;
    std::vector<meshes::Axis> axes;
    for (int a = 0; a < dim; ++a) axes.push_back(meshes::Axis::uniform(-3.0, 3.0, n));
    const meshes::BoxMesh mesh(std::move(axes));
    meshes::AxisValues s{};
    for (int a = 0; a < dim; ++a) s[a] = std::sqrt(2.0 * kEta) * kSigma;
    const solver::SlabNoisyGd gd(MPI_COMM_WORLD, mesh, quadraticGradient(-0.5), quadraticGradient(0.0), kEta, s);
    std::vector<double> p = startField(gd.stateMesh(), dim), q = p;
    solver::WholeFieldDivergences last;
    int nextOutput = 1;
    for (int k = 1; k <= steps; ++k) {
      gd.step(p, q);
      if (k * outputs >= nextOutput * steps) {  // OUTPUTS evenly spaced output steps, the last one at K
        const auto t0 = Clock::now();
        last = gd.divergences(p, q, settings);
        divergenceSeconds += std::chrono::duration<double>(Clock::now() - t0).count();
        ++nextOutput;
      }
    }
    const double eps = std::max(last.pq.epsilon[0].epsilon, last.qp.epsilon[0].epsilon);
    char text[160];
    std::snprintf(text, sizeof text, "%s{\"cells_per_axis\": %d, \"eps_1e-5\": %.10g, \"renyi_2\": %.10g}",
                  level ? ", " : "", n, eps, last.pq.renyi[0]);
    levels += text;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (rank == 0)
    std::printf("{\"dim\": %d, \"cells_per_axis\": %d, \"steps\": %d, \"outputs\": %d, \"wall_s\": %.4g, "
                "\"divergences_s\": %.4g, \"levels\": [%s]}\n",
                dim, cells, steps, outputs, seconds, divergenceSeconds, levels.c_str());
  MPI_Finalize();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  int dim = 4, cells = 32, steps = 10, outputs = 0;
  bool slabs = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--slabs") {
      slabs = true;
      continue;
    }
    if (i + 1 >= argc) return usage(("option " + arg + " needs a value").c_str());
    const int value = std::atoi(argv[++i]);
    if (arg == "--dim") dim = value;
    else if (arg == "--cells") cells = value;
    else if (arg == "--steps") steps = value;
    else if (arg == "--case") outputs = value;
    else return usage(("unknown option " + arg).c_str());
  }
  if (dim < 1 || dim > meshes::kMaxDimension) return usage("--dim must be 1 to 6");
  if (cells < 4) return usage("--cells must be at least 4");
  if (steps < 2) return usage("--steps must be at least 2");
  if (outputs > 0) {
    if (cells % 4 != 0) return usage("--case needs --cells divisible by 4 (the coarser meshes halve it twice)");
    if (outputs > steps) return usage("--case OUTPUTS must not exceed --steps");
    return caseLike(rank, dim, cells, steps, outputs);
  }
  if (ranks > 1 && !slabs) return usage("several ranks need --slabs");

  const double before = residentMiB(false);
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < dim; ++a) axes.push_back(meshes::Axis::uniform(-3.0, 3.0, cells));
  const meshes::BoxMesh mesh(std::move(axes));
  const double eta = kEta, sigma = kSigma;
  const auto quadratic = quadraticGradient;
  std::array<double, meshes::kMaxDimension> s{};
  for (int a = 0; a < dim; ++a) s[a] = std::sqrt(2.0 * eta) * sigma;
  std::unique_ptr<solver::PushForward> pushD, pushDPrime;
  std::unique_ptr<solver::GaussianConvolution> noise;
  std::unique_ptr<solver::SlabNoisyGd> split;
  if (slabs) {
    split = std::make_unique<solver::SlabNoisyGd>(MPI_COMM_WORLD, mesh, quadratic(-0.5), quadratic(0.0), eta, s);
  } else {
    pushD = std::make_unique<solver::PushForward>(mesh, quadratic(-0.5), eta);
    pushDPrime = std::make_unique<solver::PushForward>(mesh, quadratic(0.0), eta);
    noise = std::make_unique<solver::GaussianConvolution>(mesh, s);
  }
  const meshes::BoxMesh& local = slabs ? split->stateMesh() : mesh;

  std::vector<double> p = startField(local, dim), q = p;
  double volume = 1.0;
  for (int a = 0; a < dim; ++a) volume *= mesh.axis(a).width(0);
  double startMass = 0.0;
  for (double v : p) startMass += v * volume;

  using Clock = std::chrono::steady_clock;
  double setup = 0.0, stepping = 0.0, pushing = 0.0, cpu = 0.0, outflow = 0.0;
  for (int k = 0; k < steps; ++k) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t0 = Clock::now();
    const double c0 = cpuSeconds();
    auto t1 = t0;
    if (slabs) {
      outflow += split->step(p, q)[0].total();
      t1 = Clock::now();
    } else {
      outflow += pushD->apply(p).total();
      pushDPrime->apply(q);
      t1 = Clock::now();
      outflow += noise->apply(p).total();
      noise->apply(q);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const auto t2 = Clock::now();
    const double wall = std::chrono::duration<double>(t2 - t0).count();
    if (k == 0) {
      setup = wall;
    } else {
      stepping += wall;
      pushing += std::chrono::duration<double>(t1 - t0).count();
      cpu += cpuSeconds() - c0;
    }
  }
  double mass = 0.0;
  for (double v : p) mass += v * volume;
  double sums[3] = {mass, outflow, startMass}, totals[3] = {0, 0, 0};
  MPI_Allreduce(sums, totals, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  double rss = residentMiB(true), bytes = (rss - before) * 1024.0 * 1024.0 / static_cast<double>(local.totalCells());
  double largest[2] = {rss, bytes}, worst[2] = {0, 0};
  MPI_Allreduce(largest, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const double n = static_cast<double>(mesh.totalCells()), later = steps - 1;
  if (rank == 0)
    std::printf("{\"dim\": %d, \"cells\": %.0f, \"cells_per_axis\": %d, \"steps\": %d, \"ranks\": %d, "
                "\"setup_s\": %.4g, \"step_s\": %.4g, \"step_cpu_s\": %.4g, \"push_share\": %s, "
                "\"rss_peak_mib\": %.1f, \"bytes_per_cell\": %.1f, \"mass_drift\": %.3g}\n",
                dim, n, cells, steps, ranks, setup, stepping / later, cpu / later,
                slabs ? "null" : std::to_string(pushing / stepping).c_str(), worst[0], worst[1],
                std::fabs(totals[0] + totals[1] - totals[2]));
  MPI_Finalize();
  return 0;
}
