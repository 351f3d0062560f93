#pragma once
// The grids on which the divergence functionals are evaluated (MATH.md §3): Rényi orders and hockey-stick eps.
// Plain C++ (no PETSc) so that the case reader can resolve them.
#include <vector>

namespace fpdp::models {

/// The dp_accounting order grid: 1.1 to 10.9 by 0.1, 11 to 63 by 1, then 128, 256, 512, 1024 (156 orders), each
/// the double nearest to the decimal number (1.1 is 11/10.0).
std::vector<double> denseRenyiOrders();

/// The eps grid 0, step, 2 step, ..., up to max (inclusive within 1e-9 step), the k-th value k * step.
std::vector<double> uniformEpsGrid(double max, double step);

}  // namespace fpdp::models
