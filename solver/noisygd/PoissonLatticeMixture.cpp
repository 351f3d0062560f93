#include "solver/noisygd/PoissonLatticeMixture.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace fpdp::solver {

namespace {

/// phi(1) of the standard normal density: ||phi_s''||_1 = 4 phi(1) / s^2 (docs/noisy-gd.md §9.2).
const double kPhiOne = std::exp(-0.5) / std::sqrt(2.0 * M_PI);

/// The L1 norms of the third and fourth derivatives of the standard normal density (those of phi_s are these over s^3
/// and s^4). phi''' = -He_3 phi changes sign at 0 and +-sqrt(3), where phi'' = (z^2 - 1) phi is -phi(0) and
/// 2 phi(sqrt(3)): 2 (phi(0) + 4 phi(sqrt(3))) = 1.5100. phi'''' = He_4 phi changes sign at z^2 = 3 -+ sqrt(6), where
/// phi''' = -(z^3 - 3 z) phi takes the values summed below: 2.8006.
double normalDensity(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI); }
double thirdDerivativeNorm() {
  static const double norm = 2.0 * (normalDensity(0.0) + 4.0 * normalDensity(std::sqrt(3.0)));
  return norm;
}
double fourthDerivativeNorm() {
  static const double norm = [] {
    const auto d3 = [](double z) { return -(z * z * z - 3.0 * z) * normalDensity(z); };
    const double r1 = std::sqrt(3.0 - std::sqrt(6.0)), r2 = std::sqrt(3.0 + std::sqrt(6.0));
    return 2.0 * (std::fabs(d3(r1)) + std::fabs(d3(r2) - d3(r1)) + std::fabs(d3(r2)));
  }();
  return norm;
}

/// A rounded record's law on the line's lattice, relative to k0 (its displacement being (k0 + f) Delta): the two-point
/// split of mean f (k0 w.p. 1 - f, k0 + 1 w.p. f) spread by a symmetric step of variance c = (f - 1/2)^2 (to k0 - 1
/// and k0 + 2), so that its variance is 1/4 (of Delta^2) for every f: weights at k0 - 1, k0, k0 + 1, k0 + 2.
std::array<double, 4> includedSplit(double f) {
  const double c = (f - 0.5) * (f - 0.5);
  return {(1.0 - f) * c / 2.0, (1.0 - f) * (1.0 - c) + f * c / 2.0, f * (1.0 - c) + (1.0 - f) * c / 2.0, f * c / 2.0};
}

/// An excluded record's (and a phantom's) symmetric spread on the line: -1, 0, +1 with 1/8, 3/4, 1/8 (variance 1/4).
constexpr std::array<double, 3> kExcludedSpread{0.125, 0.75, 0.125};

/// Per unit Delta^3 and Delta^4, a rounded record's contribution to the line lattice's bound (docs/noisy-gd.md §9.2):
/// gamma |E e^3 | included| and E e^4 + 3 (E e^2)^2 averaged over inclusion (E e^4 = 1/4 when excluded).
std::array<double, 2> lineRoundingMoments(double f, double rate) {
  const auto w = includedSplit(f);
  double third = 0.0, fourth = 0.0;
  for (int k = 0; k < 4; ++k) {
    const double e = static_cast<double>(k - 1) - f;
    third += w[static_cast<std::size_t>(k)] * e * e * e;
    fourth += w[static_cast<std::size_t>(k)] * e * e * e * e;
  }
  return {rate * std::fabs(third), rate * fourth + (1.0 - rate) * 0.25 + 3.0 / 16.0};
}

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
  // Every law carries the rounding variance of roundedRecords_ records (phantom spreads fill it up to the settings'
  // count), which the step's noise gives up: sigma^2 = s^2 - V (addedVariance).
  roundedRecords_ = std::max(settings_.roundedRecords, records_ - (exactGroup_ >= 0 ? 1 : 0));
  const double s = settings_.noiseStdDev;
  addedVariance_ = static_cast<double>(roundedRecords_) * 0.25 * settings_.spacing * settings_.spacing;
  if (!(addedVariance_ < 0.5 * s * s)) {
    std::ostringstream why;
    why << "the displacement lattice (spacing " << settings_.spacing << ", " << roundedRecords_
        << " rounded records) adds a variance " << addedVariance_ << " beyond half the step's noise variance " << s * s;
    throw LatticeBudgetExceeded(why.str());
  }
  compensatedStdDev_ = std::sqrt(s * s - addedVariance_);
  exactShift_.assign(nc, 0.0);
  double work = 0.0, stored = 0.0;
  for (std::size_t i = 0; i < nc; ++i) {
    laws_.push_back(displacementLaw(i, work));
    stored += static_cast<double>(laws_.back().prob.size());
    checkPoints(stored, i);
    if (exactGroup_ >= 0)
      exactShift_[i] = -(eta_ / expectedSize_) * centreGradients_[static_cast<std::size_t>(exactGroup_)][i];
    latticeBound_.push_back(lineLatticeTerm(laws_.back()));
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

double PoissonLatticeMixture::lineLatticeTerm(const LatticeLaw& law) const {
  // Given the batch, R = sum_j e_j with independent e_j of mean 0 and variance Delta^2 / 4 each, and the noise that
  // follows is N(0, sigma^2) with sigma^2 = s^2 - V. Swapping one e_j at a time for N(0, Delta^2 / 4) (the sum of all
  // of them with N(0, sigma^2) is the step's N(0, s^2)) changes the law by at most
  //   (1/2) (|E e_j^3| ||G'''||_1 / 6 + (E e_j^4 + 3 (Delta^2/4)^2) ||G''''||_1 / 24)
  // in TV (Taylor's formula with the integral remainder; G, phi_sigma convolved with the rest, has ||G^(k)||_1 <=
  // ||phi_sigma^(k)||_1), summed over the records and averaged over the batches (docs/noisy-gd.md §9.2).
  const double sigma = compensatedStdDev_;
  const double rounding = 0.5 * (thirdDerivativeNorm() / 6.0 * law.thirdMoments / (sigma * sigma * sigma) +
                                 fourthDerivativeNorm() / 24.0 * law.fourthMoments / (sigma * sigma * sigma * sigma));
  // Each pruning moves its mass by one lattice step; the noise after it is N(0, sigma^2) (and more).
  const double perMove = std::erf(settings_.spacing / (2.0 * std::sqrt(2.0) * sigma));
  return std::min(rounding + perMove * law.pruned, 1.0);
}

double PoissonLatticeMixture::withinCellTerm(double squares) const {
  // E|A|^2 = (eta/b)^2 gamma (1 - gamma) sum_j w_j^2; TV of two Gaussians N(0, s^2 I) shifted by |A|, then Jensen.
  const double rms = (eta_ / expectedSize_) * std::sqrt(rate_ * (1.0 - rate_) * squares);
  return std::erf(rms / (2.0 * std::sqrt(2.0) * settings_.noiseStdDev));
}

double PoissonLatticeMixture::spacingFor(double tolerance, double noiseStdDev, double rate, long records, int dim) {
  if (dim != 1) {
    // E|R|^2 <= gamma n dim Delta^2 / 4 (f (1 - f) <= 1/4 per axis).
    return noiseStdDev *
           std::sqrt(4.0 * tolerance / (kPhiOne * rate * static_cast<double>(records) * static_cast<double>(dim)));
  }
  // The line's bound (lineLatticeTerm) per unit mass at its worst over the fractions, in x = Delta / sigma:
  //   (1/2) (c3/6 gamma n x^3 / (6 sqrt 3) + c4/24 n x^4 / 2)
  // (|E e^3| <= Delta^3 / (6 sqrt 3) when included; E e^4 + 3/16 Delta^4 <= (5/16 + 3/16) Delta^4), with
  // sigma^2 = s^2 / (1 + n x^2 / 4) once the noise gives up the rounding's variance n Delta^2 / 4. x by bisection.
  const double n = static_cast<double>(records);
  const double third = 0.5 * thirdDerivativeNorm() / 6.0 * rate * n / (6.0 * std::sqrt(3.0)),
               fourth = 0.5 * fourthDerivativeNorm() / 24.0 * n * 0.5;
  const auto bound = [&](double x) { return third * x * x * x + fourth * x * x * x * x; };
  // Where each term is half the tolerance the bound holds; at twice the smaller of those x it does not (one term has
  // grown 8 or 16 times): the root lies between, found to a relative 2^-100 whatever the tolerance's magnitude.
  double lo = std::min(std::cbrt(0.5 * tolerance / third), std::pow(0.5 * tolerance / fourth, 0.25));
  double hi = 2.0 * lo;
  // At most n x^2 / 4 = 1/2: the noise keeps at least two thirds of its variance.
  const double largest = std::min(1.0, std::sqrt(2.0 / std::max(n, 1.0)));
  if (lo >= largest) {
    lo = hi = largest;
  } else {
    hi = std::min(hi, largest);
    if (bound(hi) <= tolerance) lo = hi;
  }
  for (int i = 0; i < 100 && lo < hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (bound(mid) <= tolerance ? lo : hi) = mid;
  }
  return lo * noiseStdDev / std::sqrt(1.0 + n * lo * lo / 4.0);
}

LatticeLaw PoissonLatticeMixture::displacementLaw(std::size_t cell, double& work) const {
  LatticeLaw law;
  law.prob = {1.0};
  const double delta = settings_.spacing, g = rate_;
  std::vector<double> next;
  // Convolves the law with `weights` at lattice offsets first, first + 1, ... (checked against the budget first).
  auto convolve = [&](long first, const double* weights, std::size_t count) {
    const std::size_t n = law.prob.size();
    const long lo = std::min(0L, first), hi = static_cast<long>(n) - 1 + std::max(0L, first + static_cast<long>(count) - 1);
    // Checked before the allocation: a tiny spacing makes hi - lo (and the work) as large as any budget.
    work += static_cast<double>(hi) - static_cast<double>(lo) + 1.0;
    checkWork(work, cell);
    next.assign(static_cast<std::size_t>(hi - lo + 1), 0.0);
    const double* src = law.prob.data();
    // Contiguous scaled additions (vectorisable): the law shifted by each offset.
    for (std::size_t k = 0; k < count; ++k) {
      if (weights[k] == 0.0) continue;
      double* dst = next.data() + (first + static_cast<long>(k) - lo);
      for (std::size_t j = 0; j < n; ++j) dst[j] += weights[k] * src[j];
    }
    law.prob.swap(next);
    law.first += lo;
    law.pruned += prune(law, settings_.pruneMass);
  };
  long rounded = 0;
  for (std::size_t r = 0; r < groups_.size(); ++r) {
    const long copies = groups_[r].count - (static_cast<long>(r) == exactGroup_ ? 1 : 0);
    if (copies == 0) continue;
    const double t = -(eta_ / expectedSize_) * centreGradients_[r][cell] / delta;
    const double kf = std::floor(t);
    // A record's displacement beyond 2^52 lattice steps cannot be held (nor its law built): refused like the budget.
    if (!(std::fabs(kf) < 0x1p52)) {
      std::ostringstream why;
      why << "the displacement lattice (spacing " << delta << ") puts one record's displacement beyond 2^52 points";
      throw LatticeBudgetExceeded(why.str());
    }
    const long k0 = static_cast<long>(kf);
    const double f = t - kf;
    const auto moments = lineRoundingMoments(f, g);
    law.thirdMoments += static_cast<double>(copies) * moments[0] * delta * delta * delta;
    law.fourthMoments += static_cast<double>(copies) * moments[1] * delta * delta * delta * delta;
    rounded += copies;
    // One record: excluded (1 - gamma), spread symmetrically about 0; included (gamma), its split about k0 + f.
    const auto split = includedSplit(f);
    // The window from min(-1, k0 - 1) to max(1, k0 + 2); the zero weights between the two parts are skipped.
    const long first = std::min(-1L, k0 - 1), last = std::max(1L, k0 + 2);
    std::vector<double> w(static_cast<std::size_t>(last - first + 1), 0.0);
    for (long k = 0; k < 3; ++k) w[static_cast<std::size_t>(k - 1 - first)] += (1.0 - g) * kExcludedSpread[static_cast<std::size_t>(k)];
    for (long k = 0; k < 4; ++k) w[static_cast<std::size_t>(k0 - 1 + k - first)] += g * split[static_cast<std::size_t>(k)];
    for (long copy = 0; copy < copies; ++copy) convolve(first, w.data(), w.size());
  }
  // Phantom spreads: every law carries the same rounding variance (settings_.roundedRecords of 1/4 Delta^2), which the
  // step's noise gives up (addedVariance), so that D's and D''s noise is one.
  for (long extra = rounded; extra < roundedRecords_; ++extra) {
    convolve(-1, kExcludedSpread.data(), kExcludedSpread.size());
    law.fourthMoments += (0.25 + 3.0 / 16.0) * delta * delta * delta * delta;
  }
  law.roundingVariance = static_cast<double>(std::max(rounded, roundedRecords_)) * 0.25 * delta * delta;
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
