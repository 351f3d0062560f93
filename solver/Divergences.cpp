#include "solver/Divergences.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "solver/StableFunctions.hpp"

namespace fpdp::solver {

static_assert(DivergenceFunctionals::kTailShells == 4, "DivergenceValues::renyiTailLogMean holds 4 shells");

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Running log-sum-exp: log sum_i exp(t_i) without overflow.
struct LogSumExp {
  double max = -kInf;
  double sum = 0.0;  // sum exp(t_i - max)
  void add(double t) {
    if (t == -kInf) return;
    if (t == kInf) {
      max = kInf;
      sum = 1.0;
      return;
    }
    if (t > max) {
      sum = sum * std::exp(max - t) + 1.0;
      max = t;
    } else {
      sum += std::exp(t - max);
    }
  }
};
}  // namespace

const char* renyiStatusName(RenyiStatus s) {
  switch (s) {
    case RenyiStatus::InfiniteDetected: return "infinite_detected";
    case RenyiStatus::TruncatedSuspect: return "truncated_suspect";
    default: return "finite";
  }
}

DivergenceFunctionals::DivergenceFunctionals(const meshes::DistributedBoxMesh& mesh, std::vector<double> orders)
    : quadrature_(mesh), orders_(std::move(orders)), reconstruction_(mesh), points_(mesh.createVector()) {
  for (double a : orders_)
    if (!(a > 1.0)) throw std::invalid_argument("DivergenceFunctionals: Renyi orders must exceed 1");
  const auto& box = mesh.box();
  const int dim = mesh.dim();
  const PetscInt nOwned = mesh.owned().size();
  onBoundary_.assign(static_cast<std::size_t>(nOwned), 0);
  shell_.assign(static_cast<std::size_t>(nOwned), -1);
  // Shells of whole cell layers: the cells whose index distance to the nearest wall, min_a min(i_a, N_a - 1 - i_a),
  // lies in [m s, (m+1) s), m = 1..kTailShells, with s = max(1, floor(N_min / kCellsPerShellDivisor)) layers (on a
  // uniform mesh about 1/16 of the half-width, so that refinement keeps the same physical layers). Whole layers keep
  // the shell means free of the jitter of a cut through cells; the position of shell m is the volume-weighted mean
  // distance of its cell centres to the nearest wall, so graded meshes get their true spacing.
  int minCells = box.cells(0);
  for (int a = 1; a < dim; ++a) minCells = std::min(minCells, box.cells(a));
  const int layers = std::max(1, minCells / kCellsPerShellDivisor);
  std::array<double, 2 * kTailShells> local{}, global{};  // volumes, then volume-weighted distances
  const auto& vol = mesh.ownedVolumes();
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const std::array<PetscInt, 3> c{i, j, k};
    const auto x = box.centre(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
    PetscInt indexDistance = std::numeric_limits<PetscInt>::max();
    double distance = kInf;  // from the cell centre to the nearest wall
    for (int a = 0; a < dim; ++a) {
      if (c[a] == 0 || c[a] == box.cells(a) - 1) onBoundary_[l] = 1;
      indexDistance = std::min({indexDistance, c[a], box.cells(a) - 1 - c[a]});
      distance = std::min({distance, x[a] - box.axis(a).lower(), box.axis(a).upper() - x[a]});
    }
    const PetscInt layer = indexDistance / layers;
    if (layer >= 1 && layer <= kTailShells) {
      shell_[l] = static_cast<int>(layer) - 1;
      local[shell_[l]] += vol[l];
      local[kTailShells + shell_[l]] += vol[l] * distance;
    }
  });
  FPDP_PETSC(MPI_Allreduce(local.data(), global.data(), 2 * kTailShells, MPI_DOUBLE, MPI_SUM, mesh.comm()));
  shellLogVolume_.fill(-kInf);
  shellPosition_.fill(0.0);
  tailTestPossible_ = true;
  for (int m = 0; m < kTailShells; ++m) {
    if (global[m] > 0) {
      shellLogVolume_[m] = std::log(global[m]);
      shellPosition_[m] = global[kTailShells + m] / global[m];
    } else {
      tailTestPossible_ = false;  // the mesh is too coarse for the shells: no growth test
    }
  }
}

void DivergenceFunctionals::measureHealth(const double* p, const double* q, std::ptrdiff_t stride,
                                          const SingularMasses* singular, DivergenceValues& out) const {
  const auto& w = quadrature_.weights();
  const std::size_t n = w.size();
  const MPI_Comm comm = quadrature_.comm();
  double local[2] = {0, 0}, localMin[2] = {kInf, kInf}, localMax[2] = {-kInf, -kInf}, localNeg[2] = {0, 0},
         localBad[2] = {0, 0};
  for (std::size_t c = 0; c < n; ++c) {
    const double vals[2] = {p[c * stride], q[c * stride]};
    for (int f = 0; f < 2; ++f) {
      const double x = vals[f];
      if (!std::isfinite(x)) {
        localBad[f] += 1;
        continue;
      }
      local[f] += w[c] * x;
      localMin[f] = std::min(localMin[f], x);
      localMax[f] = std::max(localMax[f], x);
      if (x < 0) localNeg[f] += 1;
    }
  }
  // Singular masses (replicated) are counted on rank 0 only; they enter the mass and the negative/non-finite counts,
  // not the extrema of the cell densities.
  double localSingular[2] = {0, 0}, singularMass[2] = {0, 0};
  int rank = 0;
  FPDP_PETSC(MPI_Comm_rank(comm, &rank));
  if (singular && rank == 0) {
    if (singular->p.size() != singular->q.size())
      throw std::invalid_argument("SingularMasses: p and q must have the same length");
    for (std::size_t j = 0; j < singular->p.size(); ++j) {
      const double vals[2] = {singular->p[j], singular->q[j]};
      for (int f = 0; f < 2; ++f) {
        if (!std::isfinite(vals[f])) {
          localBad[f] += 1;
          continue;
        }
        localSingular[f] += vals[f];
        if (vals[f] < 0) localNeg[f] += 1;
      }
    }
    local[0] += localSingular[0];
    local[1] += localSingular[1];
  }
  FPDP_PETSC(MPI_Allreduce(localSingular, singularMass, 2, MPI_DOUBLE, MPI_SUM, comm));
  double mass[2], mn[2], mx[2], neg[2], bad[2];
  FPDP_PETSC(MPI_Allreduce(local, mass, 2, MPI_DOUBLE, MPI_SUM, comm));
  FPDP_PETSC(MPI_Allreduce(localMin, mn, 2, MPI_DOUBLE, MPI_MIN, comm));
  FPDP_PETSC(MPI_Allreduce(localMax, mx, 2, MPI_DOUBLE, MPI_MAX, comm));
  FPDP_PETSC(MPI_Allreduce(localNeg, neg, 2, MPI_DOUBLE, MPI_SUM, comm));
  FPDP_PETSC(MPI_Allreduce(localBad, bad, 2, MPI_DOUBLE, MPI_SUM, comm));
  DensityHealth* health[2] = {&out.p, &out.q};
  for (int f = 0; f < 2; ++f) {
    health[f]->mass = mass[f];
    health[f]->singularMass = singularMass[f];
    health[f]->min = mn[f];
    health[f]->max = mx[f];
    health[f]->negativeCells = static_cast<long>(neg[f]);
    health[f]->finite = bad[f] == 0;
  }
}

DivergenceValues DivergenceFunctionals::evaluate(Vec u, const SingularMasses* singular) const {
  // The divergences are integrals of point values, reconstructed to fourth order from the cell averages
  // (PointValues.hpp); the masses, minima and negative-cell counts describe the state itself.
  reconstruction_.apply(u, points_);
  const PetscScalar* a;
  FPDP_PETSC(VecGetArrayRead(points_, &a));
  DivergenceValues v;
  try {
    v = evaluate(a, a + 1, 2, singular);
  } catch (...) {
    VecRestoreArrayRead(points_, &a);
    throw;
  }
  FPDP_PETSC(VecRestoreArrayRead(points_, &a));
  FPDP_PETSC(VecGetArrayRead(u, &a));
  try {
    measureHealth(a, a + 1, 2, singular, v);
  } catch (...) {
    VecRestoreArrayRead(u, &a);
    throw;
  }
  FPDP_PETSC(VecRestoreArrayRead(u, &a));
  return v;
}

DivergenceValues DivergenceFunctionals::evaluate(const double* p, const double* q, std::ptrdiff_t stride,
                                                 const SingularMasses* singular) const {
  const auto& w = quadrature_.weights();
  const std::size_t n = w.size();
  const MPI_Comm comm = quadrature_.comm();
  DivergenceValues out;

  // Pass 1: masses and health of each density.
  measureHealth(p, q, stride, singular, out);
  const double mass[2] = {out.p.mass, out.q.mass};
  const std::size_t K = orders_.size();
  out.renyi.assign(K, kInf);
  out.eAlphaMinusOne.assign(K, kInf);
  if (!out.p.finite || !out.q.finite || !(mass[0] > 0) || !(mass[1] > 0)) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    out.kl = out.tv = nan;
    std::fill(out.renyi.begin(), out.renyi.end(), nan);
    std::fill(out.eAlphaMinusOne.begin(), out.eAlphaMinusOne.end(), nan);
    out.renyiOnBox = out.renyi;
    out.renyiBoundaryShare.assign(K, nan);
    out.renyiTailLogMean.assign(K, {nan, nan, nan, nan});
    out.renyiStatus.assign(K, RenyiStatus::Finite);
    return out;
  }

  // Pass 2: the divergences of the normalised densities.
  const double invMp = 1.0 / mass[0], invMq = 1.0 / mass[1];
  constexpr double kNegligible = 1e-200;
  long underflow = 0;
  // sums: [0] KL, [1] TV, [2 .. 2+K) E_alpha - 1 ; lse per order for the large-divergence branch.
  // [2+K .. 2+2K) the boundary cells' part of E_alpha - 1.
  std::vector<double> sums(2 + 2 * K, 0.0);
  double excludedP = 0.0;
  std::vector<LogSumExp> lse(K), lseBoundary(K), lseShell(K * kTailShells);
  // One term of every sum: weight wc (a cell volume, or 1 for a singular mass), raw values pRaw and qRaw (point
  // values of the densities, or the singular masses), whether it touches a wall, and its tail shell (-1: none).
  auto accumulate = [&](double wc, double pRaw, double qRaw, bool boundary, int shell) {
    const double pc = std::max(pRaw, 0.0) * invMp;  // negatives enter as 0 (counted above)
    const double qc = std::max(qRaw, 0.0) * invMq;
    sums[1] += wc * std::fabs(pc - qc);
    if (qRaw < 0.0) {
      // A negative q is an artefact of a non-positive scheme, not a zero of the density: the cell is left out of
      // KL and R_alpha (which a zero q would make +inf), and the p-mass left out is reported.
      excludedP += wc * pc;
      return;
    }
    if (qc == 0.0) {
      // q underflowed to 0. Where p is negligible too (below 1e-200 of its maximum) the cell is numerically empty:
      // both true densities are below the range of doubles there and their contribution is not resolvable, so it is
      // dropped and counted (DivergenceValues::underflowCells). Where p is not negligible, r = inf: +infinity.
      if (pc > 0.0 && pc <= kNegligible * out.p.max * invMp) {
        ++underflow;
        return;
      }
      if (pc > 0.0) {
        sums[0] = kInf;
        for (std::size_t k = 0; k < K; ++k) {
          sums[2 + k] = kInf;
          lse[k].add(kInf);
        }
      }
      return;
    }
    const double logWq = std::log(wc * qc);
    if (pc == 0.0) {  // r = 0: h = 1, g_alpha = alpha - 1, r^alpha = 0
      sums[0] += wc * qc;
      for (std::size_t k = 0; k < K; ++k) {
        sums[2 + k] += wc * qc * (orders_[k] - 1.0);
        if (boundary) sums[2 + K + k] += wc * qc * (orders_[k] - 1.0);
      }
      return;
    }
    const double rho = (pc - qc) / qc;
    // Near r = 1 (|rho| < 1/2) the cancellation-free forms; farther out the direct ones, with log r from the two
    // logarithms, so that r ~ 1e-17 (rho rounded to -1) or r overflowing (rho = inf) stay finite:
    //   q h(r) = p log r - (p - q),   q g_alpha(r) = q r^alpha - q - alpha (p - q).
    const bool nearOne = std::fabs(rho) < 0.5;
    const double u = nearOne ? std::log1p(rho) : std::log(pc) - std::log(qc);  // log r
    const double l1l = nearOne ? log1pMinusLinear(rho) : 0.0;
    sums[0] += nearOne ? wc * qc * (rho * u + l1l) : wc * (pc * u - (pc - qc));
    for (std::size_t k = 0; k < K; ++k) {
      const double alpha = orders_[k];
      const double term = nearOne ? wc * qc * (expm1MinusLinear(alpha * u) + alpha * l1l)
                                  : wc * (std::exp(std::log(qc) + alpha * u) - qc - alpha * (pc - qc));
      sums[2 + k] += term;
      if (boundary) sums[2 + K + k] += term;
      lse[k].add(logWq + alpha * u);
      if (boundary) lseBoundary[k].add(logWq + alpha * u);
      if (shell >= 0) lseShell[k * kTailShells + static_cast<std::size_t>(shell)].add(logWq + alpha * u);
    }
  };
  for (std::size_t c = 0; c < n; ++c) accumulate(w[c], p[c * stride], q[c * stride], onBoundary_[c] != 0, shell_[c]);
  int rank = 0;
  FPDP_PETSC(MPI_Comm_rank(comm, &rank));
  if (singular && rank == 0)
    for (std::size_t j = 0; j < singular->p.size(); ++j) accumulate(1.0, singular->p[j], singular->q[j], false, -1);
  std::vector<double> global(sums.size());
  FPDP_PETSC(MPI_Allreduce(sums.data(), global.data(), static_cast<PetscMPIInt>(sums.size()), MPI_DOUBLE, MPI_SUM,
                            comm));
  FPDP_PETSC(MPI_Allreduce(&underflow, &out.underflowCells, 1, MPI_LONG, MPI_SUM, comm));
  out.kl = global[0];
  out.tv = 0.5 * global[1];
  FPDP_PETSC(MPI_Allreduce(&excludedP, &out.excludedMassP, 1, MPI_DOUBLE, MPI_SUM, comm));
  // Large-divergence branch: combine the per-rank log-sum-exp pairs.
  std::vector<double> lmax(K), gmax(K);
  for (std::size_t k = 0; k < K; ++k) lmax[k] = lse[k].max;
  FPDP_PETSC(MPI_Allreduce(lmax.data(), gmax.data(), static_cast<PetscMPIInt>(K), MPI_DOUBLE, MPI_MAX, comm));
  std::vector<double> lsum(K), gsum(K);
  for (std::size_t k = 0; k < K; ++k)
    lsum[k] = (lse[k].max == -kInf || gmax[k] == kInf) ? (lse[k].max == kInf ? 1.0 : 0.0)
                                                       : lse[k].sum * std::exp(lse[k].max - gmax[k]);
  FPDP_PETSC(MPI_Allreduce(lsum.data(), gsum.data(), static_cast<PetscMPIInt>(K), MPI_DOUBLE, MPI_SUM, comm));
  // Boundary share: the boundary cells' part of the same sum, scaled by the same global maximum.
  std::vector<double> bsum(K), gbsum(K);
  for (std::size_t k = 0; k < K; ++k)
    bsum[k] = (lseBoundary[k].max == -kInf || !std::isfinite(gmax[k])) ? 0.0
                                                                       : lseBoundary[k].sum * std::exp(lseBoundary[k].max - gmax[k]);
  FPDP_PETSC(MPI_Allreduce(bsum.data(), gbsum.data(), static_cast<PetscMPIInt>(K), MPI_DOUBLE, MPI_SUM, comm));
  // Tail shells: log of the mean of the normalised p^alpha q^(1-alpha) over each shell (global log-sum-exp).
  const std::size_t S = K * kTailShells;
  std::vector<double> shellMax(S), shellGlobalMax(S), shellSum(S), shellGlobalSum(S);
  for (std::size_t i = 0; i < S; ++i) shellMax[i] = lseShell[i].max;
  FPDP_PETSC(MPI_Allreduce(shellMax.data(), shellGlobalMax.data(), static_cast<PetscMPIInt>(S), MPI_DOUBLE, MPI_MAX,
                            comm));
  for (std::size_t i = 0; i < S; ++i)
    shellSum[i] = (lseShell[i].max == -kInf || !std::isfinite(shellGlobalMax[i]))
                      ? 0.0
                      : lseShell[i].sum * std::exp(lseShell[i].max - shellGlobalMax[i]);
  FPDP_PETSC(MPI_Allreduce(shellSum.data(), shellGlobalSum.data(), static_cast<PetscMPIInt>(S), MPI_DOUBLE, MPI_SUM,
                            comm));
  out.renyiTailLogMean.assign(K, {});
  std::vector<char> tailGrows(K, 0);
  for (std::size_t k = 0; k < K; ++k) {
    auto& L = out.renyiTailLogMean[k];
    bool finite = tailTestPossible_;
    for (int m = 0; m < kTailShells; ++m) {
      const std::size_t i = k * kTailShells + static_cast<std::size_t>(m);
      L[m] = shellGlobalSum[i] > 0 ? shellGlobalMax[i] + std::log(shellGlobalSum[i]) - shellLogVolume_[m] : -kInf;
      finite = finite && std::isfinite(L[m]);
    }
    if (!finite) continue;
    // Outward slopes s_m = (L_m - L_{m+1}) / (x_{m+1} - x_m) (m = 0 outermost, x the shell positions): growth
    // toward the walls with s_m > 0 (first differences), convexity s_0 >= s_1 >= ... (second differences).
    double slope[kTailShells - 1];
    for (int m = 0; m + 1 < kTailShells; ++m)
      slope[m] = (L[m] - L[m + 1]) / (shellPosition_[m + 1] - shellPosition_[m]);
    bool grows = slope[kTailShells - 2] > 0.0;
    for (int m = 0; m + 2 < kTailShells && grows; ++m) grows = slope[m] >= slope[m + 1];
    tailGrows[k] = grows;
  }
  out.renyiBoundaryShare.assign(K, 0.0);
  for (std::size_t k = 0; k < K; ++k) {
    // Small divergences: the share of E_alpha - 1 (what R_alpha is made of); large ones: the share of E_alpha.
    const double em1 = global[2 + k], em1Boundary = global[2 + K + k];
    if (std::isfinite(em1) && em1 < 1.0)
      out.renyiBoundaryShare[k] = em1 > 0 ? em1Boundary / em1 : 0.0;
    else
      out.renyiBoundaryShare[k] = gsum[k] > 0 ? gbsum[k] / gsum[k] : 0.0;
  }
  for (std::size_t k = 0; k < K; ++k) {
    const double alpha = orders_[k];
    const double em1 = global[2 + k];
    out.eAlphaMinusOne[k] = em1;
    if (std::isfinite(em1) && em1 < 1.0) {
      out.renyi[k] = std::log1p(std::max(em1, 0.0)) / (alpha - 1.0);
    } else if (gmax[k] == kInf) {
      out.renyi[k] = kInf;
    } else {
      // log E_alpha = log sum (w q r^alpha) = gmax + log gsum; E_alpha here is the normalised one, since
      // w q already carries the normalisation.
      out.renyi[k] = (gmax[k] + std::log(gsum[k])) / (alpha - 1.0);
      if (!std::isfinite(em1)) out.eAlphaMinusOne[k] = std::expm1(gmax[k] + std::log(gsum[k]));
    }
  }
  // Status of each order; a divergent integral is reported as +inf, the box number kept aside.
  out.renyiOnBox = out.renyi;
  out.renyiStatus.assign(K, RenyiStatus::Finite);
  for (std::size_t k = 0; k < K; ++k) {
    const bool wallsMatter = out.renyiBoundaryShare[k] > kBoundaryShareTolerance;
    if (out.renyi[k] == kInf) {
      out.renyiStatus[k] = RenyiStatus::InfiniteDetected;
    } else if (wallsMatter && tailGrows[k]) {
      out.renyiStatus[k] = RenyiStatus::InfiniteDetected;
      out.renyi[k] = kInf;
      out.eAlphaMinusOne[k] = kInf;
    } else if (wallsMatter) {
      out.renyiStatus[k] = RenyiStatus::TruncatedSuspect;
    }
  }
  return out;
}

}  // namespace fpdp::solver
