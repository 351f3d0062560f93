// fpdp's VTK output read back with VTK's own XML readers (docs/output.md, "Opening the output in ParaView"), in C++
// and independently of the writer: every cell of p and q equal to the HDF5 data of fpdp.h5 (read with the HDF5 C
// API), the grid's extent, origin and spacing (image data) or face coordinates (graded mesh: rectilinear grid) equal
// to the case's box, log_ratio equal to the documented rule recomputed here from p and q (each density raised to its
// noise floor, 10 times its most negative value), log_ratio_resolved where both exceed their floors, and the
// FieldData `kl` equal to divergence.csv. 1 rank (.vti), 2 ranks (.pvti with one piece per rank), a graded mesh
// (.vtr). (XDMF: Debian's VTK 9.1 has no XDMF reader; fpdp.xmf is read by ParaView in io_paraview.)
#define BOOST_TEST_MODULE app_vtk_readback
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <hdf5.h>
#include <vtkCellData.h>
#include <vtkDataArray.h>
#include <vtkFieldData.h>
#include <vtkImageData.h>
#include <vtkNew.h>
#include <vtkRectilinearGrid.h>
#include <vtkXMLImageDataReader.h>
#include <vtkXMLPImageDataReader.h>
#include <vtkXMLRectilinearGridReader.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "ProcessSupport.hpp"

namespace fs = std::filesystem;
using fpdp::app::test::readText;
using fpdp::app::test::TemporaryDirectory;
using fpdp::app::test::writeText;

namespace {

const char* kCase2d =
    "[case]\nname = \"vtk-readback\"\n[mesh]\nlower = [-5.0, -4.0]\nupper = [5.0, 4.5]\ncells = [30, 20]\n"
    "[loss]\ntype = \"quadratic\"\n[data]\nrecords = [[1.0, 0.5], [0.6, 0.3]]\n[neighbour]\nindex = 1\n"
    "record = [0.2, -0.4]\n[noise]\nsigma = 0.7\n[initial]\nmean = [0.0, 0.0]\ncovariance = 0.5\n"
    "[time]\nt_end = 0.4\ndt = 0.05\n[output]\nevery = 4\nplots = false\n[accuracy]\nestimate = false\n";

/// /fields/step_NNNNNNNN/<name> of fpdp.h5, x fastest.
std::vector<double> readField(const fs::path& file, long step, const std::string& name) {
  char group[64];
  std::snprintf(group, sizeof group, "/fields/step_%08ld/%s", step, name.c_str());
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  BOOST_REQUIRE(f >= 0);
  const hid_t d = H5Dopen2(f, group, H5P_DEFAULT);
  BOOST_REQUIRE_MESSAGE(d >= 0, "no dataset " << group);
  const hid_t space = H5Dget_space(d);
  std::vector<double> v(static_cast<std::size_t>(H5Sget_simple_extent_npoints(space)));
  BOOST_REQUIRE(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0);
  H5Sclose(space);
  H5Dclose(d);
  H5Fclose(f);
  return v;
}

std::vector<double> values(vtkDataArray* a) {
  BOOST_REQUIRE(a != nullptr);
  std::vector<double> v(static_cast<std::size_t>(a->GetNumberOfTuples()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = a->GetComponent(static_cast<vtkIdType>(i), 0);
  return v;
}

/// kl of divergence.csv by step.
std::vector<std::pair<long, double>> klByStep(const fs::path& csv) {
  std::istringstream in(readText(csv));
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::istringstream h(line); std::getline(h, line, ',');) header.push_back(line);
  const auto klColumn = std::find(header.begin(), header.end(), "kl") - header.begin();
  std::vector<std::pair<long, double>> out;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    for (std::istringstream c(line); std::getline(c, line, ',');) cells.push_back(line);
    out.push_back({std::stol(cells.at(0)), std::stod(cells.at(static_cast<std::size_t>(klColumn)))});
  }
  return out;
}

/// The cell data of one output step against fpdp.h5 and the documented log_ratio rule.
void checkCellData(vtkCellData* cells, vtkFieldData* field, const fs::path& out, long step, double kl) {
  const auto p = readField(out / "fpdp.h5", step, "p"), q = readField(out / "fpdp.h5", step, "q");
  BOOST_TEST(values(cells->GetArray("p")) == p, "p differs from fpdp.h5 at step " << step);
  BOOST_TEST(values(cells->GetArray("q")) == q, "q differs from fpdp.h5 at step " << step);
  const double floorP = 10 * std::max(-*std::min_element(p.begin(), p.end()), 0.0);
  const double floorQ = 10 * std::max(-*std::min_element(q.begin(), q.end()), 0.0);
  const auto logRatio = values(cells->GetArray("log_ratio")), resolved = values(cells->GetArray("log_ratio_resolved"));
  BOOST_REQUIRE_EQUAL(logRatio.size(), p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double a = std::max(p[i], floorP), b = std::max(q[i], floorQ);
    const double expected = a > 0 && b > 0 ? std::log(a) - std::log(b) : NAN;
    const bool same = std::isnan(expected) ? std::isnan(logRatio[i]) : std::fabs(logRatio[i] - expected) <= 1e-12;
    BOOST_TEST(same, "log_ratio of cell " << i << " at step " << step << ": " << logRatio[i] << ", expected " << expected);
    BOOST_TEST(resolved[i] == (p[i] > floorP && q[i] > floorQ ? 1.0 : 0.0));
  }
  vtkDataArray* klArray = vtkDataArray::SafeDownCast(field->GetAbstractArray("kl"));
  BOOST_REQUIRE(klArray != nullptr);
  BOOST_TEST(klArray->GetComponent(0, 0) == kl, "FieldData kl at step " << step);
}

}  // namespace

BOOST_AUTO_TEST_CASE(image_data_on_one_and_two_ranks) {
  TemporaryDirectory tmp("fpdp-vtk");
  writeText(tmp.path() / "case.toml", kCase2d);
  for (int ranks : {1, 2}) {
    const fs::path out = tmp.path() / ("out" + std::to_string(ranks));
    const std::string launcher =
        ranks == 1 ? "" : std::string(FPDP_MPIEXEC) + " --allow-run-as-root --oversubscribe -n 2 ";
    const auto r = fpdp::app::test::runCaseFile(tmp.path() / "case.toml", out, launcher);
    BOOST_REQUIRE_MESSAGE(r.status == 0, r.log);
    const auto kl = klByStep(out / "divergence.csv");
    BOOST_REQUIRE_EQUAL(kl.size(), 3u);  // steps 0, 4, 8
    for (const auto& [step, klValue] : kl) {
      char name[64];
      std::snprintf(name, sizeof name, "vtk/fpdp_%08ld.%s", step, ranks == 1 ? "vti" : "pvti");
      BOOST_REQUIRE_MESSAGE(fs::exists(out / name), name);
      vtkImageData* image = nullptr;
      vtkNew<vtkXMLImageDataReader> serial;
      vtkNew<vtkXMLPImageDataReader> parallel;
      if (ranks == 1) {
        serial->SetFileName((out / name).c_str());
        serial->Update();
        image = serial->GetOutput();
      } else {
        parallel->SetFileName((out / name).c_str());
        parallel->Update();
        image = parallel->GetOutput();
      }
      BOOST_REQUIRE(image != nullptr);
      int dims[3];
      image->GetDimensions(dims);  // points: cells + 1 per used axis
      BOOST_TEST(dims[0] == 31);
      BOOST_TEST(dims[1] == 21);
      BOOST_TEST(dims[2] == 1);
      double origin[3], spacing[3];
      image->GetOrigin(origin);
      image->GetSpacing(spacing);
      BOOST_TEST(origin[0] == -5.0);
      BOOST_TEST(origin[1] == -4.0);
      BOOST_TEST(std::fabs(spacing[0] - 10.0 / 30) <= 1e-15);
      BOOST_TEST(std::fabs(spacing[1] - 8.5 / 20) <= 1e-15);
      BOOST_TEST(image->GetNumberOfCells() == 600);
      checkCellData(image->GetCellData(), image->GetFieldData(), out, step, klValue);
    }
  }
}

BOOST_AUTO_TEST_CASE(rectilinear_grid_of_a_graded_mesh) {
  TemporaryDirectory tmp("fpdp-vtk");
  std::string text = kCase2d;
  text.insert(text.find("[loss]"), "grading = [1.1, 1.2]\n");
  writeText(tmp.path() / "case.toml", text);
  const fs::path out = tmp.path() / "out";
  const auto r = fpdp::app::test::runCaseFile(tmp.path() / "case.toml", out);
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.log);
  const auto kl = klByStep(out / "divergence.csv");
  for (const auto& [step, klValue] : kl) {
    char name[64];
    std::snprintf(name, sizeof name, "vtk/fpdp_%08ld.vtr", step);
    BOOST_REQUIRE_MESSAGE(fs::exists(out / name), name);
    vtkNew<vtkXMLRectilinearGridReader> reader;
    reader->SetFileName((out / name).c_str());
    reader->Update();
    vtkRectilinearGrid* grid = reader->GetOutput();
    int dims[3];
    grid->GetDimensions(dims);
    BOOST_TEST(dims[0] == 31);
    BOOST_TEST(dims[1] == 21);
    // The faces: the ends of the box exactly, strictly increasing, graded (the widths grow or shrink geometrically).
    for (int axis = 0; axis < 2; ++axis) {
      const auto faces = values(axis == 0 ? grid->GetXCoordinates() : grid->GetYCoordinates());
      BOOST_TEST(faces.front() == (axis == 0 ? -5.0 : -4.0));
      BOOST_TEST(faces.back() == (axis == 0 ? 5.0 : 4.5));
      bool increasing = true, uniform = true;
      for (std::size_t i = 1; i < faces.size(); ++i) increasing = increasing && faces[i] > faces[i - 1];
      for (std::size_t i = 2; i < faces.size(); ++i)
        uniform = uniform && std::fabs((faces[i] - faces[i - 1]) - (faces[1] - faces[0])) <= 1e-12;
      BOOST_TEST(increasing);
      BOOST_TEST(!uniform, "axis " << axis << " is graded");
    }
    checkCellData(grid->GetCellData(), grid->GetFieldData(), out, step, klValue);
  }
}
