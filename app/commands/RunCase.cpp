// `fpdp run` as a pipeline of named stages (docs/architecture.md): the case resolved into a plan, the output
// directory opened, the observers registered, the stepping, the finish, and the summary.
#include "app/commands/RunCase.hpp"

#include <petscsys.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

#include "app/run/Checkpoint.hpp"
#include "app/run/NumberFormat.hpp"
#include "app/observers/AccuracyOutput.hpp"
#include "app/observers/CheckpointWriter.hpp"
#include "app/observers/DivergenceSeries.hpp"
#include "app/observers/ExactReferenceOutput.hpp"
#include "app/observers/FieldOutput.hpp"
#include "app/observers/FunctionalsOutput.hpp"
#include "app/observers/HeadlineOutput.hpp"
#include "app/observers/KlRateOutput.hpp"
#include "app/run/NumericalFaults.hpp"
#include "app/observers/PrivacyOutput.hpp"
#include "app/run/ProgressReporter.hpp"
#include "app/observers/RenyiRateOutput.hpp"
#include "app/observers/TracingOutput.hpp"
#include "app/run/Collective.hpp"
#include "app/run/CompanionSolve.hpp"
#include "app/run/CertifyRefinement.hpp"
#include "app/run/InterruptHint.hpp"
#include "app/plots/RunFigures.hpp"
#include <iostream>

#include "app/run/DpSgdAccounting.hpp"
#include "app/run/RunLogStages.hpp"
#include "app/run/RunObservers.hpp"
#include "app/run/RunPlan.hpp"
#include "app/run/RunStepper.hpp"
#include "app/run/RunSummary.hpp"
#include "app/run/WholeFieldRun.hpp"
#include "io/CsvTable.hpp"
#include "io/Hdf5Output.hpp"
#include "models/DivergenceGrids.hpp"

namespace fpdp::app {

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

/// Every functional of MATH.md §3 at each output step, with the noise covariance of p's dynamics for I_alpha^Sigma;
/// one set of point-value and log-ratio-gradient work vectors shared with the Rényi-rate functional
/// (solver/functionals/LogRatioWorkspace.hpp).
struct RunFunctionals {
  static std::vector<double> orderValues(const Case& c) {
    std::vector<double> alphas;
    for (const auto& o : c.divergence.orders) alphas.push_back(o.alpha);
    return alphas;
  }
  explicit RunFunctionals(const RunPlan& plan)
      : settings{orderValues(plan.c),
                 models::uniformEpsGrid(plan.c.divergence.hockeyStickEpsMax, plan.c.divergence.hockeyStickEpsStep),
                 static_cast<int>(plan.c.divergence.privacyLossBins), plan.c.noise.sigmaFor(false, plan.dim),
                 plan.representation, plan.c.privacy.deltaGrid,
                 /*reverseDirection=*/true},  // eps(delta) roots and R_alpha(q||p) for PrivacyOutput
        workspace(std::make_shared<solver::LogRatioWorkspace>(plan.mesh)),
        divergences(plan.mesh, settings, workspace) {}
  const solver::FunctionalSettings settings;
  const std::shared_ptr<solver::LogRatioWorkspace> workspace;
  const solver::DivergenceFunctionals divergences;
};

/// The observers of a run, registered in the order they see each output step; typed references to those the
/// stepper and the summary consult.
struct RunOutputs {
  RunOutputs(const RunPlan& plan, const RunFunctionals& f, const std::string& dir, int rank, io::Hdf5Output& h5,
             CompanionValues companion, CertificationReport certification) {
    const Case& c = plan.c;
    const bool writer = rank == 0;
    const auto gradientD = gradientField(plan.losses.lossD, plan.dim);
    const auto gradientDPrime = gradientField(plan.losses.lossDPrime, plan.dim);
    const auto& orders = f.settings.orders;
    // Langevin: the drift gap at the cells, one array for the KL and the Rényi rates.
    const auto cellGap = plan.noisyGd ? nullptr : solver::gradientGapAtCells(plan.mesh, gradientD, gradientDPrime);
    series = &observers.add<DivergenceSeries>(dir, writer, divergenceTable(c, plan.constrained()), orders.size());
    privacy = &observers.add<PrivacyOutput>(c, caseBoundProblem(plan), dir, writer);
    observers.add<FunctionalsOutput>(dir, rank, orders, f.settings.hockeyStickEps, f.settings.privacyLossBins);
    AccuracyJudge judge(c, f.settings.hockeyStickEps, std::move(companion), identicalPair(c, sameData(plan)));
    judge.setStartTakenExactly(plan.exactFirstStep);
    judge.setPoissonMixture(poissonMixtureModel(c, plan.constants.sensitivity, plan.constants.smoothness));
    // The accountants' composition caps every conservative value (the far-field model decides finiteness here).
    judge.setCompositionBound(lastIterateCompositionMu(c, provenSensitivity(c, plan.losses)), /*finitenessNeedsIt=*/false);
    accuracy = &observers.add<AccuracyOutput>(dir, writer, std::move(judge));
    privacy->consultAccuracy(*accuracy);
    headline = &observers.add<HeadlineOutput>(dir, writer, c, *privacy, *accuracy, std::move(certification));
    if (!plan.noisyGd || c.noisyGd.tracing_substeps > 0)
      renyiRate = &observers.add<RenyiRateOutput>(
          dir, rank, plan.mesh,
          renyiRateSetup(c, plan.D().size(), plan.replacement, plan.constants, orders, cellGap), f.workspace);
    if (!plan.noisyGd)
      observers.add<KlRateOutput>(dir, writer, plan.mesh, c, cellGap, plan.gradientGap);
    if (plan.reference) observers.add<ExactReferenceOutput>(dir, writer, c, *plan.reference);
    if (c.output.fields)
      observers.add<FieldOutput>(h5, plan.mesh, plan.constrained() ? plan.gd.get() : nullptr,
                                 ParaViewOutput(dir, plan.mesh, gradientD, gradientDPrime, orders.front(),
                                                c.divergence.orders.front().label, c.output.vtk));
    if (plan.noisyGd && c.noisyGd.tracing_substeps > 0)
      tracing = &observers.add<TracingOutput>(dir, writer, plan, f.divergences, renyiRate);
  }

  /// The bounds of MATH.md §5 for this case: S_g/n as stated in the case or computed for a replaced record; the
  /// measured gap for the instance variants.
  static models::BoundProblem caseBoundProblem(const RunPlan& plan) {
    const auto Sg = plan.statedSensitivity();
    return boundProblem(plan.c, plan.constants.strongConvexity, plan.constants.smoothness,
                        Sg && plan.replacement ? std::optional<double>(*Sg / plan.D().size()) : std::nullopt,
                        plan.gradientGap);
  }

  /// Whether D and D' hold the same records (then p = q and a zero divergence is exact).
  static bool sameData(const RunPlan& plan) {
    const auto &D = plan.D().records(), &Dp = plan.DPrime().records();
    if (D.size() != Dp.size()) return false;
    for (std::size_t i = 0; i < D.size(); ++i)
      if (D[i].x != Dp[i].x || D[i].y != Dp[i].y) return false;
    return true;
  }

  RunObservers observers;
  // The outputs the pipeline hands something to: the series' rows (restart), the faults (accuracy), the steps between
  // the steps (tracing); the others only in their construction.
  DivergenceSeries* series = nullptr;
  PrivacyOutput* privacy = nullptr;
  AccuracyOutput* accuracy = nullptr;
  HeadlineOutput* headline = nullptr;
  RenyiRateOutput* renyiRate = nullptr;
  TracingOutput* tracing = nullptr;
};

/// --restart: the stepper's state, then the rows, fpdp.h5's record, and every observer's state as they were at the
/// checkpoint's output step K; the CSV files are cut back to their length at K.
void resumeRun(const io::CheckpointData& ck, const RunPlan& plan, RunStepper& stepper, RunOutputs& out,
               io::Hdf5Output& h5, NumericalFaultMonitor& faults, const std::string& workDir, int rank,
               bool announce) {
  const long K = stepper.restore(ck);
  if (announce)
    std::printf("fpdp: continuing '%s' from its checkpoint at step %ld of %ld (t = %s)\n", workDir.c_str(), K,
                plan.steps(), formatNumber(ck.scalar("/run/time"), "%.6g").c_str());
  const auto outputSteps = static_cast<std::size_t>(K / plan.c.output.every) + 1;
  out.series->restoreRows(ck, outputSteps, plan.c.output.every);
  h5.restoreState(ck);
  const std::size_t fieldSteps = plan.c.output.fields ? outputSteps : 0;
  if (h5.fieldStepCount() != fieldSteps)
    ck.fail("/hdf5/field_steps", "expected " + std::to_string(fieldSteps) + " field steps");
  faults.restoreState(ck);  // before the observers: the accuracy consults it
  out.observers.restoreState(ck, {K, ck.scalar("/run/time"), stepper.state(), outputSteps, stepper.restoredValues(),
                                  out.series->columns(), out.series->rows()});
  onRankZero<OutputDirectoryError>(plan.mesh.comm(), rank, [&] { truncateCsvFiles(ck, workDir); });
  io::CsvTable::setContinuedPaths({});
}

/// The plots (app/plots, drawn from the finished files): `announce` says so on standard output while they are drawn.
std::string drawPlotsOfRun(const std::string& dir, bool announce, double& seconds) {
  const auto start = Clock::now();
  if (announce) {
    std::printf("fpdp: drawing plots ...");
    std::fflush(stdout);
  }
  std::string warning = plots::drawRunPlotsOrWarn(dir);
  seconds = secondsSince(start);
  if (announce) std::printf(" %.2f s%s\n", seconds, warning.empty() ? "" : " (failed: see the summary)");
  return warning;
}

/// The companion solves on the 2x, 4x (and 8x) coarser meshes: the error estimate of every number (docs/scheme.md
/// §8). `announce`: say so on standard output, with a progress line, while they run (they precede the run's own
/// progress). Where "auto" fell back from the exponential integrator to BDF, the companions take BDF explicitly, so
/// that they coarsen its time step with the mesh.
CompanionValues companionValues(const Case& c, const RunPlan& plan, MPI_Comm comm, bool announce,
                                const ProgressHook& hook, double& seconds) {
  if (!c.accuracy.estimate) return CompanionValues{"accuracy.estimate = false", "", {}, "", ""};
  const auto start = Clock::now();
  if (announce) {
    std::printf("fpdp: error estimate: solving the case on coarser meshes first\n");
    std::fflush(stdout);
  }
  Case estimated = c;
  if (!plan.autoFallback.empty()) estimated.solver.ts_type = "bdf";
  CompanionValues values = solveCompanions(estimated, comm, CompanionProgress{announce, hook});
  seconds = secondsSince(start);
  if (announce) std::printf("fpdp: error estimate: companion solves done in %.1f s\n", seconds);
  return values;
}

/// A refined run of --certify stopped at accuracy.certify_seconds (CertifyDeadline): the run before it stands in.
struct CertifyBudgetStop : std::runtime_error {
  CertifyBudgetStop(long step, long steps, double seconds)
      : std::runtime_error("accuracy.certify_seconds reached"), step(step), steps(steps), seconds(seconds) {}
  long step, steps;  // where it stopped, of how many
  double seconds;    // the run's wall time when it stopped
};

/// Stops a run of the refinement that has outrun accuracy.certify_seconds while a run that took its steps can stand in
/// for it (CertifyRefinement::overBudget): the budget's prediction of a mesh's cost can be short (seen: a 3-D BDF run
/// on 64^3 cells still stepping after 1500 s under a 600 s budget). Checked at every time step, output step or not
/// (collective: every rank sees every step), so a run whose output steps are far apart stops too; a single step that
/// outlasts the budget is not interrupted (that 3-D run's first BDF step, by LU, took over 13 minutes).
class CertifyDeadline final : public RunObserver {
public:
  CertifyDeadline(const CertifyRefinement& refinement, long steps, Clock::time_point start)
      : refinement_(refinement), steps_(steps), start_(start) {}
  void everyStep(long step, double /*t*/) override {
    // Not at the last step: a run that took its steps is judged whatever it cost.
    const double seconds = secondsSince(start_);
    if (step > 0 && step < steps_ && refinement_.overBudget(step, steps_, seconds))
      throw CertifyBudgetStop(step, steps_, seconds);
  }
  void observe(const OutputStep& /*s*/) override {}

private:
  const CertifyRefinement& refinement_;
  long steps_;
  Clock::time_point start_;
};

/// A numerical fault recurs on a restart: its DIR.partial goes. Any other failure after a checkpoint (a full disk, a
/// lost permission) keeps DIR.partial and its checkpoint for `fpdp run --restart DIR`.
/// A run stopped by its progress hook (RunInterrupted) keeps DIR.partial as a signal does (app/run/InterruptHint) and
/// says so in the exception's message.
template <class Work>
void keepingCheckpointOnFailure(RunOutputDirectory& directory, Work&& work) {
  try {
    work();
  } catch (const NumericalFault&) {
    throw;
  } catch (const CertifyBudgetStop&) {
    throw;  // a run the refinement discards: nothing to continue
  } catch (const RunInterrupted&) {
    directory.keepForRestart();
    throw RunInterrupted(InterruptHint::message(directory.finalDir(), directory.holdsCheckpoint()));
  } catch (...) {
    if (directory.holdsCheckpoint()) {
      directory.keepForRestart();
      std::fprintf(stderr, "fpdp: %s.partial keeps the last checkpoint: once the cause is mended, continue with "
                           "'fpdp run --restart %s'\n", directory.finalDir().c_str(), directory.finalDir().c_str());
    }
    throw;
  }
}

/// Frees the point values and the log-ratio gradient the functionals share (LogRatioWorkspace::release) once every
/// observer that reads them has run: the checkpoint after it, and the integrator's work vectors until the next
/// output step, take their memory (peak memory, docs/scaling.md §6).
class FunctionalWorkRelease final : public RunObserver {
public:
  explicit FunctionalWorkRelease(const solver::DivergenceFunctionals& divergences) : divergences_(divergences) {}
  void observe(const OutputStep&) override { divergences_.releaseWork(); }

private:
  const solver::DivergenceFunctionals& divergences_;
};

// The checkpoint writer and the progress line, after every other observer: a checkpoint holds the whole step.
ProgressReporter& addCheckpointsAndProgress(RunOutputs& out, const RunPlan& plan, const RunFunctionals& functionals,
                                            RunStepper& stepper, io::Hdf5Output& h5, NumericalFaultMonitor& faults,
                                            MPI_Comm comm, int rank, const std::string& dir, bool progress,
                                            const ProgressHook& hook) {
  out.observers.add<FunctionalWorkRelease>(functionals.divergences);
  out.observers.add<CheckpointWriter>(
      comm, rank, dir, plan.c, plan.steps(), plan.noCheckpoints,
      [stepper = &stepper, h5 = &h5, observers = &out.observers, faults = &faults](io::CheckpointData& ck, long step,
                                                                                   double t, Vec u) {
        stepper->saveState(ck, step, t, u);
        h5->saveState(ck);
        observers->saveState(ck);
        faults->saveState(ck);
      });
  return out.observers.add<ProgressReporter>(plan.steps(), progress, "", rank == 0 ? hook : ProgressHook{});
}

}  // namespace

int runCase(const Case& requested, const RunOptions& options) {
  // Four to six parameters: noisy GD on whole fields, not on a DMDA (app/run/WholeFieldRun).
  if (requested.mesh.dim > 3) return runWholeFieldCase(requested, options);
  const auto wallStart = Clock::now();
  const RunLogStages& stages = RunLogStages::get();
  std::optional<ScopedLogStage> stage(std::in_place, stages.setup);
  MPI_Comm comm = PETSC_COMM_WORLD;
  PetscMPIInt rank, size;
  FPDP_PETSC(MPI_Comm_rank(comm, &rank));
  FPDP_PETSC(MPI_Comm_size(comm, &size));
  const io::CheckpointData* resume = options.resume.get();  // --restart: continue from this checkpoint
  if (resume) requireSameRanks(*resume, size);
  // 0. Certified on request: the mesh (time step, box) refined until the numbers asked for are certified. Each run
  // below is the finest level of the sequence so far; one that does not end it is discarded and the next one runs.
  // A continued run's case is already the refined one (its checkpoint's).
  std::optional<CertifyRefinement> refinement;
  if (requested.accuracy.certify != "off" && !resume)
    refinement.emplace(requested, comm,
                       CompanionProgress{rank == 0 && !options.quiet, rank == 0 ? options.progress : ProgressHook{}});
  bool vocabularyShown = false;
  for (;;) {
    std::optional<CertifyAttempt> attempt;
    if (refinement) attempt = refinement->next();
    const Case& c = attempt ? attempt->c : requested;
    try {
      // 1. The plan: models, mesh, discretisation, propagator, exact oracle; the companions of the error estimate.
      stage.emplace(stages.setup);
      const auto setupStart = Clock::now();
      const RunPlan plan(c, comm, resume);
      if (plan.noisyGd && rank == 0 && !options.quiet && !vocabularyShown)
        std::cout << "noisy GD '" << c.name << "' in both vocabularies:\n"
                  << dpSgdVocabulary(c, plan.statedSensitivity()).text() << std::flush;
      vocabularyShown = true;
      const RunFunctionals functionals(plan);
      double companionSeconds = 0.0;
      const ProgressHook hook = rank == 0 ? options.progress : ProgressHook{};
      CompanionValues companion = attempt && attempt->companion
                                      ? std::move(*attempt->companion)
                                      : companionValues(c, plan, comm, rank == 0 && !options.quiet, hook, companionSeconds);
      CertificationReport certification =
          refinement ? refinement->report()
                     : CertificationReport{requested.accuracy.certify == "off" ? "" : requested.accuracy.certify, "",
                                           resume && requested.accuracy.certify != "off" ? "refined before the restart" : "",
                                           "", 0.0};
      // 2. The output: DIR.partial, fpdp.h5, and the observers of every output step (a continued run appends).
      RunOutputDirectory directory(comm, rank, options.outputDirectory, c.resolvedToml, resume != nullptr);
      const std::string& dir = directory.workDir();
      if (resume)
        onRankZero<OutputDirectoryError>(comm, rank,
                                         [&] { io::CsvTable::setContinuedPaths(continuedCsvPaths(*resume, dir)); });
      io::Hdf5Output h5(dir + "/fpdp.h5", plan.mesh, c.resolvedToml, plan.solverDescription);
      RunOutputs out(plan, functionals, dir, rank, h5, std::move(companion), std::move(certification));
      // The refinement judges this run by its divergences at every output step.
      std::map<long, solver::DivergenceValues> levelValues;
      if (refinement) {
        out.observers.add<DivergenceCollector>(levelValues, 1);
        out.observers.add<CertifyDeadline>(*refinement, plan.steps(), setupStart);
      }
      NumericalFaultMonitor faults(c.faults, plan.mesh);
      faults.setNegativeMassRemedy(plan.negativeMassRemedy());
      out.accuracy->watchFaults(faults);
      // 3. The stepping, with checkpoints and the progress line after every other observer.
      RunStepper stepper(plan, functionals.divergences, faults, out.observers, out.series->columns(), out.tracing, &h5);
      ProgressReporter& progressLine = addCheckpointsAndProgress(out, plan, functionals, stepper, h5, faults, comm, rank,
                                                                 dir, rank == 0 && !options.quiet, options.progress);
      std::optional<InterruptHint> interruptHint;
      if (options.interruptHint) interruptHint.emplace(directory.finalDir(), rank == 0);
      stage.emplace(stages.stepping);
      const auto stepStart = Clock::now();
      double stepSeconds = 0.0;
      std::string plotWarning;
      double plotSeconds = 0.0;
      bool accepted = true;
      keepingCheckpointOnFailure(directory, [&] {
        if (resume) resumeRun(*resume, plan, stepper, out, h5, faults, dir, rank, rank == 0 && !options.quiet);
        stepper.run();
        stepSeconds = secondsSince(stepStart);
        if (refinement) {
          progressLine.close();  // the refinement's lines follow
          accepted = refinement->accept(std::move(levelValues), plan.exactFirstStep, plan.autoFallback,
                                        secondsSince(setupStart));
          // Not the final run: DIR.partial goes with `directory`, and the next mesh runs.
          if (!accepted) return;
          out.headline->setCertification(refinement->report());
          companionSeconds = refinement->report().seconds;
        }
        // 4. The finish: every observer's part of fpdp.h5 and its files, the plots, and DIR.partial becomes DIR.
        stage.emplace(stages.finish);
        out.observers.finish(h5);
        if (c.output.plots && rank == 0) plotWarning = drawPlotsOfRun(dir, !options.quiet, plotSeconds);
        directory.publish();
      });
      if (!accepted) continue;
      // 5. The summary.
      if (rank == 0) {
        const std::string summary = runSummaryText(
            {plan, size, stepper, faults, functionals.divergences, out.observers, plotWarning,
             RunTimes{secondsSince(wallStart), std::chrono::duration<double>(stepStart - wallStart).count(), stepSeconds,
                      stepper.observerSeconds(), companionSeconds, plotSeconds},
             directory.finalDir()});
        if (options.summary) {
          options.summary(summary);
        } else {
          std::fputs(summary.c_str(), stdout);
          std::fflush(stdout);
        }
      }
      return 0;
    } catch (const RunInterrupted&) {
      throw;
    } catch (const OutputDirectoryError&) {
      throw;
    } catch (const CertifyBudgetStop& e) {
      refinement->stoppedByBudget(e.step, e.steps, e.seconds);
    } catch (const std::exception& e) {
      // A refined mesh whose run cannot be set up or fails (seen: a spectral route's kernel table beyond its limit at
      // 76800 cells): the finest mesh that ran before it is run again as the final one. Anything else is the run's.
      if (!refinement || !refinement->runFailed(e.what())) throw;
    }
  }
}

}  // namespace fpdp::app
