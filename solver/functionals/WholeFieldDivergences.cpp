// wholeFieldDivergences: the divergences of whole fields of any dimension (WholeFieldDivergences.hpp).
#include "solver/functionals/WholeFieldDivergences.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>

#include "solver/functionals/PointValues.hpp"
#include "solver/numerics/StableFunctions.hpp"

namespace fpdp::solver {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Sums, maxima and minima over the ranks of a communicator (MPI_COMM_NULL: one process, nothing to do).
struct Reduce {
  MPI_Comm comm = MPI_COMM_NULL;
  void apply(double* values, int n, MPI_Op op) const {
    if (comm == MPI_COMM_NULL || n == 0) return;
    if (MPI_Allreduce(MPI_IN_PLACE, values, n, MPI_DOUBLE, op, comm) != MPI_SUCCESS)
      throw std::runtime_error("wholeFieldDivergences: MPI_Allreduce failed");
  }
  double sum(double x) const { apply(&x, 1, MPI_SUM); return x; }
  double max(double x) const { apply(&x, 1, MPI_MAX); return x; }
  double min(double x) const { apply(&x, 1, MPI_MIN); return x; }
  void sum(std::vector<double>& v) const { apply(v.data(), static_cast<int>(v.size()), MPI_SUM); }
};

/// What every direction needs of the cells: volumes, wall flags, and the normalised point values.
struct Cells {
  std::vector<double> volume;
  std::vector<char> wall;  // the cell touches a wall of the box
};

/// lowerWall/upperWall: whether the first/last cells along axis 0 lie at the box's walls (a part of a split field
/// has neighbours' cells beyond its inner ends).
Cells cellsOf(const meshes::BoxMesh& mesh, bool lowerWall, bool upperWall) {
  const std::size_t N = mesh.totalCells();
  const int d = mesh.dim();
  Cells c;
  c.volume.resize(N);
  c.wall.resize(N);
  meshes::CellIndex index{};
  for (std::size_t k = 0; k < N; ++k) {
    double v = 1.0;
    bool wall = false;
    for (int a = 0; a < d; ++a) {
      v *= mesh.axis(a).width(index[a]);
      wall = wall || (index[a] == 0 && (a > 0 || lowerWall)) || (index[a] == mesh.cells(a) - 1 && (a > 0 || upperWall));
    }
    c.volume[k] = v;
    c.wall[k] = wall;
    for (int a = 0; a < d; ++a) {  // the next cell in natural order
      if (++index[a] < mesh.cells(a)) break;
      index[a] = 0;
    }
  }
  return c;
}

double share(double part, double whole) { return whole > 0.0 ? part / whole : 0.0; }

/// One direction: a the numerator's density, b the denominator's (normalised point values).
WholeFieldDirection direction(const Cells& cells, const std::vector<double>& a, const std::vector<double>& b,
                              const WholeFieldSettings& settings, const Reduce& reduce) {
  const std::size_t N = a.size();
  WholeFieldDirection out;
  bool infinite = false;  // a > 0 where b = 0
  double floor = 0.0, flatFrom = 0.0;
  double kl = 0.0, klWall = 0.0;
  for (std::size_t c = 0; c < N; ++c) {
    const double w = cells.volume[c];
    if (!(b[c] > 0.0)) {
      if (a[c] > 0.0) {
        infinite = true;
        floor += w * a[c];
      }
      continue;
    }
    if (a[c] > b[c]) flatFrom = std::max(flatFrom, std::log(a[c] / b[c]));
    double term;
    if (a[c] > 0.0) {
      term = klCellTerm(cellLogRatio(a[c], b[c]), w, a[c], b[c]);
    } else {
      term = w * b[c];  // h(0) = 1
    }
    kl += term;
    if (cells.wall[c]) klWall += term;
  }
  {
    double sums[3] = {kl, klWall, floor};
    reduce.apply(sums, 3, MPI_SUM);
    kl = sums[0];
    klWall = sums[1];
    floor = sums[2];
    double maxima[2] = {infinite ? 1.0 : 0.0, flatFrom};
    reduce.apply(maxima, 2, MPI_MAX);
    infinite = maxima[0] > 0.0;
    flatFrom = maxima[1];
  }
  out.kl = infinite ? kInf : kl;
  out.klWallShare = share(klWall, kl);

  for (double alpha : settings.orders) {
    // E_alpha - 1 as the sum of non-negative terms, and log E_alpha as a log-sum-exp (scaled by the largest term).
    double sum = 0.0, largest = -kInf;
    for (std::size_t c = 0; c < N; ++c) {
      if (!(b[c] > 0.0)) continue;
      const double w = cells.volume[c];
      if (a[c] > 0.0) {
        // q g_alpha(r): the series forms near r = 1, q r^alpha - q - alpha (p - q) beyond (r^alpha from log r, so a
        // ratio that overflows gives +inf, taken by the log-sum-exp branch below, not NaN).
        const CellLogRatio r = cellLogRatio(a[c], b[c]);
        sum += w * (r.nearOne ? b[c] * (expm1MinusLinear(alpha * r.u) + alpha * r.l1l)
                              : std::exp(std::log(b[c]) + alpha * r.u) - b[c] - alpha * (a[c] - b[c]));
        largest = std::max(largest, std::log(w) + alpha * std::log(a[c]) + (1.0 - alpha) * std::log(b[c]));
      } else {
        sum += w * b[c] * (alpha - 1.0);  // g(0) = alpha - 1
      }
    }
    sum = reduce.sum(sum);
    largest = reduce.max(largest);
    double scaled = 0.0, scaledWall = 0.0;
    for (std::size_t c = 0; c < N; ++c) {
      if (!(b[c] > 0.0 && a[c] > 0.0)) continue;
      const double t =
          std::exp(std::log(cells.volume[c]) + alpha * std::log(a[c]) + (1.0 - alpha) * std::log(b[c]) - largest);
      scaled += t;
      if (cells.wall[c]) scaledWall += t;
    }
    scaled = reduce.sum(scaled);
    scaledWall = reduce.sum(scaledWall);
    double renyi;
    if (infinite) renyi = kInf;
    else if (std::isfinite(sum) && sum < 1.0) renyi = std::log1p(sum) / (alpha - 1.0);
    else renyi = (largest + std::log(scaled)) / (alpha - 1.0);
    out.renyi.push_back(renyi);
    out.renyiWallShare.push_back(share(scaledWall, scaled));
  }

  const auto profile = [&](double eps, double* wallPart) {
    const double x = std::exp(eps);
    double s = 0.0, sw = 0.0;
    for (std::size_t c = 0; c < N; ++c) {
      const double t = a[c] - x * std::max(b[c], 0.0);
      if (!(t > 0.0)) continue;
      s += cells.volume[c] * t;
      if (cells.wall[c]) sw += cells.volume[c] * t;
    }
    if (wallPart) *wallPart = sw;
    return s;
  };
  {
    const std::size_t E = settings.hockeyStickEps.size();
    std::vector<double> sums(2 * E);
    for (std::size_t k = 0; k < E; ++k) sums[k] = profile(settings.hockeyStickEps[k], &sums[E + k]);
    reduce.sum(sums);
    for (std::size_t k = 0; k < E; ++k) {
      out.hockeyStick.push_back(sums[k]);
      out.hockeyStickWallShare.push_back(share(sums[E + k], sums[k]));
    }
  }
  if (!settings.epsilonDeltas.empty()) {
    std::vector<models::ProfileRequest> requests;
    for (double delta : settings.epsilonDeltas) requests.push_back({0, delta});
    const models::PrivacyProfileEnds ends[1] = {{floor, flatFrom}};
    std::vector<models::ProfileSample> samples;
    for (std::size_t k = 0; k < settings.hockeyStickEps.size(); ++k)
      samples.push_back({0, settings.hockeyStickEps[k], out.hockeyStick[k]});
    out.epsilon = models::exactEpsilons(
        requests, ends,
        [&](std::span<const models::ProfileQuery> queries, std::span<double> values, std::span<const double>) {
          // Every rank asks the same queries and gets the same sums: the same path through the root finder.
          std::vector<double> sums(queries.size());
          for (std::size_t i = 0; i < queries.size(); ++i) sums[i] = profile(queries[i].eps, nullptr);
          reduce.sum(sums);
          std::copy(sums.begin(), sums.end(), values.begin());
        },
        samples);
    for (const auto& e : out.epsilon) {
      double sums[2] = {0.0, 0.0};
      if (std::isfinite(e.epsilon)) sums[0] = profile(e.epsilon, &sums[1]);
      reduce.apply(sums, 2, MPI_SUM);
      out.epsilonWallShare.push_back(share(sums[1], sums[0]));
    }
  }
  return out;
}

void checkSettings(const WholeFieldSettings& settings) {
  for (double alpha : settings.orders)
    if (!(alpha > 1.0)) throw std::invalid_argument("wholeFieldDivergences: Renyi orders must exceed 1");
  for (std::size_t k = 0; k < settings.hockeyStickEps.size(); ++k)
    if (!(settings.hockeyStickEps[k] >= 0.0) || !std::isfinite(settings.hockeyStickEps[k]) ||
        (k > 0 && !(settings.hockeyStickEps[k] > settings.hockeyStickEps[k - 1])))
      throw std::invalid_argument("wholeFieldDivergences: the eps grid must be finite, >= 0 and increasing");
}

WholeFieldDivergences divergences(const Reduce& reduce, const meshes::BoxMesh& mesh, bool lowerWall, bool upperWall,
                                  const std::vector<double>& p, const std::vector<double>& q,
                                  std::vector<double> a, std::vector<double> b, const WholeFieldSettings& settings) {
  const std::size_t N = mesh.totalCells();
  const Cells cells = cellsOf(mesh, lowerWall, upperWall);
  WholeFieldDivergences out;
  // Masses, negative cells and moments from the cell averages.
  double minP = kInf, minQ = kInf;
  const int d = mesh.dim();
  // sums: massP, massQ, negative cells of p and of q, then per axis sum p x, sum p x^2, sum q x, sum q x^2.
  std::vector<double> sums(4 + 4 * static_cast<std::size_t>(d), 0.0);
  meshes::CellIndex index{};
  for (std::size_t c = 0; c < N; ++c) {
    const double mp = cells.volume[c] * std::max(p[c], 0.0), mq = cells.volume[c] * std::max(q[c], 0.0);
    sums[0] += cells.volume[c] * p[c];
    sums[1] += cells.volume[c] * q[c];
    minP = std::min(minP, p[c]);
    minQ = std::min(minQ, q[c]);
    sums[2] += p[c] < 0.0;
    sums[3] += q[c] < 0.0;
    for (int ax = 0; ax < d; ++ax) {
      const double x = mesh.axis(ax).centre(index[ax]);
      double* m = &sums[4 + 4 * static_cast<std::size_t>(ax)];
      m[0] += mp * x;
      m[1] += mp * x * x;
      m[2] += mq * x;
      m[3] += mq * x * x;
    }
    for (int ax = 0; ax < d; ++ax) {
      if (++index[ax] < mesh.cells(ax)) break;
      index[ax] = 0;
    }
  }
  reduce.sum(sums);
  out.massP = sums[0];
  out.massQ = sums[1];
  out.negativeCellsP = static_cast<long>(sums[2]);
  out.negativeCellsQ = static_cast<long>(sums[3]);
  out.minP = reduce.min(minP);
  out.minQ = reduce.min(minQ);
  for (int ax = 0; ax < d; ++ax) {
    const double* m = &sums[4 + 4 * static_cast<std::size_t>(ax)];
    out.meanP[ax] = m[0] / out.massP;
    out.meanQ[ax] = m[2] / out.massQ;
    out.spreadP[ax] = std::sqrt(std::max(m[1] / out.massP - out.meanP[ax] * out.meanP[ax], 0.0));
    out.spreadQ[ax] = std::sqrt(std::max(m[3] / out.massQ - out.meanQ[ax] * out.meanQ[ax], 0.0));
  }
  // The point values normalised by their quadrature masses.
  double pointMass[2] = {0.0, 0.0};
  for (std::size_t c = 0; c < N; ++c) {
    pointMass[0] += cells.volume[c] * a[c];
    pointMass[1] += cells.volume[c] * b[c];
  }
  reduce.apply(pointMass, 2, MPI_SUM);
  if (!(pointMass[0] > 0.0) || !(pointMass[1] > 0.0) || !std::isfinite(pointMass[0]) || !std::isfinite(pointMass[1]))
    throw std::invalid_argument("wholeFieldDivergences: a density has no positive finite mass");
  double tv = 0.0;
  for (std::size_t c = 0; c < N; ++c) {
    a[c] /= pointMass[0];
    b[c] /= pointMass[1];
    tv += cells.volume[c] * std::fabs(a[c] - b[c]);
  }
  out.tv = 0.5 * reduce.sum(tv);
  out.pq = direction(cells, a, b, settings, reduce);
  out.qp = direction(cells, b, a, settings, reduce);
  return out;
}

std::vector<double> clampedPointValues(const meshes::BoxMesh& mesh, const std::vector<double>& u) {
  std::vector<double> clamped(u.size()), points(u.size());
  for (std::size_t c = 0; c < u.size(); ++c) clamped[c] = std::max(u[c], 0.0);
  pointValuesOfWholeField(mesh, clamped.data(), points.data());
  return points;
}

}  // namespace

WholeFieldDivergences wholeFieldDivergences(const meshes::BoxMesh& mesh, const std::vector<double>& p,
                                            const std::vector<double>& q, const WholeFieldSettings& settings) {
  const std::size_t N = mesh.totalCells();
  if (p.size() != N || q.size() != N)
    throw std::invalid_argument("wholeFieldDivergences: the fields must hold one value per cell of the mesh");
  checkSettings(settings);
  return divergences(Reduce{}, mesh, true, true, p, q, clampedPointValues(mesh, p), clampedPointValues(mesh, q),
                     settings);
}

WholeFieldDivergences wholeFieldDivergencesOfParts(MPI_Comm comm, const meshes::BoxMesh& part, bool lowerWall,
                                                   bool upperWall, const std::vector<double>& p,
                                                   const std::vector<double>& q, std::vector<double> pointP,
                                                   std::vector<double> pointQ, const WholeFieldSettings& settings) {
  const std::size_t N = part.totalCells();
  if (p.size() != N || q.size() != N || pointP.size() != N || pointQ.size() != N)
    throw std::invalid_argument("wholeFieldDivergencesOfParts: the fields must hold one value per cell of the part");
  checkSettings(settings);
  return divergences(Reduce{comm}, part, lowerWall, upperWall, p, q, std::move(pointP), std::move(pointQ), settings);
}

}  // namespace fpdp::solver
