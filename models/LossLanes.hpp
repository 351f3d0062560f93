#pragma once
// The per-example gradients of the closed-form losses (models/Loss.hpp) for W parameter points at once, in structure
// of arrays (theta[a * W + p] is component a of point p): the lane form of QuadraticLoss::gradientInto,
// LogisticLoss::gradientInto and clipToNormInPlace, written as plain loops over the lanes without branches so that
// the compiler vectorises them (the Monte Carlo sampler's inner loop, validation/MonteCarloSampler.cpp, compiles them
// for several instruction sets). The operations and their order are those of the scalar forms, so the quadratic
// terms and the clipping give the scalar bits; the logistic term differs from the scalar one only through
// branchFreeExp in place of std::exp (tests/models/test_loss_lanes.cpp bounds both).
#include <bit>
#include <cmath>
#include <cstdint>

namespace fpdp::models {

/// e^x for x in [-708.39, 709] (arguments outside are clamped to it) without branches, after fdlibm's e_exp.c:
/// x = n ln 2 + hi - lo with |hi - lo| <= ln(2)/2 (Cody and Waite's two-part ln 2, exact products for |n| < 2^21),
/// e^r = 1 + 2r / (R(r) - r) through fdlibm's degree-5 minimax polynomial in r^2 (error below 2^-59), times 2^n
/// built in the exponent bits. Against std::exp on 4 x 10^6 points of the domain: at most 1 ulp
/// (tests/models/test_loss_lanes.cpp holds it to that). A rational form: one division, and a chain half as long as
/// a Taylor polynomial of the same accuracy (degree 13), which measured 1.4 times slower in the sampler's loop.
[[gnu::always_inline]] inline double branchFreeExp(double x) {
  constexpr double kLog2e = 1.4426950408889634074, kShift = 0x1.8p52;
  constexpr double kLn2Hi = 6.93147180369123816490e-01, kLn2Lo = 1.90821492927058770002e-10;  // fdlibm's split
  constexpr double P1 = 1.66666666666666019037e-01, P2 = -2.77777777770155933842e-03,
                   P3 = 6.61375632143793436117e-05, P4 = -1.65339022054652515390e-06,
                   P5 = 4.13813679705723846039e-08;
  x = x < -708.39 ? -708.39 : x;
  x = x > 709.0 ? 709.0 : x;
  const double shifted = x * kLog2e + kShift;  // n + 1.5 2^52: n = round(x / ln 2) in the low mantissa bits
  const double n = shifted - kShift;
  const double hi = x - n * kLn2Hi, lo = n * kLn2Lo, r = hi - lo;
  const double t = r * r;
  const double c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
  const double expR = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
  const std::int64_t exponent = std::bit_cast<std::int64_t>(shifted) - std::bit_cast<std::int64_t>(kShift) + 1023;
  return expR * std::bit_cast<double>(exponent << 52);
}

/// sigmoid(z) = 1 / (1 + e^{-z}) as models/Loss.cpp's sigmoid (the exponent kept non-positive: 1 / (1 + e^{-z}) for
/// z >= 0, e^z / (1 + e^z) below), with one division and branchFreeExp.
[[gnu::always_inline]] inline double branchFreeSigmoid(double z) {
  const double e = branchFreeExp(z >= 0 ? -z : z);
  return (z >= 0 ? 1.0 : e) / (1.0 + e);
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
/// in one pass over the lanes (the same operations, so the same bits), D the dimension.
template <int W, int D>
[[gnu::always_inline]] inline void addLogisticTermLanes(double mu, const double* x, double y,
                                                        const double* __restrict theta, double* __restrict grad) {
  for (int p = 0; p < W; ++p) {
    double margin = 0.0;
    for (int a = 0; a < D; ++a) margin += theta[a * W + p] * x[a];
    const double weight = -y * branchFreeSigmoid(-(margin * y));
    for (int a = 0; a < D; ++a) grad[a * W + p] += weight * x[a] + mu * theta[a * W + p];
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
