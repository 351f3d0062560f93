#pragma once
// The off-diagonal part of a constant diffusion matrix, as conservative face fluxes (MATH.md §2.1, §2.3; BKPP).
//
// Continuous equation (the part handled here; drift and Sigma_aa are in FokkerPlanckOperator/FaceFluxScheme):
//   d_t u = sum_{a != b} d_a ( Sigma_ab d_b u ) = 2 sum_{a < b} Sigma_ab d_a d_b u,   Sigma constant, symmetric.
// Finite volumes: the flux of the pair (a, b) through a face normal to a is Sigma_ab d_b u (and through a face
// normal to b, Sigma_ab d_a u). With s = sign(Sigma_ab), L and U the lower and upper cells of an a-face (sharing
// the b-index j), h_b(j, j') the distance between the centres of b-cells j and j',
//
//   F_a = (|Sigma_ab| / 2) [ (u(U + s e_b) - u(U)) / h_b(j, j+s)  +  (u(L) - u(L - s e_b)) / h_b(j-s, j) ]     (*)
//
// ("oriented" or sign-adapted: the two one-sided b-differences are taken on the diagonal that runs along the
// principal direction of the 2x2 block, so that u(U + s e_b) and u(L - s e_b), the diagonal neighbours, enter with
// positive weight). The flux enters the update of L as +F_a/width_a(L) and of U as -F_a/width_a(U); the b-faces get
// (*) with a and b exchanged. Each face flux is one expression used by both cells, so volume-weighted mass is
// conserved to round-off on any tensor mesh.
//
// Uniform mesh, interior cell, Sigma_ab > 0: the a-faces and the b-faces each contribute half of
//   Sigma_ab (D+_a D+_b u + D-_a D-_b u)
//     = (Sigma_ab / (h_a h_b)) [ u(i+1,j+1) - u(i+1,j) - u(i,j+1) + 2 u(i,j) - u(i-1,j) - u(i,j-1) + u(i-1,j-1) ],
// the mean of the forward-forward and backward-backward mixed differences, = 2 Sigma_ab d_a d_b u + O(h^2) (the
// stencil is point-symmetric about (i,j)); Sigma_ab < 0 uses the mirrored diagonals (i+1,j-1), (i-1,j+1).
// Each half of (*) is a central difference for d_b u at (x_U, midpoint of centres j, j+s) and (x_L, midpoint of
// j-s, j); these two points are symmetric about the face centre on a uniform mesh (flux error O(h^2)). On a graded
// mesh they are off the face centre by ((w_U - w_L)/4, s (w_{j+1} - w_{j-1})/8) (w the cell widths): O(h^2) on a
// smoothly graded mesh (widths varying by O(h^2) between neighbours), O(h) on a rough one (docs/scheme.md measures
// both).
//
// Boundary conditions: no flux through wall faces (those faces are skipped), and a half of (*) that would need a
// cell outside the box is omitted (as if u were mirrored across the wall in the b-difference). The omitted halves
// make the cross flux of the faces in the wall layer first-order inaccurate there; they never add weight, so the
// positivity condition of the interior rows covers the wall rows as well.
//
// Positivity (off-diagonal entries >= 0): an interior row's axis neighbour +-e_a receives
//   Sigma_aa w(P)/(h_a^2) - sum_{b != a} |Sigma_ab| / (h_a h_b)
// (w(P) the drift weight of the face, 1 without drift): without drift the condition is
//   Sigma_aa / h_a^2 >= sum_{b != a} |Sigma_ab| / (h_a h_b)   for every axis a.
// FokkerPlanckOperator checks the assembled entries (PositivityReport).
#include <petscsys.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "meshes/BoxMesh.hpp"

namespace fpdp::solver {

/// Calls add(dx, dy, dz, weight) for every contribution of the pair (a, b), a != b, with off-diagonal entry
/// sigmaAB, to the row of cell c: d_t u_c += sum weight * u(c + (dx, dy, dz)). Offsets are in {-1, 0, 1}.
/// skipFace(p, side) says whether the face of c normal to p on that side carries another flux (the fourth-order
/// one), whose mixed part replaces this one. nominalWidth[a] > 0 (a uniform axis): that width stands for every cell
/// width and centre distance along a (else those of the faces). The exponential integrator's box stencil takes it:
/// computed from the faces, the widths differ in their last bits where they are not binary fractions (10/48), and
/// so would the coefficients along a line, which it then could not keep as one value per run (StencilOperator).
template <class Add, class SkipFace>
void addCrossDiffusionRow(const meshes::BoxMesh& box, const std::array<PetscInt, 3>& c, int a, int b, double sigmaAB,
                          const std::array<double, 3>& nominalWidth, Add&& add, SkipFace&& skipFace) {
  if (sigmaAB == 0.0) return;
  const int s = sigmaAB > 0 ? 1 : -1;
  const double half = 0.5 * std::fabs(sigmaAB);
  for (int pass = 0; pass < 2; ++pass) {
    const int p = pass == 0 ? a : b;  // faces normal to p
    const int q = pass == 0 ? b : a;  // differences along q
    const auto& axisP = box.axis(p);
    const auto& axisQ = box.axis(q);
    const int jq = static_cast<int>(c[q]);
    for (int side : {-1, +1}) {
      const int np = static_cast<int>(c[p]) + side;
      if (np < 0 || np >= axisP.cells()) continue;  // wall face: no flux
      if (skipFace(p, side)) continue;
      // Offsets (along p) of the lower and upper cell of this face, relative to c; the row's sign.
      const int offL = side > 0 ? 0 : -1, offU = side > 0 ? 1 : 0;
      const double widthP = nominalWidth[p] > 0.0 ? nominalWidth[p] : axisP.width(static_cast<int>(c[p]));
      const double rowScale = (side > 0 ? 1.0 : -1.0) / widthP;
      const auto distanceQ = [&](int j) { return nominalWidth[q] > 0.0 ? nominalWidth[q] : axisQ.centreDistance(j); };
      std::array<int, 3> o{0, 0, 0};
      const auto emit = [&](int alongP, int alongQ, double w) {
        o = {0, 0, 0};
        o[p] = alongP;
        o[q] = alongQ;
        add(o[0], o[1], o[2], w);
      };
      // Upper half: (u(U + s e_q) - u(U)) / h_q(jq, jq + s).
      if (jq + s >= 0 && jq + s < axisQ.cells()) {
        const double w = half / distanceQ(std::min(jq, jq + s)) * rowScale;
        emit(offU, s, w);
        emit(offU, 0, -w);
      }
      // Lower half: (u(L) - u(L - s e_q)) / h_q(jq - s, jq).
      if (jq - s >= 0 && jq - s < axisQ.cells()) {
        const double w = half / distanceQ(std::min(jq, jq - s)) * rowScale;
        emit(offL, 0, w);
        emit(offL, -s, -w);
      }
    }
  }
}

}  // namespace fpdp::solver
