#pragma once
// Statistics that confront Monte Carlo samples (validation/MonteCarloSampler) with the density solver, on bins: the
// mesh cells (mass P_i = |c_i| p_i of the solver's cell averages, normalised) followed by any singular bins (boundary
// masses of a projected case, in the solver's bins: solver::BoundaryBins, counted by the sampler with
// BoundaryBins::projectedPointBin; app/commands/SampleCase.cpp appends them after the cells for every statistic below). The solver's log-ratio log r = log(p/q) is constant on
// each bin (r_i = P_i / Q_i), so every estimate below is a function of the bin counts: no particle is stored.
// Confidence levels are two-sided, 1 - gamma; z = Phi^{-1}(1 - gamma/2) from Boost.Math.
//
// 1. Density check (compareHistogram): with n_i counts out of N and the solver's masses P_i,
//    L1 = sum_i |n_i/N - P_i| + |n_out/N - P_out| (TV = L1/2; P_out = mass the solver does not hold, 0 here).
//    Band: under the null (samples drawn from P) E[L1] = sum_i E|n_i - N P_i| / N, each term the exact mean absolute
//    deviation of a Binomial(N, P_i) (de Moivre: E|X - Np| = 2 v (1-p)^(N-v+1)... see the .cpp), and L1 changes by at
//    most 2/N when one sample moves, so McDiarmid gives P(L1 >= E L1 + t) <= exp(-N t^2 / 2): band
//    E[L1] + sqrt(2 log(1/gamma) / N). Above the band = the solver's discretisation error is resolved by the sample.
//    Pearson chi-square over the bins whose expected count N P_i >= 5 (the rest pooled into one bin), with its
//    p-value from the chi-square law of (bins - 1) degrees of freedom.
//    The density check is the verdict of `fpdp sample` (HistogramAgreement::agrees; exit status 1 on any failure).
// 2. Divergences from the solver's log-ratio averaged over samples (estimateDivergences). Not independent of what it
//    checks: the samples enter only through sum_i (n_i/N) log r_i with the SOLVER's r_i, whose expectation differs
//    from the solver's own cell sum by sum_i (P_i^true - P_i) log r_i, first order in the density error weighted by
//    log r (a density error where log r is flat, e.g. a symmetric one, is invisible). Reported as a consistency
//    diagnostic; the density check above is what can fail on a wrong solver:
//    KL ~ (1/N) sum_{theta_j ~ p} log r(theta_j),   E_alpha ~ (1/N) sum_{theta_j ~ q} r(theta_j)^alpha,
//    with the CLT interval +- z s/sqrt(N) (s the sample standard deviation); R_alpha = log(E_alpha)/(alpha - 1)
//    through the interval's ends (monotone). Their expectations are the bin sums sum_i P_i log r_i and
//    sum_i Q_i r_i^alpha of the TRUE bin masses; with the solver's masses these are the cell-midpoint quadratures
//    (reported as `binKl`, `binRenyi`), which differ from the solver's fourth-order quadrature by its O(h^2)
//    discretisation: an estimate is judged against the quadrature value within z s/sqrt(N) + |bin - quadrature|.
//    Particles off the mesh have no r: they are left out and counted.
//    Heavy tails: Var_q(r^alpha) = E_{2 alpha} - E_alpha^2 grows like exp((2 alpha - 1) R_{2 alpha}), so for large
//    orders the sample misses the region that dominates E_alpha and its own standard deviation s is far too small.
//    `eAlphaPredictedStandardError` is sqrt((sum_i Q_i r_i^(2 alpha) - (sum_i Q_i r_i^alpha)^2)/N) from the solver's
//    masses (the true error if the samples follow the solver); agreement is judged with the larger of the two, and
//    `eAlphaTailUnsampled` flags s < predicted/10: the estimate then says nothing about E_alpha.
// 3. Histogram plug-in estimates (from the D and D' histograms only): KL^ = sum_i p^_i log(p^_i/q^_i) and
//    E^_alpha = sum_i p^_i^alpha q^_i^(1-alpha) over the bins where both counts are > 0 (the excluded p-mass is
//    reported). They estimate the divergence of the binned laws, which is <= the true divergence (data
//    processing: a coarse-graining bias <= 0). Sampling bias, to first order in 1/N (delta method, independent
//    multinomials): E[KL^] - KL_bins = [ (K - 1) + (sum_i p_i/q_i - 1) ] / (2N),  K = number of bins used;
//    E[E^_alpha] - E_alpha = alpha (alpha - 1)/(2N) sum_i [ p_i^(alpha-1) q_i^(1-alpha) (1 - p_i)
//                                                           + p_i^alpha q_i^(-alpha) (1 - q_i) ] (> 0),
//    evaluated at the plug-in values (reported, and subtracted in the `corrected` values).
// 4. Membership-inference audit (audit): the Neyman–Pearson test "theta came from D" when log r(theta) >= t, on the
//    sampled last iterates of D (positives) and D' (negatives). At M thresholds t_m (quantiles of the solver's p-mass
//    over the bins ordered by r), TPR^ and FPR^ with Clopper–Pearson intervals at level 1 - gamma/(2M) each
//    (Bonferroni over thresholds and the two rates: the band holds for the whole curve at once). The exact curve:
//    TPR(t) = sum_{r_i >= e^t} P_i, FPR(t) = sum Q_i from the solver's masses; `exactOutsideBand` counts thresholds
//    where it leaves the band. (eps, delta)-DP of the pair implies TPR <= e^eps FPR + delta and
//    1 - FPR <= e^eps (1 - TPR) + delta, so eps >= log((TPR_lo - delta)/FPR_hi) and
//    eps >= log((1 - delta - FPR_hi)/(1 - TPR_lo)) at every threshold: the maximum is a lower bound on eps holding
//    with probability >= 1 - gamma. The exact eps(delta) is the root of the hockey-stick curve
//    delta(eps) = sum_i max(P_i - e^eps Q_i, 0) (MATH.md §3), the larger of the orders (p||q) and (q||p): computed
//    here from the bin masses directly, boundary bins included (the functionals' hockey-stick API is not on this
//    branch; once solver/functionals/Divergences has it, it must be given the boundary bins as SingularMasses too).
#include <cstdint>
#include <vector>

namespace fpdp::validation {

struct Interval {
  double estimate = 0.0, lower = 0.0, upper = 0.0, standardError = 0.0;
};

double normalQuantileTwoSided(double confidence);  // z with P(|Z| <= z) = confidence

struct HistogramAgreement {
  std::int64_t samples = 0;
  double l1 = 0.0, tv = 0.0;
  double l1Expected = 0.0;  // E[L1] if the samples were drawn from the solver's masses
  double l1Band = 0.0;      // E[L1] + sqrt(2 log(1/gamma)/N)
  bool withinBand = false;
  double chiSquare = 0.0;
  int degreesOfFreedom = 0;
  double pValue = 0.0;
  double outsideFraction = 0.0;  // n_out / N
  // The verdict (docs/validation.md §Monte Carlo): L1 within its band and the chi-square p-value >= 1 - confidence.
  // Both compare the sample's counts with the solver's masses only, so a density error larger than the sampling
  // error at this N fails it whatever the solver's divergences are.
  bool agrees = false;
};

/// counts: per bin; outside: samples in no bin; mass: the solver's per-bin masses (normalised to 1 here).
HistogramAgreement compareHistogram(const std::vector<std::int64_t>& counts, std::int64_t outside,
                                    const std::vector<double>& mass, double confidence);

struct DivergenceEstimates {
  Interval kl;                       // average of log r over the D samples
  std::vector<Interval> eAlpha;      // average of r^alpha over the D' samples
  std::vector<Interval> renyi;       // log(E_alpha)/(alpha - 1) with the transformed interval
  std::vector<double> eAlphaPredictedStandardError;  // from the solver's masses (see the header)
  std::vector<bool> eAlphaTailUnsampled;
  double binKl = 0.0;                // sum_i P_i log r_i: what kl estimates if the samples follow the solver
  std::vector<double> binRenyi;      // log(sum_i Q_i r_i^alpha)/(alpha - 1)
  std::int64_t samplesWithoutRatio[2] = {0, 0};  // off the mesh (or in a bin where p or q is 0), D and D'
  // Plug-in (histograms only).
  double pluginKl = 0.0, pluginKlBias = 0.0, pluginKlCorrected = 0.0;
  std::vector<double> pluginRenyi, pluginRenyiBias, pluginRenyiCorrected;
  double pluginExcludedMassP = 0.0;
  int pluginBins = 0;
};

DivergenceEstimates estimateDivergences(const std::vector<std::int64_t>& countsP, std::int64_t totalP,
                                        const std::vector<std::int64_t>& countsQ, std::int64_t totalQ,
                                        const std::vector<double>& massP, const std::vector<double>& massQ,
                                        const std::vector<double>& orders, double confidence);

/// delta(eps) = sum_i max(P_i - e^eps Q_i, 0) on normalised bin masses (MATH.md §3).
double hockeyStick(const std::vector<double>& massP, const std::vector<double>& massQ, double eps);
/// The smallest eps >= 0 with delta(eps) <= delta, for the order (P||Q) (models::exactEpsilons: root-finding to
/// 1e-10 relative; +inf if the mass of P where Q = 0 exceeds delta).
double epsilonAtDelta(const std::vector<double>& massP, const std::vector<double>& massQ, double delta);

struct AuditPoint {
  double logRatioThreshold = 0.0;
  double tpr = 0.0, tprLower = 0.0, tprUpper = 0.0;
  double fpr = 0.0, fprLower = 0.0, fprUpper = 0.0;
  double tprExact = 0.0, fprExact = 0.0;
  double epsilonLowerBound = 0.0;  // from this threshold's interval ends (-inf if none)
};

struct AuditResult {
  std::vector<AuditPoint> curve;
  double delta = 0.0;
  double epsilonLowerBound = 0.0;  // max over thresholds (simultaneous level 1 - gamma)
  double epsilonPointEstimate = 0.0;  // the same from the point estimates (no guarantee)
  double epsilonExact = 0.0;          // max of eps_{p||q}(delta), eps_{q||p}(delta) from the solver's masses
  int exactOutsideBand = 0;           // thresholds where the exact TPR or FPR leaves its Clopper–Pearson band
};

/// Clopper–Pearson interval of a binomial proportion x/n at two-sided level `confidence`.
Interval clopperPearson(std::int64_t x, std::int64_t n, double confidence);

AuditResult audit(const std::vector<std::int64_t>& countsP, std::int64_t totalP,
                  const std::vector<std::int64_t>& countsQ, std::int64_t totalQ, const std::vector<double>& massP,
                  const std::vector<double>& massQ, double delta, double confidence, int thresholds = 64);

}  // namespace fpdp::validation
