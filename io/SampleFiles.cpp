#include "io/SampleFiles.hpp"

#include "io/AxisNames.hpp"
#include "io/OutputFile.hpp"
#include "io/Hdf5Reading.hpp"

#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace fpdp::io {

namespace {


using Handle = Hdf5Handle;

std::vector<double> readDoubles(hid_t file, const std::string& name, const std::string& path) {
  return readDoubleDataset(file, name, path);
}

void writeArray(hid_t loc, const std::string& name, hid_t type, const void* data, const std::vector<hsize_t>& shape) {
  Handle space{H5Screate_simple(static_cast<int>(shape.size()), shape.data(), nullptr), H5Sclose};
  Handle ds{H5Dcreate2(loc, name.c_str(), type, space.id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose};
  if (ds.id < 0 || H5Dwrite(ds.id, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    throw std::runtime_error("HDF5: cannot write dataset " + name);
}

void writeScalarAttribute(hid_t loc, const char* name, hid_t type, const void* value) {
  Handle space{H5Screate(H5S_SCALAR), H5Sclose};
  Handle at{H5Acreate2(loc, name, type, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  if (at.id < 0 || H5Awrite(at.id, type, value) < 0) throw std::runtime_error(std::string("HDF5: cannot write ") + name);
}

void writeString(hid_t loc, const char* name, const std::string& s, bool attribute) {
  Handle type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(type.id, s.empty() ? 1 : s.size());
  H5Tset_strpad(type.id, H5T_STR_NULLPAD);
  Handle space{H5Screate(H5S_SCALAR), H5Sclose};
  const char* data = s.empty() ? "" : s.data();
  if (attribute) {
    Handle at{H5Acreate2(loc, name, type.id, space.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
    if (at.id < 0 || H5Awrite(at.id, type.id, data) < 0) throw std::runtime_error(std::string("HDF5: cannot write ") + name);
  } else {
    Handle ds{H5Dcreate2(loc, name, type.id, space.id, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose};
    if (ds.id < 0 || H5Dwrite(ds.id, type.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
      throw std::runtime_error(std::string("HDF5: cannot write ") + name);
  }
}

hid_t makeGroup(hid_t loc, const std::string& name) {
  const hid_t g = H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) throw std::runtime_error("HDF5: cannot create group " + name);
  return g;
}

}  // namespace

std::optional<SolverFields> readSolverFields(const std::string& path, int dim, long step) {
  Handle file{H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  if (file.id < 0) throw std::runtime_error("cannot open the solver output " + path);
  SolverFields out;
  // Fields of the state y = L^-1 theta (a full Sigma beyond three axes) have axes y_a; the caller compares the faces
  // with its own mesh of the state, and maps moments with its own L.
  const bool state = H5Lexists(file.id, "/mesh", H5P_DEFAULT) > 0 &&
                     H5Lexists(file.id, "/mesh/parameters_from_state", H5P_DEFAULT) > 0;
  for (int a = 0; a < dim; ++a)
    out.faces.push_back(readDoubles(file.id, "/mesh/" + axisName(dim, a, state) + "_faces", path));
  char group[48];
  std::snprintf(group, sizeof group, "/fields/step_%08ld", step);
  if (H5Lexists(file.id, "/fields", H5P_DEFAULT) <= 0 || H5Lexists(file.id, group, H5P_DEFAULT) <= 0) return std::nullopt;
  out.p = readDoubles(file.id, std::string(group) + "/p", path);
  out.q = readDoubles(file.id, std::string(group) + "/q", path);
  // Projected noisy GD: the boundary bins' masses (docs/output.md), present exactly when the case has a constraint.
  if (H5Lexists(file.id, (std::string(group) + "/boundary_p").c_str(), H5P_DEFAULT) > 0) {
    out.boundaryP = readDoubles(file.id, std::string(group) + "/boundary_p", path);
    out.boundaryQ = readDoubles(file.id, std::string(group) + "/boundary_q", path);
  }
  Handle g{H5Gopen2(file.id, group, H5P_DEFAULT), H5Gclose};
  Handle at{H5Aopen(g.id, "time", H5P_DEFAULT), H5Aclose};
  if (at.id < 0 || H5Aread(at.id, H5T_NATIVE_DOUBLE, &out.time) < 0)
    throw std::runtime_error(path + ": no time attribute on " + group);
  return out;
}

bool sameMesh(const SolverFields& fields, const meshes::BoxMesh& mesh) {
  if (static_cast<int>(fields.faces.size()) != mesh.dim()) return false;
  std::size_t cells = 1;
  for (int a = 0; a < mesh.dim(); ++a) {
    const auto& f = mesh.axis(a).faces();
    if (fields.faces[a].size() != f.size()) return false;
    const double tol = 1e-12 * (mesh.axis(a).upper() - mesh.axis(a).lower());
    for (std::size_t i = 0; i < f.size(); ++i)
      if (std::abs(fields.faces[a][i] - f[i]) > tol) return false;
    cells *= f.size() - 1;
  }
  return fields.p.size() == cells && fields.q.size() == cells;
}

void writeSampleFile(const std::string& path, const meshes::BoxMesh& mesh, const SampleFileInfo& info,
                     const std::vector<SampleCounts>& steps) {
  createFreshFile(path);  // HDF5 opens by name: what it opens is the regular file just made (io/OutputFile)
  Handle file{H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose};
  if (file.id < 0) throw std::runtime_error("cannot create HDF5 file '" + path + "'");
  const long dim = mesh.dim();
  writeScalarAttribute(file.id, "dim", H5T_NATIVE_LONG, &dim);
  writeScalarAttribute(file.id, "particles", H5T_NATIVE_INT64, &info.particles);
  writeScalarAttribute(file.id, "seed", H5T_NATIVE_UINT64, &info.seed);
  const long ranks = info.ranks, threads = info.threads;
  writeScalarAttribute(file.id, "ranks", H5T_NATIVE_LONG, &ranks);
  writeScalarAttribute(file.id, "threads", H5T_NATIVE_LONG, &threads);
  writeString(file.id, "generator", info.generator, true);
  writeString(file.id, "parameters", info.parametersToml, false);
  {
    Handle m{makeGroup(file.id, "mesh"), H5Gclose};
    for (int a = 0; a < mesh.dim(); ++a)
      writeArray(m.id, axisName(mesh.dim(), a) + "_faces", H5T_NATIVE_DOUBLE, mesh.axis(a).faces().data(),
                 {static_cast<hsize_t>(mesh.axis(a).faces().size())});
  }
  if (!info.boundaryLabels.empty()) {
    std::string labels;
    for (const auto& l : info.boundaryLabels) labels += l + "\n";
    writeString(file.id, "boundary_bins", labels, false);
  }
  std::vector<hsize_t> shape;
  for (int a = mesh.dim() - 1; a >= 0; --a) shape.push_back(static_cast<hsize_t>(mesh.cells(a)));  // C order
  Handle counts{makeGroup(file.id, "counts"), H5Gclose};
  for (const SampleCounts& s : steps) {
    char name[48];
    std::snprintf(name, sizeof name, "step_%08ld", s.step);
    Handle g{makeGroup(counts.id, name), H5Gclose};
    writeScalarAttribute(g.id, "step", H5T_NATIVE_LONG, &s.step);
    writeScalarAttribute(g.id, "time", H5T_NATIVE_DOUBLE, &s.time);
    const char* which[2] = {"p", "q"};
    for (int k = 0; k < 2; ++k) {
      writeArray(g.id, which[k], H5T_NATIVE_INT64, s.cells[k].data(), shape);
      if (!s.boundary[k].empty())
        writeArray(g.id, std::string("boundary_") + which[k], H5T_NATIVE_INT64, s.boundary[k].data(),
                   {static_cast<hsize_t>(s.boundary[k].size())});
      writeScalarAttribute(g.id, k == 0 ? "outside_p" : "outside_q", H5T_NATIVE_INT64, &s.outside[k]);
    }
  }
}

}  // namespace fpdp::io
