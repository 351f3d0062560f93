#pragma once
// Figures of data panels: axes with linear or logarithmic scales and chosen ticks, lines, markers, bands, error bars,
// heat maps with a colour map, texts, a legend panel beside the data and colour bars; rendered onto a Raster and
// written as PNG. Every element carries a role (what it is, e.g. "exact" or "inf"), from which describe() reports
// what each panel holds, so that tests check the figure's content rather than its pixels alone. Knows nothing of
// what the data mean.
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/plot/Raster.hpp"
#include "io/plot/Text.hpp"

namespace fpdp::plot {

enum class Scale { Linear, Log };
enum class ColourMap { Viridis, Diverging };  // viridis (perceptual, sequential); red-blue around the middle

/// The colour of `t` in [0, 1] (clamped) under `map`; NaN: light grey (a value that is not shown).
Colour mapColour(ColourMap map, double t);

/// The matplotlib "tab10" cycle: distinct colours for series 0, 1, ...
Colour cycleColour(int index);

struct LineStyle {
  Colour colour;
  double width = 1.5;
  Dash dash = Dash::Solid;
};

struct MarkerStyle {
  MarkerShape shape = MarkerShape::Circle;
  double size = 6;
  Colour edge;
  bool filled = true;
  Colour face;
  double edgeWidth = 1.0;
};

/// One element of a panel. Kinds: a series (line and/or markers at x, y), a band (lo..hi over x), error bars
/// (y - below .. y + above at x), a text (at data x, axes-fraction y), a heat map (cell faces and values).
struct Item {
  enum class Kind { Series, Band, ErrorBars, Text, HeatMap } kind = Kind::Series;
  std::string role;   // what the element is; describe() groups by it
  std::string label;  // its legend entry, "" for none
  std::vector<double> x, y, lo, hi;  // lo/hi: band bounds, or error-bar lengths below/above y
  std::optional<LineStyle> line;
  std::optional<MarkerStyle> marker;
  int markEvery = 1, markOffset = 0;  // markers at points markOffset, markOffset + markEvery, ...
  bool yInAxes = false;               // y is a fraction of the panel's height (edge markers), drawn unclipped
  double z = 2;                       // drawing order: larger on top
  Colour colour;                      // band, error bars, text
  double alpha = 1.0;
  std::string text;                   // Text
  int textPx = 10;
  HAlign hAlign = HAlign::Left;
  VAlign vAlign = VAlign::Top;
  std::vector<double> values;         // HeatMap: y.size()-1 rows of x.size()-1 cells (x and y are the faces)
  ColourMap map = ColourMap::Viridis;
  double mapLo = 0, mapHi = 1;
};

class Axes {
 public:
  explicit Axes(Box box) : box(box) {}
  Box box;  // pixels
  Scale xScale = Scale::Linear, yScale = Scale::Linear;
  std::string title, xLabel, yLabel;
  int titlePx = 12;
  bool grid = false;
  int xTicks = 6, yTicks = 6;           // at most this many
  bool xTickLabels = true, yTickLabels = true;
  std::optional<std::pair<double, double>> xLimits, yLimits;  // fixed limits instead of the data's
  std::optional<double> yBottom;                              // a fixed lower y limit only
  std::string noData;                   // non-empty: the panel says this in its middle and has no y ticks
  std::string role;                     // "colorbar" panels are left out of describe()

  Item& add(Item item);
  /// A series: a line through the points (broken at values the scale cannot show), and/or markers.
  Item& series(std::string role, std::string label, std::vector<double> x, std::vector<double> y,
               std::optional<LineStyle> line, std::optional<MarkerStyle> marker, double z);
  const std::vector<Item>& items() const { return items_; }

  // Known after Figure::render():
  std::pair<double, double> xRange() const { return xr_; }
  std::pair<double, double> yRange() const { return yr_; }
  const std::vector<double>& yTickValues() const { return yTickValues_; }
  const std::vector<double>& xTickValues() const { return xTickValues_; }
  /// Pixel position of data (x, y) (after render()).
  Point toPixel(double x, double y) const;

 private:
  friend class Figure;
  std::vector<Item> items_;
  std::pair<double, double> xr_{0, 1}, yr_{0, 1};
  std::vector<double> xTickValues_, yTickValues_;
};

struct LegendEntry {
  std::string label;
  const Item* handle = nullptr;
};

class Figure {
 public:
  Figure(int width, int height);
  Axes& addAxes(Box box);
  /// The legend: every labelled element of every panel, one entry per label, in a panel of its own.
  void setLegendPanel(Box box, int px = 9) { legendPanel_ = box, legendPx_ = px; }
  /// A horizontal colour bar for values lo..hi of `map`, labelled below.
  void addColourBar(Box box, ColourMap map, double lo, double hi, const std::string& label);
  /// A text at a pixel position (a figure title, say).
  void addText(std::string text, Point at, int px, HAlign h = HAlign::Left, VAlign v = VAlign::Top);

  void render(Font& font);
  const Raster& raster() const { return raster_; }
  /// JSON: {"file", "width", "height", "legend_panel" ([x0, y0, x1, y1] pixels, or null), "legend_entries",
  /// "panels": [{title, xlabel, ylabel, xscale, yscale, yticks, roles: {role: {count, points, labels, linestyles,
  /// colours (#rrggbb), hollow, zorder}}, legend_overlaps_data}]} (after render()).
  std::string describe(const std::string& file) const;
  std::deque<Axes>& axes() { return axes_; }

 private:
  void renderAxes(Axes& ax, Font& font);  // limits, ticks, grid, then the items and the frame
  void renderItem(const Axes& ax, const Item& item, Font& font);
  void renderFrame(const Axes& ax, Font& font);  // frame, ticks, labels, title, the no-data text
  void renderLegend(Font& font);
  Raster raster_;
  std::deque<Axes> axes_;  // addAxes' references stay valid
  std::optional<Box> legendPanel_;
  int legendPx_ = 9;
  std::vector<LegendEntry> legend_;
  std::optional<Box> legendBox_;  // where the legend was drawn
  struct FreeText {
    std::string text;
    Point at;
    int px;
    HAlign h;
    VAlign v;
  };
  std::vector<FreeText> texts_;
};

/// Tick positions for [lo, hi]: linear: at most `count` multiples of 1, 2, 2.5 or 5 times a power of ten; log:
/// decades (every k-th when more than `count`), or 1, 2, 5 times the decades over less than two decades.
std::vector<double> chooseTicks(Scale scale, double lo, double hi, int count);
/// Tick labels: log decades 0.1, 1, 10, else 1e-05, and 3 significant digits on log axes spanning less than two
/// decades (`narrow`) or between decades; linear ticks with the decimals their spacing needs.
std::string tickLabel(Scale scale, double value, double spacing, bool narrow = false);

}  // namespace fpdp::plot
