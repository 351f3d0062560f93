#pragma once
// divergence.csv and the /series table of fpdp.h5: one row per output step (masses, KL, TV, R_alpha per order,
// minima and negative-cell counts, and the boundary bins' masses of projected noisy GD), and the running figures
// the summary reports (largest relative mass drift, smallest density, most negative cells, worst wall share).
#include <optional>
#include <string>
#include <vector>

#include "app/case/Case.hpp"
#include "app/run/DivergenceTable.hpp"
#include "app/run/RunObserver.hpp"
#include "io/Column.hpp"
#include "io/CsvTable.hpp"

namespace fpdp::app {

class DivergenceSeries final : public RunObserver {
public:
  /// Rank 0 (`writer`) writes DIR/divergence.csv.
  DivergenceSeries(const std::string& directory, bool writer, std::vector<io::Column> columns, std::size_t orders);

  void observe(const OutputStep& s) override;
  void saveState(io::CheckpointData& ck) const override;
  void writeHdf5(io::Hdf5Output& h5) override;
  void close() override;
  /// --restart: the rows and running figures up to the checkpoint's output step (checked to be the output steps
  /// 0, every, 2 every, ...). Before the other observers are restored, which see these rows.
  void restoreRows(const io::CheckpointData& ck, std::size_t outputSteps, long every);

  const std::vector<std::string>& columns() const { return columns_; }
  const std::vector<std::vector<double>>& rows() const { return rows_; }
  double worstMassDrift() const { return worstMassDrift_; }
  double minDensity() const { return minDensity_; }
  long mostNegativeCells() const { return totalNegative_; }
  /// Per order: the largest share of the Rényi integrand in the wall cells over all output steps.
  const std::vector<double>& worstBoundaryShare() const { return worstBoundaryShare_; }
  /// Health: the masses at the end with their largest drift, the smallest density and the most negative cells;
  /// Warnings: the orders whose Rényi integrand reached the wall cells beyond the tolerance at some output step.
  void summarize(SummaryPart part, const SummaryContext& at, std::ostream& out) const override;

private:
  std::vector<io::Column> table_;
  std::vector<std::string> columns_;
  std::vector<std::vector<double>> rows_;
  std::optional<io::CsvTable> csv_;
  double initialMass_[2] = {0, 0};
  double minDensity_;
  long totalNegative_ = 0;
  double worstMassDrift_ = 0.0;
  std::vector<double> worstBoundaryShare_;
};

}  // namespace fpdp::app
