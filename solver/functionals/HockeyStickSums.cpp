// DivergenceFunctionals' hockey-stick sums: delta(eps) on the eps grid, eps(delta) by root-finding, their statuses.
#include "solver/functionals/Divergences.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "solver/functionals/DivergencesDetail.hpp"
#include "solver/functionals/HockeyStickKinks.hpp"

namespace fpdp::solver {

namespace {

/// The hockey-stick terms of one direction (MATH.md §3): the pairs (a, b) = (|c| p, |c| q) (or exchanged) of the
/// terms with a > b, normalised like every functional's terms; for eps >= 0 the others contribute nothing.
struct HockeyStickTerms {
  std::vector<double> a, b;
};
/// The cells of one direction at a density's noise floor (values of round-off size): the pair (a, b) as in
/// HockeyStickTerms, whichever is larger, and how far each may be off (sa, sb: the floor times the cell's weight
/// where that density is at its floor, else 0).
struct NoiseTerms {
  std::vector<double> a, b, sa, sb;
};
/// The terms of one direction whose share of delta(eps) makes eps suspect: the wall cells (the box cuts the tail
/// beyond them) and the cells at a density's noise floor.
struct SuspectTerms {
  HockeyStickTerms wall;
  NoiseTerms noise;
};

/// sum max(a - x b, 0) over a few terms (no kink correction: the wall cells have none).
double hockeyStickSum(const HockeyStickTerms& t, double x) {
  double sum = 0.0;
  for (std::size_t i = 0; i < t.a.size(); ++i) sum += std::max(t.a[i] - x * t.b[i], 0.0);
  return sum;
}

/// How far delta(eps) may be off through the noise cells: per cell the largest change of max(a - x b, 0) when a and
/// b move within their floors (a true value may lie anywhere between 0 and the floor there; a negative value entered
/// as 0). A cell whose larger density is well above its floor but whose other one is at the floor (the far tail of
/// the narrower law) is known to x times that floor, not to its whole term.
double noiseUncertainty(const NoiseTerms& t, double x) {
  double sum = 0.0;
  for (std::size_t i = 0; i < t.a.size(); ++i) {
    const double a = t.a[i], b = t.b[i];
    const double term = std::max(a - x * b, 0.0);
    const double high = std::max(a + t.sa[i] - x * std::max(b - t.sb[i], 0.0), 0.0);
    const double low = std::max(std::max(a - t.sa[i], 0.0) - x * (b + t.sb[i]), 0.0);
    sum += std::max(high - term, term - low);
  }
  return sum;
}

/// The one hockey-stick quadrature (the eps grid and the eps(delta) roots): out[k] += sum_i max(a_i - x_k b_i, 0)
/// for ascending x_k = e^eps_k >= 1, each term computed as such (no 1 - ...). A term is positive only while
/// x_k < a/b: the first x_k at or beyond a/b is found by bisection and the loop over the rest is skipped; the sum is
/// branch-free (vectorisable) up to there, max(., 0) keeping out the one term at the boundary that rounding might
/// make slightly negative.
void addHockeyStick(const HockeyStickTerms& t, std::span<const double> x, double* out) {
  const std::size_t E = x.size();
  for (std::size_t i = 0; i < t.a.size(); ++i) {
    const double a = t.a[i], b = t.b[i];
    const std::size_t count =
        b > 0 ? static_cast<std::size_t>(std::upper_bound(x.begin(), x.end(), a / b) - x.begin()) : E;
    const std::size_t m = std::min(count + 1, E);
    for (std::size_t k = 0; k < m; ++k) out[k] += std::max(a - x[k] * b, 0.0);
  }
}

/// eps(delta) of both directions at every delta (MATH.md §7): models::exactEpsilons on the sums of addHockeyStick,
/// started from the eps grid's values of the same sums where there is a grid (`samples`: brackets, not
/// interpolation), each round's sums reduced over the ranks. They are summed on rank 0 and broadcast, so that every rank holds the same
/// bits and takes the same path through the root finder (an allreduce need not round alike on every rank). The
/// terms that vanish at every eps the root finder will still ask for (a < e^eps b from its brackets' lower ends on)
/// are dropped as the brackets narrow: they add exact zeros, so the sums do not change, only their cost.
/// Marks the roots that rest on the walls or on the noise floor (models::ExactEpsilonStatus::TruncatedSuspect,
/// NoiseLimited): the wall cells' share of delta(eps) above DivergenceFunctionals::kBoundaryShareTolerance (as for
/// R_alpha), the uncertainty the noise cells leave (noiseUncertainty) above the same, or an unreachable delta whose floor (the mass of one density
/// where the other is 0) is noise by more than the floor's excess over delta. Summed on rank 0 and broadcast, so
/// every rank marks the same.
void markSuspectRoots(std::vector<models::ExactEpsilon>& found, std::span<const models::ProfileRequest> requests,
                      const SuspectTerms (&suspect)[2], const double (&floor)[2], MPI_Comm comm) {
  using S = models::ExactEpsilonStatus;
  std::vector<double> local(2 * found.size(), 0.0), global(local.size());
  for (std::size_t j = 0; j < found.size(); ++j) {
    const SuspectTerms& t = suspect[requests[j].profile];
    if (found[j].status == S::Root || found[j].status == S::Zero) {
      const double x = std::exp(found[j].epsilon);
      local[2 * j] = hockeyStickSum(t.wall, x);
      local[2 * j + 1] = noiseUncertainty(t.noise, x);
    } else if (found[j].status == S::Unreachable) {
      for (std::size_t i = 0; i < t.noise.a.size(); ++i)
        if (t.noise.b[i] == 0.0) local[2 * j + 1] += t.noise.a[i];
    }
  }
  FPDP_PETSC(MPI_Reduce(local.data(), global.data(), static_cast<PetscMPIInt>(local.size()), MPI_DOUBLE, MPI_SUM, 0,
                        comm));
  FPDP_PETSC(MPI_Bcast(global.data(), static_cast<PetscMPIInt>(global.size()), MPI_DOUBLE, 0, comm));
  const double tol = DivergenceFunctionals::kBoundaryShareTolerance;
  for (std::size_t j = 0; j < found.size(); ++j) {
    const double wall = global[2 * j], noise = global[2 * j + 1], delta = requests[j].delta;
    if (found[j].status == S::Unreachable) {
      if (noise >= floor[requests[j].profile] - delta) found[j].status = S::NoiseLimited;
    } else if (found[j].status == S::Root || found[j].status == S::Zero) {
      const double at = found[j].deltaAtEpsilon;
      if (noise > tol * at) found[j].status = S::NoiseLimited;
      else if (wall > tol * at) found[j].status = S::TruncatedSuspect;
    }
  }
}

/// The ends of both directions' profiles (models::PrivacyProfileEnds: floor = the mass where the other density is 0,
/// flatFrom = the largest log(a/b) over b > 0), and the largest log(a/b) of the wall cells (-inf without any), from
/// the terms before the root finder drops any. The floor is summed on rank 0 and broadcast, the maxima are exact on
/// every rank.
struct ProfileEnds {
  models::PrivacyProfileEnds ends[2];
  double wallLargest[2];
};
ProfileEnds profileEnds(const HockeyStickTerms (&terms)[2], const SuspectTerms (&suspect)[2], MPI_Comm comm) {
  double localFloor[2] = {0.0, 0.0}, floor[2] = {0.0, 0.0};
  double localMax[4] = {0.0, 0.0, -INFINITY, -INFINITY}, globalMax[4];  // flatFrom p||q, q||p; walls p||q, q||p
  for (int dir = 0; dir < 2; ++dir) {
    const HockeyStickTerms& t = terms[dir];
    for (std::size_t i = 0; i < t.a.size(); ++i) {
      if (t.b[i] > 0.0) localMax[dir] = std::max(localMax[dir], std::log(t.a[i]) - std::log(t.b[i]));
      else localFloor[dir] += t.a[i];
    }
    const HockeyStickTerms& w = suspect[dir].wall;
    for (std::size_t i = 0; i < w.a.size(); ++i)
      if (w.b[i] > 0.0) localMax[2 + dir] = std::max(localMax[2 + dir], std::log(w.a[i]) - std::log(w.b[i]));
  }
  FPDP_PETSC(MPI_Reduce(localFloor, floor, 2, MPI_DOUBLE, MPI_SUM, 0, comm));
  FPDP_PETSC(MPI_Bcast(floor, 2, MPI_DOUBLE, 0, comm));
  FPDP_PETSC(MPI_Allreduce(localMax, globalMax, 4, MPI_DOUBLE, MPI_MAX, comm));
  return {{{floor[0], globalMax[0]}, {floor[1], globalMax[1]}}, {globalMax[2], globalMax[3]}};
}

/// The statuses of delta(eps) on the eps grid, one direction (x_k = e^eps_k ascending, values the reduced sums): as
/// markSuspectRoots, the wall cells' share and the noise cells' uncertainty of each value above DivergenceFunctionals::kBoundaryShareTolerance
/// (NoiseLimited before TruncatedSuspect); and past the largest log(a/b) of the box, where delta(eps) has fallen to
/// its floor, TruncatedSuspect if that largest log-ratio lies at a wall cell (the profile's tail is beyond the box).
/// Reduced on rank 0 and broadcast (every rank the same). Codes of models::ExactEpsilonStatus.
std::vector<int> profileStatuses(const SuspectTerms& suspect, double flatFrom, double wallLargest,
                                 std::span<const double> x, std::span<const double> values, MPI_Comm comm) {
  const std::size_t E = x.size();
  std::vector<double> local(2 * E, 0.0), global(2 * E);
  for (std::size_t k = 0; k < E; ++k) {
    local[2 * k] = hockeyStickSum(suspect.wall, x[k]);
    local[2 * k + 1] = noiseUncertainty(suspect.noise, x[k]);
  }
  FPDP_PETSC(MPI_Reduce(local.data(), global.data(), static_cast<PetscMPIInt>(2 * E), MPI_DOUBLE, MPI_SUM, 0, comm));
  FPDP_PETSC(MPI_Bcast(global.data(), static_cast<PetscMPIInt>(2 * E), MPI_DOUBLE, 0, comm));
  const bool tailAtWall = wallLargest >= flatFrom;  // -inf without wall terms
  const double tol = DivergenceFunctionals::kBoundaryShareTolerance;
  std::vector<int> status(E, static_cast<int>(models::ExactEpsilonStatus::Root));
  for (std::size_t k = 0; k < E; ++k) {
    const double wall = global[2 * k], noise = global[2 * k + 1], v = values[k];
    if (noise > tol * v) status[k] = static_cast<int>(models::ExactEpsilonStatus::NoiseLimited);
    else if (wall > tol * v || (tailAtWall && std::log(x[k]) >= flatFrom))
      status[k] = static_cast<int>(models::ExactEpsilonStatus::TruncatedSuspect);
  }
  return status;
}

std::vector<ExactEpsilonAtDelta> epsilonRoots(HockeyStickTerms (&terms)[2], std::optional<HockeyStickKinks> (&kinks)[2],
                                              const SuspectTerms (&suspect)[2], const models::PrivacyProfileEnds (&ends)[2],
                                              const std::vector<double>& deltas,
                                              std::span<const models::ProfileSample> samples, MPI_Comm comm) {
  const double floor[2] = {ends[0].floor, ends[1].floor};
  std::vector<models::ProfileRequest> requests;
  for (double d : deltas)
    for (int dir = 0; dir < 2; ++dir) requests.push_back({dir, d});
  std::vector<double> local, x, sums;
  std::vector<std::size_t> index;
  const models::ProfileEvaluator evaluate = [&](std::span<const models::ProfileQuery> queries,
                                                std::span<double> values, std::span<const double> lowestEps) {
    local.assign(queries.size(), 0.0);
    for (int dir = 0; dir < 2; ++dir) {
      HockeyStickTerms& t = terms[dir];
      if (lowestEps[static_cast<std::size_t>(dir)] > 0.0) {
        const double floorX = std::exp(lowestEps[static_cast<std::size_t>(dir)]);
        std::size_t kept = 0;
        for (std::size_t i = 0; i < t.a.size(); ++i)
          if (!(t.b[i] > 0.0 && t.a[i] < floorX * t.b[i])) {
            t.a[kept] = t.a[i];
            t.b[kept++] = t.b[i];
          }
        t.a.resize(kept);
        t.b.resize(kept);
        if (kinks[dir]) kinks[dir]->dropBelow(floorX);
      }
      // This direction's queries in ascending order of eps (addHockeyStick's order).
      index.clear();
      for (std::size_t i = 0; i < queries.size(); ++i)
        if (queries[i].profile == dir) index.push_back(i);
      if (index.empty()) continue;
      std::sort(index.begin(), index.end(), [&](std::size_t a, std::size_t b) { return queries[a].eps < queries[b].eps; });
      x.resize(index.size());
      for (std::size_t k = 0; k < index.size(); ++k) x[k] = std::exp(queries[index[k]].eps);
      sums.assign(index.size(), 0.0);
      addHockeyStick(t, x, sums.data());
      if (kinks[dir]) kinks[dir]->add(x, sums.data());
      for (std::size_t k = 0; k < index.size(); ++k) local[index[k]] = sums[k];
    }
    FPDP_PETSC(MPI_Reduce(local.data(), values.data(), static_cast<PetscMPIInt>(queries.size()), MPI_DOUBLE, MPI_SUM,
                          0, comm));
    FPDP_PETSC(MPI_Bcast(values.data(), static_cast<PetscMPIInt>(queries.size()), MPI_DOUBLE, 0, comm));
    for (double& v : values) v = std::clamp(v, 0.0, 1.0);  // as the grid's values (hockeyStickAndRoots)
  };
  auto found = models::exactEpsilons(requests, ends, evaluate, samples);
  markSuspectRoots(found, requests, suspect, floor, comm);
  std::vector<ExactEpsilonAtDelta> out;
  for (std::size_t j = 0; j < deltas.size(); ++j) out.push_back({deltas[j], {found[2 * j], found[2 * j + 1]}});
  return out;
}

}  // namespace

/// Hockey-stick divergences delta(eps) = sum |c| max(p - e^eps q, 0) and with p, q exchanged (addHockeyStick): on
/// the eps grid, and eps(delta) by root-finding on the same sums (MATH.md §7).
void DivergenceFunctionals::hockeyStickAndRoots(const double* p, const double* q, std::ptrdiff_t stride,
                                                const SingularMasses* singular, double invMp, double invMq,
                                                KinkCorrections& kinkCorrections, DivergenceValues& out) const {
  const std::size_t n = quadrature_.weights().size();
  const std::size_t E = settings_.hockeyStickEps.size(), D = settings_.epsilonDeltas.size();
  const MPI_Comm comm = quadrature_.comm();
  const auto [floorP, floorQ] = signErrorFloors(out);
  const Terms weights = termSources(p, q, stride, singular, nullptr, invMp, invMq);
  kinkCorrections.openExchanged(*work_, invMp, invMq);
  std::optional<HockeyStickKinks>(&kinks)[2] = kinkCorrections.kinks;
  // The terms with a > b of each direction, allocated to their number (the root finder narrows them in place).
  HockeyStickTerms hsTerms[2];
  SuspectTerms suspect[2];
  std::size_t count[2] = {0, 0};
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double wp = weights.wp(i), wq = weights.wq(i);
    count[0] += wp > wq, count[1] += wq > wp;
  }
  for (int dir = 0; dir < 2; ++dir) {
    hsTerms[dir].a.reserve(count[dir]);
    hsTerms[dir].b.reserve(count[dir]);
  }
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double wp = weights.wp(i), wq = weights.wq(i);
    const int dir = wp > wq ? 0 : (wq > wp ? 1 : -1);
    if (dir < 0) continue;
    const double a = dir == 0 ? wp : wq, b = dir == 0 ? wq : wp;
    hsTerms[dir].a.push_back(a);
    hsTerms[dir].b.push_back(b);
    if (weights.boundary(i)) {  // cells (not singular masses) at a wall
      suspect[dir].wall.a.push_back(a);
      suspect[dir].wall.b.push_back(b);
    }
  }
  // Cells at a density's noise floor (as for R_alpha's NoiseSuspect), in both directions whichever density is larger:
  // a true value above the other may hide under the floor.
  for (std::size_t i = 0; i < n; ++i) {
    const bool noiseP = floorP > 0.0 && p[i * stride] <= floorP, noiseQ = floorQ > 0.0 && q[i * stride] <= floorQ;
    if (!noiseP && !noiseQ) continue;
    const double wp = weights.wp(i), wq = weights.wq(i);
    const double sp = noiseP ? weights.weight(i) * floorP * invMp : 0.0;
    const double sq = noiseQ ? weights.weight(i) * floorQ * invMq : 0.0;
    for (int dir = 0; dir < 2; ++dir) {
      NoiseTerms& t = suspect[dir].noise;
      t.a.push_back(dir == 0 ? wp : wq);
      t.b.push_back(dir == 0 ? wq : wp);
      t.sa.push_back(dir == 0 ? sp : sq);
      t.sb.push_back(dir == 0 ? sq : sp);
    }
  }
  const ProfileEnds ends = profileEnds(hsTerms, suspect, comm);
  std::vector<models::ProfileSample> samples;  // the grid's values: the roots' first brackets (MATH.md §7)
  if (E > 0) {
    std::vector<double> expEps(E), hs(2 * E, 0.0), gHs(2 * E);
    for (std::size_t k = 0; k < E; ++k) expEps[k] = std::exp(settings_.hockeyStickEps[k]);
    addHockeyStick(hsTerms[0], expEps, hs.data());
    addHockeyStick(hsTerms[1], expEps, hs.data() + E);
    if (kinks[0]) kinks[0]->add(expEps, hs.data());
    if (kinks[1]) kinks[1]->add(expEps, hs.data() + E);
    // Summed on rank 0 and broadcast: the same bits on every rank, as the root finder's decisions need.
    FPDP_PETSC(MPI_Reduce(hs.data(), gHs.data(), static_cast<PetscMPIInt>(2 * E), MPI_DOUBLE, MPI_SUM, 0, comm));
    FPDP_PETSC(MPI_Bcast(gHs.data(), static_cast<PetscMPIInt>(2 * E), MPI_DOUBLE, 0, comm));
    // delta(eps) of two probability laws lies in [0, 1]; the kink corrections of densities narrower than the cells
    // (HockeyStickKinks::correction) can carry a sum past either end, which no truth can be.
    for (double& v : gHs) v = std::clamp(v, 0.0, 1.0);
    out.hockeyStickPQ.assign(gHs.begin(), gHs.begin() + static_cast<std::ptrdiff_t>(E));
    out.hockeyStickQP.assign(gHs.begin() + static_cast<std::ptrdiff_t>(E), gHs.end());
    out.hockeyStickStatusPQ =
        profileStatuses(suspect[0], ends.ends[0].flatFrom, ends.wallLargest[0], expEps, out.hockeyStickPQ, comm);
    out.hockeyStickStatusQP =
        profileStatuses(suspect[1], ends.ends[1].flatFrom, ends.wallLargest[1], expEps, out.hockeyStickQP, comm);
    for (std::size_t k = 0; k < E && D > 0; ++k)
      samples.insert(samples.end(), {{0, settings_.hockeyStickEps[k], out.hockeyStickPQ[k]},
                                     {1, settings_.hockeyStickEps[k], out.hockeyStickQP[k]}});
  }
  if (D > 0) out.exactEpsilon = epsilonRoots(hsTerms, kinks, suspect, ends.ends, settings_.epsilonDeltas, samples, comm);
}

}  // namespace fpdp::solver
