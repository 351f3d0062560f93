#pragma once
// exact.csv: where the case has a closed form (Gaussian laws: quadratic loss, no projection, MATH.md §6; the minibatch
// forms of §8, app/run/MinibatchOracle.hpp), the L1 errors of the computed cell values, and the exact KL, TV, R_alpha
// and eps(delta) beside the relative errors of the computed ones; the same table is the group /exact of fpdp.h5.
#include <optional>
#include <string>
#include <vector>

#include "app/case/Case.hpp"
#include "app/run/RunObserver.hpp"
#include "app/run/RunPlan.hpp"
#include "io/Column.hpp"
#include "io/CsvTable.hpp"

namespace fpdp::app {


class ExactReferenceOutput final : public RunObserver {
public:
  /// Rank 0 (`writer`) writes DIR/exact.csv.
  ExactReferenceOutput(const std::string& directory, bool writer, const Case& c, const ExactOracle& oracle);

  void observe(const OutputStep& s) override;
  void saveState(io::CheckpointData& ck) const override;
  void restoreState(const io::CheckpointData& ck, const RestoredStep& at) override;
  void writeHdf5(io::Hdf5Output& h5) override;
  void close() override;

  /// The L1 errors at the last output step observed (or restored).
  const std::optional<validation::CellErrors>& lastErrors() const { return lastErrors_; }
  /// Reference: the L1 errors against the exact cell averages at the end.
  void summarize(SummaryPart part, const SummaryContext& at, std::ostream& out) const override;

private:
  const ExactOracle& oracle_;
  bool writer_;
  std::vector<io::Column> columns_;
  std::vector<std::vector<double>> rows_;  // the rows of exact.csv so far (rank 0, which writes them)
  std::vector<double> orders_;
  std::vector<double> deltas_;  // privacy.delta_grid
  std::optional<io::CsvTable> csv_;
  std::optional<validation::CellErrors> lastErrors_;
};

}  // namespace fpdp::app
