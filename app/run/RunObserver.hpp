#pragma once
// The one interface through which a run's outputs see it (docs/architecture.md). The stepping stage evaluates the
// divergences at every output step and hands each registered observer the same OutputStep, in registration order;
// at the end every observer writes its part of fpdp.h5, then closes its files. A checkpoint asks each observer for
// what it has accumulated, and a continued run (--restart) gives it back.
//
// The run's summary is composed from what the observers report (summarize), part by part in the order of
// SummaryPart, each part's lines in registration order: a new output adds its lines without editing the summary.
//
// A new output is one class implementing RunObserver and one registration line in app/commands/RunCase.cpp.
#include <petscvec.h>

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "io/CheckpointFile.hpp"
#include "io/Hdf5Output.hpp"
#include "solver/functionals/Divergences.hpp"

namespace fpdp::app {

/// What an observer sees at an output step: the step, its time, the interlaced state (p, q) and its divergences,
/// and the divergence.csv row of the step (app/run/DivergenceTable) with its column names.
struct OutputStep {
  long step;
  double t;
  Vec u;
  const solver::DivergenceValues& values;
  const std::vector<std::string>& columns;
  const std::vector<double>& row;
};

/// Where a continued run resumes: the checkpoint's output step, its time and state, its divergences (recomputed from
/// the restored state), how many output steps it holds, and every divergence.csv row up to it.
struct RestoredStep {
  long step;
  double t;
  Vec u;
  std::size_t outputSteps;
  const solver::DivergenceValues& values;
  const std::vector<std::string>& columns;
  const std::vector<std::vector<double>>& rows;
};

class RunPlan;

/// The parts of the run's summary an output can add lines to, in the order the summary prints them
/// (app/run/RunSummary.cpp); between them come the pipeline's own lines (what was run, the constants, the final
/// divergences, the operator's positivity, its warnings, the wall time).
enum class SummaryPart {
  Health,     // after the final divergences: masses and densities over the run
  Reference,  // after the operator's positivity: the closed form's errors
  Warnings,   // the first warnings, before the pipeline's
  Accuracy,   // after the warnings: the error estimate
  Rates,      // the rate checks
  Privacy,    // the bounds and the (eps, delta) table, before the wall time
  Headline,   // the answer a user quotes, last
};

/// What an output may consult for its summary lines: the plan and the divergences at the last output step.
struct SummaryContext {
  const RunPlan& plan;
  const solver::DivergenceValues& last;
};

class RunObserver {
public:
  virtual ~RunObserver() = default;
  /// One output step. Collective.
  virtual void observe(const OutputStep& step) = 0;
  /// Every step the stepper takes (the exponential integrator: every output step), before its faults are checked;
  /// nothing is evaluated for it. Not collective.
  virtual void everyStep(long /*step*/, double /*t*/) {}
  /// Checkpoint: what the rest of the run needs of this observer (names under a path of its own).
  virtual void saveState(io::CheckpointData&) const {}
  /// --restart: the state saved by saveState at the checkpoint's output step.
  virtual void restoreState(const io::CheckpointData&, const RestoredStep&) {}
  /// After the last step: this observer's groups of fpdp.h5, and files that need the whole run. Collective.
  virtual void writeHdf5(io::Hdf5Output&) {}
  /// After fpdp.h5 is closed: flush and close this observer's files.
  virtual void close() {}
  /// This observer's lines of the summary's `part` (rank 0, after close).
  virtual void summarize(SummaryPart /*part*/, const SummaryContext& /*at*/, std::ostream& /*out*/) const {}
};

/// What the stepper hands on between two noisy-GD steps (the tracing diffusions of MATH.md §2.2): the state p_k, q_k
/// before step k + 1 and its divergences. Collective.
class StepTracer {
public:
  virtual ~StepTracer() = default;
  virtual void traceStep(long k, Vec u, const solver::DivergenceValues& values) = 0;
};

}  // namespace fpdp::app
