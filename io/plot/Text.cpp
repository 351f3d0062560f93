#include "io/plot/Text.hpp"

#include <sys/stat.h>

#include <ft2build.h>
#include FT_FREETYPE_H

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace fpdp::plot {

struct Font::FreeType {
  FT_Library library = nullptr;
  FT_Face face = nullptr;
};

std::u32string decodeUtf8(const std::string& text) {
  std::u32string out;
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    int extra = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (extra < 0 || i + static_cast<std::size_t>(extra) >= text.size()) {
      out.push_back(U'\uFFFD');
      ++i;
      continue;
    }
    char32_t code = extra == 0 ? c : c & (0x3f >> extra);
    bool valid = true;
    for (int k = 1; k <= extra; ++k) {
      const auto d = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
      if ((d >> 6) != 2) valid = false;
      code = (code << 6) | (d & 0x3f);
    }
    out.push_back(valid ? code : U'\uFFFD');
    i += valid ? static_cast<std::size_t>(extra) + 1 : 1;
  }
  return out;
}

namespace {
constexpr long kMaxFontBytes = 64L << 20;  // DejaVu Sans is 0.7 MiB; the largest CJK fonts about 20 MiB
}  // namespace

std::string defaultFontPath() {
  const char* env = std::getenv("FPDP_FONT");
  return env && *env ? env : "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
}

Font::Font(const std::string& path) : ft_(std::make_unique<FreeType>()) {
  // FPDP_FONT comes from the environment: a FIFO there blocked FreeType's open for good (a run then never published),
  // a device was read without end. Only a regular file of font size is handed to FreeType.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > kMaxFontBytes)
    throw std::runtime_error("the font " + path + " is not a regular font file of at most " +
                             std::to_string(kMaxFontBytes >> 20) + " MiB" +
                             (path == defaultFontPath() && std::getenv("FPDP_FONT") ? " (FPDP_FONT)" : ""));
  if (FT_Init_FreeType(&ft_->library) != 0) throw std::runtime_error("FreeType could not start");
  if (FT_New_Face(ft_->library, path.c_str(), 0, &ft_->face) != 0) {
    FT_Done_FreeType(ft_->library);
    throw std::runtime_error("cannot load the font " + path + " (fonts-dejavu-core: scripts/install-dependencies)");
  }
}

Font::~Font() {
  FT_Done_Face(ft_->face);
  FT_Done_FreeType(ft_->library);
}

void Font::setSize(int px) {
  if (px != size_) {
    FT_Set_Pixel_Sizes(ft_->face, 0, static_cast<FT_UInt>(px));
    size_ = px;
  }
}

const Font::Glyph& Font::glyph(char32_t code, int px) {
  const auto key = std::make_pair(px, code);
  if (const auto it = glyphs_.find(key); it != glyphs_.end()) return it->second;
  setSize(px);
  Glyph g;
  if (FT_Load_Char(ft_->face, code, FT_LOAD_RENDER | FT_LOAD_TARGET_LIGHT) == 0) {
    const FT_GlyphSlot slot = ft_->face->glyph;
    g.left = slot->bitmap_left;
    g.top = slot->bitmap_top;
    g.width = static_cast<int>(slot->bitmap.width);
    g.rows = static_cast<int>(slot->bitmap.rows);
    g.advance = slot->advance.x / 64.0;
    g.coverage.resize(static_cast<std::size_t>(g.width) * g.rows);
    for (int j = 0; j < g.rows; ++j)
      for (int i = 0; i < g.width; ++i)
        g.coverage[static_cast<std::size_t>(j) * g.width + i] = slot->bitmap.buffer[j * slot->bitmap.pitch + i];
  }
  return glyphs_.emplace(key, std::move(g)).first->second;
}

double Font::width(const std::string& text, int px) {
  double w = 0;
  for (const char32_t c : decodeUtf8(text)) w += glyph(c, px).advance;
  return w;
}

double Font::ascent(int px) {
  setSize(px);
  return ft_->face->size->metrics.ascender / 64.0;
}

double Font::descent(int px) {
  setSize(px);
  return -ft_->face->size->metrics.descender / 64.0;
}

std::vector<std::string> Font::wrap(const std::string& text, int px, double maxWidth) {
  std::vector<std::string> lines;
  std::istringstream words(text);
  std::string word, line;
  while (words >> word) {
    const std::string candidate = line.empty() ? word : line + " " + word;
    if (!line.empty() && width(candidate, px) > maxWidth) {
      lines.push_back(line);
      line = word;
    } else {
      line = candidate;
    }
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

Box Font::draw(Raster& raster, const std::string& text, Point at, int px, Colour colour, HAlign h, VAlign v,
               bool vertical) {
  const std::u32string codes = decodeUtf8(text);
  const double asc = ascent(px), desc = descent(px);
  double advance = 0;
  for (const char32_t c : codes) advance += glyph(c, px).advance;
  // The text laid out horizontally in a mask: width = advance, height = ascent + descent, baseline at ascent.
  const int w = static_cast<int>(std::ceil(advance)) + 2, hgt = static_cast<int>(std::ceil(asc + desc)) + 1;
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(w) * hgt, 0);
  double pen = 0;
  const int baseline = static_cast<int>(std::round(asc));
  for (const char32_t c : codes) {
    const Glyph& g = glyph(c, px);
    const int x0 = static_cast<int>(std::round(pen)) + g.left, y0 = baseline - g.top;
    for (int j = 0; j < g.rows; ++j)
      for (int i = 0; i < g.width; ++i) {
        const int x = x0 + i, y = y0 + j;
        if (x < 0 || y < 0 || x >= w || y >= hgt) continue;
        auto& m = mask[static_cast<std::size_t>(y) * w + x];
        m = static_cast<std::uint8_t>(std::min(255, m + g.coverage[static_cast<std::size_t>(j) * g.width + i]));
      }
    pen += g.advance;
  }
  // Offsets of the anchor inside the (unturned) mask.
  const double ax = h == HAlign::Left ? 0 : h == HAlign::Centre ? advance / 2 : advance;
  const double ay = v == VAlign::Top ? 0 : v == VAlign::Centre ? (asc + desc) / 2 : v == VAlign::Baseline ? asc : asc + desc;
  if (!vertical) {
    const int x = static_cast<int>(std::round(at.x - ax)), y = static_cast<int>(std::round(at.y - ay));
    raster.drawMask(x, y, w, hgt, mask, colour);
    return {static_cast<double>(x), static_cast<double>(y), static_cast<double>(x + advance), static_cast<double>(y + hgt)};
  }
  // Turned anticlockwise: mask (i, j) goes to (j, w - 1 - i); the text runs upwards from the anchor's alignment.
  std::vector<std::uint8_t> turned(mask.size());
  for (int j = 0; j < hgt; ++j)
    for (int i = 0; i < w; ++i) turned[static_cast<std::size_t>(w - 1 - i) * hgt + j] = mask[static_cast<std::size_t>(j) * w + i];
  const int x = static_cast<int>(std::round(at.x - ay)), y = static_cast<int>(std::round(at.y - (w - 1 - ax)));
  raster.drawMask(x, y, hgt, w, turned, colour);
  return {static_cast<double>(x), static_cast<double>(y), static_cast<double>(x + hgt), static_cast<double>(y + w)};
}

}  // namespace fpdp::plot
