#pragma once
// The problem constants the bounds of MATH.md §5 are stated in, for a pair L_D, L_D' (MATH.md §1):
//   lambda = strong convexity:  inf over the box of the smallest eigenvalue of the Hessian,
//   beta   = smoothness:        sup over the box of the largest |eigenvalue| of the Hessian,
//   S_g    = gradient sensitivity of the replaced pair: sup_theta |G(theta; x_j) - G(theta; x'_j)|, G = grad l or
//            CLIP_C(grad l) (so sup_theta |grad L_D - grad L_D'| <= S_g / n).
// lambda and beta are taken over both losses (min of the two lambdas, max of the two betas): the bounds need
// constants valid for both runs. Closed forms where the loss has them; otherwise estimated by sampling the Hessian
// (closed form at the sample points if the loss has one, else central differences) on a grid of the box. A grid
// estimate is not a bound: it can miss the extreme between grid points by O(h^2 |third derivative|).
// With clipping, lambda and beta are those of the unclipped L_D: beta stays a Lipschitz constant of the clipped drift
// (CLIP_C is 1-Lipschitz), but the clipped drift is bounded by C, so it is never strongly monotone on all of R^d.
#include <array>
#include <optional>
#include <string>

#include "models/Loss.hpp"

namespace fpdp::models {

struct LossConstants {
  std::optional<double> strongConvexity, smoothness, sensitivity;
  /// Where each value came from: "closed form ...", "closed-form bound ...", "estimated on a 33^2 grid of the box ...",
  /// or why there is none. (The app writes "given in the case file" when the user supplies a value.)
  std::string strongConvexitySource, smoothnessSource, sensitivitySource;
};

/// Constants of L_D and L_D' = D with `replaced` swapped for `replacement` on the box [lower, upper] (first dim
/// entries), dim = the data dimension (1..3). D and DPrime must share one Loss object and one clip norm.
/// gridPointsPerAxis (>= 2) points per axis, boundaries included, for the estimated constants.
LossConstants computeConstants(const EmpiricalLoss& D, const EmpiricalLoss& DPrime, const Record& replaced,
                               const Record& replacement, const std::array<double, 3>& lower,
                               const std::array<double, 3>& upper, int dim, int gridPointsPerAxis = 33);

/// Hessian of l(.; r) at theta: the loss's closed form if it has one, else central differences — of the gradient
/// (step cbrt(eps) max(1, |theta_i|), symmetrised) when it is analytic, of the value (second differences, step
/// eps^(1/4) max(1, |theta_i|)) when the gradient is itself a finite difference (ExpressionLoss without gradients).
Matrix lossHessian(const Loss& loss, const Vector& theta, const Record& r);

/// Extremes over the grid points of the box of the Hessian eigenvalues of L = (1/n) sum_i l(.; x_i).
struct HessianExtremes {
  double minEigenvalue;     // smallest eigenvalue seen
  double maxAbsEigenvalue;  // largest |eigenvalue| seen
};
HessianExtremes hessianExtremesOnGrid(const EmpiricalLoss& L, const std::array<double, 3>& lower,
                                      const std::array<double, 3>& upper, int dim, int gridPointsPerAxis);

}  // namespace fpdp::models
