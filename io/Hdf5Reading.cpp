#include "io/Hdf5Reading.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace fpdp::io {

hid_t openHdf5ForReading(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot read '" + path + "': " + std::strerror(errno));
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  ::close(fd);
  if (!regular) throw std::runtime_error("cannot read '" + path + "': not a regular file");
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) throw std::runtime_error("cannot open '" + path + "' as HDF5");
  return file;
}

std::vector<double> readDoubleDataset(hid_t loc, const std::string& name, const std::string& where,
                                      std::optional<hsize_t> layer, hsize_t maxValues) {
  Hdf5Handle ds(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (ds.id < 0) throw std::runtime_error(where + ": no dataset " + name);
  Hdf5Handle space(H5Dget_space(ds.id), H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.id);
  if (rank < 0) throw std::runtime_error(where + ": cannot read " + name);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.id, dims.data(), nullptr);
  std::optional<Hdf5Handle> memory;
  if (layer) {
    if (rank != 3 || *layer >= dims[0]) throw std::runtime_error(where + ": " + name + " is not a 3-D field");
    const hsize_t start[3] = {*layer, 0, 0};
    dims[0] = 1;
    if (H5Sselect_hyperslab(space.id, H5S_SELECT_SET, start, nullptr, dims.data(), nullptr) < 0)
      throw std::runtime_error(where + ": cannot select a layer of " + name);
    memory.emplace(H5Screate_simple(3, dims.data(), nullptr), H5Sclose);
  }
  hsize_t n = 1;
  for (const hsize_t d : dims) {
    if (d != 0 && n > maxValues / d)
      throw std::runtime_error(where + ": " + name + " declares more than " + std::to_string(maxValues) +
                               " values; allowed: at most " + std::to_string(maxValues));
    n *= d;
  }
  if (n > maxValues)
    throw std::runtime_error(where + ": " + name + " declares " + std::to_string(n) + " values; allowed: at most " +
                             std::to_string(maxValues));
  std::vector<double> v(n);
  if (n > 0 && H5Dread(ds.id, H5T_NATIVE_DOUBLE, memory ? memory->id : H5S_ALL, memory ? space.id : H5S_ALL,
                       H5P_DEFAULT, v.data()) < 0)
    throw std::runtime_error(where + ": cannot read " + name);
  return v;
}

}  // namespace fpdp::io
