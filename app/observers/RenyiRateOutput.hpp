#pragma once
// renyi_rate.csv and the group /renyi_rate of fpdp.h5 (docs/output.md, docs/rate.md): the rate of R_alpha two ways
// (the identity of MATH.md §4 by quadrature, solver/functionals/RenyiRate; the finite difference of the computed R_alpha), the
// right side of CYS Lemma 2 with the optimal gamma and gamma = 1/2, each with S_v = S_g/n and with the measured drift
// gap, the margin, and c_eff of CYS Lemma 3 against c = lambda/(2 sigma^2) of CYS Lemma 5.
// Langevin runs: one row per output step and order. Noisy GD with tracing (noisy_gd.tracing_substeps = m > 0): one row
// per tracing substep s = j eta/m (j = 1..m) and order; the drifts are V_t, V'_t of the tracing diffusions.
// Rows are collected as the run goes and written at the end (the finite difference needs the next row).
#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "app/case/Case.hpp"
#include "app/run/RunObserver.hpp"
#include "io/Hdf5Output.hpp"
#include "models/LossConstants.hpp"
#include "solver/functionals/Divergences.hpp"
#include "solver/functionals/KlRate.hpp"
#include "io/CheckpointFile.hpp"
#include "solver/functionals/RenyiRate.hpp"
#include "solver/noisygd/TracingDiffusion.hpp"

namespace fpdp::app {

struct RenyiRateSetup {
  std::vector<double> orders;
  std::vector<std::string> labels;
  models::Matrix sigma;                // the diffusion matrix of both equations (tracing: the tracer's)
  std::string identityNotApplicable;   // non-empty: why the identity of MATH.md §4 does not apply (e.g. Sigma != Sigma')
  std::optional<double> sv;            // S_g/n (stated or computed), if known
  std::string svSource;                // where S_g/n comes from, or why it is unknown
  std::optional<double> cTheory;       // lambda/(2 sigma^2) when CYS Lemma 5's assumptions hold
  std::string cTheoryNotApplicable;    // otherwise why not
  // Langevin: grad L_D - grad L_D' at the owned cell centres (shared with the KL rate); null for the tracing
  // diffusions, whose gap changes with the step.
  std::shared_ptr<const solver::CellDriftGap> langevinGap;
};

class RenyiRateOutput final : public RunObserver {
public:
  /// Safety factor of the violation tolerance on |rate_identity - rate_finite_difference| (docs/rate.md §3).
  static constexpr double kSafetyFactor = 2.0;
  /// Relative round-off allowance of the quadrature sums (N cells summed: N eps_mach <= 1e-10 for N <= 1e6).
  static constexpr double kRoundOff = 1e-10;
  /// Tilted share of cells without a gradient or drift (excluded_share) above which I/E and X are not trusted. Below
  /// it the share enters the tolerance (docs/rate.md §3). Measured: ~3e-6 at alpha = 10 on the quadratic noisy-GD
  /// case (V_t undefined in the far tails, p_t < 1e-12 max p_t), 0.7-1 on unresolved point-mass starts.
  static constexpr double kExcludedShareLimit = 1e-3;
  /// |rate_identity - rate_finite_difference| / (B + |alpha X|) above which the densities are not resolved well
  /// enough for either rate to check an inequality (docs/rate.md §3).
  static constexpr double kUnresolvedGap = 0.5;

  /// `workspace`: the point-value/gradient work vectors shared with the run's DivergenceFunctionals (null: its own).
  RenyiRateOutput(const std::string& directory, int rank, const meshes::DistributedBoxMesh& mesh, RenyiRateSetup setup,
                  std::shared_ptr<solver::LogRatioWorkspace> workspace = nullptr);
  /// Langevin output step. Collective.
  void observeLangevin(long step, double t, Vec u, const solver::DivergenceValues& v);
  /// The output steps of a Langevin run (setup.gradientD given); noisy GD's rows come from its tracing substeps.
  void observe(const OutputStep& s) override {
    if (setup_.langevinGap) observeLangevin(s.step, s.t, s.u, s.values);
  }
  /// Tracing substep st.s of noisy-GD step k (t = eta k + s); u holds (p_t, p'_t) on the mesh. Collective.
  void observeTracing(long k, const solver::TracingState& st, double t, Vec u, const solver::DivergenceValues& v);
  /// Finite differences, margins, status; writes renyi_rate.csv (rank 0) and /renyi_rate (collective).
  void finish(io::Hdf5Output& h5);
  void writeHdf5(io::Hdf5Output& h5) override { finish(h5); }
  /// The summary lines (rank 0, after finish).
  void summary(std::ostream& s) const;
  /// Rates: summary()'s lines.
  void summarize(SummaryPart part, const SummaryContext&, std::ostream& out) const override {
    if (part == SummaryPart::Rates) summary(out);
  }
  /// Checkpoint/restart (app/run/Checkpoint): the rows observed so far (finish() derives everything else from them).
  void saveState(io::CheckpointData& ck) const override;
  void restoreState(const io::CheckpointData& ck);
  void restoreState(const io::CheckpointData& ck, const RestoredStep&) override { restoreState(ck); }

  struct Row {
    long step = 0;
    long segment = 0;  // rows of one segment and order are neighbours in time (Langevin: 0; tracing: the step k)
    double s = 0, t = 0, alpha = 0;
    std::size_t order = 0;
    double renyi = 0, dRenyiDAlpha = 0;
    bool renyiReliable = true;  // DivergenceValues::renyiStatus is Finite
    solver::RenyiRateEntry rate;
    // Filled by finish():
    double finiteDifference = 0, tolerance = 0;
    double rhsOptimalSv = 0, rhsHalfSv = 0, rhsOptimalMeasured = 0, rhsHalfMeasured = 0;
    double marginOptimalMeasured = 0, marginOptimalSv = 0;
    double cEff = 0, lsiRatio = 0;
    std::string status, lsiStatus;
    std::string reason;  // why not_applicable (summary)
  };
  const std::vector<Row>& rows() const { return rows_; }

private:
  void add(long step, long segment, double s, double t, Vec u, const solver::DivergenceValues& v,
           const std::vector<std::array<double, 3>>& gap);

  std::string directory_;
  int rank_;
  const meshes::DistributedBoxMesh& mesh_;
  RenyiRateSetup setup_;
  solver::RenyiRateFunctional functional_;
  double sigmaMinEigenvalue_ = 0.0;
  std::vector<std::array<double, 3>> gapWork_;  // tracing: g1 - g2 of the present step
  std::vector<Row> rows_;
  bool finished_ = false;
};

/// The setup of a run: Sigma, S_g/n (stated in the case, else this replaced pair's), and c = lambda/(2 sigma^2) of
/// CYS Lemma 5 where its assumptions hold (lambda > 0, isotropic noise, eta beta < 1 for noisy GD, initial covariance
/// <= 2 sigma^2/lambda; docs/rate.md §4), else the reason. langevinGap: Langevin only (null for noisy GD).
RenyiRateSetup renyiRateSetup(const Case& c, std::size_t n, bool replacement, const models::LossConstants& constants,
                              const std::vector<double>& orders,
                              std::shared_ptr<const solver::CellDriftGap> langevinGap);

}  // namespace fpdp::app
