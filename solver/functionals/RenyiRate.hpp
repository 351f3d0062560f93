#pragma once
// The rate of the Rényi divergence R_alpha(p || q) for two densities driven by
//   d_t p = div(p g1) + div(Sigma grad p),   d_t q = div(q g2) + div(Sigma grad q)
// (Langevin: g1 = grad L_D, g2 = grad L_D'; tracing diffusions of noisy GD: g1 = V_t, g2 = V'_t; MATH.md §2.2, §2.3),
// and the two inequalities of MATH.md §4 it is checked against. Derivation and discretisation: docs/rate.md.
//
// Rate identity (MATH.md §4, from the proof of CYS Lemma 2; no-flux walls):
//   d_t R_alpha = -alpha I^Sigma_alpha/E_alpha - alpha X_alpha,
//   X_alpha = E_q[ r^alpha <grad log r, g1 - g2> ] / E_alpha,   I^Sigma_alpha = E_q[ r^alpha (grad log r)^T Sigma grad log r ]
// (Sigma = sigma^2 I: I^Sigma = sigma^2 I_alpha).
// CYS Lemma 2 (10), for gamma > 0 (Young's inequality on X_alpha; with Sigma = sigma^2 I exactly the paper's form):
//   d_t R_alpha <= A/gamma - (1 - gamma) B,   A = alpha S^2/4,  B = alpha I^Sigma_alpha/E_alpha,
//   S^2 = sup (g1 - g2)^T Sigma^-1 (g1 - g2)  (= S_v^2/sigma^2 for Sigma = sigma^2 I; <= S_v^2/lambda_min(Sigma));
// the tightest right side, at gamma = sqrt(A/B), is 2 sqrt(A B) - B (lemma2RightSide).
// CYS Lemma 3 (12): c_eff = alpha^2 I_alpha / (2 E_alpha (R_alpha + alpha (alpha - 1) d_alpha R_alpha)) (Euclidean I);
// q is c-LSI only if c_eff >= c for every p (effectiveLsiConstant).
//
// Quadrature: the rule of DivergenceFunctionals (Divergences.hpp): point values reconstructed from the cell averages
// (PointValues.hpp), grad log r by LogRatioGradient (fourth order inside, second at the walls), the midpoint rule with
// the tilted weights t_c = |c| q_c r_c^alpha (scaled by their maximum, so large orders do not overflow). The drift gap
// g1 - g2 is given per owned cell by the caller (NaN where undefined, e.g. V_t where p_t is negligible). Every sum
// runs over the same cells with the same weights, so the discrete Cauchy–Schwarz inequality |X| <= sqrt(I/E) S holds
// exactly and the identity's rate never exceeds Lemma 2 with the measured S (below) beyond round-off.
// Cells carrying mass (for the measured S): the cells of the X sum whose tilted weight is at least
// kCarryingShare of the total; cells below it change the Cauchy–Schwarz bound by < N kCarryingShare relative.
// Cells where the gradient or the drift gap is undefined are left out of the numerators (never of E_alpha) and their
// tilted share is reported.
#include <petscvec.h>

#include <array>
#include <memory>
#include <string>
#include <optional>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "models/Dataset.hpp"
#include "solver/functionals/LogRatioGradient.hpp"
#include "solver/functionals/LogRatioWorkspace.hpp"
#include "solver/functionals/PointValues.hpp"

namespace fpdp::solver {

struct RenyiRateEntry {  // one order
  double informationRatio = 0;       // I_alpha / E_alpha (Euclidean)
  double informationRatioSigma = 0;  // I^Sigma_alpha / E_alpha
  double cross = 0;                  // X_alpha
  double rateIdentity = 0;           // -alpha I^Sigma/E - alpha X
  double supDriftGap = 0;            // measured S_v = max |g1 - g2| over the cells carrying mass
  double supDriftGapSigma = 0;       // max sqrt((g1 - g2)^T Sigma^-1 (g1 - g2)) over the same cells
  double excludedShare = 0;          // tilted share of the cells left out of the numerators
};
using RenyiRateValues = std::vector<RenyiRateEntry>;  // one per order

class RenyiRateFunctional {
public:
  static constexpr double kCarryingShare = 1e-20;
  /// sigma: the diffusion matrix (dim x dim, SPD) shared by both equations. The mesh must carry (p, q). Collective.
  /// `workspace` (optional, on the same mesh): the work vectors shared with the run's DivergenceFunctionals.
  RenyiRateFunctional(const meshes::DistributedBoxMesh& mesh, std::vector<double> orders, const models::Matrix& sigma,
                      std::shared_ptr<LogRatioWorkspace> workspace = nullptr);
  /// Why the rate cannot be computed on this mesh distribution (LogRatioGradient::unsupportedReason), or "".
  const std::string& unavailable() const { return work_->gradientUnavailable; }
  /// u: interlaced (p, q) cell averages. driftGap[l]: g1 - g2 at owned cell l (local order), components >= dim
  /// ignored, NaN where undefined. Collective. All NaN when unavailable().
  RenyiRateValues evaluate(Vec u, const std::vector<std::array<double, 3>>& driftGap) const;
  const std::vector<double>& orders() const { return orders_; }

private:
  const meshes::DistributedBoxMesh& mesh_;
  std::vector<double> orders_;
  models::Matrix sigma_, sigmaInv_;
  std::shared_ptr<LogRatioWorkspace> work_;  // point values and grad log r, possibly shared (LogRatioWorkspace.hpp)
};

/// Right side of CYS Lemma 2, A/gamma - (1 - gamma) B; without gamma the minimum over gamma > 0, 2 sqrt(A B) - B
/// (= 0 for B = 0, the limit gamma -> inf).
double lemma2RightSide(double A, double B, std::optional<double> gamma = std::nullopt);

/// c_eff of CYS Lemma 3 (MATH.md §4): alpha^2 (I/E) / (2 (R + alpha (alpha - 1) dR/dalpha)); NaN if the denominator is
/// not positive (p = q).
double effectiveLsiConstant(double alpha, double informationRatio, double renyi, double dRenyiDAlpha);

/// d y/d x at x[j], j in {0, 1, 2}, of the quadratic through (x[0], y[0]), (x[1], y[1]), (x[2], y[2]) (any spacing):
/// second order. Used for the finite-difference rate (j = 1 central, j = 0 or 2 one-sided at the ends).
double threePointDerivative(const double* x, const double* y, int j);

}  // namespace fpdp::solver
