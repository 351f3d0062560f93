#pragma once
// The layout of the run's line-plot figures: data panels in rows, with fixed margins for tick labels and titles,
// and a legend panel to their right (sizes in inches at `dpi` dots per inch).
#include <memory>
#include <string>
#include <vector>

#include "io/plot/Figure.hpp"

namespace fpdp::app::plots {

struct Panels {
  std::unique_ptr<plot::Figure> figure;
  std::vector<std::vector<plot::Axes*>> axes;  // [row][panel]
};

/// `panels` data panels per row of width panelW (widened where needed so that the legend takes at most a quarter of
/// the figure's width), `rows` rows of height h, and a legend panel of width legendW to their right; `note`: lines
/// set beneath the legend (what the figure leaves out, say).
Panels makeFigure(int panels, double panelW, double h, double legendW, int rows = 1,
                  const std::vector<std::string>& note = {}, double dpi = 100);

/// The legend's largest share of a figure's width.
inline constexpr double kLegendShare = 0.25;

}  // namespace fpdp::app::plots
