#pragma once
// The drift of minibatch noisy SGD as the density solver takes it (MATH.md §8, docs/noisy-gd.md §9):
//
//   theta_{k+1} = Pi_C( T_{B_k}(theta_k) + sqrt(2 eta) Sigma^{1/2} Z_k ),   T_B(theta) = theta - eta g_B(theta),
//   g_B = (1/b) sum_{i in B} g_i,
//
// g_i the per-example gradient field of record i (clipped when the run clips), b the expected batch size.
//   Full:    one batch B = D, b = n: the full-batch map of MATH.md §2.1.
//   Cyclic:  a fixed list of batch maps visited in turn, step k (0-based) using batch k mod m: the density recursion
//            of §2.1 with T_{B_k}, exact.
//   Poisson: each record in B_k independently with probability gamma: the push-forward part of the step is the
//            mixture sum_B w_B T_B # p_k, w_B = gamma^|B| (1 - gamma)^(n - |B|), and the noise follows once (the
//            convolution is linear). Identical records have identical maps, so they are merged into groups with
//            multiplicities (PoissonBatchMixture).
// The caller (the application) builds the fields from its losses and data; the solver knows nothing of records.
#include <vector>

#include "models/MinibatchSchedule.hpp"
#include "solver/noisygd/PushForward.hpp"

namespace fpdp::solver {

// One vocabulary for the batch schemes of the models, the sampler and the solver.
using models::BatchSampling;

/// The per-example gradient field g_r shared by `count` identical records.
struct RecordGroup {
  GradientField gradient;
  long count = 1;
};

/// The drift of one dataset (D or D').
struct DatasetDrift {
  /// Full: {g_D}. Cyclic: g_{B_0}, ..., g_{B_{m-1}}, each the batch's summed per-example gradients divided by b.
  std::vector<GradientField> batches;
  /// Poisson: the records as groups of identical per-example gradient fields.
  std::vector<RecordGroup> records;
  /// Poisson on a displacement lattice: the group holding the differing record (taken exactly), or -1.
  long differingGroup = -1;
};

/// Poisson sampling beyond the exact enumeration (1-D, 2-D): the displacement lattice of PoissonLatticeMixture.
struct PoissonLatticeChoice {
  bool use = false;
  double spacing = 0, pruneMass = 0;
  double gradientLipschitz = 0;  // of every clipped per-example gradient (finite)
  bool monotoneGradients = false;  // every clipped per-example gradient nondecreasing (1-D convex losses)
  double workBudget = 0;  // lattice points written while the laws are built, per dataset (0: none)
  double pointBudget = 0;  // lattice points held by the laws, per dataset (0: none)
};

struct MinibatchDrift {
  BatchSampling sampling = BatchSampling::Full;
  DatasetDrift D, DPrime;
  double expectedSize = 1.0;  // b (Poisson: gamma n; the cyclic and full fields carry their 1/b already)
  double rate = 1.0;          // gamma (Poisson)
  PoissonLatticeChoice lattice;  // Poisson: exact enumeration unless lattice.use

  /// The full-batch drift: the gradients of L_D and L_D'.
  static MinibatchDrift fullBatch(GradientField gradientD, GradientField gradientDPrime) {
    MinibatchDrift d;
    d.D.batches = {std::move(gradientD)};
    d.DPrime.batches = {std::move(gradientDPrime)};
    return d;
  }
};

}  // namespace fpdp::solver
