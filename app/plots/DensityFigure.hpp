#pragma once
// densities.png (docs/output.md, "Plots"): p, q, log(p/q) and p - q at up to four output steps; 1-D as curves,
// 2-D as images with colour bars, 3-D as images of the mid-plane slice in z.
#include <memory>

#include "app/plots/RunFiles.hpp"
#include "io/plot/Figure.hpp"

namespace fpdp::app::plots {

/// The figure of `fields` (at least one frame); `noisyGd`: frames are named by step, else by time.
std::unique_ptr<plot::Figure> densityFigure(const Fields& fields, bool noisyGd);

/// log(p/q) where both densities exceed their noise floors (10 times their most negative value, 0 when none) and
/// are positive; NaN elsewhere (a value whose sign and size are not known).
std::vector<double> logRatio(const std::vector<double>& p, const std::vector<double>& q);

}  // namespace fpdp::app::plots
