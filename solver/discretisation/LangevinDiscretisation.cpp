#include "solver/discretisation/LangevinDiscretisation.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

namespace fpdp::solver {

namespace {
models::Vector toVector(const Point& x, int dim) {
  models::Vector v(dim);
  for (int a = 0; a < dim; ++a) v[a] = x[a];
  return v;
}

std::vector<DriftDiffusionEquation> langevinEquations(const LangevinProblem& pr, int dim) {
  if (!pr.lossD || !pr.lossDPrime) throw std::invalid_argument("LangevinDiscretisation: both losses are required");
  auto eq = [&](std::shared_ptr<const models::EmpiricalLoss> L, const models::Matrix& Sigma) {
    DriftDiffusionEquation e;
    e.potential = [L, dim](const Point& x) { return L->value(toVector(x, dim)); };
    setDiffusionMatrix(e, Sigma);
    return e;
  };
  return {eq(pr.lossD, pr.diffusionMatrixP(dim)), eq(pr.lossDPrime, pr.diffusionMatrixQ(dim))};
}

// Sigma = D I: returns D; otherwise nothing.
std::optional<double> isotropicDiffusion(const models::Matrix& Sigma) {
  const double D = Sigma(0, 0);
  if ((Sigma - D * models::Matrix::Identity(Sigma.rows(), Sigma.cols())).cwiseAbs().maxCoeff() != 0.0)
    return std::nullopt;
  return D;
}

models::Matrix checkedSigma(const std::optional<models::Matrix>& m, double sigma, int dim, const char* what) {
  if (!m) return sigma * sigma * models::Matrix::Identity(dim, dim);
  if (m->rows() != dim || m->cols() != dim)
    throw std::invalid_argument(std::string("LangevinProblem: ") + what + " must be " + std::to_string(dim) + "x" +
                                std::to_string(dim));
  return *m;
}
}  // namespace

models::Matrix LangevinProblem::diffusionMatrixP(int dim) const { return checkedSigma(sigmaMatrix, sigma, dim, "Sigma"); }
models::Matrix LangevinProblem::diffusionMatrixQ(int dim) const {
  return checkedSigma(sigmaMatrixPrime, sigma, dim, "Sigma'");
}

bool requiresBoxStencil(const LangevinProblem& problem, int dim) {
  for (const auto& S : {problem.diffusionMatrixP(dim), problem.diffusionMatrixQ(dim)})
    for (int a = 0; a < dim; ++a)
      for (int b = 0; b < dim; ++b)
        if (a != b && S(a, b) != 0.0) return true;
  return false;
}

void setDiffusionMatrix(DriftDiffusionEquation& e, const models::Matrix& Sigma) {
  const int dim = static_cast<int>(Sigma.rows());
  if (dim < 1 || dim > 3 || Sigma.cols() != dim || !Sigma.allFinite())
    throw std::invalid_argument("setDiffusionMatrix: Sigma must be a finite square matrix of size 1 to 3");
  const double scale = Sigma.cwiseAbs().maxCoeff();
  if ((Sigma - Sigma.transpose()).cwiseAbs().maxCoeff() > 1e-12 * scale)
    throw std::invalid_argument("setDiffusionMatrix: Sigma is not symmetric");
  e.diffusion = {1.0, 1.0, 1.0};
  e.crossDiffusion = {0.0, 0.0, 0.0};
  for (int a = 0; a < dim; ++a) {
    e.diffusion[a] = Sigma(a, a);
    for (int b = a + 1; b < dim; ++b) e.setSigma(a, b, 0.5 * (Sigma(a, b) + Sigma(b, a)));
  }
  if (dim < 3) {
    // Unused axes keep the isotropic value so that nothing divides by an arbitrary number.
    for (int a = dim; a < 3; ++a) e.diffusion[a] = Sigma(0, 0);
  }
}

LangevinDiscretisation::LangevinDiscretisation(const meshes::DistributedBoxMesh& mesh, LangevinProblem problem,
                                               FaceFluxScheme scheme, SpatialAccuracy accuracy)
    : mesh_(mesh), problem_(std::move(problem)),
      op_(mesh, langevinEquations(problem_, mesh.dim()), scheme, accuracy) {
  if (mesh.fields() != 2) throw std::invalid_argument("LangevinDiscretisation: the mesh must carry 2 fields");
  if (problem_.initial.dim() != mesh.dim())
    throw std::invalid_argument("LangevinDiscretisation: initial density and mesh dimensions differ");
}

double LangevinDiscretisation::truncatedInitialMass() const {
  const auto& box = mesh_.box();
  return 1.0 - problem_.initial.boxProbability(box.lower(), box.upper());
}

double LangevinDiscretisation::initialResolution() const {
  const auto& box = mesh_.box();
  const models::Matrix precision = problem_.initial.covariance().inverse();
  double ratio = std::numeric_limits<double>::infinity();
  for (int a = 0; a < mesh_.dim(); ++a) {
    const auto& axis = box.axis(a);
    const double m = problem_.initial.mean()(a);
    int cell = 0;
    while (cell + 1 < axis.cells() && axis.face(cell + 1) <= m) ++cell;
    ratio = std::min(ratio, 1.0 / std::sqrt(precision(a, a)) / axis.width(cell));
  }
  return ratio;
}

std::string LangevinDiscretisation::underResolvedStartWarning() const {
  const double r = initialResolution();
  if (!(r < kResolvedStartRatio)) return "";
  char b[400];
  std::snprintf(b, sizeof b,
                "the initial density is under-resolved: its standard deviation is %.2g cell widths (< %.1f), so the "
                "first steps under-report R_alpha (by about 35 %% at 0.38 and 1 %% at 1 after one step, decaying over "
                "the steps); refine the mesh near the start or widen initial.covariance",
                r, kResolvedStartRatio);
  return b;
}

void LangevinDiscretisation::setInitialState(Vec u, meshes::FieldRepresentation representation) const {
  const auto& box = mesh_.box();
  const auto& vol = mesh_.ownedVolumes();
  PetscScalar* a;
  FPDP_PETSC(VecGetArray(u, &a));
  double localMass = 0.0;
  const models::TensorCellAverages averages = ownedCellAverages(problem_.initial, mesh_);
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const double avg = representation == meshes::FieldRepresentation::PointValues
                           ? problem_.initial.density(toVector(box.centre(i, j, k), mesh_.dim()))
                           : averages(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
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
    char b[400];
    if (representation == meshes::FieldRepresentation::PointValues)
      std::snprintf(b, sizeof b,
                    "the initial Gaussian's density is 0 in double precision at every cell centre (its standard "
                    "deviation is %.2g cell widths; this route holds point values at the centres): widen "
                    "initial.covariance or refine mesh.cells",
                    initialResolution());
    else
      std::snprintf(b, sizeof b,
                    "the initial Gaussian has no mass inside the mesh box (to double precision): move initial.mean "
                    "into the box or widen mesh.lower/mesh.upper");
    throw UnrepresentableStart(b);
  }
  for (PetscInt l = 0; l < 2 * mesh_.owned().size(); ++l) a[l] /= mass;
  FPDP_PETSC(VecRestoreArray(u, &a));
}

double LangevinDiscretisation::measuredGradientGap() const {
  const auto& box = mesh_.box();
  double local = 0.0;
  // The allocation-free gradients (EmpiricalLoss::gradientInto): allocating ones per cell made this 10 ms at 256^2.
  const int d = mesh_.dim();
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt) {
    const auto x = box.centre(i, j, k);
    double g[3], gp[3];
    problem_.lossD->gradientInto(x.data(), g);
    problem_.lossDPrime->gradientInto(x.data(), gp);
    double sum = 0.0;
    for (int a = 0; a < d; ++a) sum += (g[a] - gp[a]) * (g[a] - gp[a]);
    local = std::max(local, std::sqrt(sum));
  });
  double global = 0.0;
  FPDP_PETSC(MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_MAX, mesh_.comm()));
  return global;
}

models::TensorCellAverages ownedCellAverages(const models::Gaussian& g, const meshes::DistributedBoxMesh& mesh,
                                             double probabilityFloor) {
  std::array<std::vector<double>, 3> faces;
  std::array<int, 3> start{0, 0, 0}, count{1, 1, 1};
  for (int d = 0; d < mesh.dim(); ++d) {
    const auto a = static_cast<std::size_t>(d);
    faces[a] = mesh.box().axis(d).faces();
    start[a] = static_cast<int>(mesh.owned().start[a]);
    count[a] = static_cast<int>(mesh.owned().count[a]);
  }
  return models::TensorCellAverages(g, std::move(faces), start, count, probabilityFloor);
}

namespace {
/// D and D' of Sigma = D I and Sigma' = D' I, the diffusions of the Gibbs densities exp(-L/D); throws
/// std::logic_error (naming `what`) for a Sigma or Sigma' that is not a multiple of the identity.
std::array<double, 2> gibbsDiffusions(const LangevinProblem& problem, int dim, const char* what) {
  const std::optional<double> p = isotropicDiffusion(problem.diffusionMatrixP(dim));
  const std::optional<double> q = isotropicDiffusion(problem.diffusionMatrixQ(dim));
  if (!p || !q)
    throw std::logic_error(std::string("Sigma is not a multiple of the identity, so ") + what +
                           " (the Gibbs density exp(-L/D) is not the steady state)");
  return {*p, *q};
}
}  // namespace

void LangevinDiscretisation::setGibbsState(Vec u) const {
  const auto diffusion = gibbsDiffusions(problem_, mesh_.dim(), "LangevinDiscretisation::setGibbsState has no state");
  const auto& vol = mesh_.ownedVolumes();
  PetscScalar* a;
  FPDP_PETSC(VecGetArray(u, &a));
  for (int f = 0; f < 2; ++f) {
    const double D = diffusion[static_cast<std::size_t>(f)];
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

void LangevinDiscretisation::setSymmetrisingWeights(Vec w) const {
  const auto diffusion =
      gibbsDiffusions(problem_, mesh_.dim(), "the Langevin operator has no detailed balance with a Gibbs density");
  const auto& vol = mesh_.ownedVolumes();
  PetscScalar* a;
  FPDP_PETSC(VecGetArray(w, &a));
  for (int f = 0; f < 2; ++f) {
    const double D = diffusion[static_cast<std::size_t>(f)];
    const auto phi = op_.potentialAtOwnedCells(f);
    // Shift by the mid-range of phi / D so that neither w nor 1 / w leaves the double range before it must.
    double lmin = INFINITY, lmax = -INFINITY;
    for (double v : phi) lmin = std::min(lmin, v), lmax = std::max(lmax, v);
    double gmin, gmax;
    FPDP_PETSC(MPI_Allreduce(&lmin, &gmin, 1, MPI_DOUBLE, MPI_MIN, mesh_.comm()));
    FPDP_PETSC(MPI_Allreduce(&lmax, &gmax, 1, MPI_DOUBLE, MPI_MAX, mesh_.comm()));
    const double mid = 0.5 * (gmin + gmax);
    for (std::size_t l = 0; l < phi.size(); ++l) a[2 * l + f] = std::exp(-(phi[l] - mid) / (2.0 * D)) / std::sqrt(vol[l]);
  }
  FPDP_PETSC(VecRestoreArray(w, &a));
}

}  // namespace fpdp::solver
