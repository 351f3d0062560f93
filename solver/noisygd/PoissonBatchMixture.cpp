#include "solver/noisygd/PoissonBatchMixture.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "models/MinibatchSchedule.hpp"

namespace fpdp::solver {

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
  }
}

double PoissonBatchMixture::batchMaps(const std::vector<long>& counts) {
  double m = 1.0;
  for (long c : counts) m *= static_cast<double>(c) + 1.0;
  return m;
}

double PoissonBatchMixture::costEstimate(const std::vector<long>& counts, std::size_t cells, int dim) {
  return batchMaps(counts) * static_cast<double>(cells) * (dim == 1 ? 1.0 : kShearCost);
}

void PoissonBatchMixture::enumerate(const std::function<void(const std::vector<long>&, double, int, int)>& visit) const {
  const std::size_t G = counts_.size();
  std::vector<long> k(G, 0);
  std::vector<int> dir(G, 1);
  auto weight = [&] {
    double w = 1.0;
    for (std::size_t r = 0; r < G; ++r) w *= pmf_[r][static_cast<std::size_t>(k[r])];
    return w;
  };
  visit(k, weight(), -1, 0);
  for (;;) {
    // Reflected mixed-radix Gray code: the lowest digit that can move in its direction moves; the digits below it,
    // at their ends, turn round.
    std::size_t r = 0;
    while (r < G && (k[r] + dir[r] < 0 || k[r] + dir[r] > counts_[r])) {
      dir[r] = -dir[r];
      ++r;
    }
    if (r == G) return;
    k[r] += dir[r];
    visit(k, weight(), static_cast<int>(r), dir[r]);
  }
}

Outflow PoissonBatchMixture::applyLine(std::vector<double>& field) const {
  const auto& ax = mesh_.axis(0);
  const std::vector<double>& faces = ax.faces();
  const std::size_t nc = static_cast<std::size_t>(ax.cells());
  std::vector<double> masses(nc);
  for (std::size_t i = 0; i < nc; ++i) masses[i] = field[i] * ax.width(static_cast<int>(i));
  const auto rho = faceDensities(faces, field.data(), 1, true);
  std::vector<double> sum(faces.size(), 0.0), images(faces.size()), out(nc, 0.0), one(nc, 0.0);
  Outflow outflow;
  enumerate([&](const std::vector<long>&, double w, int changed, int delta) {
    if (changed >= 0) {
      const auto& g = faceGradients_[static_cast<std::size_t>(changed)];
      if (delta > 0)
        for (std::size_t f = 0; f < sum.size(); ++f) sum[f] += g[f];
      else
        for (std::size_t f = 0; f < sum.size(); ++f) sum[f] -= g[f];
    }
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
        [this, k](const Point3& theta) {
          Point3 g{0, 0, 0};
          for (std::size_t r = 0; r < k.size(); ++r) {
            if (k[r] == 0) continue;
            const Point3 gr = groups_[r].gradient(theta);
            for (int a = 0; a < 3; ++a) g[a] += static_cast<double>(k[r]) * gr[a];
          }
          for (int a = 0; a < 3; ++a) g[a] /= expectedSize_;
          return g;
        },
        eta_);
    pushed = field;
    const Outflow lost = push.apply(pushed);
    for (std::size_t c = 0; c < out.size(); ++c) out[c] += w * pushed[c];
    for (int s = 0; s < 6; ++s) outflow.mass[s] += w * lost.mass[s];
  });
  field.swap(out);
  return outflow;
}

void PoissonBatchMixture::forEachImage(const Point3& x, const std::function<void(const Point3&, double)>& f) const {
  std::vector<Point3> g;
  for (const auto& r : groups_) g.push_back(r.gradient(x));
  Point3 sum{0, 0, 0};
  enumerate([&](const std::vector<long>&, double w, int changed, int delta) {
    if (changed >= 0)
      for (int a = 0; a < 3; ++a) sum[a] += delta * g[static_cast<std::size_t>(changed)][a];
    if (w == 0.0) return;
    Point3 y = x;
    for (int a = 0; a < mesh_.dim(); ++a) y[a] -= eta_ * (sum[a] / expectedSize_);
    f(y, w);
  });
}

std::string PoissonBatchMixture::describe() const {
  std::ostringstream os;
  os << "Poisson batch mixture, rate " << rate_ << ", b = " << expectedSize_ << ": " << counts_.size()
     << " distinct records, " << batchMaps() << " batch maps per step, enumerated exactly";
  return os.str();
}

}  // namespace fpdp::solver
