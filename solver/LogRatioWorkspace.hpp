#pragma once
// The per-mesh work objects of the functionals that need point values of p and q and grad log(p/q)
// (DivergenceFunctionals, RenyiRateFunctional): the point-value reconstruction (one ghosted vector), the point
// values (one global vector) and the log-ratio gradient (a global and a ghosted vector). Each functional fills them
// afresh inside its evaluate() and reads them nowhere else, so the functionals of one run can share one set: four
// state-sized vectors, 64 B per cell of two densities in 2-D (peak memory, docs/scaling.md §3).
#include <memory>
#include <string>

#include "meshes/DistributedBoxMesh.hpp"
#include "solver/LogRatioGradient.hpp"
#include "solver/PointValues.hpp"

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
  meshes::VecHandle points;
  std::string gradientUnavailable;            // why there is no gradient on this distribution ("" if there is)
  std::unique_ptr<LogRatioGradient> gradient;  // null when gradientUnavailable is not empty
};

}  // namespace fpdp::solver
