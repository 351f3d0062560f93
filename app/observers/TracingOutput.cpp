#include "app/observers/TracingOutput.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "app/observers/FunctionalsOutput.hpp"

namespace fpdp::app {

TracingOutput::TracingOutput(const std::string& directory, bool writer, const RunPlan& plan,
                             const solver::DivergenceFunctionals& divergences, RenyiRateOutput* renyiRate)
    : plan_(plan),
      divergences_(divergences),
      renyiRate_(renyiRate),
      substeps_(static_cast<int>(plan.c.noisyGd.tracing_substeps)),
      lemma4Bound_(std::numeric_limits<double>::infinity()) {
  const Case& c = plan.c;
  // Lemma 4: |V_t - V'_t| <= S_g / n, with the stated S_g if the case gives one, else this pair's (MATH.md §1).
  if (const auto Sg = plan.statedSensitivity()) lemma4Bound_ = *Sg / static_cast<double>(plan.D().size());
  solver::TracingSettings ts;
  ts.eta = c.noisyGd.eta;
  const double s2 = c.noise.sigma * c.noise.sigma;
  ts.noiseVariance = {s2, s2, s2};
  ts.lemma4Bound = lemma4Bound_;
  tracer_ = std::make_unique<solver::TracingDiffusion>(plan.mesh.box(), gradientField(plan.losses.lossD, plan.dim),
                                                       gradientField(plan.losses.lossDPrime, plan.dim), ts);
  gatherer_ = std::make_unique<solver::FieldGatherer>(plan.mesh);
  namespace u = io::units;
  columns_ = {io::integer("step", u::kSteps, "The noisy-GD step k the tracing pair starts from."),
              io::real("s", u::kTime, "The time within the step."),
              io::real("t", u::kTime, "The time eta k + s."),
              io::real("kl", u::kNats, "KL of the tracing pair.")};
  for (auto& column : renyiColumns(c.divergence.orders, "(p_s || p'_s) of the tracing pair"))
    columns_.push_back(std::move(column));
  for (const auto& o : c.divergence.orders)
    columns_.push_back(io::real("renyi_" + o.label + "_change_in_step", u::kNats,
                                "The change of R_" + o.label + " since the start of the step."));
  columns_.insert(columns_.end(),
                  {io::real("sup_drift_gap", u::kDrift, "The largest drift difference |V_s - V'_s| over the cells."),
                   io::real("lemma4_bound", u::kDrift, "Lemma 4's bound S_g/n on the drift difference."),
                   io::integer("cells_above_bound", u::kCells, "The number of cells where the drift difference "
                                                               "exceeds lemma4_bound."),
                   io::real("mass_error", u::kOne, "The mass conservation error of the tracing densities.")});
  if (writer) csv_.emplace(directory + "/tracing.csv", io::columnNames(columns_));
}

void TracingOutput::traceStep(long k, Vec uk, const solver::DivergenceValues& atStart) {
  tracer_->setStart(*gatherer_, uk);
  auto work = plan_.mesh.createVector();
  const double eta = plan_.c.noisyGd.eta;
  for (const auto& st : tracer_->run(substeps_)) {
    gatherer_->scatter(st.p, work, 0);
    gatherer_->scatter(st.pPrime, work, 1);
    const auto v = divergences_.evaluate(work);
    std::vector<double> row{static_cast<double>(k), st.s, eta * static_cast<double>(k) + st.s, v.kl};
    if (renyiRate_) renyiRate_->observeTracing(k, st, row[2], work, v);
    appendRenyiColumns(row, v);
    for (std::size_t a = 0; a < v.renyi.size(); ++a) row.push_back(v.renyi[a] - atStart.renyi[a]);
    row.insert(row.end(), {st.supGap, st.lemma4Bound, static_cast<double>(st.cellsAboveBound),
                           std::max(st.massErrorP, st.massErrorPPrime)});
    if (csv_) csv_->addRow(row);
    rows_.push_back(std::move(row));
    lemma4Violations_ += st.cellsAboveBound;
    if (std::isfinite(lemma4Bound_) && lemma4Bound_ > 0)
      worstDriftGapRatio_ = std::max(worstDriftGapRatio_, st.supGap / lemma4Bound_);
  }
}

void TracingOutput::saveState(io::CheckpointData& ck) const {
  ck.put("/run/lemma4_violations", {static_cast<double>(lemma4Violations_)});
  ck.put("/run/worst_drift_gap_ratio", {worstDriftGapRatio_});
  ck.putTable("/tracing/rows", rows_, columns_.size());
}

void TracingOutput::restoreState(const io::CheckpointData& ck, const RestoredStep& at) {
  lemma4Violations_ = ck.integer("/run/lemma4_violations", 0, 1L << 52);
  worstDriftGapRatio_ = ck.array("/run/worst_drift_gap_ratio", 1)[0];
  // Steps 0..K-1 have been traced at the checkpoint's step K.
  rows_ = ck.table("/tracing/rows", columns_.size(),
                   static_cast<std::size_t>(at.step) * static_cast<std::size_t>(substeps_));
}

void TracingOutput::writeHdf5(io::Hdf5Output& h5) { h5.writeTable("tracing", columns_, rows_); }

void TracingOutput::close() { csv_.reset(); }

void TracingOutput::summarize(SummaryPart part, const SummaryContext&, std::ostream& out) const {
  if (part != SummaryPart::Warnings) return;
  char b[600];
  std::snprintf(b, sizeof b,
                "  tracing diffusions (%d substeps per step, tracing.csv): sup |V_t - V'_t| / (S_g/n) = %.6f, "
                "Lemma 4 %s\n",
                substeps_, worstDriftGapRatio_,
                lemma4Violations_ == 0 ? "holds at every cell and time"
                                       : ("VIOLATED in " + std::to_string(lemma4Violations_) + " cell-times").c_str());
  out << b;
}

}  // namespace fpdp::app
