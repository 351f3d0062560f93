#pragma once
// `fpdp run` for cases of four to six parameters (docs/scaling.md §9): noisy GD on whole fields, split over the ranks
// in slabs (solver::SlabNoisyGd), instead of the PETSc DMDA of d <= 3. The same story in fewer stages:
//   1. plan:     the losses (full or cyclic batches), the slab solver, the start (the initial Gaussian's exact cell
//                averages) on the run's mesh and on its 2x, 4x (and 8x) coarser companions;
//   2. levels:   the companions first, then the run, each stepped to the end with the divergences of every output
//                step (solver::wholeFieldDivergences: KL, R_alpha, TV, delta(eps), eps(delta), both directions);
//   3. outputs:  divergence.csv, bounds.csv, epsilon.csv, accuracy.csv and hockey_stick_accuracy.csv (the accuracy
//                contract of d <= 3: app/run/Certification, with the composition bound as the proof that R_alpha is
//                finite), result.json, fpdp.h5 with the d-dimensional densities, and ParaView files of their 2-D and
//                3-D marginals, in DIR.partial renamed to DIR at the end;
//   4. summary:  what was run, the bounds and the (eps, delta) table, the accuracy, and the headline last.
// A full noise covariance Sigma = L D L^T (L unit lower triangular) is run in the state y = L^-1 theta, where the noise
// is diag(D) and the convolution one pass per axis (models::DecorrelatedCoordinates): the mesh is then the box of y
// holding L^-1 of the case's box, with the case's cells per axis, and the densities written are those of y.
// What it does not do (the case reader refuses it, app/case/read/WholeFieldSection.cpp): Langevin, the Poisson
// lattice, constraint sets, tracing diffusions; nor checkpoints, I_alpha, the far-field model of infinite orders or
// the privacy-loss histograms.
#include <mpi.h>

#include "app/case/Case.hpp"
#include "app/commands/RunCase.hpp"
#include "meshes/BoxMesh.hpp"
#include "models/DecorrelatedCoordinates.hpp"

namespace fpdp::app {

/// Collective over PETSC_COMM_WORLD. Returns the process exit status (0 on success).
int runWholeFieldCase(const Case& c, const RunOptions& options);

/// `fpdp check` of such a case: everything the run builds before its first step (the losses, the slab split over the
/// ranks); nothing is written. Collective; throws what the run would.
void checkWholeFieldCase(const Case& c, MPI_Comm comm);

/// The coordinates of such a run's state: y = L^-1 theta for the case's Sigma (the identity where Sigma is diagonal).
models::DecorrelatedCoordinates wholeFieldCoordinates(const Case& c);
/// The mesh of the state: the case's box where Sigma is diagonal, else the box of y holding L^-1 of it (the case's
/// cells per axis and grading on it).
meshes::BoxMesh wholeFieldStateBox(const Case& c);

}  // namespace fpdp::app
