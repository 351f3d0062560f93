#include "solver/DensityFaults.hpp"

#include <cmath>
#include <limits>

namespace fpdp::solver {

std::vector<FieldFaultFigures> measureDensityFaults(const meshes::DistributedBoxMesh& mesh, Vec u) {
  const int fields = mesh.fields();
  const int dim = mesh.dim();
  const auto& box = mesh.box();
  const auto& volumes = mesh.ownedVolumes();
  // Per field: nonFinite, mass, negativeMass, wallLayerMass, negativeCells (summed) and min (reduced apart).
  constexpr int kSums = 5;
  std::vector<double> sums(static_cast<std::size_t>(kSums * fields), 0.0);
  std::vector<double> mins(static_cast<std::size_t>(fields), std::numeric_limits<double>::infinity());
  const PetscScalar* a = nullptr;
  FPDP_PETSC(VecGetArrayRead(u, &a));
  mesh.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const PetscInt index[3] = {i, j, k};
    bool wall = false;
    for (int ax = 0; ax < dim; ++ax) wall = wall || index[ax] == 0 || index[ax] == box.cells(ax) - 1;
    const double volume = volumes[static_cast<std::size_t>(l)];
    for (int f = 0; f < fields; ++f) {
      const double v = a[static_cast<std::size_t>(l) * static_cast<std::size_t>(fields) + static_cast<std::size_t>(f)];
      double* s = &sums[static_cast<std::size_t>(kSums * f)];
      if (!std::isfinite(v)) {
        s[0] += 1.0;
        continue;
      }
      s[1] += volume * std::fabs(v);
      if (v < 0) {
        s[2] += -volume * v;
        s[4] += 1.0;
      }
      if (wall) s[3] += volume * std::fabs(v);
      mins[static_cast<std::size_t>(f)] = std::min(mins[static_cast<std::size_t>(f)], v);
    }
  });
  FPDP_PETSC(VecRestoreArrayRead(u, &a));
  MPI_Comm comm = mesh.comm();
  FPDP_PETSC(MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(sums.size()), MPI_DOUBLE, MPI_SUM, comm));
  FPDP_PETSC(MPI_Allreduce(MPI_IN_PLACE, mins.data(), fields, MPI_DOUBLE, MPI_MIN, comm));
  std::vector<FieldFaultFigures> out(static_cast<std::size_t>(fields));
  for (int f = 0; f < fields; ++f) {
    const double* s = &sums[static_cast<std::size_t>(kSums * f)];
    auto& o = out[static_cast<std::size_t>(f)];
    o.nonFiniteCells = std::lround(s[0]);
    o.mass = s[1];
    o.negativeMass = s[2];
    o.wallLayerMass = s[3];
    o.negativeCells = std::lround(s[4]);
    o.min = mins[static_cast<std::size_t>(f)];
  }
  return out;
}

}  // namespace fpdp::solver
