#include "app/plots/RunFiles.hpp"

#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>

#include <toml++/toml.h>

#include "app/case/CaseReader.hpp"
#include "io/CsvReader.hpp"
#include "io/Hdf5Reading.hpp"
#include "models/InputFile.hpp"

namespace fpdp::app::plots {
namespace fs = std::filesystem;

namespace {
// What fpdp plot reads of a run's fpdp.h5 at most: no run writes fields at more output steps (each is a group copied
// into the file), and no axis has more faces (16384^2 cells is the largest mesh the memory check lets through on a
// large machine). 200,000 empty groups under /fields took the plots past 120 s when every name was listed.
constexpr hsize_t kMaxFieldSteps = 1000000;
constexpr hsize_t kMaxFacesPerAxis = hsize_t{1} << 24;
}  // namespace

const std::vector<double>& Table::operator[](const std::string& name) const {
  const auto it = columns.find(name);
  if (it == columns.end()) throw std::runtime_error(file + " has no column " + name);
  return it->second;
}

Table readTable(const std::string& dir, const std::string& name, bool required) {
  const fs::path path = fs::path(dir) / name;
  Table t;
  t.file = name;
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (required) throw std::runtime_error(path.string() + " does not exist (not a run's output directory?)");
    return t;
  }
  const io::CsvText text = io::readCsv(path.string());
  t.header = text.columns;
  for (const auto& column : text.columns) t.columns[column].reserve(text.rows.size());
  for (const auto& row : text.rows)
    for (std::size_t c = 0; c < row.size(); ++c) {
      double v = std::numeric_limits<double>::quiet_NaN();
      if (!io::parseCsvNumber(row[c], v)) v = std::numeric_limits<double>::quiet_NaN();
      t.columns[text.columns[c]].push_back(v);
    }
  if (required && t.rows() == 0) throw std::runtime_error(path.string() + " has no rows");
  return t;
}

namespace {

/// What the figures take from the run's resolved case (parameters.toml, read as every case is: a regular file of
/// bounded size, within the reader's limits on dotted keys and nesting): the dynamics (noisy GD plots against steps,
/// Langevin diffusion against time) and privacy.delta. A missing file reads as Langevin with no delta; one that cannot
/// be read (a FIFO, a device, too large, not TOML) is an error.
void readCaseFacts(const std::string& dir, RunFiles& f) {
  const fs::path file = fs::path(dir) / "parameters.toml";
  std::error_code ec;
  f.noisyGd = false;
  if (!fs::exists(fs::symlink_status(file, ec))) return;
  try {
    const toml::table resolved = parseCaseToml(models::readInputFile(file, models::kMaxCaseFileBytes), file);
    f.noisyGd = resolved["case"]["dynamics"].value_or(std::string()) == "noisy_gd";
    f.privacyDelta = resolved["privacy"]["delta"].value_or(0.0);
  } catch (const models::InputFileError& e) {
    throw std::runtime_error("cannot read '" + file.string() + "': " + e.what());
  }
}

}  // namespace

RunFiles readRunFiles(const std::string& dir) {
  RunFiles f;
  f.dir = dir;
  f.divergence = readTable(dir, "divergence.csv", true);
  for (const auto& name : f.divergence.header)
    if (name.rfind("renyi_", 0) == 0) f.orders.push_back(name.substr(6));
  f.exact = readTable(dir, "exact.csv", false);
  f.accuracy = readTable(dir, "accuracy.csv", false);
  f.bounds = readTable(dir, "bounds.csv", false);
  f.epsilon = readTable(dir, "epsilon.csv", false);
  f.tracing = readTable(dir, "tracing.csv", false);
  const fs::path applicability = fs::path(dir) / "bound_applicability.csv";
  std::error_code ec;
  if (fs::exists(applicability, ec)) {
    const io::CsvText text = io::readCsv(applicability.string());
    std::size_t item = text.columns.size(), name = text.columns.size();
    for (std::size_t c = 0; c < text.columns.size(); ++c) {
      if (text.columns[c] == "item") item = c;
      if (text.columns[c] == "name") name = c;
    }
    if (item < text.columns.size() && name < text.columns.size())
      for (const auto& row : text.rows) {
        double v = 0;
        if (io::parseCsvNumber(row[item], v)) f.boundNames[static_cast<int>(v)] = row[name];
      }
  }
  readCaseFacts(dir, f);
  return f;
}

namespace {

using Handle = io::Hdf5Handle;

template <class T>
T readAttribute(hid_t loc, const char* name, hid_t type) {
  Handle at{H5Aopen(loc, name, H5P_DEFAULT), H5Aclose};
  T v{};
  if (at.id < 0 || H5Aread(at.id, type, &v) < 0) throw std::runtime_error(std::string("fpdp.h5: no attribute ") + name);
  return v;
}

}  // namespace

Fields readFields(const std::string& dir, std::size_t count) {
  Fields out;
  const fs::path path = fs::path(dir) / "fpdp.h5";
  std::error_code ec;
  if (!fs::exists(path, ec)) return out;
  const io::QuietHdf5 quiet;  // failures are reported as one line, not as HDF5's error stack
  Handle file{io::openHdf5ForReading(path.string()), H5Fclose};
  if (H5Lexists(file.id, "fields", H5P_DEFAULT) <= 0) return out;
  Handle group{H5Gopen2(file.id, "fields", H5P_DEFAULT), H5Gclose};
  H5G_info_t info{};
  if (group.id < 0 || H5Gget_info(group.id, &info) < 0) throw std::runtime_error("fpdp.h5: cannot read /fields");
  if (info.nlinks > kMaxFieldSteps)
    throw std::runtime_error("fpdp.h5: /fields holds " + std::to_string(info.nlinks) + " entries; allowed: at most " +
                             std::to_string(kMaxFieldSteps) + " output steps");
  if (info.nlinks == 0) return out;
  const std::size_t steps = static_cast<std::size_t>(info.nlinks);
  out.dim = static_cast<int>(readAttribute<long long>(file.id, "dim", H5T_NATIVE_LLONG));
  // Beyond three axes there is no density figure: the run writes the 2-D and 3-D marginals for ParaView instead
  // (docs/output.md); the series figures are drawn as for d <= 3.
  if (out.dim > 3 && out.dim <= 6) return Fields{};
  if (out.dim < 1 || out.dim > 6) throw std::runtime_error("fpdp.h5: dimension " + std::to_string(out.dim));
  for (int a = 0; a < out.dim; ++a) {
    out.faces.push_back(io::readDoubleDataset(file.id, std::string("mesh/") + "xyz"[a] + "_faces", "fpdp.h5",
                                              std::nullopt, kMaxFacesPerAxis));
    if (out.faces.back().size() < 2) throw std::runtime_error("fpdp.h5: an axis has fewer than 2 cell faces");
  }
  // The first, the last and evenly spread steps between them (names sort by step: step_%08ld); only their names are
  // read, not the whole listing.
  std::vector<std::size_t> picks;
  for (std::size_t i = 0; i < std::min(count, steps); ++i) {
    const std::size_t k = steps <= count ? i
                          : static_cast<std::size_t>(std::lround(static_cast<double>(i) * (steps - 1) /
                                                                 static_cast<double>(count - 1)));
    if (picks.empty() || picks.back() != k) picks.push_back(k);
  }
  std::map<std::size_t, std::string> names;
  for (const std::size_t k : picks) {
    const auto i = static_cast<hsize_t>(k);
    const ssize_t len = H5Lget_name_by_idx(group.id, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len <= 0 || len > 256) throw std::runtime_error("fpdp.h5: cannot read the names under /fields");
    std::string name(static_cast<std::size_t>(len) + 1, '\0');
    H5Lget_name_by_idx(group.id, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(len));
    names[k] = name;
  }
  // 3-D: only the middle cell layer in z, the slice the figure shows
  std::size_t cells = 1;
  for (int a = 0; a < std::min(out.dim, 2); ++a) cells *= out.faces[static_cast<std::size_t>(a)].size() - 1;
  std::optional<hsize_t> layer;
  if (out.dim == 3) {
    out.zLayer = (out.faces[2].size() - 1) / 2;
    layer = out.zLayer;
  }
  for (const std::size_t k : picks) {
    Handle g{H5Gopen2(group.id, names[k].c_str(), H5P_DEFAULT), H5Gclose};
    if (g.id < 0) throw std::runtime_error("fpdp.h5: cannot open /fields/" + names[k]);
    FieldFrame frame;
    frame.step = static_cast<long>(readAttribute<long long>(g.id, "step", H5T_NATIVE_LLONG));
    frame.time = readAttribute<double>(g.id, "time", H5T_NATIVE_DOUBLE);
    frame.p = io::readDoubleDataset(g.id, "p", "fpdp.h5: /fields/" + names[k], layer, cells);
    frame.q = io::readDoubleDataset(g.id, "q", "fpdp.h5: /fields/" + names[k], layer, cells);
    if (frame.p.size() != cells || frame.q.size() != cells)
      throw std::runtime_error("fpdp.h5: /fields/" + names[k] + " does not match the mesh");
    out.frames.push_back(std::move(frame));
  }
  return out;
}

}  // namespace fpdp::app::plots
