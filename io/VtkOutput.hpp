#pragma once
// VTK XML output of cell fields for ParaView (layout documented in docs/output.md):
//   DIR/fpdp.pvd                     time collection (rank 0; rewritten after every output step, temp + rename,
//                                    so it lists only complete steps and opens while the run is going on)
//   DIR/vtk/fpdp_NNNNNNNN.vti|.vtr   one rank: the whole mesh at output step NNNNNNNN
//   DIR/vtk/fpdp_NNNNNNNN.pvti|.pvtr several ranks: the summary file (rank 0) ...
//   DIR/vtk/fpdp_NNNNNNNN_pR.vti|.vtr ... and one piece per rank R (its DMDA-owned block of cells)
// Uniform meshes are vtkImageData (.vti), graded ones vtkRectilinearGrid (.vtr, coordinates = the cell faces).
// Finite-volume cell averages are CellData (N cells: point extent 0..N), x fastest (= DMDA natural order);
// per-step scalars are one-tuple FieldData arrays (ParaView: "Plot Global Variables Over Time").
//
// The XML is written here rather than through VTK's writers: the format is a few tags plus raw binary appended
// data (UInt64 headers, Float64 arrays), and this keeps the build independent of the VTK development package,
// which Debian's ParaView Python package cannot be installed beside (README, Dependencies).
#include <string>
#include <utility>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"

namespace fpdp::io {

/// One array of cell data on this rank's owned block: values of the owned cells in local order (x fastest),
/// `components` values per cell, interlaced.
struct CellArray {
  std::string name;
  int components = 1;
  std::vector<double> values;
};

/// One per-step scalar (a one-tuple FieldData array).
struct StepScalar {
  std::string name;
  double value;
};

class VtkOutput {
public:
  /// Prepares DIR/vtk (collective). Nothing is written until the first step.
  VtkOutput(const std::string& directory, const meshes::DistributedBoxMesh& mesh);

  /// Writes output step `step` at `time` (collective; every rank passes the same names and scalars), then
  /// rewrites the .pvd. Throws std::runtime_error on every rank if any rank failed to write.
  void writeStep(long step, double time, const std::vector<CellArray>& cells, const std::vector<StepScalar>& scalars);

  /// Lists a step written by an earlier, interrupted process of the same run in the .pvd (checkpoint/restart);
  /// the .pvd is rewritten with the next step.
  void addToCollection(long step, double time) { collection_.emplace_back(time, datasetFile(step)); }

  /// File name (relative to DIR) of the dataset of `step`: what the .pvd lists.
  std::string datasetFile(long step) const;
  bool rectilinear() const { return rectilinear_; }

private:
  std::string directory_;
  const meshes::DistributedBoxMesh& mesh_;
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  bool rectilinear_ = false;
  std::vector<std::pair<double, std::string>> collection_;  // (time, file) of the steps written so far
};

}  // namespace fpdp::io
