#pragma once
// The models and the mesh of a Case, built once for every command (run, sample, noise-study), so that the density
// solver and the Monte Carlo sampler are given the same loss, data, neighbour and geometry.
#include <memory>
#include <optional>

#include "app/case/Case.hpp"
#include "app/case/LossBuilding.hpp"
#include "meshes/BoxMesh.hpp"
#include "models/Loss.hpp"
#include "models/LossConstants.hpp"
#include "models/MinibatchSchedule.hpp"

namespace fpdp::app {

meshes::BoxMesh buildBox(const MeshSpec& m);

/// L_D and L_D' of the case: D, D' = the neighbour of D, with the per-example clipping of noisy GD.
struct EmpiricalLosses {
  std::shared_ptr<const models::EmpiricalLoss> lossD, lossDPrime;
};
EmpiricalLosses buildEmpiricalLosses(const Case& c);

/// D' of the case as a models::Neighbour of D.
models::Neighbour caseNeighbour(const Case& c);

/// The case's [batch] (MATH.md §8) as models/MinibatchSchedule.hpp describes it, b = batch.expectedSize(|D|).
models::BatchScheme batchScheme(const Case& c);

/// lambda, beta and S_g of the case on `box` (MATH.md §1): computed for a replace-one pair; for add/remove the same
/// function on D alone gives lambda and beta, and S_g is not reported; lambda and beta given in the case file win.
models::LossConstants caseLossConstants(const Case& c, const EmpiricalLosses& losses, const meshes::BoxMesh& box);

/// S_g of a replaced record where it is known on all of R^d: the case's loss.sensitivity, or a closed form or clipping
/// (models::sensitivityBound); nullopt otherwise (add/remove neighbours, or only a grid estimate, which bounds nothing
/// beyond the grid).
std::optional<double> provenSensitivity(const Case& c, const EmpiricalLosses& losses);

}  // namespace fpdp::app
