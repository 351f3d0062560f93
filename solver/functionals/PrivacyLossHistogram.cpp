// DivergenceFunctionals' privacy-loss distributions: histograms of log(p/q) under p and of log(q/p) under q.
#include "solver/functionals/Divergences.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "solver/functionals/DivergencesDetail.hpp"

namespace fpdp::solver {

/// The privacy-loss distribution of one direction: log(p/q) under p (direction 0) or log(q/p) under q (1).
PrivacyLossHistogram DivergenceFunctionals::privacyLossHistogram(const Terms& terms, int dir) const {
  const MPI_Comm comm = quadrature_.comm();
  const int B = settings_.privacyLossBins;
  PrivacyLossHistogram h;
  auto weightOf = [&](std::size_t i) { return dir == 0 ? terms.wp(i) : terms.wq(i); };
  auto valueOf = [&](std::size_t i) { return dir == 0 ? terms.u[i] : -terms.u[i]; };
  // The mass at +inf: Infinite terms under p (q = 0), PZero terms under q (p = 0).
  const Terms::Kind atInfinity = dir == 0 ? Terms::Infinite : Terms::PZero;
  double localMaxMass = 0.0, globalMaxMass = 0.0;
  for (std::size_t i = 0; i < terms.size(); ++i)
    if (terms.kind(i) == Terms::Regular) localMaxMass = std::max(localMaxMass, weightOf(i));
  FPDP_PETSC(MPI_Allreduce(&localMaxMass, &globalMaxMass, 1, MPI_DOUBLE, MPI_MAX, comm));
  const double floor = kPldMassFloor * globalMaxMass;
  double range[2] = {kInf, kInf};  // min and -max
  for (std::size_t i = 0; i < terms.size(); ++i)
    if (terms.kind(i) == Terms::Regular && weightOf(i) >= floor && weightOf(i) > 0) {
      range[0] = std::min(range[0], valueOf(i));
      range[1] = std::min(range[1], -valueOf(i));
    }
  double gRange[2];
  FPDP_PETSC(MPI_Allreduce(range, gRange, 2, MPI_DOUBLE, MPI_MIN, comm));
  double lo = gRange[0], hi = -gRange[1];
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = -0.5, hi = 0.5;  // no finite value carries mass
  if (!(hi - lo > 1e-12 * std::max(1.0, std::fabs(lo)))) lo -= 0.5, hi += 0.5;
  std::vector<double> bins(static_cast<std::size_t>(B) + 2, 0.0), gBins(bins.size());
  const double width = (hi - lo) / B;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const double m = weightOf(i);
    const Terms::Kind kind = terms.kind(i);
    if (kind == atInfinity) {
      bins[static_cast<std::size_t>(B)] += m;
      continue;
    }
    if (kind != Terms::Regular || !(m > 0)) continue;
    const double x = valueOf(i);
    if (x < lo || x > hi) bins[static_cast<std::size_t>(B) + 1] += m;
    const double b = std::floor((x - lo) / width);
    const int bin = b < 0 ? 0 : (b >= B ? B - 1 : static_cast<int>(b));
    bins[static_cast<std::size_t>(bin)] += m;
  }
  FPDP_PETSC(MPI_Allreduce(bins.data(), gBins.data(), static_cast<PetscMPIInt>(bins.size()), MPI_DOUBLE, MPI_SUM,
                            comm));
  h.lower = lo;
  h.upper = hi;
  h.mass.assign(gBins.begin(), gBins.begin() + B);
  h.massInfinity = gBins[static_cast<std::size_t>(B)];
  h.clampedMass = gBins[static_cast<std::size_t>(B) + 1];
  return h;
}

}  // namespace fpdp::solver
