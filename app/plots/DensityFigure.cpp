#include "app/plots/DensityFigure.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "app/plots/FigureLayout.hpp"
#include "solver/functionals/Divergences.hpp"

namespace fpdp::app::plots {

using plot::Axes;
using plot::Box;
using plot::Dash;
using plot::LineStyle;

namespace {

constexpr double kPt = 100.0 / 72.0;

double noiseFloor(const std::vector<double>& a) {
  const double m = *std::min_element(a.begin(), a.end());
  return m < 0 ? solver::DivergenceFunctionals::kNoiseFloorFactor * -m : 0.0;
}

std::string frameTitle(const FieldFrame& fr, bool noisyGd) {
  char b[64];
  if (noisyGd) std::snprintf(b, sizeof b, "step %ld", fr.step);
  else std::snprintf(b, sizeof b, "t = %.4g (step %ld)", fr.time, fr.step);
  return b;
}

double maxAbs(const std::vector<double>& v) {
  double m = 0;
  for (const double x : v)
    if (std::isfinite(x)) m = std::max(m, std::abs(x));
  return m;
}

std::vector<double> difference(const std::vector<double>& p, const std::vector<double>& q) {
  std::vector<double> d(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) d[i] = p[i] - q[i];
  return d;
}

/// 1-D: p and q on a linear and a log scale, log(p/q) and p - q; one colour per output step.
std::unique_ptr<plot::Figure> curves(const Fields& fields, bool noisyGd) {
  Panels panels = makeFigure(2, 4.6, 3.3, 3.0, 2, {}, 90);
  Axes &lin = *panels.axes[0][0], &log = *panels.axes[0][1], &ratio = *panels.axes[1][0], &diff = *panels.axes[1][1];
  const auto& faces = fields.faces[0];
  std::vector<double> centres(faces.size() - 1);
  for (std::size_t i = 0; i + 1 < faces.size(); ++i) centres[i] = 0.5 * (faces[i] + faces[i + 1]);
  double top = 0;
  for (const auto& fr : fields.frames)
    top = std::max({top, *std::max_element(fr.p.begin(), fr.p.end()), *std::max_element(fr.q.begin(), fr.q.end())});
  for (std::size_t k = 0; k < fields.frames.size(); ++k) {
    const FieldFrame& fr = fields.frames[k];
    const plot::Colour c = plot::cycleColour(static_cast<int>(k));
    for (Axes* ax : {&lin, &log}) {
      ax->series("density_p", "p, " + frameTitle(fr, noisyGd), centres, fr.p, LineStyle{c, 1.4 * kPt, Dash::Solid},
                 std::nullopt, 2);
      ax->series("density_q", "q, " + frameTitle(fr, noisyGd), centres, fr.q, LineStyle{c, 1.4 * kPt, Dash::Dashed},
                 std::nullopt, 2);
    }
    ratio.series("log_ratio", "", centres, logRatio(fr.p, fr.q), LineStyle{c, 1.4 * kPt, Dash::Solid}, std::nullopt, 2);
    diff.series("difference", "", centres, difference(fr.p, fr.q), LineStyle{c, 1.4 * kPt, Dash::Solid}, std::nullopt, 2);
  }
  log.yScale = plot::Scale::Log;
  log.yBottom = top * 1e-16;
  for (auto [ax, what] : {std::pair{&lin, "p, q (linear)"}, std::pair{&log, "p, q (log scale)"}}) {
    ax->xLabel = "theta";
    ax->yLabel = "density";
    ax->title = std::string(what) + ": p solid (on D), q dashed (on D')";
  }
  ratio.xLabel = diff.xLabel = "theta";
  ratio.yLabel = "log(p/q)";
  ratio.title = "log(p/q); gaps: a density at or below its noise floor";
  diff.yLabel = "p - q";
  diff.title = "p - q";
  for (Axes* ax : {&lin, &log, &ratio, &diff}) ax->grid = true;
  return std::move(panels.figure);
}

/// 2-D and 3-D (the mid-plane slice in z): one row per output step of images p, q, log(p/q), p - q, colour bars
/// shared by each column below.
std::unique_ptr<plot::Figure> images(const Fields& fields, bool noisyGd) {
  const int dim = fields.dim;
  const std::size_t kz = fields.zLayer;
  std::string zmid;
  if (dim == 3) {
    char b[48];
    std::snprintf(b, sizeof b, ", z = %.3g", 0.5 * (fields.faces[2][kz] + fields.faces[2][kz + 1]));
    zmid = b;
  }
  const std::size_t rows = fields.frames.size();
  const double dpi = 80, panelW = 2.7, h = 2.45, W = 4 * panelW + 0.2, H = static_cast<double>(rows) * h + 1.0;
  auto fig = std::make_unique<plot::Figure>(static_cast<int>(std::lround(W * dpi)), static_cast<int>(std::lround(H * dpi)));
  std::vector<std::array<std::vector<double>, 4>> data;
  double vmax = 0, rmax = 0, dmax = 0;
  for (const auto& fr : fields.frames) {
    std::vector<double> p = fr.p, q = fr.q;
    auto r = logRatio(p, q), d = difference(p, q);
    vmax = std::max({vmax, maxAbs(p), maxAbs(q)});
    rmax = std::max(rmax, maxAbs(r));
    dmax = std::max(dmax, maxAbs(d));
    data.push_back({std::move(p), std::move(q), std::move(r), std::move(d)});
  }
  if (vmax == 0) vmax = 1;
  if (rmax == 0) rmax = 1;
  if (dmax == 0) dmax = 1;
  struct Column {
    const char* name;
    const char* role;
    plot::ColourMap map;
    double lo, hi;
    const char* label;
  };
  const Column columns[] = {{"p (on D)", "density_p", plot::ColourMap::Viridis, 0, vmax, "density"},
                            {"q (on D')", "density_q", plot::ColourMap::Viridis, 0, vmax, "density"},
                            {"log(p/q); grey: below a noise floor", "log_ratio", plot::ColourMap::Diverging, -rmax,
                             rmax, "log(p/q)"},
                            {"p - q", "difference", plot::ColourMap::Diverging, -dmax, dmax, "p - q"}};
  for (std::size_t row = 0; row < rows; ++row)
    for (int col = 0; col < 4; ++col) {
      const double left = col * panelW + 0.55, bottom = static_cast<double>(rows - 1 - row) * h + 1.2;
      Axes& ax = fig->addAxes({left * dpi, (H - bottom - (h - 0.55)) * dpi, (left + panelW - 0.75) * dpi,
                               (H - bottom) * dpi});
      plot::Item it;
      it.kind = plot::Item::Kind::HeatMap;
      it.role = columns[col].role;
      it.x = fields.faces[0];
      it.y = fields.faces[1];
      it.values = data[row][static_cast<std::size_t>(col)];
      it.map = columns[col].map;
      it.mapLo = columns[col].lo;
      it.mapHi = columns[col].hi;
      ax.add(std::move(it));
      ax.title = std::string(columns[col].name) + ", " + frameTitle(fields.frames[row], noisyGd) + zmid;
      ax.titlePx = 9;
      // every panel has the mesh's extent: tick values on the outer panels only
      ax.xTicks = ax.yTicks = 4;
      ax.xTickLabels = row == rows - 1;
      ax.yTickLabels = col == 0;
      ax.xLabel = "theta_1";
      ax.yLabel = "theta_2";
    }
  for (int col = 0; col < 4; ++col) {
    const double left = col * panelW + 0.55;
    fig->addColourBar({left * dpi, (H - 0.55) * dpi, (left + panelW - 0.75) * dpi, (H - 0.43) * dpi}, columns[col].map,
                      columns[col].lo, columns[col].hi, columns[col].label);
  }
  return fig;
}

}  // namespace

std::vector<double> logRatio(const std::vector<double>& p, const std::vector<double>& q) {
  const double fp = noiseFloor(p), fq = noiseFloor(q);
  std::vector<double> out(p.size(), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] > fp && q[i] > fq && p[i] > 0 && q[i] > 0) out[i] = std::log(p[i]) - std::log(q[i]);
  return out;
}

std::unique_ptr<plot::Figure> densityFigure(const Fields& fields, bool noisyGd) {
  return fields.dim == 1 ? curves(fields, noisyGd) : images(fields, noisyGd);
}

}  // namespace fpdp::app::plots
