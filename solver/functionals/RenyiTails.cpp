// DivergenceFunctionals' verdicts on R_alpha: the fitted far-field model, tail shells, statuses, noise-floor shares.
#include "solver/functionals/Divergences.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include <Eigen/Eigenvalues>

#include "solver/functionals/DivergencesDetail.hpp"

namespace fpdp::solver {

bool DivergenceFunctionals::fitTailPrecisions(const double* p, const double* q, std::ptrdiff_t stride, double floorP,
                                              double floorQ, models::Matrix& precisionP,
                                              models::Matrix& precisionQ, models::Vector& gradientP,
                                              models::Vector& gradientQ) const {
  // Least squares for log f = c0 + sum_a c_a z_a + sum_{a<=b} c_ab z_a z_b (z the centres scaled to [-1, 1]^d, which
  // keeps the normal equations well conditioned), f = p and f = q with the same design: the normal matrix and both
  // right-hand sides are summed over the owned cells and reduced over the ranks.
  const int dim = quadrature_.dim();
  const int nb = 1 + dim + dim * (dim + 1) / 2;
  const std::size_t nbs = static_cast<std::size_t>(nb);
  std::vector<double> sums(nbs * nbs + 2 * nbs + 1, 0.0), global(sums.size());
  double* A = sums.data();
  double* bp = A + nbs * nbs;
  double* bq = bp + nbs;
  std::vector<double> phi(nbs);
  const meshes::DistributedBoxMesh& mesh = *work_->mesh;
  const auto& box = mesh.box();
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const auto c = static_cast<std::size_t>(l);
    const double pc = p[c * stride], qc = q[c * stride];
    if (!fitInterior_[c] || !(pc > floorP) || !(qc > floorQ)) return;
    // The centre scaled to [-1, 1]^d, computed here rather than stored (24 B per cell in 3-D, docs/scaling.md §6).
    const auto x = box.centre(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
    double z[3];
    for (int a = 0; a < dim; ++a) z[a] = (x[a] - fitMid_[a]) / fitHalfWidth_[a];
    std::size_t m = 0;
    phi[m++] = 1.0;
    for (int a = 0; a < dim; ++a) phi[m++] = z[a];
    for (int a = 0; a < dim; ++a)
      for (int b = a; b < dim; ++b) phi[m++] = z[a] * z[b];
    const double lp = std::log(pc), lq = std::log(qc);
    for (std::size_t i = 0; i < nbs; ++i) {
      for (std::size_t j = 0; j <= i; ++j) A[i * nbs + j] += phi[i] * phi[j];
      bp[i] += phi[i] * lp;
      bq[i] += phi[i] * lq;
    }
    sums.back() += 1.0;
  });
  FPDP_PETSC(MPI_Allreduce(sums.data(), global.data(), static_cast<PetscMPIInt>(sums.size()), MPI_DOUBLE, MPI_SUM,
                            quadrature_.comm()));
  // At least twice as many cells as coefficients, or the quadratic is not determined by the data.
  if (global.back() < 2.0 * nb) return false;
  models::Matrix N(nb, nb);
  models::Vector rp(nb), rq(nb);
  for (int i = 0; i < nb; ++i) {
    for (int j = 0; j <= i; ++j) N(i, j) = N(j, i) = global[static_cast<std::size_t>(i) * nbs + static_cast<std::size_t>(j)];
    rp(i) = global[nbs * nbs + static_cast<std::size_t>(i)];
    rq(i) = global[nbs * nbs + nbs + static_cast<std::size_t>(i)];
  }
  const auto solver = N.colPivHouseholderQr();
  if (solver.rank() < nb) return false;  // the cells lie on a lower-dimensional set (a line, a plane)
  const models::Vector cp = solver.solve(rp), cq = solver.solve(rq);
  precisionP.resize(dim, dim);
  precisionQ.resize(dim, dim);
  int m = 1 + dim;
  for (int a = 0; a < dim; ++a)
    for (int b = a; b < dim; ++b, ++m) {
      // d^2/dz_a dz_b of the fit: 2 c_aa on the diagonal, c_ab off it; x = mid + halfwidth z.
      const double scale = 1.0 / (fitHalfWidth_[static_cast<std::size_t>(a)] * fitHalfWidth_[static_cast<std::size_t>(b)]);
      const double f = a == b ? 2.0 : 1.0;
      precisionP(a, b) = precisionP(b, a) = -f * cp(m) * scale;
      precisionQ(a, b) = precisionQ(b, a) = -f * cq(m) * scale;
    }
  gradientP.resize(dim);
  gradientQ.resize(dim);
  for (int a = 0; a < dim; ++a) {  // d/dx_a = (d/dz_a) / halfwidth_a at z = 0
    gradientP(a) = cp(1 + a) / fitHalfWidth_[static_cast<std::size_t>(a)];
    gradientQ(a) = cq(1 + a) / fitHalfWidth_[static_cast<std::size_t>(a)];
  }
  return true;
}

bool DivergenceFunctionals::tiltedPeakUnresolved(double alpha, const models::Matrix& Pp, const models::Matrix& Pq,
                                                 const models::Vector& gp, const models::Vector& gq) const {
  const int dim = quadrature_.dim();
  // log f(x) = c + g.(x - mid) - (x - mid)' P (x - mid)/2: the peak of f at mid + P^-1 g, of the tilted law at
  // mid + P_alpha^-1 g_alpha with P_alpha = alpha P_p + (1 - alpha) P_q, g_alpha likewise.
  const models::Matrix Pa = alpha * Pp + (1.0 - alpha) * Pq;
  const models::Vector ga = alpha * gp + (1.0 - alpha) * gq;
  const Eigen::LDLT<models::Matrix> tilted(Pa), lawP(Pp), lawQ(Pq);
  if (tilted.info() != Eigen::Success || lawP.info() != Eigen::Success || lawQ.info() != Eigen::Success) return false;
  const models::Vector peak = tilted.solve(ga);  // relative to the mid-point
  for (int a = 0; a < dim; ++a)
    if (std::fabs(peak(a)) > fitHalfWidth_[static_cast<std::size_t>(a)]) return true;
  // How far below its own maximum each density lies at the tilted peak (the fit's log scale): beyond the double range
  // the cells there are empty on every mesh.
  constexpr double kUnderflowLog = 650.0;  // e^-650 ~ 1e-282: below it a density times a cell volume underflows
  const auto dropAt = [&](const Eigen::LDLT<models::Matrix>& law, const models::Matrix& P, const models::Vector& g) {
    const models::Vector d = peak - law.solve(g);
    return 0.5 * d.dot(P * d);
  };
  return dropAt(lawP, Pp, gp) > kUnderflowLog || dropAt(lawQ, Pq, gq) > kUnderflowLog;
}

/// Tail shells: log of the mean of the normalised p^alpha q^(1-alpha) over each shell (a diagnostic, not a
/// criterion), from the reduced shell sums.
void DivergenceFunctionals::tailLogMeans(const std::vector<double>& sums, const OrderScales& scales,
                                         DivergenceValues& out) const {
  const std::size_t K = orders_.size();
  const double* shellSum = SumArrays(sums.data(), K).shellSum;
  out.renyiTailLogMean.assign(K, {});
  for (std::size_t k = 0; k < K; ++k) {
    auto& L = out.renyiTailLogMean[k];
    for (int m = 0; m < kTailShells; ++m) {
      const std::size_t i = k * kTailShells + static_cast<std::size_t>(m);
      L[m] = tailTestPossible_ && shellSum[i] > 0
                 ? scales.globalMax[K + i] + std::log(shellSum[i]) - shellLogVolume_[m]
                 : -kInf;
    }
  }
}

/// The far-field model (header comment): P_alpha = alpha P_p + (1 - alpha) P_q, infinite iff not positive definite.
/// Per order: whether the integrand's tails diverge (out.renyiTailPrecision: the smallest eigenvalue of P_alpha).
std::vector<char> DivergenceFunctionals::tailDivergence(const double* p, const double* q, std::ptrdiff_t stride,
                                                        const SingularMasses* singular, DivergenceValues& out) const {
  const std::size_t K = orders_.size();
  const int dim = quadrature_.dim();
  out.renyiTailPrecision.assign(K, kNaN);
  std::vector<char> tailDiverges(K, 0);
  models::Matrix Pp, Pq;
  models::Vector gp, gq;
  const auto [noiseP, noiseQ] = noiseFloors(out);
  const double floorP = std::max(noiseP, kTailFitFloor * out.p.max);
  const double floorQ = std::max(noiseQ, kTailFitFloor * out.q.max);
  // Singular masses exist only for laws projected onto a constraint set C inside the box (MATH.md §2.1): they are
  // supported on C, there is no far field, and R_alpha is infinite only where q = 0 and p > 0 (handled above).
  const bool projected = singular && !singular->empty();
  if (!projected && fitTailPrecisions(p, q, stride, floorP, floorQ, Pp, Pq, gp, gq)) {
    out.tailPrecisionP.assign(Pp.data(), Pp.data() + Pp.size());  // symmetric: row- = column-major
    out.tailPrecisionQ.assign(Pq.data(), Pq.data() + Pq.size());
    // The model applies to laws that decay within the box along every direction: the fitted Gaussians' standard
    // deviations below the half-widths, lambda_min(D P D) > 1 with D = diag(half-widths). Otherwise (laws that fill
    // the box, e.g. supported on it, or flat) the far field is not seen and nothing is concluded from it.
    models::Matrix Dh = models::Matrix::Zero(dim, dim);
    for (int a = 0; a < dim; ++a) Dh(a, a) = fitHalfWidth_[static_cast<std::size_t>(a)];
    auto smallest = [](const models::Matrix& M) {
      return Eigen::SelfAdjointEigenSolver<models::Matrix>(M, Eigen::EigenvaluesOnly).eigenvalues()(0);
    };
    const bool applies = smallest(Dh * Pp * Dh) > 1.0 && smallest(Dh * Pq * Dh) > 1.0;
    for (std::size_t k = 0; k < K && applies; ++k) {
      const models::Matrix Pa = orders_[k] * Pp + (1.0 - orders_[k]) * Pq;
      const double lmin = smallest(Pa);
      out.renyiTailPrecision[k] = lmin;
      tailDiverges[k] = !(lmin > 0.0);
      // 2: finite, but its integrand's peak beyond what the quadrature holds (tailStatuses: truncated_suspect).
      if (!tailDiverges[k] && tiltedPeakUnresolved(orders_[k], Pp, Pq, gp, gq)) tailDiverges[k] = 2;
    }
  }
  return tailDiverges;
}

/// Status of each order; a divergent integral is reported as +inf, the box number kept aside (renyiOnBox).
void DivergenceFunctionals::tailStatuses(const std::vector<char>& tailDiverges, DivergenceValues& out) const {
  const std::size_t K = orders_.size();
  out.renyiOnBox = out.renyi;
  out.renyiStatus.assign(K, RenyiStatus::Finite);
  for (std::size_t k = 0; k < K; ++k) {
    const bool wallsMatter = out.renyiBoundaryShare[k] > kBoundaryShareTolerance;
    if (out.renyi[k] == kInf) {
      out.renyiStatus[k] = RenyiStatus::InfiniteDetected;
    } else if (tailDiverges[k] == 2) {
      out.renyiStatus[k] = RenyiStatus::TruncatedSuspect;
    } else if (tailDiverges[k]) {
      out.renyiStatus[k] = RenyiStatus::InfiniteDetected;
      out.renyi[k] = kInf;
      out.eAlphaMinusOne[k] = kInf;
      out.logEAlpha[k] = kInf;
      out.dRenyiDAlpha[k] = kInf;
      out.informationRatio[k] = out.informationRatioSigma[k] = kNaN;  // I_alpha and E_alpha both diverge
    } else if (wallsMatter) {
      out.renyiStatus[k] = RenyiStatus::TruncatedSuspect;
    }
  }
}

/// Noise floor (docs/scheme.md §5, "Noise floor"). A scheme that is not sign-preserving (BDF2, Crank–Nicolson, a
/// loose linear-solver tolerance, the fourth-order reconstruction) leaves sign errors of size nu = max(-min u, 0) in
/// the tails, and positive values of that size are no better known. There p^alpha q^(1-alpha) turns the noise of
/// p/q into a factor up to (noise ratio)^alpha: R_alpha can be off by orders of magnitude while KL and low orders
/// are fine. The cells with p <= kNoiseFloorFactor nu_p or q <= kNoiseFloorFactor nu_q carry a share N/E of
/// E_alpha; R_alpha - log(E_alpha - N)/(alpha - 1) is how much of R_alpha rests on them. Nothing to do (and no
/// cost) when neither density has a negative value.
void DivergenceFunctionals::noiseFloorShares(const Terms& terms, const std::vector<double>& sums,
                                             const OrderScales& scales, DivergenceValues& out) const {
  const std::size_t K = orders_.size();
  const std::size_t n = quadrature_.weights().size();
  const double *p = terms.p, *q = terms.q;
  const std::ptrdiff_t stride = terms.stride;
  const double* S0 = SumArrays(sums.data(), K).S0;
  out.renyiNoiseShare.assign(K, 0.0);
  const auto [floorP, floorQ] = noiseFloors(out);
  if (floorP > 0.0 || floorQ > 0.0) {  // the extrema are global: every rank takes this branch or none
    std::vector<double> noise(K, 0.0), gNoise(K);
    for (std::size_t c = 0; c < n; ++c) {
      if (terms.kind(c) != Terms::Regular || !(p[c * stride] <= floorP || q[c * stride] <= floorQ)) continue;
      const double logWq = terms.logWq[c], u = terms.u[c];
      for (std::size_t k = 0; k < K; ++k) noise[k] += std::exp(logWq + orders_[k] * u - scales.logScale[k]);  // S0's scale
    }
    FPDP_PETSC(MPI_Allreduce(noise.data(), gNoise.data(), static_cast<PetscMPIInt>(K), MPI_DOUBLE, MPI_SUM,
                              quadrature_.comm()));
    for (std::size_t k = 0; k < K; ++k) {
      if (!(S0[k] > 0.0) || !std::isfinite(out.renyi[k])) continue;
      const double share = std::min(gNoise[k] / S0[k], 1.0);
      out.renyiNoiseShare[k] = share;
      const double resting = -std::log1p(-share) / (orders_[k] - 1.0);  // +inf when the noise cells carry it all
      if (out.renyiStatus[k] == RenyiStatus::Finite &&
          resting > kNoiseRelativeTolerance * std::fabs(out.renyi[k]) + kNoiseAbsoluteTolerance)
        out.renyiStatus[k] = RenyiStatus::NoiseSuspect;
    }
  }
}

}  // namespace fpdp::solver
