#include "io/plot/Figure.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace fpdp::plot {

namespace {

// Sampled from matplotlib's viridis (17 points) and RdBu_r (11 points, ColorBrewer's RdBu reversed); linear between
// the samples: within 6/255 of the maps themselves.
constexpr std::array<unsigned, 17> kViridis = {0x440154, 0x48186a, 0x472d7b, 0x424086, 0x3b528b, 0x33638d,
                                               0x2c728e, 0x26828e, 0x21918c, 0x1fa088, 0x28ae80, 0x3fbc73,
                                               0x5ec962, 0x84d44b, 0xaddc30, 0xd8e219, 0xfde725};
constexpr std::array<unsigned, 11> kDiverging = {0x053061, 0x2065ab, 0x4393c3, 0x90c4dd, 0xd1e5f0, 0xf7f6f6,
                                                 0xfddbc7, 0xf3a481, 0xd6604d, 0xb1182b, 0x67001f};
constexpr std::array<unsigned, 10> kTab10 = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                             0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};

template <std::size_t N>
Colour sample(const std::array<unsigned, N>& table, double t) {
  const double s = std::clamp(t, 0.0, 1.0) * (N - 1);
  const auto i = std::min(static_cast<std::size_t>(s), N - 2);
  const double f = s - static_cast<double>(i);
  const Colour a = hexColour(table[i]), b = hexColour(table[i + 1]);
  return {a.r + f * (b.r - a.r), a.g + f * (b.g - a.g), a.b + f * (b.b - a.b)};
}

double scaled(Scale s, double v) { return s == Scale::Log ? std::log10(v) : v; }
double unscaled(Scale s, double v) { return s == Scale::Log ? std::pow(10.0, v) : v; }
bool showable(Scale s, double v) { return std::isfinite(v) && (s == Scale::Linear || v > 0); }

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += std::string("\\") + c;
    else if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) out += ' ';
    else out += c;
  }
  return out + "\"";
}

std::string dashCode(const Item& item) {
  if (!item.line) return "None";
  return item.line->dash == Dash::Solid ? "-" : item.line->dash == Dash::Dashed ? "--" : ":";
}

/// #rrggbb of the colour an element is seen in: its line's, else its marker's edge, else its own (bands, texts).
std::string colourCode(const Item& item) {
  const Colour c = item.line ? item.line->colour : item.marker ? item.marker->edge : item.colour;
  char hex[8];
  const auto byte = [](double v) { return static_cast<int>(std::lround(std::clamp(v, 0.0, 1.0) * 255)); };
  std::snprintf(hex, sizeof hex, "#%02x%02x%02x", byte(c.r), byte(c.g), byte(c.b));
  return hex;
}

std::string markerCode(const Item& item) {
  if (!item.marker) return "";
  static const char* codes[] = {"o", "s", "D", "^", "v", "P", "X", "*", "h"};
  return codes[static_cast<int>(item.marker->shape)];
}

/// Data limits of the panel's items along one axis, with a margin of 5 % of the span (in the scale's units).
std::pair<double, double> dataRange(const Axes& ax, bool alongX, Scale scale) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  bool image = false;
  auto take = [&](double v) {
    if (showable(scale, v)) lo = std::min(lo, scaled(scale, v)), hi = std::max(hi, scaled(scale, v));
  };
  for (const Item& it : ax.items()) {
    if (it.kind == Item::Kind::Text) continue;
    if (it.kind == Item::Kind::HeatMap) image = true;
    if (alongX) {
      for (const double v : it.x) take(v);
    } else if (it.kind == Item::Kind::Band) {
      for (const double v : it.lo) take(v);
      for (const double v : it.hi) take(v);
    } else if (it.kind == Item::Kind::ErrorBars) {
      for (std::size_t i = 0; i < it.y.size(); ++i) take(it.y[i] - it.lo[i]), take(it.y[i] + it.hi[i]);
    } else if (!it.yInAxes) {
      for (const double v : it.y) take(v);
    }
  }
  if (!(lo <= hi)) return scale == Scale::Log ? std::pair{0.0, 1.0} : std::pair{0.0, 1.0};
  if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {
    const double pad = scale == Scale::Log ? 0.5 : std::max(std::abs(hi) * 0.1, 0.5);
    return {lo - pad, hi + pad};
  }
  const double margin = image ? 0.0 : 0.05 * (hi - lo);
  return {lo - margin, hi + margin};
}

}  // namespace

Colour mapColour(ColourMap map, double t) {
  if (std::isnan(t)) return grey(0.75);
  // 1024 levels per map, sampled once: a heat map looks a colour up for every pixel
  constexpr int kLevels = 1024;
  static const auto tables = [] {
    std::array<std::vector<Colour>, 2> t;
    for (int i = 0; i < kLevels; ++i) {
      t[0].push_back(sample(kViridis, i / (kLevels - 1.0)));
      t[1].push_back(sample(kDiverging, i / (kLevels - 1.0)));
    }
    return t;
  }();
  const auto i = static_cast<std::size_t>(std::lround(std::clamp(t, 0.0, 1.0) * (kLevels - 1)));
  return tables[map == ColourMap::Viridis ? 0 : 1][i];
}

Colour cycleColour(int index) { return hexColour(kTab10[static_cast<std::size_t>(index) % kTab10.size()]); }

std::vector<double> chooseTicks(Scale scale, double lo, double hi, int count) {
  std::vector<double> ticks;
  if (!(hi > lo) || count < 1) return ticks;
  if (scale == Scale::Log) {
    const double dlo = std::log10(lo), dhi = std::log10(hi);
    if (dhi - dlo < 2) {
      for (const auto& subs : {std::vector<int>{1, 2, 5}, std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9}}) {
        ticks.clear();
        for (int e = static_cast<int>(std::floor(dlo)); e <= static_cast<int>(std::ceil(dhi)); ++e)
          for (const int k : subs) {
            const double v = k * std::pow(10.0, e);
            if (v >= lo * (1 - 1e-12) && v <= hi * (1 + 1e-12)) ticks.push_back(v);
          }
        if (ticks.size() >= 2) return ticks;
      }
      return chooseTicks(Scale::Linear, lo, hi, count);
    }
    const int e0 = static_cast<int>(std::ceil(dlo - 1e-9)), e1 = static_cast<int>(std::floor(dhi + 1e-9));
    const int stride = std::max(1, (e1 - e0 + count) / count);
    for (int e = e0; e <= e1; ++e)
      if (((e % stride) + stride) % stride == 0) ticks.push_back(std::pow(10.0, e));
    return ticks;
  }
  const double raw = (hi - lo) / count, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = 10 * magnitude;
  for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if ((hi - lo) / (m * magnitude) <= count) {
      step = m * magnitude;
      break;
    }
  for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + 1e-9 * step; v += step)
    ticks.push_back(std::abs(v) < 1e-9 * step ? 0.0 : v);
  return ticks;
}

std::string tickLabel(Scale scale, double value, double spacing, bool narrow) {
  char b[32];
  if (scale == Scale::Log) {
    const double e = std::log10(value);
    if (!narrow && std::abs(e - std::round(e)) < 1e-9) {
      const int k = static_cast<int>(std::round(e));
      if (k >= -1 && k <= 1) return k == -1 ? "0.1" : k == 0 ? "1" : "10";
      std::snprintf(b, sizeof b, "%.0e", value);
      return b;
    }
    std::snprintf(b, sizeof b, "%.3g", value);
    return b;
  }
  if (value != 0 && (std::abs(value) >= 1e5 || spacing < 1e-4)) {
    std::snprintf(b, sizeof b, "%.3g", value);
    return b;
  }
  const double m = spacing / std::pow(10.0, std::floor(std::log10(spacing) + 1e-9));
  const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(spacing) + 1e-9))) +
                       (std::abs(m - 2.5) < 1e-6 ? 1 : 0);
  std::snprintf(b, sizeof b, "%.*f", decimals, value);
  const std::string s = b;
  return s.find_first_not_of("-0.") == std::string::npos ? std::string("0") : s;
}

Item& Axes::add(Item item) { return items_.emplace_back(std::move(item)); }

Item& Axes::series(std::string role, std::string label, std::vector<double> x, std::vector<double> y,
                   std::optional<LineStyle> line, std::optional<MarkerStyle> marker, double z) {
  Item it;
  it.role = std::move(role);
  it.label = std::move(label);
  it.x = std::move(x);
  it.y = std::move(y);
  it.line = line;
  it.marker = marker;
  it.z = z;
  return add(std::move(it));
}

Point Axes::toPixel(double x, double y) const {
  const double fx = (scaled(xScale, x) - xr_.first) / (xr_.second - xr_.first);
  const double fy = (scaled(yScale, y) - yr_.first) / (yr_.second - yr_.first);
  return {box.x0 + fx * box.width(), box.y1 - fy * box.height()};
}

Figure::Figure(int width, int height) : raster_(width, height) {}

Axes& Figure::addAxes(Box box) { return axes_.emplace_back(box); }

void Figure::addColourBar(Box box, ColourMap map, double lo, double hi, const std::string& label) {
  Axes& bar = addAxes(box);
  bar.role = "colorbar";
  bar.xLimits = {lo, hi};
  bar.yLimits = {0, 1};
  bar.yTickLabels = false;
  bar.yTicks = 0;
  bar.xTicks = 4;
  bar.xLabel = label;
  Item it;
  it.kind = Item::Kind::HeatMap;
  it.role = "colour_scale";
  const int n = 256;
  for (int i = 0; i <= n; ++i) it.x.push_back(lo + (hi - lo) * i / n);
  it.y = {0, 1};
  for (int i = 0; i < n; ++i) it.values.push_back(lo + (hi - lo) * (i + 0.5) / n);
  it.map = map;
  it.mapLo = lo;
  it.mapHi = hi;
  bar.add(std::move(it));
}

void Figure::addText(std::string text, Point at, int px, HAlign h, VAlign v) {
  texts_.push_back({std::move(text), at, px, h, v});
}

void Figure::render(Font& font) {
  std::set<std::string> seen;
  legend_.clear();
  for (Axes& ax : axes_) {
    renderAxes(ax, font);
    for (const Item& it : ax.items())
      if (!it.label.empty() && seen.insert(it.label).second) legend_.push_back({it.label, &it});
  }
  if (legendPanel_) renderLegend(font);
  for (const FreeText& t : texts_) font.draw(raster_, t.text, t.at, t.px, grey(0), t.h, t.v);
}

void Figure::renderLegend(Font& font) {
  const Box panel = *legendPanel_;
  const double handleWidth = 30, gap = 6;
  // A long legend is set smaller (down to 7 pixels) rather than run off the figure.
  int px = legendPx_;
  auto height = [&](int size) {
    double h = 0;
    for (const LegendEntry& e : legend_)
      h += static_cast<double>(font.wrap(e.label, size, panel.width() - handleWidth - gap).size()) *
               (font.ascent(size) + font.descent(size) + 1) + 3;
    return h;
  };
  while (px > 7 && height(px) > panel.height()) --px;
  const double lineHeight = font.ascent(px) + font.descent(px) + 1;
  double y = panel.y0;
  Box covered{panel.x0, panel.y0, panel.x0, panel.y0};
  for (const LegendEntry& e : legend_) {
    const auto lines = font.wrap(e.label, px, panel.width() - handleWidth - gap);
    const double middle = y + lineHeight / 2;
    const Item& h = *e.handle;
    const double hx0 = panel.x0 + 2, hx1 = panel.x0 + handleWidth - 2, hm = (hx0 + hx1) / 2;
    if (h.kind == Item::Kind::Band) {
      raster_.fillRect({hx0, middle - 4, hx1, middle + 4}, h.colour, h.alpha);
    } else if (h.kind == Item::Kind::ErrorBars) {
      raster_.polyline({{hm, middle - 5}, {hm, middle + 5}}, 1.0, h.colour);
      raster_.polyline({{hm - 3, middle - 5}, {hm + 3, middle - 5}}, 1.0, h.colour);
      raster_.polyline({{hm - 3, middle + 5}, {hm + 3, middle + 5}}, 1.0, h.colour);
    } else {
      if (h.line) raster_.polyline({{hx0, middle}, {hx1, middle}}, h.line->width, h.line->colour, h.line->dash);
      if (h.marker)
        raster_.marker({hm, middle}, h.marker->shape, h.marker->size, h.marker->edge, h.marker->filled,
                       h.marker->face, h.marker->edgeWidth);
    }
    for (const std::string& line : lines) {
      const Box b = font.draw(raster_, line, {panel.x0 + handleWidth + gap, y}, px, grey(0), HAlign::Left,
                              VAlign::Top);
      covered.x1 = std::max(covered.x1, b.x1);
      y += lineHeight;
    }
    y += 3;
    covered.y1 = y;
  }
  legendBox_ = legend_.empty() ? std::nullopt : std::optional<Box>(covered);
}

void Figure::renderAxes(Axes& ax, Font& font) {
  const Box& b = ax.box;
  const auto xd = dataRange(ax, true, ax.xScale), yd = dataRange(ax, false, ax.yScale);
  ax.xr_ = ax.xLimits ? std::pair{scaled(ax.xScale, ax.xLimits->first), scaled(ax.xScale, ax.xLimits->second)} : xd;
  ax.yr_ = ax.yLimits ? std::pair{scaled(ax.yScale, ax.yLimits->first), scaled(ax.yScale, ax.yLimits->second)} : yd;
  if (ax.yBottom && showable(ax.yScale, *ax.yBottom)) ax.yr_.first = scaled(ax.yScale, *ax.yBottom);
  if (!(ax.yr_.second > ax.yr_.first)) ax.yr_.second = ax.yr_.first + 1;
  const double xlo = unscaled(ax.xScale, ax.xr_.first), xhi = unscaled(ax.xScale, ax.xr_.second);
  const double ylo = unscaled(ax.yScale, ax.yr_.first), yhi = unscaled(ax.yScale, ax.yr_.second);
  ax.xTickValues_ = ax.xTicks > 0 ? chooseTicks(ax.xScale, xlo, xhi, ax.xTicks) : std::vector<double>{};
  ax.yTickValues_ = ax.yTicks > 0 && ax.noData.empty() ? chooseTicks(ax.yScale, ylo, yhi, ax.yTicks)
                                                       : std::vector<double>{};
  const Colour faint = grey(0.82);
  if (ax.grid) {
    for (const double v : ax.xTickValues_) {
      const double px = ax.toPixel(v, ylo).x;
      raster_.polyline({{px, b.y0}, {px, b.y1}}, 0.8, faint);
    }
    for (const double v : ax.yTickValues_) {
      const double py = ax.toPixel(xlo, v).y;
      raster_.polyline({{b.x0, py}, {b.x1, py}}, 0.8, faint);
    }
  }
  std::vector<const Item*> order;
  for (const Item& it : ax.items()) order.push_back(&it);
  std::stable_sort(order.begin(), order.end(), [](const Item* a, const Item* c) { return a->z < c->z; });
  for (const Item* it : order) {
    if (!it->yInAxes && it->kind != Item::Kind::Text) raster_.setClip(b);
    renderItem(ax, *it, font);
    raster_.clearClip();
  }
  renderFrame(ax, font);
}

void Figure::renderItem(const Axes& ax, const Item& item, Font& font) {
  const Box& b = ax.box;
  const double xlo = unscaled(ax.xScale, ax.xr_.first), ylo = unscaled(ax.yScale, ax.yr_.first);
  auto at = [&](std::size_t i) {
    Point p = ax.toPixel(item.x[i], item.yInAxes ? ylo : item.y[i]);
    if (item.yInAxes) p.y = b.y1 - item.y[i] * b.height();
    return p;
  };
  auto pointShown = [&](std::size_t i) {
    return showable(ax.xScale, item.x[i]) && (item.yInAxes || showable(ax.yScale, item.y[i]));
  };
  switch (item.kind) {
    case Item::Kind::Series: {
      if (item.line) {
        std::vector<Point> run;
        for (std::size_t i = 0; i <= item.x.size(); ++i) {
          if (i < item.x.size() && pointShown(i)) {
            run.push_back(at(i));
            continue;
          }
          // a lone point between gaps is drawn as a dot of the line's width
          if (!run.empty()) raster_.polyline(run, item.line->width, item.line->colour, item.line->dash);
          run.clear();
        }
      }
      if (item.marker)
        for (std::size_t i = static_cast<std::size_t>(item.markOffset); i < item.x.size();
             i += static_cast<std::size_t>(std::max(1, item.markEvery)))
          if (pointShown(i))
            raster_.marker(at(i), item.marker->shape, item.marker->size, item.marker->edge, item.marker->filled,
                           item.marker->face, item.marker->edgeWidth);
      break;
    }
    case Item::Kind::Band: {
      std::vector<double> px, lo, hi;
      for (std::size_t i = 0; i < item.x.size(); ++i) {
        if (!showable(ax.xScale, item.x[i]) || !showable(ax.yScale, item.lo[i]) || !showable(ax.yScale, item.hi[i]))
          continue;
        px.push_back(ax.toPixel(item.x[i], ylo).x);
        lo.push_back(ax.toPixel(xlo, item.lo[i]).y);
        hi.push_back(ax.toPixel(xlo, item.hi[i]).y);
      }
      raster_.fillBetween(px, lo, hi, item.colour, item.alpha);
      break;
    }
    case Item::Kind::ErrorBars:
      for (std::size_t i = 0; i < item.x.size(); ++i) {
        const double lo = item.y[i] - item.lo[i], hi = item.y[i] + item.hi[i];
        if (!showable(ax.xScale, item.x[i]) || !showable(ax.yScale, lo) || !showable(ax.yScale, hi)) continue;
        const Point a = ax.toPixel(item.x[i], lo), c = ax.toPixel(item.x[i], hi);
        raster_.polyline({a, c}, 1.0, item.colour);
        raster_.polyline({{a.x - 3, a.y}, {a.x + 3, a.y}}, 1.0, item.colour);
        raster_.polyline({{c.x - 3, c.y}, {c.x + 3, c.y}}, 1.0, item.colour);
      }
      break;
    case Item::Kind::Text:
      for (std::size_t i = 0; i < item.x.size(); ++i)
        font.draw(raster_, item.text, at(i), item.textPx, item.colour, item.hAlign, item.vAlign);
      break;
    case Item::Kind::HeatMap: {
      // Each pixel takes the value of the cell its centre falls in (faces may be non-uniform).
      const std::size_t nx = item.x.size() - 1, ny = item.y.size() - 1;
      const int i0 = static_cast<int>(b.x0), i1 = static_cast<int>(std::ceil(b.x1));
      std::vector<std::ptrdiff_t> columns;  // the cell column of each pixel column (-1: outside)
      for (int i = i0; i < i1; ++i) {
        const double xv = unscaled(ax.xScale, ax.xr_.first + (i + 0.5 - b.x0) / b.width() *
                                                                (ax.xr_.second - ax.xr_.first));
        const auto col = std::upper_bound(item.x.begin(), item.x.end(), xv) - item.x.begin() - 1;
        columns.push_back(col >= 0 && static_cast<std::size_t>(col) < nx ? col : -1);
      }
      for (int j = static_cast<int>(b.y0); j < static_cast<int>(std::ceil(b.y1)); ++j) {
        const double yv = unscaled(ax.yScale, ax.yr_.first + (b.y1 - (j + 0.5)) / b.height() *
                                                                 (ax.yr_.second - ax.yr_.first));
        const auto row = std::upper_bound(item.y.begin(), item.y.end(), yv) - item.y.begin() - 1;
        if (row < 0 || static_cast<std::size_t>(row) >= ny) continue;
        for (int i = i0; i < i1; ++i) {
          const std::ptrdiff_t col = columns[static_cast<std::size_t>(i - i0)];
          if (col < 0) continue;
          const double v = item.values[static_cast<std::size_t>(row) * nx + static_cast<std::size_t>(col)];
          raster_.blend(i, j, mapColour(item.map, (v - item.mapLo) / (item.mapHi - item.mapLo)), 1.0);
        }
      }
      break;
    }
  }
}

void Figure::renderFrame(const Axes& ax, Font& font) {
  const Box& b = ax.box;
  const Colour ink = grey(0);
  const double xlo = unscaled(ax.xScale, ax.xr_.first), xhi = unscaled(ax.xScale, ax.xr_.second);
  const double ylo = unscaled(ax.yScale, ax.yr_.first), yhi = unscaled(ax.yScale, ax.yr_.second);
  raster_.polyline({{b.x0, b.y0}, {b.x1, b.y0}, {b.x1, b.y1}, {b.x0, b.y1}, {b.x0, b.y0}}, 1.0, ink);
  const int tickPx = ax.role == "colorbar" ? 9 : 10;
  const double xSpacing = ax.xTickValues_.size() > 1 ? ax.xTickValues_[1] - ax.xTickValues_[0] : 1.0;
  const double ySpacing = ax.yTickValues_.size() > 1 ? ax.yTickValues_[1] - ax.yTickValues_[0] : 1.0;
  double below = b.y1 + 2;
  for (const double v : ax.xTickValues_) {
    const double px = ax.toPixel(v, ylo).x;
    raster_.polyline({{px, b.y1}, {px, b.y1 + 3.5}}, 1.0, ink);
    if (ax.xTickLabels) {
      const Box t = font.draw(raster_, tickLabel(ax.xScale, v, xSpacing, xhi < 100 * xlo), {px, b.y1 + 5}, tickPx, ink, HAlign::Centre,
                              VAlign::Top);
      below = std::max(below, t.y1);
    }
  }
  double left = b.x0 - 2;
  for (const double v : ax.yTickValues_) {
    const double py = ax.toPixel(xlo, v).y;
    raster_.polyline({{b.x0 - 3.5, py}, {b.x0, py}}, 1.0, ink);
    if (ax.yTickLabels) {
      const Box t = font.draw(raster_, tickLabel(ax.yScale, v, ySpacing, yhi < 100 * ylo), {b.x0 - 5, py}, tickPx, ink, HAlign::Right,
                              VAlign::Centre);
      left = std::min(left, t.x0);
    }
  }
  if (!ax.xLabel.empty())
    font.draw(raster_, ax.xLabel, {(b.x0 + b.x1) / 2, below + 1}, 11, ink, HAlign::Centre, VAlign::Top);
  if (!ax.yLabel.empty())
    font.draw(raster_, ax.yLabel, {left - 3, (b.y0 + b.y1) / 2}, 11, ink, HAlign::Centre, VAlign::Bottom, true);
  if (!ax.title.empty()) {
    int px = ax.titlePx;
    while (px > 8 && font.width(ax.title, px) > b.width() + 12) --px;
    font.draw(raster_, ax.title, {(b.x0 + b.x1) / 2, b.y0 - 4}, px, ink, HAlign::Centre, VAlign::Bottom);
  }
  if (!ax.noData.empty()) {
    const auto lines = font.wrap(ax.noData, 11, 0.85 * b.width());
    const double lh = font.ascent(11) + font.descent(11);
    double y = (b.y0 + b.y1) / 2 - lh * static_cast<double>(lines.size()) / 2;
    for (const std::string& line : lines) {
      font.draw(raster_, line, {(b.x0 + b.x1) / 2, y}, 11, grey(0.3), HAlign::Centre, VAlign::Top);
      y += lh;
    }
  }
}

std::string Figure::describe(const std::string& file) const {
  std::ostringstream s;
  s << "{\"file\": " << jsonString(file) << ", \"width\": " << raster_.width() << ", \"height\": "
    << raster_.height() << ", \"legend_panel\": ";
  if (legendPanel_)
    s << "[" << legendPanel_->x0 << ", " << legendPanel_->y0 << ", " << legendPanel_->x1 << ", " << legendPanel_->y1
      << "]";
  else
    s << "null";
  s << ", \"legend_entries\": [";
  for (std::size_t i = 0; i < legend_.size(); ++i) s << (i ? ", " : "") << jsonString(legend_[i].label);
  s << "], \"panels\": [";
  bool first = true;
  for (const Axes& ax : axes_) {
    if (ax.role == "colorbar") continue;
    struct Role {
      long count = 0, points = 0;
      std::vector<std::string> labels, linestyles, colours;
      bool hollow = false;
      double z = -1e300;
    };
    std::map<std::string, Role> roles;
    std::vector<std::string> order;
    for (const Item& it : ax.items()) {
      if (it.role.empty()) continue;
      if (!roles.count(it.role)) order.push_back(it.role);
      Role& r = roles[it.role];
      ++r.count;
      r.z = std::max(r.z, it.z);
      const std::string colour = colourCode(it);
      if (std::find(r.colours.begin(), r.colours.end(), colour) == r.colours.end()) r.colours.push_back(colour);
      if (it.kind == Item::Kind::Series) {
        r.points += static_cast<long>(it.x.size());
        r.linestyles.push_back(dashCode(it) + markerCode(it));
        if (it.marker && !it.marker->filled) r.hollow = true;
      }
      if (it.kind == Item::Kind::Text) r.labels.push_back(it.text);
      else if (!it.label.empty()) r.labels.push_back(it.label);
    }
    if (!ax.noData.empty()) {
      order.push_back("no_data_text");
      roles["no_data_text"].count = 1;
      roles["no_data_text"].labels = {ax.noData};
    }
    const bool overlap = legendBox_ && legendBox_->overlaps(ax.box);
    std::size_t ticks = 0;
    for (const double v : ax.yTickValues_) {
      const double sv = scaled(ax.yScale, v);
      if (sv >= ax.yr_.first - 1e-12 && sv <= ax.yr_.second + 1e-12) ++ticks;
    }
    s << (first ? "" : ", ") << "{\"title\": " << jsonString(ax.title) << ", \"xlabel\": " << jsonString(ax.xLabel)
      << ", \"ylabel\": " << jsonString(ax.yLabel) << ", \"xscale\": \""
      << (ax.xScale == Scale::Log ? "log" : "linear") << "\", \"yscale\": \""
      << (ax.yScale == Scale::Log ? "log" : "linear") << "\", \"yticks\": " << ticks << ", \"roles\": {";
    first = false;
    for (std::size_t k = 0; k < order.size(); ++k) {
      const Role& r = roles[order[k]];
      s << (k ? ", " : "") << jsonString(order[k]) << ": {\"count\": " << r.count << ", \"points\": " << r.points
        << ", \"zorder\": " << r.z << ", \"hollow\": " << (r.hollow ? "true" : "false") << ", \"labels\": [";
      for (std::size_t i = 0; i < r.labels.size(); ++i) s << (i ? ", " : "") << jsonString(r.labels[i]);
      s << "], \"linestyles\": [";
      for (std::size_t i = 0; i < r.linestyles.size(); ++i) s << (i ? ", " : "") << jsonString(r.linestyles[i]);
      s << "], \"colours\": [";
      for (std::size_t i = 0; i < r.colours.size(); ++i) s << (i ? ", " : "") << jsonString(r.colours[i]);
      s << "]}";
    }
    s << "}, \"legend_overlaps_data\": " << (overlap ? "true" : "false") << "}";
  }
  s << "]}";
  return s.str();
}

}  // namespace fpdp::plot
