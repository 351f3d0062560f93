#include "io/Hdf5Output.hpp"

#include "io/AxisNames.hpp"

#include <functional>
#include <filesystem>
#include <sstream>
#include <cmath>

#include <hdf5.h>

#include "io/Hdf5Reading.hpp"
#include "io/OutputFile.hpp"
#include "io/WriteFailure.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <stdexcept>

namespace fpdp::io {

namespace {

void writeString(hid_t loc, const std::string& name, const std::string& s) {
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, s.empty() ? 1 : s.size());
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t ds = H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  herr_t e = ds < 0 ? -1 : H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.empty() ? "" : s.data());
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(space);
  H5Tclose(type);
  if (e < 0) throw std::runtime_error("HDF5: cannot write string " + name);
}

void writeStringAttribute(hid_t loc, const std::string& name, const std::string& s) {
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, s.empty() ? 1 : s.size());
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t at = H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t e = at < 0 ? -1 : H5Awrite(at, type, s.empty() ? "" : s.data());
  if (at >= 0) H5Aclose(at);
  H5Sclose(space);
  H5Tclose(type);
  if (e < 0) throw std::runtime_error("HDF5: cannot write attribute " + name);
}

/// A scalar integer attribute stored as `type` (the file's native long, or int as PETSc's viewer stores PetscInt).
void writeIntAttribute(hid_t loc, const std::string& name, long v, hid_t type = H5T_NATIVE_LONG) {
  const int narrow = static_cast<int>(v);
  const void* value = type == H5T_NATIVE_INT ? static_cast<const void*>(&narrow) : &v;
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t at = H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t e = at < 0 ? -1 : H5Awrite(at, type, value);
  if (at >= 0) H5Aclose(at);
  H5Sclose(space);
  if (e < 0) throw std::runtime_error("HDF5: cannot write attribute " + name);
}

/// A string attribute as PETSc's viewer writes one (null-terminated, its length + 1), so that a serial run's field
/// files read as a parallel run's.
void writeNullTerminatedAttribute(hid_t loc, const std::string& name, const std::string& s) {
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, s.size() + 1);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t at = H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t e = at < 0 ? -1 : H5Awrite(at, type, s.c_str());
  if (at >= 0) H5Aclose(at);
  H5Sclose(space);
  H5Tclose(type);
  if (e < 0) throw std::runtime_error("HDF5: cannot write attribute " + name);
}

void writeDoubleAttribute(hid_t loc, const std::string& name, double v) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t at = H5Acreate2(loc, name.c_str(), H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t e = at < 0 ? -1 : H5Awrite(at, H5T_NATIVE_DOUBLE, &v);
  if (at >= 0) H5Aclose(at);
  H5Sclose(space);
  if (e < 0) throw std::runtime_error("HDF5: cannot write attribute " + name);
}

/// The attributes of a dataset (docs/output.md, "fpdp.h5"): units, description and a status column's code table.
void describe(hid_t ds, const Column& info) {
  if (info.units.empty() || info.description.empty())
    throw std::logic_error("HDF5: dataset " + info.name + " has no units or no description");
  writeStringAttribute(ds, "units", info.units);
  writeStringAttribute(ds, "description", info.description);
  if (!info.statusCodes.empty()) writeStringAttribute(ds, "status_codes", info.statusCodes);
}

/// A dataset of shape `dims` (values in C order) at `path` below `loc`: int64 for an integer column (every value an
/// integer, else std::logic_error), float64 otherwise; with its attributes.
void writeDataset(hid_t loc, const std::string& path, const Column& info, const std::vector<hsize_t>& dims,
                  const std::vector<double>& values, hid_t lcpl = H5P_DEFAULT) {
  hsize_t count = 1;
  for (hsize_t d : dims) count *= d;
  if (count != values.size()) throw std::logic_error("HDF5: dataset " + path + " has the wrong size");
  std::vector<std::int64_t> integers;
  if (info.integer()) {
    integers.reserve(values.size());
    for (double v : values) {
      if (!(std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18))
        throw std::logic_error("HDF5: the integer dataset " + path + " holds the value " + std::to_string(v));
      integers.push_back(static_cast<std::int64_t>(v));
    }
  }
  const hid_t fileType = info.integer() ? H5T_STD_I64LE : H5T_NATIVE_DOUBLE;
  const hid_t memType = info.integer() ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE;
  const void* data = info.integer() ? static_cast<const void*>(integers.data()) : values.data();
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t ds = H5Dcreate2(loc, path.c_str(), fileType, space, lcpl, H5P_DEFAULT, H5P_DEFAULT);
  H5Sclose(space);
  if (ds < 0) throw std::runtime_error("HDF5: cannot create dataset " + path);
  try {
    if (count > 0 && H5Dwrite(ds, memType, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
      throw std::runtime_error("HDF5: cannot write dataset " + path);
    describe(ds, info);
  } catch (...) {
    H5Dclose(ds);
    throw;
  }
  H5Dclose(ds);
}

/// A scalar fixed-length string dataset (units "text") with its description.
void writeText(hid_t loc, const Text& t) {
  writeString(loc, t.name, t.text);
  hid_t ds = H5Dopen2(loc, t.name.c_str(), H5P_DEFAULT);
  if (ds < 0) throw std::runtime_error("HDF5: cannot reopen string " + t.name);
  try {
    describe(ds, Column{t.name, units::kText, t.description, Column::Type::Real, {}});
  } catch (...) {
    H5Dclose(ds);
    throw;
  }
  H5Dclose(ds);
}

hid_t makeGroup(hid_t loc, const char* name) {
  hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) throw std::runtime_error(std::string("HDF5: cannot create group ") + name);
  return g;
}

}  // namespace

/// The name of axis a in /mesh: x, y, z up to three axes, theta_0 ... theta_5 beyond.
std::string Hdf5Output::stepGroup(long step) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "/fields/step_%08ld", step);
  return buf;
}

namespace {
/// Rank 0 runs `action`; every rank learns whether it worked and throws together.
void onRankZero(MPI_Comm comm, const std::function<void()>& action, const std::string& what) {
  PetscMPIInt rank;
  FPDP_PETSC(MPI_Comm_rank(comm, &rank));
  int ok = 1;
  std::string error;
  if (rank == 0) {
    try {
      action();
    } catch (const std::exception& e) {
      ok = 0;
      error = e.what();
    }
  }
  FPDP_PETSC(MPI_Bcast(&ok, 1, MPI_INT, 0, comm));
  if (!ok) throw std::runtime_error(rank == 0 ? error : what + " failed on rank 0");
}

void renameOrThrow(const std::string& from, const std::string& to) { renameOver(from, to); }
}  // namespace

Hdf5Output::Hdf5Output(const std::string& path, const meshes::DistributedBoxMesh& mesh,
                       const std::string& parametersToml, const std::string& solverDescription)
    : Hdf5Output(path, mesh.comm(), mesh.box(), parametersToml, solverDescription) {
  mesh_ = &mesh;
}

Hdf5Output::Hdf5Output(const std::string& path, MPI_Comm comm, const meshes::BoxMesh& box,
                       const std::string& parametersToml, const std::string& solverDescription)
    : path_(path), directory_(std::filesystem::path(path).parent_path().string()), comm_(comm), box_(box),
      parameters_(parametersToml), solver_(solverDescription) {
  FPDP_PETSC(MPI_Comm_rank(comm_, &rank_));
  FPDP_PETSC(MPI_Comm_size(comm_, &size_));
  if (directory_.empty()) directory_ = ".";
  onRankZero(comm_, [&] { std::filesystem::create_directories(directory_ + "/fields"); }, "creating DIR/fields");
}

Hdf5Output::~Hdf5Output() = default;

std::string Hdf5Output::stepFile(long step) const {
  char buf[48];
  std::snprintf(buf, sizeof buf, "/fields/step_%08ld.h5", step);
  return directory_ + buf;
}

void Hdf5Output::removeStepFiles(const std::string& directory) {
  std::error_code ec;
  std::filesystem::remove_all(directory + "/fields", ec);
}

/// One rank writes the step file with HDF5's POSIX driver: no MPI-IO, so nothing of Open MPI's shared-file-pointer
/// machinery (a named semaphore per file name in /dev/shm, which a killed process leaves locked for every later run
/// on the machine) is ever touched. On one rank the DMDA's global order is the natural order (x fastest), the order
/// PETSc's viewer writes; the layout, types and attributes are the viewer's.
void Hdf5Output::writeFieldsSerial(const std::string& tmp, long step, double time, const std::vector<Field>& fields) {
  std::vector<hsize_t> dims;
  for (int a = box_.dim() - 1; a >= 0; --a) dims.push_back(static_cast<hsize_t>(box_.axis(a).cells()));
  createFreshFile(tmp);  // HDF5 opens by name: what it opens is the regular file just made (io/OutputFile)
  Hdf5Handle file{H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose};
  if (file.id < 0) throw writeFailure("create", tmp);
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  Hdf5Handle linkProperties{lcpl, H5Pclose};
  const std::string group = stepGroup(step);
  Hdf5Handle g{H5Gcreate2(file.id, group.c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT), H5Gclose};
  if (g.id < 0) throw std::runtime_error("HDF5: cannot create group " + group + " in '" + tmp + "'");
  for (const Field& field : fields) {
    const std::vector<double> values = meshes::localValues(field.vec);
    hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    Hdf5Handle ds{H5Dcreate2(g.id, field.info.name.c_str(), H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT,
                             H5P_DEFAULT),
                  H5Dclose};
    H5Sclose(space);
    if (ds.id < 0 || H5Dwrite(ds.id, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0)
      throw writeFailure("write", tmp);
    writeNullTerminatedAttribute(ds.id, "units", field.info.units);
    writeNullTerminatedAttribute(ds.id, "description", field.info.description);
  }
  writeDoubleAttribute(g.id, "time", time);
  writeIntAttribute(g.id, "step", step, H5T_NATIVE_INT);
  if (H5Fflush(file.id, H5F_SCOPE_GLOBAL) < 0) throw writeFailure("write", tmp);
}

void Hdf5Output::writeFields(long step, double time, const std::vector<Field>& fields) {
  if (closed_ || assembled_) throw std::logic_error("Hdf5Output::writeFields after the tables or close");
  if (!mesh_) throw std::logic_error("Hdf5Output::writeFields on a mesh that is not a DMDA (writeFieldParts)");
  for (const Field& field : fields)
    if (field.info.units.empty() || field.info.description.empty() || field.info.integer())
      throw std::logic_error("Hdf5Output: the field " + field.info.name + " needs units, a description and type real");
  const std::string file = stepFile(step), tmp = file + ".tmp";
  if (size_ == 1) {
    writeFieldsSerial(tmp, step, time, fields);
    renameOrThrow(tmp, file);
    fieldSteps_.push_back(step);
    return;
  }
  const std::string group = stepGroup(step);
  onRankZero(comm_, [&] { createFreshFile(tmp); }, "creating " + tmp);
  PetscViewer viewer;
  FPDP_PETSC(PetscViewerHDF5Open(comm_, tmp.c_str(), FILE_MODE_WRITE, &viewer));
  FPDP_PETSC(PetscViewerHDF5PushGroup(viewer, group.c_str()));
  for (const Field& field : fields) {
    FPDP_PETSC(PetscObjectSetName(reinterpret_cast<PetscObject>(field.vec), field.info.name.c_str()));
    FPDP_PETSC(VecView(field.vec, viewer));
  }
  FPDP_PETSC(PetscViewerHDF5PopGroup(viewer));
  for (const Field& field : fields) {
    const std::string dataset = group + "/" + field.info.name;
    FPDP_PETSC(PetscViewerHDF5WriteAttribute(viewer, dataset.c_str(), "units", PETSC_STRING, field.info.units.c_str()));
    FPDP_PETSC(PetscViewerHDF5WriteAttribute(viewer, dataset.c_str(), "description", PETSC_STRING,
                                             field.info.description.c_str()));
  }
  PetscReal t = time;
  PetscInt s = static_cast<PetscInt>(step);
  FPDP_PETSC(PetscViewerHDF5WriteAttribute(viewer, group.c_str(), "time", PETSC_REAL, &t));
  FPDP_PETSC(PetscViewerHDF5WriteAttribute(viewer, group.c_str(), "step", PETSC_INT, &s));
  FPDP_PETSC(PetscViewerDestroy(&viewer));  // closes the file on every rank before rank 0 renames it
  FPDP_PETSC(MPI_Barrier(comm_));
  onRankZero(comm_, [&] { renameOrThrow(tmp, file); }, "renaming " + tmp);
  fieldSteps_.push_back(step);
}

void Hdf5Output::writeFieldParts(long step, double time, int first, int count, const std::vector<FieldPart>& fields) {
  if (closed_ || assembled_) throw std::logic_error("Hdf5Output::writeFieldParts after the tables or close");
  const int d = box_.dim();
  std::vector<hsize_t> dims, chunk, start, block;
  for (int a = d - 1; a >= 0; --a) {
    const auto n = static_cast<hsize_t>(box_.axis(a).cells());
    dims.push_back(n);
    chunk.push_back(a <= 2 ? n : 1);  // blocks of the first three axes: whole planes of a rank's slab, ~ 10^4..10^5 cells
    start.push_back(a == 0 ? static_cast<hsize_t>(first) : 0);
    block.push_back(a == 0 ? static_cast<hsize_t>(count) : n);
  }
  std::size_t partCells = 1;
  for (hsize_t b : block) partCells *= static_cast<std::size_t>(b);
  for (const FieldPart& field : fields) {
    if (field.info.units.empty() || field.info.description.empty() || field.info.integer())
      throw std::logic_error("Hdf5Output: the field " + field.info.name + " needs units, a description and type real");
    if (field.values->size() != partCells) throw std::logic_error("Hdf5Output::writeFieldParts: wrong part size");
  }
  const std::string file = stepFile(step), tmp = file + ".tmp", group = stepGroup(step);
  // Rank 0 creates the file and its datasets; then every rank in turn opens it and writes its block (a token passed
  // along the ranks keeps the writes apart). A failure is carried along with the token and reported on every rank.
  std::string error;
  int failed = 0;
  if (rank_ > 0) FPDP_PETSC(MPI_Recv(&failed, 1, MPI_INT, rank_ - 1, 0, comm_, MPI_STATUS_IGNORE));
  if (!failed) {
    try {
      if (rank_ == 0) createFreshFile(tmp);
      Hdf5Handle f{rank_ == 0 ? H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)
                              : H5Fopen(tmp.c_str(), H5F_ACC_RDWR, H5P_DEFAULT),
                   H5Fclose};
      if (f.id < 0) throw writeFailure(rank_ == 0 ? "create" : "open", tmp);
      if (rank_ == 0) {
        hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
        H5Pset_create_intermediate_group(lcpl, 1);
        Hdf5Handle linkProperties{lcpl, H5Pclose};
        Hdf5Handle g{H5Gcreate2(f.id, group.c_str(), lcpl, H5P_DEFAULT, H5P_DEFAULT), H5Gclose};
        if (g.id < 0) throw std::runtime_error("HDF5: cannot create group " + group + " in '" + tmp + "'");
        Hdf5Handle dcpl{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
        if (H5Pset_chunk(dcpl.id, d, chunk.data()) < 0 || H5Pset_shuffle(dcpl.id) < 0 || H5Pset_deflate(dcpl.id, 4) < 0)
          throw std::runtime_error("HDF5: cannot set up the chunked, compressed layout of " + group);
        for (const FieldPart& field : fields) {
          hid_t space = H5Screate_simple(d, dims.data(), nullptr);
          Hdf5Handle ds{H5Dcreate2(g.id, field.info.name.c_str(), H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl.id,
                                   H5P_DEFAULT),
                        H5Dclose};
          H5Sclose(space);
          if (ds.id < 0) throw writeFailure("write", tmp);
          writeNullTerminatedAttribute(ds.id, "units", field.info.units);
          writeNullTerminatedAttribute(ds.id, "description", field.info.description);
        }
        writeDoubleAttribute(g.id, "time", time);
        writeIntAttribute(g.id, "step", step, H5T_NATIVE_INT);
      }
      for (const FieldPart& field : fields) {
        const std::string path = group + "/" + field.info.name;
        Hdf5Handle ds{H5Dopen2(f.id, path.c_str(), H5P_DEFAULT), H5Dclose};
        if (ds.id < 0) throw writeFailure("open", tmp);
        Hdf5Handle fileSpace{H5Dget_space(ds.id), H5Sclose};
        Hdf5Handle memory{H5Screate_simple(d, block.data(), nullptr), H5Sclose};
        if (H5Sselect_hyperslab(fileSpace.id, H5S_SELECT_SET, start.data(), nullptr, block.data(), nullptr) < 0 ||
            H5Dwrite(ds.id, H5T_NATIVE_DOUBLE, memory.id, fileSpace.id, H5P_DEFAULT, field.values->data()) < 0)
          throw writeFailure("write", tmp);
      }
      if (H5Fflush(f.id, H5F_SCOPE_GLOBAL) < 0) throw writeFailure("write", tmp);
    } catch (const std::exception& e) {
      error = e.what();
      failed = 1;
    }
  }
  if (rank_ + 1 < size_) FPDP_PETSC(MPI_Send(&failed, 1, MPI_INT, rank_ + 1, 0, comm_));
  FPDP_PETSC(MPI_Bcast(&failed, 1, MPI_INT, size_ - 1, comm_));
  if (failed) {
    std::error_code ec;
    if (rank_ == 0) std::filesystem::remove(tmp, ec);
    throw std::runtime_error(error.empty() ? "writing " + tmp + " failed on another rank" : error);
  }
  onRankZero(comm_, [&] { renameOrThrow(tmp, file); }, "renaming " + tmp);
  fieldSteps_.push_back(step);
}

void Hdf5Output::writeReplicated(const std::string& group, const Column& info, const std::vector<double>& values,
                                 int columns) {
  if (closed_ || assembled_) throw std::logic_error("Hdf5Output::writeReplicated after the tables or close");
  // The checkpoint keeps the index as tab-separated lines (saveState).
  for (const std::string* text : {&group, &info.name, &info.units, &info.description})
    if (text->empty() || text->find_first_of("\t\n") != std::string::npos)
      throw std::logic_error("Hdf5Output::writeReplicated: empty text or a tab or line break in " + info.name);
  if (info.integer()) throw std::logic_error("Hdf5Output::writeReplicated: " + info.name + " must be real");
  replicated_.push_back({group, info, values, columns});
}

/// HDF5 that runs out of disk while writing leaves its file open, and its exit handlers then crash flushing it again
/// (exit 139 and thousands of lines): the space fpdp.h5 needs is checked before it is created. It needs at most the
/// field files it copies, the replicated arrays and the tables, plus HDF5's metadata (a generous 1 MiB and 10 %).
/// A disk that fills from elsewhere while it is written is not covered.
void Hdf5Output::requireSpaceFor(const std::string& file) const {
  std::error_code ec;
  std::uintmax_t bytes = 1u << 20;
  for (long step : fieldSteps_) bytes += std::filesystem::file_size(stepFile(step), ec);
  for (const auto& r : replicated_) bytes += 8 * r.values.size();
  bytes += bytes / 10;
  const auto space = std::filesystem::space(std::filesystem::path(file).parent_path(), ec);
  if (!ec && space.available < bytes)
    throw std::runtime_error("cannot write '" + file + "': No space left on device (it needs about " +
                             std::to_string(bytes >> 20) + " MiB, " + std::to_string(space.available >> 20) +
                             " MiB are free)");
}

void Hdf5Output::assemble() {
  if (closed_) throw std::logic_error("Hdf5Output: write after close");
  if (assembled_) return;
  onRankZero(comm_, [&] {
    const std::string tmp = path_ + ".tmp";
    requireSpaceFor(tmp);
    createFreshFile(tmp);
    hid_t f = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) throw std::runtime_error("cannot create HDF5 file '" + tmp + "'");
    try {
      writeStringAttribute(f, "fpdp_version", FPDP_VERSION);
      writeIntAttribute(f, "ranks", size_);
      writeIntAttribute(f, "dim", box_.dim());
      writeStringAttribute(f, "solver", solver_);
      writeText(f, {"parameters", "The resolved case as TOML, identical to parameters.toml.", parameters_});
      hid_t m = makeGroup(f, "mesh");
      for (int a = 0; a < box_.dim(); ++a) {
        const auto& ax = box_.axis(a);
        std::vector<double> centres(static_cast<std::size_t>(ax.cells()));
        for (int i = 0; i < ax.cells(); ++i) centres[i] = ax.centre(i);
        const std::string axis = axisName(box_.dim(), a, !stateMap_.empty());
        writeDataset(m, axis + "_faces",
                     real(axis + "_faces", units::kParameter,
                          "The cell faces along axis " + axis + ", from the lower wall to the upper wall."),
                     {ax.faces().size()}, ax.faces());
        writeDataset(m, axis + "_centres",
                     real(axis + "_centres", units::kParameter, "The cell centres along axis " + axis + "."),
                     {centres.size()}, centres);
      }
      if (!stateMap_.empty()) {
        const auto d = static_cast<std::size_t>(box_.dim());
        writeDataset(m, "parameters_from_state",
                     real("parameters_from_state", units::kOne,
                          "L of the noise covariance Sigma = L D L^T (unit lower triangular, row-major): the axes y_a "
                          "are the state y = L^-1 theta, in which the noise is diagonal, and the fields are densities of "
                          "y; theta = L y."),
                     {d, d}, stateMap_);
      }
      H5Gclose(m);
      if (!fieldSteps_.empty()) H5Gclose(makeGroup(f, "fields"));  // output.fields = false: no /fields
      for (long step : fieldSteps_) {
        const std::string file = stepFile(step), group = stepGroup(step);
        hid_t src = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
        if (src < 0) throw std::runtime_error("cannot open the step file '" + file + "'");
        const herr_t e = H5Ocopy(src, group.c_str(), f, group.c_str(), H5P_DEFAULT, H5P_DEFAULT);
        H5Fclose(src);
        if (e < 0) throw std::runtime_error("cannot copy " + group + " from '" + file + "'");
      }
      hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
      H5Pset_create_intermediate_group(lcpl, 1);
      try {
        for (const auto& r : replicated_) {
          const hsize_t n = r.values.size(), columns = static_cast<hsize_t>(r.columns);
          const std::vector<hsize_t> dims = r.columns > 1 ? std::vector<hsize_t>{n / columns, columns}
                                                          : std::vector<hsize_t>{n};
          writeDataset(f, r.group + "/" + r.info.name, r.info, dims, r.values, lcpl);
        }
      } catch (...) {
        H5Pclose(lcpl);
        throw;
      }
      H5Pclose(lcpl);
    } catch (...) {
      H5Fclose(f);
      throw;
    }
    H5Fclose(f);
  }, "assembling fpdp.h5");
  assembled_ = true;
}

void Hdf5Output::saveState(CheckpointData& ck) const {
  std::vector<double> steps(fieldSteps_.begin(), fieldSteps_.end());
  ck.put("/hdf5/field_steps", steps);
  std::string index;
  for (std::size_t i = 0; i < replicated_.size(); ++i) {
    const auto& r = replicated_[i];
    index += r.group + "\t" + r.info.name + "\t" + std::to_string(r.columns) + "\t" + r.info.units + "\t" +
             r.info.description + "\n";
    ck.put("/hdf5/replicated_" + std::to_string(i), r.values);
  }
  ck.putText("/hdf5/replicated", index);
}

void Hdf5Output::restoreState(const CheckpointData& ck) {
  fieldSteps_.clear();
  for (double s : ck.array("/hdf5/field_steps")) {
    if (!(s >= 0 && s < 1e15 && s == std::floor(s))) ck.fail("/hdf5/field_steps", "not a step number");
    fieldSteps_.push_back(static_cast<long>(s));
    std::error_code ec;
    if (!std::filesystem::is_regular_file(stepFile(fieldSteps_.back()), ec))
      ck.fail("/hdf5/field_steps", "the field file '" + stepFile(fieldSteps_.back()) + "' of a checkpointed step is missing");
  }
  replicated_.clear();
  std::istringstream in(ck.text("/hdf5/replicated"));
  std::string line;
  while (std::getline(in, line)) {
    // group, name, columns, units, description (saveState)
    std::vector<std::string> fields;
    for (std::size_t from = 0;;) {
      const auto tab = line.find('\t', from);
      fields.push_back(line.substr(from, tab == std::string::npos ? std::string::npos : tab - from));
      if (tab == std::string::npos) break;
      from = tab + 1;
    }
    if (fields.size() != 5) ck.fail("/hdf5/replicated", "malformed line '" + line + "'");
    for (const auto& field : fields)
      if (field.empty()) ck.fail("/hdf5/replicated", "an empty field in '" + line + "'");
    int columns = 0;
    try {
      columns = std::stoi(fields[2]);
    } catch (const std::exception&) {
      columns = 0;
    }
    if (columns < 1 || columns > 3) ck.fail("/hdf5/replicated", "bad column count in '" + line + "'");
    const std::string name = "/hdf5/replicated_" + std::to_string(replicated_.size());
    const auto& values = ck.array(name);
    if (values.size() % static_cast<std::size_t>(columns) != 0) ck.fail(name, "not a whole number of rows");
    replicated_.push_back({fields[0], real(fields[1], fields[3], fields[4]), values, columns});
  }
}

namespace {
// Rank 0 reopens the file and (re)writes /<group> with `fill`; every rank learns whether it worked. Shared by
// writeTable and writeArrays (the parallel viewer must be closed before).
void writeGroupOnRankZero(MPI_Comm comm, const std::string& path, const std::string& group,
                          const std::function<void(hid_t)>& fill, const std::string& what) {
  PetscMPIInt rank;
  FPDP_PETSC(MPI_Comm_rank(comm, &rank));
  int ok = 1;
  std::string error;
  if (rank == 0) {
    hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) {
      ok = 0;
      error = "cannot reopen '" + path + "'";
    } else {
      try {
        if (H5Lexists(f, group.c_str(), H5P_DEFAULT) > 0) H5Ldelete(f, group.c_str(), H5P_DEFAULT);
        hid_t g = makeGroup(f, group.c_str());
        try {
          fill(g);
        } catch (...) {
          H5Gclose(g);
          throw;
        }
        H5Gclose(g);
      } catch (const std::exception& e) {
        ok = 0;
        error = e.what();
      }
      H5Fclose(f);
    }
  }
  FPDP_PETSC(MPI_Bcast(&ok, 1, MPI_INT, 0, comm));
  if (!ok) throw std::runtime_error(rank == 0 ? error : "HDF5 " + what + " " + group + " could not be written on rank 0");
}
}  // namespace

void Hdf5Output::writeTable(const std::string& group, const std::vector<Column>& columns,
                            const std::vector<std::vector<double>>& rows, const std::vector<Text>& texts) {
  assemble();
  for (const auto& row : rows)
    if (row.size() != columns.size())
      throw std::logic_error("HDF5: a row of /" + group + " has " + std::to_string(row.size()) + " values for " +
                             std::to_string(columns.size()) + " columns");
  writeGroupOnRankZero(comm_, path_ + ".tmp", group, [&](hid_t g) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      std::vector<double> col(rows.size());
      for (std::size_t r = 0; r < rows.size(); ++r) col[r] = rows[r][c];
      writeDataset(g, columns[c].name, columns[c], {rows.size()}, col);
    }
    for (const Text& t : texts) writeText(g, t);
  }, "table");
}

void Hdf5Output::writeArrays(const std::string& group, const std::vector<Array>& arrays,
                             const std::vector<Text>& texts) {
  assemble();
  writeGroupOnRankZero(comm_, path_ + ".tmp", group, [&](hid_t g) {
    for (const Array& a : arrays) writeDataset(g, a.info.name, a.info, {a.shape.begin(), a.shape.end()}, a.values);
    for (const Text& t : texts) writeText(g, t);
  }, "arrays");
}

void Hdf5Output::close() {
  if (closed_) return;
  assemble();
  onRankZero(comm_, [&] { renameOrThrow(path_ + ".tmp", path_); }, "renaming fpdp.h5");
  closed_ = true;
}

}  // namespace fpdp::io
