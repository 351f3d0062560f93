#pragma once
// The per-example gradients of the closed-form losses (models/Loss.hpp) for W parameter points at once, in structure
// of arrays (theta[a * W + p] is component a of point p): the lane form of QuadraticLoss::gradientInto,
// LogisticLoss::gradientInto and clipToNormInPlace, written as plain loops over the lanes without branches so that
// the compiler vectorises them (the Monte Carlo sampler's inner loop, validation/MonteCarloSampler.cpp, compiles them
// for several instruction sets). The operations and their order are those of the scalar forms, so the quadratic
// terms and the clipping give the scalar bits; the logistic term differs from the scalar one only through
// branchFreeSigmoid in place of the scalar sigmoid with std::exp (tests/models/test_loss_lanes.cpp bounds both).
#include <bit>
#include <cmath>
#include <cstdint>

namespace fpdp::models {

/// The argument reduction of branchFreeExp after fdlibm's e_exp.c, for x in [-708.39, 709]: x = n ln 2 + hi - lo
/// with r = hi - lo, |r| <= ln(2)/2 (Cody and Waite's two-part ln 2: n ln2Hi is exact for |n| < 2^21), scale = 2^n
/// built in the exponent bits, and fdlibm's c = r - r^2 R(r^2) (its degree-5 minimax polynomial, error below 2^-59),
/// with which e^r = 1 + r + r c / (2 - c) = (2 + 2r - c) / (2 - c).
struct ExpReduction {
  double scale, hi, lo, r, c;
};
[[gnu::always_inline]] inline ExpReduction reduceExp(double x) {
  constexpr double kLog2e = 1.4426950408889634074, kShift = 0x1.8p52;
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;  // fdlibm's split
  constexpr double P1 = 1.66666666666666019037e-01, P2 = -2.77777777770155933842e-03,
                   P3 = 6.61375632143793436117e-05, P4 = -1.65339022054652515390e-06,
                   P5 = 4.13813679705723846039e-08;
  const double shifted = x * kLog2e + kShift;  // n + 1.5 2^52: n = round(x / ln 2) in the low mantissa bits
  const double n = shifted - kShift;
  ExpReduction e;
  e.hi = x - n * kLn2Hi;
  e.lo = n * kLn2Lo;
  e.r = e.hi - e.lo;
  const double t = e.r * e.r;
  e.c = e.r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
  const std::int64_t exponent = std::bit_cast<std::int64_t>(shifted) - std::bit_cast<std::int64_t>(kShift) + 1023;
  e.scale = std::bit_cast<double>(exponent << 52);
  return e;
}

/// e^x for x in [-708.39, 709] (arguments outside are clamped to it) without branches: fdlibm's final step
/// 1 - ((lo - r c / (2 - c)) - hi) on reduceExp. Against std::exp on 2 x 10^6 points of the domain: at most 1 ulp
/// (tests/models/test_loss_lanes.cpp). A rational form: a chain half as long as a Taylor polynomial of the same
/// accuracy (degree 13), which measured 1.4 times slower in the sampler's loop.
[[gnu::always_inline]] inline double branchFreeExp(double x) {
  x = x < -708.39 ? -708.39 : x;
  x = x > 709.0 ? 709.0 : x;
  const ExpReduction e = reduceExp(x);
  return (1.0 - ((e.lo - (e.r * e.c) / (2.0 - e.c)) - e.hi)) * e.scale;
}

/// sigmoid(z) = 1 / (1 + e^{-z}) as models/Loss.cpp's sigmoid (the exponent kept non-positive: 1 / (1 + e^{-z}) for
/// z >= 0, e^z / (1 + e^z) below) with one division: e^{-|z|} = 2^n A / B, B = 2 - c, A = B + 2r (reduceExp),
/// so sigmoid = B / (B + 2^n A) or 2^n A / (B + 2^n A). The division is the sampler's bottleneck, hence not two.
/// Against a long-double reference: within 3 ulp (tests/models/test_loss_lanes.cpp; the scalar sigmoid with std::exp
/// is itself up to about 1.5 ulp off).
[[gnu::always_inline]] inline double branchFreeSigmoid(double z) {
  const double exponent = -std::fabs(z);
  const ExpReduction e = reduceExp(exponent < -708.39 ? -708.39 : exponent);  // no upper clamp needed: <= 0
  const double denominator = 2.0 - e.c, numerator = (denominator + 2.0 * e.r) * e.scale;
  return (z >= 0 ? denominator : numerator) / (denominator + numerator);
}

/// term = grad l(theta; x) of QuadraticLoss (lambda (theta - x)) for the W points theta.
template <int W>
[[gnu::always_inline]] inline void quadraticTermLanes(double lambda, const double* x, int d,
                                                      const double* __restrict theta, double* __restrict term) {
  for (int a = 0; a < d; ++a)
    for (int p = 0; p < W; ++p) term[a * W + p] = lambda * (theta[a * W + p] - x[a]);
}

/// term = grad l(theta; x, y) of LogisticLoss (-y sigmoid(-y <theta, x>) x + mu theta) for the W points theta;
/// margin is work space of W doubles.
template <int W>
[[gnu::always_inline]] inline void logisticTermLanes(double mu, const double* x, double y, int d,
                                                     const double* __restrict theta, double* __restrict term,
                                                     double* __restrict margin) {
  for (int p = 0; p < W; ++p) margin[p] = 0.0;
  for (int a = 0; a < d; ++a)
    for (int p = 0; p < W; ++p) margin[p] += theta[a * W + p] * x[a];
  for (int p = 0; p < W; ++p) margin[p] = -y * branchFreeSigmoid(-(margin[p] * y));  // the weight
  for (int a = 0; a < d; ++a)
    for (int p = 0; p < W; ++p) term[a * W + p] = margin[p] * x[a] + mu * theta[a * W + p];
}

/// grad += grad l(theta; x, y) of LogisticLoss for the W points theta, unclipped: logisticTermLanes and the sum fused
/// in one pass over the lanes (the same operations, so the same bits), D the dimension; muTheta = mu theta, the
/// regulariser's part of every record's term, computed once by the caller.
template <int W, int D>
[[gnu::always_inline]] inline void addLogisticTermLanes(const double* x, double y, const double* __restrict theta,
                                                        const double* __restrict muTheta, double* __restrict grad) {
  for (int p = 0; p < W; ++p) {
    double margin = 0.0;
    for (int a = 0; a < D; ++a) margin += theta[a * W + p] * x[a];
    const double weight = -y * branchFreeSigmoid(-(margin * y));
    for (int a = 0; a < D; ++a) grad[a * W + p] += weight * x[a] + muTheta[a * W + p];
  }
}

/// CLIP_C of each of the W vectors term (clipToNormInPlace: unchanged when the norm is <= C, else scaled by C/norm);
/// norm is work space of W doubles.
template <int W>
[[gnu::always_inline]] inline void clipLanes(double clipNorm, int d, double* __restrict term,
                                             double* __restrict norm) {
  for (int p = 0; p < W; ++p) norm[p] = 0.0;
  for (int a = 0; a < d; ++a)
    for (int p = 0; p < W; ++p) norm[p] += term[a * W + p] * term[a * W + p];
  for (int p = 0; p < W; ++p) {
    const double n = std::sqrt(norm[p]);
    norm[p] = n <= clipNorm ? 1.0 : clipNorm / n;  // times 1.0 is exact: the unclipped terms keep their bits
  }
  for (int a = 0; a < d; ++a)
    for (int p = 0; p < W; ++p) term[a * W + p] *= norm[p];
}

}  // namespace fpdp::models
