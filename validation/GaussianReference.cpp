#include "validation/GaussianReference.hpp"

#include <cmath>
#include <stdexcept>

namespace fpdp::validation {

std::optional<GaussianReference> GaussianReference::forLangevin(const models::EmpiricalLoss& lossD,
                                                                const models::EmpiricalLoss& lossDPrime,
                                                                double sigma, const models::Gaussian& initial) {
  const int d = initial.dim();
  const models::Matrix Sigma = sigma * sigma * models::Matrix::Identity(d, d);
  return forLangevin(lossD, lossDPrime, Sigma, Sigma, initial);
}

std::optional<GaussianReference> GaussianReference::forLangevin(const models::EmpiricalLoss& lossD,
                                                                const models::EmpiricalLoss& lossDPrime,
                                                                const models::Matrix& Sigma,
                                                                const models::Matrix& SigmaPrime,
                                                                const models::Gaussian& initial) {
  const auto* qa = dynamic_cast<const models::QuadraticLoss*>(&lossD.loss());
  const auto* qb = dynamic_cast<const models::QuadraticLoss*>(&lossDPrime.loss());
  if (!qa || !qb || qa->lambda() != qb->lambda()) return std::nullopt;
  return forQuadratic(qa->lambda(), lossD.data().mean(), lossDPrime.data().mean(), Sigma, SigmaPrime, initial);
}

std::optional<GaussianReference> GaussianReference::forProblem(const solver::LangevinProblem& problem) {
  if (!problem.lossD || !problem.lossDPrime) return std::nullopt;
  const int d = problem.initial.dim();
  return forLangevin(*problem.lossD, *problem.lossDPrime, problem.diffusionMatrixP(d), problem.diffusionMatrixQ(d),
                     problem.initial);
}

GaussianReference GaussianReference::forQuadratic(double lambda, const models::Vector& centreP,
                                                  const models::Vector& centreQ, const models::Matrix& Sigma,
                                                  const models::Matrix& SigmaPrime, const models::Gaussian& initial) {
  const int d = initial.dim();
  if (centreP.size() != d || centreQ.size() != d || Sigma.rows() != d || Sigma.cols() != d ||
      SigmaPrime.rows() != d || SigmaPrime.cols() != d)
    throw std::invalid_argument("GaussianReference::forQuadratic: dimensions differ");
  if (!(lambda > 0)) throw std::invalid_argument("GaussianReference::forQuadratic: lambda must be positive");
  const models::Matrix A = lambda * models::Matrix::Identity(d, d);
  return GaussianReference(A, centreP, centreQ, Sigma, SigmaPrime, initial);
}

models::Gaussian GaussianReference::lawP(double t) const {
  return models::ornsteinUhlenbeckLaw(A_, cP_, SigmaP_, initial_.mean(), initial_.covariance(), t);
}
models::Gaussian GaussianReference::lawQ(double t) const {
  return models::ornsteinUhlenbeckLaw(A_, cQ_, SigmaQ_, initial_.mean(), initial_.covariance(), t);
}

double GaussianReference::renyi(double alpha, double t) const {
  const auto p = lawP(t), q = lawQ(t);
  return models::gaussianRenyi(p.mean(), p.covariance(), q.mean(), q.covariance(), alpha);
}

double GaussianReference::kl(double t) const {
  const auto p = lawP(t), q = lawQ(t);
  return models::gaussianKL(p.mean(), p.covariance(), q.mean(), q.covariance());
}

GaussianReference::DensityErrors GaussianReference::densityErrors(const meshes::DistributedBoxMesh& mesh, Vec u,
                                                                  double t) const {
  return cellErrors(mesh, u, lawP(t), lawQ(t));
}

GaussianReference::Moments GaussianReference::cellMoments(const meshes::DistributedBoxMesh& mesh, Vec u, int field) {
  const int d = mesh.dim();
  const auto& box = mesh.box();
  const auto& vol = mesh.ownedVolumes();
  const PetscInt fields = mesh.fields();
  if (field < 0 || field >= fields) throw std::invalid_argument("GaussianReference::cellMoments: no such field");
  const PetscScalar* a;
  // Raw sums: [0] mass, [1..d] first moments, then the d x d second moments, then the d within-cell variances.
  const int n = 1 + d + d * d + d;
  std::vector<double> local(static_cast<std::size_t>(n), 0.0), global(local.size());
  FPDP_PETSC(VecGetArrayRead(u, &a));
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const double m = vol[l] * a[fields * l + field];
    const auto x = box.centre(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
    const std::array<PetscInt, 3> c{i, j, k};
    local[0] += m;
    for (int r = 0; r < d; ++r) {
      local[1 + r] += m * x[r];
      for (int s = 0; s < d; ++s) local[1 + d + r * d + s] += m * x[r] * x[s];
      const double w = box.axis(r).width(static_cast<int>(c[r]));
      local[1 + d + d * d + r] += m * w * w / 12.0;
    }
  });
  FPDP_PETSC(VecRestoreArrayRead(u, &a));
  FPDP_PETSC(MPI_Allreduce(local.data(), global.data(), n, MPI_DOUBLE, MPI_SUM, mesh.comm()));
  Moments out;
  out.mass = global[0];
  out.mean = models::Vector(d);
  out.covariance = models::Matrix(d, d);
  for (int r = 0; r < d; ++r) out.mean[r] = global[1 + r] / out.mass;
  for (int r = 0; r < d; ++r)
    for (int s = 0; s < d; ++s)
      out.covariance(r, s) = global[1 + d + r * d + s] / out.mass - out.mean[r] * out.mean[s] -
                             (r == s ? global[1 + d + d * d + r] / out.mass : 0.0);
  return out;
}

}  // namespace fpdp::validation
