#include "validation/CellErrors.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>
#include <vector>

#include "solver/discretisation/LangevinDiscretisation.hpp"

namespace fpdp::validation {

namespace {

// Sums of absolute errors need no relative accuracy where a cell's probability is below 1e-20: there a correlated
// law's averages are within 1e-20/2 of theirs (the L1 errors within 5e-21 per cell), and its far cells, whose quadrature
// must resolve a steep log-density, cost nothing (a coarse 3-D mesh's cells took milliseconds each).
constexpr double kProbabilityFloor = 1e-20;

/// The one loop: the errors of u against exact values given per law as sums over weighted Gaussian components.
CellErrors cellErrorsOf(const meshes::DistributedBoxMesh& mesh, Vec u,
                        const std::vector<std::pair<double, models::Gaussian>> (&laws)[2],
                        meshes::FieldRepresentation representation) {
  const bool points = representation == meshes::FieldRepresentation::PointValues;
  const auto& vol = mesh.ownedVolumes();
  std::vector<models::TensorCellAverages> averages[2];
  // 1-D cell averages of many components (a Poisson mixture has thousands): each component's sum is taken only over
  // the cells within 40 of its standard deviations, beyond which its cell probability is exactly 0 (both tails
  // underflow), so every cell's sum is the same number as over every component, in the same order.
  std::vector<double> lineExact[2];
  const bool line = !points && mesh.dim() == 1;
  if (line) {
    const auto& faces = mesh.box().axis(0).faces();
    const auto first = static_cast<std::ptrdiff_t>(mesh.owned().start[0]), count = static_cast<std::ptrdiff_t>(mesh.owned().count[0]);
    const auto ownedFaces = faces.begin() + first;
    for (int f = 0; f < 2; ++f) {
      lineExact[f].assign(static_cast<std::size_t>(count), 0.0);
      for (const auto& [w, g] : laws[f]) {
        const double mean = g.mean()[0], reach = 40.0 * std::sqrt(g.covariance()(0, 0));
        const std::ptrdiff_t lo = std::max<std::ptrdiff_t>(
            0, std::upper_bound(ownedFaces, ownedFaces + count + 1, mean - reach) - ownedFaces - 1);
        const std::ptrdiff_t hi = std::min<std::ptrdiff_t>(
            count, std::lower_bound(ownedFaces, ownedFaces + count + 1, mean + reach) - ownedFaces);
        for (std::ptrdiff_t i = lo; i < hi; ++i) {
          const double a = ownedFaces[i], b = ownedFaces[i + 1];
          lineExact[f][static_cast<std::size_t>(i)] += w * (g.axisProbability(0, a, b) / (b - a));
        }
      }
    }
  } else if (!points) {
    for (int f = 0; f < 2; ++f)
      for (const auto& [w, g] : laws[f]) averages[f].push_back(solver::ownedCellAverages(g, mesh, kProbabilityFloor));
  }
  const PetscScalar* a;
  FPDP_PETSC(VecGetArrayRead(u, &a));
  double l1[2] = {0, 0}, rel[2] = {0, 0};
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    for (int f = 0; f < 2; ++f) {
      double exact = 0.0;
      if (points) {
        models::Vector x(mesh.dim());
        const auto centre = mesh.box().centre(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
        for (int a = 0; a < mesh.dim(); ++a) x[a] = centre[static_cast<std::size_t>(a)];
        for (const auto& [w, g] : laws[f]) exact += w * g.density(x);
      } else if (line) {
        exact = lineExact[f][static_cast<std::size_t>(i - mesh.owned().start[0])];
      } else {
        for (std::size_t c = 0; c < laws[f].size(); ++c)
          exact += laws[f][c].first * averages[f][c](static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
      }
      const double err = std::fabs(a[2 * l + f] - exact);
      l1[f] += vol[l] * err;
      if (exact * vol[l] > kProbabilityFloor) rel[f] = std::max(rel[f], err / exact);
    }
  });
  FPDP_PETSC(VecRestoreArrayRead(u, &a));
  double gl1[2], grel[2];
  FPDP_PETSC(MPI_Allreduce(l1, gl1, 2, MPI_DOUBLE, MPI_SUM, mesh.comm()));
  FPDP_PETSC(MPI_Allreduce(rel, grel, 2, MPI_DOUBLE, MPI_MAX, mesh.comm()));
  return {gl1[0], gl1[1], grel[0], grel[1]};
}

}  // namespace

CellErrors cellErrors(const meshes::DistributedBoxMesh& mesh, Vec u, const models::Gaussian& lawP,
                      const models::Gaussian& lawQ, meshes::FieldRepresentation representation) {
  // One component of weight 1: 0 + 1 x value is the value itself, so the errors are those of the Gaussians' bit for bit.
  const std::vector<std::pair<double, models::Gaussian>> laws[2] = {{{1.0, lawP}}, {{1.0, lawQ}}};
  return cellErrorsOf(mesh, u, laws, representation);
}

CellErrors cellErrors(const meshes::DistributedBoxMesh& mesh, Vec u, const models::GaussianMixture& lawP,
                      const models::GaussianMixture& lawQ, meshes::FieldRepresentation representation) {
  std::vector<std::pair<double, models::Gaussian>> laws[2];
  const models::GaussianMixture* from[2] = {&lawP, &lawQ};
  for (int f = 0; f < 2; ++f)
    for (std::size_t j = 0; j < from[f]->size(); ++j) laws[f].emplace_back(from[f]->weights[j], from[f]->component(j));
  return cellErrorsOf(mesh, u, laws, representation);
}

}  // namespace fpdp::validation
