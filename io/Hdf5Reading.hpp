#pragma once
// Small pieces shared by fpdp's HDF5 readers (checkpoints, sample files, the plots' fields): a handle closed at scope
// exit, HDF5's error printing silenced while a reader reports errors itself, and a dataset of doubles read whole or
// as one layer of a 3-D dataset.
#include <hdf5.h>

#include <optional>
#include <string>
#include <vector>

namespace fpdp::io {

/// Closes an HDF5 identifier with the matching function at scope exit (a negative id: nothing to close).
struct Hdf5Handle {
  hid_t id;
  herr_t (*close)(hid_t);
  Hdf5Handle(hid_t id, herr_t (*close)(hid_t)) : id(id), close(close) {}
  Hdf5Handle(const Hdf5Handle&) = delete;
  Hdf5Handle& operator=(const Hdf5Handle&) = delete;
  ~Hdf5Handle() {
    if (id >= 0) close(id);
  }
};

/// Silences HDF5's error stack printing while it lives (the reader reports errors itself).
struct QuietHdf5 {
  H5E_auto2_t func = nullptr;
  void* data = nullptr;
  QuietHdf5() {
    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  QuietHdf5(const QuietHdf5&) = delete;
  QuietHdf5& operator=(const QuietHdf5&) = delete;
  ~QuietHdf5() { H5Eset_auto2(H5E_DEFAULT, func, data); }
};

/// The dataset `name` under `loc` as doubles; with `layer`, of a 3-D dataset (nz, ny, nx) only the cells
/// [layer, :, :]. At most `maxValues` values are read: a dataset that declares more (a 20 KB hostile file can declare
/// 7e8 doubles, which HDF5 reads as fill values) is refused before anything is allocated. Throws std::runtime_error
/// "<where>: no dataset <name>" / "<where>: cannot read <name>" / "<where>: <name> declares N values, ...".
std::vector<double> readDoubleDataset(hid_t loc, const std::string& name, const std::string& where,
                                      std::optional<hsize_t> layer = std::nullopt,
                                      hsize_t maxValues = hsize_t{1} << 28);

/// Opens the HDF5 file `path` read-only after checking what it is: a regular file (a FIFO, a device or a directory
/// is refused at once, never opened or waited on). Returns the file id (close with H5Fclose) or throws
/// std::runtime_error naming the path.
hid_t openHdf5ForReading(const std::string& path);

}  // namespace fpdp::io
