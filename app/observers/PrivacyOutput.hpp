#pragma once
// The privacy part of a run's output (docs/output.md): the bounds of MATH.md §5 at every output step (bounds.csv),
// which of them apply and why not (bound_applicability.csv), the (eps, delta) figures of MATH.md §7 (epsilon.csv),
// their HDF5 copies (/bounds, /epsilon), the summary's applicability and (eps, delta) tables, and the PNG plots
// (app/plots). RunCase owns the run; this class owns these files.
#include <limits>
#include <optional>
#include <ostream>
#include <utility>
#include <span>
#include <string>
#include <vector>

#include "app/case/Case.hpp"
#include "app/run/DpSgdAccounting.hpp"
#include "app/observers/AccuracyOutput.hpp"
#include "app/run/RunObserver.hpp"
#include "io/CheckpointFile.hpp"
#include "io/CsvTable.hpp"
#include "io/Hdf5Output.hpp"
#include "models/PrivacyBounds.hpp"
#include "solver/functionals/Divergences.hpp"

namespace fpdp::app {

/// The code table of eps_exact_status and of the other statuses with the codes of models::ExactEpsilonStatus (the
/// `status_codes` attribute in fpdp.h5), named by models::exactEpsilonStatusName.
std::string exactEpsilonStatusCodes();

/// The exact eps of the pair at `delta`, from the divergences' root-finding on delta(eps) (solver::DivergenceValues::
/// exactEpsilon, FunctionalSettings::epsilonDeltas; MATH.md §7): null when the values carry none at that delta.
const solver::ExactEpsilonAtDelta* exactEpsilonAt(const solver::DivergenceValues& v, double delta);

/// An RDP conversion of the pair: the conversion of each direction's R_alpha and the larger of the two (MATH.md §7).
struct PairConversion {
  models::EpsilonAtDelta pq, qp;
  models::EpsilonAtDelta pair() const;  // the larger (with its order); NaN when either is NaN
};
/// Mironov and CKS (models/RdpConversion) of the computed R_alpha(p || q) and R_alpha(q || p) at `delta`, orders
/// whose status is not reliable left out. Throws std::logic_error when the values carry no reverse direction
/// (FunctionalSettings::reverseDirection): a one-direction eps is not a guarantee for the pair.
std::pair<PairConversion, PairConversion> computedRdpEpsilon(const std::vector<double>& orders,
                                                             const solver::DivergenceValues& v, double delta);

/// The bounds' inputs for this case (constants, noise, start, gaps); worstCaseGap = S_g/n or nullopt.
models::BoundProblem boundProblem(const Case& c, const std::optional<double>& strongConvexity,
                                  const std::optional<double>& smoothness, std::optional<double> worstCaseGap,
                                  double measuredGap);

/// The privacy part of a run's headline (app/observers/HeadlineOutput): at the last output step and privacy.delta,
/// eps_exact of the pair and of each direction, and the accountants' composition baseline with what it assumes.
struct PrivacyHeadline {
  bool available = false;  // false: no output step yet, or the run finds no eps(delta) roots
  long step = -1;
  double t = 0.0;
  double delta = std::numeric_limits<double>::quiet_NaN();
  double eps = std::numeric_limits<double>::quiet_NaN(), pq = eps, qp = eps;
  models::ExactEpsilonStatus status = models::ExactEpsilonStatus::NotComputed;
  double composition = std::numeric_limits<double>::quiet_NaN();  // NaN: not computed (compositionText says why)
  std::string compositionText;
};

class PrivacyOutput final : public RunObserver {
public:
  /// Opens bounds.csv and epsilon.csv in `directory` and writes bound_applicability.csv (rank 0 only: `writer`).
  PrivacyOutput(const Case& c, models::BoundProblem problem, const std::string& directory, bool writer);

  /// One output step: a bounds.csv row, and one epsilon.csv row per delta of the grid.
  void observe(long step, double t, const solver::DivergenceValues& v);
  void observe(const OutputStep& s) override { observe(s.step, s.t, s.values); }
  /// Copies of the tables into fpdp.h5 (/bounds, /epsilon; collective).
  void writeHdf5(io::Hdf5Output& h5) override;
  /// Flushes and closes the CSV files.
  void close() override;
  /// The summary's lines: applicability of every bound and the (eps, delta) table at the last output step;
  /// `epsAccuracy`: what accuracy.csv says of eps_exact at privacy.delta, printed under it (AccuracyOutput::epsNote).
  /// `rdpAccuracy`: the same for the RDP conversions (printed under them).
  void summary(std::ostream& s, const std::string& epsAccuracy = "", const std::string& rdpAccuracy = "") const;
  /// Privacy: summary()'s lines, with the accuracy notes of the output consulted (consultAccuracy).
  void summarize(SummaryPart part, const SummaryContext& at, std::ostream& out) const override;
  /// Where the notes under eps_exact and the RDP conversions come from (registered after this output).
  void consultAccuracy(const AccuracyOutput& accuracy) { accuracy_ = &accuracy; }

  const models::PrivacyBounds& bounds() const { return bounds_; }
  /// eps_exact at privacy.delta and the composition baseline at the last output step.
  PrivacyHeadline headline() const;

  /// Checkpoint/restart (app/run/Checkpoint): the rows so far; restoreState takes the divergences of the checkpoint's
  /// output step (recomputed from the restored state), which the summary reports if no later step comes.
  void saveState(io::CheckpointData& ck) const override;
  void restoreState(const io::CheckpointData& ck, long step, double t, const solver::DivergenceValues& v,
                    std::size_t outputSteps);
  void restoreState(const io::CheckpointData& ck, const RestoredStep& at) override {
    restoreState(ck, at.step, at.t, at.values, at.outputSteps);
  }

private:
  /// The accountants' baseline: mu of the exact Gaussian composition over [0, t] = mu(1) sqrt(t), NaN with the reason
  /// when it does not exist (MATH.md §8, models/GaussianComposition.hpp); set up once from the bound problem.
  void setUpComposition();
  double compositionMu(double t) const;
  /// The bounds as this run may present them: with minibatches (MATH.md §8) none applies (minibatchReason_ says why).
  models::Applicability applicability(int item, models::GapKind kind) const;
  double boundRenyi(int item, models::GapKind kind, double alpha, long step, double t) const;
  double boundKl(models::GapKind kind, long step, double t) const;
  double boundTv(models::GapKind kind, long step, double t) const;
  std::string minibatchReason_;  // why the full-batch bounds do not apply (empty: full batches or Langevin)
  double compositionMuAtUnitTime_ = std::numeric_limits<double>::quiet_NaN();
  std::string compositionUnavailable_;
  void compositionSummary(std::ostream& s, const std::vector<double>& row, std::size_t col) const;
  /// Minibatch noisy GD: the composition baseline of cyclic or Poisson batches (app/run/DpSgdAccounting.hpp).
  std::optional<CompositionBaseline> minibatch_;

  const Case& case_;
  models::PrivacyBounds bounds_;
  std::vector<double> orders_;
  std::vector<io::Column> boundColumns_, epsilonColumns_;
  std::vector<std::vector<double>> boundRows_, epsilonRows_;  // NaN where a value does not exist
  std::optional<io::CsvTable> boundsCsv_, epsilonCsv_;
  std::string applicabilityText_;
  bool exactColumn_ = false;  // decided at the first output step (the divergences carry eps(delta) roots or not)
  bool epsilonOpened_ = false;
  std::string directory_;
  bool writer_;
  long lastStep_ = -1;
  double lastT_ = 0.0;
  solver::DivergenceValues last_;
  const AccuracyOutput* accuracy_ = nullptr;
};

}  // namespace fpdp::app
