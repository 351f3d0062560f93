#include "io/Hdf5Reading.hpp"

#include <stdexcept>

namespace fpdp::io {

std::vector<double> readDoubleDataset(hid_t loc, const std::string& name, const std::string& where,
                                      std::optional<hsize_t> layer) {
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
  for (const hsize_t d : dims) n *= d;
  std::vector<double> v(n);
  if (n > 0 && H5Dread(ds.id, H5T_NATIVE_DOUBLE, memory ? memory->id : H5S_ALL, memory ? space.id : H5S_ALL,
                       H5P_DEFAULT, v.data()) < 0)
    throw std::runtime_error(where + ": cannot read " + name);
  return v;
}

}  // namespace fpdp::io
