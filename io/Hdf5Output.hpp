#pragma once
// The run's HDF5 file (layout documented in docs/output.md):
//   /                       attributes: fpdp_version, ranks, dim, solver
//   /parameters             string dataset: the resolved case as TOML (every default filled in)
//   /mesh/x_faces, x_centres, (y_*, z_*)   axis coordinates
//   /fields/step_NNNNNNNN/  one group per output step with the fields, attributes step and time:
//        p, q               cell averages, dataset shape (nx) / (ny, nx) / (nz, ny, nx), x fastest
//   /series/<column>        the divergence time series, one dataset per CSV column (same names)
// Fields are written collectively through PETSc's parallel HDF5 viewer; the small datasets by rank 0.
#include <petscviewerhdf5.h>

#include <string>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"

namespace fpdp::io {

class Hdf5Output {
public:
  /// Creates the file (collective) with the mesh and the parameters.
  Hdf5Output(const std::string& path, const meshes::DistributedBoxMesh& mesh, const std::string& parametersToml,
             const std::string& solverDescription);
  ~Hdf5Output();
  Hdf5Output(const Hdf5Output&) = delete;
  Hdf5Output& operator=(const Hdf5Output&) = delete;

  /// Writes the named scalar fields (each a vector on mesh.scalarDM()) for output step `step` at `time`.
  void writeFields(long step, double time, const std::vector<std::pair<std::string, Vec>>& fields);
  /// Writes a small array held identically on every rank (rank 0's copy) as dataset `name` in `group` (created if
  /// absent): shape [n] for columns = 1, [n / columns, columns] otherwise. Collective; before writeSeries.
  void writeReplicated(const std::string& group, const std::string& name, const std::vector<double>& values,
                       int columns = 1);
  /// Writes (replacing) the time series; collective call, rank 0 writes.
  void writeSeries(const std::vector<std::string>& columns, const std::vector<std::vector<double>>& rows);
  /// Writes (replacing) the group /<group> with one float64 dataset per column and one string dataset per entry of
  /// `texts`; collective call (closes the parallel viewer first), rank 0 writes. writeSeries is writeTable("series").
  void writeTable(const std::string& group, const std::vector<std::string>& columns,
                  const std::vector<std::vector<double>>& rows,
                  const std::vector<std::pair<std::string, std::string>>& texts = {});
  /// A float64 dataset of any rank (shape outermost first, values in C order) for writeArrays.
  struct Array {
    std::string name;
    std::vector<unsigned long long> shape;
    std::vector<double> values;
  };
  /// Writes (replacing) the group `group` with the given datasets (e.g. /renyi, /hockey_stick, /privacy_loss);
  /// collective call, rank 0 writes. Like writeSeries, it closes the parallel viewer first.
  void writeArrays(const std::string& group, const std::vector<Array>& arrays);
  /// Closes the file; later calls are errors.
  void close();
  static std::string stepGroup(long step);

private:
  std::string path_;
  MPI_Comm comm_;
  PetscViewer viewer_ = nullptr;
};

}  // namespace fpdp::io
