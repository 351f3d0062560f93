// wholeFieldDivergences: the divergences of whole fields of any dimension (WholeFieldDivergences.hpp).
#include "solver/functionals/WholeFieldDivergences.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <stdexcept>

#include "solver/functionals/PointValues.hpp"
#include "solver/numerics/StableFunctions.hpp"

namespace fpdp::solver {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// What every direction needs of the cells: volumes, wall flags, and the normalised point values.
struct Cells {
  std::vector<double> volume;
  std::vector<char> wall;  // the cell touches a wall of the box
};

Cells cellsOf(const meshes::BoxMesh& mesh) {
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
      wall = wall || index[a] == 0 || index[a] == mesh.cells(a) - 1;
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
                              const WholeFieldSettings& settings) {
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
      const double rho = a[c] / b[c] - 1.0, u = std::log1p(rho);
      term = w * b[c] * (rho * u + log1pMinusLinear(rho));
    } else {
      term = w * b[c];  // h(0) = 1
    }
    kl += term;
    if (cells.wall[c]) klWall += term;
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
        const double rho = a[c] / b[c] - 1.0, u = std::log1p(rho);
        sum += w * b[c] * (expm1MinusLinear(alpha * u) + alpha * log1pMinusLinear(rho));
        largest = std::max(largest, std::log(w) + alpha * std::log(a[c]) + (1.0 - alpha) * std::log(b[c]));
      } else {
        sum += w * b[c] * (alpha - 1.0);  // g(0) = alpha - 1
      }
    }
    double scaled = 0.0, scaledWall = 0.0;
    for (std::size_t c = 0; c < N; ++c) {
      if (!(b[c] > 0.0 && a[c] > 0.0)) continue;
      const double t =
          std::exp(std::log(cells.volume[c]) + alpha * std::log(a[c]) + (1.0 - alpha) * std::log(b[c]) - largest);
      scaled += t;
      if (cells.wall[c]) scaledWall += t;
    }
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
  for (double eps : settings.hockeyStickEps) {
    double wall = 0.0;
    const double delta = profile(eps, &wall);
    out.hockeyStick.push_back(delta);
    out.hockeyStickWallShare.push_back(share(wall, delta));
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
          for (std::size_t i = 0; i < queries.size(); ++i) values[i] = profile(queries[i].eps, nullptr);
        },
        samples);
    for (const auto& e : out.epsilon) {
      double wall = 0.0;
      const double delta = std::isfinite(e.epsilon) ? profile(e.epsilon, &wall) : 0.0;
      out.epsilonWallShare.push_back(share(wall, delta));
    }
  }
  return out;
}

}  // namespace

WholeFieldDivergences wholeFieldDivergences(const meshes::BoxMesh& mesh, const std::vector<double>& p,
                                            const std::vector<double>& q, const WholeFieldSettings& settings) {
  const std::size_t N = mesh.totalCells();
  if (p.size() != N || q.size() != N)
    throw std::invalid_argument("wholeFieldDivergences: the fields must hold one value per cell of the mesh");
  for (double alpha : settings.orders)
    if (!(alpha > 1.0)) throw std::invalid_argument("wholeFieldDivergences: Renyi orders must exceed 1");
  for (std::size_t k = 0; k < settings.hockeyStickEps.size(); ++k)
    if (!(settings.hockeyStickEps[k] >= 0.0) || !std::isfinite(settings.hockeyStickEps[k]) ||
        (k > 0 && !(settings.hockeyStickEps[k] > settings.hockeyStickEps[k - 1])))
      throw std::invalid_argument("wholeFieldDivergences: the eps grid must be finite, >= 0 and increasing");
  const Cells cells = cellsOf(mesh);
  WholeFieldDivergences out;
  // Masses, negative cells and moments from the cell averages.
  double minP = kInf, minQ = kInf;
  meshes::AxisValues sumP{}, sumQ{}, sum2P{}, sum2Q{};
  const int d = mesh.dim();
  meshes::CellIndex index{};
  for (std::size_t c = 0; c < N; ++c) {
    const double mp = cells.volume[c] * std::max(p[c], 0.0), mq = cells.volume[c] * std::max(q[c], 0.0);
    out.massP += cells.volume[c] * p[c];
    out.massQ += cells.volume[c] * q[c];
    minP = std::min(minP, p[c]);
    minQ = std::min(minQ, q[c]);
    out.negativeCells += (p[c] < 0.0) + (q[c] < 0.0);
    for (int a = 0; a < d; ++a) {
      const double x = mesh.axis(a).centre(index[a]);
      sumP[a] += mp * x;
      sum2P[a] += mp * x * x;
      sumQ[a] += mq * x;
      sum2Q[a] += mq * x * x;
    }
    for (int a = 0; a < d; ++a) {
      if (++index[a] < mesh.cells(a)) break;
      index[a] = 0;
    }
  }
  out.minP = minP;
  out.minQ = minQ;
  for (int a = 0; a < d; ++a) {
    out.meanP[a] = sumP[a] / out.massP;
    out.meanQ[a] = sumQ[a] / out.massQ;
    out.spreadP[a] = std::sqrt(std::max(sum2P[a] / out.massP - out.meanP[a] * out.meanP[a], 0.0));
    out.spreadQ[a] = std::sqrt(std::max(sum2Q[a] / out.massQ - out.meanQ[a] * out.meanQ[a], 0.0));
  }
  // Point values (negative averages enter as 0), normalised by their quadrature masses.
  std::vector<double> a(N), b(N);
  {
    std::vector<double> clamped(N);
    for (std::size_t c = 0; c < N; ++c) clamped[c] = std::max(p[c], 0.0);
    pointValuesOfWholeField(mesh, clamped.data(), a.data());
    for (std::size_t c = 0; c < N; ++c) clamped[c] = std::max(q[c], 0.0);
    pointValuesOfWholeField(mesh, clamped.data(), b.data());
  }
  double pointMassP = 0.0, pointMassQ = 0.0;
  for (std::size_t c = 0; c < N; ++c) {
    pointMassP += cells.volume[c] * a[c];
    pointMassQ += cells.volume[c] * b[c];
  }
  if (!(pointMassP > 0.0) || !(pointMassQ > 0.0) || !std::isfinite(pointMassP) || !std::isfinite(pointMassQ))
    throw std::invalid_argument("wholeFieldDivergences: a density has no positive finite mass");
  double tv = 0.0;
  for (std::size_t c = 0; c < N; ++c) {
    a[c] /= pointMassP;
    b[c] /= pointMassQ;
    tv += cells.volume[c] * std::fabs(a[c] - b[c]);
  }
  out.tv = 0.5 * tv;
  out.pq = direction(cells, a, b, settings);
  out.qp = direction(cells, b, a, settings);
  return out;
}

}  // namespace fpdp::solver
