#include "app/plots/RunFigures.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>

#include "app/platform/CommandLine.hpp"
#include "app/plots/DensityFigure.hpp"
#include "app/plots/FigureLayout.hpp"
#include "app/plots/RunFiles.hpp"
#include "app/run/OutputDirectory.hpp"
#include "app/run/OutputLock.hpp"
#include "io/plot/Figure.hpp"

namespace fpdp::app::plots {

using plot::Axes;
using plot::Colour;
using plot::Dash;
using plot::Item;
using plot::LineStyle;
using plot::MarkerShape;
using plot::MarkerStyle;
using plot::Scale;

namespace {

constexpr double kPt = 100.0 / 72.0;  // pixels per point at 100 dots per inch
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
const Colour kBlack = plot::grey(0), kMagenta{0.75, 0, 0.75}, kSuspectGrey = plot::grey(0.45);
const Colour kRed = plot::hexColour(0xd62728);

using StatusNames = std::map<int, std::string>;
const StatusNames kRenyiStatus{{2, "truncated_suspect"}, {3, "noise_suspect"}};
const StatusNames kEpsStatus{{4, "truncated_suspect"}, {5, "noise_limited"}};
// Per bound item 1..8; solid and filled: the gap S_g/n, dashed and hollow: the measured gap.
const MarkerShape kBoundMarkers[] = {MarkerShape::Circle, MarkerShape::Square, MarkerShape::Diamond,
                                     MarkerShape::TriangleDown, MarkerShape::Plus, MarkerShape::Cross,
                                     MarkerShape::Star, MarkerShape::Hexagon};

std::string suspectLabel(const std::string& status) {
  if (status == "truncated_suspect") return "truncated_suspect (box cuts the tail: underestimate): grey diamond";
  if (status == "noise_suspect") return "noise_suspect (rests on the noise floor): grey circle";
  return "noise_limited (eps not resolved): grey circle";
}

/// The colour of series `index`: matplotlib's tab10 without its red, which marks the values that are not certified,
/// and its grey, the colour of the suspect-status markers, so that a status is never mistaken for a series.
Colour seriesColour(int index) {
  static constexpr int kCycle[] = {0, 1, 2, 4, 5, 6, 8, 9};
  return plot::cycleColour(kCycle[index % 8]);
}

bool finite(double v) { return std::isfinite(v); }
bool usable(const std::vector<double>& v) { return std::any_of(v.begin(), v.end(), finite); }
const std::string kInfLabel = "+inf: filled triangle at the top edge (series colour)";

void logAxes(Axes& ax, bool logX = false) {
  ax.yScale = Scale::Log;
  if (logX) ax.xScale = Scale::Log;
  ax.grid = true;
}

struct SeriesStyle {
  Colour colour = kBlack;
  double width = 2.2;  // points
  Dash dash = Dash::Solid;
  std::optional<MarkerStyle> marker;
  int markEvery = 1, markOffset = 0;
  std::string role = "computed";
  double z = 3;
};

SeriesStyle styled(Colour colour, double width, Dash dash = Dash::Solid) {
  SeriesStyle s;
  s.colour = colour;
  s.width = width;
  s.dash = dash;
  return s;
}

/// y against x on a log axis: the finite positive values as a line; +inf as filled triangles at the top edge, values
/// <= 0 as hollow triangles at the bottom edge, suspect statuses as hollow grey circles. Returns how many finite
/// positive values were drawn.
std::size_t series(Axes& ax, const std::vector<double>& x, const std::vector<double>& y, const std::string& label,
                   const SeriesStyle& style, const std::vector<double>* status = nullptr,
                   const StatusNames& names = kRenyiStatus) {
  std::vector<double> gx, gy, infX, lowX;
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> suspect;
  std::vector<std::string> suspectOrder;
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    const double a = x[i], b = y[i];
    if (std::isnan(a) || std::isnan(b)) continue;
    if (b == std::numeric_limits<double>::infinity()) {
      infX.push_back(a);
      continue;
    }
    if (b <= 0) {
      lowX.push_back(a);
      continue;
    }
    gx.push_back(a);
    gy.push_back(b);
    const double s = status && i < status->size() ? (*status)[i] : kNaN;
    if (s >= 0 && s < 1000)  // a status code (a value outside the code tables is none of them)
      if (const auto it = names.find(static_cast<int>(s)); it != names.end()) {
        if (!suspect.count(it->second)) suspectOrder.push_back(it->second);
        suspect[it->second].first.push_back(a);
        suspect[it->second].second.push_back(b);
      }
  }
  if (!gx.empty()) {
    Item& it = ax.series(style.role, label, gx, gy, LineStyle{style.colour, style.width * kPt, style.dash}, style.marker,
                         style.z);
    it.markEvery = style.markEvery;
    it.markOffset = style.markOffset;
  }
  // The box's truncation a hollow grey diamond, the noise floor a hollow grey circle: told apart at a glance.
  for (const auto& name : suspectOrder)
    ax.series("suspect:" + name, suspectLabel(name), suspect[name].first, suspect[name].second, std::nullopt,
              MarkerStyle{name == "truncated_suspect" ? MarkerShape::Diamond : MarkerShape::Circle, 8 * kPt,
                          kSuspectGrey, false, kSuspectGrey, 1.5 * kPt},
              std::max(style.z + 5, 8.5));  // above the bounds' markers (z 8), which may sit on the same values
  if (!infX.empty()) {
    Item& m = ax.series("inf", kInfLabel, infX, std::vector<double>(infX.size(), 0.96), std::nullopt,
                        MarkerStyle{MarkerShape::TriangleUp, 7 * kPt, style.colour, true, style.colour, 1.0},
                        style.z + 6);
    m.yInAxes = true;
    Item t;
    t.kind = Item::Kind::Text;
    t.role = "inf_text";
    t.text = "+inf";
    t.x = {infX.front() };
    t.y = {0.90};
    t.yInAxes = true;
    t.colour = style.colour;
    t.textPx = 10;
    t.z = style.z + 6;
    ax.add(std::move(t));
  }
  if (!lowX.empty()) {
    Item& m = ax.series("nonpositive", "0 or below (off the log axis): hollow triangle at the bottom edge", lowX,
                        std::vector<double>(lowX.size(), 0.03), std::nullopt,
                        MarkerStyle{MarkerShape::TriangleDown, 5 * kPt, style.colour, false, style.colour, 1.0},
                        style.z + 6);
    m.yInAxes = true;
  }
  return gx.size();
}

/// A closed form: its finite positive values dashed, its +inf values as hollow magenta triangles near the top.
bool exactSeries(Axes& ax, const std::vector<double>& x, const std::vector<double>& y,
                 const std::string& label = "closed form (exact.csv)", Colour colour = kMagenta) {
  std::vector<double> gx, gy, infX;
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    if (std::isnan(x[i])) continue;
    if (finite(y[i]) && y[i] > 0) gx.push_back(x[i]), gy.push_back(y[i]);
    if (y[i] == std::numeric_limits<double>::infinity()) infX.push_back(x[i]);
  }
  if (!gx.empty()) ax.series("exact", label, gx, gy, LineStyle{colour, 1.3 * kPt, Dash::Dashed}, std::nullopt, 7);
  if (!infX.empty())
    ax.series("exact_inf", "closed form +inf", infX, std::vector<double>(infX.size(), 0.92), std::nullopt,
              MarkerStyle{MarkerShape::TriangleUp, 6 * kPt, kMagenta, false, kMagenta, 1.0}, 8)
        .yInAxes = true;
  return !gx.empty();
}

/// The error estimate of accuracy.csv: a band (series against step or time) or error bars (eps against delta).
Item errorEstimate(Item::Kind kind, Colour colour, double alpha, double z) {
  Item it;
  it.kind = kind;
  it.role = "error_band";
  it.label = "error estimate (accuracy.csv)";
  it.colour = colour;
  it.alpha = alpha;
  it.z = z;
  return it;
}

/// Values accuracy.csv does not certify: hollow red squares.
void markUncertified(Axes& ax, const std::vector<double>& x, const std::vector<double>& y) {
  if (!x.empty())
    ax.series("uncertified", "not certified (accuracy.csv): red square", x, y, std::nullopt,
              MarkerStyle{MarkerShape::Square, 5.5 * kPt, kRed, false, kRed, 1.2}, 9);
}

/// The error estimate of accuracy.csv as a band value +- estimate; uncertified values as hollow red squares.
void accuracyBand(Axes& ax, const std::vector<double>& x, const std::vector<double>& value,
                  const std::vector<double>& estimate, const std::vector<double>* certified, Colour colour) {
  Item band = errorEstimate(Item::Kind::Band, colour, 0.22, 2);
  std::vector<double> ux, uy;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = value[i], e = estimate[i];
    if (std::isnan(x[i]) || !finite(v) || v <= 0) continue;
    if (finite(e)) {
      band.x.push_back(x[i]);
      band.lo.push_back(std::max(v - e, v * 1e-3));
      band.hi.push_back(v + e);
    }
    if (certified && finite((*certified)[i]) && (*certified)[i] < 0.5) ux.push_back(x[i]), uy.push_back(v);
  }
  if (!band.x.empty()) ax.add(std::move(band));
  markUncertified(ax, ux, uy);
}

void withAccuracy(Axes& ax, const RunFiles& f, const std::string& key, Colour colour) {
  const Table& acc = f.accuracy;
  if (acc.empty() || !acc.has(key + "_error_estimate") || !acc.has(key)) return;
  accuracyBand(ax, acc[f.xColumn()], acc[key], acc[key + "_error_estimate"],
               acc.has(key + "_certified") ? &acc[key + "_certified"] : nullptr, colour);
}

const std::vector<double>* statusColumn(const Table& t, const std::string& order) {
  return t.has("status_renyi_" + order) ? &t["status_renyi_" + order] : nullptr;
}

std::string boundLabel(const RunFiles& f, int item, bool measured) {
  const auto it = f.boundNames.find(item);
  return std::to_string(item) + " " + (it == f.boundNames.end() ? std::string("bound") : it->second) +
         (measured ? " (measured gap)" : "");
}

/// renyi_bounds.png: one panel per order, R_alpha with its closed form, error band and every applicable bound.
void renyiBounds(Panels& p, const RunFiles& f) {
  const Table& div = f.divergence;
  if (f.orders.empty()) {
    Axes& ax = *p.axes[0][0];
    ax.noData = "divergence.csv has no Rényi order (divergence.orders)";
    ax.xLabel = f.xLabel();
    ax.yLabel = "R_alpha(p || q)  [nats]";
    ax.title = "Rényi divergences and their bounds";
  }
  const std::size_t perRow = p.axes[0].size();
  for (std::size_t k = 0; k < f.orders.size(); ++k) {
    Axes& ax = *p.axes[k / perRow][k % perRow];
    const std::string& order = f.orders[k];
    const std::string col = "renyi_" + order;
    logAxes(ax);
    SeriesStyle computed;
    computed.width = 3.2;
    bool shown = series(ax, div[f.xColumn()], div[col], "computed R_alpha", computed, statusColumn(div, order)) > 0;
    withAccuracy(ax, f, col, kBlack);
    if (!f.exact.empty() && f.exact.has(col + "_exact")) {
      exactSeries(ax, f.exact[f.xColumn()], f.exact[col + "_exact"]);
      shown = shown || usable(f.exact[col + "_exact"]);
    }
    for (int item = 1; item <= 8; ++item)
      for (const bool measured : {false, true}) {
        const std::string b =
            "bound" + std::to_string(item) + (measured ? "_measured_gap" : "") + "_renyi_" + order;
        if (!f.bounds.has(b)) continue;
        std::vector<double> bx, by;
        for (std::size_t i = 0; i < f.bounds.rows(); ++i)
          if (finite(f.bounds[b][i]) && f.bounds[b][i] > 0) bx.push_back(f.bounds[f.xColumn()][i]), by.push_back(f.bounds[b][i]);
        if (bx.empty()) continue;
        const Colour c = seriesColour(item - 1);
        const int every = std::max<int>(1, static_cast<int>(bx.size()) / 6);
        Item& line = ax.series("bound", boundLabel(f, item, measured), bx, by,
                               LineStyle{c, 1.1 * kPt, measured ? Dash::Dashed : Dash::Solid},
                               MarkerStyle{kBoundMarkers[item - 1], 4 * kPt, c, !measured, c, 1.0}, 8);
        line.markEvery = every;
        line.markOffset = every > 1 ? item % every : 0;
        shown = true;
      }
    if (!shown)
      ax.noData = std::any_of(div[col].begin(), div[col].end(), [](double v) { return std::isinf(v) && v > 0; })
                      ? "R_alpha = +inf at every output step"
                      : "no finite positive value";
    ax.xLabel = f.xLabel();
    ax.yLabel = "R_" + order + "(p || q)  [nats]";
    ax.title = "Rényi divergence of order " + order + " and its bounds";
  }
}

/// The column `prefix<delta>suffix` of `t` for each delta (matched to 1e-9 relative), "" where none.
std::vector<std::string> columnsByDelta(const Table& t, const std::string& suffix, const std::vector<double>& deltas) {
  const std::string prefix = "eps_exact_delta_";
  std::vector<std::string> out(deltas.size());
  for (const auto& name : t.header) {
    if (name.rfind(prefix, 0) != 0 || name.size() <= prefix.size() + suffix.size() ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    const std::string middle = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    char* end = nullptr;
    const double d = std::strtod(middle.c_str(), &end);
    if (end != middle.c_str() + middle.size()) continue;
    for (std::size_t i = 0; i < deltas.size(); ++i)
      if (out[i].empty() && std::abs(d - deltas[i]) <= 1e-9 * std::abs(deltas[i])) out[i] = name;
  }
  return out;
}

/// The value of column `col` in the last row of `t` at step `last` (NaN when none).
double atStep(const Table& t, const std::string& col, double last) {
  if (col.empty() || !t.has(col) || !t.has("step")) return kNaN;
  double v = kNaN;
  for (std::size_t i = 0; i < t.rows(); ++i)
    if (t["step"][i] == last) v = t[col][i];
  return v;
}

/// eps_exact's error bars and uncertified marks at the last step from accuracy.csv.
void epsilonAccuracy(Axes& ax, const Table& acc, const std::vector<double>& deltas, double last) {
  const auto names = columnsByDelta(acc, "", deltas);
  Item bars = errorEstimate(Item::Kind::ErrorBars, kBlack, 1.0, 9);
  std::vector<double> ux, uy;
  for (std::size_t i = 0; i < deltas.size(); ++i) {
    if (names[i].empty() || !acc.has(names[i] + "_error_estimate")) continue;
    const double v = atStep(acc, names[i], last), e = atStep(acc, names[i] + "_error_estimate", last);
    const double c = atStep(acc, names[i] + "_certified", last);
    if (!finite(v) || v <= 0) continue;
    if (finite(e)) {
      bars.x.push_back(deltas[i]);
      bars.y.push_back(v);
      bars.lo.push_back(std::min(e, 0.999 * v));
      bars.hi.push_back(e);
    }
    if (finite(c) && c < 0.5) ux.push_back(deltas[i]), uy.push_back(v);
  }
  if (!bars.x.empty()) ax.add(std::move(bars));
  markUncertified(ax, ux, uy);
}

/// epsilon_delta.png: eps(delta) at the last output step.
void epsilonDelta(Axes& ax, const RunFiles& f) {
  const Table& eps = f.epsilon;
  const double last = *std::max_element(eps["step"].begin(), eps["step"].end());
  std::vector<std::size_t> idx;
  for (std::size_t i = 0; i < eps.rows(); ++i)
    if (eps["step"][i] == last) idx.push_back(i);
  auto pick = [&](const std::string& col) {
    std::vector<double> v;
    for (const std::size_t i : idx) v.push_back(eps[col][i]);
    return v;
  };
  const std::vector<double> deltas = pick("delta");
  logAxes(ax, true);
  SeriesStyle exactEps;
  exactEps.width = 3.0;
  const std::vector<double> status = eps.has("eps_exact_status") ? pick("eps_exact_status") : std::vector<double>{};
  bool shown = series(ax, deltas, pick("eps_exact"), "eps_exact (root of delta(eps))", exactEps,
                      status.empty() ? nullptr : &status, kEpsStatus) > 0;
  if (!f.exact.empty()) {
    const auto names = columnsByDelta(f.exact, "_exact", deltas);
    std::vector<double> ys;
    for (const auto& name : names) ys.push_back(atStep(f.exact, name, last));
    if (usable(ys)) {
      exactSeries(ax, deltas, ys);
      shown = true;
    }
  }
  if (!f.accuracy.empty()) epsilonAccuracy(ax, f.accuracy, deltas, last);
  for (const auto& [col, dash, label] : {std::tuple{"eps_rdp_cks", Dash::Dashed, "computed R_alpha, CKS"},
                                         std::tuple{"eps_rdp_mironov", Dash::Dotted, "computed R_alpha, Mironov"}}) {
    if (!eps.has(col)) continue;
    SeriesStyle s = styled(plot::grey(0.25), 1.8, dash);
    s.role = "conversion";
    s.z = 4;
    shown = series(ax, deltas, pick(col), label, s) > 0 || shown;
  }
  for (int item = 1; item <= 8; ++item)
    for (const bool measured : {false, true}) {
      const std::string col = "eps_bound" + std::to_string(item) + (measured ? "_measured_gap" : "") + "_cks";
      if (!eps.has(col) || !usable(pick(col))) continue;
      const Colour c = seriesColour(item - 1);
      SeriesStyle s = styled(c, 1.1, measured ? Dash::Dashed : Dash::Solid);
      s.marker = MarkerStyle{kBoundMarkers[item - 1], 3.5 * kPt, c, !measured, c, 1.0};
      s.role = "bound";
      s.z = 8;
      shown = series(ax, deltas, pick(col), boundLabel(f, item, measured) + ", CKS", s) > 0 || shown;
    }
  if (!shown) ax.noData = "no finite eps at any delta";
  ax.xLabel = "delta";
  ax.yLabel = "eps  [nats]";
  char title[96];
  std::snprintf(title, sizeof title, "(eps, delta) at the last output step (%ld)", static_cast<long>(last));
  ax.title = title;
}

/// The rows of epsilon.csv at one delta: privacy.delta, or where the case is not known the delta nearest 1e-5.
double figureDelta(const RunFiles& f) {
  const auto& deltas = f.epsilon["delta"];
  double best = kNaN;
  for (const double d : deltas) {
    if (!(d > 0)) continue;
    if (f.privacyDelta > 0 && std::abs(d - f.privacyDelta) <= 1e-9 * f.privacyDelta) return d;
    if (std::isnan(best) || std::abs(std::log(d / 1e-5)) < std::abs(std::log(best / 1e-5))) best = d;
  }
  return best;
}

/// epsilon_steps.png: eps of the last iterate at privacy.delta against the step (noisy GD) or time (Langevin), with
/// its error estimate as a band and its uncertified values marked, beside the accountants' composition baseline
/// (every iterate released); a log x axis where the positive steps span two decades or more (CYS Figure 1).
void epsilonSteps(Axes& ax, const RunFiles& f) {
  const Table& eps = f.epsilon;
  const double delta = figureDelta(f);
  std::vector<double> x, y, status, composition;
  for (std::size_t i = 0; i < eps.rows(); ++i) {
    if (eps["delta"][i] != delta) continue;
    x.push_back(eps[f.xColumn()][i]);
    y.push_back(eps["eps_exact"][i]);
    status.push_back(eps.has("eps_exact_status") ? eps["eps_exact_status"][i] : kNaN);
    composition.push_back(eps.has("eps_composition") ? eps["eps_composition"][i] : kNaN);
  }
  double lo = kNaN, hi = kNaN;
  for (const double v : x)
    if (v > 0) lo = std::isnan(lo) ? v : std::min(lo, v), hi = std::isnan(hi) ? v : std::max(hi, v);
  const bool logX = hi >= 100 * lo;
  // a log axis cannot show step 0 (where eps is 0 anyway)
  const auto shown = [&](std::vector<double> v) {
    if (logX)
      for (double& a : v) a = a > 0 ? a : kNaN;
    return v;
  };
  logAxes(ax, logX);
  SeriesStyle computed;
  computed.width = 3.0;
  bool drawn = series(ax, shown(x), y, "eps_exact: the last iterate (fpdp)", computed, &status, kEpsStatus) > 0;
  if (!f.accuracy.empty()) {
    const std::string name = columnsByDelta(f.accuracy, "", {delta}).front();
    if (!name.empty() && f.accuracy.has(name + "_error_estimate"))
      accuracyBand(ax, shown(f.accuracy[f.xColumn()]), f.accuracy[name], f.accuracy[name + "_error_estimate"],
                   f.accuracy.has(name + "_certified") ? &f.accuracy[name + "_certified"] : nullptr, kBlack);
  }
  SeriesStyle baseline = styled(seriesColour(0), 2.0, Dash::Dashed);
  baseline.role = "composition";
  baseline.z = 4;
  drawn = series(ax, shown(x), composition, "every iterate released: composition (accountants)", baseline) > 0 ||
          drawn;
  if (!drawn) ax.noData = "no finite eps at any output step";
  ax.xLabel = f.xLabel() + (logX ? "  (log scale)" : "");
  char label[64];
  std::snprintf(label, sizeof label, "eps at delta = %g  [nats]", delta);
  ax.yLabel = label;
  ax.title = "eps of the last iterate and of every iterate";
}

/// step_contributions.png: R(eta(k+1)) - R(eta k) from tracing.csv, else the change between output steps.
void stepContributions(Axes& ax, const RunFiles& f) {
  logAxes(ax);
  bool shown = false;
  const Table& tr = f.tracing;
  if (!tr.empty() && tr.has("step") && tr.has("s")) {
    std::map<double, std::size_t> lastRow;  // per step, the row of the largest s (s = eta: the whole step)
    for (std::size_t i = 0; i < tr.rows(); ++i) {
      const auto it = lastRow.find(tr["step"][i]);
      if (it == lastRow.end() || tr["s"][i] >= tr["s"][it->second]) lastRow[tr["step"][i]] = i;
    }
    for (std::size_t j = 0; j < f.orders.size(); ++j) {
      const std::string col = "renyi_" + f.orders[j] + "_change_in_step";
      if (!tr.has(col)) continue;
      const auto* st = statusColumn(tr, f.orders[j]);
      std::vector<double> x, y, s;
      for (const auto& [k, row] : lastRow) {
        x.push_back(k + 1);
        y.push_back(tr[col][row]);
        s.push_back(st ? (*st)[row] : kNaN);
      }
      const SeriesStyle style = styled(seriesColour(static_cast<int>(j)), 1.5);
      shown = series(ax, x, y, "R_" + f.orders[j] + ": R(eta(k+1)) - R(eta k) (tracing)", style, &s) > 0 || shown;
    }
    ax.xLabel = "step k + 1";
  } else {
    const Table& div = f.divergence;
    for (std::size_t j = 0; j < f.orders.size(); ++j) {
      const auto& r = div["renyi_" + f.orders[j]];
      const auto& x = div[f.xColumn()];
      const auto* st = statusColumn(div, f.orders[j]);
      std::vector<double> dx, dr, ds;
      for (std::size_t i = 0; i + 1 < r.size(); ++i) {
        const double a = r[i], b = r[i + 1];
        dx.push_back(x[i + 1]);
        ds.push_back(st ? (*st)[i + 1] : kNaN);
        if (std::isinf(b) && b > 0 && !std::isinf(a)) dr.push_back(b);
        else if (std::isinf(a) || std::isinf(b)) dr.push_back(kNaN);  // inf - inf: no change to show
        else dr.push_back(b - a);
      }
      const SeriesStyle style = styled(seriesColour(static_cast<int>(j)), 1.5);
      shown = series(ax, dx, dr, "R_" + f.orders[j] + ": change between output steps", style, &ds) > 0 || shown;
    }
    ax.xLabel = f.xLabel();
  }
  if (!shown) ax.noData = "no positive increase to show";
  ax.yLabel = "increase of R_alpha  [nats]";
  ax.title = "per-step contributions";
}

/// divergences.png: KL, TV and R_alpha with their closed forms and error bands.
void divergenceSeries(Axes& ax, const RunFiles& f) {
  logAxes(ax);
  const Table& div = f.divergence;
  std::vector<std::tuple<std::string, std::string, const std::vector<double>*>> list = {
      {"kl", "KL(p || q)", nullptr}, {"tv", "TV(p, q)", nullptr}};
  for (const auto& o : f.orders) list.emplace_back("renyi_" + o, "R_" + o + "(p || q)", statusColumn(div, o));
  bool shown = false;
  for (std::size_t j = 0; j < list.size(); ++j) {
    const auto& [col, label, status] = list[j];
    if (!div.has(col)) continue;
    const Colour c = seriesColour(static_cast<int>(j));
    shown = series(ax, div[f.xColumn()], div[col], label, styled(c, 1.8), status) > 0 || shown;
    withAccuracy(ax, f, col, c);
    // in the series' colour, darker, so that each closed form is told from the others
    if (!f.exact.empty() && f.exact.has(col + "_exact"))
      exactSeries(ax, f.exact[f.xColumn()], f.exact[col + "_exact"], "closed forms: dashed (exact.csv)",
                  plot::shade(c, 0.55));
  }
  if (!shown) ax.noData = "no finite positive divergence";
  ax.xLabel = f.xLabel();
  ax.yLabel = "divergence  [nats; TV: probability]";
  ax.title = "divergences between p (on D) and q (on D')";
}

}  // namespace

namespace {

struct NamedFigure {
  std::string name;
  std::unique_ptr<plot::Figure> figure;
};

/// The orders the figures draw: every one up to kOrdersDrawn, else kOrdersDrawn of them spread evenly in
/// log(alpha - 1) from the first to the last (the dense grid: 1.1, 1.6, 5, 26, 128, 1024). Every order stays
/// in divergence.csv, renyi.csv and fpdp.h5; the figures say how many they show.
constexpr std::size_t kOrdersDrawn = 6;
std::vector<std::string> drawnOrders(const std::vector<std::string>& orders) {
  if (orders.size() <= kOrdersDrawn) return orders;
  std::vector<double> scale;
  for (const auto& o : orders) {
    const double alpha = std::strtod(o.c_str(), nullptr);
    scale.push_back(alpha > 1 ? std::log(alpha - 1) : kNaN);
  }
  double lo = kNaN, hi = kNaN;
  for (const double v : scale)
    if (finite(v)) lo = std::isnan(lo) ? v : std::min(lo, v), hi = std::isnan(hi) ? v : std::max(hi, v);
  std::vector<bool> chosen(orders.size(), false);
  for (std::size_t k = 0; k < kOrdersDrawn; ++k) {
    const double target = lo + (hi - lo) * static_cast<double>(k) / (kOrdersDrawn - 1);
    std::size_t best = orders.size();
    for (std::size_t i = 0; i < orders.size(); ++i)
      if (!chosen[i] && finite(scale[i]) &&
          (best == orders.size() || std::abs(scale[i] - target) < std::abs(scale[best] - target)))
        best = i;
    if (best < orders.size()) chosen[best] = true;
  }
  std::vector<std::string> drawn;
  for (std::size_t i = 0; i < orders.size(); ++i)
    if (chosen[i]) drawn.push_back(orders[i]);
  return drawn;
}

// Widths (inches): every legend panel is kLegendWidth; single panels are widened by makeFigure to keep it at most a
// quarter of the figure.
constexpr double kLegendWidth = 2.4;

/// Every figure of the run, laid out but not yet rendered.
std::vector<NamedFigure> runFigures(const std::string& dir) {
  RunFiles f = readRunFiles(dir);
  const std::size_t allOrders = f.orders.size();
  f.orders = drawnOrders(f.orders);
  const std::vector<std::string> note =
      allOrders > f.orders.size()
          ? std::vector<std::string>{std::to_string(f.orders.size()) + " of " + std::to_string(allOrders) +
                                         " Rényi orders drawn;",
                                     "every order is in divergence.csv,", "renyi.csv and fpdp.h5"}
          : std::vector<std::string>{};
  std::vector<NamedFigure> figures;
  {
    const int orders = std::max<int>(1, static_cast<int>(f.orders.size()));
    const int rows = orders == 6 ? 2 : 1;  // six panels in two rows of three
    Panels p = makeFigure(orders / rows, 4.2, 3.6, kLegendWidth, rows, note);
    renyiBounds(p, f);
    figures.push_back({"renyi_bounds.png", std::move(p.figure)});
  }
  const bool epsilonTable =
      f.epsilon.rows() > 0 && f.epsilon.has("step") && f.epsilon.has("delta") && f.epsilon.has("eps_exact");
  if (epsilonTable) {
    Panels p = makeFigure(1, 5.2, 4.0, kLegendWidth);
    epsilonDelta(*p.axes[0][0], f);
    figures.push_back({"epsilon_delta.png", std::move(p.figure)});
  }
  if (epsilonTable && f.epsilon.has(f.xColumn())) {
    Panels p = makeFigure(1, 5.2, 4.0, kLegendWidth);
    epsilonSteps(*p.axes[0][0], f);
    figures.push_back({"epsilon_steps.png", std::move(p.figure)});
  }
  {
    Panels p = makeFigure(1, 5.2, 4.0, kLegendWidth, 1, note);
    stepContributions(*p.axes[0][0], f);
    figures.push_back({"step_contributions.png", std::move(p.figure)});
  }
  {
    Panels p = makeFigure(1, 5.2, 4.0, kLegendWidth, 1, note);
    divergenceSeries(*p.axes[0][0], f);
    figures.push_back({"divergences.png", std::move(p.figure)});
  }
  const Fields fields = readFields(dir);
  if (!fields.frames.empty()) figures.push_back({"densities.png", densityFigure(fields, f.noisyGd)});
  return figures;
}

}  // namespace

PlotOutcome drawRunPlots(const std::string& dir, bool describe) {
  std::vector<NamedFigure> figures = runFigures(dir);
  const std::string fontPath = plot::defaultFontPath();
  // a font that cannot be loaded is reported before any file is written
  auto firstFont = std::make_unique<plot::Font>(fontPath);
  // Rendering and PNG encoding are most of the time: the figures are shared among up to two threads (each with
  // its own FreeType instance), the machine's cores drawing side by side.
  std::atomic<std::size_t> next{0};
  std::vector<std::string> errors(figures.size());
  auto work = [&](std::unique_ptr<plot::Font> font) {
    for (std::size_t i = next++; i < figures.size(); i = next++) {
      try {
        if (!font) font = std::make_unique<plot::Font>(fontPath);
        figures[i].figure->render(*font);
        figures[i].figure->raster().writePng((std::filesystem::path(dir) / figures[i].name).string());
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    }
  };
  {
    std::optional<std::jthread> helper;
    if (std::thread::hardware_concurrency() >= 2) helper.emplace(work, nullptr);
    work(std::move(firstFont));
  }
  PlotOutcome out;
  for (std::size_t i = 0; i < figures.size(); ++i) {
    if (!errors[i].empty()) throw std::runtime_error(figures[i].name + ": " + errors[i]);
    out.written.push_back((std::filesystem::path(dir) / figures[i].name).string());
    if (describe) out.description += std::string(i ? ",\n " : "[") + figures[i].figure->describe(figures[i].name);
  }
  if (describe) out.description += "]";
  return out;
}

std::string drawRunPlotsOrWarn(const std::string& dir) {
  try {
    drawRunPlots(dir, false);
    return "";
  } catch (const std::exception& e) {
    return std::string("plotting failed: ") + e.what();
  }
}

int plotCommand(int argc, char** argv) {
  bool describe = false;
  std::vector<std::string> dirs;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--describe") describe = true;
    else if (a == "--help" || a == "-h") {
      std::fputs(helpText().c_str(), stdout);
      return 0;
    } else if (a.rfind("-", 0) == 0) {
      std::fprintf(stderr, "fpdp: error: unknown option '%s' of 'fpdp plot'; allowed: --describe, --help\n", a.c_str());
      return 2;
    } else dirs.push_back(a);
  }
  if (dirs.size() != 1) {
    std::fprintf(stderr, "fpdp: error: 'fpdp plot' takes exactly one output directory, got %zu: fpdp plot "
                         "[--describe] DIR\n", dirs.size());
    return 2;
  }
  std::string dir;
  std::optional<OutputLock> lock;
  try {
    // Only into a directory fpdp made (its owner mark), and as its one writer (app/run/OutputLock): a folder of
    // someone else's PNGs is not overwritten, and a run or another plot of the same directory is not raced. The
    // directory is written by its real path, so that a link the user gave is followed once, here, and never below it.
    std::error_code ec;
    const auto status = std::filesystem::status(dirs[0], ec);
    if (!std::filesystem::is_directory(status))
      throw OutputDirectoryError("'" + dirs[0] + "' is not a directory");
    dir = std::filesystem::canonical(dirs[0], ec).string();
    if (ec || !hasOwnerMark(dir))
      throw OutputDirectoryError("'" + dirs[0] + "' was not made by fpdp (no " + kOwnerMark + "): fpdp plot draws "
                                 "only into fpdp's own output directories");
    std::string owner = normaliseOutputDirectory(dirs[0]);
    for (const std::string suffix : {".partial", ".sample-partial"})
      if (owner.size() > suffix.size() && owner.compare(owner.size() - suffix.size(), suffix.size(), suffix) == 0)
        owner.resize(owner.size() - suffix.size());
    lock.emplace(owner);
  } catch (const OutputDirectoryError& e) {
    std::fprintf(stderr, "fpdp: error: %s\n", e.what());
    return 2;
  }
  try {
    const auto start = std::chrono::steady_clock::now();
    const PlotOutcome out = drawRunPlots(dir, describe);
    std::vector<std::string> written;
    for (const auto& p : out.written) written.push_back(std::filesystem::path(p).filename().string());
    addToManifest(dir, written);
    if (describe) std::printf("%s\n", out.description.c_str());
    std::string names;
    for (const auto& p : out.written) names += (names.empty() ? "" : ", ") + std::filesystem::path(p).filename().string();
    std::printf("wrote %s (%.3f s)\n", names.c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fpdp: plot failed: %s\n", e.what());
    return 1;
  }
}

}  // namespace fpdp::app::plots
