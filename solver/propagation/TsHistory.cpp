#include "solver/propagation/TsHistory.hpp"

#include <petsc/private/tsimpl.h>
#include <petscversion.h>

#include <algorithm>

#include "meshes/PetscHandles.hpp"

#if PETSC_VERSION_MAJOR != 3 || PETSC_VERSION_MINOR != 18
#error "TsHistory mirrors PETSc 3.18's TS_BDF; check src/ts/impls/bdf/bdf.c of this PETSc version and update it"
#endif

namespace fpdp::solver::detail {

namespace {
// Verbatim layout of TS_BDF in PETSc 3.18.0-3.18.6 (src/ts/impls/bdf/bdf.c).
struct TsBdf {
  PetscInt k, n;
  PetscReal time[6 + 2];
  Vec work[6 + 2];
  Vec tvwork[6 + 2];
  PetscReal shift;
  Vec vec_dot;
  Vec vec_wrk;
  Vec vec_lte;
  PetscBool transientvar;
  PetscInt order;
  TSStepStatus status;
};

TsBdf& bdf(TS ts) {
  PetscBool isBdf = PETSC_FALSE;
  FPDP_PETSC(PetscObjectTypeCompare(reinterpret_cast<PetscObject>(ts), TSBDF, &isBdf));
  if (!isBdf || !ts->data) throw PetscFailure("TS history: the integrator is not a set-up TSBDF");
  return *static_cast<TsBdf*>(ts->data);
}
}  // namespace

BdfHistoryView bdfHistory(TS ts) {
  TsBdf& b = bdf(ts);
  BdfHistoryView v;
  v.k = b.k;
  v.n = b.n;
  const long m = std::min<long>(b.n, b.order);
  for (long i = 1; i <= m; ++i) {
    v.times.push_back(b.time[i]);
    v.vectors.push_back(b.work[i]);
  }
  return v;
}

void setBdfCounters(TS ts, long k, long n, const std::vector<double>& times) {
  TsBdf& b = bdf(ts);
  if (k < 0 || k > b.order || n < 0 || n > 7 || times.size() != static_cast<std::size_t>(std::min<long>(n, b.order)))
    throw PetscFailure("TS history: inconsistent BDF state (order in use " + std::to_string(k) + ", stored " +
                       std::to_string(n) + ", " + std::to_string(times.size()) + " times, BDF order " +
                       std::to_string(b.order) + ")");
  b.k = static_cast<PetscInt>(k);
  b.n = static_cast<PetscInt>(n);
  for (std::size_t i = 0; i < times.size(); ++i) b.time[i + 1] = times[i];
}

void setContinuing(TS ts, long step, double time, double timeStep) {
  FPDP_PETSC(TSSetStepNumber(ts, static_cast<PetscInt>(step)));
  FPDP_PETSC(TSSetTime(ts, time));
  FPDP_PETSC(TSSetTimeStep(ts, timeStep));
  ts->steprestart = PETSC_FALSE;
  ts->steprollback = PETSC_FALSE;
  ts->ptime_prev = time;
}

}  // namespace fpdp::solver::detail
