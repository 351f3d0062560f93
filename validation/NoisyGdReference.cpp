#include "validation/NoisyGdReference.hpp"

#include <cmath>

namespace fpdp::validation {

std::optional<NoisyGdReference> NoisyGdReference::forQuadratic(const models::EmpiricalLoss& lossD,
                                                               const models::EmpiricalLoss& lossDPrime, double eta,
                                                               const models::Matrix& Sigma,
                                                               const models::Gaussian& initial) {
  const auto* qa = dynamic_cast<const models::QuadraticLoss*>(&lossD.loss());
  const auto* qb = dynamic_cast<const models::QuadraticLoss*>(&lossDPrime.loss());
  if (!qa || !qb || qa->lambda() != qb->lambda()) return std::nullopt;
  const int d = initial.dim();
  return NoisyGdReference(qa->lambda() * models::Matrix::Identity(d, d), lossD.data().mean(),
                          lossDPrime.data().mean(), Sigma, eta, initial);
}

models::Gaussian NoisyGdReference::law(const models::Vector& centre, long k) const {
  const int d = initial_.dim();
  const models::Matrix M = models::Matrix::Identity(d, d) - eta_ * A_;
  models::Vector m = initial_.mean();
  models::Matrix C = initial_.covariance();
  for (long i = 0; i < k; ++i) {
    m = M * m + eta_ * A_ * centre;
    C = M * C * M.transpose() + 2.0 * eta_ * Sigma_;
  }
  return models::Gaussian(m, 0.5 * (C + C.transpose()));
}

models::Gaussian NoisyGdReference::lawP(long k) const { return law(cP_, k); }
models::Gaussian NoisyGdReference::lawQ(long k) const { return law(cQ_, k); }

double NoisyGdReference::renyi(double alpha, long k) const {
  const auto p = lawP(k), q = lawQ(k);
  return models::gaussianRenyi(p.mean(), p.covariance(), q.mean(), q.covariance(), alpha);
}

double NoisyGdReference::kl(long k) const {
  const auto p = lawP(k), q = lawQ(k);
  return models::gaussianKL(p.mean(), p.covariance(), q.mean(), q.covariance());
}

NoisyGdReference::DensityErrors NoisyGdReference::densityErrors(const meshes::DistributedBoxMesh& mesh, Vec u,
                                                                long k,
                                                                meshes::FieldRepresentation representation) const {
  return cellErrors(mesh, u, lawP(k), lawQ(k), representation);
}

}  // namespace fpdp::validation
