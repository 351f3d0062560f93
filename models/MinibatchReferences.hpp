#pragma once
// Closed forms of minibatch noisy SGD (MATH.md §8), the exact references of the minibatch solver (exact.csv, tests).
// Unconstrained only: Pi_C breaks both forms.
//  (a) Cyclic batches on the quadratic loss l = (lambda/2)|theta - x|^2 without clipping: T_B is affine,
//        T_B(theta) = a_B theta + (eta lambda / b) sum_{i in B} x_i,   a_B = 1 - eta lambda |B| / b,
//      so a Gaussian start stays Gaussian (MATH.md §6 with A = lambda |B|/b, changing with the batch):
//        m <- a_B m + (eta lambda / b) sum_{i in B} x_i,   V <- a_B^2 V + 2 eta Sigma.
//  (b) Poisson batches on a loss whose per-example gradient does not depend on theta, grad l(theta; x_i) = g_i
//      (the linear loss -<x, theta>: g_i = -x_i; clipped when the loss clips): T_B translates by
//      -(eta / b) sum_{i in B} g_i, so
//        theta_K = theta_0 - (eta / b) sum_i c_i g_i + N(0, 2 eta K Sigma),   c_i ~ Binomial(K, gamma) independent,
//      a lattice mixture of Gaussians with the one covariance V_0 + 2 eta K Sigma. Records with equal g_i are one
//      group (their counts add up to a Binomial(r K, gamma)), and lattice points that coincide are merged.
//  Batches (which records, the divisor b, where D''s differing record sits): models/MinibatchSchedule.hpp.
//  Divergences between two such mixtures (1-D): MixturePair1d below.
#include <cstddef>
#include <optional>
#include <vector>

#include "models/Gaussian.hpp"
#include "models/Loss.hpp"
#include "models/MinibatchSchedule.hpp"

namespace fpdp::models {

/// sum_j w_j N(means_j, covariance): components with one covariance.
struct GaussianMixture {
  std::vector<double> weights;  // positive, summing to 1
  std::vector<Vector> means;
  Matrix covariance;
  int dim() const { return static_cast<int>(covariance.rows()); }
  std::size_t size() const { return weights.size(); }
  double density(const Vector& x) const;
  Gaussian component(std::size_t j) const { return Gaussian(means[j], covariance); }
};

/// (a) above: the laws of D's and D''s iterates after k cyclic steps.
class CyclicQuadraticReference {
public:
  /// A reference when both losses are the unclipped quadratic loss with one lambda (nullopt otherwise).
  static std::optional<CyclicQuadraticReference> forLosses(const EmpiricalLoss& lossD, const EmpiricalLoss& lossDPrime,
                                                           const CyclicBatches& batches, double divisor, double eta,
                                                           const Matrix& Sigma, const Gaussian& initial);
  Gaussian lawP(long k) const { return law(0, k); }
  Gaussian lawQ(long k) const { return law(1, k); }

private:
  CyclicQuadraticReference(double lambda, std::vector<Vector> batchSums[2], CyclicBatches batches, double divisor,
                           double eta, Matrix Sigma, Gaussian initial);
  Gaussian law(int process, long k) const;
  double lambda_;
  std::vector<Vector> batchSums_[2];  // sum_{i in B} x_i per batch and process
  CyclicBatches batches_;
  double divisor_, eta_;
  Matrix Sigma_;
  Gaussian initial_;
  /// The recursion's state after the last k asked, per process: the callers ask for one step's law several times
  /// and for increasing steps, so a later k continues from here instead of from step 0. Not for concurrent use.
  struct Iterate {
    long k = -1;  // none yet
    Vector m;
    Matrix V;
  };
  mutable Iterate last_[2];
};

/// The per-example gradients g_i of an empirical loss whose gradient does not depend on theta (an expression loss
/// whose gradient expressions name no theta<k>), clipped when the loss clips; nullopt for any other loss.
std::optional<std::vector<Vector>> constantPerExampleGradients(const EmpiricalLoss& loss);

/// (b) above: the laws of D's and D''s iterates after k Poisson steps.
class PoissonShiftReference {
public:
  /// The most lattice points enumerated before merging (prod over groups of (r K + 1)); lawP/lawQ throw beyond.
  static constexpr double kMaxLatticePoints = 2e6;
  /// A reference when both losses have constant per-example gradients (nullopt otherwise).
  static std::optional<PoissonShiftReference> forLosses(const EmpiricalLoss& lossD, const EmpiricalLoss& lossDPrime,
                                                        double rate, double divisor, double eta, const Matrix& Sigma,
                                                        const Gaussian& initial);
  GaussianMixture lawP(long k) const { return law(0, k); }
  GaussianMixture lawQ(long k) const { return law(1, k); }
  /// Whether law(k) stays within kMaxLatticePoints.
  bool enumerable(long k) const;

private:
  struct Group {
    Vector gradient;
    long records;
  };
  PoissonShiftReference(std::vector<Group> groups[2], double rate, double divisor, double eta, Matrix Sigma,
                        Gaussian initial);
  GaussianMixture law(int process, long k) const;
  std::vector<Group> groups_[2];
  double rate_, divisor_, eta_;
  Matrix Sigma_;
  Gaussian initial_;
};

/// A value computed by quadrature with a bound on its error (the difference from the same rule on panels twice as
/// wide, plus the bound on the truncated tails).
struct QuadratureValue {
  double value;
  double errorBound;
};

/// Divergences between two 1-D mixtures p, q with one variance s^2 (MATH.md §3, §7), both directions.
///   KL(p||q) = int p (r + e^-r - 1) and E_alpha - 1 = int p (e^{(alpha-1) r} - 1 + (alpha-1)(e^-r - 1)), r = log p/q,
///   pointwise non-negative forms (so nearby laws keep their digits; series where |r| is small), by composite
///   16-point Gauss–Legendre on panels of width s/2 over [lo - T s, hi + T s]: lo, hi the extreme centres of the
///   integrand (for E_alpha those of p^alpha q^{1-alpha}, alpha a_j - (alpha - 1) b_l), T = 14 and widened until the
///   truncated tails' bound (Jensen on p^alpha, q >= v_l N(b_l): sum_j w_j min_l v_l^{1-alpha}
///   e^{alpha (alpha-1)(a_j - b_l)^2 / (2 s^2)} times the Gaussian tails beyond the ends) is below 1e-15 E_alpha.
///   delta(eps) = P(A) - e^eps Q(A), A = {r > eps}: no quadrature; the end points of A are the sign changes of
///   r - eps on a grid of spacing s/32 over [lo - 14 s, hi + 14 s], bisected to 1e-13 s, and P(A), Q(A) are sums of
///   normal interval probabilities. Two crossings closer than s/32 are not resolved (their sliver is missed); A's
///   pieces outside the grid are the half-lines beyond its ends, with the sign of r - eps there.
class MixturePair1d {
public:
  /// p and q 1-D with the same variance; throws std::invalid_argument otherwise.
  MixturePair1d(const GaussianMixture& p, const GaussianMixture& q);
  QuadratureValue kl() const;
  QuadratureValue renyi(double alpha) const;  // alpha > 1
  double tv() const { return hockeyStick(0.0); }
  double hockeyStick(double eps) const;       // delta_{p,q}(eps) = int (p - e^eps q)_+, eps >= 0
  /// The pair exchanged: (q, p).
  MixturePair1d reversed() const { return MixturePair1d(q_, p_, s_); }
  /// log p(x) - log q(x).
  double logRatio(double x) const;

private:
  struct Mixture {
    std::vector<double> logWeight, mean;
    bool sorted = false;       // means ascending: sums over the terms look only where they can matter
    double topLogWeight = 0;   // the largest log weight
    void index();              // sets sorted and topLogWeight
  };
  MixturePair1d(Mixture p, Mixture q, double s);
  void scan();
  double logKernelSum(const Mixture& m, double x) const;  // log sum_j w_j exp(-(x - mu_j)^2 / (2 s^2))
  Mixture p_, q_;
  double s_;
  std::vector<double> gridX_, gridR_;  // the root scan's grid and r on it
};

/// eps(delta) of the pair (MATH.md §7): the larger of the two directions' smallest eps with delta(eps) <= delta.
double mixtureExactEpsilon(const MixturePair1d& pair, double delta);

}  // namespace fpdp::models
