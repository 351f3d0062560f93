#pragma once
// The exact law of noisy gradient descent on the quadratic loss (MATH.md §6, §5 item 6): with
// l = (lambda/2)|theta - x|^2 the map T_D is affine, so a Gaussian start stays Gaussian with
//   m_{k+1} = (I - eta A) m_k + eta A xbar,    C_{k+1} = (I - eta A) C_k (I - eta A)^T + 2 eta Sigma,   A = lambda I.
// Gives the exact R_alpha, KL and cell averages after k steps, to measure a noisy-GD run against.
#include <optional>

#include "meshes/DistributedBoxMesh.hpp"
#include "validation/CellErrors.hpp"
#include "models/Gaussian.hpp"
#include "models/Loss.hpp"

namespace fpdp::validation {

class NoisyGdReference {
public:
  /// A reference when both losses are quadratic with the same lambda (and the gradient is not clipped).
  static std::optional<NoisyGdReference> forQuadratic(const models::EmpiricalLoss& lossD,
                                                      const models::EmpiricalLoss& lossDPrime, double eta,
                                                      const models::Matrix& Sigma, const models::Gaussian& initial);
  models::Gaussian lawP(long k) const;
  models::Gaussian lawQ(long k) const;
  double renyi(double alpha, long k) const;
  double kl(long k) const;
  using DensityErrors = CellErrors;
  DensityErrors densityErrors(const meshes::DistributedBoxMesh& mesh, Vec u, long k,
                              meshes::FieldRepresentation representation = meshes::FieldRepresentation::CellAverages) const;

private:
  NoisyGdReference(models::Matrix A, models::Vector cP, models::Vector cQ, models::Matrix Sigma, double eta,
                   models::Gaussian initial)
      : A_(std::move(A)), cP_(std::move(cP)), cQ_(std::move(cQ)), Sigma_(std::move(Sigma)), eta_(eta),
        initial_(std::move(initial)) {}
  models::Gaussian law(const models::Vector& centre, long k) const;
  models::Matrix A_;
  models::Vector cP_, cQ_;
  models::Matrix Sigma_;
  double eta_;
  models::Gaussian initial_;
};

}  // namespace fpdp::validation
