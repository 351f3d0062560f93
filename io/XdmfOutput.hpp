#pragma once
// fpdp.xmf: an XDMF 3 description of the fields in fpdp.h5, so that ParaView opens the HDF5 output directly
// (docs/output.md). ParaView cannot open a raw .h5, and PETSc's petsc_gen_xdmf.py handles DMPlex only.
//
// The pattern that ParaView's Xdmf3 readers accept (checked on Debian 12's ParaView 5.11, TOOLCHAIN-NOTES):
//   - a temporal collection with one uniform grid per output step, each pointing at its own HDF5 group
//     /fields/step_NNNNNNNN (hyperslabs into one (T, ...) dataset are dropped by the readers);
//   - every mesh as a 3-D slab: a 2-D mesh is one cell thick in z, a 1-D mesh one cell thick in y and z (a
//     2DCoRectMesh lands in the YZ plane); the slab is as thick as the smallest cell width in 2-D, a tenth of the
//     axis length in 1-D (a visible strip);
//   - uniform meshes: 3DCoRectMesh with ORIGIN_DXDYDZ geometry (z, y, x order, Precision 8); graded meshes:
//     3DRectMesh with VXVYVZ geometry read from /mesh/<axis>_faces;
//   - the fields as cell attributes with Dimensions "nz ny nx" (1 for the slab axes);
//   - the per-step scalars (the row of divergence.csv) as Center="Grid" attributes, values inline.
#include <string>
#include <vector>

#include "io/VtkOutput.hpp"
#include "meshes/BoxMesh.hpp"

namespace fpdp::io {

struct XdmfStep {
  long step;
  double time;
  std::vector<StepScalar> scalars;
};

/// Writes `path` (through a temporary file and a rename) describing the datasets `fieldNames` of every step of
/// `steps` in the HDF5 file `h5FileName` (a name relative to the .xmf's folder). Called by one rank.
void writeXdmf(const std::string& path, const std::string& h5FileName, const meshes::BoxMesh& box,
               const std::vector<std::string>& fieldNames, const std::vector<XdmfStep>& steps);

}  // namespace fpdp::io
