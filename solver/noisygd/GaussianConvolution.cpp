#include "solver/noisygd/GaussianConvolution.hpp"

#include "solver/numerics/StableFunctions.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

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

/// Non-negative quadratic density c0 + c1 t + c2 t^2 on [0, L] whose integral is M: the derivative of the monotone
/// cubic Hermite with end slopes d0, d1 (Fritsch–Carlson limited).
struct CellQuadratic {
  double L, M, c0, c1, c2;
  CellQuadratic(double length, double mass, double d0, double d1) : L(length), M(mass) {
    const double secant = M / L;
    if (secant > 0) {
      d0 = std::max(d0, 0.0);
      d1 = std::max(d1, 0.0);
      const double a = d0 / secant, b = d1 / secant, r = a * a + b * b;
      if (r > 9.0) {
        d0 *= 3.0 / std::sqrt(r);
        d1 *= 3.0 / std::sqrt(r);
      }
    } else {
      d0 = d1 = secant;
    }
    // H(t) = M h01(t/L) + L (h10 d0 + h11 d1); H'(t) = (M/L) h01' + h10' d0 + h11' d1 with
    // h01' = 6s - 6s^2, h10' = 3s^2 - 4s + 1, h11' = 3s^2 - 2s  (s = t/L).
    c0 = d0;
    c1 = (6.0 * M / L - 4.0 * d0 - 2.0 * d1) / L;
    c2 = (-6.0 * M / L + 3.0 * d0 + 3.0 * d1) / (L * L);
  }
  /// massBelow (face at or below the cell: T0 <= 0) or massAbove (face at or above the cell's end: T0 >= L) as
  /// K0 c0 + K1 c1 + K2 c2: on a uniform axis the K's depend only on the offset between source and target faces, so
  /// they are tabulated once (kernelAt) and a step is three discrete convolutions.
  static std::array<double, 3> kernelAt(double T0, double L, double s, bool above) {
    const double u0 = T0 / s, u1 = (T0 - L) / s;
    const double d0 = above ? B0(u0) - B0(u1) : A0(u0) - A0(u1);
    const double d1 = above ? B1(u0) - B1(u1) : A1(u0) - A1(u1);
    const double d2 = above ? B2(u0) - B2(u1) : A2(u0) - A2(u1);
    return {s * d0, s * (T0 * d0 - s * d1), s * (T0 * T0 * d0 - 2.0 * s * T0 * d1 + s * s * d2)};
  }
  /// int_0^L q(t) Phi((T0 - t)/s) dt (T0 <= 0): the mass of this cell that lands below a face at distance T0 from
  /// the cell start; int_0^L q(t) Phi((t - T0)/s) dt (T0 >= L): the mass that lands above it. Substituting
  /// u = (T0 - t)/s, q(T0 - s u) = e0 + e1 u + e2 u^2 and the integrals are s sum_k e_k [A_k or B_k](u0 .. u1).
  double tailMass(double T0, double s, bool above) const {
    const auto K = kernelAt(T0, L, s, above);
    return K[0] * c0 + K[1] * c1 + K[2] * c2;
  }
};
}  // namespace

GaussianConvolution::GaussianConvolution(const meshes::BoxMesh& mesh, std::array<double, 3> stddev)
    : mesh_(mesh), s_(stddev) {}

Outflow GaussianConvolution::apply(std::vector<double>& field) const { return applyImpl(field, nullptr, nullptr); }

CoTransportOutflow GaussianConvolution::coTransport(std::vector<double>& density,
                                                    std::vector<std::vector<double>>& passive) const {
  for (const auto& w : passive)
    if (w.size() != density.size())
      throw std::invalid_argument("GaussianConvolution::coTransport: a passive field differs in size from the density");
  CoTransportOutflow r;
  r.passive.resize(passive.size());
  r.density = applyImpl(density, &passive, &r.passive);
  return r;
}

Outflow GaussianConvolution::applyImpl(std::vector<double>& field, std::vector<std::vector<double>>* passive,
                                       std::vector<Outflow>* passiveOutflow) const {
  const int d = mesh_.dim();
  const std::size_t np = passive ? passive->size() : 0;
  const std::array<int, 3> n{mesh_.cells(0), mesh_.cells(1), mesh_.cells(2)};
  Outflow outflow;
  std::vector<double> next(field.size());
  std::vector<std::vector<double>> passiveNext(np, std::vector<double>(field.size()));
  std::vector<double> ratio(np);
  for (int axis = 0; axis < d; ++axis) {
    const double s = s_[axis];
    if (!(s > 0)) continue;
    std::fill(next.begin(), next.end(), 0.0);
    for (auto& w : passiveNext) std::fill(w.begin(), w.end(), 0.0);
    const auto& ax = mesh_.axis(axis);
    const auto& faces = ax.faces();
    const int nc = n[axis];
    // Uniform axis: the kernels K(offset) for offsets -reach..reach+1 (in cells) are computed once per axis.
    std::vector<std::array<double, 3>> kernels;
    int offsetShift = 0;
    if (ax.isUniform()) {
      const double h = ax.width(0);
      const int reach = static_cast<int>(std::ceil(kTail * s / h)) + 2;
      offsetShift = reach;
      for (int off = -reach; off <= reach + 1; ++off) kernels.push_back(CellQuadratic::kernelAt(off * h, h, s, off >= 1));
    }
    mesh_.forEachLine(axis, [&](const meshes::BoxMesh::Line& gridLine) {
        const std::ptrdiff_t base = gridLine.offset;
        const double crossSection = gridLine.crossSection;
        const std::ptrdiff_t step = gridLine.stride;
        const double* line = field.data() + base;
        double* outLine = next.data() + base;
        const auto rho = faceDensities(faces, line, step, true);
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
            return q.tailMass(faces[f] - xi, s, f > i);
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

}  // namespace fpdp::solver
