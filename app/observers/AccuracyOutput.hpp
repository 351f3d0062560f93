#pragma once
// accuracy.csv and /accuracy in fpdp.h5 (docs/scheme.md §8, docs/output.md): for every KL, TV and R_alpha the run
// writes, and eps_exact at every delta of privacy.delta_grid, the estimate of its discretisation error from the
// companion solves on 2h and 4h (app/run/CompanionSolve), whether it is certified, and the conservative value
// X_h + estimate (TV: at most 1) to use where it is not; the same for delta(eps) both ways on the eps grid of
// hockey_stick.csv, in hockey_stick_accuracy.csv and /hockey_stick_accuracy.
#include <array>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "app/Case.hpp"
#include "app/run/CompanionSolve.hpp"
#include "app/run/RunObserver.hpp"
#include "io/Column.hpp"
#include "io/CsvTable.hpp"

namespace fpdp::app {

/// One number's accuracy: its value, the error estimate (NaN: none), whether it is certified, a conservative value.
struct NumberAccuracy {
  double value, estimate, conservative;
  bool certified;
};

/// The accuracy of X_h from the companions' X_2h and X_4h (NaN: no companion) at relative tolerance rtol
/// (docs/scheme.md §8): with d = |X_h - X_2h| and the convergence ratio r = |X_2h - X_4h| / d, the estimate is
/// 2 max(d / (min(r, 4) - 1), |X_2h - X_4h| / 12) (Richardson's error for the observed order, at most second order,
/// from the finer and from the coarser pair, times a safety factor 2; +inf where r <= 1, the meshes not converging),
/// or 2 max(d, |X_2h - X_4h|) where the coarsest mesh is already at round-off. Certified: `trusted` (the number's own
/// status allows it), 2^1.5 <= r <= largestRatio (the asymptotic range of the route's order) and estimate <= rtol
/// |X_h|. `upperLimit`: the largest value the quantity can take (TV: 1).
NumberAccuracy numberAccuracy(double fine, double coarse, double coarser, double rtol, bool trusted,
                              double upperLimit = INFINITY, double largestRatio = INFINITY);

/// The largest convergence ratio of the case's route that counts as asymptotic: 2^(p + 0.5) for its spatial order p
/// (2, or 4 with solver.spatial_order = 4), unbounded for the spectral chapman_kolmogorov route.
double largestConvergenceRatio(const Case& c);

class AccuracyOutput final : public RunObserver {
public:
  /// Rank 0 (`writer`) writes DIR/accuracy.csv.
  /// eps: the run's hockey-stick eps grid (solver::FunctionalSettings::hockeyStickEps).
  AccuracyOutput(const std::string& directory, bool writer, const Case& c, std::vector<double> eps,
                 CompanionValues companion);

  void observe(const OutputStep& s) override;
  void saveState(io::CheckpointData& ck) const override;
  void restoreState(const io::CheckpointData& ck, const RestoredStep& at) override;
  void writeHdf5(io::Hdf5Output& h5) override;
  void close() override;
  /// The summary's lines: the estimate of each number at the last output step, and what is not certified.
  void summary(std::ostream& s) const;

private:
  /// The companions' divergences at the run's step (2h, 4h; null where a companion has none).
  std::array<const solver::DivergenceValues*, 2> companionsAt(long step) const;
  /// profile: evaluateProfile's (the conservative eps of a Poisson displacement lattice comes from it).
  std::vector<NumberAccuracy> evaluate(long step, const solver::DivergenceValues& v,
                                       const std::vector<NumberAccuracy>& profile) const;
  /// A Poisson displacement lattice's TV bounds in `out` (evaluate's): KL and R_alpha not certified (conservative
  /// +inf), TV's estimate + TV_p + TV_q, eps(delta) at most the grid's smallest eps whose conservative delta(eps)
  /// (profile) is at most delta both ways (docs/noisy-gd.md §9.2).
  void applyMixtureBound(const solver::DivergenceValues& v, const std::vector<NumberAccuracy>& profile,
                         std::vector<NumberAccuracy>& out) const;
  /// delta_pq and delta_qp at every eps of the grid, in that order per eps.
  std::vector<NumberAccuracy> evaluateProfile(long step, const solver::DivergenceValues& v) const;

  const Case& case_;
  CompanionValues companion_;
  double largestRatio_;
  std::vector<std::string> names_;  // kl, tv, renyi_<label>...
  std::vector<io::Column> columns_;
  std::vector<std::vector<double>> rows_;
  std::vector<NumberAccuracy> last_;
  std::optional<io::CsvTable> csv_;
  std::vector<double> eps_;  // the hockey-stick eps grid
  std::vector<std::vector<double>> profileRows_;  // step, t, eps, then (value, estimate, certified, conservative) x 2
  std::optional<io::CsvTable> profileCsv_;
};

}  // namespace fpdp::app
