#pragma once
// The figures by which a run's densities are judged healthy or faulty (docs/faults.md §1, "Numerical faults"; the
// decision, with its tolerances, is the app's: app/run/NumericalFaults.hpp). For each field f (p, q) of the
// interlaced state, over the owned cells c with volume |c| and value u_c, summed over all ranks:
//   nonFiniteCells  #{c : u_c is NaN or +-Inf}
//   mass            sum |c| |u_c|                       (finite cells; the scale the others are measured against)
//   negativeMass    sum |c| max(-u_c, 0)                (finite cells)
//   wallMax         max |u_c| over the outermost cell layer: cells with i_a = 0 or i_a = N_a - 1 on some axis a < d
//                   (finite cells). The box walls are no-flux (docs/scheme.md): density there has reached walls the
//                   unbounded problem does not have. Compared with `max`, not with the mass: the ratio does not
//                   depend on the width of the wall cells (a layer's mass does: halving h halves it).
//   max             max |u_c| over all finite cells
//   min             smallest finite u_c (+inf if none)
// One pass over the owned values and two reductions: O(N) like the residual, far cheaper than a step's linear
// solve, so it can run at every time step.
#include <petscvec.h>

#include <vector>

#include "meshes/DistributedBoxMesh.hpp"

namespace fpdp::solver {

struct FieldFaultFigures {
  long nonFiniteCells = 0;
  double mass = 0.0;
  double negativeMass = 0.0;
  double wallMax = 0.0;
  double max = 0.0;
  double min = 0.0;
  long negativeCells = 0;
};

/// One entry per field of the mesh (p = 0, q = 1 for the Fokker–Planck pair). Collective over the mesh's
/// communicator; u is a global vector of `mesh`.
std::vector<FieldFaultFigures> measureDensityFaults(const meshes::DistributedBoxMesh& mesh, Vec u);

}  // namespace fpdp::solver
