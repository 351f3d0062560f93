#pragma once
// The published upper bounds on the privacy loss of the released last iterate (MATH.md §5, items 1-9), evaluated
// from the problem's constants, each with the assumptions it needs checked before it is given a value.
//
// Notation (MATH.md §1, §5): the bounds are written in g = sup_theta |grad L_D - grad L_D'|, the gradient gap of the
// pair, instead of S_g/n: the worst case is g = S_g/n, the instance-specific ("measured gap") variant uses the gap
// measured over the mesh (docs/bounds.md). sigma^2 is the noise variance per unit time (noisy GD adds
// N(0, 2 eta sigma^2 I) per step), tau the elapsed time (eta K for noisy GD, t for Langevin), lambda the strong
// convexity, beta the smoothness, c = 1 - eta lambda the contraction of the gradient map (eta <= 1/beta).
// Every RDP bound of items 1-8 is linear in the order alpha (R_alpha <= alpha * slope(tau)); the functions take alpha
// explicitly so that a call reads like the formula.
//
// Misprints in the papers corrected here (MATH.md §5):
//  - CYS Cor 2 (eq. 18) prints eta^2 where n^2 belongs (item 4);
//  - CYS Thm 3's variance sigma_k^2 = (2 eta sigma^2/n^2) sum (1 - eta)^(2i) carries a spurious 1/n^2 (item 6);
//  - FMTT Thm 1 (extracted text) lost the square of |x_0 - x'_0| (item 8).
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/Dataset.hpp"

namespace fpdp::models {

// ---- The formulas (pure functions; no assumption is checked here) --------------------------------------------------

/// Item 1. Composition / moments accountant (CYS Thm 1 for Langevin, App. E for noisy GD):
/// alpha g^2 tau / (4 sigma^2)  (= alpha S_g^2 eta K / (4 n^2 sigma^2)).
double compositionBound(double alpha, double gap, double sigma2, double tau);

/// Item 2. CYS Thm 2 (eq. 16) with an LSI constant c of every law along the (tracing) diffusion:
/// alpha g^2 / (2 c sigma^4) (1 - exp(-sigma^2 c tau)).
double lsiBound(double alpha, double gap, double sigma2, double lsiConstant, double tau);

/// Item 3. CYS Cor 1 (Thm 2 with Lemma 5's c = lambda/(2 sigma^2)): alpha g^2/(lambda sigma^2) (1 - exp(-lambda tau/2)).
double corollary1Bound(double alpha, double gap, double sigma2, double lambda, double tau);

/// Item 4. CYS Cor 2 (quadratic loss), written for l = (lambda/2)|theta - x|^2: Thm 2 with the exact LSI constant
/// c = lambda (2 - eta lambda)/(2 sigma^2) of the Gaussian laws (1 over their stationary variance):
/// alpha g^2 / (lambda (2 - eta lambda) sigma^2) (1 - exp(-lambda (2 - eta lambda) eta K / 2)).
/// At lambda = 1 this is CYS eq. (18) with its eta^2 corrected to n^2.
double quadraticLsiBound(double alpha, double gap, double sigma2, double lambda, double eta, long K);

/// Item 5. Shifted divergence with c-contractive maps (FMTT Thm 22, shifts a_t ~ c^(K-t); Bok-Su-Altschuler 2024):
/// alpha g^2 (2 - eta lambda)(1 - c^K) / (4 lambda sigma^2 (1 + c^K)), c = 1 - eta lambda. Tends to item 1 as
/// lambda -> 0 (evaluated stably there).
double shiftedDivergenceBound(double alpha, double gap, double sigma2, double lambda, double eta, long K);

/// Item 6. Exact R_alpha of noisy GD on l = (lambda/2)|theta - x|^2 from theta_0 ~ N(m_0, v_0 I) (CYS Thm 3,
/// re-derived; the paper's variance carries a spurious 1/n^2): gap_K = (1 - c^K) |xbar - xbar'|,
/// v_K = c^(2K) v_0 + 2 sigma^2 (1 - c^(2K)) / (lambda (2 - eta lambda)), R_alpha = alpha gap_K^2 / (2 v_K), with
/// |xbar - xbar'| = g / lambda. v_0 = 0 is the deterministic start (then equal to item 5).
double quadraticNoisyGdExact(double alpha, double gap, double sigma2, double lambda, double eta, long K, double v0);

/// Item 7. Exact R_alpha of Langevin diffusion (OU) on the same loss from theta_0 ~ N(m_0, v_0 I):
/// alpha (1 - e^(-lambda t))^2 (g/lambda)^2 / (2 v_t), v_t = e^(-2 lambda t) v_0 + (sigma^2/lambda)(1 - e^(-2 lambda t));
/// for v_0 = 0: alpha g^2/(2 lambda sigma^2) tanh(lambda t / 2).
double ouExact(double alpha, double gap, double sigma2, double lambda, double t, double v0);

/// Item 8. FMTT Thm 1 (contractive noisy iteration with the same maps, started at x_0 and x'_0; identity maps are
/// the worst case): alpha |x_0 - x'_0|^2 / (2 T s^2), s^2 the per-step noise variance. The extracted text of the
/// paper shows |x_0 - x'_0| without its square.
double fmttTheorem1(double alpha, double startDistance, long T, double stepVariance);

/// Item 9. KL bound for two diffusions with the same noise (BKPP Sec. 4, MATH.md §4):
/// KL_t <= t g^2 / (4 lambda_min(Sigma)); for noisy GD, the chain rule of KL over the K steps gives the same with
/// t = eta K. (Item 1 at alpha = 1.)
double klBoundSameNoise(double gap, double lambdaMinSigma, double tau);

/// Item 9. Pinsker: TV <= sqrt(KL/2) (BKPP Sec. 3.1: TV is the best membership-inference advantage).
double pinskerTvBound(double kl);

/// The LSI constant the argument of CYS Lemma 5 gives when followed to its fixed point (see PrivacyBounds.cpp):
/// noisy GD lambda (2 - eta lambda)/(2 sigma^2), Langevin lambda/sigma^2.
double sharpenedLsiConstant(bool noisyGd, double lambda, double sigma2, double eta);

// ---- The bounds of a run, with their assumptions checked -------------------------------------------------------------

/// What the bounds need to know about a run. Optional constants are those that may be unknown.
struct BoundProblem {
  bool noisyGd = true;                      // noisy GD (K steps of size eta) or Langevin diffusion (time t)
  double eta = 0.0;                         // noisy GD step size
  std::optional<double> strongConvexity;    // lambda (nullopt: not strongly convex / unknown)
  std::optional<double> smoothness;         // beta (nullopt: unknown / unbounded)
  bool quadraticLoss = false;               // l = (lambda/2)|theta - x|^2 (items 4, 6, 7)
  double quadraticLambda = 0.0;             // its lambda
  bool clipped = false;                     // per-example gradient clipping (the drift is no gradient)
  bool constrained = false;                 // projection onto a convex set C != R^d
  Matrix Sigma;                             // noise matrix of p (sigma^2 I if isotropic)
  Matrix SigmaPrime;                        // noise matrix of q (Langevin may differ)
  Matrix startCovariance;                   // covariance of the common start (0 matrix: a point)
  std::optional<double> worstCaseGap;       // S_g / n (nullopt: S_g unknown)
  double measuredGap = 0.0;                 // sup over the mesh of |grad L_D - grad L_D'|
};

/// Which gradient gap a bound is evaluated with.
enum class GapKind { WorstCase, Measured };

/// The catalogue entry of one bound.
struct BoundInfo {
  int item;                  // MATH.md §5 item number
  const char* label;         // column stem: "bound1" (with "_measured_gap" for GapKind::Measured)
  const char* name;          // short human name
  const char* source;        // paper and statement
  const char* assumptions;   // what it needs, in words
};

struct Applicability {
  bool applies = false;
  std::string reason;  // why not (empty when it applies), or the qualification under which it applies
};

class PrivacyBounds {
public:
  /// Checks every bound's assumptions once (they do not change during a run).
  explicit PrivacyBounds(BoundProblem problem);

  /// Items 1-9 in order; items 1-8 bound R_alpha, item 9 bounds KL and TV.
  static std::span<const BoundInfo> catalogue();
  static const BoundInfo& info(int item);

  const Applicability& applicability(int item, GapKind kind) const;
  /// The bound of item 1..8 on R_alpha at the output after `step` steps (noisy GD) or at time t (Langevin);
  /// NaN when it does not apply (never a number for a bound whose assumptions fail).
  double renyi(int item, GapKind kind, double alpha, long step, double t) const;
  /// Item 9: the KL bound and the TV bound sqrt(KL bound / 2); NaN when they do not apply.
  double kl(GapKind kind, long step, double t) const;
  double tv(GapKind kind, long step, double t) const;

  /// The isotropic variance the bounds use: sigma^2, or lambda_min(Sigma) for anisotropic noise (a smaller
  /// variance only enlarges a bound: the per-step noise N(0, 2 eta Sigma) dominates N(0, 2 eta lambda_min I)).
  double sigma2() const { return sigma2_; }
  /// The LSI constant used by item 2 (NaN when item 2 does not apply).
  double lsiConstant() const { return lsiConstant_; }
  const BoundProblem& problem() const { return problem_; }

private:
  double gap(GapKind kind) const;
  double tau(long step, double t) const;

  BoundProblem problem_;
  double sigma2_ = 0.0;
  double lsiConstant_ = 0.0;
  std::vector<Applicability> applicability_;  // [2 * (item - 1) + kind]
};

}  // namespace fpdp::models
