#pragma once
// The one interface through which a run's outputs see it (docs/architecture.md). The stepping stage evaluates the
// divergences at every output step and hands each registered observer the same OutputStep, in registration order;
// at the end every observer writes its part of fpdp.h5, then closes its files. A checkpoint asks each observer for
// what it has accumulated, and a continued run (--restart) gives it back.
//
// A new output is one class implementing RunObserver and one registration line in app/RunCase.cpp.
#include <petscvec.h>

#include <cstddef>
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
};

}  // namespace fpdp::app
