#pragma once
// The exact references of minibatch noisy SGD (MATH.md §8, models/MinibatchReferences.hpp) as the run's ExactOracle:
// exact.csv's rows for the cases that have one, so that `fpdp validate` holds the minibatch solver to them.
//   cyclic batches, unclipped quadratic loss, no constraint (any d): Gaussian laws, through `laws` as for full batches;
//   Poisson batches, a loss with constant per-example gradients (the linear loss), no constraint, d = 1, at most
//   models::PoissonShiftReference::kMaxLatticePoints lattice points at the last step: lattice mixtures, with KL,
//   R_alpha, TV and eps(delta) by models::MixturePair1d (quadrature, relative accuracy ~1e-11) and its own tv and
//   epsilon; d = 2: the mixtures' exact cell averages only (exact.csv's l1 columns; the divergences NaN).
#include <optional>

#include "app/case/Case.hpp"
#include "app/run/ModelBuilding.hpp"
#include "app/run/RunPlan.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "meshes/FieldRepresentation.hpp"
#include "models/Gaussian.hpp"

namespace fpdp::app {

/// The oracle of a minibatch case (c.batch.sampling != "full", noisy GD), or nullopt where there is no closed form.
/// The oracle refers to `mesh`, which must outlive it.
std::optional<ExactOracle> minibatchOracle(const Case& c, const EmpiricalLosses& losses,
                                           const models::Gaussian& initial, const meshes::DistributedBoxMesh& mesh,
                                           meshes::FieldRepresentation representation);

}  // namespace fpdp::app
