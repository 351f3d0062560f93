#include "solver/propagation/DensityFaults.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fpdp::solver {

std::vector<FieldFaultFigures> measureDensityFaults(const meshes::DistributedBoxMesh& mesh, Vec u) {
  const int fields = mesh.fields();
  const int dim = mesh.dim();
  const auto& box = mesh.box();
  const auto& volumes = mesh.ownedVolumes();
  // Per field: nonFinite, mass, negativeMass, negativeCells (summed) and -min, wallMax, max (maxima).
  constexpr int kSums = 4, kMaxima = 3;
  std::vector<double> sums(static_cast<std::size_t>(kSums * fields), 0.0);
  std::vector<double> maxima(static_cast<std::size_t>(kMaxima * fields), 0.0);
  for (int f = 0; f < fields; ++f) maxima[static_cast<std::size_t>(kMaxima * f)] = -std::numeric_limits<double>::infinity();
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
      double* m = &maxima[static_cast<std::size_t>(kMaxima * f)];
      if (!std::isfinite(v)) {
        s[0] += 1.0;
        continue;
      }
      s[1] += volume * std::fabs(v);
      if (v < 0) {
        s[2] += -volume * v;
        s[3] += 1.0;
      }
      m[0] = std::max(m[0], -v);
      if (wall) m[1] = std::max(m[1], std::fabs(v));
      m[2] = std::max(m[2], std::fabs(v));
    }
  });
  FPDP_PETSC(VecRestoreArrayRead(u, &a));
  MPI_Comm comm = mesh.comm();
  FPDP_PETSC(MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(sums.size()), MPI_DOUBLE, MPI_SUM, comm));
  FPDP_PETSC(MPI_Allreduce(MPI_IN_PLACE, maxima.data(), static_cast<int>(maxima.size()), MPI_DOUBLE, MPI_MAX, comm));
  std::vector<FieldFaultFigures> out(static_cast<std::size_t>(fields));
  for (int f = 0; f < fields; ++f) {
    const double* s = &sums[static_cast<std::size_t>(kSums * f)];
    const double* m = &maxima[static_cast<std::size_t>(kMaxima * f)];
    auto& o = out[static_cast<std::size_t>(f)];
    o.nonFiniteCells = std::lround(s[0]);
    o.mass = s[1];
    o.negativeMass = s[2];
    o.negativeCells = std::lround(s[3]);
    o.min = -m[0];
    o.wallMax = m[1];
    o.max = m[2];
  }
  return out;
}

}  // namespace fpdp::solver
