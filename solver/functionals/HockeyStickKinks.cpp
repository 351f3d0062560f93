#include "solver/functionals/HockeyStickKinks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fpdp::solver {

HockeyStickKinks::HockeyStickKinks(const meshes::DistributedBoxMesh& mesh, const double* ghostedPoints,
                                   const meshes::OwnedBlock& block, double invMassP, double invMassQ, bool exchanged)
    : values_(ghostedPoints),
      volumes_(mesh.ownedVolumes().data()),
      invMassA_(exchanged ? invMassQ : invMassP),
      invMassB_(exchanged ? invMassP : invMassQ),
      offsetA_(exchanged ? 1 : 0),
      offsetB_(exchanged ? 0 : 1) {
  const auto& axis = mesh.box().axis(0);
  const int N = axis.cells();
  // Windows i-1 .. i+2 of equal widths (the lattice of the Euler–Maclaurin expansion), inside the box.
  std::vector<char> uniform(static_cast<std::size_t>(std::max(N, 0)), 0);
  for (int i = 1; i + 2 < N; ++i) uniform[static_cast<std::size_t>(i)] = axis.equalWidths(i - 1, i + 2);
  // Counted first, then stored: the windows are about one per cell, and a growing vector would hold up to twice
  // their size at an output step's peak (docs/scaling.md §6).
  auto forEachWindow = [&](auto&& keep) {
    mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
      if (!uniform[static_cast<std::size_t>(i)]) return;
      const PetscInt node = block.local(i, j, k);
      for (PetscInt m = -1; m <= 2; ++m) {
        const double a = values_[2 * (node + m) + offsetA_], b = values_[2 * (node + m) + offsetB_];
        if (!(a > 0 && b > 0 && a < std::numeric_limits<double>::infinity() &&
              b < std::numeric_limits<double>::infinity()))
          return;
      }
      const double r0 = values_[2 * node + offsetA_] * invMassA_ / (values_[2 * node + offsetB_] * invMassB_);
      const double r1 = values_[2 * (node + 1) + offsetA_] * invMassA_ / (values_[2 * (node + 1) + offsetB_] * invMassB_);
      const double lo = std::min(r0, r1), hi = std::max(r0, r1);
      if (hi >= 1.0 && lo < hi) keep(Window{static_cast<std::uint32_t>(node), static_cast<std::uint32_t>(l), lo, hi});
    });
  };
  std::size_t count = 0;
  forEachWindow([&](const Window&) { ++count; });
  windows_.reserve(count);
  forEachWindow([&](const Window& w) { windows_.push_back(w); });
}

double HockeyStickKinks::correction(const Window& w, double x) const {
  double y[4];  // d = a - x b at t = -1, 0, 1, 2, normalised and weighted like the midpoint sum's terms
  double massA = 0.0;  // the window's a, so weighted: max(d, 0) <= a bounds its terms and their integral
  for (int m = 0; m < 4; ++m) {
    const double* v = values_ + 2 * (static_cast<std::ptrdiff_t>(w.node) + m - 1);
    y[m] = volumes_[w.cell] * (v[offsetA_] * invMassA_ - x * (v[offsetB_] * invMassB_));
    massA += volumes_[w.cell] * v[offsetA_] * invMassA_;
  }
  if ((y[1] > 0) == (y[2] > 0)) return 0.0;
  const double s = y[1] > 0 ? 1.0 : -1.0;
  // The cubic through the four values, P(t) = c0 + c1 t + c2 t^2 + c3 t^3.
  const double c0 = y[1], c2 = 0.5 * (y[2] + y[0]) - y[1], c3 = (y[3] - 3.0 * y[2] + 3.0 * y[1] - y[0]) / 6.0;
  const double c1 = y[2] - y[1] - c2 - c3;
  auto P = [&](double t) { return c0 + t * (c1 + t * (c2 + t * c3)); };
  auto dP = [&](double t) { return c1 + t * (2.0 * c2 + 3.0 * t * c3); };
  // Its root in [0, 1] (P(0), P(1) of opposite signs): Newton's method kept inside the bracket, else bisection.
  double lo = 0.0, hi = 1.0, t = y[1] / (y[1] - y[2]);
  for (int it = 0; it < 100; ++it) {
    const double f = P(t);
    if (f == 0.0) break;
    ((f > 0) == (s > 0) ? lo : hi) = t;
    const double slope = dP(t);
    double next = slope != 0.0 ? t - f / slope : 0.5 * (lo + hi);
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    const bool done = std::fabs(next - t) <= 4 * std::numeric_limits<double>::epsilon();
    t = next;
    if (done || hi - lo <= 4 * std::numeric_limits<double>::epsilon()) break;
  }
  const double theta = 1.0 - t;
  const double B2 = theta * theta - theta + 1.0 / 6.0;
  const double B3 = theta * (theta - 0.5) * (theta - 1.0);
  const double B4 = theta * theta * (1.0 - theta) * (1.0 - theta) - 1.0 / 30.0;
  const double d1 = dP(t), d2 = 2.0 * c2 + 6.0 * c3 * t, d3 = 6.0 * c3;
  const double c = -s * (B2 / 2.0 * d1 + B3 / 6.0 * d2 + B4 / 24.0 * d3);
  // The correction is the midpoint sum's excess over the integral near the kink; both lie between 0 and the window's
  // mass of a (max(d, 0) <= a), so a correction beyond that mass comes from a cubic that does not describe d:
  // densities narrower than the cells, whose values change by orders of magnitude from cell to cell (seen: delta(eps)
  // of 1e16 for laws a tenth of a cell wide, 1e7 on a 3-D mesh of 0.2 cells per standard deviation). Such a window
  // keeps the plain midpoint sum.
  return std::fabs(c) <= massA ? c : 0.0;
}

void HockeyStickKinks::add(std::span<const double> x, double* out) const {
  for (const Window& w : windows_) {
    std::size_t k = static_cast<std::size_t>(std::lower_bound(x.begin(), x.end(), w.lo) - x.begin());
    for (; k < x.size() && x[k] < w.hi; ++k) out[k] += correction(w, x[k]);
  }
}

void HockeyStickKinks::dropBelow(double floorX) {
  std::erase_if(windows_, [floorX](const Window& w) { return w.hi <= floorX; });
}

}  // namespace fpdp::solver
