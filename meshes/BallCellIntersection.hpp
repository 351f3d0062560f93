#pragma once
// The measure of an axis-aligned cell inside a ball: the exact cut-cell fraction a projection onto a ball needs
// (solver/noisygd/ConstraintProjection). 2-D in closed form: the cell's x-range is split where the circle meets the
// lines y = y0, y = y1, and on each piece the chord is a constant, sqrt(r^2 - x^2) plus a constant, or twice the root,
// integrated exactly. 3-D: the slices z = const are discs, so the volume is the integral over z of the 2-D area;
// the integrand is smooth inside the pieces between the heights where the slice's circle passes a corner or touches
// an edge line of the cell, and grows like a power 3/2 at their ends; 8-point Gauss-Legendre after a map flat at the
// ends gives each cell's volume to 1e-7 of it (tests/meshes: at most 6e-8 on 200 random cells against a fine
// quadrature), far below the O(h^2) error of the cut-cell split it serves.
#include <array>

namespace fpdp::meshes {

/// The area (dim 2) or volume (dim 3) of the cell [lo, hi] inside the closed ball |x - centre| <= r; lo[a] <= hi[a].
/// Components beyond dim are ignored. Exact in 2-D up to round-off; 3-D to 1e-7 of the cell's volume.
double cellMeasureInBall(const std::array<double, 3>& lo, const std::array<double, 3>& hi,
                         const std::array<double, 3>& centre, double r, int dim);

}  // namespace fpdp::meshes
