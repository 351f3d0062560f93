#include "solver/noisygd/GaussianConvolution.hpp"

#include "solver/noisygd/CellQuadratic.hpp"
#include "solver/numerics/StableFunctions.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

namespace fpdp::solver {

namespace {
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
double Phi(double u) { return standardNormalCdf(u); }
double phi(double u) { return kInvSqrt2Pi * std::exp(-0.5 * u * u); }
// Antiderivatives of u^k Phi(u), for the mass landing below a face (used where u <= 0: the face is at or below the
// source cell, so Phi(u) is a lower tail computed to full relative accuracy by erfc).
double A0(double u) { return u * Phi(u) + phi(u); }
double A1(double u) { return 0.5 * ((u * u - 1.0) * Phi(u) + u * phi(u)); }
double A2(double u) { return (u * u * u * Phi(u) + (u * u + 2.0) * phi(u)) / 3.0; }
// Antiderivatives of u^k Phi(-u), for the mass landing above a face (used where u >= 0). The mirror of A_k: taking
// far-target masses as differences of these small tail integrals, instead of m minus a near-total "mass below",
// keeps their relative accuracy down to the underflow of erfc (docs/noisy-gd.md §3).
double B0(double u) { return u * Phi(-u) - phi(u); }
double B1(double u) { return 0.5 * ((u * u - 1.0) * Phi(-u) - u * phi(u)); }
double B2(double u) { return (u * u * u * Phi(-u) - (u * u + 2.0) * phi(u)) / 3.0; }
constexpr double kTail = GaussianConvolution::kReach;

/// The mass of a cell's quadratic q (CellQuadratic) that lands below a face at distance T0 <= 0 from the cell start,
/// int_0^L q(t) Phi((T0 - t)/s) dt, or above a face at T0 >= L, int_0^L q(t) Phi((t - T0)/s) dt, as
/// K0 c0 + K1 c1 + K2 c2: on a uniform axis the K's depend only on the offset between source and target faces, so
/// they are tabulated once and a step is three discrete convolutions. Substituting u = (T0 - t)/s,
/// q(T0 - s u) = e0 + e1 u + e2 u^2 and the integrals are s sum_k e_k [A_k or B_k](u0 .. u1).
std::array<double, 3> kernelAt(double T0, double L, double s, bool above) {
  const double u0 = T0 / s, u1 = (T0 - L) / s;
  const double d0 = above ? B0(u0) - B0(u1) : A0(u0) - A0(u1);
  const double d1 = above ? B1(u0) - B1(u1) : A1(u0) - A1(u1);
  const double d2 = above ? B2(u0) - B2(u1) : A2(u0) - A2(u1);
  return {s * d0, s * (T0 * d0 - s * d1), s * (T0 * T0 * d0 - 2.0 * s * T0 * d1 + s * s * d2)};
}
double tailMass(const CellQuadratic& q, double T0, double s, bool above) {
  const auto K = kernelAt(T0, q.L, s, above);
  return K[0] * q.c0 + K[1] * q.c1 + K[2] * q.c2;
}
}  // namespace

GaussianConvolution::GaussianConvolution(const meshes::BoxMesh& mesh, meshes::AxisValues stddev, Route route)
    : mesh_(mesh), s_(stddev) {
  for (int axis = 0; axis < mesh_.dim(); ++axis) {
    const double s = s_[static_cast<std::size_t>(axis)];
    const auto& ax = mesh_.axis(axis);
    if (!(s > 0) || !ax.isUniform()) continue;
    // The kernels K(offset) for offsets -reach..reach+1 (in cells), once per axis.
    const double h = ax.width(0);
    const int reach = static_cast<int>(std::ceil(kTail * s / h)) + 2;
    auto& tails = tails_[static_cast<std::size_t>(axis)];
    for (int off = -reach; off <= reach + 1; ++off) tails.push_back(kernelAt(off * h, h, s, off >= 1));
    auto& columns = kernelColumns_[static_cast<std::size_t>(axis)];
    for (int k = 0; k < 3; ++k)
      for (const auto& K : tails) columns[static_cast<std::size_t>(k)].push_back(K[static_cast<std::size_t>(k)]);
    reach_[static_cast<std::size_t>(axis)] = reach;
    if (route == Route::Direct) continue;
    // The sources whose reach (kTail s) passes a wall, by the direct sum's test on the faces: the first ones lose
    // mass below the mesh, the last ones above it.
    const auto& faces = ax.faces();
    const int nc = ax.cells();
    int below = 0, above = nc;
    while (below < nc && std::upper_bound(faces.begin(), faces.end(), faces[static_cast<std::size_t>(below)] - kTail * s) -
                                 faces.begin() <= 1)
      ++below;
    while (above > 0 && std::lower_bound(faces.begin(), faces.end(), faces[static_cast<std::size_t>(above)] + kTail * s) -
                                faces.begin() >= nc)
      --above;
    wallSources_[static_cast<std::size_t>(axis)] = {below, above};
    // The deposit kernels W(o) = K(o + 1) - K(o) below the source, K(o) - K(o + 1) above it, and the source's own
    // cell the rest of its mass, int_0^h t^k dt - K(0) - K(1): a source's deposits sum to its mass.
    std::array<std::vector<double>, 3> deposit;
    const std::array<double, 3> moments{h, h * h / 2, h * h * h / 3};
    for (int k = 0; k < 3; ++k) {
      deposit[static_cast<std::size_t>(k)].resize(static_cast<std::size_t>(2 * reach + 1));
      for (int o = -reach; o <= reach; ++o) {
        const auto& at = tails[static_cast<std::size_t>(o + reach)];
        const auto& next = tails[static_cast<std::size_t>(o + 1 + reach)];
        deposit[static_cast<std::size_t>(k)][static_cast<std::size_t>(o + reach)] =
            o < 0 ? next[k] - at[k] : o > 0 ? at[k] - next[k] : moments[k] - at[k] - next[k];
      }
    }
    auto transform = std::make_unique<TiltedConvolution>(ax.cells(), std::move(deposit), s / h);
    if (route == Route::Transform || transform->costRelativeToDirect() < 1.0)
      transform_[static_cast<std::size_t>(axis)] = std::move(transform);
  }
}

GaussianConvolution::~GaussianConvolution() = default;

TiltedConvolution::Work GaussianConvolution::transformWork() const {
  TiltedConvolution::Work w;
  for (const auto& t : transform_)
    if (t) {
      const auto a = t->total();
      w.passes += a.passes;
      w.summed += a.summed;
    }
  return w;
}

Outflow GaussianConvolution::apply(std::vector<double>& field) const { return applyImpl(field, nullptr, nullptr); }

CoTransportOutflow GaussianConvolution::coTransport(std::vector<double>& density,
                                                    std::vector<std::vector<double>>& passive) const {
  for (const auto& t : transform_)
    if (t) throw std::logic_error("GaussianConvolution::coTransport: only on the direct route (Route::Direct)");
  for (const auto& w : passive)
    if (w.size() != density.size())
      throw std::invalid_argument("GaussianConvolution::coTransport: a passive field differs in size from the density");
  CoTransportOutflow r;
  r.passive.resize(passive.size());
  r.density = applyImpl(density, &passive, &r.passive);
  return r;
}

Outflow GaussianConvolution::applyAxis(int axis, std::vector<double>& field) const {
  if (axis < 0 || axis >= mesh_.dim()) throw std::invalid_argument("GaussianConvolution::applyAxis: no such axis");
  return applyImpl(field, nullptr, nullptr, axis);
}

Outflow GaussianConvolution::applyImpl(std::vector<double>& field, std::vector<std::vector<double>>* passive,
                                       std::vector<Outflow>* passiveOutflow, int onlyAxis) const {
  const int d = mesh_.dim();
  const std::size_t np = passive ? passive->size() : 0;
  meshes::CellIndex n{};
  for (int a = 0; a < meshes::kMaxDimension; ++a) n[a] = mesh_.cells(a);
  Outflow outflow;
  std::vector<double> next(field.size());
  std::vector<std::vector<double>> passiveNext(np, std::vector<double>(field.size()));
  std::vector<double> ratio(np);
  for (int axis = 0; axis < d; ++axis) {
    const double s = s_[axis];
    if (!(s > 0) || (onlyAxis >= 0 && axis != onlyAxis)) continue;
    std::fill(next.begin(), next.end(), 0.0);
    if (transform_[static_cast<std::size_t>(axis)]) {
      transformAxis(axis, field, next, outflow);
      field.swap(next);
      continue;
    }
    for (auto& w : passiveNext) std::fill(w.begin(), w.end(), 0.0);
    const auto& ax = mesh_.axis(axis);
    const auto& faces = ax.faces();
    const int nc = n[axis];
    const auto& kernels = tails_[static_cast<std::size_t>(axis)];  // uniform axes: K by offset
    const int offsetShift = reach_[static_cast<std::size_t>(axis)];
    std::vector<double> lineIn, lineOut, tails;  // densityLine's buffers, kept across the lines
    mesh_.forEachLine(axis, [&](const meshes::BoxMesh::Line& gridLine) {
        const std::ptrdiff_t base = gridLine.offset;
        const double crossSection = gridLine.crossSection;
        const std::ptrdiff_t step = gridLine.stride;
        const double* line = field.data() + base;
        double* outLine = next.data() + base;
        const auto rho = faceDensities(faces, line, step, true);
        if (np == 0 && !kernels.empty()) {
          densityLine(gridLine, line, outLine, rho, axis, outflow, lineIn, lineOut, tails);
          return;
        }
        for (int i = 0; i < nc; ++i) {
          double m = line[i * step] * ax.width(i);
          // Passive ratios w_i / m_i; a cell with passive mass but no density mass spreads it uniformly (unit
          // shape, density weight 0).
          bool anyPassive = false;
          for (std::size_t f = 0; f < np; ++f) {
            ratio[f] = (*passive)[f][static_cast<std::size_t>(base + i * step)] * ax.width(i);
            anyPassive = anyPassive || ratio[f] != 0.0;
          }
          bool unitShape = false;
          if (m == 0.0) {
            if (!anyPassive) continue;
            m = 1.0;
            unitShape = true;
          }
          for (std::size_t f = 0; f < np; ++f) ratio[f] /= m;
          const CellQuadratic q = unitShape ? CellQuadratic(ax.width(i), m, m / ax.width(i), m / ax.width(i))
                                            : CellQuadratic(ax.width(i), m, rho[i], rho[i + 1]);
          auto deposit = [&](int j, double amount) {
            if (!unitShape) outLine[j * step] += amount;
            for (std::size_t f = 0; f < np; ++f)
              passiveNext[f][static_cast<std::size_t>(base + j * step)] += ratio[f] * amount;
          };
          auto lose = [&](int side, double amount) {
            if (!unitShape) outflow.mass[2 * axis + side] += amount * crossSection;
            for (std::size_t f = 0; f < np; ++f)
              (*passiveOutflow)[f].mass[2 * axis + side] += ratio[f] * amount * crossSection;
          };
          const double xi = faces[i];
          // Below(f), f <= i: mass landing below face f; Above(f), f >= i + 1: mass landing above face f. Each is a
          // tail integral computed to relative accuracy, so a far target's deposit (a difference of two of them) keeps
          // its digits; the source cell's own target takes the rest, m - Below(i) - Above(i + 1).
          auto tail = [&](int f) {
            const int t = f - i + offsetShift;  // uniform axis: tabulated by the offset f - i
            if (!kernels.empty() && t >= 0 && t < static_cast<int>(kernels.size())) {
              const auto& K = kernels[static_cast<std::size_t>(t)];
              return K[0] * q.c0 + K[1] * q.c1 + K[2] * q.c2;
            }
            return tailMass(q, faces[f] - xi, s, f > i);
          };
          const double reachLo = xi - kTail * s, reachHi = faces[i + 1] + kTail * s;
          const int fLo = std::max(
              0, static_cast<int>(std::upper_bound(faces.begin(), faces.end(), reachLo) - faces.begin()) - 1);
          const int fHi =
              std::min(nc, static_cast<int>(std::lower_bound(faces.begin(), faces.end(), reachHi) - faces.begin()));
          // The tail masses are monotone in the face in exact arithmetic; a running maximum from the far end keeps
          // every deposit >= 0 where rounding would make them dip (relative 1e-16 of the tail itself).
          double below = 0.0;
          if (fLo == 0) {
            below = std::max(tail(0), 0.0);
            lose(0, below);  // below the mesh
          }
          for (int j = fLo; j < i; ++j) {
            const double cum = std::max(tail(j + 1), below);
            deposit(j, cum - below);
            below = cum;
          }
          double above = 0.0;
          if (fHi == nc) {
            above = std::max(tail(nc), 0.0);
            lose(1, above);  // above the mesh
          }
          for (int j = fHi - 1; j > i; --j) {
            const double cum = std::max(tail(j), above);
            deposit(j, cum - above);
            above = cum;
          }
          deposit(i, std::max(m - below - above, 0.0));
        }
        for (int i = 0; i < nc; ++i) outLine[i * step] /= ax.width(i);
        for (std::size_t f = 0; f < np; ++f)
          for (int i = 0; i < nc; ++i) passiveNext[f][static_cast<std::size_t>(base + i * step)] /= ax.width(i);
      });
    field.swap(next);
    for (std::size_t f = 0; f < np; ++f) (*passive)[f].swap(passiveNext[f]);
  }
  return outflow;
}

void GaussianConvolution::densityLine(const meshes::BoxMesh::Line& gridLine, const double* line, double* outLine,
                                      const std::vector<double>& rho, int axis, Outflow& outflow,
                                      std::vector<double>& lineIn, std::vector<double>& lineOut,
                                      std::vector<double>& tails) const {
  // The direct route's sums for one density on a uniform axis, as applyImpl's general loop makes them (the same
  // terms, added in the same order: bitwise the same values), with the line in contiguous buffers and each source's
  // tail masses from the table in a loop of their own (the deposits of a line of n cells reach up to n targets
  // each: on short lines of many axes this loop is most of a step).
  const auto& ax = mesh_.axis(axis);
  const auto& faces = ax.faces();
  const auto& kernels = tails_[static_cast<std::size_t>(axis)];
  const auto& columns = kernelColumns_[static_cast<std::size_t>(axis)];
  const int nc = ax.cells(), offsetShift = reach_[static_cast<std::size_t>(axis)];
  const int tableSize = static_cast<int>(kernels.size());
  const double s = s_[static_cast<std::size_t>(axis)];
  const std::ptrdiff_t step = gridLine.stride;
  lineIn.resize(static_cast<std::size_t>(nc));
  lineOut.assign(static_cast<std::size_t>(nc), 0.0);
  tails.resize(static_cast<std::size_t>(nc) + 1);
  for (int i = 0; i < nc; ++i) lineIn[i] = line[i * step];
  for (int i = 0; i < nc; ++i) {
    const double m = lineIn[i] * ax.width(i);
    if (m == 0.0) continue;
    const CellQuadratic q(ax.width(i), m, rho[i], rho[i + 1]);
    const double xi = faces[i];
    const double reachLo = xi - kTail * s, reachHi = faces[i + 1] + kTail * s;
    const int fLo =
        std::max(0, static_cast<int>(std::upper_bound(faces.begin(), faces.end(), reachLo) - faces.begin()) - 1);
    const int fHi =
        std::min(nc, static_cast<int>(std::lower_bound(faces.begin(), faces.end(), reachHi) - faces.begin()));
    const int t0 = offsetShift - i;  // the table's index of face f is t0 + f
    if (t0 + fLo >= 0 && t0 + fHi < tableSize) {
      const double *K0 = columns[0].data() + t0, *K1 = columns[1].data() + t0, *K2 = columns[2].data() + t0;
      for (int f = fLo; f <= fHi; ++f) tails[f] = K0[f] * q.c0 + K1[f] * q.c1 + K2[f] * q.c2;
    } else {
      for (int f = fLo; f <= fHi; ++f) {
        const int t = t0 + f;
        if (t >= 0 && t < tableSize) {
          const auto& K = kernels[static_cast<std::size_t>(t)];
          tails[f] = K[0] * q.c0 + K[1] * q.c1 + K[2] * q.c2;
        } else {
          tails[f] = tailMass(q, faces[f] - xi, s, f > i);
        }
      }
    }
    // The running maxima of applyImpl's loop (cum = max(tail, previous cum)) change nothing where the tails are
    // already monotone, the rule in exact arithmetic: there each deposit is the difference of adjacent tails, and
    // the deposits no longer wait for each other. Where rounding breaks monotonicity, the running maxima as there.
    double below = 0.0;
    if (fLo == 0) {
      below = std::max(tails[0], 0.0);
      outflow.mass[2 * axis] += below * gridLine.crossSection;  // below the mesh
    }
    if (fLo < i) {
      bool monotone = tails[fLo + 1] >= below;
      for (int j = fLo + 1; j < i; ++j) monotone &= tails[j + 1] >= tails[j];
      if (monotone) {
        lineOut[fLo] += tails[fLo + 1] - below;
        for (int j = fLo + 1; j < i; ++j) lineOut[j] += tails[j + 1] - tails[j];
        below = tails[i];
      } else {
        for (int j = fLo; j < i; ++j) {
          const double cum = std::max(tails[j + 1], below);
          lineOut[j] += cum - below;
          below = cum;
        }
      }
    }
    double above = 0.0;
    if (fHi == nc) {
      above = std::max(tails[nc], 0.0);
      outflow.mass[2 * axis + 1] += above * gridLine.crossSection;  // above the mesh
    }
    if (fHi - 1 > i) {
      bool monotone = tails[fHi - 1] >= above;
      for (int j = fHi - 2; j > i; --j) monotone &= tails[j] >= tails[j + 1];
      if (monotone) {
        lineOut[fHi - 1] += tails[fHi - 1] - above;
        for (int j = fHi - 2; j > i; --j) lineOut[j] += tails[j] - tails[j + 1];
        above = tails[i + 1];
      } else {
        for (int j = fHi - 1; j > i; --j) {
          const double cum = std::max(tails[j], above);
          lineOut[j] += cum - above;
          above = cum;
        }
      }
    }
    lineOut[i] += std::max(m - below - above, 0.0);
  }
  for (int i = 0; i < nc; ++i) outLine[i * step] = lineOut[i] / ax.width(i);
}

void GaussianConvolution::transformAxis(int axis, const std::vector<double>& field, std::vector<double>& next,
                                        Outflow& outflow) const {
  const auto& ax = mesh_.axis(axis);
  const auto& faces = ax.faces();
  const int nc = ax.cells();
  const double h = ax.width(0);
  const auto& tails = tails_[static_cast<std::size_t>(axis)];
  const int reach = reach_[static_cast<std::size_t>(axis)];
  const TiltedConvolution& transform = *transform_[static_cast<std::size_t>(axis)];
  std::array<std::vector<double>, 3> c;
  for (auto& v : c) v.resize(static_cast<std::size_t>(nc));
  std::vector<double> mass(static_cast<std::size_t>(nc)), y(static_cast<std::size_t>(nc));
  mesh_.forEachLine(axis, [&](const meshes::BoxMesh::Line& gridLine) {
    const std::ptrdiff_t step = gridLine.stride;
    const double* line = field.data() + gridLine.offset;
    double* outLine = next.data() + gridLine.offset;
    const auto rho = faceDensities(faces, line, step, true);
    double total = 0;
    // Each cell with its own width, as the direct sum (a uniform axis's widths may differ by rounding); the kernels
    // are tabulated with the first width, as the direct sum's are.
    for (int i = 0; i < nc; ++i) {
      const std::size_t at = static_cast<std::size_t>(i);
      const double w = ax.width(i);
      mass[at] = line[i * step] * w;
      total += mass[at];
      const CellQuadratic q = mass[at] == 0.0 ? CellQuadratic(w, 0.0, 0.0, 0.0) : CellQuadratic(w, mass[at], rho[at], rho[at + 1]);
      c[0][at] = q.c0;
      c[1][at] = q.c1;
      c[2][at] = q.c2;
    }
    transform.apply({c[0].data(), c[1].data(), c[2].data()}, mass.data(), y.data());
    // The mass beyond the walls: the tail masses of the sources whose reach (kReach s) passes a wall, as the direct
    // sum takes them (its test of the reach, on the same faces).
    auto wallMass = [&](int i, int offset) {
      const auto& K = tails[static_cast<std::size_t>(offset + reach)];
      const std::size_t at = static_cast<std::size_t>(i);
      return std::max(K[0] * c[0][at] + K[1] * c[1][at] + K[2] * c[2][at], 0.0);
    };
    double lost[2] = {0, 0};
    const auto [below, above] = wallSources_[static_cast<std::size_t>(axis)];
    for (int i = 0; i < below; ++i)
      if (mass[static_cast<std::size_t>(i)] != 0.0) lost[0] += wallMass(i, -i);
    for (int i = above; i < nc; ++i)
      if (mass[static_cast<std::size_t>(i)] != 0.0) lost[1] += wallMass(i, nc - i);
    // The source's own cell takes m_i - K(0) c - K(1) c in the direct sum; the kernel's W(0) holds the quadratic's
    // integral in place of m_i, which differs by rounding: put m_i back. Then the line is scaled to deposit exactly
    // what the sources lost to no wall (a relative correction of the FFTs' rounding, checked against the bound).
    double deposited = 0;
    for (int j = 0; j < nc; ++j) {
      const std::size_t at = static_cast<std::size_t>(j);
      if (mass[at] != 0.0) y[at] += mass[at] - (c[0][at] * h + c[1][at] * h * h / 2 + c[2][at] * h * h * h / 3);
      y[at] = std::max(y[at], 0.0);
      deposited += y[at];
    }
    const double target = total - lost[0] - lost[1];
    const double scale = deposited > 0 && target > 0 ? target / deposited : 1.0;
    // Relative to the mass, plus the rounding of subnormal values (a line deep in a tail, 1e-320 in all, holds a few
    // significant digits per cell; seen: 1.1141e-320 deposited of 1.1121e-320 in a 2-D Poisson case).
    const double allowed = 1e-9 * target + 8.0 * nc * std::numeric_limits<double>::denorm_min();
    if (!(std::abs(deposited - target) <= allowed)) {
      char b[200];
      std::snprintf(b, sizeof b, "GaussianConvolution: the transform route deposited %.17g of a line's mass %.17g",
                    deposited, target);
      throw std::logic_error(b);
    }
    for (int j = 0; j < nc; ++j) outLine[j * step] = y[static_cast<std::size_t>(j)] * scale / ax.width(j);
    outflow.mass[2 * axis] += lost[0] * gridLine.crossSection;
    outflow.mass[2 * axis + 1] += lost[1] * gridLine.crossSection;
  });
}

}  // namespace fpdp::solver
