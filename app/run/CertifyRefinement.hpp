#pragma once
// Certified on request (`accuracy.certify`, `fpdp run --certify`; docs/scheme.md §8, "Certified on request"): the
// case is solved on a sequence of meshes, each twice as fine per axis as the last (and, where the route has a time
// error, with half the time step), until the numbers asked for are certified at accuracy.rtol by the finest mesh and
// the three below it (app/run/Certification). The finest mesh of each round is the run itself: its coarser levels
// are solved here for their divergences only, the run takes them as its companions, and its own values are judged
// when it has taken its steps; a run that does not end the sequence is discarded (its DIR.partial removed) and the
// next mesh is run. So the final mesh is solved once, not once for the judgement and again for the output. Where the
// walls decide a number (box_truncation) the box is widened at the same cell width and the sequence starts again. It
// stops at accuracy.certify_seconds or accuracy.certify_max_cells, or at a reason no refinement removes, and says
// which.
#include <mpi.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/case/Case.hpp"
#include "app/run/Certification.hpp"
#include "app/run/CompanionSolve.hpp"

namespace fpdp::app {

/// What --certify (accuracy.certify) did: the meshes it solved (the run's the last) and why it stopped (empty: not
/// asked).
struct CertificationReport {
  std::string requested;  // accuracy.certify ("" or "off": not asked)
  std::string levels;     // the meshes solved, e.g. "200, 400, 800 cells"
  std::string outcome;    // "certified", or what blocked it
  std::string remedy;     // where a budget blocked it: the setting that lets the next mesh run ("" otherwise)
  double seconds = 0.0;   // the refinement's wall time, the final run's excepted
};

/// One run of the sequence: its case (mesh, time step, box as refined) and, where the sequence solved them, its
/// companions' values (its 2x, 4x and 8x coarser levels).
struct CertifyAttempt {
  Case c;
  std::optional<CompanionValues> companion;
};

/// The case `c` twice as fine per axis (the grading's square root: the same widths profile), with half the time step
/// where the route has a time-discretisation error (time.dt / 2 and output.every x 2, or noisy_gd.diffusion_substeps
/// x 2).
Case refinedCase(const Case& c);

/// The numbers --certify asks for at the last output step of `values` (accuracy.certify = "headline": eps at
/// privacy.delta; "last_step": every number computed), as `judge` judges them: those not certified by reason (a
/// Poisson lattice's density_bound read as box_truncation where the box cuts mass off: a wider box removes it), and
/// how many are certified. The one verdict of the refinements of d <= 3 (CertifyRefinement) and beyond (WholeFieldRun).
struct AskedVerdict {
  std::map<Uncertainty, std::vector<std::string>> uncertified;
  std::size_t certified = 0;
};
AskedVerdict judgeAsked(const AccuracyJudge& judge, const Case& c,
                        const std::map<long, solver::DivergenceValues>& values);

/// The resolved case text (parameters.toml) of a case the refinement changed: the requested text with the mesh, the
/// time step and the solver type of `c`.
std::string resolvedText(const Case& c);

/// The case `c` with its box widened about its centre by about `factor` per axis, with cells of the same width added
/// on each side (a multiple of 4 per side, at least the factor's share). Uniform axes only (nullopt where an axis is
/// graded).
std::optional<Case> widenedCase(const Case& c, double factor);

/// The refinement, driven by the run (collective calls): next() gives the case to run, accept() judges the run's
/// values once it has taken its steps.
class CertifyRefinement {
public:
  /// `progress`: progress lines on standard output and the caller's hook (a hook's RunInterrupted stops the
  /// refinement and is thrown on).
  CertifyRefinement(const Case& requested, MPI_Comm comm, const CompanionProgress& progress);
  ~CertifyRefinement();
  CertifyRefinement(const CertifyRefinement&) = delete;
  CertifyRefinement& operator=(const CertifyRefinement&) = delete;

  /// The next case to run, its coarser levels solved first (collective).
  CertifyAttempt next();
  /// The run of next()'s case has taken its steps: `values` its divergences at every output step (by its own step
  /// numbers), `exactFirstStep` and `fallback` its plan's (RunPlan), `seconds` its wall time so far. True: the
  /// sequence ends with this run, report() says how; false: the run is discarded and next() gives the next one.
  bool accept(std::map<long, solver::DivergenceValues> values, bool exactFirstStep, const std::string& fallback,
              double seconds);
  /// The run of next()'s case could not be set up or failed (`what`): true where its mesh is one the refinement made
  /// (finer or wider than the requested one) and another ran before it, which next() then gives as the final run;
  /// false: the failure is the run's.
  bool runFailed(const std::string& what);
  /// Whether the run of next()'s case, at step `step` of `steps` after `runSeconds`, has outrun
  /// accuracy.certify_seconds (the budget's prediction can be short: a solver whose iterations grow with the mesh)
  /// while a run that took its steps, and costs less than the rest of this one, can stand in for it. Rank 0's clock
  /// decides for every rank (collective).
  bool overBudget(long step, long steps, double runSeconds) const;
  /// The run of next()'s case stopped at step `step` of `steps` by overBudget(): as runFailed, and the remedy names the
  /// budget that lets it finish (`seconds` the run's wall time so far).
  void stoppedByBudget(long step, long steps, double seconds);
  /// What the refinement did (final once accept() returned true; `seconds` then excludes the final run).
  const CertificationReport& report() const;

private:
  class Sequence;
  std::unique_ptr<Sequence> sequence_;
};

}  // namespace fpdp::app
