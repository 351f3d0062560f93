#pragma once
// Coupled tracing diffusions between two noisy-GD steps (MATH.md §2.2, CYS Sec. 3.1, Lemma 1; docs/tracing.md).
//
// With U1 = (g_D + g_D')/2, U2 = (g_D - g_D')/2 and s in [0, eta] (s = t - eta k):
//   p_s  = (psi_s  # p_k)  * N(0, 2 s Sigma),   psi_s  = id - eta U1 - s U2,
//   p'_s = (psi'_s # p'_k) * N(0, 2 s Sigma),   psi'_s = id - eta U1 + s U2,
//   V_s p_s   =  (psi_s  # (U2 p_k))  * N(0, 2 s Sigma),
//   V'_s p'_s = -(psi'_s # (U2 p'_k)) * N(0, 2 s Sigma)       (vector-valued measures, component by component).
// At s = eta, psi_eta = T_D and psi'_eta = T_D': p_eta, p'_eta are the noisy-GD step's densities. At s = 0 they are
// phi # p_k, phi # p'_k with phi = id - eta U1 (the shared map, post-processing).
//
// Discretisation:
//   * psi_s is pushed by PushForward with the gradient field G_s = ((1 + s/eta) g_D + (1 - s/eta) g_D')/2, so that
//     psi_s = id - eta G_s; at s = eta, G_eta = 1 * g_D + 0 * g_D' = g_D bitwise: the tracing densities at s = eta are
//     the noisy-GD step's (NoisyGradientDescent, DiffusionMethod::ExactConvolution) to the last bit.
//   * The diffusion is the exact convolution (GaussianConvolution) with N(0, 2 s diag(Sigma)): diagonal Sigma only
//     (the Fokker–Planck heat solver is not used here; it is linear, so a co-transport there would need no new
//     construction, but this cross-check does not need it).
//   * U2 p_k is represented by the cell values U2(c_i) p_k,i (U2 at the cell centre: the midpoint rule, second-order
//     accurate cell averages of U2 p_k for smooth U2 and p_k) and is co-transported with p_k through the push-forward
//     and the convolution: each source cell spreads its U2 mass with the density's within-cell shape
//     (PushForward::coTransport, GaussianConvolution::coTransport). Hence every V_s = (U2 p)_s / p_s cell value is a
//     convex combination of the centre values U2(c_i) (to round-off): V_s = U2 exactly where U2 is constant, and
//     |V_s| <= max_i |U2(c_i)|, so |V_s - V'_s| <= max_i |g_D(c_i) - g_D'(c_i)|, the discrete Lemma 4, holds to
//     round-off on every mesh. Pointwise V_s is first order in h where psi_s stretches (the ratio is piecewise
//     constant within each source cell; second order for translations and for integrals of V_s p_s against smooth
//     functions).
//   * V_s is undefined (NaN) where p_s < undefinedBelow * max p_s (default 1e-12): there the ratio of two round-off
//     sized numbers means nothing. Such cells are excluded from every drift statistic.
//
// Whole fields (natural order, x fastest) on every rank, like the push-forward of NoisyGradientDescent; setStart
// with a FieldGatherer gathers them from the interlaced (p, q) state.
#include <array>
#include <limits>
#include <vector>

#include "meshes/BoxMesh.hpp"
#include "solver/noisygd/GaussianConvolution.hpp"
#include "solver/noisygd/NoisyGradientDescent.hpp"
#include "solver/noisygd/PushForward.hpp"

namespace fpdp::solver {

struct TracingSettings {
  double eta = 0.1;
  std::array<double, 3> noiseVariance{1, 1, 1};  // diagonal of Sigma (the per-step noise is N(0, 2 eta Sigma))
  double undefinedBelow = 1e-12;                 // V is NaN where p_s < undefinedBelow * max p_s
  /// Lemma 4 bound S_g/n supplied by the caller (the cells where |V - V'| exceeds it are counted); +inf: no check.
  double lemma4Bound = std::numeric_limits<double>::infinity();
  /// The check allows |V - V'| <= lemma4Bound * (1 + lemma4RelativeTolerance). The co-transport makes V, V' convex
  /// combinations of centre values of U2 exactly, so the only tolerance needed is for round-off in the ratio of the
  /// co-transported sums; 1e-10 is > 10^4 times the largest excess measured (docs/tracing.md §4).
  double lemma4RelativeTolerance = 1e-10;
};

/// The tracing pair at one intermediate time s.
struct TracingState {
  double s = 0.0;
  std::vector<double> p, pPrime;  // p_s, p'_s: cell averages, natural order
  std::vector<double> v, vPrime;  // V_s, V'_s: dim() components per cell, v[cell * dim + a]; NaN where undefined
  CoTransportOutflow pushP, pushPPrime;            // push-forward outflows (density, then the U2 p components)
  CoTransportOutflow diffusionP, diffusionPPrime;  // convolution outflows (empty passive lists at s = 0)
  double massP = 0.0, massPPrime = 0.0;            // sum |c| p_s
  /// |mass(p_s) + reported outflow - mass(p_k)| / mass(p_k), and the same for p'.
  double massErrorP = 0.0, massErrorPPrime = 0.0;
  /// Conservation of the drift measures: max over components and both pairs of
  /// |int V_s p_s + outflow - int U2 p_k| / int |U2| p_k  (the passive masses are pushed linearly).
  double driftMassError = 0.0;
  long definedP = 0, definedPPrime = 0;  // cells where V, V' are defined
  long definedBoth = 0;                  // cells where both are: the Lemma 4 check runs over these
  double supV = 0.0, supVPrime = 0.0;    // max |V_s|, |V'_s| (Euclidean) where defined
  double supGap = 0.0;                   // sup over definedBoth of |V_s - V'_s| (Lemma 4 check quantity)
  double lemma4Bound = 0.0;              // the caller's bound (settings)
  long cellsAboveBound = 0;              // cells with |V - V'| > lemma4Bound (1 + lemma4RelativeTolerance)
};

class TracingDiffusion {
public:
  TracingDiffusion(const meshes::BoxMesh& mesh, GradientField gradientD, GradientField gradientDPrime,
                   const TracingSettings& settings);

  /// The densities after step k (whole fields, natural order, cell averages): p_k (dataset D) and p'_k (D').
  void setStart(std::vector<double> p, std::vector<double> pPrime);
  /// The same, gathered from the interlaced state u (p field 0, p' field 1) of gatherer's mesh. Collective.
  void setStart(const FieldGatherer& gatherer, Vec u);

  /// The tracing pair at s in [0, eta] (setStart first).
  TracingState at(double s) const;
  /// At s_j = j eta / m, j = 1..m (s_m = eta exactly).
  std::vector<TracingState> run(int m) const;

  /// U2 at the cell centres, U2(c)[a] = u2()[cell * dim + a].
  const std::vector<double>& u2() const { return u2_; }
  /// max over cell centres of |g_D - g_D'| = 2 max |U2(c)|: the bound the discrete V, V' satisfy by construction.
  double discreteLemma4Bound() const { return discreteBound_; }
  const std::vector<double>& cellVolumes() const { return volumes_; }
  const TracingSettings& settings() const { return settings_; }

private:
  const meshes::BoxMesh& mesh_;
  GradientField gD_, gDPrime_;
  TracingSettings settings_;
  std::vector<double> volumes_;
  std::vector<double> u2_;
  double discreteBound_ = 0.0;
  std::vector<double> pk_, pkPrime_;
  std::vector<std::vector<double>> wk_, wkPrime_;  // U2 p_k, U2 p'_k per component (cell averages)
  double mass0_ = 0.0, mass0Prime_ = 0.0;
  std::vector<double> wMass0_, wMass0Prime_, wAbsMass0_, wAbsMass0Prime_;
};

}  // namespace fpdp::solver
