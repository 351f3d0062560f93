#include "app/run/ModelBuilding.hpp"

#include <mutex>
#include <optional>
#include <stdexcept>


namespace fpdp::app {

meshes::BoxMesh buildBox(const MeshSpec& m) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < m.dim; ++a) axes.push_back(meshes::Axis::graded(m.lower[a], m.upper[a], m.cells[a], m.grading[a]));
  return meshes::BoxMesh(std::move(axes));
}

namespace {
/// D' for (D, neighbour), made once: the run's plan and its companions' plans (which live at the same time) share it
/// instead of holding a copy each (10^7 records are 0.3 GB). The entry holds D itself, so the address of D's records
/// cannot be taken by another dataset while it lives.
models::Dataset neighbourDataset(const models::Dataset& D, const models::Neighbour& n) {
  struct Entry {
    models::Dataset D, Dprime;
    models::Neighbour neighbour;
  };
  static std::mutex mutex;
  static std::optional<Entry> last;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto same = [&](const models::Neighbour& m) {
    return m.kind == n.kind && m.index == n.index && m.replacement.y == n.replacement.y &&
           m.replacement.x.size() == n.replacement.x.size() && m.replacement.x == n.replacement.x;
  };
  if (last && D.size() > 0 && &last->D.records() == &D.records() && same(last->neighbour)) return last->Dprime;
  models::Dataset Dprime = n.apply(D);
  last = Entry{D, Dprime, n};
  return Dprime;
}
}  // namespace

EmpiricalLosses buildEmpiricalLosses(const Case& c) {
  auto loss = buildLoss(c.loss, c.mesh.dim);
  const models::Dataset& D = c.data.records;
  const models::Neighbour neighbour = caseNeighbour(c);
  // Clipping (noisy GD only) changes the gradient the algorithm follows, not the loss value.
  const std::optional<double> clip = c.dynamics == "noisy_gd" ? c.noisyGd.clipNorm : std::nullopt;
  return {std::make_shared<const models::EmpiricalLoss>(loss, D, clip),
          std::make_shared<const models::EmpiricalLoss>(loss, neighbourDataset(D, neighbour), clip)};
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

std::optional<double> provenSensitivity(const Case& c, const EmpiricalLosses& losses) {
  if (c.loss.sensitivity) return c.loss.sensitivity;
  if (c.neighbour.kind != models::NeighbourKind::Replace) return std::nullopt;
  const auto gap = models::sensitivityBound(losses.lossD->loss(), c.data.records[c.neighbour.index],
                                            c.neighbour.replacement, losses.lossD->clipNorm());
  return gap ? std::optional<double>(gap->value) : std::nullopt;
}

}  // namespace fpdp::app
