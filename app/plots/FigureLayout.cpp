#include "app/plots/FigureLayout.hpp"

#include <algorithm>
#include <cmath>

namespace fpdp::app::plots {

Panels makeFigure(int panels, double panelW, double h, double legendW, int rows, const std::vector<std::string>& note,
                  double dpi) {
  // legendW <= kLegendShare W, with W = panels panelW + legendW
  panelW = std::max(panelW, legendW * (1 - kLegendShare) / kLegendShare / panels);
  const double W = panels * panelW + legendW, H = rows * h;
  Panels p{std::make_unique<plot::Figure>(static_cast<int>(std::lround(W * dpi)), static_cast<int>(std::lround(H * dpi))),
           {}};
  for (int r = 0; r < rows; ++r) {
    std::vector<plot::Axes*> row;
    for (int i = 0; i < panels; ++i) {
      const double left = i * panelW + 0.72, bottom = (rows - 1 - r) * h + 0.5, top = bottom + h - 0.85;
      row.push_back(&p.figure->addAxes({left * dpi, (H - top) * dpi, (left + panelW - 0.95) * dpi, (H - bottom) * dpi}));
    }
    p.axes.push_back(row);
  }
  constexpr int kNotePx = 9;
  const double noteHeight = note.empty() ? 0.0 : static_cast<double>(note.size()) * (kNotePx + 4) + 8;
  p.figure->setLegendPanel(
      {(panels * panelW + 0.05) * dpi, 0.04 * H * dpi, (W - 0.05) * dpi, 0.98 * H * dpi - noteHeight});
  for (std::size_t i = 0; i < note.size(); ++i) {
    const double y = 0.98 * H * dpi - noteHeight + 8 + static_cast<double>(i) * (kNotePx + 4);
    p.figure->addText(note[i], {(panels * panelW + 0.05) * dpi, y}, kNotePx);
  }
  return p;
}

}  // namespace fpdp::app::plots
