#pragma once
// The checks of `fpdp validate` (docs/validation.md): each takes the tables a run wrote (divergence.csv, bounds.csv,
// exact.csv, tracing.csv, renyi_rate.csv, the sample files), already read into memory by app/ (this layer reads no
// files and parses no TOML), and returns rows of the validation table: the measured margin or error, the tolerance
// it is held to, PASS/FAIL, or SKIPPED with the reason, or INFO for a finding that is reported, not judged (the
// analysis of the cases beyond the papers' assumptions).
//
// What is checked (MATH.md sections):
//   boundsAboveTruth      §5: the computed R_alpha (KL, TV for item 9) below every applicable bound at every step;
//                         tightness = min over steps of bound/truth reported.
//   lowerBoundMatch       §5 items 5, 6 (CYS Thm 3 construction): truth = bound within the discretisation tolerance.
//   exactErrors           §6: the relative errors of exact.csv.
//   lemma4                §2.2 (CYS Lemma 4): sup|V_t - V'_t| <= S_g/n at every tracing time.
//   massConservation      §2: mass of p and q equal to 1 to round-off.
//   monteCarlo            the sampler's histograms and divergences agree with the solver (docs/sampler.md).
//   renyiRate             §4: rate identity vs d/dt of R_alpha, CYS Lemma 2's margin, the LSI constant (Lemma 3).
//   compareWithReference  regression against a stored table.
//   exchangedPair         §7: a case and the same case with D and D' exchanged give the same eps, TV and RDP eps,
//                         and each direction of the one is the other direction of the other.
//   convergenceInK        beyond the assumptions: are the increments of R_alpha over the last output steps shrinking?
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "models/PrivacyBounds.hpp"

namespace fpdp::validation {

/// A table of a run: column names, text cells and their numbers (NaN for empty or text cells), as app/ read them
/// (io/CsvReader: readCsv, parseCsvNumber).
class Table {
public:
  Table() = default;
  /// numbers[r][c] is the number of cells[r][c]; both have columns.size() entries per row.
  Table(std::vector<std::string> columns, std::vector<std::vector<std::string>> cells,
        std::vector<std::vector<double>> numbers);
  const std::vector<std::string>& columns() const { return columns_; }
  std::size_t rows() const { return cells_.size(); }
  std::optional<std::size_t> column(const std::string& name) const;
  bool has(const std::string& name) const { return column(name).has_value(); }
  /// The number in a cell (NaN when empty or not a number).
  double number(std::size_t row, std::size_t column) const;
  double number(std::size_t row, const std::string& column) const;
  const std::string& text(std::size_t row, std::size_t column) const { return cells_.at(row).at(column); }
  /// A whole numeric column; throws std::runtime_error naming the column when it does not exist.
  std::vector<double> values(const std::string& column) const;

private:
  std::vector<std::string> columns_;
  std::vector<std::vector<std::string>> cells_;
  std::vector<std::vector<double>> numbers_;
};

enum class Status { Pass, Fail, Skipped, Info };
const char* statusName(Status s);

struct CheckResult {
  std::string check;         // e.g. "bound5 >= R_alpha"
  double measured = 0.0;     // the margin or error (NaN when not measured)
  double tolerance = 0.0;    // what `measured` is held to (NaN for INFO/SKIPPED rows)
  std::string comparison;    // how: "<=" or ">=" (measured vs tolerance)
  Status status = Status::Info;
  std::string detail;        // where the worst value is, tightness, the reason for SKIPPED, the finding for INFO
};

/// Pass when `measured` compares to `tolerance` as `comparison` says ("<=", ">="); NaN measured fails.
CheckResult judged(std::string check, double measured, std::string comparison, double tolerance, std::string detail);
CheckResult skipped(std::string check, std::string reason);
CheckResult info(std::string check, std::string finding);

/// The orders of divergence.csv: the suffixes of its renyi_<alpha> columns ("2", "10", "1.5").
std::vector<std::string> renyiOrders(const Table& divergence);

/// Every applicable bound of bounds.csv (non-empty columns) against the truth of divergence.csv, one row per bound
/// label (bound5, bound5_measured_gap, ..., bound9 for KL and TV): measured = the largest relative excess
/// (truth - bound)/bound over the steps and orders (negative: below), held to <= relativeTolerance (the truth's
/// discretisation error). The detail gives the tightness min bound/truth over steps with truth > 0 and its place.
/// Steps where both are below `floor` (the start, where both are 0) are not compared.
std::vector<CheckResult> boundsAboveTruth(const Table& divergence, const Table& bounds, double relativeTolerance,
                                          double floor = 1e-14);

/// The lower-bound construction (CYS Thm 3): |truth/bound - 1| over the steps >= fromStep and every order of
/// `label` (e.g. "bound5"), held to <= relativeTolerance.
CheckResult lowerBoundMatch(const Table& divergence, const Table& bounds, const std::string& label, long fromStep,
                            double relativeTolerance);

/// exact.csv: max over the steps >= fromStep of |<quantity>_rel_error| for each quantity with a tolerance
/// (quantity: "kl", "renyi_2", ...; "l1" for max(l1_error_p, l1_error_q)).
std::vector<CheckResult> exactErrors(const Table& exact, const std::vector<std::pair<std::string, double>>& tolerances,
                                     long fromStep);

/// tracing.csv: measured = max sup_drift_gap/lemma4_bound - 1 (<= tolerance, the round-off of the drift gap), and
/// no cell above the bound (cells_above_bound = 0 everywhere); and an INFO row counting the tracing times whose KL or
/// R_alpha is not finite (reported, not judged).
std::vector<CheckResult> lemma4(const Table& tracing, double relativeTolerance);

/// The tables of one run (epsilon.csv, renyi.csv, divergence.csv).
struct PairTables {
  const Table& epsilon;
  const Table& renyi;
  const Table& divergence;
};
/// `exchanged` is `original` with D and D' exchanged (p and q swap): row for row (the same steps, deltas, orders),
/// eps_exact, TV and eps_rdp_cks / eps_rdp_mironov (the larger direction) equal, eps_exact_pq of the one equal to
/// eps_exact_qp of the other, and R_alpha(p || q) of the one equal to R_alpha(q || p) of the other. measured = the
/// largest relative difference per group (both +inf, or both NaN, count as equal).
std::vector<CheckResult> exchangedPair(const PairTables& original, const PairTables& exchanged, double tolerance);

/// divergence.csv: max over steps of |mass - 1| for p and q, <= tolerance.
CheckResult massConservation(const Table& divergence, double tolerance);

/// sample_agreement.csv and sample_divergence.csv of `fpdp sample` beside the run: the sample histograms within
/// their band (largest l1/l1_band <= 1 at every sample size), KL and each R_alpha from samples agree with the
/// solver (except orders whose tail the sample does not reach: reported), the audit's exact curve inside the band.
std::vector<CheckResult> monteCarlo(const Table& agreement, const Table& sampleDivergence);

/// renyi_rate.csv (MATH.md §4; written by app/observers/RenyiRateOutput): "rate_identity_agreement" (max
/// rate_abs_difference relative to the largest |rate_identity|), "lemma2_margin" (rows with status violation: 0;
/// measured = the smallest margin_optimal_measured), "lsi_constant" (smallest lsi_ratio = c_eff/c_theory >=
/// 1 - lsiTolerance over the rows where it is finite). nullopt table: three SKIPPED rows ("not available in this
/// build").
std::vector<CheckResult> renyiRate(const std::optional<Table>& rate, double rateTolerance, double lsiTolerance);

/// Regression: every column of `reference` present in `current` with the same rows (same `step`), each value within
/// |new - old| <= relativeTolerance max(|old|, |new|) (exact equality for inf, nan, 0). One row per file.
struct ColumnChange {
  std::string column;
  double largestRelativeChange = 0.0;  // max over rows
  std::size_t row = 0;                 // where
  double oldValue = 0.0, newValue = 0.0;
};
std::vector<ColumnChange> columnChanges(const Table& reference, const Table& current);
CheckResult compareWithReference(const std::string& file, const Table& reference, const Table& current,
                                 double relativeTolerance);

/// Beyond the assumptions: the increments of `column` of divergence.csv over the last three output steps (equal
/// spacing). d1, d2 the last two increments, ratio = d2/d1: "converges (increment ratio X, extrapolated limit Y)"
/// when |ratio| < convergedRatio (geometric decay; "oscillating" for ratio < 0), or |d2| < 1e-10 |R|; "still
/// growing" otherwise (ratio near 1: linear growth).
CheckResult convergenceInK(const Table& divergence, const std::string& column, double convergedRatio = 0.9);

/// Beyond the assumptions: the formulas of the bounds whose assumptions fail (bound_applicability says "no"),
/// evaluated anyway where their constants exist (`formula(item, alpha, step, t)`, NaN where they do not), against the
/// truth: one INFO row per such item, "above the truth at every step (min ratio X)", "equals the truth within the
/// tolerance" (ratio in [1 - relativeTolerance, 1): the truth's discretisation error) or "BELOW the truth at step K".
std::vector<CheckResult> unapplicableBoundsVersusTruth(
    const Table& divergence, const Table& applicability,
    const std::function<double(int item, double alpha, long step, double t)>& formula, double relativeTolerance);

/// The bound formulas of MATH.md §5 items 1-7 for `problem` with its assumptions NOT checked (the constants that do
/// not exist give NaN): what the published expression gives when applied outside its hypotheses.
double boundFormulaIgnoringAssumptions(const models::BoundProblem& problem, int item, double alpha, long step,
                                       double t);

}  // namespace fpdp::validation
