#include "validation/ValidationChecks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <stdexcept>

namespace fpdp::validation {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string fmt(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*e", digits, v);
  return buf;
}

std::string fmtG(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// Index of the row of divergence.csv with the given step, or nullopt.
std::optional<std::size_t> rowOfStep(const Table& t, double step) {
  const auto c = t.column("step");
  if (!c) return std::nullopt;
  for (std::size_t r = 0; r < t.rows(); ++r)
    if (t.number(r, *c) == step) return r;
  return std::nullopt;
}

/// "bound5_measured_gap_renyi_10" -> ("bound5_measured_gap", "renyi_10"); the truth column a bound column bounds.
struct BoundColumn {
  std::string label, truth;
};
std::optional<BoundColumn> splitBoundColumn(const std::string& name) {
  if (name.rfind("bound", 0) != 0) return std::nullopt;
  for (const char* quantity : {"_renyi_", "_kl", "_tv"}) {
    const auto at = name.find(quantity);
    if (at == std::string::npos) continue;
    return BoundColumn{name.substr(0, at), name.substr(at + 1)};
  }
  return std::nullopt;
}

}  // namespace

// ---- Table -----------------------------------------------------------------------------------------------------------

Table::Table(std::vector<std::string> columns, std::vector<std::vector<std::string>> cells,
             std::vector<std::vector<double>> numbers)
    : columns_(std::move(columns)), cells_(std::move(cells)), numbers_(std::move(numbers)) {
  if (numbers_.size() != cells_.size()) throw std::logic_error("Table: numbers and cells differ in their rows");
}

std::optional<std::size_t> Table::column(const std::string& name) const {
  for (std::size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i] == name) return i;
  return std::nullopt;
}

double Table::number(std::size_t row, std::size_t col) const { return numbers_.at(row).at(col); }

double Table::number(std::size_t row, const std::string& name) const {
  const auto c = column(name);
  if (!c) throw std::runtime_error("no column '" + name + "'");
  return number(row, *c);
}

std::vector<double> Table::values(const std::string& name) const {
  const auto c = column(name);
  if (!c) throw std::runtime_error("no column '" + name + "'");
  std::vector<double> v(rows());
  for (std::size_t r = 0; r < rows(); ++r) v[r] = number(r, *c);
  return v;
}

const char* statusName(Status s) {
  switch (s) {
    case Status::Pass: return "PASS";
    case Status::Fail: return "FAIL";
    case Status::Skipped: return "SKIPPED";
    case Status::Info: return "INFO";
  }
  return "?";
}

CheckResult judged(std::string check, double measured, std::string comparison, double tolerance, std::string detail) {
  const bool ok = comparison == ">=" ? measured >= tolerance : measured <= tolerance;  // NaN fails either way
  return CheckResult{std::move(check), measured, tolerance, std::move(comparison), ok ? Status::Pass : Status::Fail,
                     std::move(detail)};
}

CheckResult skipped(std::string check, std::string reason) {
  return CheckResult{std::move(check), kNaN, kNaN, "", Status::Skipped, std::move(reason)};
}

CheckResult info(std::string check, std::string finding) {
  return CheckResult{std::move(check), kNaN, kNaN, "", Status::Info, std::move(finding)};
}

std::vector<std::string> renyiOrders(const Table& divergence) {
  std::vector<std::string> orders;
  for (const auto& c : divergence.columns())
    if (c.rfind("renyi_", 0) == 0) orders.push_back(c.substr(6));
  return orders;
}

// ---- Bounds ----------------------------------------------------------------------------------------------------------

std::vector<CheckResult> boundsAboveTruth(const Table& divergence, const Table& bounds, double relativeTolerance,
                                          double floor) {
  // label -> worst excess, tightness, where
  struct Acc {
    double excess = -HUGE_VAL, tightness = HUGE_VAL;
    std::string excessAt, tightAt;
    long compared = 0;
  };
  std::map<std::string, Acc> acc;
  std::vector<std::string> order;
  for (std::size_t bc = 0; bc < bounds.columns().size(); ++bc) {
    const auto split = splitBoundColumn(bounds.columns()[bc]);
    if (!split) continue;
    const auto truthColumn = divergence.column(split->truth);
    if (!truthColumn) continue;
    for (std::size_t r = 0; r < bounds.rows(); ++r) {
      const double bound = bounds.number(r, bc);
      if (std::isnan(bound)) continue;  // the bound does not apply (empty cell)
      const double step = bounds.number(r, "step");
      const auto dr = rowOfStep(divergence, step);
      if (!dr) continue;
      const double truth = divergence.number(*dr, *truthColumn);
      if (std::fabs(truth) < floor && std::fabs(bound) < floor) continue;
      if (!acc.count(split->label)) order.push_back(split->label);
      Acc& a = acc[split->label];
      const std::string where = split->truth + " at step " + fmtG(step);
      const double excess = (truth - bound) / std::max(std::fabs(bound), floor);
      ++a.compared;
      if (!(excess <= a.excess)) {  // NaN truth counts as the worst
        a.excess = std::isnan(excess) ? HUGE_VAL : excess;
        a.excessAt = where + " (truth " + fmt(truth, 6) + ", bound " + fmt(bound, 6) + ")";
      }
      if (truth > floor && bound / truth < a.tightness) {
        a.tightness = bound / truth;
        a.tightAt = where;
      }
    }
  }
  std::vector<CheckResult> out;
  for (const auto& label : order) {
    const Acc& a = acc[label];
    std::string detail = "tightness bound/truth min " + fmtG(a.tightness) + " (" + a.tightAt + "); worst: " +
                         a.excessAt + "; " + std::to_string(a.compared) + " values";
    out.push_back(judged(label + " >= truth", a.excess, "<=", relativeTolerance, detail));
  }
  if (out.empty()) out.push_back(skipped("bounds >= truth", "no applicable bound with a matching column"));
  return out;
}

CheckResult lowerBoundMatch(const Table& divergence, const Table& bounds, const std::string& label, long fromStep,
                            double relativeTolerance) {
  const std::string name = label + " = truth (lower-bound construction)";
  double worst = -HUGE_VAL;
  std::string where;
  long compared = 0;
  for (const auto& order : renyiOrders(divergence)) {
    const auto bc = bounds.column(label + "_renyi_" + order);
    if (!bc) continue;
    for (std::size_t r = 0; r < bounds.rows(); ++r) {
      const double step = bounds.number(r, "step");
      if (step < static_cast<double>(fromStep)) continue;
      const double bound = bounds.number(r, *bc);
      const auto dr = rowOfStep(divergence, step);
      if (!dr) continue;
      const double truth = divergence.number(*dr, "renyi_" + order);
      double err = std::fabs(truth / bound - 1.0);
      if (std::isnan(err)) err = HUGE_VAL;  // a bound that does not apply here cannot be matched
      ++compared;
      if (err > worst) {
        worst = err;
        where = "renyi_" + order + " at step " + fmtG(step) + " (truth " + fmt(truth, 8) + ", bound " +
                fmt(bound, 8) + ")";
      }
    }
  }
  if (compared == 0) return judged(name, kNaN, "<=", relativeTolerance, "no " + label + " column or no step >= " +
                                                                         std::to_string(fromStep));
  return judged(name, worst, "<=", relativeTolerance,
                "max |truth/bound - 1| over steps >= " + std::to_string(fromStep) + ": " + where);
}

// ---- Exact solutions, Lemma 4, mass --------------------------------------------------------------------------------

std::vector<CheckResult> exactErrors(const Table& exact, const std::vector<std::pair<std::string, double>>& tolerances,
                                     long fromStep) {
  std::vector<CheckResult> out;
  for (const auto& [quantity, tol] : tolerances) {
    std::vector<std::string> columns;
    if (quantity == "l1") columns = {"l1_error_p", "l1_error_q"};
    else columns = {quantity + "_rel_error"};
    double worst = -HUGE_VAL;
    std::string where;
    bool found = true;
    for (const auto& col : columns) {
      const auto c = exact.column(col);
      if (!c) {
        found = false;
        break;
      }
      for (std::size_t r = 0; r < exact.rows(); ++r) {
        const double step = exact.number(r, "step");
        if (step < static_cast<double>(fromStep)) continue;
        double e = std::fabs(exact.number(r, *c));
        if (std::isnan(e)) e = HUGE_VAL;
        if (e > worst) {
          worst = e;
          where = col + " at step " + fmtG(step);
        }
      }
    }
    const std::string name = quantity == "l1" ? "exact: L1 error of p, q" : "exact: " + quantity + " rel. error";
    if (!found) out.push_back(judged(name, kNaN, "<=", tol, "exact.csv has no column for '" + quantity + "'"));
    else out.push_back(judged(name, worst, "<=", tol, "max over steps >= " + std::to_string(fromStep) + ": " + where));
  }
  return out;
}

namespace {

/// |a - b| / max(|a|, |b|), 0 when both are 0, both +inf (or -inf), or both NaN; +inf when only one is finite.
double symmetricDifference(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0.0 : HUGE_VAL;
  if (std::isinf(a) || std::isinf(b)) return a == b ? 0.0 : HUGE_VAL;
  const double scale = std::max(std::fabs(a), std::fabs(b));
  return scale == 0.0 ? 0.0 : std::fabs(a - b) / scale;
}

}  // namespace

std::vector<CheckResult> exchangedPair(const PairTables& original, const PairTables& exchanged, double tolerance) {
  std::vector<CheckResult> out;
  // One group: the largest difference of column `a` of the original against column `b` of the exchanged run.
  auto group = [&](const std::string& name, const Table& A, const Table& B, const std::vector<std::string>& keys,
                   const std::vector<std::pair<std::string, std::string>>& pairs) {
    for (const auto& c : keys)
      if (!A.has(c) || !B.has(c)) return out.push_back(judged(name, NAN, "<=", tolerance, "no column " + c));
    for (const auto& [a, b] : pairs)
      if (!A.has(a) || !B.has(b)) return out.push_back(judged(name, NAN, "<=", tolerance, "no column " + a + "/" + b));
    if (A.rows() != B.rows() || A.rows() == 0)
      return out.push_back(judged(name, NAN, "<=", tolerance,
                                  std::to_string(A.rows()) + " rows against " + std::to_string(B.rows())));
    double worst = 0.0;
    std::string where = "every row equal";
    for (std::size_t r = 0; r < A.rows(); ++r) {
      for (const auto& k : keys)
        if (A.number(r, k) != B.number(r, k))
          return out.push_back(judged(name, NAN, "<=", tolerance, "row " + std::to_string(r) + ": " + k + " differs"));
      for (const auto& [a, b] : pairs) {
        const double d = symmetricDifference(A.number(r, a), B.number(r, b));
        if (d > worst || (std::isinf(d) && !std::isinf(worst))) {
          worst = d;
          where = a + " against " + b + " at step " + fmtG(A.number(r, "step"));
        }
      }
    }
    out.push_back(judged(name, worst, "<=", tolerance, where));
  };
  group("exchanged D, D': eps_exact, both directions", original.epsilon, exchanged.epsilon, {"step", "delta"},
        {{"eps_exact", "eps_exact"}, {"eps_exact_pq", "eps_exact_qp"}, {"eps_exact_qp", "eps_exact_pq"},
         {"eps_exact_status", "eps_exact_status"}});
  group("exchanged D, D': eps from RDP", original.epsilon, exchanged.epsilon, {"step", "delta"},
        {{"eps_rdp_cks", "eps_rdp_cks"}, {"eps_rdp_mironov", "eps_rdp_mironov"}, {"eps_rdp_cks_pq", "eps_rdp_cks_qp"},
         {"eps_rdp_cks_qp", "eps_rdp_cks_pq"}});
  group("exchanged D, D': R_alpha(p||q) = R_alpha(q||p)", original.renyi, exchanged.renyi, {"step", "alpha"},
        {{"renyi", "renyi_reverse"}, {"renyi_reverse", "renyi"}});
  group("exchanged D, D': TV", original.divergence, exchanged.divergence, {"step"}, {{"tv", "tv"}});
  return out;
}

std::vector<CheckResult> lemma4(const Table& tracing, double relativeTolerance) {
  const auto gap = tracing.values("sup_drift_gap"), bound = tracing.values("lemma4_bound"),
             cells = tracing.values("cells_above_bound");
  double worst = -HUGE_VAL, cellsAbove = 0;
  std::string where;
  for (std::size_t r = 0; r < tracing.rows(); ++r) {
    double excess = gap[r] / bound[r] - 1.0;
    if (std::isnan(excess)) excess = HUGE_VAL;
    if (excess > worst) {
      worst = excess;
      where = "step " + fmtG(tracing.number(r, "step")) + ", s = " + fmtG(tracing.number(r, "s")) +
              " (sup|V - V'| " + fmt(gap[r], 8) + ", S_g/n " + fmt(bound[r], 8) + ")";
    }
    cellsAbove += std::isnan(cells[r]) ? 1 : cells[r];
  }
  // The divergences of the tracing pair are reported, not judged here (the rate checks use them): how many tracing
  // times have a non-finite KL or R_alpha.
  long nonFinite = 0;
  std::string firstNonFinite;
  for (std::size_t r = 0; r < tracing.rows(); ++r) {
    bool finite = true;
    for (std::size_t c = 0; c < tracing.columns().size(); ++c) {
      const auto& name = tracing.columns()[c];
      if ((name == "kl" || name.rfind("renyi_", 0) == 0) && !std::isfinite(tracing.number(r, c))) finite = false;
    }
    if (!finite && nonFinite++ == 0)
      firstNonFinite = "first at step " + fmtG(tracing.number(r, "step")) + ", s = " + fmtG(tracing.number(r, "s"));
  }
  CheckResult divergences = info("tracing divergences",
                                 nonFinite == 0 ? "KL and R_alpha of the tracing pair finite at every tracing time"
                                                : std::to_string(nonFinite) + " of " + std::to_string(tracing.rows()) +
                                                      " tracing times have a non-finite KL or R_alpha (" +
                                                      firstNonFinite + ")");
  divergences.measured = static_cast<double>(nonFinite);
  return {judged("Lemma 4: sup|V_t - V'_t| / (S_g/n) - 1", worst, "<=", relativeTolerance,
                 std::to_string(tracing.rows()) + " tracing times; worst " + where),
          judged("Lemma 4: cells above S_g/n", cellsAbove, "<=", 0.0, "summed over every tracing time"),
          divergences};
}

CheckResult massConservation(const Table& divergence, double tolerance) {
  double worst = -HUGE_VAL;
  std::string where;
  for (const char* col : {"mass_p", "mass_q"}) {
    const auto m = divergence.values(col);
    for (std::size_t r = 0; r < m.size(); ++r) {
      double e = std::fabs(m[r] - 1.0);
      if (std::isnan(e)) e = HUGE_VAL;
      if (e > worst) {
        worst = e;
        where = std::string(col) + " at step " + fmtG(divergence.number(r, "step"));
      }
    }
  }
  return judged("mass conservation |mass - 1|", worst, "<=", tolerance, "max over output steps: " + where);
}

// ---- Monte Carlo -----------------------------------------------------------------------------------------------------

std::vector<CheckResult> monteCarlo(const Table& agreement, const Table& sampleDivergence) {
  std::vector<CheckResult> out;
  double worst = -HUGE_VAL;
  std::string where;
  for (std::size_t r = 0; r < agreement.rows(); ++r) {
    double ratio = agreement.number(r, "l1") / agreement.number(r, "l1_band");
    if (std::isnan(ratio)) ratio = HUGE_VAL;
    if (ratio > worst) {
      worst = ratio;
      where = "density " + fmtG(agreement.number(r, "density")) + ", N = " + fmtG(agreement.number(r, "particles")) +
              ", step " + fmtG(agreement.number(r, "step"));
    }
  }
  out.push_back(judged("Monte Carlo: L1(sample, solver) / band", worst, "<=", 1.0,
                       "band = E[L1] + McDiarmid margin at the sampler's confidence; worst " + where));
  if (agreement.has("agrees")) {  // L1 band and chi-square together (validation/SampleAgreement.hpp)
    double failing = 0;
    for (std::size_t r = 0; r < agreement.rows(); ++r) failing += agreement.number(r, "agrees") != 1;
    out.push_back(judged("Monte Carlo: density checks disagreeing", failing, "<=", 0.0,
                         "sample histogram against the solver's masses: L1 band and chi-square at the sampler's "
                         "confidence"));
  }
  std::vector<std::string> quantities{"kl"};
  for (const auto& c : sampleDivergence.columns())
    if (c.rfind("renyi_", 0) == 0 && c.size() > 7 && c.substr(c.size() - 7) == "_agrees")
      quantities.push_back(c.substr(0, c.size() - 7));
  for (const auto& q : quantities) {
    if (!sampleDivergence.has(q + "_agrees")) continue;
    double disagreeing = 0;
    long unsampled = 0;
    std::string values;
    for (std::size_t r = 0; r < sampleDivergence.rows(); ++r) {
      if (sampleDivergence.has(q + "_tail_unsampled") && sampleDivergence.number(r, q + "_tail_unsampled") == 1) {
        ++unsampled;
        continue;
      }
      if (sampleDivergence.number(r, q + "_agrees") != 1) disagreeing += 1;
      values = "samples " + fmt(sampleDivergence.number(r, q + "_samples"), 4) + " in [" +
               fmt(sampleDivergence.number(r, q + "_lower"), 4) + ", " +
               fmt(sampleDivergence.number(r, q + "_upper"), 4) + "], quadrature " +
               fmt(sampleDivergence.number(r, q + "_quadrature"), 4);
    }
    if (unsampled == static_cast<long>(sampleDivergence.rows()))
      out.push_back(skipped("Monte Carlo: " + q + " from samples",
                            "the sample does not reach the tail that dominates this order (tail_unsampled)"));
    else
      out.push_back(judged("Monte Carlo: " + q + " steps disagreeing", disagreeing, "<=", 0.0, values));
  }
  if (sampleDivergence.has("audit_exact_outside_band")) {
    double outside = 0;
    for (std::size_t r = 0; r < sampleDivergence.rows(); ++r)
      outside += sampleDivergence.number(r, "audit_exact_outside_band");
    out.push_back(judged("Monte Carlo: audit thresholds outside band", outside, "<=", 0.0,
                         "exact TPR/FPR against the Clopper-Pearson band of the membership-inference audit"));
  }
  return out;
}

// ---- Rényi rate ------------------------------------------------------------------------------------------------------

std::vector<CheckResult> renyiRate(const std::optional<Table>& rate, double rateTolerance, double lsiTolerance) {
  if (!rate) {
    const std::string why = "not available in this build (no renyi_rate.csv: the rate identity / Lemma 2 / LSI "
                            "output is not part of this fpdp)";
    return {skipped("rate_identity_agreement", why), skipped("lemma2_margin", why), skipped("lsi_constant", why)};
  }
  const Table& t = *rate;
  std::vector<CheckResult> out;
  const auto statusColumn = t.column("status");
  auto applicable = [&](std::size_t r) { return !statusColumn || t.text(r, *statusColumn) != "not_applicable"; };
  // 1. The rate identity against the time derivative of the computed R_alpha. The finite difference is central on
  //    interior rows only: the first and last row of each series (per order; for noisy GD per step, since the drifts
  //    jump between steps) are one-sided, first order, and left out. What remains of |identity - d/dt R| beyond twice
  //    the central difference's own truncation error, h1 h2 |d3R/dt3| / 6 with d3R/dt3 the second difference of the
  //    identity's rates (MATH.md §4; docs/validation.md), is the disagreement due to the densities' discretisation.
  {
    std::map<std::pair<double, double>, std::vector<std::size_t>> series;
    for (std::size_t r = 0; r < t.rows(); ++r) {
      if (!applicable(r)) continue;
      const double s = t.number(r, "s");
      series[{t.number(r, "alpha"), s > 0 ? t.number(r, "step") : -1.0}].push_back(r);
    }
    double worst = 0, scale = 0;
    std::string where = "-";
    long n = 0;
    for (const auto& [key, rows] : series)
      for (std::size_t r : rows)
        if (std::isfinite(t.number(r, "rate_identity")))
          scale = std::max(scale, std::fabs(t.number(r, "rate_identity")));
    for (const auto& [key, rows] : series)
      for (std::size_t i = 1; i + 1 < rows.size(); ++i) {
        const std::size_t a = rows[i - 1], r = rows[i], b = rows[i + 1];
        const double ra = t.number(a, "rate_identity"), rr = t.number(r, "rate_identity"),
                     rb = t.number(b, "rate_identity"), fd = t.number(r, "rate_finite_difference");
        const double h1 = t.number(r, "t") - t.number(a, "t"), h2 = t.number(b, "t") - t.number(r, "t");
        if (!(std::isfinite(ra) && std::isfinite(rr) && std::isfinite(rb) && std::isfinite(fd)) || !(h1 > 0 && h2 > 0))
          continue;
        ++n;
        const double third = 2.0 * ((rb - rr) / h2 - (rr - ra) / h1) / (h1 + h2);
        const double truncation = h1 * h2 * std::fabs(third) / 6.0;
        const double excess = std::max(std::fabs(rr - fd) - 2.0 * truncation, 0.0);
        if (excess >= worst) {
          worst = excess;
          where = "step " + fmtG(t.number(r, "step")) + ", t = " + fmtG(t.number(r, "t")) + ", alpha " +
                  fmtG(t.number(r, "alpha")) + " (|identity - d/dt R| " + fmt(std::fabs(rr - fd)) +
                  ", the difference's truncation error " + fmt(truncation) + ")";
        }
      }
    if (n == 0) out.push_back(skipped("rate_identity_agreement", "no interior row with finite rates in renyi_rate.csv"));
    else
      out.push_back(judged("rate_identity_agreement", scale > 0 ? worst / scale : worst, "<=", rateTolerance,
                           "max (|identity - d/dt R| - 2 x central-difference error) / max|identity| over " +
                               std::to_string(n) + " interior rows; worst at " + where));
  }
  // 2. CYS Lemma 2: the rate below the right side (status violation = beyond the discretisation error).
  {
    double violations = 0, smallest = HUGE_VAL;
    std::string where;
    for (std::size_t r = 0; r < t.rows(); ++r) {
      if (statusColumn && t.text(r, *statusColumn) == "violation") {
        violations += 1;
        if (where.empty())
          where = "first violation at step " + fmtG(t.number(r, "step")) + ", t = " + fmtG(t.number(r, "t")) +
                  ", alpha " + fmtG(t.number(r, "alpha")) + ": rate " + fmt(t.number(r, "rate_identity")) +
                  ", Lemma 2 right side " + fmt(t.number(r, "lemma2_rhs_optimal_measured"));
      }
      const double m = t.has("margin_optimal_measured") ? t.number(r, "margin_optimal_measured") : kNaN;
      if (applicable(r) && std::isfinite(m)) smallest = std::min(smallest, m);
    }
    out.push_back(judged("lemma2_margin (violations)", violations, "<=", 0.0,
                         "smallest margin (optimal gamma, measured S_v) " + fmt(smallest) +
                             (where.empty() ? "" : "; " + where)));
  }
  // 3. LSI (CYS Lemma 3): c_eff against Lemma 5's c.
  {
    double smallest = HUGE_VAL;
    std::string where;
    long n = 0;
    for (std::size_t r = 0; r < t.rows(); ++r) {
      const double ratio = t.number(r, "lsi_ratio");
      if (!std::isfinite(ratio)) continue;
      ++n;
      if (ratio < smallest) {
        smallest = ratio;
        where = "step " + fmtG(t.number(r, "step")) + ", alpha " + fmtG(t.number(r, "alpha")) + ": c_eff " +
                fmt(t.number(r, "c_eff")) + ", c_theory " + fmt(t.number(r, "c_theory"));
      }
    }
    if (n == 0) out.push_back(skipped("lsi_constant", "no finite lsi_ratio (no theoretical c for this case)"));
    else
      out.push_back(judged("lsi_constant: min c_eff/c_theory", smallest, ">=", 1.0 - lsiTolerance,
                           std::to_string(n) + " rows; smallest at " + where));
  }
  return out;
}

// ---- Regression ------------------------------------------------------------------------------------------------------

std::vector<ColumnChange> columnChanges(const Table& reference, const Table& current) {
  std::vector<ColumnChange> out;
  if (reference.rows() != current.rows())
    throw std::runtime_error(std::to_string(current.rows()) + " rows, the reference has " +
                             std::to_string(reference.rows()));
  for (std::size_t c = 0; c < reference.columns().size(); ++c) {
    const std::string& name = reference.columns()[c];
    const auto cc = current.column(name);
    if (!cc) throw std::runtime_error("column '" + name + "' of the reference is missing");
    ColumnChange change{name};
    for (std::size_t r = 0; r < reference.rows(); ++r) {
      const double a = reference.number(r, c), b = current.number(r, *cc);
      double rel = 0.0;
      if (std::isnan(a) || std::isnan(b)) rel = std::isnan(a) && std::isnan(b) ? 0.0 : HUGE_VAL;
      else if (std::isinf(a) || std::isinf(b)) rel = a == b ? 0.0 : HUGE_VAL;
      else if (a != b) rel = std::fabs(b - a) / std::max(std::fabs(a), std::fabs(b));
      if (rel > change.largestRelativeChange || r == 0) {
        if (rel >= change.largestRelativeChange) {
          change.largestRelativeChange = rel;
          change.row = r;
          change.oldValue = a;
          change.newValue = b;
        }
      }
    }
    out.push_back(change);
  }
  return out;
}

CheckResult compareWithReference(const std::string& file, const Table& reference, const Table& current,
                                 double relativeTolerance) {
  const std::string name = "regression: " + file;
  std::vector<ColumnChange> changes;
  try {
    changes = columnChanges(reference, current);
  } catch (const std::exception& e) {
    return judged(name, kNaN, "<=", relativeTolerance, std::string("not comparable: ") + e.what());
  }
  const ColumnChange* worst = nullptr;
  for (const auto& c : changes)
    if (!worst || c.largestRelativeChange > worst->largestRelativeChange) worst = &c;
  if (!worst) return judged(name, kNaN, "<=", relativeTolerance, "the reference has no columns");
  return judged(name, worst->largestRelativeChange, "<=", relativeTolerance,
                "largest relative change: " + worst->column + " row " + std::to_string(worst->row + 1) + " (" +
                    fmt(worst->oldValue, 12) + " -> " + fmt(worst->newValue, 12) + "); " +
                    std::to_string(changes.size()) + " columns x " + std::to_string(reference.rows()) + " rows");
}

// ---- Beyond the assumptions ------------------------------------------------------------------------------------------

CheckResult convergenceInK(const Table& divergence, const std::string& column, double convergedRatio) {
  const std::string name = "convergence in K of " + column;
  if (!divergence.has(column)) return skipped(name, "no column " + column);
  const auto R = divergence.values(column);
  const auto step = divergence.values("step");
  const std::size_t n = R.size();
  if (n < 4) return skipped(name, "fewer than 4 output steps");
  // The last output step may be closer than `every` to the one before it: use the last three equally spaced ones.
  std::size_t last = n - 1;
  if (step[last] - step[last - 1] != step[last - 1] - step[last - 2]) --last;
  const double d1 = R[last - 1] - R[last - 2], d2 = R[last] - R[last - 1];
  const double ratio = d2 / d1;
  const double h = step[last] - step[last - 1];
  std::string finding;
  if (!std::isfinite(R[last])) {
    finding = "not finite at the last step (" + fmtG(R[last]) + ")";
  } else if (std::fabs(d2) <= 1e-10 * std::fabs(R[last])) {
    finding = "converged: the last increment " + fmt(d2) + " is below 1e-10 of R = " + fmt(R[last], 6);
  } else if (std::fabs(ratio) < convergedRatio) {
    // Geometric increments d, d r, d r^2, ... sum to d r/(1 - r) beyond the last step (also for r < 0).
    const double limit = R[last] + d2 * ratio / (1.0 - ratio);
    finding = std::string(ratio < 0 ? "converges, oscillating" : "converges") + " (increment ratio " + fmtG(ratio) +
              " per " + fmtG(h) + " steps; R = " + fmt(R[last], 6) + " at step " + fmtG(step[last]) +
              ", last increment " + fmt(d2) + ", geometric extrapolation to " + fmt(limit, 6) + ")";
  } else {
    finding = "still growing (increment ratio " + fmtG(ratio) + " per " + fmtG(h) + " steps, last increment " +
              fmt(d2) + ", R = " + fmt(R[last], 6) + ")";
  }
  CheckResult r = info(name, finding);
  r.measured = ratio;
  return r;
}

std::vector<CheckResult> unapplicableBoundsVersusTruth(
    const Table& divergence, const Table& applicability,
    const std::function<double(int item, double alpha, long step, double t)>& formula, double relativeTolerance) {
  std::vector<CheckResult> out;
  std::map<int, std::string> reasons;  // worst-case-gap rows only (the measured variant has the same reasons)
  for (std::size_t r = 0; r < applicability.rows(); ++r) {
    const auto item = static_cast<int>(applicability.number(r, "item"));
    if (item < 1 || item > 7) continue;
    if (applicability.text(r, *applicability.column("applies")) != "no") continue;
    if (reasons.count(item)) continue;
    reasons[item] = applicability.text(r, *applicability.column("reason_or_qualification"));
  }
  std::string notEvaluable;  // items whose formula needs a constant this case does not have: one summary row
  for (const auto& [item, reason] : reasons) {
    const std::string name = "bound" + std::to_string(item) + " formula vs truth (not applicable)";
    double minRatio = HUGE_VAL;
    std::string below, at;
    long evaluated = 0;
    for (const auto& order : renyiOrders(divergence)) {
      const double alpha = std::strtod(order.c_str(), nullptr);
      for (std::size_t r = 0; r < divergence.rows(); ++r) {
        const double step = divergence.number(r, "step"), t = divergence.number(r, "t");
        const double truth = divergence.number(r, "renyi_" + order);
        const double bound = formula(item, alpha, static_cast<long>(step), t);
        if (!std::isfinite(bound) || !(truth > 1e-14)) continue;
        ++evaluated;
        const double ratio = bound / truth;
        if (ratio < minRatio) {
          minRatio = ratio;
          at = "renyi_" + order + " at step " + fmtG(step);
        }
        if (ratio < 1.0 - relativeTolerance && below.empty())
          below = "renyi_" + order + " at step " + fmtG(step) + " (formula " + fmt(bound, 6) + " < truth " +
                  fmt(truth, 6) + ")";
      }
    }
    CheckResult row;
    if (evaluated == 0) {
      notEvaluable += (notEvaluable.empty() ? "" : "; ") + std::string("item ") + std::to_string(item) + ": " + reason;
      continue;
    }
    if (below.empty() && minRatio >= 1.0) {
      row = info(name, "assumption fails (" + reason + "), yet the formula is above the truth at every step (min "
                           "ratio " + fmtG(minRatio) + ", " + at + ")");
      row.measured = minRatio;
    } else if (below.empty()) {
      row = info(name, "assumption fails (" + reason + "); the formula equals the truth within its discretisation "
                           "tolerance " + fmtG(relativeTolerance) + " (min ratio " + fmtG(minRatio) + ", " + at + ")");
      row.measured = minRatio;
    } else {
      row = info(name, "assumption fails (" + reason + ") and the formula is BELOW the truth beyond the tolerance " +
                           fmtG(relativeTolerance) + ": first at " + below +
                           "; min ratio " + fmtG(minRatio) + " (" + at + ")");
      row.measured = minRatio;
    }
    out.push_back(row);
  }
  if (!notEvaluable.empty())
    out.push_back(info("bound formulas without a value here", "no formula value without the constants they are "
                                                              "written in (" + notEvaluable + ")"));
  return out;
}

double boundFormulaIgnoringAssumptions(const models::BoundProblem& problem, int item, double alpha, long step,
                                       double t) {
  const double g = problem.worstCaseGap.value_or(problem.measuredGap);
  // The isotropic variance of the bounds: sigma^2, or lambda_min(Sigma) (docs/bounds.md §2).
  const double s2 = problem.Sigma.size() ? problem.Sigma.selfadjointView<Eigen::Lower>().eigenvalues().minCoeff()
                                         : kNaN;
  const double tau = problem.noisyGd ? problem.eta * static_cast<double>(step) : t;
  const double eta = problem.eta;
  const bool hasLambda = problem.strongConvexity && *problem.strongConvexity > 0;
  const double lambda = hasLambda ? *problem.strongConvexity : kNaN;
  switch (item) {
    case 1: return models::compositionBound(alpha, g, s2, tau);
    case 2:
      return hasLambda ? models::lsiBound(alpha, g, s2, models::sharpenedLsiConstant(problem.noisyGd, lambda, s2, eta),
                                          tau)
                       : kNaN;
    case 3: return hasLambda ? models::corollary1Bound(alpha, g, s2, lambda, tau) : kNaN;
    case 4:
      return problem.noisyGd && problem.quadraticLoss
                 ? models::quadraticLsiBound(alpha, g, s2, problem.quadraticLambda, eta, step)
                 : kNaN;
    case 5: return problem.noisyGd && hasLambda ? models::shiftedDivergenceBound(alpha, g, s2, lambda, eta, step) : kNaN;
    case 6:
      return problem.noisyGd && problem.quadraticLoss
                 ? models::quadraticNoisyGdExact(alpha, g, s2, problem.quadraticLambda, eta, step, 0.0)
                 : kNaN;
    case 7:
      return !problem.noisyGd && problem.quadraticLoss ? models::ouExact(alpha, g, s2, problem.quadraticLambda, t, 0.0)
                                                       : kNaN;
    default: return kNaN;
  }
}

}  // namespace fpdp::validation
