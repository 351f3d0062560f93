#pragma once
// Closed forms for the divergence functionals of MATH.md §3 between Gaussians, used as test oracles beside
// gaussianRenyi/gaussianKL (models/Gaussian.hpp).
#include <functional>

#include "models/Dataset.hpp"

namespace fpdp::models {

/// I_alpha^Sigma / E_alpha for p = N(m1, S1), q = N(m2, S2) (Sigma = I: the Euclidean I_alpha/E_alpha), alpha > 1.
/// Derivation: grad log r(x) = b - B x with B = S1^-1 - S2^-1, b = S1^-1 m1 - S2^-1 m2, and q r^alpha / E_alpha is
/// the Gaussian with precision P = alpha S1^-1 + (1 - alpha) S2^-1 and mean mu = P^-1 (alpha S1^-1 m1 +
/// (1 - alpha) S2^-1 m2), so I^Sigma/E = E_mu,P[(b - B x)^T Sigma (b - B x)] = (b - B mu)^T Sigma (b - B mu) +
/// tr(B Sigma B P^-1). Equal covariances S: |S^-1 (m1 - m2)|^2_Sigma (MATH.md §6). NaN when P is not positive
/// definite (then E_alpha = +inf).
double gaussianInformationRatio(const Vector& m1, const Matrix& S1, const Vector& m2, const Matrix& S2, double alpha,
                                const Matrix& Sigma);

/// Hockey-stick divergence delta(eps) = int max(p - e^eps q, 0) for p = N(m1, S1), q = N(m2, S2), eps >= 0.
/// Equal covariances (any d): Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), mu^2 = dm^T S^-1 dm (MATH.md §6),
/// evaluated as [Phi(b) - Phi(a)] - expm1(eps) Phi(a) with the interval probability by Gauss–Legendre when b - a = mu
/// is small, so tiny mu keeps its digits. d = 1 with unequal variances: {p > e^eps q} is where a quadratic is positive
/// (an interval or the complement of one), delta = P(A) - e^eps Q(A) by normal CDFs. d = 2 with unequal covariances:
/// the integral over y of the 1-D values of the conditional laws of x given y (weighted by the marginals of y), by
/// tanh-sinh between the tangencies of the lines y = const to the curve p = e^eps q (relative accuracy ~1e-13,
/// checked against a 2-D case with equal covariances computed this way). Throws for d = 3 with unequal covariances.
double gaussianHockeyStick(const Vector& m1, const Matrix& S1, const Vector& m2, const Matrix& S2, double eps);

/// Whether gaussianHockeyStick is a closed form of normal CDFs (equal covariances, or d = 1), cheap enough for a root
/// finder; the 2-D line integral is not (milliseconds per value).
bool gaussianHockeyStickIsCheap(const Matrix& S1, const Matrix& S2);

/// eps(delta) of the pair of Gaussians (MATH.md §7): the larger of the two directions' smallest eps >= 0 with
/// delta(eps) <= delta, each by bisection on gaussianHockeyStick to a relative width of 1e-13 (0 where TV <= delta).
/// Needs gaussianHockeyStickIsCheap; delta in (0, 1).
double gaussianExactEpsilon(const Vector& m1, const Matrix& S1, const Vector& m2, const Matrix& S2, double delta);

/// The smallest eps >= 0 with hockeyStick(eps) <= delta, for a non-increasing hockey-stick curve delta(eps) of one
/// direction (MATH.md §7): 0 where hockeyStick(0) <= delta, else bracketed by doubling from eps = 1 (+infinity past
/// 1e6) and bisected to a relative width of 1e-13.
double smallestEpsilon(const std::function<double(double)>& hockeyStick, double delta);
/// P(Z > z) for Z ~ N(0, 1) by erfc, relatively accurate far in the upper tail; Phi(z) = normalUpperTail(-z).
double normalUpperTail(double z);
/// The standard normal density phi(z).
double normalDensity(double z);
/// Phi(b) - Phi(a) for a <= b, the standard normal probability of [a, b], with relative accuracy for narrow intervals.
double normalIntervalProbability(double a, double b);

}  // namespace fpdp::models
