// DivergenceFunctionals: construction (wall flags, tail shells), evaluate and its passes in order, the densities' health.
#include "solver/functionals/Divergences.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>

#include "solver/functionals/DivergencesDetail.hpp"

namespace fpdp::solver {

static_assert(DivergenceFunctionals::kTailShells == 4, "DivergenceValues::renyiTailLogMean holds 4 shells");

const char* renyiStatusName(RenyiStatus s) {
  switch (s) {
    case RenyiStatus::InfiniteDetected: return "infinite_detected";
    case RenyiStatus::TruncatedSuspect: return "truncated_suspect";
    case RenyiStatus::NoiseSuspect: return "noise_suspect";
    default: return "finite";
  }
}

DivergenceFunctionals::DivergenceFunctionals(const meshes::DistributedBoxMesh& mesh, std::vector<double> orders)
    : DivergenceFunctionals(mesh, FunctionalSettings{std::move(orders), {}, 0, std::nullopt}) {}

DivergenceFunctionals::~DivergenceFunctionals() = default;

DivergenceFunctionals::DivergenceFunctionals(const meshes::DistributedBoxMesh& mesh, FunctionalSettings settings,
                                             std::shared_ptr<LogRatioWorkspace> workspace)
    : quadrature_(mesh),
      settings_(std::move(settings)),
      orders_(settings_.orders),
      work_(workspace ? std::move(workspace) : std::make_shared<LogRatioWorkspace>(mesh)) {
  if (work_->mesh != &mesh) throw std::invalid_argument("DivergenceFunctionals: the workspace is for another mesh");
  for (std::size_t k = 0; k < settings_.hockeyStickEps.size(); ++k)
    if (!(settings_.hockeyStickEps[k] >= 0) || !std::isfinite(settings_.hockeyStickEps[k]) ||
        (k > 0 && !(settings_.hockeyStickEps[k] > settings_.hockeyStickEps[k - 1])))
      throw std::invalid_argument("DivergenceFunctionals: the eps grid must be finite, >= 0 and increasing");
  for (double a : orders_)
    if (!(a > 1.0)) throw std::invalid_argument("DivergenceFunctionals: Renyi orders must exceed 1");
  for (double d : settings_.epsilonDeltas)
    if (!(d > 0.0 && d < 1.0)) throw std::invalid_argument("DivergenceFunctionals: eps(delta) needs delta in (0, 1)");
  if (settings_.privacyLossBins < 0) throw std::invalid_argument("DivergenceFunctionals: privacyLossBins < 0");
  // Orders sorted ascending, grouped into arithmetic runs (gaps equal to 1e-9 relative), for the recurrence of
  // renyiSums (the dense grid: 1.1..11 by 0.1, 12..63 by 1, then four single orders).
  orderIndex_.resize(orders_.size());
  for (std::size_t k = 0; k < orders_.size(); ++k) orderIndex_[k] = k;
  std::sort(orderIndex_.begin(), orderIndex_.end(), [&](std::size_t a, std::size_t b) { return orders_[a] < orders_[b]; });
  for (std::size_t j = 0; j < orderIndex_.size();) {
    OrderRun run{j, j + 1, 0.0};
    if (j + 1 < orderIndex_.size()) {
      run.delta = orders_[orderIndex_[j + 1]] - orders_[orderIndex_[j]];
      run.end = j + 2;
      while (run.end < orderIndex_.size() &&
             std::fabs(orders_[orderIndex_[run.end]] - orders_[orderIndex_[run.end - 1]] - run.delta) <= 1e-9 * run.delta)
        ++run.end;
      // The recurrence multiplies by e^{Delta u}; the run's Delta is its mean gap, the orders' own values differ from
      // alpha_first + j Delta by round-off only.
      run.delta = (orders_[orderIndex_[run.end - 1]] - orders_[orderIndex_[j]]) / static_cast<double>(run.end - 1 - j);
    }
    runs_.push_back(run);
    j = run.end;
  }
  sigma_ = settings_.sigma ? *settings_.sigma : models::Matrix::Identity(mesh.dim(), mesh.dim());
  if (sigma_.rows() != mesh.dim() || sigma_.cols() != mesh.dim())
    throw std::invalid_argument("DivergenceFunctionals: Sigma must be d x d");
  const auto& box = mesh.box();
  const int dim = mesh.dim();
  const PetscInt nOwned = mesh.owned().size();
  onBoundary_.assign(static_cast<std::size_t>(nOwned), 0);
  nextToWall_.assign(static_cast<std::size_t>(nOwned), 0);
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
  for (int a = 0; a < dim; ++a) {
    fitMid_[a] = 0.5 * (box.axis(a).lower() + box.axis(a).upper());
    fitHalfWidth_[a] = 0.5 * (box.axis(a).upper() - box.axis(a).lower());
  }
  fitInterior_.assign(static_cast<std::size_t>(nOwned), 0);
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
    if (indexDistance == 1) nextToWall_[l] = 1;
    const PetscInt layer = indexDistance / layers;
    fitInterior_[l] = layer >= 1;  // the wall layers bend the log-densities of computed solutions (header comment)
    if (layer >= 1 && layer <= kTailShells) {
      shell_[l] = static_cast<signed char>(static_cast<int>(layer) - 1);
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
  // The spread of each density along every axis (the cells' positive mass, first and second moments): how many
  // cells of a mesh resolve it (the accuracy estimate asks it of its coarsest companion, app/run/Certification).
  const int dim = quadrature_.dim();
  std::array<double, 13> moments{}, globalMoments{};  // per field: mass, then per axis sum x, sum x^2
  work_->mesh->forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const auto c = static_cast<std::size_t>(l);
    const auto x = work_->mesh->box().centre(static_cast<int>(i), static_cast<int>(j), static_cast<int>(k));
    const double vals[2] = {p[c * stride], q[c * stride]};
    for (int f = 0; f < 2; ++f) {
      if (!(vals[f] > 0.0) || !std::isfinite(vals[f])) continue;
      const double m = w[c] * vals[f];
      double* mf = moments.data() + 6 * f;
      mf[0] += m;
      for (int a = 0; a < dim; ++a) {
        mf[1 + a] += m * x[a];
        mf[4 + a] += m * x[a] * x[a];
      }
    }
  });
  FPDP_PETSC(MPI_Allreduce(moments.data(), globalMoments.data(), 12, MPI_DOUBLE, MPI_SUM, comm));
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
    const double* mf = globalMoments.data() + 6 * f;
    for (int a = 0; a < dim; ++a) {
      const double mean = mf[0] > 0.0 ? mf[1 + a] / mf[0] : 0.0;
      health[f]->mean[static_cast<std::size_t>(a)] = mean;
      health[f]->spread[static_cast<std::size_t>(a)] =
          mf[0] > 0.0 ? std::sqrt(std::max(mf[4 + a] / mf[0] - mean * mean, 0.0)) : 0.0;
    }
  }
}

DivergenceValues DivergenceFunctionals::evaluate(Vec u, const SingularMasses* singular) const {
  // The divergences are integrals of point values, reconstructed to fourth order from the cell averages
  // (PointValues.hpp), or the state's own point values; the masses, minima and negative-cell counts describe the
  // state itself.
  work_->fillPoints(u, settings_.representation == meshes::FieldRepresentation::PointValues);
  DivergenceValues v = evaluateDirections(singular);
  const PetscScalar* a;
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
  // The gradients need ghost values: the arrays go into the work vector, whose ghosts LogRatioGradient fetches.
  PetscScalar* a;
  FPDP_PETSC(VecGetArray(work_->writablePoints(), &a));
  const std::size_t n = quadrature_.weights().size();
  for (std::size_t c = 0; c < n; ++c) {
    a[2 * c] = p[c * stride];
    a[2 * c + 1] = q[c * stride];
  }
  FPDP_PETSC(VecRestoreArray(work_->points, &a));
  work_->pointsWritten();
  return evaluateDirections(singular);
}

DivergenceValues DivergenceFunctionals::evaluateDirections(const SingularMasses* singular) const {
  DivergenceValues v = evaluatePoints(singular, false);
  if (settings_.reverseDirection) {
    // q against p: the same quadrature with the densities exchanged (MATH.md §3, §7). E_alpha(q || p) =
    // int q^alpha p^(1-alpha) is not the forward integral at another order, so it is a second pass over the cells,
    // with the same cancellation-free sums and the same tail and noise-floor checks.
    DivergenceValues r = evaluatePoints(singular, true);
    v.reverse.kl = r.kl;
    v.reverse.klBoundaryShare = r.klBoundaryShare;
    v.reverse.klWallTail = r.klWallTail;
    v.reverse.renyiWallTail = std::move(r.renyiWallTail);
    v.reverse.renyi = std::move(r.renyi);
    v.reverse.renyiStatus = std::move(r.renyiStatus);
    v.reverse.renyiBoundaryShare = std::move(r.renyiBoundaryShare);
    v.reverse.renyiDepth = std::move(r.renyiDepth);
    v.reverse.excludedMassQ = r.excludedMassP;
  }
  return v;
}

DivergenceValues DivergenceFunctionals::evaluatePoints(const SingularMasses* singularMasses, bool reverse) const {
  const MPI_Comm comm = quadrature_.comm();
  DivergenceValues out;
  const std::size_t K = orders_.size();
  // The reverse direction (evaluateDirections) computes only what its consumers read: KL and R_alpha with their
  // statuses; no gradients, hockey-stick sums (both directions come from the forward pass), histograms or eps roots.
  const std::size_t E = reverse ? 0 : settings_.hockeyStickEps.size();
  const std::size_t D = reverse ? 0 : settings_.epsilonDeltas.size();
  std::optional<SingularMasses> exchanged;
  if (reverse && singularMasses) exchanged = SingularMasses{singularMasses->q, singularMasses->p};
  const SingularMasses* singular = reverse && singularMasses ? &*exchanged : singularMasses;

  const PetscScalar* pts;
  FPDP_PETSC(VecGetArrayRead(work_->points, &pts));
  struct Restore {
    Vec v;
    const PetscScalar** a;
    ~Restore() { VecRestoreArrayRead(v, a); }
  } restore{work_->points, &pts};
  const double* p = reverse ? pts + 1 : pts;
  const double* q = reverse ? pts : pts + 1;
  constexpr std::ptrdiff_t stride = 2;

  // Pass 1: masses and health of each density.
  measureHealth(p, q, stride, singular, out);
  out.stateErrorFloor = stateErrorFloor_;
  out.renyi.assign(K, kInf);
  out.eAlphaMinusOne.assign(K, kInf);
  if (!out.p.finite || !out.q.finite || !(out.p.mass > 0) || !(out.q.mass > 0)) {
    markNotComputable(out, reverse);
    return out;
  }

  // Gradients of u = log r at the owned cells (LogRatioGradient.hpp); without them the information ratios are NaN.
  const bool gradients = work_->gradient && !reverse;
  const std::array<double, 3>* gradient = gradients ? work_->logRatioGradient().data() : nullptr;

  // Pass 2: per cell (and per singular mass on rank 0) the order-independent part of every sum.
  const double invMp = 1.0 / out.p.mass, invMq = 1.0 / out.q.mass;
  Terms measured = measureTerms(p, q, stride, singular, gradient, invMp, invMq, out.p.max);

  // Pass 3: the scales M_alpha; pass 4: the per-order sums, reduced over the ranks with the order-free ones.
  const OrderScales scales = orderScales(measured, out);
  out.renyiDepth = scales.depth;
  const std::vector<double> sums = renyiSums(measured, scales);
  // The gradient's last reader (the information sums): not held through the kink windows and the hockey-stick sums
  // below (peak memory).
  KinkCorrections kinks;  // p against q from here on; q against p only for the hockey-stick sums
  if (gradients) {
    measured.gradient = nullptr;
    work_->releaseGradient();
    // TV = int max(p - q, 0) = (1/2) int |p - q|: the kink correction of the first at x = 1, twice for the second.
    kinks.open(*work_, invMp, invMq);
    const double one = 1.0;
    double correction = 0.0;
    kinks.kinks[0]->add({&one, 1}, &correction);
    measured.tv += 2.0 * correction;
  }
  std::vector<double> global(sums.size());
  FPDP_PETSC(MPI_Allreduce(sums.data(), global.data(), static_cast<PetscMPIInt>(sums.size()), MPI_DOUBLE, MPI_SUM,
                            comm));
  double scalars[7] = {measured.kl, measured.tv, measured.excludedP, measured.excludedInfoP,
                       measured.infinite ? 1.0 : 0.0, measured.klWall, measured.klNext},
         gScalars[7];
  FPDP_PETSC(MPI_Allreduce(scalars, gScalars, 7, MPI_DOUBLE, MPI_SUM, comm));
  FPDP_PETSC(MPI_Allreduce(&measured.underflow, &out.underflowCells, 1, MPI_LONG, MPI_SUM, comm));
  const bool isInfinite = gScalars[4] > 0;
  out.kl = isInfinite ? kInf : gScalars[0];
  out.tv = 0.5 * gScalars[1];
  out.klBoundaryShare = gScalars[0] > 0 ? gScalars[5] / gScalars[0] : 0.0;
  const bool projected = singular && !singular->empty();
  out.klWallTail = projected || isInfinite ? 0.0 : wallTailBound(gScalars[5], gScalars[6]);
  out.excludedMassP = gScalars[2];
  out.informationExcludedMassP = gScalars[3];

  // R_alpha and what is said of it: the tails, the values, their statuses, the noise floor.
  tailLogMeans(global, scales, out);
  const std::vector<char> tailDiverges = tailDivergence(p, q, stride, singular, out);
  renyiFromSums(global, scales, isInfinite, gradients, out);
  out.renyiWallTail = renyiWallTails(measured, projected || isInfinite, out.logEAlpha);
  if (!reverse && !projected) {
    // The densities' own masses at the walls and in the layer inside them.
    double layers[4] = {0.0, 0.0, 0.0, 0.0}, gLayers[4];  // p wall, p next, q wall, q next
    for (std::size_t i = 0; i < measured.cells; ++i) {
      const int layer = measured.boundary(i) ? 0 : (measured.nextLayer(i) ? 1 : -1);
      if (layer < 0) continue;
      layers[layer] += measured.wp(i);
      layers[2 + layer] += measured.wq(i);
    }
    FPDP_PETSC(MPI_Allreduce(layers, gLayers, 4, MPI_DOUBLE, MPI_SUM, comm));
    out.wallTailMass = {wallTailBound(gLayers[0], gLayers[1]), wallTailBound(gLayers[2], gLayers[3])};
  }
  tailStatuses(tailDiverges, out);
  noiseFloorShares(measured, global, scales, out);

  if (settings_.privacyLossBins > 0 && !reverse) {
    // Privacy-loss distributions: log(p/q) under p and log(q/p) under q, from the same terms.
    out.privacyLossP = privacyLossHistogram(measured, 0);
    out.privacyLossQ = privacyLossHistogram(measured, 1);
  }
  // The hockey-stick sums read the point values only: the terms are released first (peak memory).
  measured = Terms{};
  if (E > 0 || D > 0) hockeyStickAndRoots(p, q, stride, singular, invMp, invMq, kinks, out);
  return out;
}

/// Every value NaN, and the shapes the outputs need, when a density is not finite or has no positive mass.
void DivergenceFunctionals::markNotComputable(DivergenceValues& out, bool reverse) const {
  const std::size_t K = orders_.size();
  const std::size_t E = reverse ? 0 : settings_.hockeyStickEps.size();
  const std::size_t D = reverse ? 0 : settings_.epsilonDeltas.size();
  out.kl = out.tv = kNaN;
  out.klBoundaryShare = kNaN;
  out.klWallTail = kNaN;
  out.renyiWallTail.assign(K, kNaN);
  std::fill(out.renyi.begin(), out.renyi.end(), kNaN);
  std::fill(out.eAlphaMinusOne.begin(), out.eAlphaMinusOne.end(), kNaN);
  out.renyiOnBox = out.renyi;
  out.renyiBoundaryShare.assign(K, kNaN);
  out.renyiTailLogMean.assign(K, {kNaN, kNaN, kNaN, kNaN});
  out.renyiTailPrecision.assign(K, kNaN);
  out.renyiStatus.assign(K, RenyiStatus::Finite);
  out.logEAlpha = out.dRenyiDAlpha = out.informationRatio = out.informationRatioSigma = out.renyi;
  out.informationExcludedMassP = kNaN;
  out.hockeyStickPQ.assign(E, kNaN);
  out.hockeyStickQP.assign(E, kNaN);
  out.hockeyStickStatusPQ.assign(E, static_cast<int>(models::ExactEpsilonStatus::NotComputed));
  out.hockeyStickStatusQP.assign(E, static_cast<int>(models::ExactEpsilonStatus::NotComputed));
  for (std::size_t j = 0; j < D; ++j) out.exactEpsilon.push_back({settings_.epsilonDeltas[j], {}});  // NotComputed
  // The histograms keep their shape (the output's per-bin arrays must have privacyLossBins entries per step).
  for (PrivacyLossHistogram* h : {&out.privacyLossP, &out.privacyLossQ}) {
    h->lower = h->upper = h->massInfinity = h->clampedMass = kNaN;
    h->mass.assign(static_cast<std::size_t>(reverse ? 0 : std::max(settings_.privacyLossBins, 0)), kNaN);
  }
}

}  // namespace fpdp::solver
