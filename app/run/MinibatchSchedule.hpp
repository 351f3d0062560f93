#pragma once
// A case's minibatch noisy SGD (MATH.md §8, docs/noisy-gd.md §9) turned into the solver's batch maps, and the checks
// of what the density solver can evolve.
//
// The step's gradient is g_B = (1/b) sum_{i in B} grad l(theta; x_i) (each term clipped when noisy_gd.clip_norm is
// given), b = batch.size (cyclic) or batch.rate n (Poisson), n = |D|. fpdp's losses carry their regulariser inside
// the per-example loss (logistic, huber: (mu/2)|theta|^2 in l), so it is scaled like every other term: |B|/b of it per
// step (once per step in expectation under Poisson sampling; exactly once for full batches).
//   Cyclic: D in data order cut into m = ceil(n / size) consecutive batches (the last may be smaller, still divided
//   by b = size). D' is cut by D's partition: a replaced record stays in its batch, a removed one leaves its batch
//   (which may become empty: no gradient that step), an added record joins the last batch. So the two runs visit the
//   same m batches in the same order, and only the steps whose batch holds the differing record differ.
//   Poisson: identical records (equal features and label) are merged into groups with multiplicities; b is the same
//   for D and D' (the algorithm fixes it from |D| before it runs).
#include <string>

#include "app/case/Case.hpp"
#include "app/run/ModelBuilding.hpp"
#include "solver/noisygd/MinibatchDrift.hpp"

namespace fpdp::app {

/// The solver's drift for the case (full batches: the gradients of L_D and L_D').
solver::MinibatchDrift minibatchDrift(const Case& c, const EmpiricalLosses& losses, int dim);

/// Throws InputError, naming the key, for what the density solver does not evolve with minibatches: the tracing
/// diffusions, chapman_kolmogorov with Poisson sampling or with more cyclic kernel tables than one table may hold,
/// a Poisson mixture to enumerate beyond kPoissonWorkBudget (its cost stated), and a displacement lattice the case
/// cannot take (3-D, a constraint, a loss without a Lipschitz bound of its per-example gradients). Nothing for
/// full batches.
void requireSupportedMinibatches(const Case& c, const EmpiricalLosses& losses, std::size_t cells);
/// Poisson sampling's budget in solver::PoissonBatchMixture::costEstimate units (one cell of a 1-D remap, ~40 ns)
/// per dataset and step: 2^30, about 40 s per step and dataset (docs/noisy-gd.md §9): 2^16 batch maps on 2^14 cells
/// in 1-D, 2^12 on 51^2 cells in 2-D.
inline constexpr double kPoissonWorkBudget = 1073741824.0;
/// The displacement lattice's set-up per dataset (docs/noisy-gd.md §9.2): lattice points written while its laws are
/// built (2^34, about 10 s here) and held by them (2^27, 1 GiB). The shipped 500-record case at
/// batch.mixture_tolerance = 1e-6 writes 9.4e9 and holds about 2e7.
inline constexpr double kLatticeWorkBudget = 17179869184.0;
inline constexpr double kLatticePointBudget = 134217728.0;
/// In 2-D a lattice point written costs about three times a 1-D one (ragged rows, four bilinear weights; measured
/// 3 ns against 0.6 ns): 2^32 points, about 13 s here.
inline constexpr double kLatticePlaneWorkBudget = 4294967296.0;
/// The set-up's budget of lattice points written for a mesh of `dim` dimensions.
inline double latticeWorkBudget(int dim) { return dim == 1 ? kLatticeWorkBudget : kLatticePlaneWorkBudget; }

/// Whether the case's Poisson mixture goes on the displacement lattice (solver::PoissonLatticeMixture,
/// docs/noisy-gd.md §9.2): batch.mixture = "lattice", or "auto" where the exact enumeration exceeds kPoissonWorkBudget
/// in 1-D and 2-D. False for other samplings.
bool usesPoissonLattice(const Case& c, const EmpiricalLosses& losses);

/// The summary's lines on minibatches (not for full batches): the mode, b, the normalisation, m or the batch maps.
std::string describeMinibatches(const Case& c, const EmpiricalLosses& losses);

}  // namespace fpdp::app
