#pragma once
// Errors of a computed (p, q) state against exact Gaussian laws, measured on exact cell averages (or point values): the one loop both
// exact references (GaussianReference for Langevin, NoisyGdReference for noisy GD) use.
#include <petscvec.h>

#include "meshes/DistributedBoxMesh.hpp"
#include "meshes/FieldRepresentation.hpp"
#include "models/Gaussian.hpp"
#include "models/MinibatchReferences.hpp"

namespace fpdp::validation {

struct CellErrors {
  double l1P = 0, l1Q = 0;          // sum |c| |u_c - exact cell average|
  double maxRelP = 0, maxRelQ = 0;  // max |u_c - exact| / exact over cells of probability above 1e-20
};

/// u: the interlaced (p, q) state. Collective. A point-value state (chapman_kolmogorov) is measured against the
/// laws' densities at the cell centres instead of their cell averages.
CellErrors cellErrors(const meshes::DistributedBoxMesh& mesh, Vec u, const models::Gaussian& lawP,
                      const models::Gaussian& lawQ,
                      meshes::FieldRepresentation representation = meshes::FieldRepresentation::CellAverages);

/// The same against mixtures of Gaussians with one covariance (models::GaussianMixture: the lattice mixtures of Poisson
/// minibatches, MATH.md §8), the exact cell averages being the weighted sums of the components'.
CellErrors cellErrors(const meshes::DistributedBoxMesh& mesh, Vec u, const models::GaussianMixture& lawP,
                      const models::GaussianMixture& lawQ,
                      meshes::FieldRepresentation representation = meshes::FieldRepresentation::CellAverages);

}  // namespace fpdp::validation
