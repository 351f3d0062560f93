#pragma once
// The kink correction of the hockey-stick integrals delta(eps) = int max(a - x b, 0), x = e^eps, and so of TV
// (MATH.md §3, §7; docs/scheme.md §5, "Hockey-stick kinks").
//
// Why: the midpoint rule on point values is fourth order (or better) for smooth integrands, but d = a - x b changes
// sign on a surface and max(d, 0) has a kink there: the plain sum then errs by O(h^2) whatever the scheme's order.
// How: along axis 0, the sum over the cell centres of one line is a shifted lattice sum. For f = max(d, 0) with a
// single sign change of d at z between the centres t = 0 and t = 1 (in units of the cell width h), the generalised
// Euler–Maclaurin formula on each side of z gives
//     h sum_j f(x_j) - int f = s sum_{k>=2} h^k B_k(theta)/k! d^(k-1)(z),     theta = (x_(j+1) - z)/h,
// with s = +1 if d > 0 below z, -1 if above, B_k the Bernoulli polynomials (the k = 1 term vanishes: d(z) = 0). d is
// smooth (only max(d, 0) has a kink), so the cubic through d at t = -1, 0, 1, 2 gives z and the derivatives, and the
// terms k = 2, 3, 4 are subtracted: the error left per line is O(h^5), also where two sign changes share a window
// (the expansion is exact for cubics on any interval). In 2-D and 3-D the corrected line sums are then summed by
// the midpoint rule across lines: their sum is smooth except where the kink surface is tangent to axis 0, where it
// behaves like a 3/2 power (O(h^2.5) there). Measured orders: tests/solver/test_divergence_functionals.cpp.
// Not corrected (the plain midpoint sum): windows that reach a wall (the first cell and the last two along axis 0),
// whose correction would exceed their mass of a (an under-resolved window, see correction()),
// that are not uniform along axis 0 (graded meshes), or where a value is not positive.
#include <cstdint>
#include <span>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"

namespace fpdp::solver {

class HockeyStickKinks {
public:
  /// From the ghosted point values of p and q (interlaced; `block` their ghosted block, ghost width 2 along axis 0):
  /// the windows of the direction a = p, b = q (exchanged: a = q, b = p), the densities normalised by their masses
  /// (invMassP, invMassQ) and weighted by the cell volume as the hockey-stick terms are. Only windows that can change
  /// sign at some x >= 1 are kept.
  HockeyStickKinks(const meshes::DistributedBoxMesh& mesh, const double* ghostedPoints, const meshes::OwnedBlock& block,
                   double invMassP, double invMassQ, bool exchanged);
  /// out[k] += the correction at x[k], for ascending x >= 1: add it to the midpoint sum of max(a - x b, 0).
  void add(std::span<const double> x, double* out) const;
  /// Drops the windows whose sign change lies below floorX (x <= floorX never asked again).
  void dropBelow(double floorX);
  std::size_t size() const { return windows_.size(); }

private:
  struct Window {
    std::uint32_t node = 0;  // ghosted index of the window's centre t = 0 (its cells: node - 1 .. node + 2)
    std::uint32_t cell = 0;  // owned index of that cell (its volume is the cells' common volume)
    double lo = 0, hi = 0;   // the window changes sign between t = 0 and 1 only for lo <= x < hi (ratios a/b)
  };
  double correction(const Window& w, double x) const;
  const double* values_;   // ghosted p, q interlaced
  const double* volumes_;  // of the owned cells
  double invMassA_ = 1, invMassB_ = 1;
  int offsetA_ = 0, offsetB_ = 1;
  std::vector<Window> windows_;
};

}  // namespace fpdp::solver
