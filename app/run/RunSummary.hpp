#pragma once
// Stage 5 of a run (docs/architecture.md): the summary on standard output (rank 0): what was run, the problem
// constants and which assumptions hold, the final divergences beside the closed form where one exists,
// conservation and positivity, every warning, and the wall time, with the lines each output adds to its parts
// (RunObserver::summarize, SummaryPart): the summary knows the pipeline, never the outputs.
#include <optional>
#include <string>

#include "app/run/NumericalFaults.hpp"
#include "app/run/RunObservers.hpp"
#include "app/run/RunPlan.hpp"
#include "app/run/RunStepper.hpp"

namespace fpdp::app {

struct RunTimes {
  double wall = 0.0;      // the whole run
  double setup = 0.0;     // models, mesh, operator, integrator and output files: everything before the first step
  double stepping = 0.0;  // time stepping and output steps
  double observers = 0.0; // Langevin: the output steps' share of the stepping
  double companion = 0.0; // the companion solve of the error estimate (part of the set-up)
  double plots = 0.0;     // drawing the PNG plots after the last step (the plotter's start overlaps the run)
};

/// What the summary reports on: the pipeline's stages and the registered outputs.
struct RunReport {
  const RunPlan& plan;
  int ranks;
  const RunStepper& stepper;
  const NumericalFaultMonitor& faults;
  const solver::DivergenceFunctionals& divergences;
  const RunObservers& observers;
  std::string plotWarning;  // why the plots failed (empty: drawn or not asked for)
  RunTimes times;
  std::string outputDirectory;
};

/// The summary's text (call on rank 0 only).
std::string runSummaryText(const RunReport& r);

}  // namespace fpdp::app
