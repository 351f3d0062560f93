#pragma once
// Face weights of the finite-volume drift–diffusion flux (docs/scheme.md).
//
// Continuous flux through a face, oriented from cell c to its neighbour n along one axis, for
//   d_t p = div( p grad Phi + D grad p ):        J = p dPhi/dx + D dp/dx.
// With h the distance between the centres and P = (Phi_n - Phi_c)/D the face Péclet number, every scheme
// here writes the discrete flux as
//   J_cn = (D/h) [ w_n(P) p_n - w_c(P) p_c ],
// and differs only in the weights (the FiPy pattern: one small type per scheme, shared stencil elsewhere).
//   Scharfetter–Gummel: w_c = B(P), w_n = B(-P), B(z) = z/(e^z - 1)   (exact for the 1-D steady flux; the
//                       Gibbs density exp(-Phi/D) at the cell centres has J = 0 on every face; B(-P) = B(P) + P)
//   central:            w_c = 1 - P/2, w_n = 1 + P/2                  (second order, not positive for |P| > 2)
//   upwind:             w_c = 1 + max(P,0), w_n = 1 + max(-P,0)        (first order, positive)
// All are consistent (w_n - w_c = P + O(P^3) or O(P) for upwind) and conservative, because the same J_cn
// leaves c and enters n.
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

namespace fpdp::solver {

/// B(z) = z / (e^z - 1), evaluated without cancellation or overflow for all real z (B(0) = 1).
inline double bernoulli(double z) {
  const double a = std::fabs(z);
  if (a < 1e-3) return 1.0 - z / 2.0 + z * z / 12.0 - z * z * z * z / 720.0;  // truncation error < 1e-17
  if (z > 700.0) return z * std::exp(-z);                                   // e^z would overflow; B < 1e-300
  return z / std::expm1(z);
}

struct FaceWeights {
  double own;        // w_c, multiplies p_c (flux leaving c)
  double neighbour;  // w_n, multiplies p_n (flux entering c)
};

enum class FaceFluxScheme { ScharfetterGummel, Central, Upwind };

inline FaceWeights faceWeights(FaceFluxScheme s, double P) {
  switch (s) {
    case FaceFluxScheme::Central:
      return {1.0 - 0.5 * P, 1.0 + 0.5 * P};
    case FaceFluxScheme::Upwind:
      return {1.0 + std::fmax(P, 0.0), 1.0 + std::fmax(-P, 0.0)};
    case FaceFluxScheme::ScharfetterGummel:
    default: {
      // B(-P) = B(P) + P: the smaller weight (the one with a non-negative argument, <= 1) from one expm1, the larger
      // as the smaller plus |P|, a sum of two non-negative numbers (no cancellation); one expm1 per face instead of
      // two. Written the other way round (the smaller as larger - |P|) it would cancel for large |P|.
      if (P >= 0.0) {
        const double own = bernoulli(P);
        return {own, own + P};
      }
      const double neighbour = bernoulli(-P);
      return {neighbour - P, neighbour};
    }
  }
}


}  // namespace fpdp::solver
