#include "validation/GaussianReference.hpp"

#include <cmath>

namespace fpdp::validation {

std::optional<GaussianReference> GaussianReference::forLangevin(const models::EmpiricalLoss& lossD,
                                                                const models::EmpiricalLoss& lossDPrime,
                                                                double sigma, const models::Gaussian& initial) {
  const auto* qa = dynamic_cast<const models::QuadraticLoss*>(&lossD.loss());
  const auto* qb = dynamic_cast<const models::QuadraticLoss*>(&lossDPrime.loss());
  if (!qa || !qb || qa->lambda() != qb->lambda()) return std::nullopt;
  const int d = initial.dim();
  const models::Matrix A = qa->lambda() * models::Matrix::Identity(d, d);
  const models::Matrix Sigma = sigma * sigma * models::Matrix::Identity(d, d);
  return GaussianReference(A, lossD.data().mean(), lossDPrime.data().mean(), Sigma, initial);
}

models::Gaussian GaussianReference::lawP(double t) const {
  return models::ornsteinUhlenbeckLaw(A_, cP_, Sigma_, initial_.mean(), initial_.covariance(), t);
}
models::Gaussian GaussianReference::lawQ(double t) const {
  return models::ornsteinUhlenbeckLaw(A_, cQ_, Sigma_, initial_.mean(), initial_.covariance(), t);
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
  const models::Gaussian laws[2] = {lawP(t), lawQ(t)};
  const auto& box = mesh.box();
  const auto& vol = mesh.ownedVolumes();
  const PetscScalar* a;
  FPDP_PETSC(VecGetArrayRead(u, &a));
  double l1[2] = {0, 0}, rel[2] = {0, 0};
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    std::array<double, 3> lo{0, 0, 0}, hi{0, 0, 0};
    const std::array<PetscInt, 3> c{i, j, k};
    for (int d = 0; d < mesh.dim(); ++d) {
      lo[d] = box.axis(d).face(static_cast<int>(c[d]));
      hi[d] = box.axis(d).face(static_cast<int>(c[d]) + 1);
    }
    for (int f = 0; f < 2; ++f) {
      const double exact = laws[f].cellAverage(lo, hi);
      const double err = std::fabs(a[2 * l + f] - exact);
      l1[f] += vol[l] * err;
      if (exact > 0) rel[f] = std::max(rel[f], err / exact);
    }
  });
  FPDP_PETSC(VecRestoreArrayRead(u, &a));
  double gl1[2], grel[2];
  FPDP_PETSC(MPI_Allreduce(l1, gl1, 2, MPI_DOUBLE, MPI_SUM, mesh.comm()));
  FPDP_PETSC(MPI_Allreduce(rel, grel, 2, MPI_DOUBLE, MPI_MAX, mesh.comm()));
  return {gl1[0], gl1[1], grel[0], grel[1]};
}

}  // namespace fpdp::validation
