#include "app/run/DivergenceTable.hpp"

#include <cmath>

#include "app/run/StepColumns.hpp"

namespace fpdp::app {

double renyiStatusCode(solver::RenyiStatus s) {
  switch (s) {
    case solver::RenyiStatus::InfiniteDetected: return 1;
    case solver::RenyiStatus::TruncatedSuspect: return 2;
    case solver::RenyiStatus::NoiseSuspect: return 3;
    default: return 0;
  }
}

std::string renyiStatusCodes() {
  std::vector<std::string> names(4);
  for (auto s : {solver::RenyiStatus::Finite, solver::RenyiStatus::InfiniteDetected,
                 solver::RenyiStatus::TruncatedSuspect, solver::RenyiStatus::NoiseSuspect})
    names.at(static_cast<std::size_t>(renyiStatusCode(s))) = solver::renyiStatusName(s);
  return io::codeTable(names);
}

double writtenRenyi(double value, solver::RenyiStatus s) {
  return s == solver::RenyiStatus::InfiniteDetected ? HUGE_VAL : value;
}

std::vector<io::Column> renyiColumns(const std::vector<RenyiOrder>& orders, const std::string& what) {
  std::vector<io::Column> columns;
  for (const auto& o : orders)
    columns.push_back(io::real("renyi_" + o.label, io::units::kNats,
                               "The Renyi divergence R_" + o.label + what + " (inf where it diverges)."));
  for (const auto& o : orders)
    columns.push_back(io::status("status_renyi_" + o.label, "How far renyi_" + o.label + " can be trusted.",
                                 renyiStatusCodes()));
  return columns;
}

void appendRenyiColumns(std::vector<double>& row, const solver::DivergenceValues& v) {
  for (std::size_t k = 0; k < v.renyi.size(); ++k) row.push_back(writtenRenyi(v.renyi[k], v.renyiStatus[k]));
  for (std::size_t k = 0; k < v.renyi.size(); ++k) row.push_back(renyiStatusCode(v.renyiStatus[k]));
}

std::vector<io::Column> divergenceTable(const Case& c, bool constrained) {
  namespace u = io::units;
  std::vector<io::Column> columns{
      outputStepColumn(),
      outputTimeColumn(),
      io::real("mass_p", u::kOne, "The total mass of p (1 at the start, conserved to round-off)."),
      io::real("mass_q", u::kOne, "The total mass of q (1 at the start, conserved to round-off)."),
      io::real("kl", u::kNats, "The Kullback-Leibler divergence KL(p || q)."),
      io::real("tv", u::kOne, "The total variation distance (1/2) int |p - q|.")};
  for (auto& column : renyiColumns(c.divergence.orders, "(p || q)")) columns.push_back(std::move(column));
  const std::string density = u::density(c.mesh.dim);
  columns.insert(columns.end(),
                 {io::real("min_p", density, "The smallest cell value of p."),
                  io::real("min_q", density, "The smallest cell value of q."),
                  io::integer("negative_cells_p", u::kCells, "The number of cells where p is negative."),
                  io::integer("negative_cells_q", u::kCells, "The number of cells where q is negative.")});
  // Projected noisy GD: the boundary bins' masses (part of mass_p, mass_q; in every divergence as singular masses).
  if (constrained)
    columns.insert(columns.end(),
                   {io::real("boundary_mass_p", u::kOne, "The mass of p in the boundary bins of the constraint set."),
                    io::real("boundary_mass_q", u::kOne, "The mass of q in the boundary bins of the constraint set.")});
  return columns;
}

std::vector<std::string> divergenceColumns(const Case& c, bool constrained) {
  return io::columnNames(divergenceTable(c, constrained));
}

std::vector<double> divergenceRow(long step, double t, const solver::DivergenceValues& v, bool constrained) {
  std::vector<double> row{static_cast<double>(step), t, v.p.mass, v.q.mass, v.kl, v.tv};
  appendRenyiColumns(row, v);
  row.insert(row.end(), {v.p.min, v.q.min, static_cast<double>(v.p.negativeCells),
                         static_cast<double>(v.q.negativeCells)});
  if (constrained) row.insert(row.end(), {v.p.singularMass, v.q.singularMass});
  return row;
}

}  // namespace fpdp::app
