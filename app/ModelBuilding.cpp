#include "app/ModelBuilding.hpp"

#include <stdexcept>


namespace fpdp::app {

meshes::BoxMesh buildBox(const MeshSpec& m) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < m.dim; ++a) axes.push_back(meshes::Axis::graded(m.lower[a], m.upper[a], m.cells[a], m.grading[a]));
  return meshes::BoxMesh(std::move(axes));
}

EmpiricalLosses buildEmpiricalLosses(const Case& c) {
  auto loss = buildLoss(c.loss, c.mesh.dim);
  const models::Dataset& D = c.data.records;
  const models::Neighbour neighbour = caseNeighbour(c);
  // Clipping (noisy GD only) changes the gradient the algorithm follows, not the loss value.
  const std::optional<double> clip = c.dynamics == "noisy_gd" ? c.noisyGd.clipNorm : std::nullopt;
  return {std::make_shared<const models::EmpiricalLoss>(loss, D, clip),
          std::make_shared<const models::EmpiricalLoss>(loss, neighbour.apply(D), clip)};
}

models::Neighbour caseNeighbour(const Case& c) {
  return models::Neighbour{c.neighbour.index, c.neighbour.replacement, c.neighbour.kind};
}

models::BatchScheme batchScheme(const Case& c) {
  models::BatchScheme scheme;
  scheme.sampling = c.batch.sampling == "cyclic"    ? models::BatchSampling::Cyclic
                    : c.batch.sampling == "poisson" ? models::BatchSampling::Poisson
                                                    : models::BatchSampling::Full;
  scheme.size = c.batch.size;
  scheme.rate = c.batch.rate;
  scheme.divisor = c.batch.expectedSize(c.data.records.size());
  return scheme;
}

models::LossConstants caseLossConstants(const Case& c, const EmpiricalLosses& losses, const meshes::BoxMesh& box) {
  const models::Dataset& D = c.data.records;
  const bool replacement = c.neighbour.kind == models::NeighbourKind::Replace;
  models::LossConstants constants =
      replacement ? models::computeConstants(*losses.lossD, *losses.lossDPrime, D[c.neighbour.index],
                                             c.neighbour.replacement, box.lower(), box.upper(), c.mesh.dim)
                  : models::computeConstants(*losses.lossD, *losses.lossD, D[0], D[0], box.lower(), box.upper(),
                                             c.mesh.dim);
  if (!replacement) {
    constants.sensitivity.reset();
    constants.sensitivitySource = "not computed for an added or removed record";
  }
  if (c.loss.strongConvexity) {
    constants.strongConvexity = c.loss.strongConvexity;
    constants.strongConvexitySource = "given in the case file";
  }
  if (c.loss.smoothness) {
    constants.smoothness = c.loss.smoothness;
    constants.smoothnessSource = "given in the case file";
  }
  return constants;
}

}  // namespace fpdp::app
