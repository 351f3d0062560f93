#include "solver/noisygd/ChapmanKolmogorovQuadrature.hpp"

#include "solver/numerics/StableFunctions.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

namespace fpdp::solver {

namespace {
constexpr double kInvSqrt2Pi = 0.39894228040143267794;
constexpr double kPi = 3.14159265358979323846;
}  // namespace

ChapmanKolmogorovQuadrature::ChapmanKolmogorovQuadrature(const meshes::BoxMesh& mesh, const PushForward& map,
                                                         meshes::AxisValues stddev)
    : mesh_(mesh) {
  const int d = mesh.dim();
  std::array<double, 3> h{1, 1, 1};
  resolution_ = std::numeric_limits<double>::infinity();
  for (int a = 0; a < d; ++a) {
    const auto& ax = mesh.axis(a);
    if (!ax.isUniform())
      throw std::invalid_argument("chapman_kolmogorov needs a uniform mesh: axis " + std::to_string(a) +
                                  " has cells of different widths");
    if (!(stddev[a] > 0) || !std::isfinite(stddev[a]))
      throw std::invalid_argument("chapman_kolmogorov needs noise on every axis: the kernel's standard deviation on "
                                  "axis " + std::to_string(a) + " is " + std::to_string(stddev[a]));
    n_[a] = ax.cells();
    h[a] = ax.width(0);
    volume_ *= h[a];
    resolution_ = std::min(resolution_, stddev[a] / h[a]);
  }
  const std::size_t N = mesh.totalCells();
  // The kernel table's size, before it is built: every source's window spans about 2 kTail s_a / h_a cells per axis.
  std::size_t entries = 0;
  for (int a = 0; a < d; ++a) entries += static_cast<std::size_t>(2.0 * kTail * stddev[a] / h[a] + 3.0);
  if (entries * N > kMaxKernelEntries)
    throw std::invalid_argument("chapman_kolmogorov: the kernel table would hold " + std::to_string(entries * N) +
                                " values (more than " + std::to_string(kMaxKernelEntries) +
                                "); use fewer cells (about 1.5 per noise standard deviation suffice) or another "
                                "noisy_gd.diffusion");
  windows_.resize(N);
  tails_.resize(N);
  kernel_.reserve(entries * N);
  // Narrowest feature per axis (for the aliasing estimate), as an inverse width: the kernel seen from the source
  // side, sum_b |dT_b/dx_a| / s_b, and from the target side, 1 / s_a (the next step sums the new values again).
  std::array<double, 3> slope{0, 0, 0};
  for (int a = 0; a < d; ++a) slope[a] = 1.0 / stddev[a];
  std::size_t c = 0;
  for (int k = 0; k < n_[2]; ++k)
    for (int j = 0; j < n_[1]; ++j)
      for (int i = 0; i < n_[0]; ++i, ++c) {
        const ParameterPoint x = mesh.centreAt({i, j, k});
        const ParameterPoint T = map.map(x);
        for (int a = 0; a < d; ++a) {
          // Central difference of T along axis a (step: a thousandth of a cell).
          ParameterPoint xp = x, xm = x;
          const double delta = 1e-3 * h[a];
          xp[a] += delta;
          xm[a] -= delta;
          const ParameterPoint Tp = map.map(xp), Tm = map.map(xm);
          double s = 0.0;
          for (int b = 0; b < d; ++b) s += std::fabs(Tp[b] - Tm[b]) / (2.0 * delta) / stddev[b];
          slope[a] = std::max(slope[a], s);
        }
        for (int a = 0; a < d; ++a) {
          const auto& ax = mesh.axis(a);
          const double s = stddev[a];
          const double lo = ax.lower();
          // Targets whose centre lies within kTail s of T_a.
          const int first = std::max(0, static_cast<int>(std::ceil((T[a] - kTail * s - lo) / h[a] - 0.5)));
          const int last = std::min(n_[a] - 1, static_cast<int>(std::floor((T[a] + kTail * s - lo) / h[a] - 0.5)));
          Window& w = windows_[c][static_cast<std::size_t>(a)];
          w.first = first;
          w.count = std::max(0, last - first + 1);
          w.offset = kernel_.size();
          for (int t = first; t <= last; ++t) {
            const double u = (ax.centre(t) - T[a]) / s;
            kernel_.push_back(h[a] * kInvSqrt2Pi * std::exp(-0.5 * u * u) / s);
          }
          tails_[c][static_cast<std::size_t>(2 * a)] = standardNormalCdf((ax.lower() - T[a]) / s);
          tails_[c][static_cast<std::size_t>(2 * a + 1)] = standardNormalCdf((T[a] - ax.upper()) / s);
        }
      }
  for (int a = 0; a < d; ++a) aliasing_ += aliasingTerm(1.0 / slope[a], h[a]);
}

double ChapmanKolmogorovQuadrature::aliasingTerm(double width, double h) {
  // Poisson summation: the midpoint rule of a Gaussian of standard deviation w on spacing h errs by
  // 2 sum_{m>=1} exp(-2 pi^2 m^2 w^2 / h^2) relative to its integral; the m = 1 term dominates.
  return 2.0 * std::exp(-2.0 * kPi * kPi * (width / h) * (width / h));
}

Outflow ChapmanKolmogorovQuadrature::apply(std::vector<double>& values) const {
  const std::size_t N = windows_.size();
  if (values.size() != N)
    throw std::invalid_argument("ChapmanKolmogorovQuadrature::apply: " + std::to_string(values.size()) +
                                " values for " + std::to_string(N) + " cells");
  const int d = mesh_.dim();
  std::vector<double> next(N, 0.0);
  Outflow outflow;
  const std::size_t n0 = static_cast<std::size_t>(n_[0]), n01 = n0 * static_cast<std::size_t>(n_[1]);
  for (std::size_t c = 0; c < N; ++c) {
    const double v = values[c];
    if (v == 0.0) continue;
    const double mass = volume_ * v;
    for (int f = 0; f < 2 * d; ++f) outflow.mass[static_cast<std::size_t>(f)] += mass * tails_[c][static_cast<std::size_t>(f)];
    // The kernel values carry the volume, so the products below are volume * v * prod_a phi_a / s_a.
    const auto& w = windows_[c];
    const double* k0 = kernel_.data() + w[0].offset;
    const double* k1 = d > 1 ? kernel_.data() + w[1].offset : nullptr;
    const double* k2 = d > 2 ? kernel_.data() + w[2].offset : nullptr;
    const int c1 = d > 1 ? w[1].count : 1, c2 = d > 2 ? w[2].count : 1;
    for (int t2 = 0; t2 < c2; ++t2) {
      const double f2 = v * (k2 ? k2[t2] : 1.0);
      const std::size_t base2 = d > 2 ? static_cast<std::size_t>(w[2].first + t2) * n01 : 0;
      for (int t1 = 0; t1 < c1; ++t1) {
        const double f12 = f2 * (k1 ? k1[t1] : 1.0);
        double* row = next.data() + base2 + (d > 1 ? static_cast<std::size_t>(w[1].first + t1) * n0 : 0) +
                      static_cast<std::size_t>(w[0].first);
        for (int t0 = 0; t0 < w[0].count; ++t0) row[t0] += f12 * k0[t0];
      }
    }
  }
  values.swap(next);
  return outflow;
}

std::string ChapmanKolmogorovQuadrature::describe() const {
  std::ostringstream os;
  os << "chapman_kolmogorov (midpoint rule of the transition kernel on the cell centres, point values; "
     << resolution_ << " cells per noise standard deviation)";
  return os.str();
}

}  // namespace fpdp::solver
