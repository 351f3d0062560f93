#pragma once
// Stage 5 of a run (docs/architecture.md): the summary on standard output (rank 0): what was run, the problem
// constants and which assumptions hold, the final divergences beside the closed form where one exists,
// conservation and positivity, every warning, the observers' own lines (rate checks, bounds and (eps, delta)), and
// the wall time.
#include <optional>
#include <string>

#include "app/observers/AccuracyOutput.hpp"
#include "app/observers/DivergenceSeries.hpp"
#include "app/observers/ExactReferenceOutput.hpp"
#include "app/observers/HeadlineOutput.hpp"
#include "app/observers/NumericalFaults.hpp"
#include "app/observers/PrivacyOutput.hpp"
#include "app/observers/RenyiRateOutput.hpp"
#include "app/observers/TracingOutput.hpp"
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

/// What the summary reports on; the optional parts are null where the run has none.
struct RunReport {
  const RunPlan& plan;
  int ranks;
  const RunStepper& stepper;
  const DivergenceSeries& series;
  const PrivacyOutput& privacy;
  const AccuracyOutput& accuracy;
  const HeadlineOutput& headline;
  const NumericalFaultMonitor& faults;
  const solver::DivergenceFunctionals& divergences;
  const ExactReferenceOutput* exact;
  const RenyiRateOutput* renyiRate;
  const TracingOutput* tracing;
  std::string plotWarning;  // why the plots failed (empty: drawn or not asked for)
  RunTimes times;
  std::string outputDirectory;
};

/// The summary's text (call on rank 0 only).
std::string runSummaryText(const RunReport& r);

}  // namespace fpdp::app
