#include "solver/functionals/RenyiRate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace fpdp::solver {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

RenyiRateFunctional::RenyiRateFunctional(const meshes::DistributedBoxMesh& mesh, std::vector<double> orders,
                                         const models::Matrix& sigma, std::shared_ptr<LogRatioWorkspace> workspace)
    : mesh_(mesh),
      orders_(std::move(orders)),
      sigma_(sigma),
      work_(workspace ? std::move(workspace) : std::make_shared<LogRatioWorkspace>(mesh)) {
  if (work_->mesh != &mesh) throw std::invalid_argument("RenyiRateFunctional: the workspace is for another mesh");
  for (double a : orders_)
    if (!(a > 1.0)) throw std::invalid_argument("RenyiRateFunctional: Renyi orders must exceed 1");
  if (sigma_.rows() != mesh.dim() || sigma_.cols() != mesh.dim())
    throw std::invalid_argument("RenyiRateFunctional: Sigma must be d x d");
  sigmaInv_ = sigma_.inverse();
}

RenyiRateValues RenyiRateFunctional::evaluate(Vec u, const std::vector<std::array<double, 3>>& driftGap) const {
  const std::size_t K = orders_.size();
  const std::size_t n = static_cast<std::size_t>(mesh_.owned().size());
  if (driftGap.size() != n) throw std::invalid_argument("RenyiRateFunctional: one drift gap per owned cell");
  RenyiRateValues out;
  auto fillNaN = [&] { out.assign(K, RenyiRateEntry{kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN}); };
  if (!work_->gradient) {
    fillNaN();
    return out;
  }
  work_->fillPoints(u, false);  // those of the divergences at the same output step, if they came first
  const std::vector<std::array<double, 3>>& grad = work_->logRatioGradient();
  const PetscScalar* pts;
  FPDP_PETSC(VecGetArrayRead(work_->points, &pts));
  const int d = mesh_.dim();
  const auto& w = mesh_.ownedVolumes();
  const MPI_Comm comm = mesh_.comm();

  // Per cell with p > 0 and q > 0 (p = 0 has weight 0): its index, log |c| q and u = log r, 20 B; the cell's
  // |grad u|^2, grad u^T Sigma grad u, <grad u, g1 - g2>, |g1 - g2|, (g1 - g2)^T Sigma^-1 (g1 - g2) (NaN if
  // undefined) are formed where a pass needs them, from the gradient and the drift gap both held anyway (a record of
  // all seven, 56 B per cell, was the largest item of an output step's peak memory, docs/scaling.md §6).
  struct Forms {
    double G = 0, GS = 0, X = 0, gap = 0, gapSigma = 0;
  };
  auto formsOf = [&](std::size_t c) {
    Forms f;
    const double* g = grad[c].data();
    const double* dg = driftGap[c].data();
    for (int a = 0; a < d; ++a) {
      f.G += g[a] * g[a];
      f.X += g[a] * dg[a];
      f.gap += dg[a] * dg[a];
      for (int b = 0; b < d; ++b) {
        f.GS += g[a] * sigma_(a, b) * g[b];
        f.gapSigma += dg[a] * sigmaInv_(a, b) * dg[b];
      }
    }
    f.gap = std::sqrt(f.gap);
    f.gapSigma = std::sqrt(f.gapSigma);
    return f;
  };
  std::vector<std::uint32_t> index;
  std::vector<double> logWq, logRatio;
  index.reserve(n);
  logWq.reserve(n);
  logRatio.reserve(n);
  double bad = 0.0;  // a non-finite value: no rate
  for (std::size_t c = 0; c < n; ++c) {
    const double p = pts[2 * c], q = pts[2 * c + 1];
    if (!std::isfinite(p) || !std::isfinite(q)) {
      bad = 1.0;
      continue;
    }
    // p <= 0: weight 0. q <= 0: left out, as DivergenceFunctionals does (a negative q is a scheme artefact; q = 0
    // where p > 0 makes R_alpha infinite, and the caller's R_alpha says so).
    if (!(p > 0) || !(q > 0)) continue;
    index.push_back(static_cast<std::uint32_t>(c));
    logWq.push_back(std::log(w[c] * q));
    logRatio.push_back(std::log(p) - std::log(q));
  }
  const std::size_t kept = index.size();
  FPDP_PETSC(VecRestoreArrayRead(work_->points, &pts));

  // Pass 1: per order the global maximum M of log(|c| q) + alpha u (the scale of the tilted weights).
  std::vector<double> localMax(K + 1, -kInf), globalMax(K + 1);
  for (std::size_t i = 0; i < kept; ++i)
    for (std::size_t k = 0; k < K; ++k) localMax[k] = std::max(localMax[k], logWq[i] + orders_[k] * logRatio[i]);
  localMax[K] = bad;
  FPDP_PETSC(MPI_Allreduce(localMax.data(), globalMax.data(), static_cast<PetscMPIInt>(K + 1), MPI_DOUBLE, MPI_MAX, comm));
  if (globalMax[K] > 0) {
    fillNaN();
    return out;
  }
  // Pass 2: S0 = sum t, SI = sum t |grad u|^2, SIS = sum t (Sigma form), SX = sum t <grad u, g1 - g2>, and the
  // tilted weight of the cells left out (t = |c| q r^alpha e^-M).
  enum { S0, SI, SIS, SX, Excluded, kSums };
  std::vector<double> sums(kSums * K, 0.0), global(kSums * K);
  for (std::size_t i = 0; i < kept; ++i) {
    const Forms cell = formsOf(index[i]);
    for (std::size_t k = 0; k < K; ++k) {
      const double t = std::exp(logWq[i] + orders_[k] * logRatio[i] - globalMax[k]);
      double* s = sums.data() + kSums * k;
      s[S0] += t;
      if (std::isfinite(cell.G) && std::isfinite(cell.GS)) {
        s[SI] += t * cell.G;
        s[SIS] += t * cell.GS;
        if (std::isfinite(cell.X)) s[SX] += t * cell.X;
        else s[Excluded] += t;
      } else {
        s[Excluded] += t;
      }
    }
  }
  FPDP_PETSC(MPI_Allreduce(sums.data(), global.data(), static_cast<PetscMPIInt>(sums.size()), MPI_DOUBLE, MPI_SUM, comm));
  // Pass 3: the measured drift gap over the cells of the X sum that carry mass (tilted weight >= kCarryingShare S0).
  // The test t < threshold is decided on the exponent where it is clear by a margin far above exp's rounding
  // (1e-9), and by t itself in the band between: the same decisions as with t everywhere, one exp per cell and order
  // saved (0.6 ms per output step at 256^2 with three orders).
  std::vector<double> sup(2 * K, 0.0), globalSup(2 * K), threshold(K), logThreshold(K);
  for (std::size_t k = 0; k < K; ++k) {
    threshold[k] = kCarryingShare * global[kSums * k + S0];
    logThreshold[k] = std::log(threshold[k]);
  }
  for (std::size_t i = 0; i < kept; ++i) {
    const Forms cell = formsOf(index[i]);
    if (!(std::isfinite(cell.G) && std::isfinite(cell.GS) && std::isfinite(cell.X))) continue;
    for (std::size_t k = 0; k < K; ++k) {
      const double exponent = logWq[i] + orders_[k] * logRatio[i] - globalMax[k];
      if (exponent < logThreshold[k] - 1e-9) continue;
      if (exponent <= logThreshold[k] + 1e-9 && std::exp(exponent) < threshold[k]) continue;
      sup[2 * k] = std::max(sup[2 * k], cell.gap);
      sup[2 * k + 1] = std::max(sup[2 * k + 1], cell.gapSigma);
    }
  }
  FPDP_PETSC(MPI_Allreduce(sup.data(), globalSup.data(), static_cast<PetscMPIInt>(sup.size()), MPI_DOUBLE, MPI_MAX, comm));
  out.resize(K);
  for (std::size_t k = 0; k < K; ++k) {
    const double* s = global.data() + kSums * k;
    const double alpha = orders_[k];
    const bool ok = s[S0] > 0;
    RenyiRateEntry& e = out[k];
    e.informationRatio = ok ? s[SI] / s[S0] : kNaN;
    e.informationRatioSigma = ok ? s[SIS] / s[S0] : kNaN;
    e.cross = ok ? s[SX] / s[S0] : kNaN;
    e.rateIdentity = -alpha * e.informationRatioSigma - alpha * e.cross;
    e.supDriftGap = ok ? globalSup[2 * k] : kNaN;
    e.supDriftGapSigma = ok ? globalSup[2 * k + 1] : kNaN;
    e.excludedShare = ok ? s[Excluded] / s[S0] : kNaN;
  }
  return out;
}

double lemma2RightSide(double A, double B, std::optional<double> gamma) {
  if (gamma) return A / *gamma - (1.0 - *gamma) * B;
  return 2.0 * std::sqrt(A * B) - B;
}

double effectiveLsiConstant(double alpha, double informationRatio, double renyi, double dRenyiDAlpha) {
  const double denominator = 2.0 * (renyi + alpha * (alpha - 1.0) * dRenyiDAlpha);
  if (!(denominator > 0) || !std::isfinite(denominator)) return kNaN;
  return alpha * alpha * informationRatio / denominator;
}

double threePointDerivative(const double* x, const double* y, int j) {
  // Derivative of the Lagrange quadratic at x[j]: sum_i y[i] l_i'(x[j]).
  double result = 0.0;
  for (int i = 0; i < 3; ++i) {
    double weight;
    if (i == j) {
      weight = 0.0;
      for (int k = 0; k < 3; ++k)
        if (k != i) weight += 1.0 / (x[i] - x[k]);
    } else {
      weight = 1.0 / (x[i] - x[3 - i - j]) * (x[j] - x[3 - i - j]) / (x[i] - x[j]);
    }
    result += weight * y[i];
  }
  return result;
}

}  // namespace fpdp::solver
