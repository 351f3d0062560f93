#pragma once
// The accuracy contract of every number a run writes (docs/scheme.md §8): a certified number is within accuracy.rtol
// of the truth; a conservative value is at least the truth (at most the quantity's limit: +inf, or 1 for TV and
// delta(eps)); a number that is not certified says why (Uncertainty) and what to do about it (uncertaintyRemedy).
//
// The estimate comes from the same case solved on a sequence of meshes (app/run/CompanionSolve): the run's own mesh
// and its 2x, 4x and, where the mesh allows, 8x coarser companions, or under `accuracy.certify` a sequence refined
// upward until the numbers asked for are certified (app/run/CertifyRefinement). AccuracyJudge turns the values of
// one output step on every level into a NumberAccuracy per number; AccuracyOutput writes them.
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "app/case/Case.hpp"
#include "app/run/CompanionSolve.hpp"
#include "models/RdpConversion.hpp"
#include "solver/functionals/Divergences.hpp"

namespace fpdp::app {

/// Why a number is not certified (0: it is). The codes are the status column of accuracy.csv,
/// hockey_stick_accuracy.csv and their fpdp.h5 tables (`<number>_reason`); docs/output.md lists them.
enum class Uncertainty {
  Certified = 0,
  AboveTolerance,         // the estimate exceeds accuracy.rtol |value|: the mesh is too coarse for rtol
  NotConverging,          // the meshes do not converge (the finer pair differs at least as much as the coarser)
  PreAsymptotic,          // they converge more slowly than order 1.5: not yet in Richardson's range
  OrderUnconfirmed,       // faster than the route's order, not confirmed by a further mesh
  TimeErrorNotEstimated,  // a time-discretisation error the companions did not coarsen (or an integrator fallback)
  BoxTruncation,          // the value rests on the box walls: the box cuts off what decides it
  NoiseFloor,             // the value rests on cells at a density's noise floor (the scheme's sign errors)
  NumericalFault,         // a numerical fault (docs/faults.md) that did not stop the run
  NoEstimate,             // no companion solve: accuracy.estimate = false, a mesh too coarse, or a failed companion
  ZeroUnproven,           // an exact zero on the meshes, which no argument proves for the truth
  InfiniteUndecided,      // R_alpha at an order where the truth may be +inf (near the tails' critical order)
  DensityBound,           // the densities are known only within the Poisson displacement lattice's TV bound
  UnderResolved,          // the densities are narrower than a cell of the coarser meshes the estimate needs
  NotComputed,            // no value (NaN)
  RareTrajectories        // R_alpha of a Poisson mixture that rare many-inclusion trajectories may decide, beyond the
                          // box or below double precision (PoissonMixtureModel)
};
inline constexpr Uncertainty kLastUncertainty = Uncertainty::RareTrajectories;

/// The code's name ("certified", "above_tolerance", ...), and the code table of the status columns.
const char* uncertaintyName(Uncertainty u);
std::string uncertaintyCodeTable();
/// What makes the number certified, in one line (the summary prints it beside the reason).
std::string uncertaintyRemedy(Uncertainty u, const Case& c);
/// Whether a finer mesh (and time step) can remove the reason (--certify's refinement refines for these).
bool refinementMayCertify(Uncertainty u);

/// One number's accuracy: its value, the error estimate (NaN: none), whether it is certified, a conservative value
/// (at least the truth), and why it is not certified.
struct NumberAccuracy {
  double value, estimate, conservative;
  bool certified;
  Uncertainty reason = Uncertainty::Certified;
};

/// The accuracy of levels[0] (the run's value) from the values of the same number on coarser meshes, levels[1]
/// (2h), levels[2] (4h) and, where present, levels[3] (8h), at relative tolerance rtol (docs/scheme.md §8). With
/// d_i = |X_i - X_(i+1)| and the observed ratio r = d_1/d_0:
///   the estimate is 2 max(d_0/(min(r, 4) - 1), d_1/12) (Richardson's error for the observed order, at most second
///   order, from the finer and from the coarser pair, times a safety factor 2), +inf where r <= 1;
///   certified where 2^1.5 <= r <= largestRatio (the route's order p: 2^(p + 0.5)) and the estimate <= rtol |X_0|;
///   a ratio above largestRatio is a faster convergence only where the next ratio d_2/d_1 confirms the order (within
///   one of it, at least 1.5): then it may be certified, with the same second-order estimate; unconfirmed, it is not
///   certified and its estimate is 2 (d_1/3 + d_0) (the 2h error at second order, which the fine one may share);
///   meshes that agree to within kPlateauShare rtol |X_0| on every level are converged whatever their ratios
///   (estimate 2 max d_i): the routes exact in space leave differences at the level of their root-finding;
///   the conservative value is X_0 + estimate (at most upperLimit), and the quantity's limit where the meshes are
///   not yet in Richardson's range (r < 2^1.5, or a faster ratio with the coarsest mesh more than 10 % off).
NumberAccuracy numberAccuracy(std::span<const double> levels, double rtol, double upperLimit = INFINITY,
                              double largestRatio = INFINITY);

/// Differences below this share of rtol |value| on every level are a converged plateau (numberAccuracy).
inline constexpr double kPlateauShare = 1e-2;
/// A mesh resolves the densities where each one's standard deviation along every axis is at least this many of its
/// cell widths (AccuracyJudge: the coarser meshes of the estimate must, or their differences say nothing).
inline constexpr double kCellsPerSpread = 1.0;
/// A number whose integrand lies deeper in a density's tail than this many standard deviations needs proportionally
/// finer cells: there each density changes by a factor e^(depth h / sd) per cell, and a mesh on which that is
/// large has no relative accuracy in the region that decides the number (numberDepth).
inline constexpr double kBulkDepth = 1.5;

/// How many standard deviations into the densities' tails a number's integrand lies, read from the number itself
/// through the Gaussian pair of equal covariances at distance mu (in standard deviations) that has the same value:
/// KL = mu^2/2 (its integrand sits at p's mean, mu from q's): mu; TV = 2 Phi(mu/2) - 1: mu/2; R_alpha = alpha mu^2/2
/// (the tilted law p^alpha q^(1 - alpha) sits alpha mu from q's mean and (alpha - 1) mu from p's): max(alpha,
/// |1 - alpha|) mu; delta(eps) and eps(delta): (p - e^eps q)_+ begins at the boundary p = e^eps q, eps/mu + mu/2 into
/// q's tail, and its mass delta lies at most z = Phi^-1(1 - delta) into p's, z + mu into q's: the smaller of the two,
/// mu from the pair's KL (both directions). Never below 1 (the bulk). A model, not a bound: it sets how fine the companions' cells must be for
/// their differences to be read (AccuracyJudge); a mixture's far component can lie deeper (docs/scheme.md §5).
double klDepth(double kl);
double tvDepth(double tv);
double renyiDepth(double alpha, double renyi);
double hockeyStickDepth(double delta, double eps, double klSmaller, double klLarger);

/// Not certified for `why`: the conservative value is the quantity's limit (nothing bounds the number's error);
/// `unbounded`: the error estimate becomes +inf too (the companions share the error, their difference says nothing).
void uncertifiedAtLimit(NumberAccuracy& a, double upperLimit, Uncertainty why, bool unbounded);

/// How far one direction's root eps~ of delta~(eps) = delta (models::ExactEpsilon, its evaluated delta~ at the root)
/// can move, at most, where the profile is only known within delta(eps) <= delta~(eps) + boundSelf + e^eps boundOther
/// (TV bounds of the two densities): delta~ is convex in x = e^eps, so it lies below its chord from the root to the
/// first eps of the grid (gridEps ascending, gridDelta the values of delta~ there) at which delta~ plus the allowance
/// is at most delta, and the chord's crossing bounds the moved root. 0 where the allowance fits at the root itself,
/// +inf where no grid point serves (or the root is not finite).
double epsilonShiftBound(const models::ExactEpsilon& root, double delta, std::span<const double> gridEps,
                         std::span<const double> gridDelta, double boundSelf, double boundOther);

/// Absorbing walls (solver::DivergenceValues::absorbedMass) that removed more than this share of either density:
/// KL and R_alpha are not certified (conservative +inf). The removed mass bounds TV and delta(eps), but nothing of
/// KL and R_alpha, whose wall-share test cannot see absorbing walls; a guard, not a bound (docs/noisy-gd.md §4.1).
inline constexpr double kAbsorbedMassGuard = 1e-10;

/// The largest convergence ratio of the case's route that counts as asymptotic: 2^(p + 0.5) for its spatial order p
/// (2, or 4 with solver.spatial_order = 4), unbounded for the spectral chapman_kolmogorov route.
double largestConvergenceRatio(const Case& c);

/// Whether the two datasets and the two noises are the same, so that p = q exactly at every step: the one case in
/// which an exact zero of a divergence is proved (every other zero on the meshes is ZeroUnproven).
bool identicalPair(const Case& c, bool datasetsEqual);

/// Poisson-subsampled noisy GD (batch.sampling = "poisson"): the last iterate is a mixture over the steps that took the
/// differing record. Its components are narrower than the mixture, and its rare components (many inclusions, weight
/// down to gamma^K) lie far out, where R_alpha's tilted law p^alpha q^(1 - alpha) can peak (docs/scheme.md §8,
/// "Poisson mixtures"). What the accuracy contract needs to know of them, each a bound in the safe direction.
struct PoissonMixtureModel {
  double rate = 0.0;           // gamma
  double shift = INFINITY;     // the largest displacement one inclusion adds, eta G / b (G: the per-record gradient gap)
  double stepVariance = 0.0;   // 2 eta lambda_min(Sigma): one step's noise along any direction
  double startVariance = 0.0;  // lambda_min of the initial covariance
  bool linear = false;         // the loss is linear (no Hessian): the steps neither contract nor expand
  /// A lower bound of a component's variance along any direction after k steps: V0 + k (one step's noise) for a
  /// linear loss, else one step's noise (a contraction of unknown strength may have shrunk the rest).
  double componentVariance(long k) const;
  /// Whether trajectories with j inclusions, j = 1..k, may carry a share of E_alpha = exp((alpha - 1) R_alpha) beyond
  /// `share` (their Gaussian bound alpha log Bin(j; k, gamma) + alpha (alpha - 1) D_j^2 / (2 V)) while their tilted
  /// peak, alpha D_j from q's mean, lies beyond `reach` or where p is below double precision.
  bool rareTrajectoriesMayDecide(long k, double alpha, double renyi, double share, double reach) const;
};

/// The case's Poisson mixture model (nullopt for other runs). recordGradientGap: sup |grad l(theta; x) -
/// grad l(theta; x')| where known (LossConstants::sensitivity), else the clip norm's bound (C added or removed, 2C
/// replaced) or none (shift +inf). smoothness: the loss constants' (0: a linear loss).
std::optional<PoissonMixtureModel> poissonMixtureModel(const Case& c, std::optional<double> recordGradientGap,
                                                       std::optional<double> smoothness);

/// The numbers of one run, judged at an output step: their names (accuracy.csv's order: kl, tv, renyi_<label>...,
/// eps_exact_delta_<delta>..., kl_qp, renyi_qp_<label>..., eps_rdp_mironov_delta_<delta>...,
/// eps_rdp_cks_delta_<delta>...) and, per step, their accuracy from the companions' values.
class AccuracyJudge {
public:
  /// eps: the run's hockey-stick eps grid. identical: identicalPair's verdict for this run.
  AccuracyJudge(const Case& c, std::vector<double> eps, CompanionValues companion, bool identical);

  /// The run took its first step exactly from the initial Gaussian (RunPlan::exactFirstStep; then so did its coarser
  /// companions): the start's width no longer bounds what the companions resolve.
  void setStartTakenExactly(bool exact) { startTakenExactly_ = exact; }
  /// The run's Poisson mixture model (poissonMixtureModel; the constructor takes the case's alone, without the loss
  /// constants).
  void setPoissonMixture(std::optional<PoissonMixtureModel> m) { mixture_ = m; }

  /// The accountants' composition (MATH.md §8, models/GaussianComposition.hpp): mu(step), the GDP parameter of the
  /// mechanism that releases every iterate up to `step` (NaN: none). Post-processing bounds the last iterate's pair
  /// by it in both directions: R_alpha <= alpha mu^2/2, KL <= mu^2/2, delta(eps) <= gdpDelta(mu, eps) (TV at eps =
  /// 0), eps(delta) <= gdpEpsilon(mu, delta); conservative values are capped by these (never below their value).
  /// `finitenessNeedsIt`: nothing else proves R_alpha finite (no far-field model, d > 3): a finite R_alpha at a step
  /// without mu is then InfiniteUndecided.
  void setCompositionBound(std::function<double(long)> mu, bool finitenessNeedsIt) {
    compositionMu_ = std::move(mu);
    finitenessNeedsComposition_ = finitenessNeedsIt;
  }
  /// Whether setCompositionBound gave a mu (the summary's words for conservative values then name the cap).
  bool capsByComposition() const { return static_cast<bool>(compositionMu_); }

  const std::vector<std::string>& names() const { return names_; }
  const std::vector<double>& eps() const { return eps_; }
  const CompanionValues& companion() const { return companion_; }
  const Case& caseSpec() const { return case_; }
  /// The index of eps_exact at `delta` in names() (npos where delta is not in privacy.delta_grid).
  std::size_t epsIndex(double delta) const;

  /// delta_pq and delta_qp at every eps of the grid, in that order per eps. `faulted`: a numerical fault beyond its
  /// default tolerance happened (then nothing is certified and every conservative value is the limit).
  std::vector<NumberAccuracy> profile(long step, const solver::DivergenceValues& v, bool faulted) const;
  /// Every number of names() at the step; `profile` is profile()'s (a zero eps is bounded from it).
  std::vector<NumberAccuracy> numbers(long step, const solver::DivergenceValues& v,
                                      const std::vector<NumberAccuracy>& profile, bool faulted) const;
  /// The profile's conservative values bounded by the RDP conversion of numbers()'s conservative R_alpha (each
  /// direction by its own orders, models::cksDelta, MATH.md §7): an upper bound of the truth wherever those are. It
  /// matters where the profile has none of its own (a value the box or the meshes cannot judge, whose conservative
  /// value was the last judged one's): delta(4) of the default case, 1.9e-16, had 2.2e-11.
  void boundProfileByRenyi(std::vector<NumberAccuracy>& profile, const std::vector<NumberAccuracy>& numbers) const;
  /// The profile's conservative values bounded by numbers()'s conservative eps_exact: where eps >= the conservative
  /// eps(delta_j) of the pair (at least either direction's true eps(delta_j)), each direction's true delta(eps) is at
  /// most delta_j, since delta(eps) does not increase. It matters where the profile's own bound is the last judged
  /// value while eps(delta) is certified by its roots' shift (epsilonShiftBound): cases/dpsgd-poisson-1d.toml
  /// certified eps(1e-5) = 1.4750 while its conservative delta_qp(eps) stayed at 0.019 from eps = 1 on, and the PLD
  /// export, which covers that curve, could not give an eps at 1e-5. Then, delta(eps) being convex in e^eps, by the
  /// lower convex envelope (in e^eps) of all those bounds: the chords between the points of eps(delta). First, by
  /// TV's conservative value: TV = delta(0) in both directions, and delta(eps) does not increase, so it bounds the
  /// profile at every eps >= 0.
  void boundProfileByEpsilons(std::vector<NumberAccuracy>& profile, const std::vector<NumberAccuracy>& numbers) const;
  /// numbers()'s conservative eps_exact bounded by the profile's conservative values (after boundProfileByRenyi and
  /// boundProfileByEpsilons): each direction's true delta(eps) lies below the chord in e^eps of its bounds at two eps
  /// of the grid (convexity), so where that chord reaches delta_j, the direction's true eps(delta_j) is at most that
  /// eps; the pair's is at most the larger of the two. cases/ou-1d.toml: eps(1e-5) = 0.9141, not certified, had the
  /// conservative value 1.223 from its own estimate while its conservative profile reached 1e-5 by eps = 0.97.
  /// And TV's conservative value by the profile's at eps = 0 (either direction's delta(0) is TV).
  void boundEpsilonsByProfile(std::vector<NumberAccuracy>& numbers, const std::vector<NumberAccuracy>& profile) const;

private:
  /// The companions' divergences at one step, coarsest last (null where a level has none), as far as their meshes
  /// resolve the densities (kCellsPerSpread), now and at the start (an error made on a start narrower than the cells
  /// is not in Richardson's range later either); `underResolved`: a level the estimate needs does not.
  struct Levels {
    std::vector<const solver::DivergenceValues*> coarse;
    std::vector<double> sdPerCell;  // per level: the densities' smallest standard deviation in its cells
    bool underResolved = false;
  };
  Levels companionsAt(long step, const solver::DivergenceValues& v) const;
  /// One number on every level: levels[0] = value(v), then each companion's (NaN where absent), as far as the levels
  /// resolve the number's depth (kBulkDepth).
  template <class Get>
  NumberAccuracy judge(long step, const solver::DivergenceValues& v, const Levels& c, Get get, double upperLimit,
                       double depth = 1.0) const;
  void applyDensityTvBound(const solver::DivergenceValues& v, const std::array<double, 2>& m, double stateTv,
                           std::vector<NumberAccuracy>& out) const;
  void boundZeroEpsilons(const solver::DivergenceValues& v, const std::vector<NumberAccuracy>& profile,
                         std::vector<NumberAccuracy>& out) const;
  /// eps_rdp (Mironov, CKS) of the pair at every delta: its conservative value from the conservative R_alpha of both
  /// directions, certified where the conversions of the upper and lower ends of every R_alpha agree within rtol.
  void judgeRdpConversions(const solver::DivergenceValues& v, std::vector<NumberAccuracy>& out) const;
  void judgeOrders(long step, const solver::DivergenceValues& v, const Levels& c, bool reverse,
                   std::vector<NumberAccuracy>& out) const;
  /// setCompositionBound's caps of the numbers (numbers()'s order) and of the profile (profile()'s).
  void capNumbersByComposition(long step, std::vector<NumberAccuracy>& out) const;
  void capProfileByComposition(long step, std::vector<NumberAccuracy>& profile) const;
  /// The smallest distance from either density's mean to a wall, along any axis.
  double wallReach(const solver::DivergenceValues& v) const;

  const Case& case_;
  std::vector<double> eps_;
  CompanionValues companion_;
  double largestRatio_;
  bool identical_;
  meshes::AxisValues startSpread_{INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY};  // the initial Gaussian's, per axis
  bool startTakenExactly_ = false;
  std::optional<PoissonMixtureModel> mixture_;
  std::function<double(long)> compositionMu_;
  bool finitenessNeedsComposition_ = false;
  std::vector<std::string> names_;
};

}  // namespace fpdp::app
