#include "app/observers/DivergenceSeries.hpp"

#include <algorithm>
#include <cmath>

#include "app/observers/FunctionalsOutput.hpp"

namespace fpdp::app {

std::vector<std::string> divergenceColumns(const Case& c, bool constrained) {
  std::vector<std::string> columns{"step", "t", "mass_p", "mass_q", "kl", "tv"};
  for (const auto& name : renyiColumnNames(c.divergence.orders)) columns.push_back(name);
  columns.insert(columns.end(), {"min_p", "min_q", "negative_cells_p", "negative_cells_q"});
  // Projected noisy GD: the boundary bins' masses (part of mass_p, mass_q; in every divergence as singular masses).
  if (constrained) columns.insert(columns.end(), {"boundary_mass_p", "boundary_mass_q"});
  return columns;
}

std::vector<double> divergenceRow(long step, double t, const solver::DivergenceValues& v, bool constrained) {
  std::vector<double> row{static_cast<double>(step), t, v.p.mass, v.q.mass, v.kl, v.tv};
  appendRenyiColumns(row, v);
  row.insert(row.end(), {v.p.min, v.q.min, static_cast<double>(v.p.negativeCells),
                         static_cast<double>(v.q.negativeCells)});
  if (constrained) row.insert(row.end(), {v.p.singularMass, v.q.singularMass});
  return row;
}

DivergenceSeries::DivergenceSeries(const std::string& directory, bool writer, std::vector<std::string> columns,
                                   std::size_t orders)
    : columns_(std::move(columns)), minDensity_(INFINITY), worstBoundaryShare_(orders, 0.0) {
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

void DivergenceSeries::writeHdf5(io::Hdf5Output& h5) { h5.writeSeries(columns_, rows_); }

void DivergenceSeries::close() { csv_.reset(); }

}  // namespace fpdp::app
