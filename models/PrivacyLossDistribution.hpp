#pragma once
// The composition accountant of Poisson-subsampled DP-SGD (MATH.md §8): the privacy loss distribution (PLD) of the
// subsampled Gaussian mechanism, discretised on a uniform loss grid L = i h, composed K times by FFT convolution
// (repeated squaring), and delta(eps) / eps(delta) from it (Koskela, Jälkö, Honkela 2020; Meiser, Mohammadi 2018;
// Doroshenko, Ghazi, Kamath, Kumar, Manurangsi 2022 as in dp_accounting's pld module).
//
// A pair (P, Q) has the privacy loss L = log(dP/dQ) under P and the hockey-stick profile
//   delta(eps) = E_P[(1 - e^(eps - L))_+] = P(L > eps) - e^eps Q(L > eps)   (+ the P-mass where Q = 0).
// The K-fold composition of a pair has the K-fold convolution of its PLD; its delta(eps) is read off the same way.
// Two discretisations bracket the truth at every eps (for every K):
//  - pessimistic (an upper bound): connect-the-dots. Each likelihood ratio X = e^L under Q is split between its two
//    neighbouring grid ratios e^(i h), e^((i+1) h), keeping E_Q[X] (a mean-preserving spread); ratios above the top
//    node go to +infinity (the mass at infinity, counted whole in delta). delta(eps) = E_Q[(X - e^eps)_+] is convex
//    in X, so a spread raises it; the K-fold product of independent spreads is a spread of the product, so the bound
//    survives composition. Its profile is the linear interpolation of the true one in e^eps between grid points.
//  - optimistic (a lower bound): privacy buckets. The outputs are grouped into intervals of L whose ratio
//    P(bucket)/Q(bucket) is exactly a grid ratio e^(i h) (a post-processing of the mechanism, chosen interval by
//    interval), so the grouped pair is dominated by the true one and stays so under composition; the last bucket's
//    ratio is rounded down to the grid. Mass dropped (below the grid) only lowers delta.
// Composition truncates the tails below tailMass per side after every convolution: pessimistically (the upper tail
// to +infinity, the lower tail up onto the first kept loss), optimistically (the upper tail down onto the last kept
// loss, the lower tail dropped). The FFT's round-off is bounded per convolution (eps_mach log2(N) |a|_2 |b|_2 per
// entry, times a safety factor) and added to the pessimistic mass at infinity; the gap between the two discretisations
// is the accounting's error, and it grows where delta nears the tail cuts and the round-off (about 1e-11).
//
// The subsampled Gaussian mechanism, add/remove neighbours, noise scaled to 1 and shift mu (mu = C / (z C) = 1/z for
// DP-SGD with clip norm C and noise multiplier z), sampling rate gamma in (0, 1]:
//   remove (the record is in D):  P = (1 - gamma) N(0,1) + gamma N(mu,1)  against  Q = N(0,1);
//   add    (the record is in D'): P = N(0,1)  against  Q = (1 - gamma) N(0,1) + gamma N(mu,1).
// Each pair dominates the d-dimensional mechanism (rotate the record's clipped gradient onto the first axis; the other
// axes are pure noise shared by both). The add/remove eps is the larger of the two directions (MATH.md §7).
// gamma = 1 is the full-batch Gaussian mechanism: mu sqrt(K)-GDP (models/GaussianComposition) with the grid's error.
#include <cstddef>
#include <vector>

namespace fpdp::models {

/// A privacy loss distribution on the grid L = (offset + i) h, i = 0 .. mass.size() - 1, masses under P; plus the
/// P-mass at L = +infinity. The P-mass at -infinity (left out) is 1 minus the total.
struct DiscretePld {
  double h = 1e-4;
  long offset = 0;
  std::vector<double> mass;
  double infinityMass = 0.0;

  /// delta(eps) = sum_i mass_i (1 - e^(eps - L_i))_+ + infinityMass.
  double delta(double eps) const;
  /// The smallest eps >= 0 with delta(eps) <= delta (exact on the piecewise profile, rounded up); +inf when the mass
  /// at infinity exceeds delta.
  double epsilon(double delta) const;
};

enum class PldBound { Pessimistic, Optimistic };

/// The direction of the add/remove pair (see the file comment).
enum class SubsampledDirection { Remove, Add };

/// The discretisation's settings: the grid width of L and the tail mass cut per side.
struct PldGrid {
  double h = 1e-4;
  double tailMass = 1e-20;
};

/// The PLD of one Poisson-subsampled Gaussian mechanism (shift mu, rate gamma) in one direction.
DiscretePld subsampledGaussianPld(double mu, double gamma, SubsampledDirection direction, PldBound bound,
                                  const PldGrid& grid);

/// The PLD of the composition of two mechanisms (same h) by FFT convolution, tails cut as the bound says.
DiscretePld composePld(const DiscretePld& a, const DiscretePld& b, PldBound bound, double tailMass);

/// The K-fold composition by repeated squaring (K >= 1).
DiscretePld selfComposePld(const DiscretePld& single, long K, PldBound bound, double tailMass);

/// delta(eps) of the one-step pair in closed form (erfc; MATH.md §6 style): P(L > eps) - e^eps Q(L > eps).
double subsampledGaussianDelta(double mu, double gamma, SubsampledDirection direction, double eps);

/// The privacy loss of the pair at the Gaussian coordinate x (the output), and the output's density under P and Q.
struct SubsampledGaussianPair {
  double mu, gamma;
  SubsampledDirection direction;
  double loss(double x) const;
  double densityP(double x) const;
  double densityQ(double x) const;
};

/// The accountant's answer for one delta: the certified eps (pessimistic) and the optimistic one; their gap is the
/// discretisation's accuracy. Both are the larger of the two directions.
struct PldEpsilon {
  double pessimistic;
  double optimistic;
};

/// The composition of K Poisson-subsampled Gaussian mechanisms under add/remove neighbours, eps at each delta, on
/// the grid pldGridFor gives unless one is given.
std::vector<PldEpsilon> subsampledGaussianEpsilons(double mu, double gamma, long K, const std::vector<double>& deltas);
std::vector<PldEpsilon> subsampledGaussianEpsilons(double mu, double gamma, long K, const std::vector<double>& deltas,
                                                   const PldGrid& grid);

/// The same accountant along a run: the composition after K steps, kept and extended for a later K (one power by
/// repeated squaring and one convolution per call), recomputed from the start for an earlier K.
class SubsampledGaussianAccountant {
public:
  SubsampledGaussianAccountant(double mu, double gamma, const PldGrid& grid);
  std::vector<PldEpsilon> epsilons(long K, const std::vector<double>& deltas);

private:
  double mu_, gamma_;
  PldGrid grid_;
  long steps_ = 0;
  std::vector<DiscretePld> single_, composed_;  // per (direction, bound): one step and K steps (empty at K = 0)
  std::vector<DiscretePld> increment_;          // per (direction, bound): incrementSteps_ steps composed
  long incrementSteps_ = 0;
};

/// The grid subsampledGaussianEpsilons uses: h a hundredth of one step's loss spread gamma mu, so the bracket's gap
/// stays near 2e-5 relative whatever K; tails cut at 1e-15 per side and convolution.
PldGrid pldGridFor(double mu, double gamma);

/// RDP of one Poisson-subsampled Gaussian mechanism at an integer order alpha >= 2 (Mironov, Talwar, Zhang 2019,
/// Sec. 3.3): log( sum_k C(alpha,k) (1-gamma)^(alpha-k) gamma^k exp((k^2 - k) mu^2 / 2) ) / (alpha - 1), a bound on
/// both directions. An independent upper bound for the tests.
double subsampledGaussianRdp(double mu, double gamma, int alpha);

}  // namespace fpdp::models
