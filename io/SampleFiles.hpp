#pragma once
// HDF5 files of `fpdp sample` (layout in docs/output.md): reading the solver's fields from a run's fpdp.h5, and
// writing sample.h5. Plain HDF5 calls on one process (rank 0): the sample's arrays are reduced to every rank
// before they are written, and the solver's fields are small enough to read whole.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "meshes/BoxMesh.hpp"

namespace fpdp::io {

struct SolverFields {
  std::vector<std::vector<double>> faces;  // per axis, /mesh/<x|y|z>_faces (beyond three axes theta_a or y_a)
  std::vector<double> p, q;                // cell averages, natural order (x fastest)
  std::vector<double> boundaryP, boundaryQ;  // masses of the boundary bins of C (empty without a constraint)
  double time = 0.0;
};

/// The fields of output step `step` of a run's fpdp.h5 (docs/output.md), or nullopt when that step was not written.
/// Throws std::runtime_error when the file cannot be read or its layout is not fpdp's.
std::optional<SolverFields> readSolverFields(const std::string& path, int dim, long step);

/// Whether the fields of `fields` live on `mesh` (same faces to 1e-12 of the box size).
bool sameMesh(const SolverFields& fields, const meshes::BoxMesh& mesh);

/// One output step of the sample: integer counts per mesh cell (natural order) and per boundary bin of C, and the
/// particles off the mesh, for D (p) and D' (q).
struct SampleCounts {
  long step = 0;
  double time = 0.0;
  std::vector<std::int64_t> cells[2], boundary[2];
  std::int64_t outside[2] = {0, 0};
};

struct SampleFileInfo {
  std::string parametersToml;
  std::int64_t particles = 0;
  std::uint64_t seed = 0;
  int ranks = 1, threads = 1;
  std::string generator;                    // e.g. "Philox4x32-10 (Random123's), ...; ziggurat normals ..."
  std::vector<std::string> boundaryLabels;  // names of the boundary bins
};

/// Writes sample.h5 (truncating).
void writeSampleFile(const std::string& path, const meshes::BoxMesh& mesh, const SampleFileInfo& info,
                     const std::vector<SampleCounts>& steps);

}  // namespace fpdp::io
