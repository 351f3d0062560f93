#include "io/plot/Raster.hpp"

#include <unistd.h>

#include "io/OutputFile.hpp"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numbers>
#include <stdexcept>

namespace fpdp::plot {


Colour hexColour(unsigned rgb) {
  return {((rgb >> 16) & 0xff) / 255.0, ((rgb >> 8) & 0xff) / 255.0, (rgb & 0xff) / 255.0};
}
Colour grey(double level) { return {level, level, level}; }
Colour shade(Colour c, double factor) { return {c.r * factor, c.g * factor, c.b * factor}; }

Raster::Raster(int width, int height, Colour background)
    : width_(width), height_(height), rgb_(static_cast<std::size_t>(width) * height * 3) {
  if (width <= 0 || height <= 0) throw std::invalid_argument("Raster: width and height must be positive");
  const std::uint8_t bg[3] = {colourByte(background.r), colourByte(background.g), colourByte(background.b)};
  for (std::size_t i = 0; i < rgb_.size(); i += 3) std::copy(bg, bg + 3, &rgb_[i]);
  clearClip();
}

Colour Raster::pixel(int x, int y) const {
  const std::size_t i = (static_cast<std::size_t>(y) * width_ + x) * 3;
  return {rgb_[i] / 255.0, rgb_[i + 1] / 255.0, rgb_[i + 2] / 255.0};
}

void Raster::setClip(const Box& clip) {
  cx0_ = std::clamp(static_cast<int>(std::floor(clip.x0)), 0, width_);
  cy0_ = std::clamp(static_cast<int>(std::floor(clip.y0)), 0, height_);
  cx1_ = std::clamp(static_cast<int>(std::ceil(clip.x1)), 0, width_);
  cy1_ = std::clamp(static_cast<int>(std::ceil(clip.y1)), 0, height_);
}

void Raster::clearClip() {
  cx0_ = cy0_ = 0;
  cx1_ = width_;
  cy1_ = height_;
}

void Raster::fillRect(const Box& box, Colour c, double alpha) {
  const int i0 = std::max(static_cast<int>(std::floor(box.x0)), cx0_), i1 = std::min(static_cast<int>(std::ceil(box.x1)), cx1_);
  const int j0 = std::max(static_cast<int>(std::floor(box.y0)), cy0_), j1 = std::min(static_cast<int>(std::ceil(box.y1)), cy1_);
  for (int j = j0; j < j1; ++j) {
    const double cy = std::min<double>(j + 1, box.y1) - std::max<double>(j, box.y0);
    for (int i = i0; i < i1; ++i) {
      const double cx = std::min<double>(i + 1, box.x1) - std::max<double>(i, box.x0);
      blend(i, j, c, alpha * std::clamp(cx, 0.0, 1.0) * std::clamp(cy, 0.0, 1.0));
    }
  }
}

namespace {

double segmentDistance(Point p, Point a, Point b) {
  const double ex = b.x - a.x, ey = b.y - a.y, wx = p.x - a.x, wy = p.y - a.y;
  const double ee = ex * ex + ey * ey;
  const double t = ee > 0 ? std::clamp((wx * ex + wy * ey) / ee, 0.0, 1.0) : 0.0;
  const double dx = wx - t * ex, dy = wy - t * ey;
  return std::sqrt(dx * dx + dy * dy);
}

/// The dash pattern (on, off) in pixels for a line of width w; round caps add w/2 at each end of a dash.
std::pair<double, double> dashPattern(Dash dash, double w) {
  if (dash == Dash::Dashed) return {std::max(3.7 * w - w, 2.0), 1.6 * w + w + 1.0};
  return {0.01, 1.65 * w + w + 0.5};  // dotted: round dots of diameter w
}

/// Signed distance from p to a closed polygon (negative inside).
double polygonDistance(Point p, const std::vector<Point>& v) {
  double d = std::hypot(p.x - v[0].x, p.y - v[0].y);
  double s = 1.0;
  for (std::size_t i = 0, j = v.size() - 1; i < v.size(); j = i++) {
    d = std::min(d, segmentDistance(p, v[i], v[j]));
    const double ex = v[j].x - v[i].x, ey = v[j].y - v[i].y, wx = p.x - v[i].x, wy = p.y - v[i].y;
    const bool c1 = p.y >= v[i].y, c2 = p.y < v[j].y, c3 = ex * wy > ey * wx;
    if ((c1 && c2 && c3) || (!c1 && !c2 && !c3)) s = -s;
  }
  return s * d;
}

/// The outline of a marker of radius r centred at the origin (pixel y downwards).
std::vector<Point> markerPolygon(MarkerShape shape, double r) {
  std::vector<Point> v;
  auto regular = [&](int n, double radius, double phase) {
    for (int k = 0; k < n; ++k) {
      const double a = phase + 2 * std::numbers::pi * k / n;
      v.push_back({radius * std::cos(a), -radius * std::sin(a)});
    }
  };
  const double half = std::numbers::pi / 2;
  switch (shape) {
    case MarkerShape::Square: {
      const double h = r / std::sqrt(2.0) * 1.05;
      v = {{-h, -h}, {h, -h}, {h, h}, {-h, h}};
      break;
    }
    case MarkerShape::Diamond: regular(4, r, half); break;
    case MarkerShape::TriangleUp: regular(3, r, half); break;
    case MarkerShape::TriangleDown: regular(3, r, -half); break;
    case MarkerShape::Hexagon: regular(6, r, half); break;
    case MarkerShape::Star:
      for (int k = 0; k < 10; ++k) {
        const double a = half + std::numbers::pi * k / 5, radius = k % 2 ? 0.4 * r : r;
        v.push_back({radius * std::cos(a), -radius * std::sin(a)});
      }
      break;
    case MarkerShape::Plus:
    case MarkerShape::Cross: {
      const double a = r, b = 0.33 * r;
      const std::vector<Point> plus = {{-b, -a}, {b, -a}, {b, -b}, {a, -b}, {a, b}, {b, b},
                                       {b, a}, {-b, a}, {-b, b}, {-a, b}, {-a, -b}, {-b, -b}};
      const double c = shape == MarkerShape::Cross ? std::cos(std::numbers::pi / 4) : 1.0;
      const double s = shape == MarkerShape::Cross ? std::sin(std::numbers::pi / 4) : 0.0;
      for (const Point& p : plus) v.push_back({c * p.x - s * p.y, s * p.x + c * p.y});
      break;
    }
    case MarkerShape::Circle: break;
  }
  return v;
}

}  // namespace

void Raster::strokeSegments(const std::vector<std::pair<Point, Point>>& segments, double width, Colour c,
                            double alpha) {
  if (segments.empty()) return;
  const double hw = std::max(width, 1.0) / 2, fade = std::min(width, 1.0);
  double bx0 = 1e300, by0 = 1e300, bx1 = -1e300, by1 = -1e300;
  for (const auto& [a, b] : segments) {
    bx0 = std::min({bx0, a.x, b.x});
    by0 = std::min({by0, a.y, b.y});
    bx1 = std::max({bx1, a.x, b.x});
    by1 = std::max({by1, a.y, b.y});
  }
  const int i0 = std::max(static_cast<int>(std::floor(bx0 - hw - 1)), cx0_);
  const int j0 = std::max(static_cast<int>(std::floor(by0 - hw - 1)), cy0_);
  const int i1 = std::min(static_cast<int>(std::ceil(bx1 + hw + 1)), cx1_);
  const int j1 = std::min(static_cast<int>(std::ceil(by1 + hw + 1)), cy1_);
  if (i0 >= i1 || j0 >= j1) return;
  const int mw = i1 - i0;
  std::vector<float> cover(static_cast<std::size_t>(mw) * (j1 - j0), 0.0f);
  // per row, the columns touched: a line across a panel covers a thin strip of its bounding box
  std::vector<int> first(static_cast<std::size_t>(j1 - j0), i1), last(static_cast<std::size_t>(j1 - j0), i0 - 1);
  for (const auto& [a, b] : segments) {
    const int si0 = std::max(static_cast<int>(std::floor(std::min(a.x, b.x) - hw - 1)), i0);
    const int si1 = std::min(static_cast<int>(std::ceil(std::max(a.x, b.x) + hw + 1)), i1);
    const int sj0 = std::max(static_cast<int>(std::floor(std::min(a.y, b.y) - hw - 1)), j0);
    const int sj1 = std::min(static_cast<int>(std::ceil(std::max(a.y, b.y) + hw + 1)), j1);
    for (int j = sj0; j < sj1; ++j) {
      // the pixels of this row within reach of the segment: where the row's centre line meets the widened segment
      int lo = si0, hi = si1;
      const double yc = j + 0.5, reach = hw + 1;
      if (std::abs(b.y - a.y) > 1e-9 && std::abs(b.x - a.x) > 1e-9) {
        const double slope = (b.x - a.x) / (b.y - a.y), len = std::hypot(b.x - a.x, b.y - a.y);
        const double xc = a.x + (yc - a.y) * slope, half = reach * len / std::abs(b.y - a.y);
        lo = std::max(lo, static_cast<int>(std::floor(xc - half)));
        hi = std::min(hi, static_cast<int>(std::ceil(xc + half)) + 1);
      }
      for (int i = lo; i < hi; ++i) {
        const double d = segmentDistance({i + 0.5, yc}, a, b);
        const float k = static_cast<float>(std::clamp(hw + 0.5 - d, 0.0, 1.0) * fade);
        if (k <= 0) continue;
        float& m = cover[static_cast<std::size_t>(j - j0) * mw + (i - i0)];
        m = std::max(m, k);
        first[static_cast<std::size_t>(j - j0)] = std::min(first[static_cast<std::size_t>(j - j0)], i);
        last[static_cast<std::size_t>(j - j0)] = std::max(last[static_cast<std::size_t>(j - j0)], i);
      }
    }
  }
  for (int j = j0; j < j1; ++j)
    for (int i = first[static_cast<std::size_t>(j - j0)]; i <= last[static_cast<std::size_t>(j - j0)]; ++i) {
      const float m = cover[static_cast<std::size_t>(j - j0) * mw + (i - i0)];
      if (m > 0) blend(i, j, c, alpha * m);
    }
}

void Raster::polyline(const std::vector<Point>& points, double width, Colour c, Dash dash, double alpha) {
  std::vector<std::pair<Point, Point>> segments;
  if (points.size() == 1) segments.push_back({points[0], points[0]});
  if (dash == Dash::Solid) {
    for (std::size_t i = 1; i < points.size(); ++i) segments.push_back({points[i - 1], points[i]});
  } else {
    // Walks the polyline, the pattern continuing across its vertices.
    const auto [on, off] = dashPattern(dash, std::max(width, 1.0));
    bool drawing = true;
    double left = on;
    for (std::size_t i = 1; i < points.size(); ++i) {
      Point a = points[i - 1];
      const Point b = points[i];
      double length = std::hypot(b.x - a.x, b.y - a.y);
      while (length > 0) {
        const double take = std::min(left, length);
        const Point e{a.x + (b.x - a.x) * take / length, a.y + (b.y - a.y) * take / length};
        if (drawing) segments.push_back({a, e});
        a = e;
        length -= take;
        left -= take;
        if (left <= 1e-12) {
          drawing = !drawing;
          left = drawing ? on : off;
        }
      }
    }
  }
  strokeSegments(segments, width, c, alpha);
}

void Raster::marker(Point at, MarkerShape shape, double size, Colour edge, bool filled, Colour face,
                    double edgeWidth) {
  const double r = size / 2;
  const std::vector<Point> poly = markerPolygon(shape, r);
  const double reach = r + edgeWidth + 1;
  const int i0 = static_cast<int>(std::floor(at.x - reach)), i1 = static_cast<int>(std::ceil(at.x + reach));
  const int j0 = static_cast<int>(std::floor(at.y - reach)), j1 = static_cast<int>(std::ceil(at.y + reach));
  for (int j = j0; j < j1; ++j)
    for (int i = i0; i < i1; ++i) {
      const Point p{i + 0.5 - at.x, j + 0.5 - at.y};
      const double sd = shape == MarkerShape::Circle ? std::sqrt(p.x * p.x + p.y * p.y) - r : polygonDistance(p, poly);
      if (filled) blend(i, j, face, std::clamp(0.5 - sd, 0.0, 1.0));
      blend(i, j, edge, std::clamp(edgeWidth / 2 + 0.5 - std::abs(sd), 0.0, 1.0));
    }
}

void Raster::fillBetween(const std::vector<double>& x, const std::vector<double>& lo, const std::vector<double>& hi,
                         Colour c, double alpha) {
  for (std::size_t k = 1; k < x.size(); ++k) {
    const double xa = x[k - 1], xb = x[k];
    if (!(xb > xa)) continue;
    const int i0 = static_cast<int>(std::floor(xa)), i1 = static_cast<int>(std::ceil(xb));
    for (int i = i0; i < i1; ++i) {
      const double left = std::max<double>(i, xa), right = std::min<double>(i + 1, xb);
      if (right <= left) continue;
      const double t = ((left + right) / 2 - xa) / (xb - xa);
      const double top = std::min(lo[k - 1] + t * (lo[k] - lo[k - 1]), hi[k - 1] + t * (hi[k] - hi[k - 1]));
      const double bottom = std::max(lo[k - 1] + t * (lo[k] - lo[k - 1]), hi[k - 1] + t * (hi[k] - hi[k - 1]));
      const double share = right - left;
      for (int j = static_cast<int>(std::floor(top)); j < static_cast<int>(std::ceil(bottom)); ++j) {
        const double cy = std::min<double>(j + 1, bottom) - std::max<double>(j, top);
        blend(i, j, c, alpha * share * std::clamp(cy, 0.0, 1.0));
      }
    }
  }
}

void Raster::drawMask(int x, int y, int w, int h, const std::vector<std::uint8_t>& mask, Colour c) {
  for (int j = 0; j < h; ++j)
    for (int i = 0; i < w; ++i)
      if (const std::uint8_t m = mask[static_cast<std::size_t>(j) * w + i]) blend(x + i, y + j, c, m / 255.0);
}

namespace {

/// libpng reports errors by longjmp: this function holds no object with a destructor. False on failure.
bool encodePng(std::FILE* f, const std::uint8_t* rgb, int width, int height) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_init_io(png, f);
  png_set_compression_level(png, 1);
  png_set_filter(png, 0, PNG_FILTER_NONE);  // as small as SUB for line plots, and no filtering time
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const std::size_t n = static_cast<std::size_t>(width) * 3;
  for (int j = 0; j < height; ++j) png_write_row(png, rgb + static_cast<std::size_t>(j) * n);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

void Raster::writePng(const std::string& path) const {
  // Through a temporary name and a rename, never through a link or into a special file (io/OutputFile): a plot is
  // written into a run's directory, which may be shared.
  io::ReplacementFile out(path);
  const int fd = ::dup(out.file().descriptor());
  std::FILE* f = fd >= 0 ? ::fdopen(fd, "wb") : nullptr;
  if (!f) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("cannot write " + path);
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(f, std::fclose);
  const bool ok = encodePng(f, rgb_.data(), width_, height_);
  if (!ok || std::fflush(f) != 0 || std::ferror(f)) throw std::runtime_error("cannot write " + path + " (disk full?)");
  if (std::fclose(file.release()) != 0) throw std::runtime_error("cannot write " + path + " (disk full?)");
  out.commit();
}

PngImage readPng(const std::string& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str()))
    throw std::runtime_error("cannot read the PNG " + path + ": " + image.message);
  image.format = PNG_FORMAT_RGB;
  PngImage out;
  out.width = static_cast<int>(image.width);
  out.height = static_cast<int>(image.height);
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr))
    throw std::runtime_error("cannot read the PNG " + path + ": " + image.message);
  return out;
}

}  // namespace fpdp::plot
