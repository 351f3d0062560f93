#pragma once
// Divergences between the two densities p (trained on D) and q (on D'), by quadrature on the mesh (MATH.md §3).
//
// Quadrature (the one rule every functional here uses, CellQuadrature): point values at the cell centres are
// reconstructed from the cell averages to fourth order (PointValues.hpp), then the midpoint rule
// int f(p, q) dtheta ~= sum_c |c| f(p_c, q_c) is applied to them: fourth order for smooth densities that decay inside
// the box (docs/scheme.md §5). evaluate(p, q, stride) applies the midpoint rule to the arrays it is given.
// The densities are normalised by their computed masses first (they are probability densities; the solver
// conserves mass to round-off), r = p/q, rho = r - 1. Each divergence is written as a sum of non-negative terms
// so that tiny divergences (1e-10 and below) lose no digits:
//   E_alpha - 1 = int q g_alpha(r),  g_alpha(r) = r^alpha - 1 - alpha (r - 1) = em1l(alpha u) + alpha l1l(rho),
//   KL          = int q h(r),        h(r) = r log r - r + 1 = rho u + l1l(rho),          u = log1p(rho),
// with em1l(x) = e^x - 1 - x and l1l(x) = log(1+x) - x (StableFunctions.hpp). Both integrands vanish to second
// order at r = 1 and the extra terms integrate to zero because int p = int q = 1.
//   R_alpha = log1p(E_alpha - 1)/(alpha - 1) while E_alpha - 1 < 1; for larger values (or overflow) the
//   log-sum-exp of log q + alpha log r is used instead, so R_alpha never overflows for large orders.
//   TV = (1/2) int |p - q|.
// Infinite values: where q = 0 and p > 0 (r = inf) R_alpha and KL are +inf. Negative cell values (which a
// non-positive time integrator, or an operator that is not an M-matrix, may produce) are counted and reported with
// the minimum; a negative p enters the integrands as 0, a cell with negative q is left out of KL and R_alpha (a
// negative q is an artefact, not a zero of the density, and must not turn them into +inf) and the p-mass of those
// cells is reported (excludedMassP). Nothing is dropped silently. Truncation by the box is measured (renyiBoundaryShare).
//
// Divergent integrals (MATH.md §3, §6): R_alpha = +inf when int p^alpha q^(1-alpha) diverges outside any box, yet
// the box quadrature is finite. For Gaussians N(m1, S1), N(m2, S2) the integral is finite iff the precision of the
// integrand, P_alpha = alpha S1^-1 + (1 - alpha) S2^-1, is positive definite (MATH.md §6 states it as
// S_alpha = alpha S2 + (1 - alpha) S1 > 0: the same condition for alpha > 1, since P_alpha = S1^-1 S_alpha S2^-1, both
// pencils are positive definite at alpha = 1 and on an interval of alpha, and their determinants vanish together).
// Detection, per order, from a model of the far field (TailModel): least-squares quadratics fitted to log p and to
// log q over the cells where both are resolved (above the noise floor and 1e-30 of their maximum, outside the wall
// layers), whose Hessians -P_p, -P_q give P_alpha = alpha P_p + (1 - alpha) P_q by linearity. If the smallest
// eigenvalue of P_alpha is <= 0, the log-integrand does not decay along some direction (rotated ones included) and
// R_alpha is reported as +inf (RenyiStatus::InfiniteDetected; the box number is kept in renyiOnBox). The model is
// used only where both fitted laws decay within the box (their standard deviations along every direction below the
// box's half-widths); laws that fill the box (supported on it, or flat) say nothing about a far field, and laws
// with singular masses (projected onto a constraint set C inside the box, MATH.md §2.1) have none. Otherwise the
// integrand decays along every direction and the order is finite; if the wall cells' share of the integrand is not
// negligible (> kBoundaryShareTolerance) the box cuts part of it off: RenyiStatus::TruncatedSuspect (e.g. equal
// covariances with the tilted centre alpha m_p + (1 - alpha) m_q outside the box: the true R_alpha is larger). The
// model is exact for Gaussians and for the Gaussian-tailed laws of quadratic losses; for other laws it is the
// quadratic trend of the log-densities over the resolved region (docs/scheme.md §5), and near the order where
// P_alpha becomes singular its sign is only as good as the fitted Hessians (renyiTailPrecision reports it). The
// shell means of the integrand toward the walls (renyiTailLogMean) are reported as a diagnostic only: their growth
// is not a criterion (the mean over a shell parallel to the walls can grow toward the walls while the integrand
// decays along every direction, e.g. a wide rotated integrand whose ridge meets the shells at the corners).
//
// Further functionals (MATH.md §3; derivations and accuracy in docs/scheme.md §5), by the same rule:
//   d R_alpha/d alpha = KL(pi_alpha || p)/(alpha - 1)^2 = [ (alpha - 1) E'/E - log E ] / (alpha - 1)^2, pi_alpha the
//     tilted law q r^alpha/E, with E' = d E_alpha/d alpha = int q r^alpha log r written as int q g'_alpha(r),
//     g'_alpha(r) = r^alpha u - rho = expm1(alpha u) u + l1l(rho) >= 0 (no cancellation for tiny divergences);
//   I_alpha/E_alpha = int q r^alpha |grad u|^2 / int q r^alpha (and the Sigma-weighted form), grad u by
//     LogRatioGradient (fourth-order differences of u = log r); the singular masses (atoms, boundary bins) carry no
//     gradient in the ambient space: they enter E_alpha, not the numerator of I_alpha;
//   hockey-stick delta(eps) = int max(p - e^eps q, 0) (and with p, q exchanged) on an eps grid, summed as such, and
//     eps(delta) at given deltas by root-finding on the same sums (models::exactEpsilons, MATH.md §7: the smallest eps
//     with delta(eps) <= delta in each direction; not interpolated on the grid);
//   the reverse direction R_alpha(q || p), KL(q || p) (FunctionalSettings::reverseDirection): the same quadrature
//     with p and q exchanged, E_alpha(q || p) = int q^alpha p^(1 - alpha) with the same stable terms and checks;
//   the privacy-loss distribution: the histogram of log r(Theta), Theta ~ p (and of log(q/p), Theta ~ q).
// Cost: E_alpha, E', the scaled sums of the large-divergence branch and I_alpha share the value q r^alpha (series near
// r = 1, exp elsewhere), and equally spaced orders get it by a cancellation-free recurrence from one exp per cell
// (docs/scheme.md §5, "Cost"); the large-divergence branch is scaled by the global maximum M_alpha of
// log(|c| q) + alpha log r found in a cheap first pass, instead of a running log-sum-exp.
#include <petscvec.h>

#include <array>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "models/Dataset.hpp"
#include "models/DivergenceGrids.hpp"
#include "models/RdpConversion.hpp"
#include "meshes/FieldRepresentation.hpp"
#include "solver/functionals/LogRatioGradient.hpp"
#include "solver/functionals/LogRatioWorkspace.hpp"
#include "solver/functionals/PointValues.hpp"

namespace fpdp::solver {

struct DensityHealth {
  double mass = 0.0;          // sum |c| u_c + singular masses (raw, before normalisation)
  double singularMass = 0.0;  // the singular masses' part of `mass` (0 without a SingularMasses argument)
  double min = 0.0;           // smallest cell value
  double max = 0.0;
  long negativeCells = 0;
  bool finite = true;         // no NaN/Inf
  // The standard deviation of the density's cell mass along each axis (0 beyond the dimension): its width against
  // the cells of a mesh.
  meshes::AxisValues spread{};
  meshes::AxisValues mean{};  // of the cell mass along each axis
};

/// Masses of singular components of p and q (point masses, or bins of a measure on a lower-dimensional set such as
/// the boundary of the constraint set C of projected noisy GD), paired: p[j] and q[j] are the masses both densities
/// put on the same set j. Unnormalised, in the same units as sum |c| u_c. Every functional adds them in mass form:
/// for a set carrying masses P and Q of densities w.r.t. a common reference measure mu, int p^alpha q^(1-alpha) dmu
/// = P^alpha Q^(1-alpha) when the set is one bin (the reference measure cancels), and likewise for the others.
/// Replicated: the same values on every rank (each functional counts them once, on rank 0).
struct SingularMasses {
  std::vector<double> p, q;
  bool empty() const { return p.empty(); }
};

/// The histogram of a privacy loss L = log(p/q)(Theta), Theta ~ p (or of log(q/p), Theta ~ q): `mass[b]` is the
/// (normalised) probability of L in bin b = [lower + b w, lower + (b + 1) w), w = (upper - lower)/bins. The range is
/// that of the finite values of L over the cells (and atoms) that hold at least kPldMassFloor of the largest
/// cell mass (a range of width 1 centred on the value if they all share one value); the rare values beyond it are
/// counted in the end bins (their mass: clampedMass). The mass at L = +inf (q = 0 where p > 0; for the reverse
/// histogram p = 0 where q > 0, i.e. log(p/q) = -inf under q) is kept apart. The bins and that mass sum to 1 up to
/// the mass of the cells left out (negative q or p, underflowed cells; reported by DivergenceValues).
struct PrivacyLossHistogram {
  double lower = 0.0, upper = 0.0;
  std::vector<double> mass;
  double massInfinity = 0.0;
  double clampedMass = 0.0;
  double binWidth() const { return mass.empty() ? 0.0 : (upper - lower) / static_cast<double>(mass.size()); }
};

/// What DivergenceFunctionals computes besides KL, TV and R_alpha (which it always computes).
struct FunctionalSettings {
  std::vector<double> orders;          // Renyi orders (> 1), any order of appearance
  std::vector<double> hockeyStickEps;  // eps grid of delta(eps): ascending, >= 0 (empty: not computed)
  int privacyLossBins = 0;             // bins of each privacy-loss histogram (0: not computed)
  std::optional<models::Matrix> sigma; // noise covariance for I_alpha^Sigma (d x d SPD); none: identity
  // What the state holds: cell averages (reconstructed to point values, PointValues.hpp, before the midpoint rule)
  // or point values at the centres (chapman_kolmogorov: the midpoint rule applies to them directly).
  meshes::FieldRepresentation representation = meshes::FieldRepresentation::CellAverages;
  // The deltas at which eps(delta) is found by root-finding on delta(eps), both directions (MATH.md §7;
  // DivergenceValues::exactEpsilon). Each in (0, 1); empty: not computed.
  std::vector<double> epsilonDeltas{};
  // Also R_alpha(q || p) and KL(q || p) (DivergenceValues::reverse), for the privacy output's conversions, which need
  // the larger of the two directions (MATH.md §7).
  bool reverseDirection = false;
};

/// How far a computed R_alpha can be trusted (see the header comment).
enum class RenyiStatus {
  Finite,            // the wall cells hold a negligible share of the integrand
  InfiniteDetected,  // q = 0 where p > 0, or the fitted precision P_alpha of the integrand is not > 0: R_alpha = +inf
  TruncatedSuspect,  // a non-negligible share lies at the walls, without growth: the box underestimates R_alpha
  NoiseSuspect       // a non-negligible part of R_alpha rests on cells at the scheme's noise floor (renyiNoiseShare)
};
const char* renyiStatusName(RenyiStatus s);  // "finite", "infinite_detected", "truncated_suspect", "noise_suspect"

/// The divergences of the reverse direction, q against p (FunctionalSettings::reverseDirection): the same quadrature
/// with the roles of p and q exchanged, r = q/p (the per-order status as for the forward direction, from the tails
/// and the noise floor of q^alpha p^(1-alpha)). Empty vectors (and NaN) when not computed.
struct ReverseDivergences {
  double kl = std::numeric_limits<double>::quiet_NaN();  // KL(q || p)
  // Share of KL(q || p)'s integrand in the wall cells (as DivergenceValues::klBoundaryShare for KL(p || q)).
  double klBoundaryShare = 0.0;
  double klWallTail = std::numeric_limits<double>::quiet_NaN();  // as DivergenceValues::klWallTail
  std::vector<double> renyiWallTail;                              // as DivergenceValues::renyiWallTail
  std::vector<double> renyi;                              // R_alpha(q || p), one per order
  std::vector<RenyiStatus> renyiStatus;
  std::vector<double> renyiBoundaryShare;
  std::vector<double> renyiDepth;                                   // as DivergenceValues::renyiDepth
  double excludedMassQ = std::numeric_limits<double>::quiet_NaN();  // q-mass of the cells with p < 0, left out
};

/// eps(delta) of the pair at one delta (FunctionalSettings::epsilonDeltas), both directions: pq is the smallest eps
/// with int max(p - e^eps q, 0) <= delta, qp the same with p and q exchanged (models::exactEpsilons, MATH.md §7);
/// the pair's eps is pair.epsilon() = the larger.
struct ExactEpsilonAtDelta {
  double delta = 0.0;
  models::PairEpsilon pair;
};

struct DivergenceValues {
  DensityHealth p, q;
  // A bound on the time integrator's error in any cell value (raw units, both densities; 0 where none is estimated):
  // R_alpha's values at or below it are no better known than a negative one of that size (noiseFloors); for TV and
  // the hockey-stick sums it is a TV bound of each density (app/run/Certification.cpp).
  double stateErrorFloor = 0.0;
  double kl = 0.0;                     // KL(p || q)
  double tv = 0.0;                     // total variation distance
  // Share of KL(p || q)'s non-negative integrand in the cells touching the box walls. Above kBoundaryShareTolerance
  // the box cuts part of it off and KL is underestimated (as renyiBoundaryShare for R_alpha): not certified.
  double klBoundaryShare = 0.0;
  // What the box cuts off beyond its walls (docs/scheme.md §5, "Beyond the walls"): a bound on the integral of KL's
  // integrand outside the box (absolute), and per order on int p^alpha q^(1-alpha) outside it relative to E_alpha,
  // extrapolated from the wall cells and the layer inside them as a geometric series (a log-concave tail decays at
  // least that fast), with a factor 2 for the midpoint rule and the walls summed together. 0 where nothing reaches
  // the walls or the laws live on a constraint set inside the box; +inf where the integrand does not decay toward
  // the walls (nothing bounds the part beyond them).
  double klWallTail = 0.0;
  std::vector<double> renyiWallTail;
  // The same bound on the masses of p and of q beyond the walls (normalised): a TV bound of each density against the
  // law it stands for, which bounds what delta(eps), TV and eps(delta) miss there.
  std::array<double, 2> wallTailMass{0.0, 0.0};
  double excludedMassP = 0.0;          // normalised p-mass of the cells left out of KL and R_alpha (q < 0 there)
  std::vector<double> renyi;           // R_alpha(p || q), one per order
  std::vector<double> eAlphaMinusOne;  // E_alpha - 1 (may be +inf)
  // Share of int p^alpha q^(1-alpha) that lies in the cells touching the box walls, per order. A share that is
  // not negligible means the box truncates the integrand (its tilted centre alpha m_p + (1-alpha) m_q lies
  // near or outside the box) and R_alpha is underestimated: the run warns instead of trusting the number.
  std::vector<double> renyiBoundaryShare;
  // Per order: how far into the densities' tails the integrand p^alpha q^(1-alpha) peaks: at the cell of its largest
  // term, the largest |x_a - mean_a| / spread_a over the axes a and the two densities (0 without a regular term). The
  // accuracy estimate asks its companions to resolve that region (app/run/Certification).
  std::vector<double> renyiDepth;
  // Share of E_alpha in the cells whose p or q lies below kNoiseFloorFactor times the largest negative value of that
  // density (0 when neither has one): values there are no better known than the scheme's sign errors. The order is
  // NoiseSuspect when the part of R_alpha resting on them, -log(1 - share)/(alpha - 1), exceeds
  // kNoiseRelativeTolerance |R_alpha| + kNoiseAbsoluteTolerance.
  std::vector<double> renyiNoiseShare;
  // Cells where q underflowed to 0 while p is below 1e-200 of its maximum: numerically empty, left out (counted).
  long underflowCells = 0;
  std::vector<RenyiStatus> renyiStatus;  // per order (meaningless where renyi is NaN)
  std::vector<double> renyiOnBox;        // the box quadrature of R_alpha, also where renyi reports +inf
  // Per order: L_1..L_4, the log of the mean of p^alpha q^(1-alpha) over the tail shells, outermost first (-inf for
  // an empty shell or a mesh too coarse for the shells). A diagnostic: the status does not use it.
  std::vector<std::array<double, 4>> renyiTailLogMean;
  // Per order: the smallest eigenvalue of the fitted precision P_alpha = alpha P_p + (1 - alpha) P_q of the
  // integrand (the header comment); <= 0: InfiniteDetected. NaN where the fit was not possible or does not apply.
  std::vector<double> renyiTailPrecision;
  // The fitted precisions P_p, P_q of p and q (d x d, row-major; empty where the fit was not possible).
  std::vector<double> tailPrecisionP, tailPrecisionQ;

  // Per order (NaN where a density is not finite):
  std::vector<double> logEAlpha;        // log E_alpha = (alpha - 1) R_alpha (finite where E_alpha overflows)
  std::vector<double> dRenyiDAlpha;     // d R_alpha / d alpha (+inf where R_alpha is +inf)
  std::vector<double> informationRatio;       // I_alpha / E_alpha, I_alpha = E_q[r^alpha |grad log r|^2]
  std::vector<double> informationRatioSigma;  // I_alpha^Sigma / E_alpha (Sigma-weighted; = the above for Sigma = I)
  // Normalised p-mass of the cells whose gradient stencil meets p <= 0 or q <= 0 (left out of I_alpha).
  double informationExcludedMassP = 0.0;
  // delta(eps) on FunctionalSettings::hockeyStickEps: int max(p - e^eps q, 0) and int max(q - e^eps p, 0).
  std::vector<double> hockeyStickPQ, hockeyStickQP;
  // How far each of them can be judged (models::ExactEpsilonStatus codes: 0 as computed, 4 truncated_suspect, 5
  // noise_limited; docs/output.md, hockey_stick_accuracy.csv).
  std::vector<int> hockeyStickStatusPQ, hockeyStickStatusQP;
  // Privacy-loss distributions: log(p/q) under p, and log(q/p) under q (empty without bins).
  PrivacyLossHistogram privacyLossP, privacyLossQ;
  // eps(delta) at FunctionalSettings::epsilonDeltas, in that order (empty without them).
  std::vector<ExactEpsilonAtDelta> exactEpsilon;
  // q against p (FunctionalSettings::reverseDirection; empty otherwise).
  ReverseDivergences reverse;
  // Poisson sampling on a displacement lattice (PoissonLatticeMixture): the bounds, accumulated over the steps so
  // far, on TV between the computed p (q) and the one the exact batch mixture gives; set by the caller, absent
  // otherwise.
  std::optional<std::array<double, 2>> mixtureTvBound;
  // Noisy GD whose walls absorb (the mass the push-forward and the noise carry beyond the mesh is counted, not
  // reflected): the mass the box has cut off from p (q) so far, the initial mass outside it and every step's outflow.
  // The computed density is then the sub-probability of the paths that stayed in the box, below the process on R^d
  // by exactly that mass: a bound on their TV, like mixtureTvBound's. Set by the caller, absent otherwise.
  std::optional<std::array<double, 2>> absorbedMass;
  // Where the walls do not absorb: the mass of the initial density the box cut off (renormalised away). The start is
  // then off by that much in TV, and so, the dynamics being Markov, is every later density on that account: a TV bound
  // like absorbedMass's, of the start's share of the error (0 where the box holds the whole start; set by the caller).
  double startTruncation = 0.0;
};

/// The quadrature rule shared by every functional: weights = cell volumes of the owned cells.
class CellQuadrature {
public:
  explicit CellQuadrature(const meshes::DistributedBoxMesh& mesh) : mesh_(mesh) {}
  const std::vector<double>& weights() const { return mesh_.ownedVolumes(); }
  MPI_Comm comm() const { return mesh_.comm(); }
  int dim() const { return mesh_.dim(); }
  // For smooth integrands that decay inside the box: fourth order in the cell width, from the point-value
  // reconstruction (PointValues.hpp) followed by the midpoint rule, whose own error is then only boundary terms.
  static constexpr int order = 4;
private:
  const meshes::DistributedBoxMesh& mesh_;
};

class DivergenceFunctionals {
public:
  static constexpr int kTailShells = 4;                    // shells (3 increments, 2 convexity checks)
  static constexpr int kCellsPerShellDivisor = 32;         // shell thickness: N_min / 32 cell layers (>= 1)
  static constexpr double kBoundaryShareTolerance = 1e-6;  // wall share above which the box is suspect
  static constexpr double kNoiseFloorFactor = 10.0;         // noise-level cells: u <= this times max(-min u, 0)
  static constexpr double kNoiseRelativeTolerance = 1e-3;   // part of R_alpha resting on them, relative ...
  static constexpr double kNoiseAbsoluteTolerance = 1e-13;  // ... plus absolute (R_alpha = 0 at p = q)

  static constexpr double kTailFitFloor = 1e-10;   // cells in the tail fit: p, q above this share of their max
  static constexpr double kPldMassFloor = 1e-20;  // privacy-loss histogram range: cells above this share of the max

  /// Collective. Only R_alpha (with d R/d alpha, E_alpha, I_alpha), KL and TV.
  DivergenceFunctionals(const meshes::DistributedBoxMesh& mesh, std::vector<double> orders);
  /// Collective. The mesh must carry 2 fields (p, q). `workspace` (optional, on the same mesh): the point values and
  /// log-ratio gradient work vectors, shared with the run's other functionals; null: one of its own.
  DivergenceFunctionals(const meshes::DistributedBoxMesh& mesh, FunctionalSettings settings,
                        std::shared_ptr<LogRatioWorkspace> workspace = nullptr);
  ~DivergenceFunctionals();
  /// u holds p (field 0) and q (field 1) interlaced, as the DensityEvolution state.
  /// `singular` (optional) adds singular components (SingularMasses) to both densities.
  DivergenceValues evaluate(Vec u, const SingularMasses* singular = nullptr) const;
  /// The time integrator's error bound in any cell value of the states evaluated from now on (raw units; 0: none):
  /// DivergenceValues::stateErrorFloor.
  /// (const: it describes the states handed to evaluate, like the work arrays evaluate fills.)
  void setStateErrorFloor(double floor) const { stateErrorFloor_ = floor; }
  /// Same, from rank-local arrays of owned cells (used by tests and by evaluate). Collective.
  DivergenceValues evaluate(const double* p, const double* q, std::ptrdiff_t stride,
                            const SingularMasses* singular = nullptr) const;
  /// Frees the shared point values and gradient until the next evaluation (LogRatioWorkspace::release): for the end
  /// of an output step, once every functional of the state has read them.
  void releaseWork() const { work_->release(); }
  const std::vector<double>& orders() const { return orders_; }
  const std::vector<double>& hockeyStickEps() const { return settings_.hockeyStickEps; }
  const FunctionalSettings& settings() const { return settings_; }
  /// Why I_alpha cannot be computed on this mesh distribution (LogRatioGradient::unsupportedReason; the information
  /// ratios are then NaN), or "".
  const std::string& informationUnavailable() const { return work_->gradientUnavailable; }

private:
  /// Every functional of the point values held in work_->points (p field 0, q field 1), and the reverse direction's
  /// (FunctionalSettings::reverseDirection). Collective.
  DivergenceValues evaluateDirections(const SingularMasses* singular) const;
  /// One direction: p against q, or (reverse) q against p with only KL, R_alpha and their statuses. Collective.
  DivergenceValues evaluatePoints(const SingularMasses* singular, bool reverse) const;
  /// Masses, extrema, negative and non-finite cell counts of both densities (collective).
  void measureHealth(const double* p, const double* q, std::ptrdiff_t stride, const SingularMasses* singular,
                     DivergenceValues& out) const;

  CellQuadrature quadrature_;
  FunctionalSettings settings_;
  mutable double stateErrorFloor_ = 0.0;
  std::vector<double> orders_;
  models::Matrix sigma_;  // dim x dim
  std::shared_ptr<LogRatioWorkspace> work_;  // point values and grad log r (work_->gradient null: not available)
  // The stages of evaluatePoints (Divergences.cpp), in the order it runs them, and what they hand on. Their per-cell
  // arrays are locals of evaluatePoints, so that they do not stay allocated beside the time stepper's (peak memory,
  // docs/scaling.md §3, §6).
  struct Terms;            // per cell and singular mass the parts of the sums that cost logarithms, with this rank's
                           // KL, TV and excluded masses
  struct KinkCorrections;  // the kink corrections of TV and of the hockey-stick sums (HockeyStickKinks.hpp)
  struct OrderScales;      // per order the scale M_alpha of the large-divergence sums
  struct RenyiSumsPass;    // the per-order sums over the regular terms, block by block
  void markNotComputable(DivergenceValues& out, bool reverse) const;
  /// The terms' sources without their per-term arrays (what the weights |c| p, |c| q and the cells' places need).
  Terms termSources(const double* p, const double* q, std::ptrdiff_t stride, const SingularMasses* singular,
                    const std::array<double, 3>* gradient, double invMassP, double invMassQ) const;
  Terms measureTerms(const double* p, const double* q, std::ptrdiff_t stride, const SingularMasses* singular,
                     const std::array<double, 3>* gradient, double invMassP, double invMassQ, double maxP) const;
  /// `health`: the densities' means and spreads (measureHealth's), for the depth of each order's largest term.
  OrderScales orderScales(const Terms& terms, const DivergenceValues& health) const;
  std::vector<double> renyiSums(const Terms& terms, const OrderScales& scales) const;
  void tailLogMeans(const std::vector<double>& sums, const OrderScales& scales, DivergenceValues& out) const;
  std::vector<char> tailDivergence(const double* p, const double* q, std::ptrdiff_t stride,
                                   const SingularMasses* singular, DivergenceValues& out) const;
  void renyiFromSums(const std::vector<double>& sums, const OrderScales& scales, bool infinite, bool gradients,
                     DivergenceValues& out) const;
  void tailStatuses(const std::vector<char>& tailDiverges, DivergenceValues& out) const;
  void noiseFloorShares(const Terms& terms, const std::vector<double>& sums, const OrderScales& scales,
                        DivergenceValues& out) const;
  /// From the point values (the terms need not be held): the hockey-stick sums need only the weights |c| p, |c| q.
  /// `kinks`: open for p against q where the gradient's ghosted values exist (TV's); q against p is added here.
  void hockeyStickAndRoots(const double* p, const double* q, std::ptrdiff_t stride, const SingularMasses* singular,
                           double invMassP, double invMassQ, KinkCorrections& kinks, DivergenceValues& out) const;
  PrivacyLossHistogram privacyLossHistogram(const Terms& terms, int direction) const;
  struct OrderRun {
    std::size_t begin, end;  // positions in orderIndex_
    double delta;            // common gap of the orders in the run
  };
  std::vector<std::size_t> orderIndex_;  // orders_ sorted ascending
  std::vector<OrderRun> runs_;
  std::vector<char> onBoundary_;  // owned cells that touch a wall
  std::vector<char> nextToWall_;  // owned cells of the layer inside the wall cells (index distance 1 to a wall)
  /// renyiWallTail of the regular terms (collective); every order 0 for laws on a constraint set.
  std::vector<double> renyiWallTails(const Terms& terms, bool projected, const std::vector<double>& logE) const;
  std::vector<signed char> shell_;  // owned cell -> tail shell 0..kTailShells-1 (shell m + 1 of the header), or -1
  std::array<double, kTailShells> shellLogVolume_{};
  std::array<double, kTailShells> shellPosition_{};  // mean distance of the shell's cell centres to the walls
  bool tailTestPossible_ = false;  // every shell holds at least one cell
  // The tail fit: per owned cell whether it lies outside the wall layers (the shells' layer thickness); the cell
  // centres are scaled to [-1, 1]^d by the box's mid-point and half-widths.
  std::vector<char> fitInterior_;
  std::array<double, 3> fitMid_{0, 0, 0}, fitHalfWidth_{1, 1, 1};
  /// The fitted precisions -Hess log p, -Hess log q, and the fits' gradients grad log p, grad log q at the box's
  /// mid-point (collective; false when too few cells qualify).
  bool fitTailPrecisions(const double* p, const double* q, std::ptrdiff_t stride, double floorP, double floorQ,
                         models::Matrix& precisionP, models::Matrix& precisionQ, models::Vector& gradientP,
                         models::Vector& gradientQ) const;
  /// Whether the far-field model puts the peak of p^alpha q^(1 - alpha) where the quadrature cannot hold it: beyond
  /// the box, or where p or q lies below the double range (underflowed cells are left out): the box number is then an
  /// underestimate that agreeing meshes would otherwise certify (seen: R_30 8.6 on 48, 24 and 12 cells against 28.8).
  bool tiltedPeakUnresolved(double alpha, const models::Matrix& Pp, const models::Matrix& Pq,
                            const models::Vector& gp, const models::Vector& gq) const;
};

}  // namespace fpdp::solver
