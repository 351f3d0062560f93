#include "solver/noisygd/PoissonLatticeMixture.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace fpdp::solver {

namespace {

/// phi(1) of the standard normal density: ||phi_s''||_1 = 4 phi(1) / s^2 (docs/noisy-gd.md §9.2).
const double kPhiOne = std::exp(-0.5) / std::sqrt(2.0 * M_PI);

/// Moves the end points lighter than `eps` to their inner neighbour; returns the mass moved.
double prune(LatticeLaw& law, double eps) {
  auto& p = law.prob;
  double moved = 0.0;
  std::size_t lo = 0;
  while (p.size() - lo > 1 && p[lo] < eps) {
    p[lo + 1] += p[lo];
    moved += p[lo];
    ++lo;
  }
  std::size_t hi = p.size();
  while (hi - lo > 1 && p[hi - 1] < eps) {
    p[hi - 2] += p[hi - 1];
    moved += p[hi - 1];
    --hi;
  }
  p.erase(p.begin() + static_cast<std::ptrdiff_t>(hi), p.end());
  p.erase(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(lo));
  law.first += static_cast<long>(lo);
  return moved;
}

}  // namespace

PoissonLatticeMixture::PoissonLatticeMixture(const meshes::BoxMesh& mesh, std::vector<RecordGroup> groups,
                                             long exactGroup, double rate, double expectedSize, double eta,
                                             LatticeSettings settings)
    : mesh_(mesh), groups_(std::move(groups)), exactGroup_(exactGroup), rate_(rate), expectedSize_(expectedSize),
      eta_(eta), settings_(settings) {
  if (mesh.dim() != 1 && mesh.dim() != 2)
    throw std::invalid_argument("PoissonLatticeMixture: 1-D and 2-D meshes only (a lattice in 3-D is not done)");
  if (!(rate > 0 && rate <= 1)) throw std::invalid_argument("PoissonLatticeMixture: the rate must lie in (0, 1]");
  if (!(expectedSize > 0)) throw std::invalid_argument("PoissonLatticeMixture: the expected batch size must be > 0");
  if (!(settings.spacing > 0) || !(settings.pruneMass >= 0) || !(settings.noiseStdDev > 0) ||
      !(settings.gradientLipschitz >= 0) || !std::isfinite(settings.gradientLipschitz))
    throw std::invalid_argument("PoissonLatticeMixture: spacing > 0, pruneMass >= 0, noiseStdDev > 0 and a finite "
                                "gradientLipschitz >= 0 are needed");
  if (exactGroup_ >= static_cast<long>(groups_.size()))
    throw std::invalid_argument("PoissonLatticeMixture: exactGroup beyond the groups");
  for (const auto& g : groups_) {
    if (g.count < 1) throw std::invalid_argument("PoissonLatticeMixture: a record group without records");
    records_ += g.count;
  }
  if (mesh.dim() == 2) {
    setUpPlane();
    return;
  }
  const auto& ax = mesh.axis(0);
  const auto& faces = ax.faces();
  const std::size_t nc = static_cast<std::size_t>(ax.cells());
  const double scale = eta_ * rate_ / expectedSize_;  // the mean drift's factor eta gamma / b
  meanImages_.assign(faces.size(), 0.0);
  std::vector<std::vector<double>> faceGradients(groups_.size(), std::vector<double>(faces.size()));
  for (std::size_t f = 0; f < faces.size(); ++f) {
    double sum = 0.0;
    for (std::size_t r = 0; r < groups_.size(); ++r) {
      faceGradients[r][f] = groups_[r].gradient({faces[f], 0, 0})[0];
      sum += static_cast<double>(groups_[r].count) * faceGradients[r][f];
    }
    meanImages_[f] = faces[f] - scale * sum;
  }
  meanSlopes_ = imageSlopes(faces, meanImages_);
  centreGradients_.assign(groups_.size(), std::vector<double>(nc));
  meanSumAtCentre_.assign(nc, 0.0);
  for (std::size_t i = 0; i < nc; ++i) {
    const double c = 0.5 * (faces[i] + faces[i + 1]);
    double sum = 0.0;
    for (std::size_t r = 0; r < groups_.size(); ++r) {
      centreGradients_[r][i] = groups_[r].gradient({c, 0, 0})[0];
      sum += static_cast<double>(groups_[r].count) * centreGradients_[r][i];
    }
    meanSumAtCentre_[i] = scale * sum;
  }
  // On a uniform line the spacing is refined to h / M (M whole), so that M lattice points make one cell
  // (depositOnUniformLine).
  const double h = ax.width(0);
  if (ax.isUniform()) {
    if (!(h / settings_.spacing < 0x1p40)) {
      std::ostringstream why;
      why << "the displacement lattice (spacing " << settings_.spacing << ") needs more than 2^40 points per cell";
      throw LatticeBudgetExceeded(why.str());
    }
    cellsPerStep_ = static_cast<long>(std::ceil(h / settings_.spacing * (1.0 - 1e-12)));
    settings_.spacing = h / static_cast<double>(cellsPerStep_);
  }
  exactShift_.assign(nc, 0.0);
  double work = 0.0, stored = 0.0;
  for (std::size_t i = 0; i < nc; ++i) {
    laws_.push_back(displacementLaw(i, work));
    stored += static_cast<double>(laws_.back().prob.size());
    checkPoints(stored, i);
    if (exactGroup_ >= 0)
      exactShift_[i] = -(eta_ / expectedSize_) * centreGradients_[static_cast<std::size_t>(exactGroup_)][i];
    latticeBound_.push_back(latticeTerm(laws_.back().roundingVariance, laws_.back().pruned));
    // sum_j w_j^2 over the records: the Lipschitz bound, or for nondecreasing gradients the faces' values if smaller.
    const double half = 0.5 * settings_.gradientLipschitz * ax.width(static_cast<int>(i));
    double squares = static_cast<double>(records_) * half * half;
    if (settings_.monotoneGradients) {
      double faceSquares = 0.0;
      for (std::size_t r = 0; r < groups_.size(); ++r) {
        const double w = std::max(std::fabs(faceGradients[r][i] - centreGradients_[r][i]),
                                  std::fabs(faceGradients[r][i + 1] - centreGradients_[r][i]));
        faceSquares += static_cast<double>(groups_[r].count) * w * w;
      }
      squares = std::min(squares, faceSquares);
    }
    withinCellBound_.push_back(withinCellTerm(squares));
  }
}

double PoissonLatticeMixture::latticeTerm(double roundingVariance, double pruned) const {
  const double s = settings_.noiseStdDev;
  // Each pruning moves its mass by one lattice step (along one axis), which changes the law after the noise by at
  // most TV(N(0, s^2 I), N(Delta e_a, s^2 I)) = erf(Delta / (2 sqrt(2) s)) per unit mass moved.
  const double perMove = std::erf(settings_.spacing / (2.0 * std::sqrt(2.0) * s));
  return std::min(kPhiOne * roundingVariance / (s * s) + perMove * pruned, 1.0);
}

double PoissonLatticeMixture::withinCellTerm(double squares) const {
  // E|A|^2 = (eta/b)^2 gamma (1 - gamma) sum_j w_j^2; TV of two Gaussians N(0, s^2 I) shifted by |A|, then Jensen.
  const double rms = (eta_ / expectedSize_) * std::sqrt(rate_ * (1.0 - rate_) * squares);
  return std::erf(rms / (2.0 * std::sqrt(2.0) * settings_.noiseStdDev));
}

double PoissonLatticeMixture::spacingFor(double tolerance, double noiseStdDev, double rate, long records, int dim) {
  // E|R|^2 <= gamma n dim Delta^2 / 4 (f (1 - f) <= 1/4 per axis).
  return noiseStdDev *
         std::sqrt(4.0 * tolerance / (kPhiOne * rate * static_cast<double>(records) * static_cast<double>(dim)));
}

LatticeLaw PoissonLatticeMixture::displacementLaw(std::size_t cell, double& work) const {
  LatticeLaw law;
  law.prob = {1.0};
  const double delta = settings_.spacing, g = rate_;
  std::vector<double> next;
  for (std::size_t r = 0; r < groups_.size(); ++r) {
    const long copies = groups_[r].count - (static_cast<long>(r) == exactGroup_ ? 1 : 0);
    if (copies == 0) continue;
    const double t = -(eta_ / expectedSize_) * centreGradients_[r][cell] / delta;
    const double kf = std::floor(t);
    // A record's displacement beyond 2^52 lattice steps cannot be held (nor its law built): refused like the budget.
    if (!(std::fabs(kf) < 0x1p52))
    {
      std::ostringstream why;
      why << "the displacement lattice (spacing " << delta << ") puts one record's displacement beyond 2^52 points";
      throw LatticeBudgetExceeded(why.str());
    }
    const long k0 = static_cast<long>(kf);
    const double f = t - kf;
    law.roundingVariance += static_cast<double>(copies) * g * f * (1.0 - f) * delta * delta;
    // One record: 0 w.p. 1 - gamma, k0 w.p. gamma (1 - f), k0 + 1 w.p. gamma f.
    const double w0 = 1.0 - g, w1 = g * (1.0 - f), w2 = g * f;
    for (long copy = 0; copy < copies; ++copy) {
      const std::size_t n = law.prob.size();
      const long lo = std::min(0L, k0), hi = static_cast<long>(n) - 1 + std::max(0L, k0 + 1);
      // Checked before the allocation: a tiny spacing makes hi - lo (and the work) as large as any budget.
      work += static_cast<double>(hi) - static_cast<double>(lo) + 1.0;
      checkWork(work, cell);
      next.assign(static_cast<std::size_t>(hi - lo + 1), 0.0);
      // Three contiguous scaled additions (vectorisable): the law shifted by 0, k0 and k0 + 1 points.
      const double* src = law.prob.data();
      for (const auto& [offset, weight] : {std::pair{-lo, w0}, std::pair{k0 - lo, w1}, std::pair{k0 + 1 - lo, w2}}) {
        double* dst = next.data() + offset;
        for (std::size_t j = 0; j < n; ++j) dst[j] += weight * src[j];
      }
      law.prob.swap(next);
      law.first += lo;
      law.pruned += prune(law, settings_.pruneMass);
    }
  }
  return law;
}

Outflow PoissonLatticeMixture::apply(std::vector<double>& field, StepBound& bound) const {
  if (mesh_.dim() == 2) return applyPlane(field, bound);
  const auto& ax = mesh_.axis(0);
  const std::size_t nc = static_cast<std::size_t>(ax.cells());
  const auto rho = faceDensities(ax.faces(), field.data(), 1, true);
  std::vector<double> out(nc, 0.0);
  Outflow outflow;
  bound = StepBound{};
  // The differing record's branches: absent (1 - gamma) and present (gamma) with its exact displacement.
  const bool exact = exactGroup_ >= 0;
  for (std::size_t i = 0; i < nc; ++i) {
    const double m = field[i] * ax.width(static_cast<int>(i));
    if (m == 0.0) continue;
    bound.lattice += std::max(m, 0.0) * latticeBound_[i];
    bound.withinCell += std::max(m, 0.0) * withinCellBound_[i];
    for (int branch = 0; branch < (exact ? 2 : 1); ++branch) {
      const double bw = exact ? (branch == 0 ? 1.0 - rate_ : rate_) : 1.0;
      if (bw == 0.0) continue;
      const Deposit d{i, bw * m, bw * rho[i], bw * rho[i + 1],
                      meanSumAtCentre_[i] + (branch == 1 ? exactShift_[i] : 0.0)};
      if (cellsPerStep_ > 0) depositOnUniformLine(d, out, outflow);
      else depositByRemaps(d, out, outflow);
    }
  }
  for (std::size_t i = 0; i < nc; ++i) field[i] = out[i] / ax.width(static_cast<int>(i));
  return outflow;
}

void PoissonLatticeMixture::depositByRemaps(const Deposit& d, std::vector<double>& out, Outflow& outflow) const {
  const std::vector<double>& faces = mesh_.axis(0).faces();
  const LatticeLaw& law = laws_[d.cell];
  std::vector<double> mass(1), density(2), images(2), slopes{meanSlopes_[d.cell], meanSlopes_[d.cell + 1]};
  for (std::size_t k = 0; k < law.prob.size(); ++k) {
    const double w = law.prob[k];
    if (w == 0.0) continue;
    const double shift = d.shift + static_cast<double>(law.first + static_cast<long>(k)) * settings_.spacing;
    mass[0] = w * d.mass;
    density = {w * d.rhoLeft, w * d.rhoRight};
    images = {meanImages_[d.cell] + shift, meanImages_[d.cell + 1] + shift};
    const auto lost = remapLine(faces, mass, density, images, slopes, out.data(), 1);
    outflow.mass[0] += lost[0];
    outflow.mass[1] += lost[1];
  }
}

void PoissonLatticeMixture::depositOnUniformLine(const Deposit& d, std::vector<double>& out, Outflow& outflow) const {
  // Spacing h / M: lattice point t = q M + r shifts by q whole cells plus r Delta. The deposit of the cell shifted by
  // r Delta is remapped once per residue r onto a local line of the mesh's cells around it (padded so that nothing
  // leaves it), and every lattice point adds its residue's deposit q cells further.
  const auto& ax = mesh_.axis(0);
  const double h = ax.width(0);
  const long M = cellsPerStep_, nc = ax.cells(), i = static_cast<long>(d.cell);
  const double left = meanImages_[d.cell] + d.shift, right = meanImages_[d.cell + 1] + d.shift;
  const double xi = ax.face(static_cast<int>(i));
  const long pad = static_cast<long>(std::ceil(std::max(std::fabs(left - xi), std::fabs(right - xi - h)) / h)) + 2;
  std::vector<double> localFaces(static_cast<std::size_t>(2 * pad + 2));
  for (std::size_t j = 0; j < localFaces.size(); ++j) localFaces[j] = xi + (static_cast<double>(j) - pad) * h;
  const std::vector<double> mass{d.mass}, density{d.rhoLeft, d.rhoRight},
      slopes{meanSlopes_[d.cell], meanSlopes_[d.cell + 1]};
  std::vector<double> images(2);
  std::vector<std::vector<double>> pattern(static_cast<std::size_t>(M));
  const LatticeLaw& law = laws_[d.cell];
  for (std::size_t k = 0; k < law.prob.size(); ++k) {
    const double w = law.prob[k];
    if (w == 0.0) continue;
    const long t = law.first + static_cast<long>(k);
    const long q = (t >= 0 ? t : t - (M - 1)) / M, r = t - q * M;
    auto& p = pattern[static_cast<std::size_t>(r)];
    if (p.empty()) {
      p.assign(localFaces.size() - 1, 0.0);
      const double shift = static_cast<double>(r) * settings_.spacing;
      images = {left + shift, right + shift};
      const auto lost = remapLine(localFaces, mass, density, images, slopes, p.data(), 1);
      outflow.mass[0] += lost[0];  // nothing, by the padding; counted all the same
      outflow.mass[1] += lost[1];
    }
    for (std::size_t j = 0; j < p.size(); ++j) {
      if (p[j] == 0.0) continue;
      const long g = i - pad + static_cast<long>(j) + q;
      if (g < 0) outflow.mass[0] += w * p[j];
      else if (g >= nc) outflow.mass[1] += w * p[j];
      else out[static_cast<std::size_t>(g)] += w * p[j];
    }
  }
}

std::size_t PoissonLatticeMixture::widestLaw() const {
  std::size_t w = 0;
  for (const auto& l : laws_) w = std::max(w, l.prob.size());
  for (const auto& l : planeLaws_) w = std::max(w, l.prob.size());
  return w;
}

double PoissonLatticeMixture::latticePoints() const {
  double s = 0.0;
  for (const auto& l : laws_) s += static_cast<double>(l.prob.size());
  for (const auto& l : planeLaws_) s += static_cast<double>(l.prob.size());
  return s;
}

std::string PoissonLatticeMixture::describe() const {
  std::ostringstream os;
  os << "Poisson batch mixture, rate " << rate_ << ", b = " << expectedSize_ << ": " << groups_.size()
     << " distinct records, displacement lattice of spacing " << settings_.spacing << " (up to " << widestLaw()
     << " points per cell, " << latticePoints() << " in all; end points below " << settings_.pruneMass
     << " moved inwards)" << (exactGroup_ >= 0 ? ", the differing record exact" : "")
     << "; TV bounds per step and unit mass up to " << *std::max_element(latticeBound_.begin(), latticeBound_.end())
     << " (lattice) and " << *std::max_element(withinCellBound_.begin(), withinCellBound_.end()) << " (within cells)";
  return os.str();
}

}  // namespace fpdp::solver
