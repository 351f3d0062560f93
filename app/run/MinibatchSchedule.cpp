#include "app/run/MinibatchSchedule.hpp"

#include "models/MinibatchSchedule.hpp"

#include <cmath>
#include <map>

#include <Eigen/Eigenvalues>
#include <sstream>

#include "app/case/CaseReader.hpp"
#include "app/run/NumberFormat.hpp"
#include "app/run/RunPlan.hpp"
#include "io/NumberText.hpp"
#include "solver/noisygd/ChapmanKolmogorovQuadrature.hpp"
#include "solver/noisygd/PoissonBatchMixture.hpp"
#include "solver/noisygd/PoissonLatticeMixture.hpp"
#include "models/MinibatchReferences.hpp"

namespace fpdp::app {

namespace {

/// The records of a dataset as groups of identical records (equal label and features), in order of first
/// appearance; O(n log n), for datasets of any size.
std::vector<std::pair<models::Record, long>> groupRecords(const models::Dataset& data) {
  std::vector<std::pair<models::Record, long>> groups;
  std::map<std::vector<double>, std::size_t> index;
  for (const auto& r : data.records()) {
    std::vector<double> key{r.y};
    key.insert(key.end(), r.x.data(), r.x.data() + r.x.size());
    const auto [it, inserted] = index.emplace(std::move(key), groups.size());
    if (inserted) groups.emplace_back(r, 1);
    else ++groups[it->second].second;
  }
  return groups;
}

std::vector<long> groupCounts(const models::Dataset& data) {
  std::vector<long> counts;
  for (const auto& g : groupRecords(data)) counts.push_back(g.second);
  return counts;
}

/// The per-example gradient of one record (clipped like the run's): the empirical loss of that record alone, whose
/// gradientInto allocates nothing (the d >= 2 mixture evaluates it for every batch at every shear point).
solver::GradientField recordGradient(const std::shared_ptr<const models::EmpiricalLoss>& whole, models::Record r) {
  const std::shared_ptr<const models::Loss> loss(whole, &whole->loss());
  auto single = std::make_shared<const models::EmpiricalLoss>(loss, models::Dataset({std::move(r)}), whole->clipNorm());
  return [single](const solver::ParameterPoint& t) {
    solver::ParameterPoint out{0, 0, 0};
    single->gradientInto(t.data(), out.data());
    return out;
  };
}

/// g_B = (|B|/b) (1/|B|) sum_{i in B} g_i: the batch's empirical loss (the same code and rounding as the full-batch
/// drift: a single batch of all n records with b = n gives gradientField(L_D) bit for bit, the factor being 1).
solver::GradientField batchGradient(const std::shared_ptr<const models::EmpiricalLoss>& whole,
                                    std::vector<models::Record> batch, double b, int dim) {
  if (batch.empty()) return [](const solver::ParameterPoint&) { return solver::ParameterPoint{0, 0, 0}; };
  const double factor = static_cast<double>(batch.size()) / b;
  const std::shared_ptr<const models::Loss> loss(whole, &whole->loss());
  auto g = gradientField(std::make_shared<const models::EmpiricalLoss>(loss, models::Dataset(std::move(batch)),
                                                                       whole->clipNorm()),
                         dim);
  if (factor == 1.0) return g;
  return [g = std::move(g), factor](const solver::ParameterPoint& t) {
    solver::ParameterPoint v = g(t);
    for (double& c : v) c *= factor;
    return v;
  };
}

// The partition is models::cyclicBatches' (the sampler's and the closed forms' too): record indices into D and D'.
void cyclicBatches(const Case& c, const EmpiricalLosses& losses, int dim, solver::MinibatchDrift& drift) {
  const std::size_t n = c.data.records.size();
  const double b = c.batch.expectedSize(n);
  const models::Neighbour neighbour{c.neighbour.index, c.neighbour.replacement, c.neighbour.kind};
  const models::CyclicBatches batches = models::cyclicBatches(n, c.batch.size, neighbour);
  const auto records = [](const models::Dataset& data, const std::vector<std::size_t>& indices) {
    std::vector<models::Record> out;
    for (std::size_t i : indices) out.push_back(data[i]);
    return out;
  };
  for (std::size_t j = 0; j < batches.cycleLength(); ++j) {
    drift.D.batches.push_back(batchGradient(losses.lossD, records(losses.lossD->data(), batches.batches[0][j]), b, dim));
    drift.DPrime.batches.push_back(
        batchGradient(losses.lossDPrime, records(losses.lossDPrime->data(), batches.batches[1][j]), b, dim));
  }
}

/// The group (in groupRecords' order) of data's record `index`.
long groupOf(const models::Dataset& data, std::size_t index) {
  const auto groups = groupRecords(data);
  const models::Record& r = data[index];
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (groups[g].first.y == r.y && groups[g].first.x == r.x) return static_cast<long>(g);
  return -1;
}

/// A Lipschitz bound beta of every clipped per-example gradient of D and D' (clipping, a projection onto a ball, does
/// not raise it): 0 for gradients that do not depend on theta, else the loss's smoothness; nullopt where unknown.
std::optional<double> perExampleGradientLipschitz(const EmpiricalLosses& losses) {
  if (models::constantPerExampleGradients(*losses.lossD) && models::constantPerExampleGradients(*losses.lossDPrime))
    return 0.0;
  const auto bD = losses.lossD->loss().smoothness(losses.lossD->data());
  const auto bDPrime = losses.lossDPrime->loss().smoothness(losses.lossDPrime->data());
  if (!bD || !bDPrime) return std::nullopt;
  return std::max(*bD, *bDPrime);
}

std::size_t caseCells(const Case& c) {
  std::size_t cells = 1;
  for (int a = 0; a < c.mesh.dim; ++a) cells *= static_cast<std::size_t>(c.mesh.cells[a]);
  return cells;
}

/// The smallest eigenvalue of the noise covariance Sigma: the lattice's bound takes the step's noise as
/// N(0, 2 eta lambda_min I), a conservative part of N(0, 2 eta Sigma) (docs/noisy-gd.md §9.2). The solver takes the
/// same (solver::smallestNoiseVariance).
double smallestNoiseVariance(const Case& c) {
  const models::Matrix Sigma = c.noise.sigmaFor(false, c.mesh.dim);
  return Eigen::SelfAdjointEigenSolver<models::Matrix>(Sigma).eigenvalues().minCoeff();
}

/// The lattice's spacing and pruning from batch.mixture_tolerance (docs/noisy-gd.md §9.2): half of the budget per
/// step K for the rounding, an eighth per step and record for each pruning.
solver::PoissonLatticeChoice latticeChoice(const Case& c, const EmpiricalLosses& losses) {
  solver::PoissonLatticeChoice l;
  l.use = true;
  const double K = static_cast<double>(c.noisyGd.steps);
  const long n = static_cast<long>(std::max(losses.lossD->data().size(), losses.lossDPrime->data().size()));
  const double s = std::sqrt(2.0 * c.noisyGd.eta * smallestNoiseVariance(c));
  l.spacing =
      solver::PoissonLatticeMixture::spacingFor(c.batch.mixtureTolerance / (2.0 * K), s, c.batch.rate, n, c.mesh.dim);
  // Each record's convolution prunes a few end points, and pruned mass may be moved again by the next records: a
  // higher threshold squeezes the law's tails inwards record after record (measured: 20 times the error at
  // tol / (8 K n erf(Delta / (2 sqrt(2) s)))).
  l.pruneMass = c.batch.mixtureTolerance / (8.0 * K * static_cast<double>(n));
  // A tolerance so small that the spacing or the pruning threshold is no longer a normal double (5e-324 gave 0) asks
  // for a lattice no budget holds: refused as the budget is (RunPlan: bad input naming the key).
  if (!std::isnormal(l.spacing) || !std::isnormal(l.pruneMass))
    throw solver::LatticeBudgetExceeded("it makes the lattice spacing " + io::shortestText(l.spacing) +
                                        " and the pruning threshold " + io::shortestText(l.pruneMass) +
                                        ", not positive normal numbers");
  l.workBudget = latticeWorkBudget(c.mesh.dim);
  l.pointBudget = kLatticePointBudget;
  l.gradientLipschitz = perExampleGradientLipschitz(losses).value_or(INFINITY);
  // A convex per-example loss has a nondecreasing derivative in 1-D, and clipping (a clamp) keeps it so.
  const auto convex = [](const models::EmpiricalLoss& L) { return L.loss().strongConvexity().value_or(-1.0) >= 0.0; };
  l.monotoneGradients = l.gradientLipschitz == 0.0 || (convex(*losses.lossD) && convex(*losses.lossDPrime));
  return l;
}

std::vector<solver::RecordGroup> poissonGroups(const std::shared_ptr<const models::EmpiricalLoss>& L) {
  std::vector<solver::RecordGroup> groups;
  for (auto& [record, count] : groupRecords(L->data())) groups.push_back({recordGradient(L, record), count});
  return groups;
}

}  // namespace

solver::MinibatchDrift minibatchDrift(const Case& c, const EmpiricalLosses& losses, int dim) {
  if (c.batch.sampling == "full")
    return solver::MinibatchDrift::fullBatch(gradientField(losses.lossD, dim), gradientField(losses.lossDPrime, dim));
  solver::MinibatchDrift drift;
  drift.expectedSize = c.batch.expectedSize(c.data.records.size());
  if (c.batch.sampling == "cyclic") {
    drift.sampling = models::BatchSampling::Cyclic;
    cyclicBatches(c, losses, dim, drift);
  } else {
    drift.sampling = models::BatchSampling::Poisson;
    drift.rate = c.batch.rate;
    drift.D.records = poissonGroups(losses.lossD);
    drift.DPrime.records = poissonGroups(losses.lossDPrime);
    if (usesPoissonLattice(c, losses)) {
      drift.lattice = latticeChoice(c, losses);
      // The differing record, taken exactly: D's record `index` (replace, remove); D''s at `index` (replace) or last
      // (add).
      const auto& D = losses.lossD->data();
      const auto& DPrime = losses.lossDPrime->data();
      if (c.neighbour.kind != models::NeighbourKind::Add) drift.D.differingGroup = groupOf(D, c.neighbour.index);
      if (c.neighbour.kind == models::NeighbourKind::Replace)
        drift.DPrime.differingGroup = groupOf(DPrime, c.neighbour.index);
      if (c.neighbour.kind == models::NeighbourKind::Add) drift.DPrime.differingGroup = groupOf(DPrime, DPrime.size() - 1);
    }
  }
  return drift;
}

void requireSupportedMinibatches(const Case& c, const EmpiricalLosses& losses, std::size_t cells) {
  if (c.batch.sampling == "full") return;
  const std::string mode = "batch.sampling = \"" + c.batch.sampling + "\"";
  if (c.noisyGd.tracing_substeps > 0)
    throw InputError(c.sourcePath.string() + ": noisy_gd.tracing_substeps = " +
                         std::to_string(c.noisyGd.tracing_substeps) + " with " + mode +
                         ": the tracing diffusions (MATH.md §2.2) are those of full-batch noisy GD; fpdp run does "
                         "not trace minibatch steps",
                     "noisy_gd.tracing_substeps", std::to_string(c.noisyGd.tracing_substeps),
                     "0 with batch.sampling = \"" + c.batch.sampling + "\"");
  if (c.batch.sampling == "cyclic" && c.noisyGd.diffusion == "chapman_kolmogorov") {
    // One kernel table per batch map and dataset: its size per table as ChapmanKolmogorovQuadrature lays it out
    // (per source cell and axis, the targets within the kernel's reach), against that class's limit for one table.
    const double m = static_cast<double>(c.batch.cycleLength(c.data.records.size()));
    double perTable = static_cast<double>(cells);
    for (int a = 0; a < c.mesh.dim; ++a) {
      const double h = (c.mesh.upper[a] - c.mesh.lower[a]) / c.mesh.cells[a];
      const double s = std::sqrt(2.0 * c.noisyGd.eta * c.noise.sigmaFor(false, c.mesh.dim)(a, a));
      perTable *= std::min(static_cast<double>(c.mesh.cells[a]),
                           2.0 * solver::ChapmanKolmogorovQuadrature::kTail * s / h + 2.0);
    }
    const double total = 2.0 * m * perTable, limit = static_cast<double>(solver::ChapmanKolmogorovQuadrature::kMaxKernelEntries);
    if (total > limit)
      throw InputError(c.sourcePath.string() + ": " + mode + ", batch.size = " + std::to_string(c.batch.size) +
                           " with noisy_gd.diffusion = \"chapman_kolmogorov\" needs one " +
                           "kernel table per batch and dataset: " + formatNumber(2.0 * m, "%.0f") + " tables of about " +
                           formatNumber(perTable, "%.3g") + " values, " + formatNumber(total, "%.3g") +
                           " in all, above the limit " + formatNumber(limit, "%.3g") + " (8 bytes each)",
                       "batch.size", std::to_string(c.batch.size),
                       "a batch size with fewer batches (m = ceil(n / size)), or noisy_gd.diffusion = "
                       "\"exact_convolution\"");
  }
  if (c.batch.sampling != "poisson") return;
  if (c.noisyGd.diffusion == "chapman_kolmogorov")
    throw InputError(c.sourcePath.string() + ": noisy_gd.diffusion = \"chapman_kolmogorov\" with " + mode +
                         ": the quadrature takes one map per step, not the mixture of the Poisson batches",
                     "noisy_gd.diffusion", "\"chapman_kolmogorov\"",
                     "fokker_planck or exact_convolution with batch.sampling = \"poisson\"");
  if (usesPoissonLattice(c, losses)) {
    const std::string why = c.batch.mixture == "lattice" ? "batch.mixture = \"lattice\""
                                                         : "an exact enumeration beyond its budget";
    if (c.mesh.dim > 2)
      throw InputError(c.sourcePath.string() + ": " + why + " in " + std::to_string(c.mesh.dim) +
                           "-D: the displacement lattice (docs/noisy-gd.md §9.2) is 1-D and 2-D only",
                       "batch.mixture", "\"" + c.batch.mixture + "\"",
                       "\"enumerate\" (or \"auto\") with a Poisson mixture within the budget in 3-D");
    if (c.noisyGd.constraint != "none")
      throw InputError(c.sourcePath.string() + ": " + why + " with noisy_gd.constraint = \"" +
                           c.noisyGd.constraint + "\": the displacement lattice does not carry the boundary's point masses",
                       "noisy_gd.constraint", "\"" + c.noisyGd.constraint + "\"",
                       "\"none\" with the Poisson displacement lattice");
    if (!perExampleGradientLipschitz(losses))
      throw InputError(c.sourcePath.string() + ": " + why + " with loss.type = \"" + losses.lossD->loss().name() +
                           "\": the lattice's error bound needs a Lipschitz bound of the per-example gradients, which "
                           "this loss does not give",
                       "batch.mixture", "\"" + c.batch.mixture + "\"",
                       "a loss with a known smoothness constant (quadratic, logistic, huber) or constant gradients");
    return;
  }
  for (const auto* L : {losses.lossD.get(), losses.lossDPrime.get()}) {
    const auto counts = groupCounts(L->data());
    const double cost = solver::PoissonBatchMixture::costEstimate(counts, cells, c.mesh.dim);
    if (cost <= kPoissonWorkBudget) continue;
    std::ostringstream why;
    why << c.sourcePath.string() << ": " << mode << " over " << counts.size() << " distinct records ("
        << (L == losses.lossD.get() ? "D" : "D'") << ") enumerates "
        << formatNumber(solver::PoissonBatchMixture::batchMaps(counts), "%.6g") << " batch maps per step on "
        << cells << " cells: cost " << formatNumber(cost, "%.3g") << " (1-D remap cells"
        << (c.mesh.dim > 1 ? ", x" + formatNumber(solver::PoissonBatchMixture::kShearCost, "%g") + " in d >= 2" : "")
        << "), above the exact enumeration's budget " << formatNumber(kPoissonWorkBudget, "%.3g")
        << " (docs/noisy-gd.md §9); fewer distinct records, a coarser mesh, or batch.mixture = \"lattice\" in 1-D "
           "and 2-D";
    throw InputError(why.str(), "batch.sampling", "\"poisson\"",
                     "a case whose Poisson mixture costs at most " + formatNumber(kPoissonWorkBudget, "%.3g") +
                         " (batch maps x cells" +
                         (c.mesh.dim > 1 ? " x " + formatNumber(solver::PoissonBatchMixture::kShearCost, "%g") : "") +
                         ")");
  }
}

bool usesPoissonLattice(const Case& c, const EmpiricalLosses& losses) {
  if (c.batch.sampling != "poisson" || c.batch.mixture == "enumerate") return false;
  if (c.batch.mixture == "lattice") return true;
  if (c.mesh.dim > 2) return false;  // auto: 3-D enumerates or is refused
  for (const auto* L : {losses.lossD.get(), losses.lossDPrime.get()})
    if (solver::PoissonBatchMixture::costEstimate(groupCounts(L->data()), caseCells(c), c.mesh.dim) >
        kPoissonWorkBudget)
      return true;
  return false;
}

std::string describeMinibatches(const Case& c, const EmpiricalLosses& losses) {
  const std::size_t n = c.data.records.size();
  const double b = c.batch.expectedSize(n);
  std::ostringstream os;
  os << "  minibatch noisy SGD: " << c.batch.sampling << " batches, g_B = (1/b) sum_{i in B} grad l(theta; x_i) with b = " << formatNumber(b, "%.6g")
     << (c.noisyGd.clipNorm ? " (each term clipped)" : "")
     << "; a regulariser inside l is scaled with its term (MATH.md §8, docs/noisy-gd.md §9)\n";
  if (c.batch.sampling == "cyclic") {
    os << "    cyclic: m = " << c.batch.cycleLength(n) << " consecutive batches of " << c.batch.size
       << " records in data order (the last: " << n - static_cast<std::size_t>(c.batch.size) *
                                                        static_cast<std::size_t>(c.batch.cycleLength(n) - 1)
       << "), step k uses batch k mod m; D' cut by D's partition";
    if (c.neighbour.kind == models::NeighbourKind::Add) os << ", the added record in the last batch";
    os << "\n";
  } else if (usesPoissonLattice(c, losses)) {
    const auto l = latticeChoice(c, losses);
    os << "    poisson: rate gamma = " << formatNumber(c.batch.rate, "%.6g") << ", NOT enumerated"
       << (c.batch.mixture == "auto" ? " (beyond the budget)" : "") << ": each cell's batch displacement on a "
       << "lattice of spacing at most " << formatNumber(l.spacing, "%.3g") << ", end points below "
       << formatNumber(l.pruneMass, "%.3g") << " moved inwards, the differing record exact (docs/noisy-gd.md §9.2); "
       << "a bound on the TV against the exact mixture accumulated per density (rounding and pruning within "
       << "batch.mixture_tolerance = " << formatNumber(c.batch.mixtureTolerance, "%.3g")
       << ", the within-cell term with beta = " << formatNumber(l.gradientLipschitz, "%.6g")
       << " fixed by the mesh); KL and R_alpha not certified\n";
    if (c.mesh.dim > 1) {
      const models::Matrix Sigma = c.noise.sigmaFor(false, c.mesh.dim);
      const double smallest = smallestNoiseVariance(c);
      if ((Sigma - smallest * models::Matrix::Identity(c.mesh.dim, c.mesh.dim)).norm() > 1e-12 * smallest)
        os << "    the noise covariance is anisotropic: the lattice's bounds take its smallest eigenvalue "
           << formatNumber(smallest, "%.6g") << " (isotropic noise of that variance, conservative)\n";
    }
  } else {
    os << "    poisson: rate gamma = " << formatNumber(c.batch.rate, "%.6g")
       << ", every batch B enumerated with weight gamma^|B| (1-gamma)^(n-|B|), identical records merged: "
       << formatNumber(solver::PoissonBatchMixture::batchMaps(groupCounts(losses.lossD->data())), "%.6g") << " (D) and "
       << formatNumber(solver::PoissonBatchMixture::batchMaps(groupCounts(losses.lossDPrime->data())), "%.6g")
       << " (D') batch maps per step, exact\n";
  }
  return os.str();
}

}  // namespace fpdp::app
