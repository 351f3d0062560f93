#pragma once
// The divergences of an output step as table columns (docs/output.md): divergence.csv's row, which the stepper hands
// every output (OutputStep::row), and the R_alpha columns and status codes every table of R_alpha shares.
#include <string>
#include <vector>

#include "app/case/Case.hpp"
#include "io/Column.hpp"
#include "solver/functionals/Divergences.hpp"

namespace fpdp::app {

/// renyi.csv's status code: 0 finite, 1 infinite_detected, 2 truncated_suspect, 3 noise_suspect.
double renyiStatusCode(solver::RenyiStatus s);
/// The code table of those codes (the `status_codes` attribute in fpdp.h5), named by solver::renyiStatusName.
std::string renyiStatusCodes();

/// The one mapping (computed R_alpha, status) -> the value written, wherever R_alpha is written (divergence.csv,
/// renyi.csv, fpdp.h5, the summary): +inf for infinite_detected (MATH.md §3: the integral diverges, whatever the box
/// quadrature gave), the computed value otherwise; a value that is not trustworthy (truncated_suspect,
/// noise_suspect) is written as computed and always beside its status code.
double writtenRenyi(double value, solver::RenyiStatus s);
/// divergence.csv's R_alpha columns (docs/output.md): renyi_<label> for each order, then status_renyi_<label> for
/// each order (renyiStatusCode). The status columns do not start with "renyi_": readers select the orders by that
/// prefix. `what`: the pair they are of, for the descriptions ("(p || q)", "(p_s || p'_s) of the tracing pair").
std::vector<io::Column> renyiColumns(const std::vector<RenyiOrder>& orders, const std::string& what);
/// Appends the values of those columns for one output step to a divergence.csv row.
void appendRenyiColumns(std::vector<double>& row, const solver::DivergenceValues& v);

/// The columns of divergence.csv and /series (`constrained`: projected noisy GD, with the boundary bins' masses).
std::vector<io::Column> divergenceTable(const Case& c, bool constrained);
/// Their names: divergence.csv's header.
std::vector<std::string> divergenceColumns(const Case& c, bool constrained);
/// divergence.csv's row of one output step, in divergenceColumns' order.
std::vector<double> divergenceRow(long step, double t, const solver::DivergenceValues& v, bool constrained);

}  // namespace fpdp::app
