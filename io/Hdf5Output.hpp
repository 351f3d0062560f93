#pragma once
// The run's HDF5 file (layout documented in docs/output.md):
//   /                       attributes: fpdp_version, ranks, dim, solver
//   /parameters             string dataset: the resolved case as TOML (every default filled in)
//   /mesh/x_faces, x_centres, (y_*, z_*)   axis coordinates (d > 3: theta_0_faces, theta_0_centres, ... theta_5_*)
//   /fields/step_NNNNNNNN/  one group per output step with the fields, attributes step and time:
//        p, q               cell averages, dataset shape (nx) / (ny, nx) / (nz, ny, nx), x fastest; d > 3:
//                           (n_(d-1), ..., n_1, n_0), axis 0 fastest, chunked by (n_2, n_1, n_0) blocks and
//                           compressed (shuffle + deflate): writeFieldParts
//   /series/<column>, ...   the tables of the observers (writeTable, writeArrays), one dataset per column
// Every dataset carries the string attributes `units` and `description`, and a status column its `status_codes`
// (io/Column.hpp); integer columns are int64, the rest float64. Fields are written collectively through PETSc's
// parallel HDF5 viewer on several ranks, by HDF5's POSIX driver on one (no MPI-IO: docs/faults.md §5); the small
// datasets by rank 0.
//
// Kill safety (docs/output.md, "Files during a run"): no HDF5 file is ever open between output steps, and none is
// visible under its final name before it is complete. During the run each output step's fields go to their own file
// DIR/fields/step_NNNNNNNN.h5 (same group layout as in fpdp.h5), written as <name>.tmp and renamed; the small
// replicated arrays are kept in memory (and in the checkpoint). At the end, rank 0 assembles fpdp.h5 as fpdp.h5.tmp
// (the step groups copied with H5Ocopy, then the tables) and close() renames it: the fields are written twice in
// total, once per step and once into fpdp.h5. The step files are removed with removeStepFiles() once the run's
// directory is final.
#include <petscviewerhdf5.h>

#include "io/CheckpointFile.hpp"
#include "io/Column.hpp"

#include <string>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"

namespace fpdp::io {

class Hdf5Output {
public:
  /// Records the file's path, mesh and parameters and creates DIR/fields (collective); fpdp.h5 itself is written at
  /// the end (the first table written, or close()).
  Hdf5Output(const std::string& path, const meshes::DistributedBoxMesh& mesh, const std::string& parametersToml,
             const std::string& solverDescription);
  /// The same for a mesh that is not a DMDA (d up to 6, fields written by writeFieldParts), on the ranks of comm.
  Hdf5Output(const std::string& path, MPI_Comm comm, const meshes::BoxMesh& box, const std::string& parametersToml,
             const std::string& solverDescription);
  ~Hdf5Output();
  Hdf5Output(const Hdf5Output&) = delete;
  Hdf5Output& operator=(const Hdf5Output&) = delete;

  /// A scalar field on mesh.scalarDM() and what it means (units, description; a field is float64).
  struct Field {
    Column info;
    Vec vec;
  };
  /// Writes the fields for output step `step` at `time`: the file DIR/fields/step_NNNNNNNN.h5, complete when it
  /// appears under that name, its datasets with their `units` and `description`. Collective.
  void writeFields(long step, double time, const std::vector<Field>& fields);
  /// A whole field split over the ranks along axis 0 (solver::SlabNoisyGd's state): this rank's cells, axis-0 indices
  /// [first, first + count) and every index of the other axes, in natural order (axis 0 fastest).
  struct FieldPart {
    Column info;
    const std::vector<double>* values;
  };
  /// Writes output step `step` of such fields into DIR/fields/step_NNNNNNNN.h5 (complete when it appears under that
  /// name): rank 0 creates the chunked, compressed datasets, then each rank in turn writes its block with HDF5's
  /// POSIX driver (no MPI-IO, as writeFields). Collective; throws on every rank if any rank failed.
  void writeFieldParts(long step, double time, int first, int count, const std::vector<FieldPart>& fields);
  /// A small float64 array held identically on every rank (rank 0's copy), for dataset info.name in `group`
  /// (created if absent) of fpdp.h5: shape [n] for columns = 1, [n / columns, columns] otherwise. Kept (with its
  /// units and description, in the checkpoint too) until fpdp.h5 is assembled; call before writeTable.
  void writeReplicated(const std::string& group, const Column& info, const std::vector<double>& values,
                       int columns = 1);
  /// Writes (replacing) the group /<group> with one dataset per column (float64, or int64 for integer columns; each
  /// with its attributes) and one string dataset per entry of `texts`; collective call (closes the parallel viewer
  /// first), rank 0 writes. Throws std::logic_error if an integer column holds a value that is not an integer.
  void writeTable(const std::string& group, const std::vector<Column>& columns,
                  const std::vector<std::vector<double>>& rows, const std::vector<Text>& texts = {});
  /// A dataset of any rank (shape outermost first, values in C order) for writeArrays.
  struct Array {
    Column info;
    std::vector<unsigned long long> shape;
    std::vector<double> values;
  };
  /// Writes (replacing) the group `group` with the given datasets (e.g. /renyi, /hockey_stick, /privacy_loss) and
  /// string datasets; collective call, rank 0 writes. Like writeTable, it closes the parallel viewer first.
  void writeArrays(const std::string& group, const std::vector<Array>& arrays, const std::vector<Text>& texts = {});
  /// The fields are densities of the state y = L^-1 theta, not of theta (a whole-field run under a full Sigma): the
  /// axes are named y_a and /mesh/parameters_from_state holds L (d x d, row-major; theta = L y). Before close().
  void setStateMap(std::vector<double> parametersFromState) { stateMap_ = std::move(parametersFromState); }
  /// Completes fpdp.h5 (assembling it if no table was written) and renames it into place; later calls are errors.
  void close();
  static std::string stepGroup(long step);
  /// DIR/fields/step_NNNNNNNN.h5: where writeFields puts a step during the run.
  std::string stepFile(long step) const;
  /// Removes the per-step files of `directory` (after the run's directory was renamed into place). Rank 0.
  static void removeStepFiles(const std::string& directory);

  /// Checkpoint/restart: the output steps written so far and the pending replicated arrays. restoreState checks
  /// that every step file it lists exists.
  void saveState(CheckpointData& ck) const;
  void restoreState(const CheckpointData& ck);
  std::size_t fieldStepCount() const { return fieldSteps_.size(); }

private:
  struct Replicated {
    std::string group;
    Column info;
    std::vector<double> values;
    int columns;
  };
  void writeFieldsSerial(const std::string& tmp, long step, double time, const std::vector<Field>& fields);
  void assemble();  // rank 0 writes fpdp.h5.tmp with everything but the tables (collective call)
  void requireSpaceFor(const std::string& file) const;  // throws naming the file when the disk cannot hold it
  std::string path_, directory_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  const meshes::DistributedBoxMesh* mesh_ = nullptr;  // null: a whole-field mesh (writeFieldParts only)
  meshes::BoxMesh box_;
  std::string parameters_, solver_;
  std::vector<double> stateMap_;  // L of setStateMap (empty: the fields are densities of theta)
  std::vector<long> fieldSteps_;
  std::vector<Replicated> replicated_;
  bool assembled_ = false, closed_ = false;
};

}  // namespace fpdp::io
