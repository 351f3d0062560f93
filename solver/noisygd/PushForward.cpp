#include "solver/noisygd/PushForward.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace fpdp::solver {

namespace {

/// Monotone cubic Hermite on [0, L] with H(0) = 0, H(L) = M and end slopes d0, d1 (Fritsch–Carlson limited).
struct MonotoneCubic {
  double L, M, d0, d1;
  MonotoneCubic(double length, double mass, double s0, double s1, bool limit) : L(length), M(mass), d0(s0), d1(s1) {
    if (!limit) return;
    const double secant = M / L;
    if (!(secant > 0)) {  // no mass (or negative, only when limiting is off): linear
      d0 = d1 = secant;
      return;
    }
    d0 = std::max(d0, 0.0);
    d1 = std::max(d1, 0.0);
    const double a = d0 / secant, b = d1 / secant;
    const double r = a * a + b * b;
    if (r > 9.0) {  // Fritsch–Carlson: inside the circle of radius 3 the cubic is monotone
      const double tau = 3.0 / std::sqrt(r);
      d0 *= tau;
      d1 *= tau;
    }
  }
  /// H(t) for 0 <= t <= L.
  double operator()(double t) const {
    if (t <= 0) return 0.0;
    if (t >= L) return M;
    const double s = t / L;
    const double s2 = s * s, s3 = s2 * s;
    const double h01 = -2 * s3 + 3 * s2, h10 = s3 - 2 * s2 + s, h11 = s3 - s2;
    return h01 * M + L * (h10 * d0 + h11 * d1);
  }
};

}  // namespace

std::vector<double> imageSlopes(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t n = x.size();
  std::vector<double> s(n);
  const double h = (x.back() - x.front()) / static_cast<double>(n - 1);
  bool uniform = true;
  for (std::size_t i = 1; i < n; ++i)
    if (std::fabs((x[i] - x[i - 1]) - h) > 1e-9 * h) uniform = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (uniform && i >= 2 && i + 2 < n) {
      s[i] = (-y[i + 2] + 8 * y[i + 1] - 8 * y[i - 1] + y[i - 2]) / (12 * h);
    } else if (i >= 1 && i + 1 < n) {
      // second-order three-point formula on a nonuniform line
      const double hm = x[i] - x[i - 1], hp = x[i + 1] - x[i];
      s[i] = (-hp / (hm * (hm + hp))) * y[i - 1] + ((hp - hm) / (hm * hp)) * y[i] + (hm / (hp * (hm + hp))) * y[i + 1];
    } else if (i == 0) {
      const double h1 = x[1] - x[0], h2 = x[2] - x[1];
      s[i] = -(2 * h1 + h2) / (h1 * (h1 + h2)) * y[0] + (h1 + h2) / (h1 * h2) * y[1] - h1 / (h2 * (h1 + h2)) * y[2];
    } else {
      const double h1 = x[n - 1] - x[n - 2], h2 = x[n - 2] - x[n - 3];
      s[i] = (2 * h1 + h2) / (h1 * (h1 + h2)) * y[n - 1] - (h1 + h2) / (h1 * h2) * y[n - 2] + h1 / (h2 * (h1 + h2)) * y[n - 3];
    }
  }
  return s;
}

std::vector<double> faceDensities(const std::vector<double>& faces, const double* a, std::ptrdiff_t stride,
                                  bool clampNonNegative) {
  const std::size_t nc = faces.size() - 1;
  std::vector<double> rho(faces.size());
  const double h = (faces.back() - faces.front()) / static_cast<double>(nc);
  bool uniform = true;
  for (std::size_t i = 1; i <= nc; ++i)
    if (std::fabs((faces[i] - faces[i - 1]) - h) > 1e-9 * h) uniform = false;
  auto A = [&](std::size_t i) { return a[static_cast<std::ptrdiff_t>(i) * stride]; };
  for (std::size_t i = 0; i <= nc; ++i) {
    double v;
    if (nc == 1) {
      v = A(0);
    } else if (i == 0) {  // one-sided, second order
      const double w0 = faces[1] - faces[0], w1 = faces[2] - faces[1];
      v = A(0) + (A(0) - A(1)) * w0 / (w0 + w1);
    } else if (i == nc) {
      const double w0 = faces[nc] - faces[nc - 1], w1 = faces[nc - 1] - faces[nc - 2];
      v = A(nc - 1) + (A(nc - 1) - A(nc - 2)) * w0 / (w0 + w1);
    } else if (uniform && i >= 2 && i + 1 <= nc - 1) {
      v = (-A(i - 2) + 7 * A(i - 1) + 7 * A(i) - A(i + 1)) / 12.0;
    } else {  // linear interpolation between the neighbouring cell centres
      const double wl = faces[i] - faces[i - 1], wr = faces[i + 1] - faces[i];
      v = (A(i - 1) * wr + A(i) * wl) / (wl + wr);
    }
    rho[i] = clampNonNegative ? std::max(v, 0.0) : v;
  }
  return rho;
}

namespace {

constexpr std::size_t kMaxPassiveFields = 8;  // d components of U2 p (d <= 3), with room to spare

/// remapLine with np >= 0 co-transported passive lines (np = 0: the plain remap). The density's arithmetic does not
/// depend on np.
std::array<double, 2> remapLineImpl(const std::vector<double>& targetFaces, const std::vector<double>& masses,
                                    const std::vector<double>& faceDensity, const std::vector<double>& imageFaces,
                                    const std::vector<double>& imageSlope, double* out, std::ptrdiff_t outStride,
                                    std::size_t np, const double* const* passiveMasses, double* const* passiveOut,
                                    std::array<double, 2>* passiveOutflow) {
  const std::size_t nt = targetFaces.size() - 1;
  const double lo = targetFaces.front(), hi = targetFaces.back();
  std::array<double, 2> outflow{0.0, 0.0};
  double ratio[kMaxPassiveFields];
  // The largest target face index j with targetFaces[j] <= x, for lo <= x < hi.
  auto firstBelow = [&](double x) {
    return static_cast<std::size_t>(std::upper_bound(targetFaces.begin(), targetFaces.end(), x) - targetFaces.begin()) - 1;
  };
  std::size_t hint = 0;
  for (std::size_t i = 0; i < masses.size(); ++i) {
    double m = masses[i];
    // Passive ratios w_i / m_i. Without density mass the shape is the uniform spreading of a unit mass: the density
    // deposits nothing (weight 0), the passive fields their own mass.
    bool anyPassive = false;
    for (std::size_t f = 0; f < np; ++f) anyPassive = anyPassive || passiveMasses[f][i] != 0.0;
    double densityWeight = 1.0;
    bool unitShape = false;
    if (m == 0.0) {
      if (!anyPassive) continue;
      m = 1.0;
      densityWeight = 0.0;
      unitShape = true;
    }
    for (std::size_t f = 0; f < np; ++f) ratio[f] = passiveMasses[f][i] / m;
    auto depositAt = [&](std::size_t j, double amount) {
      if (densityWeight != 0.0) out[static_cast<std::ptrdiff_t>(j) * outStride] += amount;
      for (std::size_t f = 0; f < np; ++f)
        passiveOut[f][static_cast<std::ptrdiff_t>(j) * outStride] += ratio[f] * amount;
    };
    auto lose = [&](int side, double amount) {
      if (densityWeight != 0.0) outflow[side] += amount;
      for (std::size_t f = 0; f < np; ++f) passiveOutflow[f][side] += ratio[f] * amount;
    };
    double a = imageFaces[i], b = imageFaces[i + 1];
    // Pushed density at the image ends: rho / |f'|. Where f' changes sign within the cell (a fold) or vanishes,
    // the end slope is unknown: use the secant (uniform spreading over the image).
    double s0 = imageSlope[i], s1 = imageSlope[i + 1];
    const bool increasing = b > a;
    const double secant = (b != a) ? m / std::fabs(b - a) : 0.0;
    double d0, d1;
    if (!unitShape && ((increasing && s0 > 0 && s1 > 0) || (!increasing && s0 < 0 && s1 < 0))) {
      d0 = faceDensity[i] / std::fabs(s0);
      d1 = faceDensity[i + 1] / std::fabs(s1);
    } else {
      d0 = d1 = secant;
    }
    if (!increasing) {  // traverse the image from its lower end: mirror
      std::swap(a, b);
      std::swap(d0, d1);
    }
    const double L = b - a;
    if (!(L > 0)) {  // the whole cell maps to one point (degenerate map): deposit where it lands
      if (a < lo) lose(0, m);
      else if (a >= hi) lose(1, m);
      else {
        const auto it = std::upper_bound(targetFaces.begin(), targetFaces.end(), a);
        depositAt(static_cast<std::size_t>(it - targetFaces.begin() - 1), m);
      }
      continue;
    }
    const MonotoneCubic H(L, m, d0, d1, m > 0);
    // Below and above the mesh.
    if (a < lo) lose(0, H(std::min(lo, b) - a));
    if (b > hi) lose(1, m - H(std::max(hi, a) - a));
    const double ca = std::max(a, lo), cb = std::min(b, hi);
    if (!(cb > ca)) continue;
    // Target cells overlapping [ca, cb]: from the largest face <= ca, looked for from the previous source's first
    // target (images of consecutive cells are usually next to each other), else by bisection.
    std::size_t j = hint;
    if (targetFaces[j] <= ca) {
      for (int step = 0; step < 8 && j + 1 < nt && targetFaces[j + 1] <= ca; ++step) ++j;
      if (j + 1 < nt && targetFaces[j + 1] <= ca) j = firstBelow(ca);
    } else {
      j = firstBelow(ca);
    }
    hint = j;
    double left = H(ca - a);
    for (; j < nt && targetFaces[j] < cb; ++j) {
      // H is monotone in exact arithmetic; at nearby points its rounded values can dip by an ulp, so the running
      // maximum keeps every deposit >= 0 (and the total unchanged: the last value is still H at the image end).
      const double raw = H(std::min(targetFaces[j + 1], cb) - a);
      const double right = H.M > 0 ? std::min(std::max(raw, left), H.M) : raw;  // signed data stay linear
      depositAt(j, right - left);
      left = right;
    }
  }
  return outflow;
}

}  // namespace

std::array<double, 2> remapLine(const std::vector<double>& targetFaces, const std::vector<double>& masses,
                                const std::vector<double>& faceDensity, const std::vector<double>& imageFaces,
                                const std::vector<double>& imageSlope, double* out, std::ptrdiff_t outStride) {
  return remapLineImpl(targetFaces, masses, faceDensity, imageFaces, imageSlope, out, outStride, 0, nullptr, nullptr,
                       nullptr);
}

std::array<double, 2> remapLine(const std::vector<double>& targetFaces, const std::vector<double>& masses,
                                const std::vector<double>& faceDensity, const std::vector<double>& imageFaces,
                                const std::vector<double>& imageSlope, double* out, std::ptrdiff_t outStride,
                                const std::vector<const double*>& passiveMasses, const std::vector<double*>& passiveOut,
                                std::vector<std::array<double, 2>>& passiveOutflow) {
  const std::size_t np = passiveMasses.size();
  if (passiveOut.size() != np || passiveOutflow.size() != np)
    throw std::invalid_argument("remapLine: passive masses, outputs and outflows differ in number");
  if (np > kMaxPassiveFields)
    throw std::invalid_argument("remapLine: at most " + std::to_string(kMaxPassiveFields) + " passive fields");
  return remapLineImpl(targetFaces, masses, faceDensity, imageFaces, imageSlope, out, outStride, np,
                       passiveMasses.data(), passiveOut.data(), passiveOutflow.data());
}

PushForward::PushForward(const meshes::BoxMesh& mesh, GradientField gradient, double eta, double cacheShare)
    : mesh_(mesh), gradient_(std::move(gradient)), eta_(eta), cacheShare_(cacheShare),
      cache_(std::make_unique<MapCache>()) {
  if (!(cacheShare > 0.0 && cacheShare <= 1.0))
    throw std::invalid_argument("PushForward: the cache share must lie in (0, 1]");
}

ParameterPoint PushForward::map(const ParameterPoint& theta) const {
  const ParameterPoint g = gradient_(theta);
  ParameterPoint t = theta;
  for (int a = 0; a < mesh_.dim(); ++a) t[a] -= eta_ * g[a];
  return t;
}

ParameterPoint PushForward::original(int axis, ParameterPoint c) const {
  // Coordinates > axis hold images c_k = theta_k - eta g_k(theta); solve for theta_k (k > axis) by Newton's method
  // with a finite-difference Jacobian (at most (d - 1) x (d - 1)), starting from c.
  constexpr int kMax = meshes::kMaxDimension - 1;
  const int d = mesh_.dim();
  const int m = d - 1 - axis;
  if (m <= 0) return c;
  ParameterPoint th = c;
  auto residual = [&](const ParameterPoint& p, double* r) {
    const ParameterPoint g = gradient_(p);
    for (int k = 0; k < m; ++k) r[k] = p[axis + 1 + k] - eta_ * g[axis + 1 + k] - c[axis + 1 + k];
  };
  for (int it = 0; it < 60; ++it) {
    double r[kMax];
    residual(th, r);
    double scale = 0.0, rn = 0.0;
    for (int k = 0; k < m; ++k) {
      rn = std::max(rn, std::fabs(r[k]));
      scale = std::max(scale, std::fabs(th[axis + 1 + k]));
    }
    if (rn <= 1e-15 * std::max(1.0, scale)) return th;
    double J[kMax][kMax];
    for (int k = 0; k < m; ++k) {
      ParameterPoint pp = th;
      const double dh = 1e-7 * std::max(1.0, std::fabs(th[axis + 1 + k]));
      pp[axis + 1 + k] += dh;
      double rp[kMax];
      residual(pp, rp);
      for (int l = 0; l < m; ++l) J[l][k] = (rp[l] - r[l]) / dh;
    }
    // J dx = r by Gaussian elimination with partial pivoting (m <= 5).
    double dx[kMax];
    for (int k = 0; k < m; ++k) dx[k] = r[k];
    for (int col = 0; col < m; ++col) {
      int pivot = col;
      for (int row = col + 1; row < m; ++row)
        if (std::fabs(J[row][col]) > std::fabs(J[pivot][col])) pivot = row;
      if (pivot != col) {
        std::swap(J[pivot], J[col]);
        std::swap(dx[pivot], dx[col]);
      }
      for (int row = col + 1; row < m; ++row) {
        const double f = J[row][col] / J[col][col];
        for (int k = col; k < m; ++k) J[row][k] -= f * J[col][k];
        dx[row] -= f * dx[col];
      }
    }
    for (int row = m; row-- > 0;) {
      for (int k = row + 1; k < m; ++k) dx[row] -= J[row][k] * dx[k];
      dx[row] /= J[row][row];
    }
    for (int k = 0; k < m; ++k) th[axis + 1 + k] -= dx[k];
    if (!std::isfinite(th[axis + 1])) break;
  }
  std::string at;
  for (int a = 0; a < d; ++a) at += (a ? ", " : "") + std::to_string(c[static_cast<std::size_t>(a)]);
  throw std::runtime_error("push-forward: the gradient map could not be inverted near (" + at +
                           "); in d >= 2 the noisy-GD push-forward needs an invertible map (eta * beta < 1)");
}

double PushForward::shearImage(int axis, const ParameterPoint& current) const {
  const ParameterPoint theta = original(axis, current);
  return current[axis] - eta_ * gradient_(theta)[axis];
}

PushForward::LineMaps PushForward::lineMaps(int axis, const meshes::BoxMesh::Line& line) const {
  const std::vector<double>& faces = mesh_.axis(axis).faces();
  LineMaps maps;
  maps.images.resize(faces.size());
  ParameterPoint pt{};
  for (int a = 0; a < mesh_.dim(); ++a)
    if (a != axis) pt[a] = mesh_.axis(a).centre(line.index[a]);
  for (std::size_t f = 0; f < faces.size(); ++f) {
    pt[axis] = faces[f];
    maps.images[f] = shearImage(axis, pt);
  }
  maps.slopes = imageSlopes(faces, maps.images);
  return maps;
}

const std::vector<PushForward::LineMaps>* PushForward::cachedMaps(int axis) const {
  const double values = 2.0 * static_cast<double>(mesh_.totalCells()) * mesh_.dim() *
                        (1.0 + 1.0 / static_cast<double>(mesh_.cells(axis)));
  if (values > cacheShare_ * (mesh_.dim() > 3 ? kMaxCachedValuesBeyondDmda : kMaxCachedValues)) return nullptr;
  const std::lock_guard<std::mutex> lock(cache_->mutex);
  auto& slot = cache_->maps[static_cast<std::size_t>(axis)];
  if (!slot) {
    auto maps = std::make_unique<std::vector<LineMaps>>();
    mesh_.forEachLine(axis, [&](const meshes::BoxMesh::Line& line) { maps->push_back(lineMaps(axis, line)); });
    slot = std::move(maps);
  }
  return slot.get();
}

Outflow PushForward::apply(std::vector<double>& field, bool allowSigned) const {
  return applyImpl(field, allowSigned, nullptr, nullptr);
}

CoTransportOutflow PushForward::coTransport(std::vector<double>& density,
                                            std::vector<std::vector<double>>& passive) const {
  if (passive.size() > kMaxPassiveFields)
    throw std::invalid_argument("PushForward::coTransport: at most " + std::to_string(kMaxPassiveFields) +
                                " passive fields");
  for (const auto& w : passive)
    if (w.size() != density.size())
      throw std::invalid_argument("PushForward::coTransport: a passive field differs in size from the density");
  CoTransportOutflow r;
  r.passive.resize(passive.size());
  r.density = applyImpl(density, false, &passive, &r.passive);
  return r;
}

Outflow PushForward::applyShear(int axis, std::vector<double>& field) const {
  if (axis < 0 || axis >= mesh_.dim()) throw std::invalid_argument("PushForward::applyShear: no such axis");
  return applyImpl(field, false, nullptr, nullptr, axis);
}

Outflow PushForward::applyImpl(std::vector<double>& field, bool allowSigned,
                               std::vector<std::vector<double>>* passive, std::vector<Outflow>* passiveOutflow,
                               int onlyAxis) const {
  const int d = mesh_.dim();
  const std::size_t np = passive ? passive->size() : 0;
  meshes::CellIndex n{};
  for (int a = 0; a < meshes::kMaxDimension; ++a) n[a] = mesh_.cells(a);
  Outflow outflow;
  std::vector<double> next(field.size());
  std::vector<std::vector<double>> passiveNext(np, std::vector<double>(field.size()));
  std::vector<std::vector<double>> passiveLineMasses(np);
  std::vector<const double*> passiveIn(np);
  std::vector<double*> passiveOut(np);
  std::vector<std::array<double, 2>> passiveLost(np);
  // Shears in the order axis d-1, ..., 0 (each changes one coordinate; see the header).
  for (int axis = d - 1; axis >= 0; --axis) {
    if (onlyAxis >= 0 && axis != onlyAxis) continue;
    std::fill(next.begin(), next.end(), 0.0);
    for (auto& w : passiveNext) std::fill(w.begin(), w.end(), 0.0);
    const auto& ax = mesh_.axis(axis);
    const std::vector<double>& faces = ax.faces();
    std::vector<double> masses(static_cast<std::size_t>(n[axis]));
    const std::vector<LineMaps>* cached = cachedMaps(axis);
    std::size_t lineIndex = 0;
    mesh_.forEachLine(axis, [&](const meshes::BoxMesh::Line& gridLine) {
        const std::ptrdiff_t base = gridLine.offset;
        const std::ptrdiff_t step = gridLine.stride;
        const double* line = field.data() + base;
        for (int i = 0; i < n[axis]; ++i) masses[i] = line[i * step] * ax.width(i);
        for (std::size_t f = 0; f < np; ++f) {
          auto& wm = passiveLineMasses[f];
          wm.resize(static_cast<std::size_t>(n[axis]));
          const double* wline = (*passive)[f].data() + base;
          for (int i = 0; i < n[axis]; ++i) wm[i] = wline[i * step] * ax.width(i);
          passiveIn[f] = wm.data();
          passiveOut[f] = passiveNext[f].data() + base;
          passiveLost[f] = {0.0, 0.0};
        }
        LineMaps computed;
        const LineMaps& maps = cached ? (*cached)[lineIndex++] : (computed = lineMaps(axis, gridLine));
        const auto rho = faceDensities(faces, line, step, !allowSigned);
        double* outLine = next.data() + base;
        const auto lost = remapLineImpl(faces, masses, rho, maps.images, maps.slopes, outLine, step, np,
                                        passiveIn.data(), passiveOut.data(), passiveLost.data());
        const double crossSection = gridLine.crossSection;  // the line's masses are per unit cross-section
        outflow.mass[2 * axis] += lost[0] * crossSection;
        outflow.mass[2 * axis + 1] += lost[1] * crossSection;
        for (int i = 0; i < n[axis]; ++i) outLine[i * step] /= ax.width(i);  // masses -> averages
        for (std::size_t f = 0; f < np; ++f) {
          (*passiveOutflow)[f].mass[2 * axis] += passiveLost[f][0] * crossSection;
          (*passiveOutflow)[f].mass[2 * axis + 1] += passiveLost[f][1] * crossSection;
          for (int i = 0; i < n[axis]; ++i) passiveOut[f][i * step] /= ax.width(i);
        }
      });
    field.swap(next);
    for (std::size_t f = 0; f < np; ++f) (*passive)[f].swap(passiveNext[f]);
  }
  return outflow;
}

}  // namespace fpdp::solver
