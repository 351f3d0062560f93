#pragma once
// The discretisation-error estimate of a run (docs/scheme.md §8): the same case solved on meshes with a half, a
// quarter and, where every axis keeps enough cells, an eighth of the cells per axis (the companions), whose
// divergences at every output step stand beside the run's. The values give the observed convergence ratio
// r = |X_2h - X_4h| / |X_h - X_2h|, the extrapolated error |X_h - X_2h| / (r - 1), and on the fourth level a second
// ratio that confirms a faster order (app/run/Certification). Where the route has a time-discretisation error (a
// PETSc TS) the companions coarsen the time step by the same factor, so that the estimate sees it. What it cannot
// see: an error all meshes share (a box too small, a wrong model), and meshes that agree by chance.
#include <mpi.h>

#include <map>
#include <string>
#include <vector>

#include "app/case/Case.hpp"
#include "app/run/RunObserver.hpp"
#include "app/run/RunProgress.hpp"
#include "solver/functionals/Divergences.hpp"

namespace fpdp::app {

/// Keeps the divergences of every output step, by the run's step number (a companion with a `stepFactor` times
/// longer time step reaches the run's step n at its step n / stepFactor).
class DivergenceCollector final : public RunObserver {
public:
  DivergenceCollector(std::map<long, solver::DivergenceValues>& values, long stepFactor)
      : values_(values), stepFactor_(stepFactor) {}
  void observe(const OutputStep& s) override { values_[s.step * stepFactor_] = s.values; }

private:
  std::map<long, solver::DivergenceValues>& values_;
  long stepFactor_;
};

struct CompanionValues {
  std::string unavailable;                             // why there is no estimate (empty: there is one)
  std::string meshDescription;                         // e.g. "100x50 and 50x25 cells"
  // Each output step's divergences on 2h, 4h and (where the mesh allows) 8h, by the run's step numbers.
  std::vector<std::map<long, solver::DivergenceValues>> levels;
  std::string timeDescription;  // how the companions coarsen the time step too, e.g. "time.dt x 2 and x 4" (or "")
  std::string timeUnrefined;    // why a time-discretisation error of the run is not in the estimate (empty: it is,
                                // or there is none): the numbers are then not certified
};

/// Whether the run's route has a time-discretisation error: a PETSc TS (Langevin without the exponential
/// integrator; noisy GD's fokker_planck substeps). The exponential integrator, exact_convolution and
/// chapman_kolmogorov are exact in time.
bool hasTimeDiscretisationError(const Case& c);

/// The mesh's cells per axis as the messages write them, e.g. "200x200".
std::string cellsText(const Case& c);

/// A companion case: the cells per axis divided by `factor` (rounded down), the grading raised to that power (the
/// same widths profile), and where the route has a time-discretisation error the time step multiplied by `factor`
/// (time.dt and output.every / factor, or noisy_gd.diffusion_substeps / factor), if that divides; every other key as
/// in `c`, without plots, fields, checkpoints or an estimate of its own. `timeUnrefined` (out): why the time step
/// could not be coarsened, or "".
Case companionCase(const Case& c, int factor, std::string* timeUnrefined = nullptr);

/// How the companion solves (and the levels of --certify's refinement) report their progress
/// (app/run/ProgressReporter): `print` progress lines on this process, and call `hook` at every step (empty:
/// none; its RunInterrupted stops them and is thrown on).
struct CompanionProgress {
  bool print = false;
  ProgressHook hook;
};

/// The divergences at every output step of one case (a companion, or a level of --certify's refinement), keyed by
/// step x `stepFactor` (a case with a `stepFactor` times longer time step reaches the run's step n at its n /
/// stepFactor). Collective. `fallback` (out): why solver.ts_type = "auto" fell back from the exponential integrator
/// to BDF, or "". `label` and `phase`: the progress line's words and the hook's phase name. `exactFirstStep` (out,
/// where given): whether the solve took its first step exactly from the initial Gaussian (RunPlan::exactFirstStep).
std::map<long, solver::DivergenceValues> solveForDivergences(const Case& c, long stepFactor, MPI_Comm comm,
                                                             std::string& fallback, const CompanionProgress& progress,
                                                             const std::string& label, const std::string& phase,
                                                             bool* exactFirstStep = nullptr);

/// The companion factors a case's mesh allows: 2 and 4 always (if the 4x coarser mesh keeps kSmallestCompanionCells
/// per axis, else none), 8 where the 8x coarser one does too.
std::vector<int> companionFactors(const Case& c);
inline constexpr int kSmallestCompanionCells = 4;

/// Solves the companion cases (2h, 4h, and 8h where the mesh allows) to the end (collective); never throws for a
/// companion that cannot be solved: the reason is in `unavailable` and the run's numbers are then reported as not
/// certified (a progress hook's RunInterrupted excepted).
CompanionValues solveCompanions(const Case& c, MPI_Comm comm, const CompanionProgress& progress = {});

}  // namespace fpdp::app
