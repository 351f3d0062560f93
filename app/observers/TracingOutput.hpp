#pragma once
// The coupled tracing diffusions of noisy GD (CYS §3.1, MATH.md §2.2, docs/tracing.md) between the steps, when
// noisy_gd.tracing_substeps > 0: tracing.csv (KL and R_alpha along each step's tracing pair, the change over the
// step, the sup of the drift gap against Lemma 4's S_g/n, the mass error; the same table is /tracing of fpdp.h5), and
// the tracing rows of renyi_rate.csv.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/observers/RenyiRateOutput.hpp"
#include "app/run/RunObserver.hpp"
#include "app/run/RunPlan.hpp"
#include "io/Column.hpp"
#include "io/CsvTable.hpp"
#include "solver/noisygd/TracingDiffusion.hpp"

namespace fpdp::app {

class TracingOutput final : public RunObserver, public StepTracer {
public:
  /// Rank 0 (`writer`) writes DIR/tracing.csv. `renyiRate`: where the tracing substeps' rate rows go (may be null).
  TracingOutput(const std::string& directory, bool writer, const RunPlan& plan,
                const solver::DivergenceFunctionals& divergences, RenyiRateOutput* renyiRate);

  /// The tracing pair of step k, started from the state uk of step k (whose divergences are atStart). Collective.
  void traceStep(long k, Vec uk, const solver::DivergenceValues& atStart) override;

  void observe(const OutputStep&) override {}  // the tracing pairs are traced between the steps (traceStep)
  void saveState(io::CheckpointData& ck) const override;
  void restoreState(const io::CheckpointData& ck, const RestoredStep& at) override;
  void writeHdf5(io::Hdf5Output& h5) override;
  void close() override;
  /// Warnings: Lemma 4 on the tracing diffusions.
  void summarize(SummaryPart part, const SummaryContext& at, std::ostream& out) const override;

  int substeps() const { return substeps_; }
  /// Lemma 4's bound S_g/n (+inf where S_g is not known), the cell-times above it, and the largest
  /// sup|V_t - V'_t| / (S_g/n).
  double lemma4Bound() const { return lemma4Bound_; }
  long lemma4Violations() const { return lemma4Violations_; }
  double worstDriftGapRatio() const { return worstDriftGapRatio_; }

private:
  const RunPlan& plan_;
  const solver::DivergenceFunctionals& divergences_;
  RenyiRateOutput* renyiRate_;
  int substeps_;
  double lemma4Bound_;
  std::unique_ptr<solver::TracingDiffusion> tracer_;
  std::unique_ptr<solver::FieldGatherer> gatherer_;
  std::vector<io::Column> columns_;
  std::vector<std::vector<double>> rows_;  // the rows of tracing.csv so far
  std::optional<io::CsvTable> csv_;
  long lemma4Violations_ = 0;
  double worstDriftGapRatio_ = 0.0;
};

}  // namespace fpdp::app
