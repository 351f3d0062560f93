#pragma once
// The exact solution of the coupled Langevin problem for the quadratic loss (MATH.md §5 item 7, §6):
// L_D(theta) = (lambda/2)|theta - xbar|^2 + const, so d theta = -lambda (theta - xbar) dt + sqrt(2) sigma dW is an
// Ornstein–Uhlenbeck process and p_t, q_t are Gaussian for a Gaussian start. Gives the exact R_alpha, KL and the
// exact cell averages, against which a run's densities and divergences are measured (L1 errors, relative errors).
#include <optional>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"
#include "models/Loss.hpp"

namespace fpdp::validation {

class GaussianReference {
public:
  /// Returns a reference when the problem has a Gaussian closed form (both losses quadratic), else nothing.
  static std::optional<GaussianReference> forLangevin(const models::EmpiricalLoss& lossD,
                                                      const models::EmpiricalLoss& lossDPrime, double sigma,
                                                      const models::Gaussian& initial);

  models::Gaussian lawP(double t) const;
  models::Gaussian lawQ(double t) const;
  double renyi(double alpha, double t) const;
  double kl(double t) const;

  struct DensityErrors {
    double l1P = 0, l1Q = 0;      // sum |c| |u_c - exact cell average|
    double maxRelP = 0, maxRelQ = 0;
  };
  /// L1 errors of the interlaced (p, q) state u at time t against the exact cell averages.
  DensityErrors densityErrors(const meshes::DistributedBoxMesh& mesh, Vec u, double t) const;

private:
  GaussianReference(models::Matrix A, models::Vector centreP, models::Vector centreQ, models::Matrix Sigma,
                    models::Gaussian initial)
      : A_(std::move(A)), cP_(std::move(centreP)), cQ_(std::move(centreQ)), Sigma_(std::move(Sigma)),
        initial_(std::move(initial)) {}
  models::Matrix A_;
  models::Vector cP_, cQ_;
  models::Matrix Sigma_;
  models::Gaussian initial_;
};

}  // namespace fpdp::validation
