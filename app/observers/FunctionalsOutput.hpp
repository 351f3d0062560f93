#pragma once
// Output of the divergence functionals beyond divergence.csv (docs/output.md): renyi.csv (long format, one row per
// output step and order: R_alpha, its status, d R/d alpha, E_alpha, the Rényi information), hockey_stick.csv (one
// row per output step and eps: delta(eps) both ways), and the groups /renyi, /hockey_stick and /privacy_loss of
// fpdp.h5 (the same numbers as arrays over (step, order), (step, eps), (step, bin)). CSV rows are written (and
// flushed) by rank 0 as the run goes; the HDF5 arrays at the end.
#include <optional>
#include <string>
#include <vector>

#include "app/case/Case.hpp"
#include "app/run/DivergenceTable.hpp"
#include "app/run/RunObserver.hpp"
#include "io/CheckpointFile.hpp"
#include "io/CsvTable.hpp"
#include "io/Hdf5Output.hpp"
#include "solver/functionals/Divergences.hpp"

namespace fpdp::app {

class FunctionalsOutput final : public RunObserver {
public:
  /// directory: where the CSV files go; rank 0 writes them. withRenyiTable = false: no renyi.csv and no /renyi (the
  /// whole-field runs beyond three axes, which compute neither I_alpha nor dR/dalpha; their R_alpha are in
  /// divergence.csv and accuracy.csv): hockey_stick.csv and /hockey_stick only.
  FunctionalsOutput(const std::string& directory, int rank, std::vector<double> orders, std::vector<double> eps,
                    int privacyLossBins, bool withRenyiTable = true);
  /// One output step.
  void add(long step, double t, const solver::DivergenceValues& v);
  void observe(const OutputStep& s) override { add(s.step, s.t, s.values); }
  /// Writes the /renyi, /hockey_stick and /privacy_loss groups (collective).
  void writeHdf5(io::Hdf5Output& h5) override;
  /// Closes the CSV files.
  void close() override;
  /// Checkpoint/restart (app/run/Checkpoint): the arrays accumulated so far.
  void saveState(io::CheckpointData& ck) const override;
  void restoreState(const io::CheckpointData& ck, std::size_t outputSteps);
  void restoreState(const io::CheckpointData& ck, const RestoredStep& at) override {
    restoreState(ck, at.outputSteps);
  }

private:
  /// renyi.csv's columns, and the arrays of /renyi from `renyi` on.
  static const std::vector<io::Column>& renyiTable();
  static const io::Column& renyiColumn(const std::string& name);
  /// hockey_stick.csv's columns, and the arrays of /hockey_stick.
  static const std::vector<io::Column>& hockeyTable();
  static const io::Column& hockeyColumn(const std::string& name);
  /// The arrays of /privacy_loss (no CSV file).
  static io::Column privacyLossColumn(const std::string& name);
  std::vector<double> orders_, eps_;
  int bins_;
  bool renyi_ = true;
  std::optional<io::CsvTable> renyiCsv_, hockeyCsv_;
  std::vector<double> steps_, times_;
  // Row-major [step][order] / [step][eps] / [step][bin] arrays for fpdp.h5.
  struct Series {
    std::string name;
    std::vector<double> values;
  };
  std::vector<Series> perOrder_, perEps_, perStep_, perBin_;
  Series& series(std::vector<Series>& list, const std::string& name);
};

}  // namespace fpdp::app
