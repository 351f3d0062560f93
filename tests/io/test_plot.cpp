// The plotting layer (io/plot): anti-aliased lines land on the expected pixels, dashes leave gaps, markers are filled
// or hollow, rectangles cover what they should; tick choice on linear and log axes and where the ticks are drawn;
// text is drawn (horizontal and turned) and measured; colour maps end where viridis and RdBu end; a PNG written is
// read back with its size and pixels; describe() reports roles and a legend outside (or over) the data.
#define BOOST_TEST_MODULE io_plot
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "io/plot/Figure.hpp"
#include "io/plot/Raster.hpp"
#include "io/plot/Text.hpp"

using namespace fpdp::plot;
namespace fs = std::filesystem;

namespace {

double darkness(const Raster& r, int x, int y) {
  const Colour c = r.pixel(x, y);
  return 1.0 - (c.r + c.g + c.b) / 3.0;
}

int darkPixels(const Raster& r, double threshold = 0.5) {
  int n = 0;
  for (int y = 0; y < r.height(); ++y)
    for (int x = 0; x < r.width(); ++x) n += darkness(r, x, y) > threshold;
  return n;
}

fs::path scratch(const std::string& name) {
  return fs::temp_directory_path() / ("fpdp-io-plot-" + std::to_string(getpid()) + "-" + name);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_horizontal_line_covers_its_rows_and_ends_at_its_caps) {
  Raster r(80, 40);
  r.polyline({{10, 20.5}, {50, 20.5}}, 2.0, grey(0));
  // width 2 around y = 20.5: row 20 fully, rows 19 and 21 half (their centres 1 from the axis), row 18 not at all
  BOOST_TEST(darkness(r, 30, 20) > 0.99);
  BOOST_TEST(std::abs(darkness(r, 30, 19) - 0.5) < 0.02);
  BOOST_TEST(std::abs(darkness(r, 30, 21) - 0.5) < 0.02);
  BOOST_TEST(darkness(r, 30, 17) < 0.01);
  BOOST_TEST(darkness(r, 30, 23) < 0.01);
  // round caps reach 1 pixel beyond the ends
  BOOST_TEST(darkness(r, 50, 20) > 0.5);
  BOOST_TEST(darkness(r, 53, 20) < 0.01);
  BOOST_TEST(darkness(r, 6, 20) < 0.01);
}

BOOST_AUTO_TEST_CASE(a_diagonal_line_is_dark_on_its_diagonal_only) {
  Raster r(60, 60);
  r.polyline({{5, 5}, {55, 55}}, 1.5, grey(0));
  for (int k = 8; k < 52; k += 5) {
    BOOST_TEST(darkness(r, k, k) > 0.9, k);
    BOOST_TEST(darkness(r, k + 4, k - 4) < 0.01, k);
  }
}

BOOST_AUTO_TEST_CASE(dashed_and_dotted_lines_leave_gaps) {
  for (const Dash dash : {Dash::Dashed, Dash::Dotted}) {
    Raster r(400, 20);
    r.polyline({{10, 10.5}, {390, 10.5}}, 2.0, grey(0), dash);
    int on = 0, off = 0;
    for (int x = 12; x < 388; ++x) (darkness(r, x, 10) > 0.5 ? on : off)++;
    BOOST_TEST(on > 40);
    BOOST_TEST(off > 40);
  }
  Raster solid(400, 20);
  solid.polyline({{10, 10.5}, {390, 10.5}}, 2.0, grey(0));
  for (int x = 12; x < 388; ++x) BOOST_TEST_REQUIRE(darkness(solid, x, 10) > 0.99);
}

BOOST_AUTO_TEST_CASE(markers_filled_and_hollow) {
  for (int s = 0; s <= static_cast<int>(MarkerShape::Hexagon); ++s) {
    const auto shape = static_cast<MarkerShape>(s);
    Raster r(40, 40);
    r.marker({10, 20}, shape, 12, grey(0), true, grey(0), 1.0);
    r.marker({30, 20}, shape, 12, grey(0), false, grey(0), 1.0);
    BOOST_TEST(darkness(r, 10, 20) > 0.9, "filled marker " << s);
    if (shape != MarkerShape::Plus && shape != MarkerShape::Cross && shape != MarkerShape::Star)
      BOOST_TEST(darkness(r, 30, 20) < 0.1, "hollow marker " << s);  // an outline only
    int ring = 0;
    for (int y = 10; y < 30; ++y)
      for (int x = 20; x < 40; ++x) ring += darkness(r, x, y) > 0.5;
    BOOST_TEST(ring > 10, "hollow marker outline " << s);
    BOOST_TEST(darkness(r, 10, 5) < 0.01, "marker " << s << " stays within its size");
  }
}

BOOST_AUTO_TEST_CASE(rectangles_bands_and_the_clip) {
  Raster r(50, 50);
  r.fillRect({10, 10, 20.5, 20}, grey(0));
  BOOST_TEST(darkness(r, 15, 15) > 0.99);
  BOOST_TEST(std::abs(darkness(r, 20, 15) - 0.5) < 0.02);  // half of pixel 20 covered
  BOOST_TEST(darkness(r, 21, 15) < 0.01);
  Raster b(50, 50);
  b.fillBetween({5, 45}, {30, 30}, {20, 10}, grey(0), 1.0);
  BOOST_TEST(darkness(b, 10, 25) > 0.99);
  BOOST_TEST(darkness(b, 10, 35) < 0.01);
  BOOST_TEST(darkness(b, 40, 12) > 0.99);  // the band widens towards x = 45
  BOOST_TEST(darkness(b, 10, 12) < 0.01);
  Raster c(50, 50);
  c.setClip({0, 0, 25, 50});
  c.polyline({{5, 10.5}, {45, 10.5}}, 2.0, grey(0));
  c.clearClip();
  BOOST_TEST(darkness(c, 20, 10) > 0.99);
  BOOST_TEST(darkness(c, 30, 10) < 0.01);
}

BOOST_AUTO_TEST_CASE(tick_choice_on_linear_and_log_axes) {
  const auto lin = chooseTicks(Scale::Linear, 0.0, 1.0, 6);
  BOOST_TEST_REQUIRE(lin.size() == 6u);
  for (std::size_t i = 0; i < lin.size(); ++i) BOOST_TEST(lin[i] == 0.2 * static_cast<double>(i), boost::test_tools::tolerance(1e-12));
  const auto step = chooseTicks(Scale::Linear, -0.03, 3.1, 6);  // spacing 1 (0.5 would give 7)
  BOOST_TEST((step == std::vector<double>{0, 1, 2, 3}));
  const auto decades = chooseTicks(Scale::Log, 1e-3, 10.0, 6);
  BOOST_TEST_REQUIRE(decades.size() == 5u);
  for (int i = 0; i < 5; ++i) BOOST_TEST(decades[static_cast<std::size_t>(i)] == std::pow(10.0, i - 3), boost::test_tools::tolerance(1e-12));
  const auto wide = chooseTicks(Scale::Log, 1e-16, 1.0, 6);  // 17 decades: every third
  BOOST_TEST(wide.size() <= 6u);
  BOOST_TEST(wide.size() >= 4u);
  const auto narrow = chooseTicks(Scale::Log, 0.15, 3.0, 6);  // less than two decades: 1, 2, 5 times
  BOOST_TEST_REQUIRE(narrow.size() == 4u);
  BOOST_TEST(narrow[0] == 0.2, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(narrow[1] == 0.5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(narrow[3] == 2.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(tickLabel(Scale::Log, 1e-5, 0) == "1e-05");
  BOOST_TEST(tickLabel(Scale::Log, 0.1, 0) == "0.1");
  BOOST_TEST(tickLabel(Scale::Log, 10.0, 0) == "10");
  BOOST_TEST(tickLabel(Scale::Log, 0.02, 0, true) == "0.02");
  BOOST_TEST(tickLabel(Scale::Linear, 0.25, 0.25) == "0.25");
  BOOST_TEST(tickLabel(Scale::Linear, 3.0, 1.0) == "3");
  BOOST_TEST(tickLabel(Scale::Linear, -1e-17, 0.2) == "0");
}

BOOST_AUTO_TEST_CASE(log_axis_positions_and_drawn_ticks) {
  Font font(defaultFontPath());
  Figure fig(600, 400);
  Axes& ax = fig.addAxes({100, 50, 500, 350});
  ax.yScale = Scale::Log;
  ax.yLimits = {1e-3, 10.0};
  ax.xLimits = {0.0, 4.0};
  ax.series("computed", "a line", {0, 4}, {1e-2, 1e-2}, LineStyle{grey(0), 2.0, Dash::Solid}, std::nullopt, 3);
  fig.render(font);
  // four decades over 300 pixels: 1e-2 a quarter up from the bottom
  BOOST_TEST(ax.toPixel(0, 1e-2).y == 275.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(ax.toPixel(2, 1.0).x == 300.0, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(ax.yTickValues().size() == 5u);
  // the line at y = 275 inside the panel, the tick marks left of the frame at each decade
  BOOST_TEST(darkness(fig.raster(), 300, 274) > 0.9);
  for (const double v : ax.yTickValues()) {
    const int y = static_cast<int>(std::floor(ax.toPixel(0, v).y));
    BOOST_TEST(std::max(darkness(fig.raster(), 98, y), darkness(fig.raster(), 98, y - 1)) > 0.4, v);
  }
  BOOST_TEST(darkness(fig.raster(), 98, 237) < 0.01);  // no tick between the decades 1e-2 (y 275) and 0.1 (y 200)
}

BOOST_AUTO_TEST_CASE(text_is_drawn_and_measured) {
  Font font(defaultFontPath());
  Raster r(200, 200);
  const Box b = font.draw(r, "Rényi 1e-05", {10, 30}, 14, grey(0));
  BOOST_TEST(font.width("Rényi 1e-05", 14) > 60);
  BOOST_TEST(b.width() == font.width("Rényi 1e-05", 14), boost::test_tools::tolerance(1e-9));
  BOOST_TEST(darkPixels(r) > 40);
  Raster v(200, 200);
  const Box t = font.draw(v, "a vertical label", {100, 100}, 12, grey(0), HAlign::Centre, VAlign::Bottom, true);
  BOOST_TEST(t.height() > 3 * t.width());  // turned: taller than wide
  BOOST_TEST(t.x1 == 100.0, boost::test_tools::tolerance(1.0));
  BOOST_TEST(darkPixels(v) > 40);
  const auto lines = font.wrap("one two three four five six seven", 12, 60);
  BOOST_TEST(lines.size() >= 3u);
  for (const auto& l : lines) BOOST_TEST((font.width(l, 12) <= 60 || l.find(' ') == std::string::npos));
  BOOST_CHECK_THROW(Font("/nonexistent/font.ttf"), std::runtime_error);
  BOOST_TEST((decodeUtf8("é\xff") == std::u32string{U'é', U'\uFFFD'}));
}

BOOST_AUTO_TEST_CASE(colour_maps) {
  auto near = [](Colour c, unsigned hex) {
    const Colour h = hexColour(hex);
    return std::abs(c.r - h.r) < 2.0 / 255 && std::abs(c.g - h.g) < 2.0 / 255 && std::abs(c.b - h.b) < 2.0 / 255;
  };
  BOOST_TEST(near(mapColour(ColourMap::Viridis, 0.0), 0x440154));
  BOOST_TEST(near(mapColour(ColourMap::Viridis, 1.0), 0xfde725));
  BOOST_TEST(near(mapColour(ColourMap::Diverging, 0.0), 0x053061));
  BOOST_TEST(near(mapColour(ColourMap::Diverging, 1.0), 0x67001f));
  BOOST_TEST(mapColour(ColourMap::Diverging, 0.5).g > 0.95);  // white-ish in the middle
  BOOST_TEST(mapColour(ColourMap::Viridis, std::nan("")).r == 0.75);
  BOOST_TEST(near(mapColour(ColourMap::Viridis, 7.0), 0xfde725));  // clamped
}

BOOST_AUTO_TEST_CASE(png_round_trip) {
  Raster r(37, 23, grey(1));
  r.fillRect({0, 0, 10, 10}, hexColour(0xff0000));
  r.fillRect({20, 10, 37, 23}, hexColour(0x00ff80));
  const fs::path path = scratch("round-trip.png");
  r.writePng(path.string());
  const PngImage img = readPng(path.string());
  fs::remove(path);
  BOOST_TEST(img.width == 37);
  BOOST_TEST(img.height == 23);
  BOOST_TEST_REQUIRE(img.rgb.size() == 37u * 23u * 3u);
  auto at = [&](int x, int y, int k) { return static_cast<int>(img.rgb[(static_cast<std::size_t>(y) * 37 + x) * 3 + k]); };
  BOOST_TEST(at(5, 5, 0) == 255);
  BOOST_TEST(at(5, 5, 1) == 0);
  BOOST_TEST(at(30, 20, 1) == 255);
  BOOST_TEST(at(30, 20, 2) == 128);
  BOOST_TEST(at(15, 5, 2) == 255);
  BOOST_CHECK_THROW(r.writePng("/nonexistent-directory/x.png"), std::runtime_error);
  BOOST_CHECK_THROW(readPng("/nonexistent-directory/x.png"), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(describe_reports_roles_and_where_the_legend_is) {
  Font font(defaultFontPath());
  for (const bool over : {false, true}) {
    Figure fig(600, 300);
    Axes& ax = fig.addAxes({60, 30, 400, 260});
    ax.yScale = Scale::Log;
    ax.title = "t";
    ax.series("computed", "computed", {0, 1, 2}, {1, 2, 4}, LineStyle{grey(0), 2, Dash::Solid}, std::nullopt, 3);
    ax.series("exact", "closed form", {0, 1, 2}, {1, 2, 4}, LineStyle{grey(0), 1, Dash::Dashed}, std::nullopt, 7);
    ax.series("inf", "+inf", {3, 4}, {0.96, 0.96}, std::nullopt,
              MarkerStyle{MarkerShape::TriangleUp, 8, grey(0), false, grey(0), 1}, 9).yInAxes = true;
    fig.setLegendPanel(over ? Box{300, 30, 590, 290} : Box{420, 10, 590, 290});
    fig.render(font);
    const std::string d = fig.describe("f.png");
    BOOST_TEST(d.find("\"legend_entries\": [\"computed\", \"closed form\", \"+inf\"]") != std::string::npos, d);
    BOOST_TEST(d.find("\"exact\": {\"count\": 1, \"points\": 3, \"zorder\": 7, \"hollow\": false") != std::string::npos, d);
    BOOST_TEST(d.find("\"linestyles\": [\"--\"]") != std::string::npos, d);
    BOOST_TEST(d.find("\"inf\": {\"count\": 1, \"points\": 2, \"zorder\": 9, \"hollow\": true") != std::string::npos, d);
    BOOST_TEST(d.find(std::string("\"legend_overlaps_data\": ") + (over ? "true" : "false")) != std::string::npos, d);
  }
}
