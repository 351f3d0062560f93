#include "io/VtkOutput.hpp"
#include "io/OutputFile.hpp"

#include <bit>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include "io/NumberText.hpp"
#include "io/WriteFailure.hpp"

namespace fs = std::filesystem;

namespace fpdp::io {

namespace {

const char* byteOrder() { return std::endian::native == std::endian::little ? "LittleEndian" : "BigEndian"; }

std::string number(double v) { return shortestText(v); }

/// Point extent "i0 i1 j0 j1 k0 k1" of a block of cells (N cells span N+1 points; unused axes are 0 0).
std::string extentText(const std::array<long, 3>& start, const std::array<long, 3>& count, int dim) {
  std::ostringstream s;
  for (int a = 0; a < 3; ++a) {
    const long lo = a < dim ? start[a] : 0, hi = a < dim ? start[a] + count[a] : 0;
    s << (a ? " " : "") << lo << " " << hi;
  }
  return s.str();
}

/// Collects Float64 arrays for the raw appended block: each is a UInt64 byte count followed by the data, and its
/// `offset` attribute is its position after the '_' that opens the block.
class AppendedData {
public:
  std::uint64_t add(const double* data, std::size_t n) {
    const std::uint64_t offset = bytes_.size();
    const std::uint64_t count = n * sizeof(double);
    append(&count, sizeof count);
    append(data, count);
    return offset;
  }
  const std::string& bytes() const { return bytes_; }

private:
  void append(const void* p, std::size_t n) { bytes_.append(static_cast<const char*>(p), n); }
  std::string bytes_;
};

std::string dataArrayTag(const std::string& name, int components, std::uint64_t offset, const char* indent) {
  std::ostringstream s;
  s << indent << "<DataArray type=\"Float64\" Name=\"" << name << "\" NumberOfComponents=\"" << components
    << "\" format=\"appended\" offset=\"" << offset << "\"/>\n";
  return s.str();
}

/// Through a temporary name and a rename (io/OutputFile): a killed run never leaves a half-written VTK file under its
/// final name, and no link or special file in the output directory is followed.
void writeFileOrThrow(const std::string& path, const std::string& xml, const std::string& appended) {
  ReplacementFile f(path);
  f.file().write(xml);
  if (!appended.empty()) {
    f.file().write("  <AppendedData encoding=\"raw\">\n   _");
    f.file().write(appended);
    f.file().write("\n  </AppendedData>\n");
  }
  f.file().write("</VTKFile>\n");
  f.commit();
}

/// Every rank learns whether all succeeded; a failing rank throws its own message, the others a generic one.
void agree(MPI_Comm comm, bool ok, const std::string& error, const std::string& what) {
  int mine = ok ? 1 : 0, all = 0;
  FPDP_PETSC(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm));
  if (!ok) throw std::runtime_error(error);
  if (!all) throw std::runtime_error(what + " failed on another rank");
}

}  // namespace

VtkOutput::VtkOutput(const std::string& directory, const meshes::DistributedBoxMesh& mesh)
    : directory_(directory), mesh_(mesh), comm_(mesh.comm()) {
  FPDP_PETSC(MPI_Comm_rank(comm_, &rank_));
  FPDP_PETSC(MPI_Comm_size(comm_, &size_));
  for (int a = 0; a < mesh.dim(); ++a) rectilinear_ = rectilinear_ || !mesh.box().axis(a).isUniform();
  bool ok = true;
  std::string error;
  if (rank_ == 0) {
    std::error_code ec;
    fs::create_directories(directory_ + "/vtk", ec);
    if (ec) ok = false, error = "cannot create '" + directory_ + "/vtk': " + ec.message();
  }
  agree(comm_, ok, error, "creating the VTK directory");
}

std::string VtkOutput::datasetFile(long step) const {
  char b[64];
  const char* ext = size_ == 1 ? (rectilinear_ ? "vtr" : "vti") : (rectilinear_ ? "pvtr" : "pvti");
  std::snprintf(b, sizeof b, "vtk/fpdp_%08ld.%s", step, ext);
  return b;
}

void VtkOutput::writeStep(long step, double time, const std::vector<CellArray>& cells,
                          const std::vector<StepScalar>& scalars) {
  const meshes::BoxMesh& box = mesh_.box();
  const int dim = box.dim();
  const auto& owned = mesh_.owned();
  std::array<long, 3> start{}, count{}, wholeStart{0, 0, 0}, wholeCount{};
  for (int a = 0; a < 3; ++a) {
    start[a] = owned.start[a];
    count[a] = owned.count[a];
    wholeCount[a] = box.cells(a);
  }
  const std::string type = rectilinear_ ? "RectilinearGrid" : "ImageData";
  const std::string pieceExt = rectilinear_ ? "vtr" : "vti";
  char stem[48];
  std::snprintf(stem, sizeof stem, "fpdp_%08ld", step);
  const auto pieceName = [&](int r) {
    return size_ == 1 ? std::string(stem) + "." + pieceExt
                      : std::string(stem) + "_p" + std::to_string(r) + "." + pieceExt;
  };
  // Image geometry: origin = lower corner, spacing = cell widths (1 on unused axes, whose extent is 0 0).
  std::ostringstream imageGeometry;
  if (!rectilinear_) {
    imageGeometry << " Origin=\"";
    for (int a = 0; a < 3; ++a) imageGeometry << (a ? " " : "") << number(a < dim ? box.axis(a).lower() : 0.0);
    imageGeometry << "\" Spacing=\"";
    for (int a = 0; a < 3; ++a) imageGeometry << (a ? " " : "") << number(a < dim ? box.axis(a).width(0) : 1.0);
    imageGeometry << "\"";
  }
  const char* axisNames[3] = {"x_faces", "y_faces", "z_faces"};
  std::string scalarsAttr, vectorsAttr;
  for (const auto& c : cells) {
    if (c.components == 1 && scalarsAttr.empty()) scalarsAttr = c.name;
    if (c.components == 3 && vectorsAttr.empty()) vectorsAttr = c.name;
  }
  std::string cellDataOpen = "      <CellData";
  if (!scalarsAttr.empty()) cellDataOpen += " Scalars=\"" + scalarsAttr + "\"";
  if (!vectorsAttr.empty()) cellDataOpen += " Vectors=\"" + vectorsAttr + "\"";
  cellDataOpen += ">\n";

  // 1. This rank's piece (the whole mesh with one rank).
  bool ok = true;
  std::string error;
  try {
    AppendedData data;
    std::ostringstream x;
    const std::string extent = extentText(start, count, dim);
    x << "<?xml version=\"1.0\"?>\n<VTKFile type=\"" << type << "\" version=\"1.0\" byte_order=\"" << byteOrder()
      << "\" header_type=\"UInt64\">\n  <" << type << " WholeExtent=\"" << extent << "\"" << imageGeometry.str()
      << ">\n    <FieldData>\n";
    auto field = [&](const std::string& name, double v) {
      x << "      <DataArray type=\"Float64\" Name=\"" << name
        << "\" NumberOfTuples=\"1\" format=\"appended\" offset=\"" << data.add(&v, 1) << "\"/>\n";
    };
    field("TimeValue", time);  // the name ParaView's file-series readers take the time from
    for (const auto& s : scalars) field(s.name, s.value);
    x << "    </FieldData>\n    <Piece Extent=\"" << extent << "\">\n" << cellDataOpen;
    for (const auto& c : cells) {
      if (c.values.size() != static_cast<std::size_t>(owned.size()) * static_cast<std::size_t>(c.components))
        throw std::logic_error("VtkOutput: array " + c.name + " does not match the owned block");
      x << dataArrayTag(c.name, c.components, data.add(c.values.data(), c.values.size()), "        ");
    }
    x << "      </CellData>\n";
    if (rectilinear_) {
      x << "      <Coordinates>\n";
      for (int a = 0; a < 3; ++a) {
        std::vector<double> coords;
        if (a < dim)
          for (long i = start[a]; i <= start[a] + count[a]; ++i) coords.push_back(box.axis(a).face(static_cast<int>(i)));
        else
          coords.push_back(0.0);
        x << dataArrayTag(axisNames[a], 1, data.add(coords.data(), coords.size()), "        ");
      }
      x << "      </Coordinates>\n";
    }
    x << "    </Piece>\n  </" << type << ">\n";
    writeFileOrThrow(directory_ + "/vtk/" + pieceName(rank_), x.str(), data.bytes());
  } catch (const std::exception& e) {
    ok = false;
    error = e.what();
  }
  agree(comm_, ok, error, "writing a VTK piece");

  // 2. Rank 0: the parallel summary (several ranks), then the time collection.
  std::vector<long> blocks(6 * static_cast<std::size_t>(size_));
  const long mine[6] = {start[0], start[1], start[2], count[0], count[1], count[2]};
  FPDP_PETSC(MPI_Gather(mine, 6, MPI_LONG, blocks.data(), 6, MPI_LONG, 0, comm_));
  if (rank_ == 0) {
    try {
      if (size_ > 1) {
        std::ostringstream x;
        const std::string ptype = "P" + type;
        x << "<?xml version=\"1.0\"?>\n<VTKFile type=\"" << ptype << "\" version=\"1.0\" byte_order=\"" << byteOrder()
          << "\" header_type=\"UInt64\">\n  <" << ptype << " WholeExtent=\"" << extentText(wholeStart, wholeCount, dim)
          << "\" GhostLevel=\"0\"" << imageGeometry.str() << ">\n    <PCellData";
        if (!scalarsAttr.empty()) x << " Scalars=\"" << scalarsAttr << "\"";
        if (!vectorsAttr.empty()) x << " Vectors=\"" << vectorsAttr << "\"";
        x << ">\n";
        for (const auto& c : cells)
          x << "      <PDataArray type=\"Float64\" Name=\"" << c.name << "\" NumberOfComponents=\"" << c.components
            << "\"/>\n";
        x << "    </PCellData>\n";
        if (rectilinear_) {
          x << "    <PCoordinates>\n";
          for (const char* n : axisNames) x << "      <PDataArray type=\"Float64\" Name=\"" << n << "\"/>\n";
          x << "    </PCoordinates>\n";
        }
        for (int r = 0; r < size_; ++r) {
          const long* b = &blocks[6 * static_cast<std::size_t>(r)];
          x << "    <Piece Extent=\"" << extentText({b[0], b[1], b[2]}, {b[3], b[4], b[5]}, dim) << "\" Source=\""
            << pieceName(r) << "\"/>\n";
        }
        x << "  </" << ptype << ">\n";
        writeFileOrThrow(directory_ + "/" + datasetFile(step), x.str(), "");
      }
      collection_.emplace_back(time, datasetFile(step));
      std::ostringstream pvd;
      pvd << "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"" << byteOrder()
          << "\">\n  <Collection>\n";
      for (const auto& [t, file] : collection_)
        pvd << "    <DataSet timestep=\"" << number(t) << "\" group=\"\" part=\"0\" file=\"" << file << "\"/>\n";
      pvd << "  </Collection>\n</VTKFile>\n";
      writeWholeFile(directory_ + "/fpdp.pvd", pvd.str());
    } catch (const std::exception& e) {
      ok = false;
      error = e.what();
    }
  }
  int status = ok ? 1 : 0;
  FPDP_PETSC(MPI_Bcast(&status, 1, MPI_INT, 0, comm_));
  if (!status) throw std::runtime_error(rank_ == 0 ? error : "writing the VTK collection failed on rank 0");
}

}  // namespace fpdp::io
