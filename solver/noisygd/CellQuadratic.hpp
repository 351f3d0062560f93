#pragma once
// The within-cell density of the noisy-GD remaps (docs/noisy-gd.md §2, §3): on a cell of length L with mass M and
// face densities d0, d1, the derivative of the monotone cubic Hermite of the cumulative mass (H(0) = 0, H(L) = M,
// end slopes d0, d1 limited by Fritsch–Carlson), a non-negative quadratic q(t) = c0 + c1 t + c2 t^2 on [0, L] whose
// integral is M. The push-forward's cubic (PushForward.cpp) is its antiderivative; the exact Gaussian convolution
// and the Poisson mixture of translations deposit its integrals.
#include <algorithm>
#include <cmath>

namespace fpdp::solver {

struct CellQuadratic {
  double L, M, c0, c1, c2;
  CellQuadratic(double length, double mass, double d0, double d1) : L(length), M(mass) {
    const double secant = M / L;
    if (secant > 0) {
      d0 = std::max(d0, 0.0);
      d1 = std::max(d1, 0.0);
      const double a = d0 / secant, b = d1 / secant, r = a * a + b * b;
      if (r > 9.0) {
        d0 *= 3.0 / std::sqrt(r);
        d1 *= 3.0 / std::sqrt(r);
      }
    } else {
      d0 = d1 = secant;
    }
    // H(t) = M h01(t/L) + L (h10 d0 + h11 d1); H'(t) = (M/L) h01' + h10' d0 + h11' d1 with
    // h01' = 6s - 6s^2, h10' = 3s^2 - 4s + 1, h11' = 3s^2 - 2s  (s = t/L).
    c0 = d0;
    c1 = (6.0 * M / L - 4.0 * d0 - 2.0 * d1) / L;
    c2 = (-6.0 * M / L + 3.0 * d0 + 3.0 * d1) / (L * L);
  }
};

}  // namespace fpdp::solver
