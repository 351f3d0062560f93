#pragma once
// An RGB raster with anti-aliased drawing: lines (solid, dashed, dotted), markers (filled or hollow), rectangles,
// bands between two curves, and PNG output. Pixel coordinates: x to the right, y downwards, pixel (i, j) covers
// [i, i+1) x [j, j+1). Knows nothing of axes, data or what is drawn.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace fpdp::plot {

struct Colour {
  double r = 0, g = 0, b = 0;  // each in [0, 1]
};
/// 0xRRGGBB.
Colour hexColour(unsigned rgb);
Colour grey(double level);
/// The colour scaled towards black by `factor` (< 1).
Colour shade(Colour c, double factor);

/// A colour component in [0, 1] (clamped) as a byte.
inline std::uint8_t colourByte(double v) { return static_cast<std::uint8_t>(std::clamp(v, 0.0, 1.0) * 255.0 + 0.5); }

struct Point {
  double x = 0, y = 0;
};

struct Box {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // left, top, right, bottom
  double width() const { return x1 - x0; }
  double height() const { return y1 - y0; }
  bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
  bool contains(Point p) const { return p.x >= x0 && p.x <= x1 && p.y >= y0 && p.y <= y1; }
};

enum class Dash { Solid, Dashed, Dotted };
enum class MarkerShape { Circle, Square, Diamond, TriangleUp, TriangleDown, Plus, Cross, Star, Hexagon };

class Raster {
 public:
  Raster(int width, int height, Colour background = {1, 1, 1});
  int width() const { return width_; }
  int height() const { return height_; }
  Colour pixel(int x, int y) const;
  /// Drawing is limited to `clip` until clearClip() (a data panel's box).
  void setClip(const Box& clip);
  void clearClip();

  /// Mixes `c` into pixel (x, y) with opacity `alpha` in [0, 1]; outside the raster or the clip: nothing. Inline:
  /// every primitive calls it for each pixel it touches.
  void blend(int x, int y, Colour c, double alpha) {
    if (x < cx0_ || x >= cx1_ || y < cy0_ || y >= cy1_ || !(alpha > 0)) return;
    std::uint8_t* p = &rgb_[(static_cast<std::size_t>(y) * width_ + x) * 3];
    if (alpha >= 1.0) {
      p[0] = colourByte(c.r), p[1] = colourByte(c.g), p[2] = colourByte(c.b);
      return;
    }
    const float a = static_cast<float>(alpha);
    const float target[3] = {static_cast<float>(c.r) * 255.0f, static_cast<float>(c.g) * 255.0f,
                             static_cast<float>(c.b) * 255.0f};
    for (int k = 0; k < 3; ++k)
      p[k] = static_cast<std::uint8_t>(std::clamp(p[k] + a * (target[k] - p[k]) + 0.5f, 0.0f, 255.0f));
  }
  /// A rectangle, its edges anti-aliased.
  void fillRect(const Box& box, Colour c, double alpha = 1.0);
  /// A polyline of width `width` pixels (round joins); dashed and dotted patterns scale with the width.
  void polyline(const std::vector<Point>& points, double width, Colour c, Dash dash = Dash::Solid, double alpha = 1.0);
  /// A marker of diameter `size` pixels centred at `at`: the face (when `filled`) in `face`, the outline in `edge`.
  void marker(Point at, MarkerShape shape, double size, Colour edge, bool filled, Colour face, double edgeWidth);
  /// The region between two curves over the same abscissae (pixel x ascending): lo[i] and hi[i] at x[i].
  void fillBetween(const std::vector<double>& x, const std::vector<double>& lo, const std::vector<double>& hi,
                   Colour c, double alpha);
  /// An 8-bit coverage mask (row-major, `w` x `h`) drawn in `c` with its top-left corner at (x, y).
  void drawMask(int x, int y, int w, int h, const std::vector<std::uint8_t>& mask, Colour c);

  /// Writes the raster as an 8-bit RGB PNG (zlib level 1: a few per cent larger, several times faster to encode).
  /// Throws std::runtime_error naming the path when it cannot be written.
  void writePng(const std::string& path) const;

 private:
  /// Coverage of the pixels near a set of segments, each pixel the maximum over the segments (joins drawn once).
  void strokeSegments(const std::vector<std::pair<Point, Point>>& segments, double width, Colour c, double alpha);
  int width_, height_;
  std::vector<std::uint8_t> rgb_;  // 3 bytes per pixel, rows top to bottom (as a PNG stores them)
  int cx0_, cy0_, cx1_, cy1_;  // the clip, pixel indices [cx0, cx1) x [cy0, cy1)
};

/// Reads an 8-bit RGB or RGBA PNG (for tests and checks): width, height and RGB bytes; throws when it cannot.
struct PngImage {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
};
PngImage readPng(const std::string& path);

}  // namespace fpdp::plot
