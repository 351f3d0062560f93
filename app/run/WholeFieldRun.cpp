#include "app/run/WholeFieldRun.hpp"

#include <petscsys.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Eigenvalues>

#include "app/observers/AccuracyOutput.hpp"
#include "app/observers/DivergenceSeries.hpp"
#include "app/observers/ExactReferenceOutput.hpp"
#include "app/observers/FunctionalsOutput.hpp"
#include "app/observers/HeadlineOutput.hpp"
#include "app/observers/PrivacyOutput.hpp"
#include "app/plots/RunFigures.hpp"
#include "app/run/Certification.hpp"
#include "app/run/CertifyRefinement.hpp"
#include "app/run/CompanionSolve.hpp"
#include "app/run/DivergenceTable.hpp"
#include "app/run/DpSgdAccounting.hpp"
#include "app/run/MinibatchSchedule.hpp"
#include "app/run/ModelBuilding.hpp"
#include "app/run/NumberFormat.hpp"
#include "app/run/OutputDirectory.hpp"
#include "app/run/ProgressReporter.hpp"
#include "app/run/RunObservers.hpp"
#include "app/run/RunPlan.hpp"
#include "io/AxisNames.hpp"
#include "io/Column.hpp"
#include "io/Hdf5Output.hpp"
#include "io/VtkOutput.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "models/DecorrelatedCoordinates.hpp"
#include "models/DivergenceGrids.hpp"
#include "models/GaussianComposition.hpp"
#include "models/GaussianFunctionals.hpp"
#include "models/GaussianGridAverages.hpp"
#include "models/MinibatchReferences.hpp"
#include "models/MinibatchSchedule.hpp"
#include "solver/functionals/WholeFieldDivergences.hpp"
#include "solver/noisygd/PoissonBatchMixture.hpp"
#include "solver/noisygd/SlabNoisyGd.hpp"
#include "validation/CellErrors.hpp"
#include "validation/NoisyGdReference.hpp"

namespace fpdp::app {

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// The noise kernel's standard deviation per axis of the state, sqrt(2 eta D_a) (Sigma = L D L^T; D = Sigma's diagonal
/// where Sigma is diagonal).
meshes::AxisValues kernelStddev(const Case& c) {
  const int d = c.mesh.dim;
  const models::Vector D = wholeFieldCoordinates(c).noiseVariances();
  meshes::AxisValues sd{};
  for (int a = 0; a < d; ++a) sd[static_cast<std::size_t>(a)] = std::sqrt(2.0 * c.noisyGd.eta * D[a]);
  return sd;
}

/// A gradient of theta as the state's drift: y -> L^-1 g(L y) (the same field where L is the identity), so that the
/// state's step is y - eta L^-1 g(L y) + N(0, 2 eta D).
solver::GradientField stateGradient(solver::GradientField g, const models::DecorrelatedCoordinates& y, int d) {
  if (y.isIdentity()) return g;
  return [g = std::move(g), L = y.parametersFromState(), inverse = y.stateFromParameters(), d](const solver::ParameterPoint& state) {
    solver::ParameterPoint theta{};
    for (int i = 0; i < d; ++i) {
      double s = 0.0;
      for (int j = 0; j <= i; ++j) s += L(i, j) * state[static_cast<std::size_t>(j)];
      theta[static_cast<std::size_t>(i)] = s;
    }
    const solver::ParameterPoint gt = g(theta);
    solver::ParameterPoint out{};
    for (int i = 0; i < d; ++i) {
      double s = 0.0;
      for (int j = 0; j <= i; ++j) s += inverse(i, j) * gt[static_cast<std::size_t>(j)];
      out[static_cast<std::size_t>(i)] = s;
    }
    return out;
  };
}

/// The batch maps of a Poisson mixture (MATH.md §8), by PoissonBatchMixture's enumeration: every count vector (k_r) of
/// the record groups (identical records merged, c_r each), of weight prod_r Binomial(c_r, gamma)(k_r) and mean
/// gradient (1/b) sum_r k_r g_r; batches of weight 0 (gamma = 1) left out.
std::vector<solver::SlabNoisyGd::WeightedBatch> poissonBatchMaps(const std::vector<solver::RecordGroup>& groups,
                                                                 double rate, double expectedSize) {
  std::vector<std::vector<double>> pmf;
  for (const auto& g : groups) pmf.push_back(models::binomialPmf(g.count, rate));
  std::vector<solver::SlabNoisyGd::WeightedBatch> maps;
  solver::PoissonBatchMixture::enumerate(pmf, [&](const std::vector<long>& k, double weight, int, int) {
    if (weight <= 0.0) return;
    std::vector<std::pair<double, solver::GradientField>> terms;  // (k_r / b, g_r) of the groups in the batch
    for (std::size_t r = 0; r < groups.size(); ++r)
      if (k[r] > 0) terms.emplace_back(static_cast<double>(k[r]) / expectedSize, groups[r].gradient);
    maps.push_back({weight, [terms](const solver::ParameterPoint& x) {
                      solver::ParameterPoint g{};
                      for (const auto& [factor, gradient] : terms) {
                        const solver::ParameterPoint gr = gradient(x);
                        for (std::size_t a = 0; a < g.size(); ++a) g[a] += factor * gr[a];
                      }
                      return g;
                    }});
  });
  return maps;
}

/// The slab solver of a case: its batches' gradient fields (full batch: L_D and L_D'; cyclic: one per batch; Poisson:
/// every batch map with its weight). `losses`: the case's L_D and L_D', which its coarser companions share (only their
/// meshes differ).
std::unique_ptr<solver::SlabNoisyGd> slabSolver(const Case& c, const EmpiricalLosses& losses, MPI_Comm comm) {
  const int d = c.mesh.dim;
  const meshes::BoxMesh mesh = wholeFieldStateBox(c);
  const models::DecorrelatedCoordinates y = wholeFieldCoordinates(c);
  if (c.batch.sampling == "poisson") {
    // The enumeration's budget and the lattice's refusal, as for d <= 3 (its cost on this mesh, by key).
    requireSupportedMinibatches(c, losses, mesh.totalCells());
    const solver::MinibatchDrift drift = minibatchDrift(c, losses, d);
    auto mapsD = poissonBatchMaps(drift.D.records, drift.rate, drift.expectedSize);
    auto mapsDPrime = poissonBatchMaps(drift.DPrime.records, drift.rate, drift.expectedSize);
    for (auto* maps : {&mapsD, &mapsDPrime})
      for (auto& m : *maps) m.gradient = stateGradient(std::move(m.gradient), y, d);
    return std::make_unique<solver::SlabNoisyGd>(comm, mesh, std::move(mapsD), std::move(mapsDPrime), c.noisyGd.eta,
                                                 kernelStddev(c));
  }
  if (c.batch.sampling == "cyclic") {
    solver::MinibatchDrift drift = minibatchDrift(c, losses, d);
    for (auto* batches : {&drift.D.batches, &drift.DPrime.batches})
      for (auto& g : *batches) g = stateGradient(std::move(g), y, d);
    return std::make_unique<solver::SlabNoisyGd>(comm, mesh, std::move(drift.D.batches),
                                                 std::move(drift.DPrime.batches), c.noisyGd.eta, kernelStddev(c));
  }
  return std::make_unique<solver::SlabNoisyGd>(comm, mesh, stateGradient(gradientField(losses.lossD, d), y, d),
                                               stateGradient(gradientField(losses.lossDPrime, d), y, d), c.noisyGd.eta,
                                               kernelStddev(c));
}

/// A Gaussian's cell averages on this rank's part (models::gaussianGridAverages: exact for a diagonal covariance, a
/// Gauss-Legendre rule on all but the last axis for a full one), and a bound on the mass the whole box leaves outside
/// (exact for a diagonal covariance, the marginals' union bound for a full one). The start of every run and the
/// closed forms of exact.csv, both as laws of the state (the caller maps laws of theta).
struct Start {
  std::vector<double> cells;
  double outside = 0.0;
};
Start gaussianCells(const models::Vector& mean, const models::Matrix& covariance, const meshes::BoxMesh& part,
                    const meshes::BoxMesh& whole) {
  const int d = part.dim();
  std::vector<std::vector<double>> faces;
  std::vector<double> lower, upper;
  for (int a = 0; a < d; ++a) {
    faces.push_back(part.axis(a).faces());
    lower.push_back(whole.axis(a).faces().front());
    upper.push_back(whole.axis(a).faces().back());
  }
  Start start;
  start.cells = models::gaussianGridAverages(mean, covariance, faces,
                                             models::fullCovarianceNodes(whole.totalCells(), d));
  start.outside = models::gaussianOutsideBoxBound(mean, covariance, lower, upper);
  return start;
}

/// The start N(m0, C0) of theta as a law of the state: N(L^-1 m0, L^-1 C0 L^-T).
Start initialCells(const Case& c, const meshes::BoxMesh& part, const meshes::BoxMesh& whole) {
  const models::DecorrelatedCoordinates y = wholeFieldCoordinates(c);
  return gaussianCells(y.stateMean(c.initial.mean), y.stateCovariance(c.initial.covariance), part, whole);
}

/// The closed forms of a whole-field run for exact.csv (ExactReferenceOutput): the Gaussian laws of quadratic losses
/// (MATH.md §6; cyclic batches, §8) and the L1 errors of the fields last shown to it (show(), before the observers see
/// the output step). None where the laws are not Gaussian (other losses, clipping).
class WholeFieldReference {
public:
  WholeFieldReference(const Case& c, const EmpiricalLosses& losses, MPI_Comm comm)
      : comm_(comm), coordinates_(wholeFieldCoordinates(c)) {
    const int d = c.mesh.dim;
    const models::Matrix sigma = c.noise.sigmaFor(false, d);
    const models::Gaussian initial(c.initial.mean, c.initial.covariance);
    if (c.batch.sampling == "cyclic") {
      const models::BatchScheme scheme = batchScheme(c);
      const auto found = models::CyclicQuadraticReference::forLosses(
          *losses.lossD, *losses.lossDPrime,
          models::cyclicBatches(c.data.records.size(), scheme.size, caseNeighbour(c)), scheme.divisor,
          c.noisyGd.eta, sigma, initial);
      if (found) {
        const auto r = std::make_shared<const models::CyclicQuadraticReference>(*found);
        laws_ = [r](long k) { return std::pair{r->lawP(k), r->lawQ(k)}; };
      }
    } else if (c.batch.sampling != "full") {
      // Poisson: the laws are mixtures (none here: their 1-D quadratures do not reach d > 3).
    } else if (const auto found = validation::NoisyGdReference::forQuadratic(*losses.lossD, *losses.lossDPrime,
                                                                             c.noisyGd.eta, sigma, initial)) {
      const auto r = std::make_shared<const validation::NoisyGdReference>(*found);
      laws_ = [r](long k) { return std::pair{r->lawP(k), r->lawQ(k)}; };
    }
  }
  bool exists() const { return static_cast<bool>(laws_); }
  void show(const std::vector<double>& p, const std::vector<double>& q, const meshes::BoxMesh& part,
            const meshes::BoxMesh& whole) {
    p_ = &p;
    q_ = &q;
    part_ = &part;
    whole_ = &whole;
  }
  ExactOracle oracle() {
    const auto laws = laws_;
    return ExactOracle{
        [laws](double alpha, long k, double) {
          const auto [P, Q] = laws(k);
          return models::gaussianRenyi(P.mean(), P.covariance(), Q.mean(), Q.covariance(), alpha);
        },
        [laws](long k, double) {
          const auto [P, Q] = laws(k);
          return models::gaussianKL(P.mean(), P.covariance(), Q.mean(), Q.covariance());
        },
        [this](Vec, long k, double) { return errors(k); },
        [laws](long k, double) { return laws(k); }};
  }

private:
  /// sum |c| |u_c - exact cell average| over the whole field (collective), the laws taken as laws of the state (the
  /// cell averages of a full covariance by gaussianGridAverages' rule, whose error is far below the scheme's).
  validation::CellErrors errors(long k) const {
    const auto [P, Q] = laws_(k);
    std::array<double, 2> l1{0.0, 0.0};
    int index = 0;
    for (const auto* law : {&P, &Q}) {
      const Start exact = gaussianCells(coordinates_.stateMean(law->mean()),
                                        coordinates_.stateCovariance(law->covariance()), *part_, *whole_);
      const std::vector<double>& u = index == 0 ? *p_ : *q_;
      double sum = 0.0;
      for (std::size_t c = 0; c < u.size(); ++c) {
        const auto cell = part_->indexOf(c);
        double volume = 1.0;
        for (int a = 0; a < part_->dim(); ++a) volume *= part_->axis(a).width(cell[static_cast<std::size_t>(a)]);
        sum += volume * std::fabs(u[c] - exact.cells[c]);
      }
      l1[static_cast<std::size_t>(index++)] = sum;
    }
    MPI_Allreduce(MPI_IN_PLACE, l1.data(), 2, MPI_DOUBLE, MPI_SUM, comm_);
    validation::CellErrors e;
    e.l1P = l1[0];
    e.l1Q = l1[1];
    return e;
  }

  MPI_Comm comm_;
  models::DecorrelatedCoordinates coordinates_;
  std::function<std::pair<models::Gaussian, models::Gaussian>(long)> laws_;
  const std::vector<double>*p_ = nullptr, *q_ = nullptr;
  const meshes::BoxMesh *part_ = nullptr, *whole_ = nullptr;
};

/// The whole-field divergences as the accuracy contract reads them (solver::DivergenceValues, the d <= 3 record):
/// what the whole-field quadrature computes, the wall shares as statuses (kBoundaryShareTolerance), and the walls'
/// absorbed mass (the start's truncation and every step's outflow: a TV bound of each density against the process on
/// R^d). What it does not compute stays empty (the far-field fit, I_alpha, the histograms, the wall tails: absorbing
/// walls count the mass beyond them themselves).
solver::DivergenceValues contractValues(const solver::WholeFieldDivergences& w, const Case& c,
                                        const std::array<double, 2>& absorbed) {
  constexpr double tolerance = solver::DivergenceFunctionals::kBoundaryShareTolerance;
  solver::DivergenceValues v;
  const auto health = [](double mass, double min, long negative, const meshes::AxisValues& mean,
                         const meshes::AxisValues& spread) {
    solver::DensityHealth h;
    h.mass = mass;
    h.min = min;
    h.negativeCells = negative;
    h.finite = std::isfinite(mass) && std::isfinite(min);
    h.mean = mean;
    h.spread = spread;
    return h;
  };
  v.p = health(w.massP, w.minP, w.negativeCellsP, w.meanP, w.spreadP);
  v.q = health(w.massQ, w.minQ, w.negativeCellsQ, w.meanQ, w.spreadQ);
  v.kl = w.pq.kl;
  v.tv = w.tv;
  v.klBoundaryShare = w.pq.klWallShare;
  v.klWallTail = 0.0;
  v.reverse.kl = w.qp.kl;
  v.reverse.klBoundaryShare = w.qp.klWallShare;
  v.reverse.klWallTail = 0.0;
  const auto renyiStatus = [&](double value, double share) {
    if (share > tolerance) return solver::RenyiStatus::TruncatedSuspect;
    return std::isinf(value) ? solver::RenyiStatus::InfiniteDetected : solver::RenyiStatus::Finite;
  };
  for (std::size_t k = 0; k < c.divergence.orders.size(); ++k) {
    const double alpha = c.divergence.orders[k].alpha;
    v.renyi.push_back(w.pq.renyi[k]);
    v.renyiBoundaryShare.push_back(w.pq.renyiWallShare[k]);
    v.renyiStatus.push_back(renyiStatus(w.pq.renyi[k], w.pq.renyiWallShare[k]));
    v.eAlphaMinusOne.push_back(std::expm1((alpha - 1.0) * w.pq.renyi[k]));
    v.logEAlpha.push_back((alpha - 1.0) * w.pq.renyi[k]);
    v.reverse.renyi.push_back(w.qp.renyi[k]);
    v.reverse.renyiBoundaryShare.push_back(w.qp.renyiWallShare[k]);
    v.reverse.renyiStatus.push_back(renyiStatus(w.qp.renyi[k], w.qp.renyiWallShare[k]));
  }
  const auto profileStatus = [&](double share) {
    return share > tolerance ? static_cast<int>(models::ExactEpsilonStatus::TruncatedSuspect)
                             : static_cast<int>(models::ExactEpsilonStatus::Root);
  };
  v.hockeyStickPQ = w.pq.hockeyStick;
  v.hockeyStickQP = w.qp.hockeyStick;
  for (double share : w.pq.hockeyStickWallShare) v.hockeyStickStatusPQ.push_back(profileStatus(share));
  for (double share : w.qp.hockeyStickWallShare) v.hockeyStickStatusQP.push_back(profileStatus(share));
  for (std::size_t j = 0; j < c.privacy.deltaGrid.size(); ++j) {
    solver::ExactEpsilonAtDelta e;
    e.delta = c.privacy.deltaGrid[j];
    e.pair.pq = w.pq.epsilon[j];
    e.pair.qp = w.qp.epsilon[j];
    // A root (or zero) whose delta(eps) rests on the wall cells: the box cuts the tail that decides it.
    if (w.pq.epsilonWallShare[j] > tolerance && e.pair.pq.status != models::ExactEpsilonStatus::NotComputed)
      e.pair.pq.status = models::ExactEpsilonStatus::TruncatedSuspect;
    if (w.qp.epsilonWallShare[j] > tolerance && e.pair.qp.status != models::ExactEpsilonStatus::NotComputed)
      e.pair.qp.status = models::ExactEpsilonStatus::TruncatedSuspect;
    v.exactEpsilon.push_back(e);
  }
  v.absorbedMass = absorbed;
  return v;
}

/// One mesh of the sequence stepped to the end: the contract's record of its divergences at every output step (by
/// step) and its wall time. The run's own mesh hands each output step to the observers (OutputHook).
struct LevelRun {
  std::map<long, solver::DivergenceValues> values;
  double seconds = 0.0;
};

using OutputHook = std::function<void(long step, const solver::DivergenceValues& v, const std::vector<double>& p,
                                      const std::vector<double>& q, const solver::SlabNoisyGd& slab)>;

LevelRun runLevel(const Case& c, const EmpiricalLosses& losses, MPI_Comm comm, const solver::WholeFieldSettings& settings,
                  ProgressReporter* progress,
                  const OutputHook& onOutput) {
  const auto start = Clock::now();
  const auto slab = slabSolver(c, losses, comm);
  const meshes::BoxMesh whole = wholeFieldStateBox(c);
  Start s = initialCells(c, slab->stateMesh(), whole);
  std::vector<double> p = s.cells, q = std::move(s.cells);
  std::array<double, 2> absorbed{s.outside, s.outside};
  const long K = c.noisyGd.steps, every = c.output.every;
  LevelRun out;
  const auto output = [&](long k) {
    const auto w = slab->divergences(p, q, settings);
    auto v = contractValues(w, c, absorbed);
    if (onOutput) onOutput(k, v, p, q, *slab);
    out.values.emplace(k, std::move(v));
  };
  output(0);
  for (long k = 0; k < K; ++k) {
    const auto flows = slab->step(p, q, k);
    std::array<double, 2> flowed{flows[0].total(), flows[1].total()};
    MPI_Allreduce(MPI_IN_PLACE, flowed.data(), 2, MPI_DOUBLE, MPI_SUM, comm);
    absorbed[0] += flowed[0];
    absorbed[1] += flowed[1];
    if (progress) progress->everyStep(k + 1, c.noisyGd.eta * static_cast<double>(k + 1));
    if ((k + 1) % every == 0 || k + 1 == K) output(k + 1);
  }
  out.seconds = secondsSince(start);
  return out;
}

/// The largest |grad L_D - grad L_D'| at the cell centres of the mesh (the "measured gap" of the bounds' instance
/// variants, MATH.md §5), each rank taking a share of the cells.
double measuredGradientGap(const Case& c, const EmpiricalLosses& losses, const meshes::BoxMesh& mesh, MPI_Comm comm) {
  const int d = c.mesh.dim;
  const auto gD = gradientField(losses.lossD, d), gDp = gradientField(losses.lossDPrime, d);
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const std::size_t N = mesh.totalCells();
  double gap = 0.0;
  for (std::size_t k = N * static_cast<std::size_t>(rank) / static_cast<std::size_t>(size);
       k < N * static_cast<std::size_t>(rank + 1) / static_cast<std::size_t>(size); ++k) {
    const auto centre = mesh.centreAt(mesh.indexOf(k));
    solver::ParameterPoint x{};
    for (int a = 0; a < d; ++a) x[static_cast<std::size_t>(a)] = centre[static_cast<std::size_t>(a)];
    const auto a = gD(x), b = gDp(x);
    double s = 0.0;
    for (int i = 0; i < d; ++i) s += (a[static_cast<std::size_t>(i)] - b[static_cast<std::size_t>(i)]) * (a[static_cast<std::size_t>(i)] - b[static_cast<std::size_t>(i)]);
    gap = std::max(gap, std::sqrt(s));
  }
  MPI_Allreduce(MPI_IN_PLACE, &gap, 1, MPI_DOUBLE, MPI_MAX, comm);
  return gap;
}

/// The 2-D (keep = 2) or 3-D (keep = 3) reduction of this rank's part of a field over the axes beyond the first
/// `keep`, summed over the ranks to rank 0 (natural order of the kept axes): the marginal (the density integrated over
/// the other axes) without `at`, else the slice through the cell `at` (the other axes' indices fixed at its).
std::vector<double> reduced(const std::vector<double>& part, const meshes::BoxMesh& partMesh, int first,
                            const meshes::BoxMesh& whole, int keep, const std::optional<meshes::CellIndex>& at,
                            MPI_Comm comm, int rank) {
  std::size_t size = 1;
  for (int a = 0; a < keep; ++a) size *= static_cast<std::size_t>(whole.cells(a));
  std::vector<double> m(size, 0.0), out(rank == 0 ? size : 0);
  for (std::size_t k = 0; k < part.size(); ++k) {
    const auto index = partMesh.indexOf(k);
    double weight = 1.0;  // the marginal: the integrated axes' cell widths; the slice: 1 on it, 0 off it
    for (int a = keep; a < partMesh.dim(); ++a) {
      const std::size_t i = static_cast<std::size_t>(a);
      if (at) weight *= index[i] == (*at)[i] ? 1.0 : 0.0;
      else weight *= partMesh.axis(a).width(index[i]);
    }
    if (weight == 0.0) continue;
    std::size_t offset = 0, stride = 1;
    for (int a = 0; a < keep; ++a) {
      const int i = index[static_cast<std::size_t>(a)] + (a == 0 ? first : 0);
      offset += static_cast<std::size_t>(i) * stride;
      stride *= static_cast<std::size_t>(whole.cells(a));
    }
    m[offset] += part[k] * weight;
  }
  MPI_Reduce(m.data(), out.data(), static_cast<int>(size), MPI_DOUBLE, MPI_SUM, 0, comm);
  return out;
}

/// The cell (whole-mesh indices) where the density is largest, the same on every rank (the lowest rank's on ties).
meshes::CellIndex modeCell(const std::vector<double>& part, const meshes::BoxMesh& partMesh, int first, MPI_Comm comm) {
  struct {
    double value;
    int rank;
  } best{-INFINITY, 0};
  MPI_Comm_rank(comm, &best.rank);
  std::size_t at = 0;
  for (std::size_t k = 0; k < part.size(); ++k)
    if (part[k] > best.value) {
      best.value = part[k];
      at = k;
    }
  MPI_Allreduce(MPI_IN_PLACE, &best, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm);
  meshes::CellIndex index = part.empty() ? meshes::CellIndex{} : partMesh.indexOf(at);
  index[0] += first;
  MPI_Bcast(index.data(), static_cast<int>(index.size()), MPI_INT, best.rank, comm);
  return index;
}

/// The box of a reduction: the first `keep` axes of the mesh.
meshes::BoxMesh keptBox(const meshes::BoxMesh& whole, int keep) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < keep; ++a) axes.push_back(whole.axis(a));
  return meshes::BoxMesh(axes);
}

/// ParaView files of the densities beyond three axes (rank 0), each with its fpdp.pvd over the output steps (io/VtkOutput
/// on a one-process mesh of the kept axes): the marginals over axes (0, 1) and (0, 1, 2), DIR/marginals/theta_0_theta_1/
/// and DIR/marginals/theta_0_theta_1_theta_2/, and the slices over the same axes through the cell where p is largest
/// at that step, DIR/slices/... (q on p's slice; the mode's centre on the other axes in the step's field data).
class ReducedFieldOutput {
public:
  /// decorrelatedState: the fields are densities of y = L^-1 theta (axes y_a, io::axisName).
  ReducedFieldOutput(const std::string& dir, const meshes::BoxMesh& whole, int rank, bool decorrelatedState)
      : decorrelated_(decorrelatedState) {
    if (rank != 0) return;
    for (const char* kind : {"marginals", "slices"})
      for (int keep : {2, 3}) {
        std::string name = io::axisName(whole.dim(), 0, decorrelated_);
        for (int a = 1; a < keep; ++a) name.append(1, '_').append(io::axisName(whole.dim(), a, decorrelated_));
        auto mesh = std::make_unique<meshes::DistributedBoxMesh>(PETSC_COMM_SELF, keptBox(whole, keep));
        auto vtk = std::make_unique<io::VtkOutput>(dir + "/" + kind + "/" + name, *mesh);
        sets_.push_back({std::string(kind) == "slices", keep, std::move(mesh), std::move(vtk)});
      }
  }
  /// Collective: every rank's part goes into the sums.
  void write(long step, double t, const std::vector<double>& p, const std::vector<double>& q,
             const solver::SlabNoisyGd& slab, int first, const meshes::BoxMesh& whole, MPI_Comm comm, int rank,
             std::vector<io::StepScalar> scalars) {
    const meshes::CellIndex mode = modeCell(p, slab.stateMesh(), first, comm);
    std::vector<io::StepScalar> sliceScalars = scalars;
    for (int a = 0; a < whole.dim(); ++a)
      sliceScalars.push_back({"mode_" + io::axisName(whole.dim(), a, decorrelated_),
                              whole.axis(a).centre(mode[static_cast<std::size_t>(a)])});
    for (const bool slice : {false, true})
      for (int keep : {2, 3}) {
        const std::optional<meshes::CellIndex> at = slice ? std::optional<meshes::CellIndex>(mode) : std::nullopt;
        auto rp = reduced(p, slab.stateMesh(), first, whole, keep, at, comm, rank);
        auto rq = reduced(q, slab.stateMesh(), first, whole, keep, at, comm, rank);
        if (rank != 0) continue;
        for (auto& set : sets_)
          if (set.slice == slice && set.keep == keep)
            set.vtk->writeStep(step, t, {{"p", 1, std::move(rp)}, {"q", 1, std::move(rq)}}, slice ? sliceScalars : scalars);
      }
  }

private:
  struct Set {
    bool slice;
    int keep;
    std::unique_ptr<meshes::DistributedBoxMesh> mesh;
    std::unique_ptr<io::VtkOutput> vtk;
  };
  bool decorrelated_ = false;
  std::vector<Set> sets_;
};

/// --certify beyond three axes: the asked numbers judged as the run's AccuracyOutput judges them (judgeAsked).
/// `refinable`: those not certified for a reason a finer mesh may remove (refinementMayCertify); `setAside`: the others
/// (the walls, the noise floor, an infinite order: the refinement here neither widens the box nor changes the route).
/// Each list names its first numbers with their reasons ("" when none).
struct CertifyVerdict {
  std::string refinable, setAside;
};
CertifyVerdict certifyVerdict(const Case& c, const std::vector<double>& eps, const CompanionValues& companion,
                              const std::function<double(long)>& compositionMu,
                              const std::map<long, solver::DivergenceValues>& values) {
  AccuracyJudge judge(c, eps, companion, false);
  judge.setCompositionBound(compositionMu, /*finitenessNeedsIt=*/true);
  std::size_t listed[2] = {0, 0};
  CertifyVerdict out;
  for (const auto& [reason, names] : judgeAsked(judge, c, values).uncertified) {
    const int which = refinementMayCertify(reason) ? 0 : 1;
    std::string& list = which == 0 ? out.refinable : out.setAside;
    if (names.empty() && listed[which]++ < 4) list += (list.empty() ? "" : ", ") + std::string(uncertaintyName(reason));
    for (const auto& name : names)
      if (listed[which]++ < 4) list += (list.empty() ? "" : ", ") + name + " (" + uncertaintyName(reason) + ")";
  }
  if (listed[0] > 4) out.refinable += " and " + std::to_string(listed[0] - 4) + " more";
  if (listed[1] > 4) out.setAside += " and " + std::to_string(listed[1] - 4) + " more";
  return out;
}

}  // namespace

void checkWholeFieldCase(const Case& c, MPI_Comm comm) { slabSolver(c, buildEmpiricalLosses(c), comm); }

models::DecorrelatedCoordinates wholeFieldCoordinates(const Case& c) {
  return models::DecorrelatedCoordinates(c.noise.sigmaFor(false, c.mesh.dim));
}

meshes::BoxMesh wholeFieldStateBox(const Case& c) {
  const models::DecorrelatedCoordinates y = wholeFieldCoordinates(c);
  if (y.isIdentity()) return buildBox(c.mesh);
  const auto d = static_cast<std::size_t>(c.mesh.dim);
  std::vector<double> lower(c.mesh.lower.begin(), c.mesh.lower.begin() + static_cast<std::ptrdiff_t>(d));
  std::vector<double> upper(c.mesh.upper.begin(), c.mesh.upper.begin() + static_cast<std::ptrdiff_t>(d));
  std::vector<double> stateLower, stateUpper;
  y.stateBox(lower, upper, stateLower, stateUpper);
  std::vector<meshes::Axis> axes;
  for (std::size_t a = 0; a < d; ++a)
    axes.push_back(meshes::Axis::graded(stateLower[a], stateUpper[a], c.mesh.cells[a], c.mesh.grading[a]));
  return meshes::BoxMesh(std::move(axes));
}

int runWholeFieldCase(const Case& requested, const RunOptions& options) {
  const auto wallStart = Clock::now();
  MPI_Comm comm = PETSC_COMM_WORLD;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (options.resume)
    throw std::runtime_error("--restart: a run of d = " + std::to_string(requested.mesh.dim) +
                             " writes no checkpoints (docs/scaling.md §9); run it again");
  const bool announce = rank == 0 && !options.quiet;
  const int d = requested.mesh.dim;
  const meshes::BoxMesh requestedBox = buildBox(requested.mesh);
  solver::WholeFieldSettings settings;
  for (const auto& o : requested.divergence.orders) settings.orders.push_back(o.alpha);
  settings.hockeyStickEps = models::uniformEpsGrid(requested.divergence.hockeyStickEpsMax, requested.divergence.hockeyStickEpsStep);
  settings.epsilonDeltas = requested.privacy.deltaGrid;

  // 1. The constants of the bounds and the composition: S_g where it is known everywhere, lambda and beta where the
  // case states them or the loss is quadratic (closed form).
  // The losses of D and D' (with clipping): the same on every mesh of the sequence.
  const EmpiricalLosses losses = buildEmpiricalLosses(requested);
  // A Poisson mixture beyond its budget is refused on the run's own mesh, before any companion runs.
  if (requested.batch.sampling == "poisson") requireSupportedMinibatches(requested, losses, requestedBox.totalCells());
  const std::optional<double> sensitivity = provenSensitivity(requested, losses);
  const bool replacement = requested.neighbour.kind == models::NeighbourKind::Replace;
  const double n = static_cast<double>(requested.data.records.size());
  std::optional<double> strongConvexity = requested.loss.strongConvexity, smoothness = requested.loss.smoothness;
  if (requested.loss.type == "quadratic" && !requested.noisyGd.clipNorm) {
    if (!strongConvexity) strongConvexity = requested.loss.lambda;
    if (!smoothness) smoothness = requested.loss.lambda;
  }
  // mu(step) of the composition of every iterate (MATH.md §8): full batch, (S_g/n) per step; cyclic batches, the
  // steps whose batch holds the differing record (CompositionBaseline).
  const std::function<double(long)> compositionMu = lastIterateCompositionMu(requested, sensitivity);

  // 2. The companions (2h, 4h and where the mesh allows 8h), then the run.
  CompanionValues companion;
  double companionSeconds = 0.0;
  if (!requested.accuracy.estimate) {
    companion.unavailable = "accuracy.estimate = false";
  } else if (companionFactors(requested).empty()) {
    companion.unavailable = "the mesh is too coarse for companions of a quarter of its cells per axis (at least " +
                            std::to_string(kSmallestCompanionCells) + " cells per axis)";
  } else {
    std::string meshes;
    for (int factor : companionFactors(requested)) {
      Case coarse = companionCase(requested, factor);
      if (announce) {
        std::printf("fpdp: error estimate: %dx coarser mesh (%s cells)\n", factor, cellsText(coarse).c_str());
        std::fflush(stdout);
      }
      ProgressReporter progress(coarse.noisyGd.steps, announce, "companion " + std::to_string(factor) + "h",
                                rank == 0 ? options.progress : ProgressHook{}, "companion_" + std::to_string(factor) + "h");
      LevelRun level = runLevel(coarse, losses, comm, settings, &progress, {});
      progress.close();
      companionSeconds += level.seconds;
      companion.levels.push_back(std::move(level.values));
      meshes += (meshes.empty() ? "" : " and ") + cellsText(coarse);
    }
    companion.meshDescription = meshes + " cells";
  }

  // 3. The run on the requested mesh. With accuracy.certify, a run whose numbers asked for are not certified is not
  // published: the mesh doubles per axis (its companions: the meshes solved before it) until they are, or until a
  // budget (accuracy.certify_seconds, accuracy.certify_max_cells) stops it; the last run is the one published, its
  // outcome in the summary and result.json (docs/scaling.md §9). Each mesh is solved once.
  const bool refine = requested.accuracy.certify != "off";
  CertificationReport report;
  if (requested.accuracy.certify != "off") report.requested = requested.accuracy.certify;
  std::vector<std::pair<std::string, std::map<long, solver::DivergenceValues>>> solved;  // coarsest first
  for (auto it = companion.levels.rbegin(); it != companion.levels.rend(); ++it) solved.push_back({"", *it});
  {
    const auto factors = companionFactors(requested);
    for (std::size_t k = 0; k < factors.size() && k < solved.size(); ++k)
      solved[solved.size() - 1 - k].first = cellsText(companionCase(requested, factors[k]));
  }
  const auto refineStart = Clock::now();
  double previousSeconds = 0.0;
  struct Attempt {
    bool published = false;
    LevelRun run;
    Case next;
  };
  const auto attempt = [&](const Case& c, CompanionValues companion) -> Attempt {
  const meshes::BoxMesh whole = wholeFieldStateBox(c);
  const models::DecorrelatedCoordinates coordinates = wholeFieldCoordinates(c);
  RunOutputDirectory directory(comm, rank, options.outputDirectory, c.resolvedToml, false);
  const std::string& dir = directory.workDir();
  const bool writer = rank == 0;
  const std::string solverDescription =
      "noisy GD on whole fields (d = " + std::to_string(d) + ", " + std::to_string(size) +
      " rank(s) in slabs): push-forward and exact Gaussian convolution";
  io::Hdf5Output h5(dir + "/fpdp.h5", comm, whole, c.resolvedToml, solverDescription);
  if (!coordinates.isIdentity()) {
    std::vector<double> L;
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) L.push_back(coordinates.parametersFromState()(i, j));
    h5.setStateMap(std::move(L));
  }
  // The closed forms (before the observers, which refer to them).
  WholeFieldReference reference(c, losses, comm);
  const std::optional<ExactOracle> oracle =
      reference.exists() ? std::optional<ExactOracle>(reference.oracle()) : std::nullopt;
  RunObservers observers;
  observers.add<DivergenceSeries>(dir, writer, divergenceTable(c, false), c.divergence.orders.size());
  // hockey_stick.csv and /hockey_stick (delta(eps) on the eps grid, both directions); no renyi.csv (no I_alpha) and
  // no privacy-loss histograms here.
  observers.add<FunctionalsOutput>(dir, rank, settings.orders, settings.hockeyStickEps, 0, /*withRenyiTable=*/false);
  const std::optional<double> worstCaseGap =
      sensitivity && replacement ? std::optional<double>(*sensitivity / n) : std::nullopt;
  auto& privacy = observers.add<PrivacyOutput>(
      c, boundProblem(c, strongConvexity, smoothness, worstCaseGap, measuredGradientGap(c, losses, buildBox(c.mesh), comm)), dir, writer);
  AccuracyJudge judge(c, settings.hockeyStickEps, companion, false);  // a copy: certifyVerdict judges with it too
  judge.setCompositionBound(compositionMu, /*finitenessNeedsIt=*/true);
  auto& accuracy = observers.add<AccuracyOutput>(dir, writer, std::move(judge));
  privacy.consultAccuracy(accuracy);
  auto& headline = observers.add<HeadlineOutput>(dir, writer, c, privacy, accuracy, CertificationReport{});
  if (oracle) observers.add<ExactReferenceOutput>(dir, writer, c, *oracle);
  auto& progressLine = observers.add<ProgressReporter>(c.noisyGd.steps, announce, "",
                                                       rank == 0 ? options.progress : ProgressHook{});
  std::optional<ReducedFieldOutput> paraView;
  if (c.output.fields && c.output.vtk) paraView.emplace(dir, whole, rank, !coordinates.isIdentity());

  const std::vector<std::string> columns = divergenceColumns(c, false);
  const OutputHook onOutput = [&](long k, const solver::DivergenceValues& v, const std::vector<double>& p,
                                  const std::vector<double>& q, const solver::SlabNoisyGd& slab) {
    const double t = c.noisyGd.eta * static_cast<double>(k);
    const std::vector<double> row = divergenceRow(k, t, v, false);
    reference.show(p, q, slab.stateMesh(), whole);
    observers.observe(OutputStep{k, t, nullptr, v, columns, row});
    if (!c.output.fields) return;
    const int first = slab.stateFirst();
    h5.writeFieldParts(k, t, first, slab.stateMesh().cells(0),
                       {{io::real("p", io::units::density(d), "The density p trained on D (cell averages)."), &p},
                        {io::real("q", io::units::density(d), "The density q trained on D' (cell averages)."), &q}});
    if (paraView) {
      std::vector<io::StepScalar> scalars;
      for (std::size_t i = 0; i < columns.size() && i < row.size(); ++i) scalars.push_back({columns[i], row[i]});
      paraView->write(k, t, p, q, slab, first, whole, comm, rank, std::move(scalars));
    }
  };
  if (announce) {
    std::printf("fpdp: %d-D noisy GD on %s cells (%zu cells), %ld steps, %d rank(s)\n", d, cellsText(c).c_str(),
                whole.totalCells(), c.noisyGd.steps, size);
    std::fflush(stdout);
  }
  LevelRun run = runLevel(c, losses, comm, settings, &progressLine, onOutput);
  progressLine.close();
  if (refine) {
    std::string levels;
    for (const auto& [text, values] : solved) levels += (levels.empty() ? "" : ", ") + text;
    report.levels = levels + (levels.empty() ? "" : ", ") + cellsText(c);
    const double spent = secondsSince(refineStart);
    report.seconds = spent;
    const CertifyVerdict verdict = certifyVerdict(c, settings.hockeyStickEps, companion, compositionMu, run.values);
    const std::string& uncertified = verdict.refinable;
    // What no finer mesh certifies is set aside with its reason; the summary's remedies name what does.
    const std::string except = verdict.setAside.empty() ? ""
                               : " except " + verdict.setAside + ", which no finer mesh certifies (their remedies: "
                                 "the summary's list)";
    const std::string flag = c.accuracy.certify == "last_step" ? "--certify=last_step" : "--certify";
    if (!c.accuracy.estimate) {
      report.outcome = "not refined: accuracy.estimate = false (each mesh is judged by the meshes solved before it)";
      report.remedy = "set accuracy.estimate = true";
    } else if (uncertified.empty() && !verdict.setAside.empty() && c.accuracy.certify == "headline") {
      report.outcome = "not certified on " + cellsText(c) + " cells: " + verdict.setAside + ", which no finer mesh "
                       "certifies";
    } else if (uncertified.empty()) {
      report.outcome = "certified on " + cellsText(c) + " cells" + except;
    } else {
      Case next = refinedCase(c);
      next.resolvedToml = resolvedText(next);
      double nextCells = 1.0;
      for (int a = 0; a < d; ++a) nextCells *= next.mesh.cells[static_cast<std::size_t>(a)];
      // A step costs about cells x (cells per axis) (the convolution's passes, docs/scaling.md §9): 2^(d + 1) per
      // doubling, or the ratio the last two meshes showed where larger.
      const double growth = std::max(std::pow(2.0, d + 1), previousSeconds > 0 ? run.seconds / previousSeconds : 0.0);
      const double predicted = run.seconds * growth;
      const std::string why = uncertified + " not certified on " + cellsText(c) + " cells" + except;
      if (nextCells > static_cast<double>(c.accuracy.certifyMaxCells)) {
        report.outcome = "blocked: " + why + "; the next mesh, " + cellsText(next) + " cells, exceeds "
                         "accuracy.certify_max_cells = " + std::to_string(c.accuracy.certifyMaxCells);
        report.remedy = flag + " --set accuracy.certify_max_cells=" + formatNumber(nextCells, "%.0f") +
                        " lets the next mesh run (about " + formatNumber(nextCells * 240.0 / 1073741824.0, "%.2g") +
                        " GiB; more may be needed)";
      } else if (spent + predicted > c.accuracy.certifySeconds) {
        report.outcome = "blocked: " + why + "; the next mesh, " + cellsText(next) + " cells, would take about " +
                         formatNumber(predicted, "%.3g") + " s, beyond accuracy.certify_seconds = " +
                         formatNumber(c.accuracy.certifySeconds, "%g") + " (" + formatNumber(spent, "%.3g") + " s spent)";
        report.remedy = flag + " --set accuracy.certify_seconds=" + formatNumber(std::ceil(spent + predicted), "%.0f") +
                        " lets the next mesh run (more may be needed)";
      } else {
        if (announce) {
          std::printf("fpdp: --certify: %s; next %s cells\n", why.c_str(), cellsText(next).c_str());
          std::fflush(stdout);
        }
        return Attempt{false, std::move(run), std::move(next)};  // DIR.partial goes with `directory`
      }
    }
    headline.setCertification(report);
  }
  observers.finish(h5);
  std::string plotWarning;
  if (c.output.plots && rank == 0) plotWarning = plots::drawRunPlotsOrWarn(dir);
  directory.publish();

  if (rank == 0) {
    std::ostringstream s;
    s << "fpdp run '" << c.name << "': " << solverDescription << "\n"
      << "  mesh: " << cellsText(c) << " cells on [";
    for (int a = 0; a < d; ++a)
      s << (a ? ", " : "") << c.mesh.lower[static_cast<std::size_t>(a)] << ", " << c.mesh.upper[static_cast<std::size_t>(a)];
    s << "] (lower, upper per axis); " << c.noisyGd.steps << " steps of eta = " << c.noisyGd.eta << "\n";
    if (!coordinates.isIdentity()) {
      s << "  state: y = L^-1 theta with Sigma = L D L^T, in which the noise is diagonal; its mesh is the box [";
      for (int a = 0; a < d; ++a)
        s << (a ? ", " : "") << whole.axis(a).lower() << ", " << whole.axis(a).upper();
      s << "] holding L^-1 of the case's box; the densities in fpdp.h5 and the ParaView files are of y (axes y_a)\n";
    }
    s
      << "  not computed beyond three axes: I_alpha, the privacy-loss histograms, the far-field model of infinite "
         "orders (R_alpha is proved finite by the composition bound where S_g is known), checkpoints\n";
    const auto& last = run.values.rbegin()->second;
    s << "  masses at the end: p " << last.p.mass << ", q " << last.q.mass << " (absorbed by the walls: "
      << (*last.absorbedMass)[0] << ", " << (*last.absorbedMass)[1] << ")\n\n";
    if (!plotWarning.empty()) s << "  WARNING: " << plotWarning << "\n";
    privacy.summary(s, accuracy.epsNote(c.privacy.delta), accuracy.rdpNote(c.privacy.delta));
    s << "\n";
    accuracy.summary(s);
    char times[160];
    std::snprintf(times, sizeof times, "  wall time %.1f s (run %.1f s, error estimate %.1f s); output in ",
                  secondsSince(wallStart), run.seconds, companionSeconds);
    s << times << directory.finalDir() << "\n";
    headline.print(s);
    if (options.summary) options.summary(s.str());
    else {
      std::fputs(s.str().c_str(), stdout);
      std::fflush(stdout);
    }
  }
  return Attempt{true, std::move(run), c};
  };
  Case level = requested;
  for (;;) {
    Attempt a = attempt(level, companion);
    if (a.published) return 0;
    previousSeconds = a.run.seconds;
    solved.push_back({cellsText(level), std::move(a.run.values)});
    companion = CompanionValues{};
    for (std::size_t k = solved.size(); k-- > 0 && companion.levels.size() < 3;) companion.levels.push_back(solved[k].second);
    std::string meshes;
    for (std::size_t k = solved.size(); k-- > 0 && k + 3 >= solved.size();)
      meshes += (meshes.empty() ? "" : " and ") + solved[k].first;
    companion.meshDescription = meshes + " cells";
    level = std::move(a.next);
  }
}

}  // namespace fpdp::app
