#include "app/observers/DivergenceSeries.hpp"

#include <algorithm>
#include <cmath>

#include "app/observers/FunctionalsOutput.hpp"
#include "app/observers/StepColumns.hpp"

namespace fpdp::app {

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

DivergenceSeries::DivergenceSeries(const std::string& directory, bool writer, std::vector<io::Column> columns,
                                   std::size_t orders)
    : table_(std::move(columns)), columns_(io::columnNames(table_)), minDensity_(INFINITY),
      worstBoundaryShare_(orders, 0.0) {
  if (writer) csv_.emplace(directory + "/divergence.csv", columns_);
}

void DivergenceSeries::observe(const OutputStep& s) {
  const solver::DivergenceValues& v = s.values;
  if (s.step == 0) {
    initialMass_[0] = v.p.mass;
    initialMass_[1] = v.q.mass;
  }
  worstMassDrift_ = std::max({worstMassDrift_, std::fabs(v.p.mass - initialMass_[0]) / initialMass_[0],
                              std::fabs(v.q.mass - initialMass_[1]) / initialMass_[1]});
  minDensity_ = std::min({minDensity_, v.p.min, v.q.min});
  for (std::size_t k = 0; k < v.renyiBoundaryShare.size(); ++k)
    worstBoundaryShare_[k] = std::max(worstBoundaryShare_[k], v.renyiBoundaryShare[k]);
  totalNegative_ = std::max(totalNegative_, v.p.negativeCells + v.q.negativeCells);
  rows_.push_back(s.row);
  if (csv_) csv_->addRow(s.row);
}

void DivergenceSeries::saveState(io::CheckpointData& ck) const {
  ck.putTable("/run/rows", rows_, columns_.size());
  ck.put("/run/initial_mass", {initialMass_[0], initialMass_[1]});
  ck.put("/run/min_density", {minDensity_});
  ck.put("/run/total_negative", {static_cast<double>(totalNegative_)});
  ck.put("/run/worst_mass_drift", {worstMassDrift_});
  ck.put("/run/worst_boundary_share", worstBoundaryShare_);
}

void DivergenceSeries::restoreRows(const io::CheckpointData& ck, std::size_t outputSteps, long every) {
  rows_ = ck.table("/run/rows", columns_.size(), outputSteps);
  for (std::size_t n = 0; n < outputSteps; ++n)
    if (rows_[n][0] != static_cast<double>(n) * static_cast<double>(every))
      ck.fail("/run/rows/values", "row " + std::to_string(n) + " is not output step " +
                                      std::to_string(n * static_cast<std::size_t>(every)));
  const auto& m0 = ck.array("/run/initial_mass", 2);
  initialMass_[0] = m0[0];
  initialMass_[1] = m0[1];
  minDensity_ = ck.array("/run/min_density", 1)[0];
  totalNegative_ = ck.integer("/run/total_negative", 0, 1L << 52);
  worstMassDrift_ = ck.array("/run/worst_mass_drift", 1)[0];
  worstBoundaryShare_ = ck.array("/run/worst_boundary_share", worstBoundaryShare_.size());
}

void DivergenceSeries::writeHdf5(io::Hdf5Output& h5) { h5.writeTable("series", table_, rows_); }

void DivergenceSeries::close() { csv_.reset(); }

}  // namespace fpdp::app
