#include "app/plots/FigureLayout.hpp"

#include <cmath>

namespace fpdp::app::plots {

Panels makeFigure(int panels, double panelW, double h, double legendW, int rows, double dpi) {
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
  p.figure->setLegendPanel({(panels * panelW + 0.05) * dpi, 0.04 * H * dpi, (W - 0.05) * dpi, 0.98 * H * dpi});
  return p;
}

}  // namespace fpdp::app::plots
