#include "solver/noisygd/NoisyGradientDescent.hpp"

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <Eigen/Eigenvalues>

namespace fpdp::solver {

FieldGatherer::FieldGatherer(const meshes::DistributedBoxMesh& mesh) : mesh_(mesh) {
  global_ = mesh.createScalarVector();
  FPDP_PETSC(DMDACreateNaturalVector(mesh.scalarDM(), natural_.out()));
  Vec all = nullptr;
  FPDP_PETSC(VecScatterCreateToAll(natural_, &toAll_, &all));
  all_ = meshes::VecHandle(all);
}

FieldGatherer::~FieldGatherer() {
  if (toAll_) (void)VecScatterDestroy(&toAll_);
}

std::vector<double> FieldGatherer::gather(Vec u, int field) const {
  FPDP_PETSC(VecStrideGather(u, field, global_, INSERT_VALUES));
  FPDP_PETSC(DMDAGlobalToNaturalBegin(mesh_.scalarDM(), global_, INSERT_VALUES, natural_));
  FPDP_PETSC(DMDAGlobalToNaturalEnd(mesh_.scalarDM(), global_, INSERT_VALUES, natural_));
  FPDP_PETSC(VecScatterBegin(toAll_, natural_, all_, INSERT_VALUES, SCATTER_FORWARD));
  FPDP_PETSC(VecScatterEnd(toAll_, natural_, all_, INSERT_VALUES, SCATTER_FORWARD));
  return meshes::localValues(all_);
}

void FieldGatherer::scatter(const std::vector<double>& values, Vec u, int field) const {
  PetscScalar* a;
  FPDP_PETSC(VecGetArray(all_, &a));
  std::copy(values.begin(), values.end(), a);
  FPDP_PETSC(VecRestoreArray(all_, &a));
  // Every rank holds the same values; the reverse scatter writes each rank's owned part.
  FPDP_PETSC(VecScatterBegin(toAll_, all_, natural_, INSERT_VALUES, SCATTER_REVERSE));
  FPDP_PETSC(VecScatterEnd(toAll_, all_, natural_, INSERT_VALUES, SCATTER_REVERSE));
  FPDP_PETSC(DMDANaturalToGlobalBegin(mesh_.scalarDM(), natural_, INSERT_VALUES, global_));
  FPDP_PETSC(DMDANaturalToGlobalEnd(mesh_.scalarDM(), natural_, INSERT_VALUES, global_));
  FPDP_PETSC(VecStrideScatter(global_, field, u, INSERT_VALUES));
}

double smallestNoiseVariance(const NoisyGdSettings& settings, int dim) {
  Eigen::Matrix3d S = Eigen::Matrix3d::Zero();
  for (int a = 0; a < dim; ++a) S(a, a) = settings.noiseVariance[static_cast<std::size_t>(a)];
  const int pairs[3][2] = {{0, 1}, {0, 2}, {1, 2}};  // noiseCross: Sigma_xy, Sigma_xz, Sigma_yz
  for (int p = 0; p < 3; ++p)
    if (pairs[p][1] < dim) S(pairs[p][0], pairs[p][1]) = S(pairs[p][1], pairs[p][0]) = settings.noiseCross[p];
  return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(S.topLeftCorner(dim, dim)).eigenvalues().minCoeff();
}

NoisyGradientDescent::NoisyGradientDescent(const meshes::DistributedBoxMesh& mesh, GradientField gradientD,
                                           GradientField gradientDPrime, const NoisyGdSettings& settings)
    : NoisyGradientDescent(mesh, MinibatchDrift::fullBatch(std::move(gradientD), std::move(gradientDPrime)), settings) {}

NoisyGradientDescent::NoisyGradientDescent(const meshes::DistributedBoxMesh& mesh, MinibatchDrift drift,
                                           const NoisyGdSettings& settings)
    : mesh_(mesh), settings_(settings), sampling_(drift.sampling), gatherer_(mesh) {
  if (mesh.fields() != 2) throw std::invalid_argument("NoisyGradientDescent: the mesh must carry 2 fields (p, q)");
  if (sampling_ == BatchSampling::Poisson && drift.lattice.use) {
    if (settings_.diffusion == DiffusionMethod::ChapmanKolmogorov || !settings_.constraint.isNone() ||
        mesh.dim() > 2)
      throw std::invalid_argument("the Poisson displacement lattice needs a 1-D or 2-D mesh, no constraint and "
                                  "fokker_planck or exact_convolution");
    // The bound's noise: N(0, 2 eta Sigma) of the step, isotropic in the bound: s^2 = 2 eta lambda_min(Sigma), since
    // N(0, 2 eta Sigma) = N(0, s^2 I) * N(0, 2 eta Sigma - s^2 I) and the second convolution does not expand TV
    // (docs/noisy-gd.md §9.2).
    LatticeSettings ls{drift.lattice.spacing, drift.lattice.pruneMass,
                       std::sqrt(2.0 * settings.eta * smallestNoiseVariance(settings, mesh.dim())),
                       drift.lattice.gradientLipschitz, drift.lattice.monotoneGradients, drift.lattice.workBudget,
                       drift.lattice.pointBudget};
    // 1-D: both laws carry the rounding variance of the larger rounded count, which the one noise step gives up.
    const auto rounded = [](const auto& records, long differing) {
      long n = 0;
      for (const auto& g : records) n += g.count;
      return n - (differing >= 0 ? 1 : 0);
    };
    ls.roundedRecords = std::max(rounded(drift.D.records, drift.D.differingGroup),
                                 rounded(drift.DPrime.records, drift.DPrime.differingGroup));
    latticeD_ = std::make_unique<PoissonLatticeMixture>(mesh.box(), std::move(drift.D.records), drift.D.differingGroup,
                                                        drift.rate, drift.expectedSize, settings.eta, ls);
    latticeDPrime_ = std::make_unique<PoissonLatticeMixture>(mesh.box(), std::move(drift.DPrime.records),
                                                             drift.DPrime.differingGroup, drift.rate,
                                                             drift.expectedSize, settings.eta, ls);
  } else if (sampling_ == BatchSampling::Poisson) {
    if (settings_.diffusion == DiffusionMethod::ChapmanKolmogorov)
      throw std::invalid_argument("chapman_kolmogorov cannot take the Poisson batch mixture (one kernel per map)");
    mixtureD_ = std::make_unique<PoissonBatchMixture>(mesh.box(), std::move(drift.D.records), drift.rate,
                                                      drift.expectedSize, settings.eta);
    mixtureDPrime_ = std::make_unique<PoissonBatchMixture>(mesh.box(), std::move(drift.DPrime.records), drift.rate,
                                                           drift.expectedSize, settings.eta);
  } else {
    if (drift.D.batches.empty() || drift.D.batches.size() != drift.DPrime.batches.size())
      throw std::invalid_argument("NoisyGradientDescent: D and D' need the same number (>= 1) of batch maps");
    // The kernels below refer to these: reserve, so that no reallocation moves them.
    pushD_.reserve(drift.D.batches.size());
    pushDPrime_.reserve(drift.D.batches.size());
    for (std::size_t b = 0; b < drift.D.batches.size(); ++b) {
      pushD_.emplace_back(mesh.box(), std::move(drift.D.batches[b]), settings.eta);
      pushDPrime_.emplace_back(mesh.box(), std::move(drift.DPrime.batches[b]), settings.eta);
    }
  }
  // The noise kernel N(0, 2 eta Sigma): its standard deviation per axis (diagonal part). After the 1-D displacement
  // lattice, N(0, 2 eta Sigma - V): the lattice's rounding added V to every displacement (PoissonLatticeMixture::
  // addedVariance, the same for D and D'; docs/noisy-gd.md §9.2).
  const double added = latticeD_ ? latticeD_->addedVariance() : 0.0;
  if (latticeD_ && latticeDPrime_->addedVariance() != added)
    throw std::logic_error("the displacement lattices of D and D' add different variances");
  for (int a = 0; a < mesh.dim(); ++a)
    kernelStdDev_[a] = std::sqrt(2.0 * settings_.eta * settings_.noiseVariance[a] - added);
  if (settings_.diffusion == DiffusionMethod::FokkerPlanck) {
    DriftDiffusionEquation heat;
    heat.potential = [](const Point&) { return 0.0; };
    heat.diffusion = settings_.noiseVariance;
    for (int a = 0; a < mesh.dim(); ++a) heat.diffusion[static_cast<std::size_t>(a)] -= added / (2.0 * settings_.eta);
    heat.crossDiffusion = settings_.noiseCross;
    heat_ = std::make_unique<FokkerPlanckOperator>(mesh, std::vector<DriftDiffusionEquation>{heat, heat},
                                                   FaceFluxScheme::ScharfetterGummel);
    TimeIntegration ti;
    ti.dt = settings_.eta / settings_.diffusionSubsteps;
    ti.steps = settings_.diffusionSubsteps;
    ti.tsType = settings_.diffusionTsType;
    ti.kspType = settings_.kspType;
    ti.pcType = settings_.pcType;
    ti.optionsPrefix = "diffusion_";
    diffusion_ = std::make_unique<DensityEvolution>(mesh, heat_->assemble(), ti);
  } else if (settings_.diffusion == DiffusionMethod::ChapmanKolmogorov) {
    if (settings_.noiseCross != std::array<double, 3>{0, 0, 0})
      throw std::invalid_argument("chapman_kolmogorov needs a diagonal noise covariance");
    if (!settings_.constraint.isNone())
      throw std::invalid_argument("chapman_kolmogorov cannot carry the point masses of a constraint set (Pi_C)");
    for (std::size_t b = 0; b < pushD_.size(); ++b) {
      kernelD_.push_back(std::make_unique<ChapmanKolmogorovQuadrature>(mesh.box(), pushD_[b], kernelStdDev_));
      kernelDPrime_.push_back(std::make_unique<ChapmanKolmogorovQuadrature>(mesh.box(), pushDPrime_[b], kernelStdDev_));
    }
  } else {
    if (settings_.noiseCross != std::array<double, 3>{0, 0, 0})
      throw std::invalid_argument("exact_convolution needs a diagonal noise covariance");
    convolution_ = std::make_unique<GaussianConvolution>(mesh.box(), kernelStdDev_);
  }
  if (settings_.constraint.isNone()) return;
  bins_ = BoundaryBins(mesh.box(), settings_.constraint, settings_.ballAngularBins);
  projection_ = std::make_unique<ConstraintProjection>(mesh.box(), bins_);
  boundary_.p.assign(bins_.size(), 0.0);
  boundary_.q.assign(bins_.size(), 0.0);
  if (convolution_) {
    // Padding: 9 noise standard deviations plus two cells, in cells of the outermost width. The kernel reaches
    // farther (GaussianConvolution::kReach), but what it carries beyond 9 standard deviations of the walls,
    // Phi(-9) = 1.1e-19 of a wall cell's mass at most, is reported as outflow instead of being projected.
    double paddedCells = 1;
    std::ostringstream paddedShape;
    paddedShape.precision(15);
    for (int a = 0; a < mesh.dim(); ++a) {
      const auto& ax = mesh.box().axis(a);
      const double pad = std::ceil(9.0 * kernelStdDev_[a] / std::min(ax.width(0), ax.width(ax.cells() - 1))) + 2;
      paddedCells *= ax.cells() + 2 * pad;
      paddedShape << (a ? " x " : "") << ax.cells() + 2 * pad;
      if (paddedCells <= kMaxPaddedCells) pad_[a] = static_cast<int>(pad);
    }
    if (!(paddedCells <= kMaxPaddedCells))
      throw PaddedMeshTooLarge("the exact convolution with a constraint pads the mesh by 9 kernel standard deviations "
                               "(sqrt(2 eta) sigma) and two cells on every side: " + paddedShape.str() +
                               " cells, more than 268435456 (2^28)");
    std::vector<meshes::Axis> axes;
    for (int a = 0; a < mesh.dim(); ++a) {
      const auto& ax = mesh.box().axis(a);
      const double h0 = ax.width(0), h1 = ax.width(ax.cells() - 1);
      const int pad = pad_[a];
      std::vector<double> f;
      for (int i = pad; i >= 1; --i) f.push_back(ax.lower() - i * h0);
      f.insert(f.end(), ax.faces().begin(), ax.faces().end());
      for (int i = 1; i <= pad; ++i) f.push_back(ax.upper() + i * h1);
      axes.push_back(meshes::Axis::fromFaces(std::move(f)));
    }
    padded_ = std::make_unique<meshes::BoxMesh>(std::move(axes));
    paddedProjection_ = std::make_unique<ConstraintProjection>(*padded_, bins_);
    paddedConvolution_ = std::make_unique<GaussianConvolution>(*padded_, kernelStdDev_);
  }
}

double NoisyGradientDescent::constraintMargin() const {
  if (bins_.empty()) return std::numeric_limits<double>::infinity();
  double m = std::numeric_limits<double>::infinity();
  for (int a = 0; a < mesh_.dim(); ++a) {
    const auto& ax = mesh_.box().axis(a);
    m = std::min({m, (bins_.lower()[a] - ax.lower()) / kernelStdDev_[a], (ax.upper() - bins_.upper()[a]) / kernelStdDev_[a]});
  }
  return m;
}

namespace {
/// Mass in the cells that touch a wall of the mesh.
double wallCellMass(const meshes::BoxMesh& box, const std::vector<double>& field) {
  double m = 0.0;
  std::size_t c = 0;
  for (int k = 0; k < box.cells(2); ++k)
    for (int j = 0; j < box.cells(1); ++j)
      for (int i = 0; i < box.cells(0); ++i, ++c) {
        const std::array<int, 3> idx{i, j, k};
        bool wall = false;
        for (int a = 0; a < box.dim(); ++a) wall = wall || idx[a] == 0 || idx[a] == box.cells(a) - 1;
        if (wall) m += field[c] * box.cellVolume(i, j, k);
      }
  return m;
}
}  // namespace

Outflow NoisyGradientDescent::push(int field, long k, std::vector<double>& values,
                                   PoissonLatticeMixture::StepBound& bound) const {
  bound = {};
  if (latticeD_) return (field == 0 ? latticeD_ : latticeDPrime_)->apply(values, bound);
  if (sampling_ == BatchSampling::Poisson) return (field == 0 ? mixtureD_ : mixtureDPrime_)->apply(values);
  return (field == 0 ? pushD_ : pushDPrime_)[batchIndex(k)].apply(values);
}

void NoisyGradientDescent::forEachImage(int field, long k, const ParameterPoint& x,
                                        const std::function<void(const ParameterPoint&, double)>& f) const {
  if (latticeD_) throw std::logic_error("the Poisson displacement lattice has no point images");
  if (sampling_ == BatchSampling::Poisson) return (field == 0 ? mixtureD_ : mixtureDPrime_)->forEachImage(x, f);
  f((field == 0 ? pushD_ : pushDPrime_)[batchIndex(k)].map(x), 1.0);
}

Outflow NoisyGradientDescent::convolveAndProject(std::vector<double>& values, std::vector<double>& bins, int field,
                                                 long stepIndex) const {
  const auto& box = mesh_.box();
  const std::array<int, 3> n{box.cells(0), box.cells(1), box.cells(2)};
  const std::array<int, 3> N{padded_->cells(0), padded_->cells(1), padded_->cells(2)};
  auto at = [&](int i, int j, int k) {
    return static_cast<std::size_t>(i + pad_[0]) +
           static_cast<std::size_t>(N[0]) * (static_cast<std::size_t>(j + pad_[1]) +
                                             static_cast<std::size_t>(N[1]) * static_cast<std::size_t>(k + pad_[2]));
  };
  std::vector<double> big(padded_->totalCells(), 0.0);
  std::size_t c = 0;
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) big[at(i, j, k)] = values[c++];
  const Outflow lost = paddedConvolution_->apply(big);
  // p_k's boundary bins: point masses at their representative points, mapped by T_D (each T_B with weight w_B for
  // a Poisson mixture), convolved exactly.
  const auto& points = bins_.points();
  for (std::size_t b = 0; b < bins.size(); ++b) {
    if (bins[b] == 0.0) continue;
    forEachImage(field, stepIndex, points[b], [&](const ParameterPoint& y, double w) {
      depositGaussian(*padded_, y, w * bins[b], kernelStdDev_, big);
    });
    bins[b] = 0.0;
  }
  paddedProjection_->project(big, bins);  // every padding cell lies outside C, so it is emptied here
  c = 0;
  for (int k = 0; k < n[2]; ++k)
    for (int j = 0; j < n[1]; ++j)
      for (int i = 0; i < n[0]; ++i) values[c++] = big[at(i, j, k)];
  return lost;
}

void NoisyGradientDescent::projectState(Vec u) {
  if (!projection_) return;
  auto p = gatherer_.gather(u, 0);
  auto q = gatherer_.gather(u, 1);
  projection_->project(p, boundary_.p);
  projection_->project(q, boundary_.q);
  gatherer_.scatter(p, u, 0);
  gatherer_.scatter(q, u, 1);
}

NoisyGradientDescent::StepReport NoisyGradientDescent::step(Vec u, long stepIndex) {
  StepReport r;
  auto p = gatherer_.gather(u, 0);
  auto q = gatherer_.gather(u, 1);
  if (!kernelD_.empty()) {
    // Push-forward and noise in one quadrature; its outflow is the kernel's mass beyond the walls.
    r.diffP = kernelD_[batchIndex(stepIndex)]->apply(p);
    r.diffQ = kernelDPrime_[batchIndex(stepIndex)]->apply(q);
    gatherer_.scatter(p, u, 0);
    gatherer_.scatter(q, u, 1);
    return r;
  }
  r.pushP = push(0, stepIndex, p, r.mixtureBoundP);
  r.pushQ = push(1, stepIndex, q, r.mixtureBoundQ);
  if (projection_) {
    if (convolution_) {
      r.diffP = convolveAndProject(p, boundary_.p, 0, stepIndex);
      r.diffQ = convolveAndProject(q, boundary_.q, 1, stepIndex);
    } else {
      // p_k's boundary bins as pushed point masses, deposited linearly; then the noise; then Pi_C.
      for (std::size_t b = 0; b < bins_.size(); ++b) {
        const auto& x = bins_.points()[b];
        if (boundary_.p[b] != 0.0)
          forEachImage(0, stepIndex, x, [&](const ParameterPoint& y, double w) {
            depositLinear(mesh_.box(), y, w * boundary_.p[b], p);
          });
        if (boundary_.q[b] != 0.0)
          forEachImage(1, stepIndex, x, [&](const ParameterPoint& y, double w) {
            depositLinear(mesh_.box(), y, w * boundary_.q[b], q);
          });
        boundary_.p[b] = boundary_.q[b] = 0.0;
      }
      gatherer_.scatter(p, u, 0);
      gatherer_.scatter(q, u, 1);
      diffusion_->run(u, [](long, double, Vec) {});
      p = gatherer_.gather(u, 0);
      q = gatherer_.gather(u, 1);
      r.wallMassP = wallCellMass(mesh_.box(), p);
      r.wallMassQ = wallCellMass(mesh_.box(), q);
      projection_->project(p, boundary_.p);
      projection_->project(q, boundary_.q);
    }
    gatherer_.scatter(p, u, 0);
    gatherer_.scatter(q, u, 1);
    return r;
  }
  if (convolution_) {
    r.diffP = convolution_->apply(p);
    r.diffQ = convolution_->apply(q);
  }
  gatherer_.scatter(p, u, 0);
  gatherer_.scatter(q, u, 1);
  if (diffusion_) diffusion_->run(u, [](long, double, Vec) {});
  return r;
}

std::string NoisyGradientDescent::describe() const {
  std::ostringstream os;
  if (sampling_ == BatchSampling::Cyclic) os << "cyclic batches: " << pushD_.size() << " batch maps visited in turn; ";
  if (mixtureD_) os << mixtureD_->describe() << "; ";
  if (latticeD_) os << "D: " << latticeD_->describe() << "; D': " << latticeDPrime_->describe() << "; ";
  if (!kernelD_.empty()) return os.str() + "push-forward and noise: " + kernelD_[0]->describe();
  os << "push-forward: monotone cubic remap by shears; diffusion: ";
  if (diffusion_) os << "fokker_planck, " << settings_.diffusionSubsteps << " substeps, " << diffusion_->describe();
  else os << "exact_convolution";
  if (!bins_.empty()) {
    os << "; constraint " << settings_.constraint.describe() << ", " << bins_.describe();
    if (padded_) os << ", convolution on the mesh padded by the kernel's reach";
  }
  return os.str();
}

}  // namespace fpdp::solver

namespace fpdp::solver {

bool NoisyGradientDescent::canStepFromGaussian() const {
  if (latticeD_) return false;  // the lattice's bound is per step on the mesh
  if (mixtureD_) {
    // Every quadrature node's images under every batch map, each spread over the mesh.
    const double work = std::max(mixtureD_->batchMaps(), mixtureDPrime_->batchMaps()) *
                        std::pow(static_cast<double>(kGaussHermiteNodes), mesh_.dim()) *
                        static_cast<double>(mesh_.box().totalCells());
    if (work > kMixtureStartWork) return false;
  }
  return !constrained() && settings_.noiseCross == std::array<double, 3>{0, 0, 0};
}

NoisyGradientDescent::StepReport NoisyGradientDescent::stepFromGaussian(Vec u, const models::Gaussian& start) const {
  if (!canStepFromGaussian())
    throw std::logic_error("NoisyGradientDescent::stepFromGaussian needs no constraint and a diagonal noise covariance");
  const int dim = mesh_.dim();
  const auto& box = mesh_.box();
  // Gauss–Hermite rule for N(0, 1) (Golub–Welsch: the eigenvalues of the Jacobi matrix of the probabilists' Hermite
  // polynomials, off-diagonal sqrt(k); weights = squared first components of the eigenvectors).
  const int n = kGaussHermiteNodes;
  models::Matrix J = models::Matrix::Zero(n, n);
  for (int k = 1; k < n; ++k) J(k, k - 1) = J(k - 1, k) = std::sqrt(static_cast<double>(k));
  const Eigen::SelfAdjointEigenSolver<models::Matrix> eig(J);
  std::vector<double> z1(static_cast<std::size_t>(n)), w1(static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) {
    z1[k] = eig.eigenvalues()(k);
    w1[k] = eig.eigenvectors()(0, k) * eig.eigenvectors()(0, k);
  }
  const models::Matrix L = start.covariance().llt().matrixL();
  const bool pointValues = representation() == meshes::FieldRepresentation::PointValues;
  const auto& vol = mesh_.ownedVolumes();
  const PetscInt nOwned = mesh_.owned().size();
  std::vector<double> acc(2 * static_cast<std::size_t>(nOwned), 0.0);
  StepReport report;
  // Per node and axis, the kernel's probability (or density) per cell along the axis: the cell value is their product.
  std::array<std::vector<double>, 3> along;
  long total = 1;
  for (int a = 0; a < dim; ++a) total *= n;
  for (long node = 0; node < total; ++node) {
    models::Vector zn(dim);
    double w = 1.0;
    long rest = node;
    for (int a = 0; a < dim; ++a) {
      zn(a) = z1[static_cast<std::size_t>(rest % n)];
      w *= w1[static_cast<std::size_t>(rest % n)];
      rest /= n;
    }
    const models::Vector x = start.mean() + L * zn;
    ParameterPoint theta{0, 0, 0};
    for (int a = 0; a < dim; ++a) theta[a] = x(a);
    for (int field = 0; field < 2; ++field) {
      // Step 0's map (cyclic: batch 0), or every Poisson batch's with its weight.
      forEachImage(field, 0, theta, [&](const ParameterPoint& y, double weight) {
        const double wy = w * weight;
        Outflow& out = field == 0 ? report.diffP : report.diffQ;
        for (int a = 0; a < dim; ++a) {
          const auto& axis = box.axis(a);
          const double s = kernelStdDev_[a];
          auto below = [&](double f) { return 0.5 * std::erfc(-(f - y[a]) / (s * std::sqrt(2.0))); };  // P(y + Z < f)
          auto above = [&](double f) { return 0.5 * std::erfc((f - y[a]) / (s * std::sqrt(2.0))); };   // P(y + Z > f)
          along[a].assign(static_cast<std::size_t>(axis.cells()), 0.0);
          for (int i = 0; i < axis.cells(); ++i) {
            const double lo = axis.face(i), hi = axis.face(i + 1), c = 0.5 * (lo + hi);
            // Cell probabilities as differences of the smaller tail, so that far cells keep their digits.
            along[a][static_cast<std::size_t>(i)] =
                pointValues ? std::exp(-0.5 * (c - y[a]) * (c - y[a]) / (s * s)) / (s * std::sqrt(2.0 * M_PI))
                : c < y[a]  ? below(hi) - below(lo)
                            : above(lo) - above(hi);
          }
          // Beyond the walls, counted per face (a corner's mass on both of its faces: at the noise's 1e-19 scale).
          out.mass[2 * a] += wy * below(axis.lower());
          out.mass[2 * a + 1] += wy * above(axis.upper());
        }
        mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
          const std::array<PetscInt, 3> c{i, j, k};
          double v = wy;
          for (int a = 0; a < dim; ++a) v *= along[a][static_cast<std::size_t>(c[a])];
          acc[2 * static_cast<std::size_t>(l) + static_cast<std::size_t>(field)] += pointValues ? v : v / vol[l];
        });
      });
    }
  }
  PetscScalar* a;
  FPDP_PETSC(VecGetArray(u, &a));
  for (std::size_t l = 0; l < acc.size(); ++l) a[l] = acc[l];
  FPDP_PETSC(VecRestoreArray(u, &a));
  return report;
}

void NoisyGradientDescent::setBoundary(SingularMasses masses) {
  if (masses.p.size() != bins_.size() || masses.q.size() != bins_.size())
    throw std::invalid_argument("NoisyGradientDescent::setBoundary: " + std::to_string(masses.p.size()) + " and " +
                                std::to_string(masses.q.size()) + " masses for " + std::to_string(bins_.size()) +
                                " boundary bins");
  boundary_ = std::move(masses);
}

}  // namespace fpdp::solver
