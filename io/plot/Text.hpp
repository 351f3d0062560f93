#pragma once
// Text on a Raster: a TrueType font rendered by FreeType into anti-aliased coverage masks (UTF-8, horizontal or
// turned a quarter anticlockwise for y-axis labels), measured for layout and wrapped to a width.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/plot/Raster.hpp"

namespace fpdp::plot {

enum class HAlign { Left, Centre, Right };
enum class VAlign { Top, Centre, Baseline, Bottom };

class Font {
 public:
  /// Loads the TrueType/OpenType font at `path`; throws std::runtime_error naming the path when it cannot.
  explicit Font(const std::string& path);
  ~Font();
  Font(const Font&) = delete;
  Font& operator=(const Font&) = delete;

  /// The advance width of `text` in pixels at `px` pixels per em.
  double width(const std::string& text, int px);
  /// Ascent and descent (positive, pixels) of a line at `px`.
  double ascent(int px);
  double descent(int px);
  /// `text` split at spaces into lines no wider than `maxWidth` (a word longer than that gets a line of its own).
  std::vector<std::string> wrap(const std::string& text, int px, double maxWidth);

  /// Draws `text` at `at`, aligned as asked; `vertical`: turned a quarter anticlockwise (reads bottom to top, `h`
  /// then aligns along the vertical and `v` across it). Returns the box covered.
  Box draw(Raster& raster, const std::string& text, Point at, int px, Colour colour, HAlign h = HAlign::Left,
           VAlign v = VAlign::Baseline, bool vertical = false);

 private:
  struct Glyph {
    int left = 0, top = 0, width = 0, rows = 0;
    double advance = 0;
    std::vector<unsigned char> coverage;
  };
  const Glyph& glyph(char32_t code, int px);
  void setSize(int px);
  struct FreeType;
  std::unique_ptr<FreeType> ft_;
  std::map<std::pair<int, char32_t>, Glyph> glyphs_;
  int size_ = 0;
};

/// The font of fpdp's plots: $FPDP_FONT when set (another TrueType font, or a system where DejaVu lies elsewhere),
/// else DejaVu Sans of fonts-dejavu-core.
std::string defaultFontPath();

/// The code points of a UTF-8 string (an invalid byte becomes U+FFFD).
std::u32string decodeUtf8(const std::string& text);

}  // namespace fpdp::plot
