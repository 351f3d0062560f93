#include "solver/noisygd/PoissonBatchMixture.hpp"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <unordered_map>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "models/MinibatchSchedule.hpp"
#include "solver/noisygd/CellQuadratic.hpp"

namespace fpdp::solver {

namespace {
/// The enumeration's running sum of the batch's face gradients as record g joins (delta > 0) or leaves the batch.
void addToBatchSum(std::vector<double>& sum, const std::vector<double>& g, int delta) {
  if (delta > 0)
    for (std::size_t f = 0; f < sum.size(); ++f) sum[f] += g[f];
  else
    for (std::size_t f = 0; f < sum.size(); ++f) sum[f] -= g[f];
}
}  // namespace

PoissonBatchMixture::PoissonBatchMixture(const meshes::BoxMesh& mesh, std::vector<RecordGroup> groups, double rate,
                                         double expectedSize, double eta)
    : mesh_(mesh), groups_(std::move(groups)), rate_(rate), expectedSize_(expectedSize), eta_(eta) {
  if (!(rate > 0 && rate <= 1)) throw std::invalid_argument("PoissonBatchMixture: the rate must lie in (0, 1]");
  if (!(expectedSize > 0)) throw std::invalid_argument("PoissonBatchMixture: the expected batch size must be > 0");
  for (const auto& g : groups_) {
    if (g.count < 1) throw std::invalid_argument("PoissonBatchMixture: a record group without records");
    counts_.push_back(g.count);
    pmf_.push_back(models::binomialPmf(g.count, rate));
  }
  if (mesh.dim() == 1) {
    const auto& faces = mesh.axis(0).faces();
    for (const auto& g : groups_) {
      std::vector<double> at(faces.size());
      for (std::size_t f = 0; f < faces.size(); ++f) at[f] = g.gradient({faces[f], 0, 0})[0];
      faceGradients_.push_back(std::move(at));
    }
    prepareLine();
  }
}

void PoissonBatchMixture::prepareLine() {
  const auto& ax = mesh_.axis(0);
  const std::vector<double>& faces = ax.faces();
  // Translations: every record's gradient the same at every face, to 8 units in the last place (a finite-difference
  // gradient of a linear expression varies by its rounding; such a map moves a cell by far less than an ulp of it).
  bool translations = ax.isUniform();
  for (const auto& g : faceGradients_)
    for (double v : g)
      translations = translations && std::abs(v - g.front()) <= 8.0 * std::numeric_limits<double>::epsilon() * std::abs(g.front());
  if (translations) {
    // T_B(x) = x + d_B: source cell i's image starts a fraction f of a cell into target i + m (d_B = (m + f) h), so
    // target i + m receives int_0^u q, u = (1 - f) h, and target i + m + 1 the rest, int_u^h q.
    const double h = ax.width(0);
    std::map<long, std::array<double, 3>> kernel;
    double sum = 0.0;
    enumerate([&](const std::vector<long>&, double w, int changed, int delta) {
      if (changed >= 0) {
        const double g = faceGradients_[static_cast<std::size_t>(changed)].front();
        sum = delta > 0 ? sum + g : sum - g;
      }
      if (w == 0.0) return;
      const double cells = -eta_ * (sum / expectedSize_) / h;
      const double m = std::floor(cells);
      const double u = (1.0 - (cells - m)) * h;
      const std::array<double, 3> part{u, u * u / 2, u * u * u / 3}, whole{h, h * h / 2, h * h * h / 3};
      auto& at = kernel[static_cast<long>(m)];
      auto& next = kernel[static_cast<long>(m) + 1];
      for (int k = 0; k < 3; ++k) {
        at[static_cast<std::size_t>(k)] += w * part[static_cast<std::size_t>(k)];
        next[static_cast<std::size_t>(k)] += w * (whole[static_cast<std::size_t>(k)] - part[static_cast<std::size_t>(k)]);
      }
    });
    shiftFirst_ = kernel.begin()->first;
    const std::size_t width = static_cast<std::size_t>(kernel.rbegin()->first - shiftFirst_ + 1);
    for (auto& k : shiftKernel_) k.assign(width, 0.0);
    for (const auto& [offset, values] : kernel)
      for (std::size_t k = 0; k < 3; ++k) shiftKernel_[k][static_cast<std::size_t>(offset - shiftFirst_)] = values[k];
    return;
  }
  if (batchMaps() * 2.0 * static_cast<double>(faces.size()) > kMaxCachedValues) return;  // made per application
  // The distinct maps, each with its images and slopes, their batches' weights summed; found by a hash of the
  // images' bits (equal maps have equal images, bit for bit: the sums are updated in the same order).
  const std::size_t nc = static_cast<std::size_t>(ax.cells());
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> byHash;
  std::vector<double> sum(faces.size(), 0.0), images(faces.size());
  enumerate([&](const std::vector<long>&, double w, int changed, int delta) {
    if (changed >= 0) addToBatchSum(sum, faceGradients_[static_cast<std::size_t>(changed)], delta);
    if (w == 0.0) return;
    std::uint64_t hash = 1469598103934665603ull;
    for (std::size_t f = 0; f < faces.size(); ++f) {
      images[f] = faces[f] - eta_ * (sum[f] / expectedSize_);
      hash = (hash ^ std::bit_cast<std::uint64_t>(images[f])) * 1099511628211ull;
    }
    auto& candidates = byHash[hash];
    for (std::size_t index : candidates)
      if (maps_[index].images == images) {
        maps_[index].weight += w;
        return;
      }
    candidates.push_back(maps_.size());
    BatchMap map;
    map.weight = w;
    map.images = images;
    map.slopes = imageSlopes(faces, images);
    const auto [lo, hi] = std::minmax_element(images.begin(), images.end());
    auto cellOf = [&](double y) {
      const auto it = std::upper_bound(faces.begin(), faces.end(), y);
      const std::ptrdiff_t j = (it - faces.begin()) - 1;
      return static_cast<std::size_t>(std::clamp<std::ptrdiff_t>(j, 0, static_cast<std::ptrdiff_t>(nc) - 1));
    };
    map.first = cellOf(*lo);
    map.last = cellOf(*hi);
    maps_.push_back(std::move(map));
  });
}

Outflow PoissonBatchMixture::applyTranslations(std::vector<double>& field) const {
  const auto& ax = mesh_.axis(0);
  const long nc = ax.cells();
  const auto rho = faceDensities(ax.faces(), field.data(), 1, true);
  const long width = static_cast<long>(shiftKernel_[0].size());
  const double *k0 = shiftKernel_[0].data(), *k1 = shiftKernel_[1].data(), *k2 = shiftKernel_[2].data();
  std::vector<double> out(static_cast<std::size_t>(nc), 0.0);
  Outflow outflow;
  for (long i = 0; i < nc; ++i) {
    const double m = field[static_cast<std::size_t>(i)] * ax.width(static_cast<int>(i));
    if (m == 0.0) continue;
    const CellQuadratic q(ax.width(static_cast<int>(i)), m, rho[static_cast<std::size_t>(i)],
                          rho[static_cast<std::size_t>(i) + 1]);
    // Targets below and above the mesh are outflow; the rest in one run of the kernel.
    const long first = i + shiftFirst_;
    const long from = std::max(0L, -first), to = std::min(width, nc - first);
    for (long t = 0; t < std::min(from, width); ++t) outflow.mass[0] += k0[t] * q.c0 + k1[t] * q.c1 + k2[t] * q.c2;
    for (long t = std::max(to, 0L); t < width; ++t) outflow.mass[1] += k0[t] * q.c0 + k1[t] * q.c1 + k2[t] * q.c2;
    double* target = out.data() + first;
    for (long t = from; t < to; ++t) target[t] += k0[t] * q.c0 + k1[t] * q.c1 + k2[t] * q.c2;
  }
  for (long j = 0; j < nc; ++j)
    field[static_cast<std::size_t>(j)] = std::max(out[static_cast<std::size_t>(j)], 0.0) / ax.width(static_cast<int>(j));
  return outflow;
}

double PoissonBatchMixture::batchMaps(const std::vector<long>& counts) {
  double m = 1.0;
  for (long c : counts) m *= static_cast<double>(c) + 1.0;
  return m;
}

double PoissonBatchMixture::costEstimate(const std::vector<long>& counts, std::size_t cells, int dim) {
  return batchMaps(counts) * static_cast<double>(cells) * (dim == 1 ? 1.0 : kShearCost);
}

void PoissonBatchMixture::enumerate(const std::vector<std::vector<double>>& pmf,
                                    const std::function<void(const std::vector<long>&, double, int, int)>& visit) {
  const std::size_t G = pmf.size();
  std::vector<long> k(G, 0);
  std::vector<int> dir(G, 1);
  auto weight = [&] {
    double w = 1.0;
    for (std::size_t r = 0; r < G; ++r) w *= pmf[r][static_cast<std::size_t>(k[r])];
    return w;
  };
  visit(k, weight(), -1, 0);
  for (;;) {
    // Reflected mixed-radix Gray code: the lowest digit that can move in its direction moves; the digits below it,
    // at their ends, turn round.
    std::size_t r = 0;
    while (r < G && (k[r] + dir[r] < 0 || k[r] + dir[r] + 1 > static_cast<long>(pmf[r].size()))) {
      dir[r] = -dir[r];
      ++r;
    }
    if (r == G) return;
    k[r] += dir[r];
    visit(k, weight(), static_cast<int>(r), dir[r]);
  }
}

Outflow PoissonBatchMixture::applyLine(std::vector<double>& field) const {
  if (!shiftKernel_[0].empty()) return applyTranslations(field);
  const auto& ax = mesh_.axis(0);
  const std::vector<double>& faces = ax.faces();
  const std::size_t nc = static_cast<std::size_t>(ax.cells());
  std::vector<double> masses(nc);
  for (std::size_t i = 0; i < nc; ++i) masses[i] = field[i] * ax.width(static_cast<int>(i));
  const auto rho = faceDensities(faces, field.data(), 1, true);
  std::vector<double> sum(faces.size(), 0.0), images(faces.size()), out(nc, 0.0), one(nc, 0.0);
  Outflow outflow;
  if (!maps_.empty()) {
    for (const BatchMap& map : maps_) {
      std::fill(one.begin() + static_cast<std::ptrdiff_t>(map.first),
                one.begin() + static_cast<std::ptrdiff_t>(map.last) + 1, 0.0);
      const auto lost = remapLine(faces, masses, rho, map.images, map.slopes, one.data(), 1);
      for (std::size_t j = map.first; j <= map.last; ++j) out[j] += map.weight * one[j];
      outflow.mass[0] += map.weight * lost[0];
      outflow.mass[1] += map.weight * lost[1];
    }
    for (std::size_t i = 0; i < nc; ++i) field[i] = out[i] / ax.width(static_cast<int>(i));
    return outflow;
  }
  enumerate([&](const std::vector<long>&, double w, int changed, int delta) {
    if (changed >= 0) addToBatchSum(sum, faceGradients_[static_cast<std::size_t>(changed)], delta);
    if (w == 0.0) return;
    for (std::size_t f = 0; f < faces.size(); ++f) images[f] = faces[f] - eta_ * (sum[f] / expectedSize_);
    // Only the cells the image covers receive mass: clear, remap and accumulate those.
    const auto [lo, hi] = std::minmax_element(images.begin(), images.end());
    auto cellOf = [&](double y) {
      const auto it = std::upper_bound(faces.begin(), faces.end(), y);
      const std::ptrdiff_t j = (it - faces.begin()) - 1;
      return static_cast<std::size_t>(std::clamp<std::ptrdiff_t>(j, 0, static_cast<std::ptrdiff_t>(nc) - 1));
    };
    const std::size_t first = cellOf(*lo), last = cellOf(*hi);
    std::fill(one.begin() + static_cast<std::ptrdiff_t>(first), one.begin() + static_cast<std::ptrdiff_t>(last) + 1,
              0.0);
    const auto lost = remapLine(faces, masses, rho, images, imageSlopes(faces, images), one.data(), 1);
    for (std::size_t j = first; j <= last; ++j) out[j] += w * one[j];
    outflow.mass[0] += w * lost[0];
    outflow.mass[1] += w * lost[1];
  });
  for (std::size_t i = 0; i < nc; ++i) field[i] = out[i] / ax.width(static_cast<int>(i));
  return outflow;
}

Outflow PoissonBatchMixture::apply(std::vector<double>& field) const {
  if (mesh_.dim() == 1) return applyLine(field);
  std::vector<double> out(field.size(), 0.0), pushed;
  Outflow outflow;
  enumerate([&](const std::vector<long>& k, double w, int, int) {
    if (w == 0.0) return;
    const PushForward push(
        mesh_,
        [this, k](const ParameterPoint& theta) {
          ParameterPoint g{0, 0, 0};
          for (std::size_t r = 0; r < k.size(); ++r) {
            if (k[r] == 0) continue;
            const ParameterPoint gr = groups_[r].gradient(theta);
            for (int a = 0; a < 3; ++a) g[a] += static_cast<double>(k[r]) * gr[a];
          }
          for (int a = 0; a < 3; ++a) g[a] /= expectedSize_;
          return g;
        },
        eta_);
    pushed = field;
    const Outflow lost = push.apply(pushed);
    for (std::size_t c = 0; c < out.size(); ++c) out[c] += w * pushed[c];
    for (std::size_t s = 0; s < outflow.mass.size(); ++s) outflow.mass[s] += w * lost.mass[s];
  });
  field.swap(out);
  return outflow;
}

void PoissonBatchMixture::forEachImage(const ParameterPoint& x,
                                       const std::function<void(const ParameterPoint&, double)>& f) const {
  std::vector<ParameterPoint> g;
  for (const auto& r : groups_) g.push_back(r.gradient(x));
  ParameterPoint sum{0, 0, 0};
  enumerate([&](const std::vector<long>&, double w, int changed, int delta) {
    if (changed >= 0)
      for (int a = 0; a < 3; ++a) sum[a] += delta * g[static_cast<std::size_t>(changed)][a];
    if (w == 0.0) return;
    ParameterPoint y = x;
    for (int a = 0; a < mesh_.dim(); ++a) y[a] -= eta_ * (sum[a] / expectedSize_);
    f(y, w);
  });
}

std::string PoissonBatchMixture::describe() const {
  std::ostringstream os;
  os << "Poisson batch mixture, rate " << rate_ << ", b = " << expectedSize_ << ": " << counts_.size()
     << " distinct records, " << batchMaps() << " batch maps per step, enumerated exactly";
  if (!shiftKernel_[0].empty())
    os << " (every map a translation: one kernel of " << shiftKernel_[0].size() << " offsets)";
  else if (!maps_.empty())
    os << " (" << maps_.size() << " distinct maps, made once)";
  return os.str();
}

}  // namespace fpdp::solver
