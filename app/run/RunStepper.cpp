#include "app/run/RunStepper.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "app/run/Checkpoint.hpp"
#include "app/run/NumberFormat.hpp"
#include "app/run/DivergenceTable.hpp"
#include "app/run/RunLogStages.hpp"

namespace fpdp::app {

RunStepper::RunStepper(const RunPlan& plan, const solver::DivergenceFunctionals& divergences,
                       NumericalFaultMonitor& faults, RunObservers& observers,
                       const std::vector<std::string>& columns, StepTracer* tracing, io::Hdf5Output* h5)
    : plan_(plan),
      divergences_(divergences),
      faults_(faults),
      observers_(observers),
      columns_(columns),
      tracing_(tracing),
      u_(plan.mesh.createVector()) {
  plan.disc.setInitialState(u_, plan.representation);
  if (h5)  // docs/output.md
    h5->writeReplicated("/run",
                        io::real("initial_resolution", io::units::kOne,
                                 "The initial Gaussian's smallest conditional standard deviation over the width of "
                                 "the cell holding its mean."),
                        {plan.disc.initialResolution()});
  // theta_0 ~ Pi_C(N(m_0, V_0)) (MATH.md §2.1): the initial mass outside C starts on the boundary of C.
  if (plan.constrained()) {
    plan.gd->projectState(u_);
    std::vector<double> points;
    for (const auto& x : plan.gd->boundaryBins().points())
      points.insert(points.end(), x.begin(), x.begin() + plan.dim);
    if (h5)
      h5->writeReplicated("/boundary",
                          io::real("points", io::units::kParameter,
                                   "The representative point of each boundary bin of the constraint set, in bin "
                                   "order."),
                          points, plan.dim);
  }
}

/// Numerical faults at every step (app/run/NumericalFaults.hpp): a fault in faults.stop_on ends the stepping
/// here. At an output step the divergences, then every observer in registration order.
void RunStepper::observe(long step, double t, Vec u) {
  const Case& c = plan_.c;
  const bool constrained = plan_.constrained();
  observers_.everyStep(step, t);
  const WallFigures walls{!constrained, constrained && c.noisyGd.diffusion != "exact_convolution" ? largestWallMass_
                                                                                                  : 0.0};
  if (faults_.check(step, t, u, {outflowP_.total(), outflowQ_.total()}, walls)) {
    if (plan_.evolution) plan_.evolution->stopAfter(step);
    return;
  }
  const bool isOutput = step % c.output.every == 0 || step == plan_.steps();
  if (!isOutput) return;
  if (plan_.evolution) divergences_.setStateErrorFloor(plan_.evolution->stateErrorBound());
  auto v = divergences_.evaluate(u, constrained ? &plan_.gd->boundary() : nullptr);
  attachTvBounds(v);
  const std::vector<double> row = divergenceRow(step, t, v, constrained);
  observers_.observe({step, t, u, v, columns_, row});
  last_ = v;
  lastStep_ = step;
}

/// The TV bounds of the computed densities against the process they stand for: the displacement lattice's, and the
/// mass the absorbing walls have removed (the initial density's cut-off tail, then every step's outflow).
void RunStepper::attachTvBounds(solver::DivergenceValues& v) const {
  if (plan_.gd && plan_.gd->boundsMixture()) v.mixtureTvBound = mixtureTvBound_;
  const double initial = std::max(0.0, plan_.truncatedInitialMass);  // 1 - P(box): may round below 0
  if (wallsAbsorb(plan_.c))
    v.absorbedMass = std::array<double, 2>{initial + outflowP_.total(), initial + outflowQ_.total()};
  else
    v.startTruncation = initial;
}

void RunStepper::run() {
  if (plan_.noisyGd) runNoisyGd();
  else runLangevin();
  faults_.throwIfStopped();  // the run fails: its DIR.partial is removed, no result directory appears
}

/// The integrator's own time (the summary's "time integration") is the stepping time less the observers'.
void RunStepper::runLangevin() {
  const RunLogStages& stages = RunLogStages::get();
  const solver::DensityPropagator::Observer timedObserve = [&](long step, double t, Vec state) {
    const ScopedLogStage outputStage(stages.outputSteps);
    const auto start = std::chrono::steady_clock::now();
    observe(step, t, state);
    observerSeconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  if (integratorState_) plan_.evolution->resume(u_, timedObserve, *integratorState_);
  else plan_.evolution->run(u_, timedObserve);
}

void RunStepper::runNoisyGd() {
  const RunLogStages& stages = RunLogStages::get();
  const auto observeStep = [&](long k, double t) {
    const ScopedLogStage outputStage(stages.outputSteps);
    observe(k, t, u_);
  };
  if (resumeStep_ < 0) observeStep(0, 0.0);
  const long steps = plan_.steps();
  for (long k = resumeStep_ < 0 ? 1 : resumeStep_ + 1; k <= steps && !faults_.stopped(); ++k) {
    // The tracing pair starts from step k-1, whose divergences the observers have if it was an output step.
    if (tracing_) tracing_->traceStep(k - 1, u_, lastStep_ == k - 1 ? last_ : divergences_.evaluate(u_));
    const auto report = k == 1 && plan_.exactFirstStep ? plan_.gd->stepFromGaussian(u_, plan_.disc.problem().initial)
                                                        : plan_.gd->step(u_, k - 1);  // cyclic: batch (k-1) mod m
    for (std::size_t i = 0; i < outflowP_.mass.size(); ++i) {
      outflowP_.mass[i] += report.pushP.mass[i] + report.diffP.mass[i];
      outflowQ_.mass[i] += report.pushQ.mass[i] + report.diffQ.mass[i];
    }
    largestWallMass_ = std::max({largestWallMass_, report.wallMassP, report.wallMassQ});
    // Markov kernels do not expand TV: the steps' bounds add up (docs/noisy-gd.md §9.2).
    mixtureTvBound_[0] += report.mixtureBoundP.lattice;
    mixtureTvBound_[1] += report.mixtureBoundQ.lattice;
    withinCellTvBound_[0] += report.mixtureBoundP.withinCell;
    withinCellTvBound_[1] += report.mixtureBoundQ.withinCell;
    observeStep(k, plan_.c.noisyGd.eta * static_cast<double>(k));
  }
}

void RunStepper::saveState(io::CheckpointData& ck, long step, double t, Vec u) const {
  ck.putScalar("/format/version", kCheckpointFormat);
  ck.putText("/case/toml", plan_.c.resolvedToml);
  ck.putText("/case/solver", plan_.solverDescription);
  PetscMPIInt size;
  FPDP_PETSC(MPI_Comm_size(plan_.mesh.comm(), &size));
  ck.putScalar("/run/ranks", size);
  ck.putScalar("/run/step", static_cast<double>(step));
  ck.putScalar("/run/time", t);
  ck.put("/state/u", gatherNatural(plan_.mesh, u));
  if (plan_.constrained()) {
    ck.put("/state/boundary_p", plan_.gd->boundary().p);
    ck.put("/state/boundary_q", plan_.gd->boundary().q);
  }
  if (plan_.evolution) {
    const auto s = plan_.evolution->captureState();
    ck.putText("/integrator/ts_type", s.tsType);
    ck.putScalar("/integrator/step", static_cast<double>(s.step));
    ck.putScalar("/integrator/time", s.time);
    ck.putScalar("/integrator/time_step", s.timeStep);
    ck.putScalar("/integrator/jacobian_shift", s.jacobianShift);
    ck.putScalar("/integrator/bdf_order_in_use", static_cast<double>(s.bdfOrderInUse));
    ck.putScalar("/integrator/bdf_stored", static_cast<double>(s.bdfStored));
    ck.put("/integrator/bdf_times", s.bdfTimes);
    ck.putScalar("/integrator/state_error_bound", s.stateErrorBound);
    for (std::size_t i = 0; i < s.history.size(); ++i)
      ck.put("/integrator/history_" + std::to_string(i), gatherNatural(plan_.mesh, s.history[i]));
  }
  // The walls of the DMDA's (at most three) axes: the checkpoint's format.
  constexpr std::ptrdiff_t sides = 6;
  ck.put("/run/outflow_p", std::vector<double>(outflowP_.mass.begin(), outflowP_.mass.begin() + sides));
  ck.put("/run/outflow_q", std::vector<double>(outflowQ_.mass.begin(), outflowQ_.mass.begin() + sides));
  ck.put("/run/largest_wall_mass", {largestWallMass_});
  if (plan_.gd && plan_.gd->boundsMixture())
    ck.put("/run/mixture_tv_bound", {mixtureTvBound_[0], mixtureTvBound_[1], withinCellTvBound_[0],
                                      withinCellTvBound_[1]});
}

long RunStepper::restore(const io::CheckpointData& ck) {
  const Case& c = plan_.c;
  const long steps = plan_.steps();
  resumeStep_ = ck.integer("/run/step", 0, steps - 1);
  if (resumeStep_ % c.output.every != 0)
    ck.fail("/run/step", "step " + std::to_string(resumeStep_) + " is not an output step");
  const double tK = ck.scalar("/run/time");
  const double tExpected = plan_.noisyGd ? c.noisyGd.eta * static_cast<double>(resumeStep_)
                                         : c.time.dt * static_cast<double>(resumeStep_);
  // Langevin: TS sums the steps, so the time may differ from K dt in the last bits (1e-9 relative is far beyond).
  if (plan_.noisyGd ? tK != tExpected : std::fabs(tK - tExpected) > 1e-9 * std::max(1.0, std::fabs(tExpected)))
    ck.fail("/run/time", "time " + formatNumber(tK, "%.17g") + " does not belong to step " +
                             std::to_string(resumeStep_) + " (expected " + formatNumber(tExpected, "%.17g") + ")");
  const std::size_t cells = plan_.mesh.box().totalCells();
  scatterNatural(plan_.mesh, ck.array("/state/u", 2 * cells), u_);
  if (plan_.constrained()) {
    const std::size_t bins = plan_.gd->boundaryBins().size();
    plan_.gd->setBoundary({ck.array("/state/boundary_p", bins), ck.array("/state/boundary_q", bins)});
  }
  if (plan_.evolution) {
    solver::IntegratorState s;
    s.tsType = ck.text("/integrator/ts_type");
    s.step = ck.integer("/integrator/step", resumeStep_, resumeStep_);
    s.time = ck.scalar("/integrator/time");
    if (s.time != tK) ck.fail("/integrator/time", "differs from /run/time");
    s.timeStep = ck.scalar("/integrator/time_step");
    if (!(s.timeStep > 0)) ck.fail("/integrator/time_step", "expected a step > 0");
    s.jacobianShift = ck.scalar("/integrator/jacobian_shift");
    s.bdfOrderInUse = ck.integer("/integrator/bdf_order_in_use", 0, 6);
    s.bdfStored = ck.integer("/integrator/bdf_stored", 0, 7);
    s.bdfTimes = ck.array("/integrator/bdf_times");
    if (s.bdfTimes.size() > 6) ck.fail("/integrator/bdf_times", "more than 6 times");
    // The integrator's error bound so far (the noise floor of the divergences): a restart must not forget it.
    s.stateErrorBound = ck.scalar("/integrator/state_error_bound");
    if (!(s.stateErrorBound >= 0.0)) ck.fail("/integrator/state_error_bound", "expected a bound >= 0");
    for (std::size_t i = 0; i < s.bdfTimes.size(); ++i) {
      s.history.push_back(plan_.mesh.createVector());
      scatterNatural(plan_.mesh, ck.array("/integrator/history_" + std::to_string(i), 2 * cells), s.history.back());
    }
    integratorState_ = std::move(s);
  }
  const auto& op = ck.array("/run/outflow_p", 6);
  const auto& oq = ck.array("/run/outflow_q", 6);
  std::copy(op.begin(), op.end(), outflowP_.mass.begin());
  std::copy(oq.begin(), oq.end(), outflowQ_.mass.begin());
  largestWallMass_ = ck.array("/run/largest_wall_mass", 1)[0];
  if (plan_.gd && plan_.gd->boundsMixture()) {
    const auto& m = ck.array("/run/mixture_tv_bound", 4);
    mixtureTvBound_ = {m[0], m[1]};
    withinCellTvBound_ = {m[2], m[3]};
  }
  return resumeStep_;
}

const solver::DivergenceValues& RunStepper::restoredValues() {
  last_ = divergences_.evaluate(u_, plan_.constrained() ? &plan_.gd->boundary() : nullptr);
  attachTvBounds(last_);
  lastStep_ = resumeStep_;
  return last_;
}

}  // namespace fpdp::app
