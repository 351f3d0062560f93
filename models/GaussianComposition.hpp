#pragma once
// The accountants' baseline (MATH.md §8): the (eps, delta) of the mechanism that releases every iterate of noisy GD
// (or the whole path of Langevin diffusion), by the exact composition of Gaussian mechanisms. One noisy-GD step with
// noise N(0, 2 eta Sigma) and a mean-gradient difference of norm at most S_g/n is a Gaussian mechanism of
// mu = eta (S_g/n) / sqrt(2 eta lambda_min(Sigma)); K adaptive steps compose to mu sqrt(K)-GDP (Dong, Roth, Su 2019),
// and Langevin over [0, t] is the limit, mu = (S_g/n) sqrt(t) / sqrt(2 lambda_min(Sigma)). mu-GDP has the privacy
// profile delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (Balle, Wang 2018), in both directions alike;
// eps(delta) is its root. This is what PLD accountants (dp_accounting, Opacus) give for full-batch DP-SGD without
// subsampling, up to their discretisation: the CYS Figure 1 setting (noise multiplier z = 1/mu = 250, delta = 1e-5)
// gives 0.125422 at K = 100, 0.440066 at 1000, 1.55498 at 10^4, 5.75948 at 10^5.

namespace fpdp::models {

/// mu of the composition over [0, t] (t = eta K for noisy GD): (S_g/n) sqrt(t) / sqrt(2 lambda_min(Sigma)).
double gaussianCompositionMu(double gap, double t, double lambdaMinSigma);

/// delta(eps) of mu-GDP, without cancellation for small delta (the second term in log space).
double gdpDelta(double mu, double eps);

/// The smallest eps >= 0 with gdpDelta(mu, eps) <= delta, to 1e-12 relative; 0 for mu = 0, +inf for mu = inf.
double gdpEpsilon(double mu, double delta);

}  // namespace fpdp::models
