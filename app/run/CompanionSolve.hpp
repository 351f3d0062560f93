#pragma once
// The discretisation-error estimate of a run (docs/scheme.md §8): the same case solved on meshes with half and a
// quarter of the cells per axis (the companions), whose divergences at every output step stand beside the run's.
// The three values give the observed convergence ratio r = |X_2h - X_4h| / |X_h - X_2h| and the extrapolated error
// |X_h - X_2h| / (r - 1) (app/observers/AccuracyOutput). Where the route has a time-discretisation error (a PETSc TS)
// the companions coarsen the time step by the same factor, so that the estimate sees it. What it cannot see: an error
// all meshes share (a box too small, a wrong model), and meshes that agree by chance.
#include <mpi.h>

#include <map>
#include <string>

#include "app/Case.hpp"
#include "app/run/RunProgress.hpp"
#include "solver/functionals/Divergences.hpp"

namespace fpdp::app {

struct CompanionValues {
  std::string unavailable;                             // why there is no estimate (empty: there is one)
  std::string meshDescription;                         // e.g. "100x50 and 50x25 cells"
  std::map<long, solver::DivergenceValues> atStep[2];  // each output step's divergences on 2h and on 4h (by the
                                                       // run's step numbers)
  std::string timeDescription;  // how the companions coarsen the time step too, e.g. "time.dt x 2 and x 4" (or "")
  std::string timeUnrefined;    // why a time-discretisation error of the run is not in the estimate (empty: it is,
                                // or there is none): the numbers are then not certified
};

/// Whether the run's route has a time-discretisation error: a PETSc TS (Langevin without the exponential
/// integrator; noisy GD's fokker_planck substeps). The exponential integrator, exact_convolution and
/// chapman_kolmogorov are exact in time.
bool hasTimeDiscretisationError(const Case& c);

/// A companion case: the cells per axis divided by `factor` (rounded down), the grading raised to that power (the
/// same widths profile), and where the route has a time-discretisation error the time step multiplied by `factor`
/// (time.dt and output.every / factor, or noisy_gd.diffusion_substeps / factor), if that divides; every other key as
/// in `c`, without plots, fields, checkpoints or an estimate of its own. `timeUnrefined` (out): why the time step
/// could not be coarsened, or "".
Case companionCase(const Case& c, int factor, std::string* timeUnrefined = nullptr);

/// How the companion solves report their progress (app/observers/ProgressReporter): `print` progress lines on this
/// process, and call `hook` at every step (empty: none).
struct CompanionProgress {
  bool print = false;
  ProgressHook hook;
};

/// Solves the companion cases (2h, 4h) to the end (collective); never throws for a companion that cannot be solved:
/// the reason is in `unavailable` and the run's numbers are then reported as not certified. A progress hook's
/// RunInterrupted stops them and is thrown on.
CompanionValues solveCompanions(const Case& c, MPI_Comm comm, const CompanionProgress& progress = {});

}  // namespace fpdp::app
