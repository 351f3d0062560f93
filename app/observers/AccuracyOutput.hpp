#pragma once
// accuracy.csv and /accuracy in fpdp.h5 (docs/scheme.md §8, docs/output.md): for every KL, TV and R_alpha the run
// writes (both directions), and eps_exact at every delta of privacy.delta_grid, the estimate of its discretisation
// error from the companion solves (app/run/CompanionSolve), whether it is certified, a conservative value (at least
// the truth) to use where it is not, and the reason code (app/run/Certification); the same for delta(eps) both ways on
// the eps grid of hockey_stick.csv, in hockey_stick_accuracy.csv and /hockey_stick_accuracy.
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "app/case/Case.hpp"
#include "app/run/NumericalFaults.hpp"
#include "app/run/Certification.hpp"
#include "app/run/RunObserver.hpp"
#include "io/Column.hpp"
#include "io/CsvTable.hpp"

namespace fpdp::app {

class AccuracyOutput final : public RunObserver {
public:
  /// Rank 0 (`writer`) writes DIR/accuracy.csv. `judge` holds the case, the eps grid and the companions' values.
  AccuracyOutput(const std::string& directory, bool writer, AccuracyJudge judge);

  void observe(const OutputStep& s) override;
  void saveState(io::CheckpointData& ck) const override;
  void restoreState(const io::CheckpointData& ck, const RestoredStep& at) override;
  void writeHdf5(io::Hdf5Output& h5) override;
  void close() override;
  /// The summary's lines: the estimate of each number at the last output step, and what is not certified, why, and
  /// what to do.
  void summary(std::ostream& s) const;
  /// Accuracy: summary()'s lines.
  void summarize(SummaryPart part, const SummaryContext& at, std::ostream& out) const override;
  /// The line under eps_exact at `delta` in the (eps, delta) table: "" where it is certified, else its conservative
  /// value and why.
  std::string epsNote(double delta) const;
  /// The line under the RDP conversions at `delta`: "" where both are certified, else their conservative values (upper
  /// bounds from the conservative R_alpha) and why.
  std::string rdpNote(double delta) const;
  /// eps_exact at `delta` (of privacy.delta_grid) at the last output step (nullopt: not a number of the run).
  std::optional<NumberAccuracy> epsAt(double delta) const;
  /// The accuracy of number `name` (accuracy.csv's column) at the last output step (nullopt: no such number).
  std::optional<NumberAccuracy> last(const std::string& name) const;
  /// The profile's accuracy at the last output step: delta_pq and delta_qp per eps of the grid, in that order.
  const std::vector<NumberAccuracy>& lastProfile() const { return lastProfile_; }
  const AccuracyJudge& judge() const { return judge_; }
  /// After a numerical fault (docs/faults.md) that did not stop the run, no number is certified from then on and the
  /// conservative values are the quantities' limits (+inf; TV and delta(eps): 1): the fault (densities at the walls,
  /// negative or non-finite cells) is an error every mesh may share.
  void watchFaults(const NumericalFaultMonitor& faults) { faults_ = &faults; }

private:
  bool faulted() const { return faults_ && !faults_->faultsSoFar().empty(); }

  AccuracyJudge judge_;
  std::vector<io::Column> columns_;
  std::vector<std::vector<double>> rows_;
  std::vector<NumberAccuracy> last_, lastProfile_;
  std::optional<std::array<double, 2>> absorbedMass_;  // at the last output step
  double startTruncation_ = 0.0;                        // the start's cut-off mass (walls that do not absorb)
  const NumericalFaultMonitor* faults_ = nullptr;
  std::string faultsAtLast_;  // faults seen by the last output step (empty: none)
  std::optional<io::CsvTable> csv_;
  std::vector<std::vector<double>> profileRows_;  // step, t, eps, then (value, estimate, certified, conservative,
                                                  // status, reason) x 2
  std::optional<io::CsvTable> profileCsv_;
};

}  // namespace fpdp::app
