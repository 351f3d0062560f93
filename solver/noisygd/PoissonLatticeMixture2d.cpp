// PoissonLatticeMixture in 2-D: the displacement law on Delta Z^2 by rows, and the deposit as a product of two
// one-cell remaps (the header's comment; docs/noisy-gd.md §9.2, "In two dimensions"; MATH.md §8 for the step).
#include "solver/noisygd/PoissonLatticeMixture.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace fpdp::solver {

namespace {

/// Moves the light end points of every row to their inner neighbour in the row, then end rows reduced to one light
/// point into the next row: one step in y, and where that row does not hold the point's x, on along x to the row's
/// nearest end (each lattice step counted: a row's single points would otherwise trail behind the law's drift record
/// after record, a spine of rows as long as the drift). Compacts the law. Returns the mass moved times the lattice
/// steps it moved.
double prunePlane(PlaneLatticeLaw& law, double eps) {
  if (!(eps > 0)) return 0.0;
  auto& p = law.prob;
  const std::size_t R = law.rows();
  std::vector<std::size_t> lo(R), hi(R);
  double moved = 0.0;
  for (std::size_t r = 0; r < R; ++r) {
    lo[r] = law.rowStart[r];
    hi[r] = law.rowStart[r + 1];
    while (hi[r] - lo[r] > 1 && p[lo[r]] < eps) {
      p[lo[r] + 1] += p[lo[r]];
      moved += p[lo[r]];
      ++lo[r];
    }
    while (hi[r] - lo[r] > 1 && p[hi[r] - 1] < eps) {
      p[hi[r] - 2] += p[hi[r] - 1];
      moved += p[hi[r] - 1];
      --hi[r];
    }
  }
  const auto xOf = [&](std::size_t r, std::size_t at) {
    return law.rowFirst[r] + static_cast<long>(at - law.rowStart[r]);
  };
  // An end row of one light point goes into its neighbour row, to the point of its x or the row's nearest end.
  const auto intoRow = [&](std::size_t from, std::size_t to) {
    if (hi[from] - lo[from] != 1 || !(p[lo[from]] < eps) || hi[to] == lo[to]) return false;
    const long x = xOf(from, lo[from]), first = xOf(to, lo[to]), last = xOf(to, hi[to] - 1);
    const long target = std::clamp(x, first, last);
    p[lo[to] + static_cast<std::size_t>(target - first)] += p[lo[from]];
    moved += p[lo[from]] * static_cast<double>(1 + std::labs(x - target));
    return true;
  };
  std::size_t rFirst = 0, rEnd = R;
  while (rEnd - rFirst > 1 && intoRow(rFirst, rFirst + 1)) ++rFirst;
  while (rEnd - rFirst > 1 && intoRow(rEnd - 1, rEnd - 2)) --rEnd;
  // Compaction (forward copies: every write position is at most its read position).
  std::size_t w = 0;
  std::vector<long> rowFirst;
  std::vector<std::size_t> rowStart{0};
  rowFirst.reserve(rEnd - rFirst);
  rowStart.reserve(rEnd - rFirst + 1);
  for (std::size_t r = rFirst; r < rEnd; ++r) {
    rowFirst.push_back(xOf(r, lo[r]));
    for (std::size_t k = lo[r]; k < hi[r]; ++k) p[w++] = p[k];
    rowStart.push_back(w);
  }
  p.resize(w);
  law.firstRow += static_cast<long>(rFirst);
  law.rowFirst.swap(rowFirst);
  law.rowStart.swap(rowStart);
  return moved;
}

/// One record's law convolved into `law`: 0 with probability 1 - gamma, else (kx + {0, 1}, ky + {0, 1}) with the
/// bilinear weights (1 - fx or fx)(1 - fy or fy). `addWork` is called with the points about to be written (before
/// anything is allocated).
template <class AddWork>
void convolveRecord(PlaneLatticeLaw& law, PlaneLatticeLaw& next, double gamma, long kx, double fx, long ky, double fy,
                    AddWork&& addWork) {
  const long R = static_cast<long>(law.rows());
  const long yLo = std::min(0L, ky), yHi = std::max(R - 1, R - 1 + ky + (fy > 0 ? 1 : 0));  // row indices of `law`
  // The contributions to new row y: the row itself (weight 1 - gamma), row y - ky (gamma (1 - fy)) and y - ky - 1
  // (gamma fy), the latter two split in x between kx and kx + 1.
  struct Source {
    long row;
    double weight;
    bool shifted;
  };
  const Source sources[3] = {{0, 1.0 - gamma, false}, {ky, gamma * (1.0 - fy), true}, {ky + 1, gamma * fy, true}};
  const auto rowRange = [&](long y, long& first, long& last) {
    bool any = false;
    for (const auto& s : sources) {
      const long r = y - s.row;
      if (s.weight == 0.0 || r < 0 || r >= R || law.rowLength(static_cast<std::size_t>(r)) == 0) continue;
      const long f = law.rowFirst[static_cast<std::size_t>(r)] + (s.shifted ? kx : 0);
      const long l = f + static_cast<long>(law.rowLength(static_cast<std::size_t>(r))) - 1 +
                     (s.shifted && fx > 0 ? 1 : 0);
      first = any ? std::min(first, f) : f;
      last = any ? std::max(last, l) : l;
      any = true;
    }
    return any;
  };
  addWork(static_cast<double>(yHi) - static_cast<double>(yLo) + 1.0);  // the rows, before they are allocated
  double points = 0.0;
  for (long y = yLo; y <= yHi; ++y) {
    long first = 0, last = -1;
    if (rowRange(y, first, last)) points += static_cast<double>(last) - static_cast<double>(first) + 1.0;
  }
  addWork(points);
  const std::size_t newRows = static_cast<std::size_t>(yHi - yLo + 1);
  next.firstRow = law.firstRow + yLo;
  next.rowFirst.assign(newRows, 0);
  next.rowStart.assign(newRows + 1, 0);
  for (long y = yLo; y <= yHi; ++y) {
    long first = 0, last = -1;
    const std::size_t r = static_cast<std::size_t>(y - yLo);
    if (rowRange(y, first, last)) next.rowFirst[r] = first;
    next.rowStart[r + 1] = next.rowStart[r] + static_cast<std::size_t>(last - first + 1);
  }
  next.prob.assign(next.rowStart.back(), 0.0);
  for (long y = yLo; y <= yHi; ++y) {
    const std::size_t nr = static_cast<std::size_t>(y - yLo);
    double* dst = next.prob.data() + next.rowStart[nr];
    for (const auto& s : sources) {
      const long r = y - s.row;
      if (s.weight == 0.0 || r < 0 || r >= R) continue;
      const std::size_t ur = static_cast<std::size_t>(r), n = law.rowLength(ur);
      if (n == 0) continue;
      const double* src = law.prob.data() + law.rowStart[ur];
      double* d = dst + (law.rowFirst[ur] + (s.shifted ? kx : 0) - next.rowFirst[nr]);
      if (!s.shifted) {
        for (std::size_t k = 0; k < n; ++k) d[k] += s.weight * src[k];
        continue;
      }
      const double a = s.weight * (1.0 - fx), b = s.weight * fx;
      for (std::size_t k = 0; k < n; ++k) d[k] += a * src[k];
      if (b != 0.0)
        for (std::size_t k = 0; k < n; ++k) d[k + 1] += b * src[k];
    }
  }
  next.roundingVariance = law.roundingVariance;
  next.pruned = law.pruned;
  std::swap(law, next);
}

}  // namespace

void PoissonLatticeMixture::checkWork(double work, std::size_t cell) const {
  if (!(settings_.workBudget > 0) || work <= settings_.workBudget) return;
  std::ostringstream why;
  why << "the displacement lattice (spacing " << settings_.spacing << ") needs more than " << settings_.workBudget
      << " lattice-point updates to build its laws (budget reached at cell " << cell + 1 << " of "
      << mesh_.totalCells() << ")";
  throw LatticeBudgetExceeded(why.str());
}

void PoissonLatticeMixture::checkPoints(double stored, std::size_t cell) const {
  if (!(settings_.pointBudget > 0) || stored <= settings_.pointBudget) return;
  std::ostringstream why;
  why << "the displacement lattice (spacing " << settings_.spacing << ") needs more than " << settings_.pointBudget
      << " lattice points to hold its laws (budget reached at cell " << cell + 1 << " of " << mesh_.totalCells()
      << ")";
  throw LatticeBudgetExceeded(why.str());
}

void PoissonLatticeMixture::setUpPlane() {
  const auto& ax = mesh_.axis(0);
  const auto& ay = mesh_.axis(1);
  const std::size_t nx = static_cast<std::size_t>(ax.cells()), ny = static_cast<std::size_t>(ay.cells());
  const std::size_t nc = nx * ny;
  const double scale = eta_ * rate_ / expectedSize_;  // the mean drift's factor eta gamma / b
  double widest = 0.0;
  for (int i = 0; i < ax.cells(); ++i) widest = std::max(widest, ax.width(i));
  for (int j = 0; j < ay.cells(); ++j) widest = std::max(widest, ay.width(j));
  if (!(widest / settings_.spacing < 0x1p40)) {
    std::ostringstream why;
    why << "the displacement lattice (spacing " << settings_.spacing << ") needs more than 2^40 points per cell width";
    throw LatticeBudgetExceeded(why.str());
  }
  // The mean map x - (eta gamma / b) sum_j g_j(x): x-images of the x-faces on every row (y at the row's centres),
  // y-images of the y-faces on every column.
  const auto meanSum = [&](const ParameterPoint& x) {
    ParameterPoint sum{0, 0, 0};
    for (const auto& g : groups_) {
      const ParameterPoint v = g.gradient(x);
      for (int a = 0; a < 2; ++a) sum[a] += static_cast<double>(g.count) * v[a];
    }
    return sum;
  };
  rowImages_.assign(ny, std::vector<double>(nx + 1));
  rowSlopes_.resize(ny);
  for (std::size_t j = 0; j < ny; ++j) {
    for (std::size_t f = 0; f <= nx; ++f)
      rowImages_[j][f] = ax.faces()[f] - scale * meanSum({ax.faces()[f], ay.centre(static_cast<int>(j)), 0})[0];
    rowSlopes_[j] = imageSlopes(ax.faces(), rowImages_[j]);
  }
  columnImages_.assign(nx, std::vector<double>(ny + 1));
  columnSlopes_.resize(nx);
  for (std::size_t i = 0; i < nx; ++i) {
    for (std::size_t f = 0; f <= ny; ++f)
      columnImages_[i][f] = ay.faces()[f] - scale * meanSum({ax.centre(static_cast<int>(i)), ay.faces()[f], 0})[1];
    columnSlopes_[i] = imageSlopes(ay.faces(), columnImages_[i]);
  }
  centreGradients_.assign(groups_.size(), std::vector<double>(2 * nc));
  planeMeanSum_.assign(2 * nc, 0.0);
  planeExactShift_.assign(2 * nc, 0.0);
  bool constant = true;  // every record's gradient the same at every centre: one law for all cells
  for (std::size_t c = 0; c < nc; ++c) {
    const ParameterPoint x{ax.centre(static_cast<int>(c % nx)), ay.centre(static_cast<int>(c / nx)), 0};
    for (std::size_t r = 0; r < groups_.size(); ++r) {
      const ParameterPoint g = groups_[r].gradient(x);
      for (std::size_t a = 0; a < 2; ++a) {
        centreGradients_[r][2 * c + a] = g[a];
        planeMeanSum_[2 * c + a] += scale * static_cast<double>(groups_[r].count) * g[a];
        constant = constant && g[a] == centreGradients_[r][a];
      }
    }
    if (exactGroup_ >= 0)
      for (std::size_t a = 0; a < 2; ++a)
        planeExactShift_[2 * c + a] =
            -(eta_ / expectedSize_) * centreGradients_[static_cast<std::size_t>(exactGroup_)][2 * c + a];
  }
  double work = 0.0, stored = 0.0;
  planeLawOfCell_.assign(nc, 0);
  for (std::size_t c = 0; c < (constant ? 1 : nc); ++c) {
    planeLaws_.push_back(planeDisplacementLaw(c, work));
    planeLawOfCell_[c] = planeLaws_.size() - 1;
    stored += static_cast<double>(planeLaws_.back().prob.size());
    checkPoints(stored, c);
  }
  for (std::size_t c = 0; c < nc; ++c) {
    const PlaneLatticeLaw& law = planeLaws_[planeLawOfCell_[c]];
    latticeBound_.push_back(latticeTerm(law.roundingVariance, law.pruned));
    // |g_j(x) - g_j(c)| <= beta |x - c| <= beta times the cell's half diagonal.
    const double r = 0.5 * std::hypot(ax.width(static_cast<int>(c % nx)), ay.width(static_cast<int>(c / nx)));
    const double w = settings_.gradientLipschitz * r;
    withinCellBound_.push_back(withinCellTerm(static_cast<double>(records_) * w * w));
  }
}

PlaneLatticeLaw PoissonLatticeMixture::planeDisplacementLaw(std::size_t cell, double& work) const {
  PlaneLatticeLaw law, next;
  law.rowFirst = {0};
  law.rowStart = {0, 1};
  law.prob = {1.0};
  const double delta = settings_.spacing, g = rate_;
  for (std::size_t r = 0; r < groups_.size(); ++r) {
    const long copies = groups_[r].count - (static_cast<long>(r) == exactGroup_ ? 1 : 0);
    if (copies == 0) continue;
    long k[2];
    double f[2];
    for (std::size_t a = 0; a < 2; ++a) {
      const double t = -(eta_ / expectedSize_) * centreGradients_[r][2 * cell + a] / delta;
      const double kf = std::floor(t);
      if (!(std::fabs(kf) < 0x1p52)) {
        std::ostringstream why;
        why << "the displacement lattice (spacing " << delta << ") puts one record's displacement beyond 2^52 points";
        throw LatticeBudgetExceeded(why.str());
      }
      k[a] = static_cast<long>(kf);
      f[a] = t - kf;
    }
    law.roundingVariance +=
        static_cast<double>(copies) * g * (f[0] * (1.0 - f[0]) + f[1] * (1.0 - f[1])) * delta * delta;
    for (long copy = 0; copy < copies; ++copy) {
      convolveRecord(law, next, g, k[0], f[0], k[1], f[1], [&](double points) {
        work += points;
        checkWork(work, cell);
      });
      law.pruned += prunePlane(law, settings_.pruneMass);
    }
  }
  return law;
}

namespace {

/// A one-cell remap's deposit along a line: the cells from `first` on, its mass beyond the walls.
struct LineProfile {
  long first = 0;
  std::vector<double> mass;
  std::array<double, 2> lost{0, 0};
  double inside = 0;  // the sum of `mass`
};

/// The unit mass of a cell with faces densities `density` (per unit length, for unit mass) remapped through images
/// `images` (slopes `slopes`) onto `faces`; `line` is a zeroed scratch line of the target cells, left zeroed.
void remapOneCell(const std::vector<double>& faces, const std::vector<double>& density,
                  const std::vector<double>& images, const std::vector<double>& slopes, std::vector<double>& line,
                  LineProfile& out) {
  static const std::vector<double> unit{1.0};
  out.lost = remapLine(faces, unit, density, images, slopes, line.data(), 1);
  out.mass.clear();
  out.inside = 0.0;
  const double lo = std::max(std::min(images[0], images[1]), faces.front());
  const double hi = std::min(std::max(images[0], images[1]), faces.back());
  if (lo > hi) return;
  const long n = static_cast<long>(line.size());
  const auto cellOf = [&](double x) {
    const long c = static_cast<long>(std::upper_bound(faces.begin(), faces.end(), x) - faces.begin()) - 1;
    return std::clamp(c, 0L, n - 1);
  };
  out.first = cellOf(lo);
  const long last = cellOf(hi);
  for (long c = out.first; c <= last; ++c) {
    double& v = line[static_cast<std::size_t>(c)];
    out.mass.push_back(v);
    out.inside += v;
    v = 0.0;
  }
}

}  // namespace

Outflow PoissonLatticeMixture::applyPlane(std::vector<double>& field, StepBound& bound) const {
  const auto& ax = mesh_.axis(0);
  const auto& ay = mesh_.axis(1);
  const std::size_t nx = static_cast<std::size_t>(ax.cells()), ny = static_cast<std::size_t>(ay.cells());
  // The density at the x-faces along every row and at the y-faces along every column.
  std::vector<std::vector<double>> rhoX(ny), rhoY(nx);
  for (std::size_t j = 0; j < ny; ++j) rhoX[j] = faceDensities(ax.faces(), field.data() + j * nx, 1, true);
  for (std::size_t i = 0; i < nx; ++i)
    rhoY[i] = faceDensities(ay.faces(), field.data() + i, static_cast<std::ptrdiff_t>(nx), true);
  std::vector<double> out(nx * ny, 0.0), lineX(nx, 0.0), lineY(ny, 0.0), rowSum(nx, 0.0);
  std::vector<double> density(2), images(2), slopes(2);
  std::vector<LineProfile> xProfiles, yProfiles;
  Outflow outflow;
  bound = StepBound{};
  const bool exact = exactGroup_ >= 0;
  const double delta = settings_.spacing;
  for (std::size_t c = 0; c < nx * ny; ++c) {
    const std::size_t i = c % nx, j = c / nx;
    const double hx = ax.width(static_cast<int>(i)), hy = ay.width(static_cast<int>(j));
    const double m = field[c] * hx * hy;
    if (m == 0.0) continue;
    bound.lattice += std::max(m, 0.0) * latticeBound_[c];
    bound.withinCell += std::max(m, 0.0) * withinCellBound_[c];
    const PlaneLatticeLaw& law = planeLaws_[planeLawOfCell_[c]];
    long xLo = 0, xHi = -1;
    for (std::size_t r = 0; r < law.rows(); ++r) {
      if (law.rowLength(r) == 0) continue;
      const long f = law.rowFirst[r], l = f + static_cast<long>(law.rowLength(r)) - 1;
      xLo = xHi < xLo ? f : std::min(xLo, f);
      xHi = std::max(xHi, l);
    }
    for (int branch = 0; branch < (exact ? 2 : 1); ++branch) {
      const double bw = exact ? (branch == 0 ? 1.0 - rate_ : rate_) : 1.0;
      if (bw == 0.0) continue;
      const double mass = bw * m;
      const double shiftX = planeMeanSum_[2 * c] + (branch == 1 ? planeExactShift_[2 * c] : 0.0);
      const double shiftY = planeMeanSum_[2 * c + 1] + (branch == 1 ? planeExactShift_[2 * c + 1] : 0.0);
      // The x-profile of every lattice x, the y-profile of every row: unit masses, the densities per unit length.
      xProfiles.resize(static_cast<std::size_t>(xHi - xLo + 1));
      density = {rhoX[j][i] * hy / m, rhoX[j][i + 1] * hy / m};
      slopes = {rowSlopes_[j][i], rowSlopes_[j][i + 1]};
      for (long t = xLo; t <= xHi; ++t) {
        const double shift = shiftX + static_cast<double>(t) * delta;
        images = {rowImages_[j][i] + shift, rowImages_[j][i + 1] + shift};
        remapOneCell(ax.faces(), density, images, slopes, lineX, xProfiles[static_cast<std::size_t>(t - xLo)]);
      }
      yProfiles.resize(law.rows());
      density = {rhoY[i][j] * hx / m, rhoY[i][j + 1] * hx / m};
      slopes = {columnSlopes_[i][j], columnSlopes_[i][j + 1]};
      for (std::size_t r = 0; r < law.rows(); ++r) {
        if (law.rowLength(r) == 0) continue;
        const double shift = shiftY + static_cast<double>(law.firstRow + static_cast<long>(r)) * delta;
        images = {columnImages_[i][j] + shift, columnImages_[i][j + 1] + shift};
        remapOneCell(ay.faces(), density, images, slopes, lineY, yProfiles[r]);
      }
      // Target (X, Y) receives m sum_rows P_y(Y) sum_{x in row} w P_x(X): each row summed in x first.
      for (std::size_t r = 0; r < law.rows(); ++r) {
        const std::size_t n = law.rowLength(r);
        if (n == 0) continue;
        const double* w = law.prob.data() + law.rowStart[r];
        long lo = static_cast<long>(nx), hi = -1;
        double rowInside = 0.0;  // sum over the row of w times the x-profile's mass inside
        for (std::size_t k = 0; k < n; ++k) {
          if (w[k] == 0.0) continue;
          const LineProfile& px = xProfiles[static_cast<std::size_t>(law.rowFirst[r] + static_cast<long>(k) - xLo)];
          outflow.mass[0] += mass * w[k] * px.lost[0];
          outflow.mass[1] += mass * w[k] * px.lost[1];
          rowInside += w[k] * px.inside;
          for (std::size_t q = 0; q < px.mass.size(); ++q) rowSum[static_cast<std::size_t>(px.first) + q] += w[k] * px.mass[q];
          if (!px.mass.empty()) {
            lo = std::min(lo, px.first);
            hi = std::max(hi, px.first + static_cast<long>(px.mass.size()) - 1);
          }
        }
        const LineProfile& py = yProfiles[r];
        outflow.mass[2] += mass * rowInside * py.lost[0];
        outflow.mass[3] += mass * rowInside * py.lost[1];
        for (std::size_t q = 0; q < py.mass.size(); ++q) {
          const double coef = mass * py.mass[q];
          double* dst = out.data() + (static_cast<std::size_t>(py.first) + q) * nx;
          for (long X = lo; X <= hi; ++X) dst[X] += coef * rowSum[static_cast<std::size_t>(X)];
        }
        for (long X = lo; X <= hi; ++X) rowSum[static_cast<std::size_t>(X)] = 0.0;
      }
    }
  }
  for (std::size_t c = 0; c < nx * ny; ++c)
    field[c] = out[c] / (ax.width(static_cast<int>(c % nx)) * ay.width(static_cast<int>(c / nx)));
  return outflow;
}

}  // namespace fpdp::solver
