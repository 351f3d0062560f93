#pragma once
// The Monte Carlo sampler: the algorithm itself, run for many independent particles, to check the density solver.
//
//   Noisy GD (MATH.md §2.1, CYS Algorithm 1):
//     theta_{k+1} = Pi_C( theta_k - eta g_D(theta_k) + sqrt(2 eta) L Z_k ),   L L^T = Sigma (Cholesky), Z_k ~ N(0, I)
//   Langevin diffusion (MATH.md §2.3) by Euler–Maruyama with step dt (first order weak; the solver is exact in time
//   up to its own discretisation, so dt sets a bias O(dt) the user controls):
//     theta_{k+1} = theta_k - dt grad L_D(theta_k) + sqrt(2 dt) L Z_k
//   theta_0 = Pi_C(m_0 + L_0 Z_init), L_0 L_0^T = V_0 (the case's [initial]).
//   Minibatch noisy SGD (MATH.md §8): g_D replaced by g_{B_k} = (1/b) sum_{i in B_k} grad l(theta; x_i)
//   (models::EmpiricalLoss::batchGradientInto), B_k of models/MinibatchSchedule.hpp: the cyclic batch k mod m, or a
//   Poisson batch holding each record independently with probability gamma. A batch that holds every record with
//   b = n takes the full-batch drift itself (EmpiricalLoss::gradientInto), so full batches, one cyclic batch of all
//   n records and Poisson batches with gamma = 1 give the same bits for one seed.
// g_D is models::EmpiricalLoss::gradientInto (the loss, the data, the clipping of the solver's drift: one
// definition), Pi_C is models::ConstraintSet::projectInPlace. The neighbour D' runs the same recursion with its own
// empirical loss (and Sigma' for Langevin).
//
// Random numbers (README: Random123; validation/LaneRandom.hpp): Philox4x32-10 keyed by the seed, counter (block,
// particle, 4 process + stream), process 0 for D and 1 for D'; stream 0 holds the initial draw, 1 the noise, 2 the
// Poisson batches, 3 the ziggurat's rare extra words. N(0, 1) variate j of streams 0 and 1 comes from their 64-bit
// word j by Doornik's 256-layer ziggurat (98.5 % of the variates inside a rectangle; exact in law: the wedge test,
// Marsaglia's exact tail beyond R = 3.65 and a rejection's fresh words from stream 3, read in order), the components
// of update k after those of update k - 1. Record i of the process's dataset (n_s records) joins update k's batch
// when 64-bit word (k - 1) n_s + i of stream 2 is below gamma 2^64. A particle's path is therefore a pure function of
// (seed, particle, process): results do not depend on the number of threads or ranks, and the noise is the same
// whatever the batches.
//
// Lanes: the particles of a block advance in groups of 64 (structure of arrays): the Philox rounds, the ziggurat's
// rectangles, the drift of the closed-form losses (models/LossLanes.hpp: the quadratic and logistic terms, the
// clipping; other losses go one particle at a time through EmpiricalLoss) and the update are loops over the 64
// lanes that the compiler vectorises, compiled for AVX-512, AVX2 and the x86-64 baseline and chosen at run time,
// with the same bits on each (no contraction, no reduction across lanes). The projection and the recording at the
// output steps stay scalar, per particle in index order.
//
// Parallelism: particles are cut into fixed blocks (size from N alone); MPI ranks take contiguous ranges of blocks,
// threads take blocks from a shared counter. Histograms are integer counts, summed exactly; moments are accumulated
// per block (mean and centred cross products, Welford) and merged in block order (Chan et al.), so 1 or 2 threads
// or ranks give bit-identical results.
//
// Streaming: at each output step a particle adds one count to its mesh cell (meshes::BoxMesh geometry; particles
// outside the mesh are counted apart), or, if the projection put it on the boundary of C, to its boundary bin
// (solver::BoundaryBins::projectedPointBin: the density solver's own bins, same layout and order, so the counts
// compare bin for bin with the solver's boundary masses). No particle is stored: every estimate downstream
// (divergences from the solver's log p/q, the membership-inference audit) is a function of the solver's cell values
// and these counts, because the solver's log-ratio is constant on each cell (validation/SampleAgreement.hpp).
// Exercise: build/app/fpdp sample cases/noisy-gd-quadratic-1d.toml --particles 1000000 --threads 2
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include "models/ConstraintSet.hpp"
#include "models/Loss.hpp"
#include "models/MinibatchSchedule.hpp"
#include "solver/noisygd/ConstraintProjection.hpp"

namespace fpdp::validation {

enum class SampledDynamics { NoisyGd, Langevin };

struct SamplerProblem {
  SampledDynamics dynamics = SampledDynamics::NoisyGd;
  std::shared_ptr<const models::EmpiricalLoss> lossD, lossDPrime;
  models::Matrix sigma, sigmaPrime;        // noise covariances of D and D' (equal for noisy GD)
  models::ConstraintSet constraint;        // Pi_C (noisy GD; none for Langevin)
  int ballAngularBins = 0;                 // ball: boundary bins per full turn, as solver::NoisyGdSettings (0: auto)
  models::Vector initialMean;
  models::Matrix initialCovariance;        // SPD
  double step = 0.1;                       // eta (noisy GD) or the Euler–Maruyama dt (Langevin)
  long steps = 1;                          // number of updates
  std::vector<long> outputSteps;           // updates after which to record (0 = the initial draw), increasing
  models::BatchScheme batches;             // noisy GD's batches (MATH.md §8); Full for Langevin
  models::CyclicBatches cyclicBatches;     // batches.sampling == Cyclic: the batches of D and D'
};

struct SamplerSettings {
  long particles = 100000;  // per process (D and D' each)
  std::uint64_t seed = 1;
  int threads = 1;
  MPI_Comm comm = MPI_COMM_SELF;  // ranks split the particles
};

/// Counts of one process at one output step.
struct ParticleHistogram {
  std::vector<std::int64_t> cells;     // per mesh cell, natural order (x fastest)
  std::vector<std::int64_t> boundary;  // per boundary bin of C (solver::BoundaryBins order)
  std::int64_t outside = 0;            // off the mesh and not on the boundary of C
  std::int64_t total = 0;
};

/// Sample mean and covariance (divisor N - 1) and their standard errors: the mean's from the covariance,
/// sqrt(C_aa / N); the covariance's by batch means over the particle blocks, sd(block estimates)/sqrt(blocks)
/// (no Gaussian assumption).
struct SampleMoments {
  std::int64_t count = 0;
  models::Vector mean, meanStandardError;
  models::Matrix covariance, covarianceStandardError;
};

struct SampleSnapshot {
  long step = 0;
  double time = 0.0;  // eta k or dt k
  ParticleHistogram histogram[2];  // 0: D (p), 1: D' (q)
  SampleMoments moments[2];
};

class MonteCarloSampler {
public:
  MonteCarloSampler(SamplerProblem problem, const meshes::BoxMesh& mesh, SamplerSettings settings);
  /// Collective over settings.comm; every rank returns the same, complete snapshots.
  std::vector<SampleSnapshot> run() const;
  /// Particles per block (whole lane groups): depends on N only, so the reduction order is the same for any
  /// threads/ranks.
  static long blockSize(long particles);
  /// Whether run() takes the copy of its lane loops compiled for the processor's widest vectors (AVX-512 or AVX2;
  /// the default) or the baseline copy. Both give the same bits (tests/validation/test_sampler.cpp).
  static void useVectorKernels(bool enabled);
  /// The copy run() takes: "avx512", "avx2" or "baseline".
  static const char* vectorKernels();
  const SamplerProblem& problem() const { return problem_; }
  /// The boundary bins of C on the mesh (empty without a constraint): the density solver's.
  const solver::BoundaryBins& boundaryBins() const { return bins_; }

private:
  SamplerProblem problem_;
  meshes::BoxMesh mesh_;
  SamplerSettings settings_;
  solver::BoundaryBins bins_;
};

}  // namespace fpdp::validation
