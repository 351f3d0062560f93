#pragma once
// The models and the mesh of a Case, built once for every command (run, sample, noise-study), so that the density
// solver and the Monte Carlo sampler are given the same loss, data, neighbour and geometry.
#include <memory>

#include "app/Case.hpp"
#include "meshes/BoxMesh.hpp"
#include "models/Loss.hpp"

namespace fpdp::app {

std::shared_ptr<const models::Loss> buildLoss(const LossSpec& spec, int dim);
meshes::BoxMesh buildBox(const MeshSpec& m);

/// L_D and L_D' of the case: D, D' = the neighbour of D, with the per-example clipping of noisy GD.
struct EmpiricalLosses {
  std::shared_ptr<const models::EmpiricalLoss> lossD, lossDPrime;
};
EmpiricalLosses buildEmpiricalLosses(const Case& c);

}  // namespace fpdp::app
