#include "solver/LangevinDiscretisation.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fpdp::solver {

namespace {
models::Vector toVector(const Point& x, int dim) {
  models::Vector v(dim);
  for (int a = 0; a < dim; ++a) v[a] = x[a];
  return v;
}

std::vector<DriftDiffusionEquation> langevinEquations(const LangevinProblem& pr, int dim) {
  if (!pr.lossD || !pr.lossDPrime) throw std::invalid_argument("LangevinDiscretisation: both losses are required");
  const double D = pr.sigma * pr.sigma;
  auto eq = [&](std::shared_ptr<const models::EmpiricalLoss> L) {
    DriftDiffusionEquation e;
    e.potential = [L, dim](const Point& x) { return L->value(toVector(x, dim)); };
    e.diffusion = {D, D, D};
    return e;
  };
  return {eq(pr.lossD), eq(pr.lossDPrime)};
}
}  // namespace

LangevinDiscretisation::LangevinDiscretisation(const meshes::DistributedBoxMesh& mesh, LangevinProblem problem,
                                               FaceFluxScheme scheme)
    : mesh_(mesh), problem_(std::move(problem)), op_(mesh, langevinEquations(problem_, mesh.dim()), scheme) {
  if (mesh.fields() != 2) throw std::invalid_argument("LangevinDiscretisation: the mesh must carry 2 fields");
  if (problem_.initial.dim() != mesh.dim())
    throw std::invalid_argument("LangevinDiscretisation: initial density and mesh dimensions differ");
}

double LangevinDiscretisation::truncatedInitialMass() const {
  const auto& box = mesh_.box();
  return 1.0 - problem_.initial.boxProbability(box.lower(), box.upper());
}

void LangevinDiscretisation::setInitialState(Vec u) const {
  const auto& box = mesh_.box();
  const auto& vol = mesh_.ownedVolumes();
  PetscScalar* a;
  FPDP_PETSC(VecGetArray(u, &a));
  double localMass = 0.0;
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    std::array<double, 3> lo{0, 0, 0}, hi{0, 0, 0};
    const std::array<PetscInt, 3> c{i, j, k};
    for (int d = 0; d < mesh_.dim(); ++d) {
      lo[d] = box.axis(d).face(static_cast<int>(c[d]));
      hi[d] = box.axis(d).face(static_cast<int>(c[d]) + 1);
    }
    const double avg = problem_.initial.cellAverage(lo, hi);
    a[2 * l] = avg;
    a[2 * l + 1] = avg;
    localMass += vol[l] * avg;
  });
  // Normalise by the discrete mass itself (not the analytic box probability), so the state has unit mass to
  // round-off; the two differ by the box's cut-off tail, reported by truncatedInitialMass().
  double mass = 0.0;
  FPDP_PETSC(MPI_Allreduce(&localMass, &mass, 1, MPI_DOUBLE, MPI_SUM, mesh_.comm()));
  if (!(mass > 0)) {
    FPDP_PETSC(VecRestoreArray(u, &a));
    throw std::runtime_error("the initial Gaussian has no mass inside the mesh box");
  }
  for (PetscInt l = 0; l < 2 * mesh_.owned().size(); ++l) a[l] /= mass;
  FPDP_PETSC(VecRestoreArray(u, &a));
}

double LangevinDiscretisation::measuredGradientGap() const {
  const auto& box = mesh_.box();
  double local = 0.0;
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt) {
    const auto x = toVector(box.centre(i, j, k), mesh_.dim());
    local = std::max(local, (problem_.lossD->gradient(x) - problem_.lossDPrime->gradient(x)).norm());
  });
  double global = 0.0;
  FPDP_PETSC(MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, mesh_.comm()));
  return global;
}

void LangevinDiscretisation::setGibbsState(Vec u) const {
  const double D = problem_.sigma * problem_.sigma;
  const auto& vol = mesh_.ownedVolumes();
  PetscScalar* a;
  FPDP_PETSC(VecGetArray(u, &a));
  for (int f = 0; f < 2; ++f) {
    const auto phi = op_.potentialAtOwnedCells(f);
    // Shift by the global minimum so exp never overflows, then normalise.
    double localMin = phi.empty() ? INFINITY : *std::min_element(phi.begin(), phi.end()), gmin;
    FPDP_PETSC(MPI_Allreduce(&localMin, &gmin, 1, MPI_DOUBLE, MPI_MIN, mesh_.comm()));
    double localMass = 0.0, mass;
    for (std::size_t l = 0; l < phi.size(); ++l) {
      a[2 * l + f] = std::exp(-(phi[l] - gmin) / D);
      localMass += vol[l] * a[2 * l + f];
    }
    FPDP_PETSC(MPI_Allreduce(&localMass, &mass, 1, MPI_DOUBLE, MPI_SUM, mesh_.comm()));
    for (std::size_t l = 0; l < phi.size(); ++l) a[2 * l + f] /= mass;
  }
  FPDP_PETSC(VecRestoreArray(u, &a));
}

}  // namespace fpdp::solver
