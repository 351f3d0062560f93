#pragma once
// Access to the step-to-step memory of PETSc's TS implementations that the public API does not expose, for
// checkpoint/restart (DensityEvolution::captureState / resume). PETSc 3.18 only: the TSBDF state is a private struct
// of src/ts/impls/bdf/bdf.c, mirrored in TsHistory.cpp; another PETSc version fails to build here rather than
// misread it.
#include <petscts.h>

#include <vector>

namespace fpdp::solver::detail {

struct BdfHistoryView {
  long k = 0, n = 0;            // current order, number of stored solutions
  std::vector<double> times;    // time[1..m]: the stored solutions' times, newest first
  std::vector<Vec> vectors;     // work[1..m]: PETSc's own vectors (not copies)
};

/// The TSBDF history after a completed step, as seen from a monitor: m = min(n, order) solutions before the
/// current one (the ones the next step's extrapolation and BDF formula use).
BdfHistoryView bdfHistory(TS ts);
/// Sets k, n and the times of TSBDF (the caller copies the vectors' values into bdfHistory(ts).vectors first).
void setBdfCounters(TS ts, long k, long n, const std::vector<double>& times);
/// Sets the TS's step counter, time, step size and the "restart" flags as they are after a completed step
/// (not restarting: the integrator continues with its history).
void setContinuing(TS ts, long step, double time, double timeStep);

}  // namespace fpdp::solver::detail
