#include "io/CheckpointFile.hpp"
#include "io/Hdf5Reading.hpp"
#include "io/OutputFile.hpp"
#include "io/WriteFailure.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <vector>

namespace fs = std::filesystem;

namespace fpdp::io {

namespace {

constexpr std::size_t kUserBlock = 512;  // the smallest HDF5 user block; the seal fits in its first line
constexpr const char* kMagic = "FPDP-CHECKPOINT";
constexpr int kSealVersion = 1;
constexpr std::size_t kMaxObjects = 100000;  // far above any real checkpoint; bounds a hostile file's work

struct File {
  std::FILE* f = nullptr;
  ~File() {
    if (f) std::fclose(f);
  }
};

/// Hash of the bytes after the user block, read in chunks (a checkpoint can be large).
unsigned long long hashAfterUserBlock(std::FILE* f, unsigned long long size) {
  if (std::fseek(f, static_cast<long>(kUserBlock), SEEK_SET) != 0) return 0;
  std::vector<unsigned char> buf(1 << 20);
  unsigned long long h = kFnvOffset, left = size - kUserBlock;
  while (left > 0) {
    const std::size_t want = static_cast<std::size_t>(std::min<unsigned long long>(left, buf.size()));
    const std::size_t got = std::fread(buf.data(), 1, want, f);
    if (got == 0) break;
    h = fnv1a64(buf.data(), got, h);
    left -= got;
  }
  return h;
}

using Handle = Hdf5Handle;

void fail(const std::string& path, const std::string& what) {
  throw CheckpointFileError("checkpoint '" + path + "': " + what);
}

void writeArray(hid_t file, hid_t lcpl, const std::string& name, const std::vector<double>& v) {
  hsize_t n = v.size();
  Handle space{H5Screate_simple(1, &n, nullptr), H5Sclose};
  Handle ds{H5Dcreate2(file, name.c_str(), H5T_NATIVE_DOUBLE, space.id, lcpl, H5P_DEFAULT, H5P_DEFAULT), H5Dclose};
  if (ds.id < 0) throw CheckpointFileError("HDF5: cannot create dataset " + name);
  if (n > 0 && H5Dwrite(ds.id, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0)
    throw CheckpointFileError("HDF5: cannot write dataset " + name);
}

void writeText(hid_t file, hid_t lcpl, const std::string& name, const std::string& s) {
  Handle type{H5Tcopy(H5T_C_S1), H5Tclose};
  H5Tset_size(type.id, s.empty() ? 1 : s.size());
  H5Tset_strpad(type.id, H5T_STR_NULLPAD);
  Handle space{H5Screate(H5S_SCALAR), H5Sclose};
  Handle ds{H5Dcreate2(file, name.c_str(), type.id, space.id, lcpl, H5P_DEFAULT, H5P_DEFAULT), H5Dclose};
  if (ds.id < 0 || H5Dwrite(ds.id, type.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.empty() ? "" : s.data()) < 0)
    throw CheckpointFileError("HDF5: cannot write dataset " + name);
}

struct ReadContext {
  std::string path;
  unsigned long long fileSize;
  CheckpointData data;
  std::string error;
  std::size_t objects = 0;
};

/// Reads one dataset into the context; returns "" or what is wrong with it.
std::string readDataset(hid_t file, const std::string& name, ReadContext& ctx) {
  const std::string key = "/" + name;  // the absolute path, as written
  Handle ds{H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose};
  if (ds.id < 0) return "cannot open dataset";
  Handle type{H5Dget_type(ds.id), H5Tclose};
  Handle space{H5Dget_space(ds.id), H5Sclose};
  if (type.id < 0 || space.id < 0) return "cannot read the type or shape";
  const H5T_class_t cls = H5Tget_class(type.id);
  const int rank = H5Sget_simple_extent_ndims(space.id);
  if (cls == H5T_FLOAT) {
    if (H5Tget_size(type.id) != 8) return "expected float64 values, found a float of " + std::to_string(H5Tget_size(type.id)) + " bytes";
    if (rank != 1) return "expected a 1-D array, found rank " + std::to_string(rank);
    hsize_t n = 0;
    H5Sget_simple_extent_dims(space.id, &n, nullptr);
    // Every value must be stored in the file: a claimed size beyond it is a hostile shape, not an allocation.
    if (n > ctx.fileSize / 8) return "claims " + std::to_string(n) + " values, more than the file can hold";
    std::vector<double> v(static_cast<std::size_t>(n));
    if (n > 0 && H5Dread(ds.id, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0)
      return "cannot read its values";
    ctx.data.arrays[key] = std::move(v);
    return "";
  }
  if (cls == H5T_STRING) {
    if (H5Tis_variable_str(type.id) > 0) return "expected a fixed-length string, found a variable-length one";
    if (rank != 0) return "expected a scalar string, found rank " + std::to_string(rank);
    const std::size_t size = H5Tget_size(type.id);
    if (size == 0 || size > ctx.fileSize) return "has a string size the file cannot hold";
    Handle mem{H5Tcopy(H5T_C_S1), H5Tclose};
    H5Tset_size(mem.id, size);
    H5Tset_strpad(mem.id, H5T_STR_NULLPAD);
    std::string s(size, '\0');
    if (H5Dread(ds.id, mem.id, H5S_ALL, H5S_ALL, H5P_DEFAULT, s.data()) < 0) return "cannot read its text";
    while (!s.empty() && s.back() == '\0') s.pop_back();
    ctx.data.texts[key] = std::move(s);
    return "";
  }
  return "expected float64 values or a string, found HDF5 type class " + std::to_string(static_cast<int>(cls));
}

herr_t visitLink(hid_t group, const char* name, const H5L_info_t* info, void* opaque) {
  auto& ctx = *static_cast<ReadContext*>(opaque);
  const std::string path = std::string("/") + name;
  if (++ctx.objects > kMaxObjects) {
    ctx.error = "more than " + std::to_string(kMaxObjects) + " objects";
    return -1;
  }
  if (info->type != H5L_TYPE_HARD) {  // soft or external links could point anywhere, even at other files
    ctx.error = path + ": a soft or external link (a checkpoint holds datasets and groups only)";
    return -1;
  }
  H5O_info_t oinfo;
  if (H5Oget_info_by_name2(group, name, &oinfo, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
    ctx.error = path + ": cannot read the object";
    return -1;
  }
  if (oinfo.type == H5O_TYPE_GROUP) return 0;
  if (oinfo.type != H5O_TYPE_DATASET) {
    ctx.error = path + ": neither a group nor a dataset";
    return -1;
  }
  try {
    const std::string problem = readDataset(group, name, ctx);
    if (!problem.empty()) {
      ctx.error = "dataset " + path + ": " + problem;
      return -1;
    }
  } catch (const std::bad_alloc&) {
    ctx.error = "dataset " + path + ": too large to read";
    return -1;
  }
  return 0;
}

}  // namespace

void CheckpointData::putTable(const std::string& name, const std::vector<std::vector<double>>& rows,
                              std::size_t columns) {
  std::vector<double> flat;
  flat.reserve(rows.size() * columns);
  for (const auto& r : rows) {
    if (r.size() != columns) throw std::logic_error("CheckpointData::putTable: ragged table " + name);
    flat.insert(flat.end(), r.begin(), r.end());
  }
  put(name + "/values", std::move(flat));
  putScalar(name + "/columns", static_cast<double>(columns));
}

void CheckpointData::fail(const std::string& name, const std::string& what) const {
  throw CheckpointFileError("checkpoint '" + source + "': dataset " + name + ": " + what);
}

const std::vector<double>& CheckpointData::array(const std::string& name, std::optional<std::size_t> size) const {
  const auto it = arrays.find(name);
  if (it == arrays.end()) fail(name, texts.count(name) ? "expected float64 values, found a string" : "missing");
  if (size && it->second.size() != *size)
    fail(name, "expected " + std::to_string(*size) + " values, found " + std::to_string(it->second.size()));
  return it->second;
}

double CheckpointData::scalar(const std::string& name) const {
  const double v = array(name, 1).front();
  if (!std::isfinite(v)) fail(name, "expected a finite number, found " + std::to_string(v));
  return v;
}

long CheckpointData::integer(const std::string& name, long lo, long hi) const {
  const double v = array(name, 1).front();
  if (!(v >= static_cast<double>(lo) && v <= static_cast<double>(hi)) || v != std::floor(v))
    fail(name, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], found " +
                   std::to_string(v));
  return static_cast<long>(v);
}

const std::string& CheckpointData::text(const std::string& name) const {
  const auto it = texts.find(name);
  if (it == texts.end()) fail(name, arrays.count(name) ? "expected a string, found float64 values" : "missing");
  return it->second;
}

std::vector<std::vector<double>> CheckpointData::table(const std::string& name, std::optional<std::size_t> columns,
                                                       std::optional<std::size_t> rows) const {
  const long c = integer(name + "/columns", 0, 1L << 30);
  if (columns && static_cast<std::size_t>(c) != *columns)
    fail(name + "/columns", "expected " + std::to_string(*columns) + " columns, found " + std::to_string(c));
  const auto& flat = array(name + "/values");
  if (c == 0 ? !flat.empty() : flat.size() % static_cast<std::size_t>(c) != 0)
    fail(name + "/values", std::to_string(flat.size()) + " values do not make rows of " + std::to_string(c));
  const std::size_t n = c == 0 ? 0 : flat.size() / static_cast<std::size_t>(c);
  if (rows && n != *rows)
    fail(name + "/values", "expected " + std::to_string(*rows) + " rows, found " + std::to_string(n));
  std::vector<std::vector<double>> out(n);
  for (std::size_t r = 0; r < n; ++r)
    out[r].assign(flat.begin() + static_cast<long>(r * c), flat.begin() + static_cast<long>((r + 1) * c));
  return out;
}

unsigned long long fnv1a64(const unsigned char* bytes, std::size_t n, unsigned long long hash) {
  for (std::size_t i = 0; i < n; ++i) {
    hash ^= bytes[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

void sealCheckpointFile(const std::string& path) {
  File f{std::fopen(path.c_str(), "r+b")};
  if (!f.f) throw CheckpointFileError("cannot open '" + path + "' to seal it");
  std::fseek(f.f, 0, SEEK_END);
  const long end = std::ftell(f.f);
  if (end < static_cast<long>(kUserBlock)) throw CheckpointFileError("'" + path + "' is too short to seal");
  const auto size = static_cast<unsigned long long>(end);
  const unsigned long long hash = hashAfterUserBlock(f.f, size);
  char seal[kUserBlock] = {};
  std::snprintf(seal, sizeof seal, "%s %d size=%llu fnv1a64=%016llx\n", kMagic, kSealVersion, size, hash);
  std::fseek(f.f, 0, SEEK_SET);
  if (std::fwrite(seal, 1, sizeof seal, f.f) != sizeof seal || std::fflush(f.f) != 0)
    throw CheckpointFileError("cannot write the seal of '" + path + "'");
}

namespace {

/// The checkpoint as an HDF5 file image in memory (the core driver without a backing store): HDF5 never writes to
/// the disk, so a full disk or a lost permission cannot leave an HDF5 file open that its exit handlers would try to
/// flush again (a crash at exit); the bytes go to the disk through writeWhole, whose errors name errno. The image
/// begins with the superblock: the user block that holds the seal is put before it (HDF5 finds the superblock at
/// offset kUserBlock). The library's default format bounds: HDF5 1.10's file image of the checksummed V110 superblock
/// does not open; the seal's hash covers every byte instead.
std::vector<unsigned char> checkpointImage(const CheckpointData& data) {
  Handle fapl{H5Pcreate(H5P_FILE_ACCESS), H5Pclose};
  H5Pset_fapl_core(fapl.id, 1 << 20, 0);
  Handle lcpl{H5Pcreate(H5P_LINK_CREATE), H5Pclose};
  H5Pset_create_intermediate_group(lcpl.id, 1);
  Handle file{H5Fcreate("checkpoint-image", H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id), H5Fclose};
  if (file.id < 0) throw CheckpointFileError("cannot create the checkpoint image in memory");
  for (const auto& [name, values] : data.arrays) writeArray(file.id, lcpl.id, name, values);
  for (const auto& [name, text] : data.texts) writeText(file.id, lcpl.id, name, text);
  if (H5Fflush(file.id, H5F_SCOPE_GLOBAL) < 0) throw CheckpointFileError("cannot flush the checkpoint image");
  const ssize_t size = H5Fget_file_image(file.id, nullptr, 0);
  if (size <= 0) throw CheckpointFileError("cannot size the checkpoint image");
  std::vector<unsigned char> image(kUserBlock + static_cast<std::size_t>(size));
  if (H5Fget_file_image(file.id, image.data() + kUserBlock, static_cast<std::size_t>(size)) != size)
    throw CheckpointFileError("cannot copy the checkpoint image");
  return image;
}

}  // namespace

void writeCheckpointFile(const std::string& path, const CheckpointData& data) {
  std::vector<unsigned char> image = checkpointImage(data);
  const auto size = static_cast<unsigned long long>(image.size());
  const unsigned long long hash = fnv1a64(image.data() + kUserBlock, image.size() - kUserBlock, kFnvOffset);
  char seal[kUserBlock] = {};
  std::snprintf(seal, sizeof seal, "%s %d size=%llu fnv1a64=%016llx\n", kMagic, kSealVersion, size, hash);
  std::copy(seal, seal + kUserBlock, image.begin());
  // Through <path>.tmp, synced, renamed over <path>; never through a link or into a special file (io/OutputFile).
  writeWholeFile(path, std::string_view(reinterpret_cast<const char*>(image.data()), image.size()), true);
}

CheckpointData readCheckpointFile(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) fail(path, "no such file");
  ReadContext ctx;
  ctx.path = path;
  ctx.data.source = path;
  {
    File f{std::fopen(path.c_str(), "rb")};
    if (!f.f) fail(path, "cannot be opened for reading");
    std::fseek(f.f, 0, SEEK_END);
    const long end = std::ftell(f.f);
    if (end < static_cast<long>(kUserBlock))
      fail(path, "truncated or not a checkpoint: " + std::to_string(end) + " bytes, less than the " +
                     std::to_string(kUserBlock) + "-byte seal block");
    ctx.fileSize = static_cast<unsigned long long>(end);
    char block[kUserBlock + 1] = {};
    std::fseek(f.f, 0, SEEK_SET);
    if (std::fread(block, 1, kUserBlock, f.f) != kUserBlock) fail(path, "cannot read the seal block");
    if (std::strncmp(block, kMagic, std::strlen(kMagic)) != 0)
      fail(path, "not an fpdp checkpoint (expected the seal line '" + std::string(kMagic) + " ...' at its start)");
    int version = 0;
    unsigned long long size = 0, hash = 0;
    char nl = 0;
    if (std::sscanf(block, "FPDP-CHECKPOINT %d size=%llu fnv1a64=%16llx%c", &version, &size, &hash, &nl) != 4 ||
        nl != '\n')
      fail(path, "malformed seal line (expected 'FPDP-CHECKPOINT 1 size=N fnv1a64=HEX')");
    if (version != kSealVersion)
      fail(path, "seal format version " + std::to_string(version) + ", this fpdp reads version " +
                     std::to_string(kSealVersion));
    if (size != ctx.fileSize)
      fail(path, "truncated or extended: the seal records " + std::to_string(size) + " bytes, the file has " +
                     std::to_string(ctx.fileSize));
    const unsigned long long actual = hashAfterUserBlock(f.f, ctx.fileSize);
    if (actual != hash) {
      char b[160];
      std::snprintf(b, sizeof b, "corrupted: content hash %016llx, the seal records %016llx", actual, hash);
      fail(path, b);
    }
  }
  QuietHdf5 quiet;
  Handle fapl{H5Pcreate(H5P_FILE_ACCESS), H5Pclose};
  Handle file{H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.id), H5Fclose};
  if (file.id < 0) fail(path, "sealed but not readable as HDF5");
  if (H5Lvisit(file.id, H5_INDEX_NAME, H5_ITER_INC, visitLink, &ctx) < 0)
    fail(path, ctx.error.empty() ? "cannot list its objects" : ctx.error);
  return std::move(ctx.data);
}

}  // namespace fpdp::io
