#include "io/Hdf5Output.hpp"

#include <functional>

#include <hdf5.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace fpdp::io {

namespace {


void writeDoubles(hid_t loc, const std::string& name, const std::vector<double>& v) {
  hsize_t n = v.size();
  hid_t space = H5Screate_simple(1, &n, nullptr);
  hid_t ds = H5Dcreate2(loc, name.c_str(), H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (ds < 0) {
    H5Sclose(space);
    throw std::runtime_error("HDF5: cannot create dataset " + name);
  }
  herr_t e = H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data());
  H5Dclose(ds);
  H5Sclose(space);
  if (e < 0) throw std::runtime_error("HDF5: cannot write dataset " + name);
}

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
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t at = H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t e = at < 0 ? -1 : H5Awrite(at, type, s.empty() ? "" : s.data());
  if (at >= 0) H5Aclose(at);
  H5Sclose(space);
  H5Tclose(type);
  if (e < 0) throw std::runtime_error("HDF5: cannot write attribute " + name);
}

void writeIntAttribute(hid_t loc, const std::string& name, long v) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t at = H5Acreate2(loc, name.c_str(), H5T_NATIVE_LONG, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t e = at < 0 ? -1 : H5Awrite(at, H5T_NATIVE_LONG, &v);
  if (at >= 0) H5Aclose(at);
  H5Sclose(space);
  if (e < 0) throw std::runtime_error("HDF5: cannot write attribute " + name);
}

hid_t makeGroup(hid_t loc, const char* name) {
  hid_t g = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) throw std::runtime_error(std::string("HDF5: cannot create group ") + name);
  return g;
}

}  // namespace

std::string Hdf5Output::stepGroup(long step) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "/fields/step_%08ld", step);
  return buf;
}

Hdf5Output::Hdf5Output(const std::string& path, const meshes::DistributedBoxMesh& mesh,
                       const std::string& parametersToml, const std::string& solverDescription)
    : path_(path), comm_(mesh.comm()) {
  PetscMPIInt rank, size;
  FPDP_PETSC(MPI_Comm_rank(comm_, &rank));
  FPDP_PETSC(MPI_Comm_size(comm_, &size));
  int ok = 1;
  std::string error;
  if (rank == 0) {
    try {
      hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
      if (f < 0) throw std::runtime_error("cannot create HDF5 file '" + path + "'");
      try {
        writeStringAttribute(f, "fpdp_version", FPDP_VERSION);
        writeIntAttribute(f, "ranks", size);
        writeIntAttribute(f, "dim", mesh.dim());
        writeStringAttribute(f, "solver", solverDescription);
        writeString(f, "parameters", parametersToml);
        hid_t m = makeGroup(f, "mesh");
        const char* axisNames[3] = {"x", "y", "z"};
        for (int a = 0; a < mesh.dim(); ++a) {
          const auto& ax = mesh.box().axis(a);
          std::vector<double> centres(static_cast<std::size_t>(ax.cells()));
          for (int i = 0; i < ax.cells(); ++i) centres[i] = ax.centre(i);
          writeDoubles(m, std::string(axisNames[a]) + "_faces", ax.faces());
          writeDoubles(m, std::string(axisNames[a]) + "_centres", centres);
        }
        H5Gclose(m);
        H5Gclose(makeGroup(f, "fields"));
      } catch (...) {
        H5Fclose(f);
        throw;
      }
      H5Fclose(f);
    } catch (const std::exception& e) {
      ok = 0;
      error = e.what();
    }
  }
  FPDP_PETSC(MPI_Bcast(&ok, 1, MPI_INT, 0, comm_));
  if (!ok) throw std::runtime_error(rank == 0 ? error : "HDF5 output could not be created on rank 0");
  FPDP_PETSC(PetscViewerHDF5Open(comm_, path.c_str(), FILE_MODE_APPEND, &viewer_));
}

Hdf5Output::~Hdf5Output() {
  if (viewer_) (void)PetscViewerDestroy(&viewer_);
}

void Hdf5Output::writeFields(long step, double time, const std::vector<std::pair<std::string, Vec>>& fields) {
  if (!viewer_) throw std::logic_error("Hdf5Output::writeFields after close");
  const std::string group = stepGroup(step);
  FPDP_PETSC(PetscViewerHDF5PushGroup(viewer_, group.c_str()));
  for (const auto& [name, vec] : fields) {
    FPDP_PETSC(PetscObjectSetName(reinterpret_cast<PetscObject>(vec), name.c_str()));
    FPDP_PETSC(VecView(vec, viewer_));
  }
  FPDP_PETSC(PetscViewerHDF5PopGroup(viewer_));
  PetscReal t = time;
  PetscInt s = static_cast<PetscInt>(step);
  FPDP_PETSC(PetscViewerHDF5WriteAttribute(viewer_, group.c_str(), "time", PETSC_REAL, &t));
  FPDP_PETSC(PetscViewerHDF5WriteAttribute(viewer_, group.c_str(), "step", PETSC_INT, &s));
  FPDP_PETSC(PetscViewerFlush(viewer_));
}

void Hdf5Output::writeReplicated(const std::string& group, const std::string& name, const std::vector<double>& values,
                                 int columns) {
  if (!viewer_) throw std::logic_error("Hdf5Output::writeReplicated after close");
  PetscMPIInt rank;
  FPDP_PETSC(MPI_Comm_rank(comm_, &rank));
  const auto n = static_cast<PetscInt>(values.size());
  Vec v;
  FPDP_PETSC(VecCreate(comm_, &v));
  FPDP_PETSC(VecSetSizes(v, rank == 0 ? n : 0, n));
  FPDP_PETSC(VecSetBlockSize(v, columns));
  FPDP_PETSC(VecSetType(v, VECMPI));
  if (rank == 0) {
    PetscScalar* a;
    FPDP_PETSC(VecGetArray(v, &a));
    std::copy(values.begin(), values.end(), a);
    FPDP_PETSC(VecRestoreArray(v, &a));
  }
  FPDP_PETSC(PetscObjectSetName(reinterpret_cast<PetscObject>(v), name.c_str()));
  FPDP_PETSC(PetscViewerHDF5PushGroup(viewer_, group.c_str()));
  FPDP_PETSC(VecView(v, viewer_));
  FPDP_PETSC(PetscViewerHDF5PopGroup(viewer_));
  FPDP_PETSC(VecDestroy(&v));
}

void Hdf5Output::writeSeries(const std::vector<std::string>& columns, const std::vector<std::vector<double>>& rows) {
  writeTable("series", columns, rows);  // /series is a table like /bounds and /epsilon
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

void Hdf5Output::writeTable(const std::string& group, const std::vector<std::string>& columns,
                            const std::vector<std::vector<double>>& rows,
                            const std::vector<std::pair<std::string, std::string>>& texts) {
  if (viewer_) FPDP_PETSC(PetscViewerDestroy(&viewer_));
  writeGroupOnRankZero(comm_, path_, group, [&](hid_t g) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      std::vector<double> col(rows.size());
      for (std::size_t r = 0; r < rows.size(); ++r) col[r] = rows[r][c];
      writeDoubles(g, columns[c], col);
    }
    for (const auto& [name, text] : texts) writeString(g, name, text);
  }, "table");
}

void Hdf5Output::writeArrays(const std::string& group, const std::vector<Array>& arrays) {
  if (viewer_) FPDP_PETSC(PetscViewerDestroy(&viewer_));
  writeGroupOnRankZero(comm_, path_, group, [&](hid_t g) {
    for (const Array& a : arrays) {
      std::vector<hsize_t> dims(a.shape.begin(), a.shape.end());
      hsize_t count = 1;
      for (hsize_t d : dims) count *= d;
      if (count != a.values.size()) throw std::logic_error("HDF5: dataset " + a.name + " has the wrong size");
      hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
      hid_t ds = H5Dcreate2(g, a.name.c_str(), H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      herr_t e = ds < 0 ? -1 : (count == 0 ? 0 : H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT,
                                                          a.values.data()));
      if (ds >= 0) H5Dclose(ds);
      H5Sclose(space);
      if (e < 0) throw std::runtime_error("HDF5: cannot write dataset " + group + "/" + a.name);
    }
  }, "arrays");
}

void Hdf5Output::close() {
  if (viewer_) FPDP_PETSC(PetscViewerDestroy(&viewer_));
}

}  // namespace fpdp::io
