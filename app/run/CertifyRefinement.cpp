#include "app/run/CertifyRefinement.hpp"

#include <petscsys.h>
#include <toml++/toml.h>

#include <algorithm>
#include <functional>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <vector>

#include "app/case/ResourceEstimate.hpp"
#include "app/platform/PetscConfiguration.hpp"
#include "app/run/NumberFormat.hpp"
#include "app/run/Certification.hpp"
#include "app/run/MinibatchSchedule.hpp"
#include "app/run/DpSgdAccounting.hpp"
#include "app/run/ModelBuilding.hpp"
#include "app/run/RunPlan.hpp"
#include "models/DivergenceGrids.hpp"

namespace fpdp::app {

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The box's widenings: the first by a quarter (seen: logistic-2d, whose walls decided eps(1e-5) on [-5, 5]^2, was
// certified on [-6.25, 6.25]^2 at 480^2 in 9.4 s; doubled, it went on to 768^2, 24.8 s), then to 2, 4 and 8 times the
// requested width per axis, as far as three doublings reached before.
constexpr std::array<double, 4> kWideningFactors{1.25, 1.6, 2.0, 2.0};
constexpr int kLargestWidening = static_cast<int>(kWideningFactors.size());

double totalCells(const Case& c) {
  double n = 1.0;
  for (int a = 0; a < c.mesh.dim; ++a) n *= c.mesh.cells[a];
  return n;
}


/// One mesh of the sequence: its case and its divergences at every output step, by its own step numbers.
struct Level {
  Case c;
  std::map<long, solver::DivergenceValues> values;
  double seconds = 0.0;
  bool exactFirstStep = false;  // RunPlan::exactFirstStep of its case, as the run's judge is told
};

/// Whether the case's numbers come from the exponential integrator's Chebyshev expansion without detailed balance,
/// whose cells are known only to its tolerance of the largest value: the positive series (where the operator is a
/// Metzler matrix) knows them to a relative round-off, so a noise floor may go with it.
bool positiveSeriesMayHelp(const Case& c) {
  return c.dynamics == "langevin" && c.solver.exponential_series != "positive" &&
         effectiveTsType(c) == kExponentialTsType &&
         !c.noise.bothIsotropic(c.mesh.dim);
}

/// Whether a refined level may solve its implicit steps by GMRES with ILU(0) instead of the direct factorisation the
/// case takes by default (ksp_type "preonly", pc_type "lu"): in 3-D the factorisation's time grows about as the square
/// of the cells and its memory faster than the cells (s52-like 3-D BDF case, 40 steps, 2026-12-07: 32^3 22 s and
/// 547 MB, 40^3 87 s and 1.3 GB; GMRES + ILU(0) on 40^3 2.9 s and 163 MB, every number within 5e-12 relative), so a
/// refinement that the budget admitted from the last level's time ran for far longer than predicted. Not where the
/// user chose a linear solver (the case's types, or PETSc options); the time integrator stays the one in effect.
bool iterativeSolverMayReplaceFactorisation(const Case& c) {
  return c.mesh.dim == 3 && hasTimeDiscretisationError(c) && c.solver.ksp_type == SolverSpec{}.ksp_type &&
         c.solver.pc_type == SolverSpec{}.pc_type && !linearSolverOptionsGiven();
}

/// Whether noisy GD's noise step, solved as the heat equation (diffusion = "fokker_planck": a time error refined with
/// substeps, which doubles the cost of every refinement, and implicit steps that make the far tails too heavy), may be
/// taken by the exact convolution with the same Gaussian kernel instead (docs/noisy-gd.md §3, §6: the case reader
/// allows it for diagonal noise covariances, with or without a constraint set). The law is the same; only the
/// discretisation's error changes, to the spatial one the meshes estimate.
bool exactConvolutionServes(const Case& c) {
  if (c.dynamics != "noisy_gd" || c.noisyGd.diffusion != "fokker_planck") return false;
  for (const bool prime : {false, true})
    if (!c.noise.sigmaFor(prime, c.mesh.dim).isDiagonal(0.0)) return false;
  return true;
}

/// The steps of `level` keyed as the finest level's: the same output times, whatever the time steps.
std::map<long, solver::DivergenceValues> onFinestSteps(const Level& level, const Case& finest) {
  std::map<long, solver::DivergenceValues> out;
  const long every = level.c.dynamics == "noisy_gd" ? 1 : level.c.output.every;
  const long finestEvery = finest.dynamics == "noisy_gd" ? 1 : finest.output.every;
  for (const auto& [step, v] : level.values) out.emplace(step / every * finestEvery, v);
  return out;
}

/// The largest accuracy.certify_seconds the schema accepts (app/case/ParameterSchema.cpp).
constexpr double kLargestCertifySeconds = 1e7;
constexpr double kLargestCertifyCells = 2147483648.0;  // accuracy.certify_max_cells' largest
// Solves shorter than this are dominated by their set-up: their ratios say nothing of how the cost grows.
constexpr double kShortestTimedSolve = 0.05;

}  // namespace

std::string resolvedText(const Case& c) {
  toml::table root = toml::parse(c.resolvedToml);
  toml::array lower, upper, cells;
  for (int a = 0; a < c.mesh.dim; ++a) {
    lower.push_back(c.mesh.lower[a]);
    upper.push_back(c.mesh.upper[a]);
    cells.push_back(static_cast<std::int64_t>(c.mesh.cells[a]));
  }
  toml::table& mesh = *root["mesh"].as_table();
  mesh.insert_or_assign("lower", lower);
  mesh.insert_or_assign("upper", upper);
  mesh.insert_or_assign("cells", cells);
  if (mesh.contains("grading")) {
    toml::array grading;
    for (int a = 0; a < c.mesh.dim; ++a) grading.push_back(c.mesh.grading[a]);
    mesh.insert_or_assign("grading", grading);
  }
  if (auto* time = root["time"].as_table()) time->insert_or_assign("dt", c.time.dt);
  if (auto* output = root["output"].as_table()) output->insert_or_assign("every", static_cast<std::int64_t>(c.output.every));
  if (auto* gd = root["noisy_gd"].as_table()) {
    gd->insert_or_assign("diffusion", c.noisyGd.diffusion);
    gd->insert_or_assign("diffusion_substeps", static_cast<std::int64_t>(c.noisyGd.diffusion_substeps));
  }
  if (auto* batch = root["batch"].as_table(); batch && c.batch.sampling == "poisson") {
    batch->insert_or_assign("mixture", c.batch.mixture);
    batch->insert_or_assign("mixture_tolerance", c.batch.mixtureTolerance);
  }
  if (auto* solver = root["solver"].as_table()) {
    solver->insert_or_assign("ts_type", c.solver.ts_type);
    solver->insert_or_assign("ksp_type", c.solver.ksp_type);
    solver->insert_or_assign("pc_type", c.solver.pc_type);
    if (solver->contains("exponential_series")) solver->insert_or_assign("exponential_series", c.solver.exponential_series);
  }
  std::ostringstream out;
  out << root << '\n';
  return out.str();
}

class CertifyRefinement::Sequence {
public:
  Sequence(const Case& requested, MPI_Comm comm, const CompanionProgress& progress)
      : requested_(requested), comm_(comm), progress_(progress), announce_(progress.print), start_(Clock::now()),
        base_(requested) {
    report_.requested = requested.accuracy.certify;
    // The Poisson mixture is decided once, on the requested mesh (batch.mixture = "auto" decides by the cells).
    if (base_.batch.sampling == "poisson" && base_.batch.mixture == "auto")
      base_.batch.mixture = companionCase(base_, 1).batch.mixture;
    // Measured on cases/noisy-gd-box-2d.toml: the heat route stayed under_resolved at 256^2 (the next mesh over 600 s,
    // each refinement 11x the last); the exact convolution certified eps(1e-5) on 1024^2 in 400 s.
    if (exactConvolutionServes(base_)) {
      say("the noise step by exact convolution (noisy_gd.diffusion = \"exact_convolution\": the same Gaussian kernel "
          "without the heat equation's time error)");
      base_.noisyGd.diffusion = "exact_convolution";
    }
  }

  CertifyAttempt next() {
    while (!final_ && needCoarse_) solveCoarseLevels();
    if (!final_ && levels_.empty() && !candidate_) candidate_ = base_;
    CertifyAttempt out{final_ && !candidate_ ? base_ : *candidate_, std::nullopt};
    out.c.resolvedToml = resolvedText(out.c);
    // Its companions where the sequence solved them: the 2x, 4x and 8x coarser levels.
    if (levels_.size() >= 2) {
      CompanionValues companion;
      for (std::size_t k = levels_.size(); k-- > 0 && companion.levels.size() < 3;) {
        companion.levels.push_back(onFinestSteps(levels_[k], out.c));
        companion.meshDescription += (companion.levels.size() > 1 ? ", " : "") + cellsText(levels_[k].c);
      }
      companion.meshDescription += " cells (the refinement's)";
      if (hasTimeDiscretisationError(out.c))
        companion.timeDescription = out.c.dynamics == "noisy_gd" ? "noisy_gd.diffusion_substeps / 2, / 4"
                                                                 : "time.dt x 2, x 4";
      out.companion = std::move(companion);
    }
    return out;
  }

  bool accept(std::map<long, solver::DivergenceValues> values, bool exactFirstStep, const std::string& fallback,
              double seconds) {
    if (final_) return finish(report_.outcome, report_.remedy, seconds, false);
    if (!fallback.empty()) {
      // "auto" fell back to BDF, a route with a time error: the whole sequence takes BDF explicitly, so that the time
      // step is refined (and coarsened) with the mesh.
      if (base_.solver.ts_type != "bdf") {
        say("solver.ts_type = \"auto\" fell back to BDF on " + cellsText(*candidate_) +
            " cells: the sequence starts again with solver.ts_type = \"bdf\"");
        base_.solver.ts_type = "bdf";
        restart();
        return false;
      }
      return finish("blocked: the run on " + cellsText(*candidate_) + " cells fell back to BDF", "", seconds, false);
    }
    levels_.push_back(Level{*candidate_, std::move(values), seconds, exactFirstStep});
    lastRun_ = *candidate_;
    lastRunSeconds_ = seconds;
    lastRunIsFinest_ = true;
    return decide(seconds);
  }

  bool runFailed(const std::string& what) { return standIn("failed (" + what + ")"); }

  /// The last run that took its steps becomes the final one in place of next()'s case, which `ended` says how.
  bool standIn(const std::string& ended) {
    // Only after a run that worked: the requested case failing fails the run as it would without --certify.
    if (final_ || !candidate_ || !lastRun_) return false;
    const std::string failed = cellsText(*candidate_);
    candidate_ = *lastRun_;
    // Its companions are the levels below it where the sequence still holds them; else the run solves its own.
    if (lastRunIsFinest_) levels_.pop_back();
    else levels_.clear();
    final_ = true;
    report_.outcome = "blocked: the run on " + failed + " cells " + ended + "; the output is the run on " +
                      cellsText(*candidate_) + " cells, run again" + settledText();
    report_.remedy = "";
    say(report_.outcome);
    return true;
  }

  bool overBudget(long step, long steps, double runSeconds) const {
    int over = 0;
    // Only where running the last run again costs less than finishing this one at its pace so far (seen: a cheap
    // run after a restart stopped, and a 512^2 run of ten minutes run again in its place).
    if (!final_ && candidate_ && lastRun_ && rank0() && step > 0 && step < steps)
      over = secondsSince(start_) > candidate_->accuracy.certifySeconds &&
                     runSeconds * static_cast<double>(steps - step) / static_cast<double>(step) > lastRunSeconds_
                 ? 1
                 : 0;
    FPDP_PETSC(MPI_Bcast(&over, 1, MPI_INT, 0, comm_));
    return over != 0;
  }

  void stoppedByBudget(long step, long steps, double seconds) {
    const double budget = candidate_->accuracy.certifySeconds, elapsed = secondsSince(start_);
    // The run's whole time at its pace so far, beside what the sequence spent before it.
    const double fraction = steps > 0 && step > 0 ? static_cast<double>(step) / static_cast<double>(steps) : 0.0;
    const double needed = fraction > 0.0 ? std::ceil(1.25 * (elapsed - seconds + seconds / fraction)) : INFINITY;
    const std::string mesh = cellsText(*candidate_);
    standIn("stopped at step " + std::to_string(step) + " of " + std::to_string(steps) + ": accuracy.certify_seconds = " +
            formatNumber(budget, "%g") + " spent (" + formatNumber(elapsed, "%.3g") + " s)");
    report_.remedy = std::isfinite(needed) && needed <= kLargestCertifySeconds
                         ? budgetFlags(std::nullopt, needed) + " lets the run on " + mesh +
                               " cells finish (more may be needed)"
                         : "quote the conservative value";
  }

  const CertificationReport& report() const { return report_; }

private:
  bool rank0() const {
    int rank = 0;
    MPI_Comm_rank(comm_, &rank);
    return rank == 0;
  }

  void say(const std::string& line) const {
    if (announce_) {
      std::printf("fpdp: certify: %s\n", line.c_str());
      std::fflush(stdout);
    }
  }

  static std::string boxText(const Case& c) {
    std::string t;
    for (int a = 0; a < c.mesh.dim; ++a)
      t += std::string(a ? " x " : "") + "[" + formatNumber(c.mesh.lower[a], "%g") + ", " +
           formatNumber(c.mesh.upper[a], "%g") + "]";
    return t + " (" + cellsText(c) + " cells)";
  }

  /// A new base (the requested one, a wider box, another solver setting): its coarser levels are solved again.
  void restart() {
    lastRunIsFinest_ = false;
    levels_.clear();
    settled_.clear();
    candidate_.reset();
    needCoarse_ = true;
  }

  /// Solves `c` (a coarser level of the base); nullopt with `failure` set where it cannot be solved ("fallback": the
  /// exponential integrator of solver.ts_type = "auto" fell back to BDF).
  std::optional<Level> solve(const Case& c, std::string& failure) const {
    const auto start = Clock::now();
    try {
      Level level{c, {}, 0.0};
      std::string fallback;
      level.values = solveForDivergences(c, 1, comm_, fallback, progress_, "certify, " + cellsText(c) + " cells",
                                         "certify_" + cellsText(c), &level.exactFirstStep);
      if (!fallback.empty()) {
        failure = "fallback";
        return std::nullopt;
      }
      level.seconds = secondsSince(start);
      return level;
    } catch (const RunInterrupted&) {
      throw;
    } catch (const std::exception& e) {
      failure = "the solve on " + cellsText(c) + " cells failed: " + e.what();
      return std::nullopt;
    }
  }

  /// The coarser levels of the base, coarsest first, as far as their time step can be coarsened with the mesh; the
  /// base is then the case to run. A failure ends the sequence: the base is run with its own companions.
  void solveCoarseLevels() {
    levels_.clear();
    needCoarse_ = false;
    candidate_ = base_;
    for (int factor : companionFactors(base_)) {
      std::string timeUnrefined, failure;
      const Case coarse = companionCase(base_, factor, &timeUnrefined);
      if (!timeUnrefined.empty()) break;
      auto level = solve(coarse, failure);
      if (!level && failure == "fallback" && base_.solver.ts_type != "bdf") {
        say("solver.ts_type = \"auto\" fell back to BDF on " + cellsText(coarse) +
            " cells: the sequence starts again with solver.ts_type = \"bdf\"");
        base_.solver.ts_type = "bdf";
        restart();
        return;
      }
      // The 8h level only confirms faster orders: where its mesh is too coarse for the case (a numerical fault on a
      // few cells), the sequence goes on with h, 2h and 4h.
      if (!level && factor > 4) break;
      if (!level) {
        levels_.clear();
        blocked("blocked: " + (failure == "fallback" ? "the solve on " + cellsText(coarse) + " cells fell back to BDF"
                                                     : failure));
        return;
      }
      levels_.insert(levels_.begin(), std::move(*level));
    }
  }

  /// The sequence ends before the next run: that run is the final one, with `outcome`.
  void blocked(const std::string& outcome, const std::string& remedy = "") {
    final_ = true;
    report_.outcome = outcome;
    report_.remedy = remedy;
  }

  using Verdict = AskedVerdict;

  /// The finest level judged with the three below it.
  Verdict judge() {
    const Level& finest = levels_.back();
    CompanionValues companion;
    for (std::size_t k = levels_.size() - 1; k-- > 0 && companion.levels.size() < 3;)
      companion.levels.push_back(onFinestSteps(levels_[k], finest.c));
    const std::vector<double> eps =
        models::uniformEpsGrid(finest.c.divergence.hockeyStickEpsMax, finest.c.divergence.hockeyStickEpsStep);
    AccuracyJudge judge(finest.c, eps, companion, false);
    // As the run's judge: a start taken exactly is not judged by its resolution (seen: the Figure 1 cases, certified
    // by the run on 2000 cells, refined to 32000 by --certify, 409 s instead of 18).
    judge.setStartTakenExactly(finest.exactFirstStep);
    // As the run's judge: the accountants' composition caps every conservative value. S_g does not depend on the mesh.
    if (!composition_) {
      const bool composes = finest.c.dynamics == "noisy_gd" && finest.c.batch.sampling != "poisson";
      composition_ = composes ? lastIterateCompositionMu(finest.c, provenSensitivity(finest.c, buildEmpiricalLosses(finest.c)))
                              : std::function<double(long)>{};
    }
    judge.setCompositionBound(*composition_, /*finitenessNeedsIt=*/false);
    // The Poisson mixture model with the loss constants, as the run's own judge has it (RunCase); they depend on the
    // box, not on the cells, so they are computed once per box (a sup over 10^7 records is not cheap).
    if (finest.c.dynamics == "noisy_gd" && finest.c.batch.sampling == "poisson") {
      const auto box = std::make_pair(finest.c.mesh.lower, finest.c.mesh.upper);
      if (!mixture_ || mixture_->first != box) {
        const auto constants = caseLossConstants(finest.c, buildEmpiricalLosses(finest.c), buildBox(finest.c.mesh));
        mixture_.emplace(box, poissonMixtureModel(finest.c, constants.sensitivity, constants.smoothness));
      }
      judge.setPoissonMixture(mixture_->second);
    }
    return judgeAsked(judge, finest.c, finest.values);
  }

  /// A list of numbers for a message: the first few and how many more.
  static std::string namesText(const std::vector<std::string>& names) {
    if (names.empty()) return "the requested numbers";
    constexpr std::size_t kShown = 4;
    std::string t;
    for (std::size_t k = 0; k < names.size() && k < kShown; ++k) t += (k ? ", " : "") + names[k];
    if (names.size() > kShown) t += " and " + std::to_string(names.size() - kShown) + " more";
    return t;
  }

  /// The run on the finest level has been judged with the levels below: the sequence ends with it (true), or goes
  /// on with a finer mesh, a wider box or the positive series (false). `seconds`: the run's wall time.
  bool decide(double seconds) {
    // With fewer than 3 levels nothing is judged yet.
    Verdict verdict;
    if (levels_.size() >= 3) verdict = judge();
    else verdict.uncertified[Uncertainty::NoEstimate] = {};
    const Case& finest = levels_.back().c;
    if (verdict.uncertified.empty()) return finish("certified on " + cellsText(finest) + " cells", "", seconds);
    const auto& byReason = verdict.uncertified;
    const bool othersRefinable = std::any_of(byReason.begin(), byReason.end(), [](const auto& entry) {
      return refinementMayCertify(entry.first);
    });
    const bool canWiden = widenings_ < kLargestWidening && widenedCase(base_, kWideningFactors[widenings_]).has_value();
    // Seen: --certify=last_step on the logistic noisy-GD case stopped when the box still decided R_10 after 3
    // widenings, leaving its eps, which finer meshes certify, uncertified.
    if (byReason.count(Uncertainty::BoxTruncation) && (canWiden || !othersRefinable)) {
      const std::string what = namesText(byReason.at(Uncertainty::BoxTruncation));
      if (canWiden) {
        Case wider = *widenedCase(base_, kWideningFactors[widenings_]);
        const std::string switchedSolver = solveIteratively(wider);
        say("the box decides " + what + ": widening it to " + boxText(wider) + switchedSolver);
        base_ = wider;
        ++widenings_;
        restart();
        return false;
      }
      // The numbers certified on this mesh are said first: "blocked" alone read as if nothing were certified.
      const std::string head = verdict.certified > 0
                                   ? "certified on " + cellsText(finest) + " cells except the numbers the box decides ("
                                   : "blocked: the box decides ";
      const std::string tail = verdict.certified > 0 ? ")" : "";
      if (widenings_ < kLargestWidening)
        return finish(head + what + tail + " and an axis is graded (widen mesh.lower and mesh.upper by hand)",
                      "widen mesh.lower and mesh.upper by hand (--certify widens uniform axes only), or quote the "
                      "conservative value",
                      seconds);
      return finish(head + what + tail + " after " + std::to_string(kLargestWidening) + " widenings",
                    "widen mesh.lower and mesh.upper beyond " + boxText(base_) + " by hand (--certify widened it " +
                        std::to_string(kLargestWidening) + " times), or quote the conservative value",
                    seconds);
    }
    if (byReason.count(Uncertainty::NoiseFloor) && positiveSeriesMayHelp(finest)) {
      // Once: positiveSeriesMayHelp is false from here on.
      say("the noise floor decides " + namesText(byReason.at(Uncertainty::NoiseFloor)) +
          ": the exponential integrator's positive series (solver.exponential_series = \"positive\")");
      base_.solver.exponential_series = "positive";
      restart();
      return false;
    }
    // The displacement lattice's TV bound (density_bound) shrinks with batch.mixture_tolerance: in 2-D the lattice
    // spacing with its square root, so a tolerance 16 times smaller costs about 4 times the lattice points; in 1-D
    // (a third-order bound) about 2.5 times (seen:
    // cases/dpsgd-poisson-large-n-1d.toml, whose bound of 3.3e-6 per density moved eps(1e-5) by 0.037). The mesh stays;
    // its coarser levels are solved again with the new lattice. A lattice beyond its set-up budget fails the run, and
    // the last run is the output (runFailed).
    if (byReason.count(Uncertainty::DensityBound) && finest.batch.sampling == "poisson" &&
        finest.batch.mixture == "lattice") {
      // Where the exact enumeration fits its budget on this mesh, it has no TV bound at all (seen: a sweep case of 5
      // records at eps(1e-5) = 72, whose bound e^eps TV_q no tolerance brought below delta: 8 tighter lattices, 426 s).
      Case enumerated = finest;
      enumerated.batch.mixture = "auto";
      if (!usesPoissonLattice(enumerated, buildEmpiricalLosses(enumerated))) {
        say("the displacement lattice's TV bound decides " + namesText(byReason.at(Uncertainty::DensityBound)) +
            ": the exact enumeration of the batches (batch.mixture = \"enumerate\"), which fits its budget");
        base_.batch.mixture = "enumerate";
        restart();
        return false;
      }
      Case tighter = finest;
      tighter.batch.mixtureTolerance = finest.batch.mixtureTolerance / 16.0;
      const std::string what = namesText(byReason.at(Uncertainty::DensityBound));
      const std::string change = "batch.mixture_tolerance = " + formatNumber(tighter.batch.mixtureTolerance, "%g");
      // The run and its coarser levels again, each with more lattice points: the spacing shrinks with the tolerance's
      // cube root in 1-D (a third-order bound, 2.5 times the points), its square root in 2-D (4 times). (A step sized
      // from the estimates' excess over rtol was tried: on cases/dpsgd-poisson-large-n-1d.toml its first step, 121,
      // fell short, and the second went beyond the budget, where two steps of 16 certify in 228 s: the estimate did
      // not shrink in proportion to the tolerance.)
      const double growth = finest.mesh.dim == 1 ? std::cbrt(16.0) : 4.0;
      const double predicted = growth * 2.0 * levels_.back().seconds, elapsed = secondsSince(start_);
      if (elapsed + predicted > finest.accuracy.certifySeconds) {
        const double secondsNeeded = std::ceil(1.25 * (elapsed + predicted));
        return finish("blocked: " + what + " density_bound (the displacement lattice's TV bound) on " +
                          cellsText(finest) + " cells; " + change + " would take about " +
                          formatNumber(predicted, "%.3g") + " s, beyond accuracy.certify_seconds = " +
                          formatNumber(finest.accuracy.certifySeconds, "%g") + " (" + formatNumber(elapsed, "%.3g") +
                          " s spent)",
                      secondsNeeded <= kLargestCertifySeconds
                          ? budgetFlags(std::nullopt, secondsNeeded) + " lets the tighter lattice run (more may be needed)"
                          : "quote the conservative value (the lattice's TV bound is in it)",
                      seconds);
      }
      say("the displacement lattice's TV bound decides " + what + ": " + change);
      base_ = tighter;
      restart();
      return false;
    }
    // Numbers that no refinement certifies keep their reason; the others are refined on (seen: every number of a
    // Poisson case left at 240 cells because R_10 was rare_trajectories, while its eps(1e-5) needed 3840 cells).
    std::string settled;
    std::optional<Uncertainty> refinable;
    std::vector<std::string> refined;
    for (const auto& [why, list] : byReason) {
      if (refinementMayCertify(why)) {
        if (!refinable) refinable = why;
        refined.insert(refined.end(), list.begin(), list.end());
      } else {
        settled += (settled.empty() ? "" : "; ") + namesText(list) + " " + uncertaintyName(why) + ": " +
                   (why == Uncertainty::BoxTruncation
                        ? "widen mesh.lower and mesh.upper beyond " + boxText(finest) + " by hand, or quote the "
                          "conservative value"
                        : uncertaintyRemedy(why, finest));
      }
    }
    if (!refinable)
      return finish(verdict.certified > 0 ? "certified on " + cellsText(finest) + " cells except " + settled
                                          : "blocked: " + settled,
                    "", seconds);
    settled_ = settled;
    const std::string which = namesText(refined);
    // The next level costs about 2^d (and 2 more with a time step halved) times the finest so far, or what the last
    // refinement cost, where that grew faster: a route whose cost per cell grows with the cells (the
    // chapman_kolmogorov quadrature sums, for each cell, a kernel of (s/h)^d cells: 16 times the cost per 2-D
    // refinement) would otherwise overrun accuracy.certify_seconds (seen: a 2-D case past 600 s).
    Case finer = refinedCase(finest);
    const std::string switchedSolver = solveIteratively(finer);
    const double growth = std::max(totalCells(finer) / totalCells(finest) *
                                       (hasTimeDiscretisationError(finest) ? 2.0 : 1.0),
                                   observedGrowth());
    const double predicted = levels_.back().seconds * growth;
    const double elapsed = secondsSince(start_);
    // A budget that blocks names the setting that lets the next mesh run (it may not be the last one needed).
    const double secondsNeeded = std::ceil(1.25 * (elapsed + predicted));
    if (totalCells(finer) > static_cast<double>(finest.accuracy.certifyMaxCells))
      return finish("blocked: " + which + " not certified on " + cellsText(finest) + " cells (" +
                        uncertaintyName(*refinable) + "); the next mesh, " + cellsText(finer) +
                        " cells, exceeds accuracy.certify_max_cells = " +
                        std::to_string(finest.accuracy.certifyMaxCells) + settledText(),
                    cellsRemedy(finer, predicted, secondsNeeded), seconds);
    if (elapsed + predicted > finest.accuracy.certifySeconds)
      return finish("blocked: " + which + " not certified on " + cellsText(finest) + " cells (" +
                        uncertaintyName(*refinable) + "); the next mesh, " + cellsText(finer) +
                        " cells, would take about " + formatNumber(predicted, "%.3g") +
                        " s, beyond accuracy.certify_seconds = " +
                        formatNumber(finest.accuracy.certifySeconds, "%g") + " (" + formatNumber(elapsed, "%.3g") +
                        " s spent)" + settledText(),
                    secondsNeeded <= kLargestCertifySeconds
                        ? budgetFlags(std::nullopt, secondsNeeded) + " lets the next mesh, " + cellsText(finer) +
                              " cells, run (more may be needed)"
                        : "none within accuracy.certify_seconds (at most " +
                              formatNumber(kLargestCertifySeconds, "%g") + " s): the next mesh would take about " +
                              formatNumber(predicted, "%.3g") + " s",
                    seconds);
    say(which + " not certified on " + cellsText(finest) + " cells (" + uncertaintyName(*refinable) +
        "): refining to " + cellsText(finer) + switchedSolver);
    candidate_ = finer;
    return false;
  }

  /// A 3-D case the sequence made larger than the last one: its implicit steps by GMRES with ILU(0) where
  /// iterativeSolverMayReplaceFactorisation allows (one rank: ILU(0) of the whole operator; more: block Jacobi, whose
  /// blocks, one per rank, take ILU(0)). Returns what to add to the line that announces the case ("" if unchanged).
  std::string solveIteratively(Case& c) const {
    if (!iterativeSolverMayReplaceFactorisation(c)) return "";
    PetscMPIInt size = 1;
    MPI_Comm_size(comm_, &size);
    c.solver.ksp_type = "gmres";
    c.solver.pc_type = size > 1 ? "bjacobi" : "ilu";
    return std::string("; its implicit steps by GMRES with ") + (size > 1 ? "block-Jacobi ILU(0)" : "ILU(0)") +
           " (solver.ksp_type, solver.pc_type) instead of the direct factorisation, whose cost in 3-D grows about as "
           "the square of the cells";
  }

  /// The remedy where the next mesh, `finer`, exceeds accuracy.certify_max_cells: the setting that admits it, with
  /// the time budget too where its predicted time (with the 1.25 margin of the time budget's own remedy) would not
  /// fit (seen: the 3-D anisotropic case's remedy named the cells alone; followed on a busy machine, its 256^3 run,
  /// predicted at 506 s beside 79 s spent, was stopped by the 600 s budget at step 40 of 50). It names the run's
  /// memory (the lower estimate that refuses runs, app/case/ResourceEstimate) and says where that exceeds this
  /// machine's.
  std::string cellsRemedy(const Case& finer, double predicted, double secondsNeeded) const {
    if (totalCells(finer) > kLargestCertifyCells) return "none within accuracy.certify_max_cells (at most 2^31 cells)";
    PetscMPIInt size = 1;
    MPI_Comm_size(comm_, &size);
    const MemoryEstimate memory = estimateRunMemory(finer, size, false);
    const std::string gigabytes = formatNumber(static_cast<double>(memory.bytes) / 1e9, "%.3g");
    const auto available = availableMemory();
    if (available && memory.bytes > *available)
      return "none on this machine: the next mesh, " + cellsText(finer) + " cells, needs at least " + gigabytes +
             " GB of memory (" + formatNumber(static_cast<double>(*available) / 1e9, "%.3g") +
             " GB available); run on more nodes, or quote the conservative value";
    const bool moreTime = secondsNeeded > finer.accuracy.certifySeconds && secondsNeeded <= kLargestCertifySeconds;
    return budgetFlags(totalCells(finer), moreTime ? std::optional<double>(secondsNeeded) : std::nullopt) +
           " lets the next mesh, " + cellsText(finer) + " cells, run (about " + formatNumber(predicted, "%.3g") +
           " s and at least " + gigabytes + " GB of memory; more may be needed)";
  }

  /// The flags of a budget's remedy, to be given as printed: the request (--certify or --certify=last_step), then
  /// accuracy.certify_max_cells and accuracy.certify_seconds, each where the remedy raises it (`cells`, `seconds`) or
  /// the case set it away from its default. A remedy that named only the budget it raised lost the other one the user
  /// had raised (seen: the 3-D anisotropic case, given certify_max_cells for 256^3 cells, was told to run with
  /// certify_seconds alone, which stops at 128^3 again).
  std::string budgetFlags(std::optional<double> cells, std::optional<double> seconds) const {
    const AccuracySpec defaults;
    const AccuracySpec& given = requested_.accuracy;
    std::string flags = given.certify == "last_step" ? "--certify=last_step" : "--certify";
    if (cells || given.certifyMaxCells != defaults.certifyMaxCells)
      flags += " --set accuracy.certify_max_cells=" +
               formatNumber(cells ? *cells : static_cast<double>(given.certifyMaxCells), "%.0f");
    if (seconds || given.certifySeconds != defaults.certifySeconds)
      flags += " --set accuracy.certify_seconds=" +
               (seconds ? formatNumber(*seconds, "%.0f") : formatNumber(given.certifySeconds, "%.15g"));
    return flags;
  }

  /// The numbers left with a reason no refinement removes, for a message that stops the sequence.
  std::string settledText() const { return settled_.empty() ? "" : "; also not certified: " + settled_; }

  /// The ratio of the two finest levels' solve times, where both were long enough to time (0 otherwise).
  double observedGrowth() const {
    if (levels_.size() < 2) return 0.0;
    const double fine = levels_.back().seconds, coarse = levels_[levels_.size() - 2].seconds;
    return coarse >= kShortestTimedSolve ? fine / coarse : 0.0;
  }

  /// The sequence ends with the run just judged (`runSeconds` its wall time, not the refinement's).
  bool finish(const std::string& outcome, const std::string& remedy, double runSeconds, bool listed = true) {
    report_.levels.clear();
    for (const auto& level : levels_) report_.levels += (report_.levels.empty() ? "" : ", ") + cellsText(level.c);
    if (!listed && candidate_) report_.levels += (report_.levels.empty() ? "" : ", ") + cellsText(*candidate_);
    report_.outcome = outcome;
    report_.remedy = remedy;
    report_.seconds = std::max(0.0, secondsSince(start_) - runSeconds);
    say(outcome + " (" + formatNumber(report_.seconds, "%.1f") + " s besides the run)");
    return true;
  }

  const Case& requested_;
  MPI_Comm comm_;
  CompanionProgress progress_;
  bool announce_;
  Clock::time_point start_;
  Case base_;                     // the sequence's base: the requested case, or its box widened, its solver changed
  int widenings_ = 0;
  bool needCoarse_ = true;        // the base's coarser levels are still to be solved
  bool final_ = false;            // the sequence has ended: the next run is the final one
  std::optional<Case> candidate_; // the case of the run next() gives (the finest level so far)
  std::optional<Case> lastRun_;   // the case of the latest run that took its steps (judged, then discarded)
  double lastRunSeconds_ = 0.0;   // its wall time
  bool lastRunIsFinest_ = false;  // whether it is still levels_.back()
  std::vector<Level> levels_;     // coarsest first; the runs judged so far are among them
  std::string settled_;           // numbers no refinement certifies, with their reasons and remedies (the latest level's)
  CertificationReport report_;
  // The Poisson mixture model of the box it was computed for (mesh.lower, mesh.upper).
  std::optional<std::pair<std::pair<std::array<double, 6>, std::array<double, 6>>, std::optional<PoissonMixtureModel>>>
      mixture_;
  std::optional<std::function<double(long)>> composition_;  // lastIterateCompositionMu, once per refinement
};


AskedVerdict judgeAsked(const AccuracyJudge& judge, const Case& c,
                        const std::map<long, solver::DivergenceValues>& values) {
  AskedVerdict out;
  if (values.empty()) {
    out.uncertified[Uncertainty::NotComputed] = {};
    return out;
  }
  const auto& [step, v] = *values.rbegin();
  const auto profile = judge.profile(step, v, false);
  const auto numbers = judge.numbers(step, v, profile, false);
  const auto& names = judge.names();
  const bool headline = c.accuracy.certify == "headline";
  const std::size_t epsIndex = judge.epsIndex(c.privacy.delta);
  // The box's cut-off mass (the start's, or what absorbing walls removed) bounds TV only: a wider box removes it.
  const bool boxCuts = v.startTruncation > kAbsorbedMassGuard ||
                       (v.absorbedMass && std::max((*v.absorbedMass)[0], (*v.absorbedMass)[1]) > kAbsorbedMassGuard);
  for (std::size_t k = 0; k < numbers.size(); ++k) {
    if (headline && k != epsIndex) continue;
    if (std::isnan(numbers[k].value)) continue;
    if (numbers[k].certified) {
      ++out.certified;
      continue;
    }
    const Uncertainty why =
        numbers[k].reason == Uncertainty::DensityBound && boxCuts ? Uncertainty::BoxTruncation : numbers[k].reason;
    out.uncertified[why].push_back(names[k]);
  }
  return out;
}

Case refinedCase(const Case& c) {
  Case fine = c;
  for (int a = 0; a < c.mesh.dim; ++a) {
    fine.mesh.cells[a] = 2 * c.mesh.cells[a];
    fine.mesh.grading[a] = std::sqrt(c.mesh.grading[a]);
  }
  if (hasTimeDiscretisationError(c)) {
    if (c.dynamics == "noisy_gd") {
      fine.noisyGd.diffusion_substeps = 2 * c.noisyGd.diffusion_substeps;
    } else {
      fine.time.dt = c.time.dt / 2.0;
      fine.output.every = 2 * c.output.every;
    }
  }
  return fine;
}

std::optional<Case> widenedCase(const Case& c, double factor) {
  Case wide = c;
  for (int a = 0; a < c.mesh.dim; ++a) {
    if (c.mesh.grading[a] != 1.0) return std::nullopt;
    // m cells of the same width on each side, m a multiple of 4: the cells keep their residue modulo 8, so the 2x,
    // 4x and 8x coarser levels divide the widened mesh wherever they divided the given one.
    const int cells = c.mesh.cells[a];
    const int side = 4 * static_cast<int>(std::ceil((factor - 1.0) * cells / 8.0 - 1e-9));  // 0.6 x 120 / 8 is 9
    const double h = (c.mesh.upper[a] - c.mesh.lower[a]) / cells;
    wide.mesh.lower[a] = c.mesh.lower[a] - side * h;
    wide.mesh.upper[a] = c.mesh.upper[a] + side * h;
    wide.mesh.cells[a] = cells + 2 * side;
  }
  return wide;
}

CertifyRefinement::CertifyRefinement(const Case& requested, MPI_Comm comm, const CompanionProgress& progress)
    : sequence_(std::make_unique<Sequence>(requested, comm, progress)) {}
CertifyRefinement::~CertifyRefinement() = default;
CertifyAttempt CertifyRefinement::next() { return sequence_->next(); }
bool CertifyRefinement::accept(std::map<long, solver::DivergenceValues> values, bool exactFirstStep,
                               const std::string& fallback, double seconds) {
  return sequence_->accept(std::move(values), exactFirstStep, fallback, seconds);
}
bool CertifyRefinement::runFailed(const std::string& what) { return sequence_->runFailed(what); }
bool CertifyRefinement::overBudget(long step, long steps, double runSeconds) const {
  return sequence_->overBudget(step, steps, runSeconds);
}
void CertifyRefinement::stoppedByBudget(long step, long steps, double seconds) {
  sequence_->stoppedByBudget(step, steps, seconds);
}
const CertificationReport& CertifyRefinement::report() const { return sequence_->report(); }

}  // namespace fpdp::app
