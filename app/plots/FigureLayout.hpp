#pragma once
// The layout of the run's line-plot figures: data panels in rows, with fixed margins for tick labels and titles,
// and a legend panel to their right (sizes in inches at `dpi` dots per inch).
#include <memory>
#include <vector>

#include "io/plot/Figure.hpp"

namespace fpdp::app::plots {

struct Panels {
  std::unique_ptr<plot::Figure> figure;
  std::vector<std::vector<plot::Axes*>> axes;  // [row][panel]
};

Panels makeFigure(int panels, double panelW, double h, double legendW, int rows = 1, double dpi = 100);

}  // namespace fpdp::app::plots
