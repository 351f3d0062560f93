#pragma once
// u(t + T) = exp(T A) u(t) for a constant operator A with real, non-positive spectrum, evaluated by the Chebyshev
// expansion of the exponential (docs/scheme.md §3, "Exponential integration"): no time-discretisation error, only a
// truncation below kChebyshevTruncation, and no linear solve, only products with A.
//
// Why the spectrum is real: the Scharfetter–Gummel operator of a Langevin problem with Sigma = D I satisfies
// detailed balance with the discrete Gibbs density pi = exp(-L/D) (docs/scheme.md §2): a_ij pi_j V_i = a_ji pi_i V_j,
// so W^-1 A W is symmetric for W = diag(sqrt(pi / V)), and A, similar to it, has real eigenvalues, all <= 0.
// ExponentialEvolution does not take this on trust: it measures the symmetry of W^-1 A W entry by entry and refuses
// an operator whose defect exceeds kDetailedBalanceTolerance (anisotropic noise, fourth-order fluxes).
//
// The expansion: with rho >= the spectral radius (min of ||A||_1 and ||A||_inf) and X = I + (2 / rho) A, whose
// spectrum lies in [-1, 1],
//   exp(T A) = e^{-c} [ I_0(c) + 2 sum_{k >= 1} I_k(c) T_k(X) ],     c = T rho / 2,
// (I_k: modified Bessel functions, T_k: Chebyshev polynomials; the sum by Clenshaw's recurrence). In the norm of
// W^-1 (sum u_i^2 V_i / pi_i: the chi^2 norm relative to the Gibbs density, which weights the tails heavily),
// |T_k(X)| <= 1, so truncating after K terms errs by at most 2 sum_{k > K} e^{-c} I_k(c) relative; K grows like
// sqrt(c), i.e. like sqrt(T rho), where an implicit integrator's work grows like the number of steps.
// The integrator jumps from output step to output step: the observer sees steps 0, every, 2 every, ..., steps.
//
// Operators without detailed balance (a full or diagonal non-isotropic Sigma: docs/scheme.md §3, "Operators without
// detailed balance"): no norm makes |T_k(X)| <= 1 known in advance, so the same expansion runs forward
// (T_(k+1) = 2 X T_k - T_(k-1), the sum accumulated term by term) and is checked a posteriori: with
// G = max_(j <= k) ||T_j(X) u||_inf / ||u||_inf the growth measured so far, it stops at the first k with
// G 2 sum_(j > k) e^{-c} I_j(c) <= kAposterioriTolerance, the estimate of the truncation error relative to
// ||u||_inf (it assumes the later terms grow no further than G: the tests compare it with a reference of a much
// tighter tolerance). If the coefficients run out first, or G exceeds kLargestGrowth (round-off would then reach the
// tolerance), the interval is done again in twice as many substeps: the growth of T_k(X) u comes from the parts of
// the spectrum off the real axis, and it shrinks with the substep. The coefficient not used, 1 - sum_(j <= k) c_j,
// goes to the last term, so that the mass (the eigenvalue 0, T_j(1) = 1) is kept to round-off.
//
// The positive series (uniformization; docs/scheme.md §3, "The positive series"): where such an operator is a Metzler
// matrix (every coupling off the diagonal >= 0: the fitted edges on a mesh that keeps Sigma dominant, the
// Scharfetter–Gummel star of a diagonal Sigma), P = I + A / c is non-negative for c >= max -a_ii, and
//   exp(T A) = e^{-cT} sum_k (cT)^k / k! P^k,
// a sum of non-negative terms: no cancellation, so every cell is known to a relative round-off (a few eps per
// term, with c = kUniformizationMargin max -a_ii keeping P's diagonal >= 1 - 1/margin), however far below the
// largest value it lies. The Chebyshev expansion knows a cell only to its tolerance relative to max |u|, and
// eps(delta) at a small delta, decided where one density is 10^-25 of its peak, fell below that (the noise floor).
// Truncation after term j errs by at most ||P^j u||_inf sum_(k > j) w_k g^(k - j), g = ||P||_inf = 1 + (largest
// row sum of A) / c: it stops where that is below kPositiveSeriesTolerance of max |u| (stateErrorBound adds it).
// Its cost grows like c T (an explicit step's), the Chebyshev expansion's like sqrt(rho T).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "solver/propagation/ClenshawWavefront.hpp"
#include "solver/discretisation/StencilOperator.hpp"
#include "solver/propagation/DensityPropagator.hpp"
#include "solver/discretisation/FokkerPlanckOperator.hpp"

namespace fpdp::solver {


/// Relative truncation error allowed per interval (in the norm above).
inline constexpr double kChebyshevTruncation = 1e-15;
/// Largest relative asymmetry |B_ij - B_ji| / max(|B_ij|, |B_ji|) of B = W^-1 A W accepted as detailed balance.
inline constexpr double kDetailedBalanceTolerance = 1e-10;

/// e^{-c} I_k(c) for k = 0, 1, ..., K, where K is the first index with 2 sum_{k > K} e^{-c} I_k(c) <= tolerance
/// (Miller's backward recurrence, normalised by e^c = I_0(c) + 2 sum_k I_k(c)). c >= 0.
std::vector<double> scaledBesselCoefficients(double c, double tolerance);

/// max over the off-diagonal entries of |B_ij - B_ji| / max(|B_ij|, |B_ji|) for B = W^-1 A W, W = diag(w); 0 for
/// a symmetric B; +inf if an entry is not finite. Collective.
double detailedBalanceDefect(Mat A, Vec w);

/// How far the expansion's error guarantee, made in the norm of W^-1 (the chi^2 norm relative to the Gibbs density),
/// is from the max norm for the state u: G = max_i W_i ||u / W||_2 / max_i |u_i|, per field, the larger. The
/// truncation (and the round-off of the recurrence) then err by up to about G times kChebyshevTruncation relative to
/// max |u|: G is 1 for the Gibbs density itself and grows without bound (to +inf when u / W overflows) for a state
/// with mass where the Gibbs density is negligible, e.g. a start in a region the potential makes improbable by
/// hundreds of orders of magnitude (a double well with small noise). Computed in logarithms. Collective.
double chiSquaredToMaxNormFactor(Vec w, Vec u, int fields);

/// The largest G accepted by solver.ts_type = "auto" for the exponential integrator: G kChebyshevTruncation <= 1e-9.
inline constexpr double kLargestNormFactor = 1e6;

/// Operators without detailed balance: the a posteriori truncation error allowed per substep, relative to max |u|
/// at its start; the truncation of the coefficient series (far below it, so that growing terms still find their
/// coefficients); the largest growth ||T_k(X) u|| / ||u|| accepted (the terms' rounding, about 1e-16 of it per
/// term, must stay below the tolerance) before the substep is halved.
inline constexpr double kAposterioriTolerance = 1e-12;
inline constexpr double kAposterioriSeriesTruncation = 1e-22;
inline constexpr double kLargestGrowth = 1e2;

/// The positive series: c = kUniformizationMargin max -a_ii, and the truncation relative to max |u| per interval.
inline constexpr double kUniformizationMargin = 1.25;
inline constexpr double kPositiveSeriesTolerance = 1e-60;
/// The largest c T of an output interval the positive series takes (beyond it the Chebyshev expansion does).
inline constexpr double kPositiveSeriesMostTerms = 1e6;

/// e^{-lambda} lambda^k / k! for k = 0, 1, ..., K, normalised to sum 1 (each from the mode outwards by the ratio
/// lambda / k, so that each is relatively accurate to about |k - mode| eps), K the first index past the mode with a
/// term below 1e-300 of the mode's and lambda growth / (K + 1) <= 1/2 (the terms weighted by growth^k then fall by
/// half or more). lambda >= 0, growth > 0.
std::vector<double> poissonWeights(double lambda, double growth = 1.0);

struct ExponentialSettings {
  double dt = 0.01;     // the case's step: defines the step numbers and times of the outputs
  long steps = 100;     // steps of the run
  long observeEvery = 1;  // the observer sees every observeEvery-th step and the last one
  // Operators without detailed balance: the a posteriori tolerance and the largest growth (tighter for references).
  double aposterioriTolerance = kAposterioriTolerance;
  double largestGrowth = kLargestGrowth;
  /// Operators without detailed balance that are Metzler matrices: the positive series (true) or the Chebyshev
  /// expansion (false: 4-10 times cheaper on the benchmark meshes, each cell known to its tolerance of the largest).
  bool positiveSeries = false;
};

class ExponentialEvolution final : public DensityPropagator {
public:
  /// Takes ownership of A. w: the symmetrising weights W (LangevinDiscretisation::setSymmetrisingWeights).
  /// Throws std::invalid_argument if W^-1 A W is not symmetric to kDetailedBalanceTolerance.
  ExponentialEvolution(const meshes::DistributedBoxMesh& mesh, meshes::MatHandle A, Vec w,
                       const ExponentialSettings& settings);
  /// The same for the operator op, whose star stencil is built from its rows (FokkerPlanckOperator::buildStencil)
  /// without an assembled matrix: the assembly, the stencil's read-back and the matrix form of the detailed-balance
  /// check cost 46 ms of a 256^2 run, twice the stencil's. Assembles the matrix only where the rows are not a star
  /// (then the check refuses the operator) or for -fpdp_exponential_aij.
  ExponentialEvolution(const meshes::DistributedBoxMesh& mesh, const FokkerPlanckOperator& op, Vec w,
                       const ExponentialSettings& settings);
  /// For any second-order operator op (star or box stencil), detailed balance or not: the forward expansion with
  /// its a posteriori error control (above). Throws std::invalid_argument for fourth-order fluxes.
  ExponentialEvolution(const meshes::DistributedBoxMesh& mesh, const FokkerPlanckOperator& op,
                       const ExponentialSettings& settings);
  ~ExponentialEvolution() override;

  void run(Vec u, const Observer& observer, double startTime = 0.0) override;
  void resume(Vec u, const Observer& observer, const IntegratorState& state) override;
  IntegratorState captureState() const override;
  void requireCheckpointable() const override {}
  void stopAfter(long step) override { stopAfter_ = step; }
  std::string describe() const override;
  long stepsTaken() const override { return step_; }

  /// rho, the bound on the spectral radius of A used by the expansion.
  double spectralBound() const { return rho_; }
  /// The measured detailed-balance defect of A (see detailedBalanceDefect).
  double detailedBalanceDefectOfA() const { return defect_; }
  /// Terms of the expansion of a full interval (observeEvery steps, or the whole run if shorter), and products with A
  /// over the last run.
  long termsPerInterval() const;
  long operatorProducts() const { return products_; }
  /// u <- exp(T A) u.
  void propagate(Vec u, double T);
  /// The forward expansion with a posteriori control (third constructor): the largest estimated truncation error of
  /// an interval relative to max |u| at its start, the most substeps an interval took, over the last run; 0 otherwise.
  double errorEstimate() const { return errorEstimate_; }
  /// The forward expansion's truncation errors summed over the intervals so far, each times max |u| at its start: a
  /// bound on the error of any cell value (the a posteriori path only; 0 otherwise).
  double stateErrorBound() const override { return stateError_; }
  long substeps() const { return substeps_; }
  bool aposteriori() const { return aposteriori_; }
  /// Whether the positive series propagates (a Metzler operator without detailed balance).
  bool positiveSeries() const { return positiveSeries_; }

private:
  void checkSettings() const;
  void initialiseFromMatrix(Vec w);  // A_ set: its check, bound, stencil form and work vectors
  void checkDetailedBalance() const;  // throws std::invalid_argument if defect_ exceeds the tolerance
  void createWavefront();     // the Clenshaw passes' stencil form (several ranks: its deep ghost layer)
  void createWorkVectors();   // for one call of propagate
  void releaseWorkVectors();
  void applyOperator(Vec x, Vec y);  // y = A x: by the stencil, MatMult where there is none
  void advance(Vec u, const Observer& observer, long fromStep, double startTime);
  const std::vector<double>& coefficients(double T) const;  // e^{-c} I_k(c) for an interval T, cached
  // The forward expansion over T with a posteriori control, in substeps as needed (errors accumulate in the estimate).
  void propagateWithEstimate(Vec u, double T);
  // One substep tau of it: false (u spoiled) where the estimate cannot reach the tolerance; estimate += its estimate.
  bool forwardExpansion(Vec u, double tau, double& estimate);
  // The positive series over T (one interval, no substeps); the truncation bound (absolute) goes to stateError_.
  void propagatePositiveSeries(Vec u, double T);
  const std::vector<double>& poissonWeightsFor(double T) const;  // poissonWeights(c T), cached
  // The Chebyshev term of the stencil: t <- scale A x + 2 x - t, s += weight t; returns max |t|. Collective.
  double chebyshevStep(Vec x, Vec t, Vec s, double scale, double weight);
  const meshes::DistributedBoxMesh& mesh_;
  meshes::MatHandle A_;  // null when built from the rows: the stencil is the operator
  ExponentialSettings settings_;
  double rho_ = 0.0;
  double defect_ = 0.0;
  mutable std::map<double, std::vector<double>> coefficients_;  // by interval length
  bool positiveSeries_ = false;
  double uniformRate_ = 0.0;  // c of the positive series
  double maxNormGrowth_ = 1.0;  // g = ||P||_inf
  meshes::VecHandle previous_, current_, product_;  // b_(k+2), b_(k+1) of the Clenshaw recurrence; A b_1
  long step_ = 0;
  double time_ = 0.0;
  long stopAfter_ = -1;
  long products_ = 0;
  std::unique_ptr<StencilOperator> stencil_;  // A in stencil form for the fused term (null: PETSc's MatMult)
  std::unique_ptr<ClenshawWavefront> wavefront_;  // the terms on the stencil, several per pass
  bool aposteriori_ = false;  // the forward expansion with a posteriori control
  meshes::VecHandle start_;   // its interval's start, for a retry in more substeps
  double errorEstimate_ = 0.0;
  double stateError_ = 0.0;  // stateErrorBound
  long substeps_ = 0;
  std::vector<double> norms_;  // ||T_k(X) u|| / ||u|| of the last substep, k = 0, 1, ...
  meshes::VecHandle ghosted_;  // several ranks: the input of applyOperator with its ghost layer
};

}  // namespace fpdp::solver
