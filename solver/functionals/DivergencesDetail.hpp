// Private to the sources of DivergenceFunctionals: the nested types of its passes and the helpers they share.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "solver/functionals/Divergences.hpp"
#include "solver/functionals/HockeyStickKinks.hpp"
#include "solver/functionals/LogRatioWorkspace.hpp"

namespace fpdp::solver {

/// |grad u|^2 and grad u^T Sigma grad u of one cell's gradient (grad: d components); false where either is not
/// finite (a stencil cell has p <= 0 or q <= 0: log r has no gradient there).
inline bool gradientForms(const double* grad, int dim, const models::Matrix& sigma, double& g2, double& gs) {
  g2 = 0.0, gs = 0.0;
  for (int a = 0; a < dim; ++a) {
    g2 += grad[a] * grad[a];
    for (int b = 0; b < dim; ++b) gs += grad[a] * sigma(a, b) * grad[b];
  }
  return std::isfinite(g2) && std::isfinite(gs);
}

/// Pass 2 of evaluatePoints: the terms of one evaluation, a cell (weight its volume) or a singular mass (weight 1,
/// on rank 0, after the cells), normalised, and this rank's parts of the sums that need no order. Compact, 25 B a
/// term (records of every per-term value, 64 B, were the largest item of an output step's peak memory,
/// docs/scaling.md §6): the kind, whether r is near 1, and the three values that cost logarithms, log r,
/// l1l(rho) = log1p(rho) - rho and log(|c| q). The rest is recomputed from the point values by the expressions
/// measureTerms uses, so it has the same bits: the weights |c| p, |c| q, |grad u|^2 and its Sigma form, the cell's
/// wall and shell.
struct DivergenceFunctionals::Terms {
  enum Kind : unsigned char { Skip, Regular, PZero, Infinite };
  static constexpr unsigned char kKindBits = 3, kNearOne = 4;  // flags: the kind, |rho| < 1/2 (the series forms)
  // Where the terms come from.
  const double *p = nullptr, *q = nullptr;  // raw point values, stride apart
  std::ptrdiff_t stride = 1;
  const double* volume = nullptr;
  std::size_t cells = 0;
  const SingularMasses* singular = nullptr;
  double invMp = 1.0, invMq = 1.0;
  const std::array<double, 3>* gradient = nullptr;  // grad u per cell; null: none (every cell left out of I_alpha)
  int dim = 1;
  const models::Matrix* sigma = nullptr;
  const char* onBoundary = nullptr;
  const char* nextToWall = nullptr;
  const signed char* shell = nullptr;
  // Per term.
  std::vector<unsigned char> flags;
  std::vector<double> u, l1l, logWq;  // log r, l1l(rho) (near r = 1), log(|c| q); 0 where not computed
  // This rank's order-free sums.
  double kl = 0.0, tv = 0.0, excludedP = 0.0, excludedInfoP = 0.0;
  double klWall = 0.0;    // the part of kl in the cells touching a wall
  double klNext = 0.0;    // the part of kl in the layer inside them
  long underflow = 0;     // cells left out as numerically empty (DivergenceValues::underflowCells)
  bool infinite = false;  // q = 0 where p > 0

  std::size_t count = 0;  // cells, then the singular masses on rank 0
  std::size_t size() const { return count; }
  Kind kind(std::size_t i) const { return static_cast<Kind>(flags[i] & kKindBits); }
  bool nearOne(std::size_t i) const { return (flags[i] & kNearOne) != 0; }
  bool boundary(std::size_t i) const { return i < cells && onBoundary[i] != 0; }
  bool nextLayer(std::size_t i) const { return i < cells && nextToWall[i] != 0; }
  int shellOf(std::size_t i) const { return i < cells ? shell[i] : -1; }
  double pRaw(std::size_t i) const { return i < cells ? p[i * stride] : singular->p[i - cells]; }
  double qRaw(std::size_t i) const { return i < cells ? q[i * stride] : singular->q[i - cells]; }
  double weight(std::size_t i) const { return i < cells ? volume[i] : 1.0; }
  double pc(std::size_t i) const { return std::max(pRaw(i), 0.0) * invMp; }  // negatives enter as 0
  double qc(std::size_t i) const { return std::max(qRaw(i), 0.0) * invMq; }
  double wp(std::size_t i) const { return weight(i) * pc(i); }
  double wq(std::size_t i) const { return weight(i) * qc(i); }
  /// |grad u|^2 and its Sigma form of a regular term: 0 for singular masses (no gradient in the ambient space) and
  /// for cells whose gradient is not finite or not available (left out of I_alpha's numerators).
  void gradientTerms(std::size_t i, double& g2, double& gs) const {
    if (i >= cells || !gradient || !gradientForms(gradient[i].data(), dim, *sigma, g2, gs)) g2 = gs = 0.0;
  }
};

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// A bound on the integral beyond the walls of a non-negative integrand whose wall cells sum to `wall` and the layer
/// inside them to `next`: with rho = wall/next < 1 the cells beyond would sum to at most wall (rho + rho^2 + ...) if
/// the integrand is log-concave there (its decay per cell only grows outward); twice that for the midpoint rule's
/// error on a convex tail and for walls of different decay summed together. +inf where it does not decay.
inline double wallTailBound(double wall, double next) {
  if (!(wall > 0.0)) return 0.0;
  if (!(next > wall)) return kInf;
  const double rho = wall / next;
  return 2.0 * wall * rho / (1.0 - rho);
}

/// The per-order sums of DivergenceFunctionals::renyiSums, one array of 8 K + S values (K orders, S = K kTailShells):
/// [0,K) E_alpha - 1 (stable), [K,2K) its wall part, [2K,3K) E' (stable), [3K,4K) S0 = sum |c| q r^alpha e^-M,
/// [4K,5K) its wall part, [5K,6K) sum of the same times u, [6K,7K) times |grad u|^2, [7K,8K) times the Sigma form,
/// [8K, 8K+S) the shells (scaled by their own max).
template <typename T>
struct SumArrays {
  T *em1, *em1Wall, *dE, *S0, *S0Wall, *S1, *SI, *SIS, *shellSum;
  SumArrays(T* s, std::size_t K)
      : em1(s), em1Wall(s + K), dE(s + 2 * K), S0(s + 3 * K), S0Wall(s + 4 * K), S1(s + 5 * K), SI(s + 6 * K),
        SIS(s + 7 * K), shellSum(s + 8 * K) {}
};

/// The noise floors of p and q (docs/scheme.md §5, "Noise floor"): kNoiseFloorFactor times the size of each
/// density's most negative value (0 without one: signErrorFloors), or the time integrator's error bound where that
/// is larger (noiseFloors); values at or below them are no better known than the sign errors. The hockey-stick sums
/// take the sign errors' floors only: the integrator's bound, an error bound of every cell, enters the accuracy
/// contract as a TV bound of each density (app/run/Certification.cpp, densityTvBound), which moves delta(eps) and
/// the eps(delta) roots by what it can (where a floor only flags them).
inline std::pair<double, double> signErrorFloors(const DivergenceValues& v) {
  return {DivergenceFunctionals::kNoiseFloorFactor * std::max(-v.p.min, 0.0),
          DivergenceFunctionals::kNoiseFloorFactor * std::max(-v.q.min, 0.0)};
}
inline std::pair<double, double> noiseFloors(const DivergenceValues& v) {
  return {std::max(DivergenceFunctionals::kNoiseFloorFactor * std::max(-v.p.min, 0.0), v.stateErrorFloor),
          std::max(DivergenceFunctionals::kNoiseFloorFactor * std::max(-v.q.min, 0.0), v.stateErrorFloor)};
}

/// The kink corrections of TV and of the hockey-stick sums (HockeyStickKinks.hpp, MATH.md §7) need the neighbours'
/// point values: those of the gradient's ghosted vector, held open as long as the corrections. Where that vector does
/// not exist (a rank owns fewer than 2 cells along an axis) the sums stay the plain midpoint sums, second order
/// (docs/scheme.md §5): `kinks` stay empty.
struct DivergenceFunctionals::KinkCorrections {
  std::optional<HockeyStickKinks> kinks[2];  // p against q, and q against p
  Vec v = nullptr;
  const PetscScalar* a = nullptr;

  KinkCorrections() = default;
  KinkCorrections(const KinkCorrections&) = delete;
  KinkCorrections& operator=(const KinkCorrections&) = delete;
  ~KinkCorrections() {
    if (v) VecRestoreArrayRead(v, &a);
  }
  /// p against q (TV needs it, and the hockey-stick sums later).
  void open(const LogRatioWorkspace& work, double invMp, double invMq) {
    const Vec ghosted = work.gradient->ghostedPoints();
    FPDP_PETSC(VecGetArrayRead(ghosted, &a));
    v = ghosted;
    kinks[0].emplace(*work.mesh, a, work.gradient->ghostedBlock(), invMp, invMq, false);
  }
  /// q against p too (the hockey-stick sums), once open.
  void openExchanged(const LogRatioWorkspace& work, double invMp, double invMq) {
    if (v) kinks[1].emplace(*work.mesh, a, work.gradient->ghostedBlock(), invMp, invMq, true);
  }
};

/// Pass 3 of evaluatePoints: per order, the global maximum M_alpha of log(|c| q) + alpha log r over the regular terms
/// (and per tail shell), the scale of the large-divergence sums, so that one exp per term and order suffices.
struct DivergenceFunctionals::OrderScales {
  std::vector<double> globalMax;  // K orders, then per order its kTailShells shells; -inf: no regular term
  std::vector<double> logScale, scale, invScale;  // M_alpha (0 without a regular term), e^M, e^-M
  std::vector<double> shellFactor;  // per order and shell: e^(M_alpha - the shell's maximum)
  std::vector<char> shellDirect;    // the shell is summed by exp of its own terms, not from the order's scaled ones
  std::vector<double> rescale;      // e^(M_k - M_next), next the order after k in its run (the far-branch recurrence)
  std::vector<double> depth;        // per order: DivergenceValues::renyiDepth
};

}  // namespace fpdp::solver
