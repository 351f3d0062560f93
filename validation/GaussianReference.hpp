#pragma once
// The exact solution of the coupled Langevin problem for the quadratic loss (MATH.md §5 item 7, §6):
// L_D(theta) = (lambda/2)|theta - xbar|^2 + const, so d theta = -lambda (theta - xbar) dt + sqrt(2 Sigma) dW is an
// Ornstein–Uhlenbeck process (A = lambda I; Sigma = sigma^2 I, or any SPD Sigma for p and Sigma' for q) and p_t, q_t
// are Gaussian for a Gaussian start: mean xbar + e^{-At}(m_0 - xbar), covariance solving C' = -AC - CA^T + 2 Sigma
// (models::ornsteinUhlenbeckLaw). Gives the exact R_alpha (+inf when alpha Sigma_q + (1 - alpha) Sigma_p is not
// positive definite, MATH.md §6), KL and the exact cell averages, against which a run's densities and divergences
// are measured (L1 errors, relative errors), and the mean and covariance of a computed density by quadrature.
#include <optional>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "validation/CellErrors.hpp"
#include "models/Gaussian.hpp"
#include "models/Loss.hpp"
#include "solver/discretisation/LangevinDiscretisation.hpp"

namespace fpdp::validation {

class GaussianReference {
public:
  /// Returns a reference when the problem has a Gaussian closed form (both losses quadratic), else nothing.
  static std::optional<GaussianReference> forLangevin(const models::EmpiricalLoss& lossD,
                                                      const models::EmpiricalLoss& lossDPrime, double sigma,
                                                      const models::Gaussian& initial);
  /// Anisotropic and unequal noise: Sigma drives p (loss L_D), SigmaPrime drives q (L_D'); both dim x dim SPD.
  static std::optional<GaussianReference> forLangevin(const models::EmpiricalLoss& lossD,
                                                      const models::EmpiricalLoss& lossDPrime,
                                                      const models::Matrix& Sigma, const models::Matrix& SigmaPrime,
                                                      const models::Gaussian& initial);
  /// The problem's noise (sigma^2 I or its Sigma, Sigma'), when both losses are quadratic with one lambda.
  static std::optional<GaussianReference> forProblem(const solver::LangevinProblem& problem);
  /// Directly: drifts -lambda (theta - centreP) for p and -lambda (theta - centreQ) for q.
  static GaussianReference forQuadratic(double lambda, const models::Vector& centreP, const models::Vector& centreQ,
                                        const models::Matrix& Sigma, const models::Matrix& SigmaPrime,
                                        const models::Gaussian& initial);

  models::Gaussian lawP(double t) const;
  models::Gaussian lawQ(double t) const;
  double renyi(double alpha, double t) const;
  double kl(double t) const;

  using DensityErrors = CellErrors;
  /// L1 errors of the interlaced (p, q) state u at time t against the exact cell averages.
  DensityErrors densityErrors(const meshes::DistributedBoxMesh& mesh, Vec u, double t) const;

  /// Mass, mean and covariance of field `field` of the interlaced state u, from its cell averages u_c:
  ///   mass = sum |c| u_c,  mean = sum |c| u_c x_c / mass,
  ///   cov  = sum |c| u_c (x_c - mean)(x_c - mean)^T / mass - diag( sum |c| u_c w_a(c)^2 / 12 ) / mass.
  /// For exact cell averages of a smooth density on a uniform mesh the midpoint sums of x and of x_a x_b (a != b)
  /// are exact to O(h^4) and that of x_a^2 exceeds the true moment by w_a^2/12 (+ O(h^4)), which the last term
  /// removes; so the error of these moments is the density's own error. On a graded mesh the correction is
  /// exact only to O(h^2).
  struct Moments {
    double mass = 0.0;
    models::Vector mean;
    models::Matrix covariance;
  };
  static Moments cellMoments(const meshes::DistributedBoxMesh& mesh, Vec u, int field);

  const models::Matrix& sigmaP() const { return SigmaP_; }
  const models::Matrix& sigmaQ() const { return SigmaQ_; }

private:
  GaussianReference(models::Matrix A, models::Vector centreP, models::Vector centreQ, models::Matrix SigmaP,
                    models::Matrix SigmaQ, models::Gaussian initial)
      : A_(std::move(A)), cP_(std::move(centreP)), cQ_(std::move(centreQ)), SigmaP_(std::move(SigmaP)),
        SigmaQ_(std::move(SigmaQ)), initial_(std::move(initial)) {}
  models::Matrix A_;
  models::Vector cP_, cQ_;
  models::Matrix SigmaP_, SigmaQ_;
  models::Gaussian initial_;
};

}  // namespace fpdp::validation
