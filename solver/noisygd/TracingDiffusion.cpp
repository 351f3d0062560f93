#include "solver/noisygd/TracingDiffusion.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fpdp::solver {

TracingDiffusion::TracingDiffusion(const meshes::BoxMesh& mesh, GradientField gradientD, GradientField gradientDPrime,
                                   const TracingSettings& settings)
    : mesh_(mesh), gD_(std::move(gradientD)), gDPrime_(std::move(gradientDPrime)), settings_(settings) {
  if (!(settings_.eta > 0)) throw std::invalid_argument("TracingDiffusion: eta must be positive");
  const int d = mesh_.dim();
  const std::size_t nc = mesh_.totalCells();
  volumes_.resize(nc);
  u2_.resize(nc * static_cast<std::size_t>(d));
  std::size_t c = 0;
  for (int k = 0; k < mesh_.cells(2); ++k)
    for (int j = 0; j < mesh_.cells(1); ++j)
      for (int i = 0; i < mesh_.cells(0); ++i, ++c) {
        volumes_[c] = mesh_.cellVolume(i, j, k);
        const ParameterPoint x = mesh_.centreAt({i, j, k});
        const ParameterPoint a = gD_(x), b = gDPrime_(x);
        double n2 = 0.0;
        for (int l = 0; l < d; ++l) {
          u2_[c * d + l] = 0.5 * (a[l] - b[l]);
          n2 += (a[l] - b[l]) * (a[l] - b[l]);
        }
        discreteBound_ = std::max(discreteBound_, std::sqrt(n2));
      }
}

void TracingDiffusion::setStart(std::vector<double> p, std::vector<double> pPrime) {
  const int d = mesh_.dim();
  const std::size_t nc = volumes_.size();
  if (p.size() != nc || pPrime.size() != nc)
    throw std::invalid_argument("TracingDiffusion::setStart: the fields must hold one value per cell");
  pk_ = std::move(p);
  pkPrime_ = std::move(pPrime);
  wk_.assign(static_cast<std::size_t>(d), std::vector<double>(nc));
  wkPrime_.assign(static_cast<std::size_t>(d), std::vector<double>(nc));
  mass0_ = mass0Prime_ = 0.0;
  wMass0_.assign(d, 0.0);
  wMass0Prime_.assign(d, 0.0);
  wAbsMass0_.assign(d, 0.0);
  wAbsMass0Prime_.assign(d, 0.0);
  for (std::size_t c = 0; c < nc; ++c) {
    mass0_ += volumes_[c] * pk_[c];
    mass0Prime_ += volumes_[c] * pkPrime_[c];
    for (int a = 0; a < d; ++a) {
      // Cell average of U2 p_k by the midpoint rule in U2: U2(centre) times the cell average of p_k.
      wk_[a][c] = u2_[c * d + a] * pk_[c];
      wkPrime_[a][c] = u2_[c * d + a] * pkPrime_[c];
      wMass0_[a] += volumes_[c] * wk_[a][c];
      wMass0Prime_[a] += volumes_[c] * wkPrime_[a][c];
      wAbsMass0_[a] += volumes_[c] * std::fabs(wk_[a][c]);
      wAbsMass0Prime_[a] += volumes_[c] * std::fabs(wkPrime_[a][c]);
    }
  }
}

void TracingDiffusion::setStart(const FieldGatherer& gatherer, Vec u) {
  setStart(gatherer.gather(u, 0), gatherer.gather(u, 1));
}

TracingState TracingDiffusion::at(double s) const {
  if (pk_.empty()) throw std::logic_error("TracingDiffusion::at: setStart first");
  if (!(s >= 0.0 && s <= settings_.eta)) throw std::invalid_argument("TracingDiffusion::at: s must lie in [0, eta]");
  const int d = mesh_.dim();
  const std::size_t nc = volumes_.size();
  const double sigma = s / settings_.eta;
  // psi_s = id - eta G_s with G_s = U1 + (s/eta) U2 = ((1 + sigma) g_D + (1 - sigma) g_D')/2 (exactly g_D at s = eta),
  // psi'_s = id - eta G'_s with G'_s = U1 - (s/eta) U2.
  const double wa = 0.5 * (1.0 + sigma), wb = 0.5 * (1.0 - sigma);
  auto blend = [this](double x, double y) {
    return [this, x, y](const ParameterPoint& t) {
      const ParameterPoint a = gD_(t), b = gDPrime_(t);
      return ParameterPoint{x * a[0] + y * b[0], x * a[1] + y * b[1], x * a[2] + y * b[2]};
    };
  };
  const PushForward push(mesh_, blend(wa, wb), settings_.eta);
  const PushForward pushPrime(mesh_, blend(wb, wa), settings_.eta);

  TracingState st;
  st.s = s;
  st.p = pk_;
  st.pPrime = pkPrime_;
  std::vector<std::vector<double>> w = wk_, wPrime = wkPrime_;
  st.pushP = push.coTransport(st.p, w);
  st.pushPPrime = pushPrime.coTransport(st.pPrime, wPrime);
  if (s > 0) {
    meshes::AxisValues stddev{};
    for (int a = 0; a < d; ++a) stddev[a] = std::sqrt(2.0 * s * settings_.noiseVariance[a]);  // as NoisyGradientDescent
    // The direct route: co-transport deposits the passive fields with the density's own deposits.
    const GaussianConvolution conv(mesh_, stddev, GaussianConvolution::Route::Direct);
    st.diffusionP = conv.coTransport(st.p, w);
    st.diffusionPPrime = conv.coTransport(st.pPrime, wPrime);
  } else {
    st.diffusionP.passive.resize(static_cast<std::size_t>(d));
    st.diffusionPPrime.passive.resize(static_cast<std::size_t>(d));
  }

  // Conservation.
  double maxP = 0.0, maxPPrime = 0.0;
  std::vector<double> wm(d, 0.0), wmPrime(d, 0.0);
  for (std::size_t c = 0; c < nc; ++c) {
    st.massP += volumes_[c] * st.p[c];
    st.massPPrime += volumes_[c] * st.pPrime[c];
    maxP = std::max(maxP, st.p[c]);
    maxPPrime = std::max(maxPPrime, st.pPrime[c]);
    for (int a = 0; a < d; ++a) {
      wm[a] += volumes_[c] * w[a][c];
      wmPrime[a] += volumes_[c] * wPrime[a][c];
    }
  }
  st.massErrorP = std::fabs(st.massP + st.pushP.density.total() + st.diffusionP.density.total() - mass0_) / mass0_;
  st.massErrorPPrime =
      std::fabs(st.massPPrime + st.pushPPrime.density.total() + st.diffusionPPrime.density.total() - mass0Prime_) /
      mass0Prime_;
  for (int a = 0; a < d; ++a) {
    const double eP = wm[a] + st.pushP.passive[a].total() + st.diffusionP.passive[a].total() - wMass0_[a];
    const double eQ =
        wmPrime[a] + st.pushPPrime.passive[a].total() + st.diffusionPPrime.passive[a].total() - wMass0Prime_[a];
    if (wAbsMass0_[a] > 0) st.driftMassError = std::max(st.driftMassError, std::fabs(eP) / wAbsMass0_[a]);
    if (wAbsMass0Prime_[a] > 0) st.driftMassError = std::max(st.driftMassError, std::fabs(eQ) / wAbsMass0Prime_[a]);
  }

  // Drifts V = (U2 p)_s / p_s and V' = -(U2 p')_s / p'_s where the densities are not negligible.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double thr = settings_.undefinedBelow * maxP, thrPrime = settings_.undefinedBelow * maxPPrime;
  st.v.assign(nc * static_cast<std::size_t>(d), nan);
  st.vPrime.assign(nc * static_cast<std::size_t>(d), nan);
  st.lemma4Bound = settings_.lemma4Bound;
  const double allowed = settings_.lemma4Bound * (1.0 + settings_.lemma4RelativeTolerance);
  for (std::size_t c = 0; c < nc; ++c) {
    const bool okP = st.p[c] > 0.0 && st.p[c] >= thr, okQ = st.pPrime[c] > 0.0 && st.pPrime[c] >= thrPrime;
    double nv = 0.0, nvPrime = 0.0, gap = 0.0;
    for (int a = 0; a < d; ++a) {
      const double v = okP ? w[a][c] / st.p[c] : nan;
      const double vp = okQ ? -wPrime[a][c] / st.pPrime[c] : nan;
      st.v[c * d + a] = v;
      st.vPrime[c * d + a] = vp;
      nv += v * v;
      nvPrime += vp * vp;
      gap += (v - vp) * (v - vp);
    }
    if (okP) {
      ++st.definedP;
      st.supV = std::max(st.supV, std::sqrt(nv));
    }
    if (okQ) {
      ++st.definedPPrime;
      st.supVPrime = std::max(st.supVPrime, std::sqrt(nvPrime));
    }
    if (okP && okQ) {
      ++st.definedBoth;
      gap = std::sqrt(gap);
      st.supGap = std::max(st.supGap, gap);
      if (gap > allowed) ++st.cellsAboveBound;
    }
  }
  return st;
}

std::vector<TracingState> TracingDiffusion::run(int m) const {
  if (m < 1) throw std::invalid_argument("TracingDiffusion::run: m must be >= 1");
  std::vector<TracingState> out;
  out.reserve(static_cast<std::size_t>(m));
  for (int j = 1; j <= m; ++j) out.push_back(at(settings_.eta * (static_cast<double>(j) / m)));  // j = m: eta * 1.0
  return out;
}

}  // namespace fpdp::solver
