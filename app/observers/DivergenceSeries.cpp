#include "app/observers/DivergenceSeries.hpp"

#include <cstdio>

#include "app/run/RunPlan.hpp"

#include <algorithm>
#include <cmath>

#include "app/observers/FunctionalsOutput.hpp"
#include "app/run/StepColumns.hpp"

namespace fpdp::app {

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

void DivergenceSeries::summarize(SummaryPart part, const SummaryContext& at, std::ostream& out) const {
  const solver::DivergenceValues& last = at.last;
  char b[400];
  if (part == SummaryPart::Health) {
    std::snprintf(b, sizeof b,
                  "  mass p, q at t_end      %.16f  %.16f  (largest relative drift %.2e)\n"
                  "  min density (all outputs)  %.3e  (negative cells at worst: %ld)\n",
                  last.p.mass, last.q.mass, worstMassDrift_, minDensity_, totalNegative_);
    out << b;
    return;
  }
  if (part != SummaryPart::Warnings) return;
  const auto& orders = at.plan.c.divergence.orders;
  std::string atWalls;
  double worstShare = 0.0;
  for (std::size_t k = 0; k < worstBoundaryShare_.size() && k < orders.size(); ++k)
    if (worstBoundaryShare_[k] > solver::DivergenceFunctionals::kBoundaryShareTolerance &&
        !(k < last.renyiStatus.size() && last.renyiStatus[k] == solver::RenyiStatus::InfiniteDetected)) {
      atWalls += (atWalls.empty() ? "R_" : ", R_") + orders[k].label;
      worstShare = std::max(worstShare, worstBoundaryShare_[k]);
    }
  if (atWalls.empty()) return;
  std::snprintf(b, sizeof b, "up to %.1e", worstShare);
  out << "  WARNING: " << atWalls << " not reliable: " << b << " of the integrand lies in the cells at the box walls "
      << "(the tilted law p^a q^(1-a) leaves the box); enlarge mesh.lower/upper\n";
}

}  // namespace fpdp::app
