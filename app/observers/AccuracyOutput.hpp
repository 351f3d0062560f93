#pragma once
// accuracy.csv and /accuracy in fpdp.h5 (docs/scheme.md §8, docs/output.md): for every KL, TV and R_alpha the run
// writes, and eps_exact at every delta of privacy.delta_grid, the estimate of its discretisation error from the
// companion solves on 2h and 4h (app/run/CompanionSolve), whether it is certified, and the conservative value
// X_h + estimate (TV: at most 1) to use where it is not; the same for delta(eps) both ways on the eps grid of
// hockey_stick.csv, in hockey_stick_accuracy.csv and /hockey_stick_accuracy.
#include <array>
#include <optional>
#include <span>
#include <ostream>
#include <string>
#include <vector>

#include "app/Case.hpp"
#include "app/run/CompanionSolve.hpp"
#include "app/observers/NumericalFaults.hpp"
#include "app/run/RunObserver.hpp"
#include "io/Column.hpp"
#include "io/CsvTable.hpp"
#include "models/RdpConversion.hpp"

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

/// How far one direction's root eps~ of delta~(eps) = delta (models::ExactEpsilon, its evaluated delta~ at the root)
/// can move, at most, where the profile is only known within delta(eps) <= delta~(eps) + boundSelf + e^eps boundOther
/// (TV bounds of the two densities): delta~ is convex in x = e^eps, so it lies below its chord from the root to the
/// first eps of the grid (gridEps ascending, gridDelta the values of delta~ there) at which delta~ plus the allowance
/// is at most delta, and the chord's crossing bounds the moved root. 0 where the allowance fits at the root itself,
/// +inf where no grid point serves (or the root is not finite).
double epsilonShiftBound(const models::ExactEpsilon& root, double delta, std::span<const double> gridEps,
                         std::span<const double> gridDelta, double boundSelf, double boundOther);

/// Absorbing walls (solver::DivergenceValues::absorbedMass) that removed more than this share of either density:
/// KL and R_alpha are not certified (conservative +inf). The removed mass bounds TV and delta(eps), but nothing of
/// KL and R_alpha, whose wall-share test cannot see absorbing walls; a guard, not a bound (docs/noisy-gd.md §4.1).
inline constexpr double kAbsorbedMassGuard = 1e-10;

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
  /// eps_exact at `delta` (of privacy.delta_grid) at the last output step: "" where it is certified, else its
  /// conservative value and that it is not certified (the line beside eps in the summary's (eps, delta) table).
  std::string epsNote(double delta) const;
  /// After a numerical fault (docs/faults.md) that did not stop the run, no number is certified from then on and the
  /// conservative values are the quantities' limits (+inf; TV and delta(eps): 1): the fault (densities at the walls,
  /// negative or non-finite cells) is an error every mesh may share.
  void watchFaults(const NumericalFaultMonitor& faults) { faults_ = &faults; }

private:
  /// The companions' divergences at the run's step (2h, 4h; null where a companion has none).
  std::array<const solver::DivergenceValues*, 2> companionsAt(long step) const;
  /// profile: evaluateProfile's (a zero eps is bounded from it where TV is not sure).
  std::vector<NumberAccuracy> evaluate(long step, const solver::DivergenceValues& v,
                                       const std::vector<NumberAccuracy>& profile) const;
  /// The densities' TV bounds m (a Poisson displacement lattice's, the absorbing walls' removed mass) in `out`
  /// (evaluate's): TV's estimate + m_p + m_q; each eps(delta)'s estimate + how far its roots move where delta(eps)
  /// may be larger by m_p + e^eps m_q (epsilonShiftBound; docs/noisy-gd.md §9.2, docs/scheme.md §8); with a lattice,
  /// KL and R_alpha not certified (conservative +inf).
  void applyDensityTvBound(const solver::DivergenceValues& v, const std::array<double, 2>& m,
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
  std::optional<std::array<double, 2>> absorbedMass_;  // at the last output step
  const NumericalFaultMonitor* faults_ = nullptr;
  std::string faultsAtLast_;  // faults seen by the last output step (empty: none)
  /// faults_' faults so far, and if any, every number of `out` uncertified at the limit `upperLimit(k)`.
  template <class Limit>
  void giveUpAfterFaults(std::vector<NumberAccuracy>& out, Limit upperLimit) const;
  std::optional<io::CsvTable> csv_;
  std::vector<double> eps_;  // the hockey-stick eps grid
  std::vector<std::vector<double>> profileRows_;  // step, t, eps, then (value, estimate, certified, conservative) x 2
  std::optional<io::CsvTable> profileCsv_;
};

}  // namespace fpdp::app
