#pragma once
// The per-mesh work objects of the functionals that need point values of p and q and grad log(p/q)
// (DivergenceFunctionals, RenyiRateFunctional): the point-value reconstruction (which borrows a ghosted vector from
// the mesh's pool while it works), the point values (one global vector), the log-ratio gradient (a ghosted vector of
// width 2) and its values at the owned cells. The functionals of one run share one set: two state-sized vectors and
// the gradient values, 56 B per cell of two densities in 2-D, 80 B in 3-D (peak memory, docs/scaling.md §3, §6).
// The point values and the gradient are computed once
// per state of the density vector: at an output step the divergences and the Rényi rate read the same ones (the
// second reconstruction and gradient cost 10 ms of a 256^2 output step).
#include <petscvec.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "solver/functionals/LogRatioGradient.hpp"
#include "solver/functionals/PointValues.hpp"

namespace fpdp::solver {

struct LogRatioWorkspace {
  /// Collective. The mesh must have 2 fields (p, q interlaced).
  explicit LogRatioWorkspace(const meshes::DistributedBoxMesh& mesh)
      : mesh(&mesh),
        reconstruction(mesh),
        points(mesh.createVector()),
        gradientUnavailable(LogRatioGradient::unsupportedReason(mesh)) {
    if (gradientUnavailable.empty()) gradient = std::make_unique<LogRatioGradient>(mesh);
  }
  const meshes::DistributedBoxMesh* mesh;  // the mesh the vectors belong to
  PointValueReconstruction reconstruction;
  meshes::VecHandle points;  // null after release() until the next fill
  std::string gradientUnavailable;            // why there is no gradient on this distribution ("" if there is)
  std::unique_ptr<LogRatioGradient> gradient;  // null when gradientUnavailable is not empty

  /// Fills `points` with the point values of u: u itself (pointValues: u holds point values already) or
  /// reconstructed from u's cell averages; nothing to do if they hold those of u's present state (the key is u's
  /// PETSc object id and state, which every change of u advances). Collective.
  void fillPoints(Vec u, bool pointValues);
  /// `points`, made again if released (for a caller that writes it itself, then calls pointsWritten).
  Vec writablePoints() {
    if (!points) points = mesh->createVector();
    return points;
  }
  /// Frees the point values and the gradient values (16 + 24 B per cell) until the next fill: between output steps
  /// the time integrator's work vectors take their memory (peak memory, docs/scaling.md §6).
  void release() {
    points.reset();
    sourceId_ = -1;
    releaseGradient();
  }
  /// Frees the gradient values alone (24 B per cell) while the point values stay: the divergences' information sums
  /// are their last reader there, so the hockey-stick sums after them need not hold them (the next
  /// logRatioGradient() computes them again, the same bits). The output step's peak memory, docs/scaling.md §6.
  void releaseGradient() {
    std::vector<std::array<double, 3>>().swap(gradientValues_);
    gradientValid_ = false;
  }
  /// For a caller that wrote `points` itself: they belong to no vector's state.
  void pointsWritten() {
    sourceId_ = -1;
    gradientValid_ = false;
  }
  /// grad log(p/q) of the present point values at the owned cells (LogRatioGradient::apply), computed once per fill.
  /// Needs `gradient`. Collective.
  const std::vector<std::array<double, 3>>& logRatioGradient();

private:
  PetscObjectId sourceId_ = -1;
  PetscObjectState sourceState_ = -1;
  bool sourcePointValues_ = false;
  bool gradientValid_ = false;
  std::vector<std::array<double, 3>> gradientValues_;
};

}  // namespace fpdp::solver
