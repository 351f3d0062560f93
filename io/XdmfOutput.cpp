#include "io/XdmfOutput.hpp"
#include "io/OutputFile.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "io/Hdf5Output.hpp"
#include "io/NumberText.hpp"
#include "io/WriteFailure.hpp"

namespace fpdp::io {

namespace {

std::string number(double v) { return shortestText(v); }

std::string inlineItem(const std::string& dims, const std::string& values, const char* indent) {
  return std::string(indent) + "<DataItem Dimensions=\"" + dims +
         "\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">" + values + "</DataItem>\n";
}

}  // namespace

void writeXdmf(const std::string& path, const std::string& h5FileName, const meshes::BoxMesh& box,
               const std::vector<std::string>& fieldNames, const std::vector<XdmfStep>& steps) {
  const int dim = box.dim();
  bool uniform = true;
  for (int a = 0; a < dim; ++a) uniform = uniform && box.axis(a).isUniform();
  // The extent of the slab axes (>= dim): one unit, so that a cell's volume in ParaView is its d-dimensional measure
  // and IntegrateVariables gives the masses of p and q (1), not a multiple of them (a 1-D run is a strip, a 2-D run
  // a plate of unit thickness).
  const double thickness = 1.0;
  // XDMF lists axes slowest first: z, y, x.
  std::string cellDims, pointDims;
  for (int a = 2; a >= 0; --a) {
    const int n = a < dim ? box.cells(a) : 1;
    cellDims += std::to_string(n) + (a ? " " : "");
    pointDims += std::to_string(n + 1) + (a ? " " : "");
  }
  std::ostringstream geometry;
  if (uniform) {
    std::string origin, spacing;
    for (int a = 2; a >= 0; --a) {
      origin += number(a < dim ? box.axis(a).lower() : 0.0) + (a ? " " : "");
      spacing += number(a < dim ? box.axis(a).width(0) : thickness) + (a ? " " : "");
    }
    geometry << "      <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"" << pointDims << "\"/>\n"
             << "      <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n"
             << inlineItem("3", origin, "        ") << inlineItem("3", spacing, "        ")
             << "      </Geometry>\n";
  } else {
    geometry << "      <Topology TopologyType=\"3DRectMesh\" Dimensions=\"" << pointDims << "\"/>\n"
             << "      <Geometry GeometryType=\"VXVYVZ\">\n";
    const char* axisNames[3] = {"x", "y", "z"};
    for (int a = 0; a < 3; ++a) {
      if (a < dim)
        geometry << "        <DataItem Dimensions=\"" << box.cells(a) + 1
                 << "\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">" << h5FileName << ":/mesh/"
                 << axisNames[a] << "_faces</DataItem>\n";
      else
        geometry << inlineItem("2", "0 " + number(thickness), "        ");
    }
    geometry << "      </Geometry>\n";
  }

  std::ostringstream x;
  x << "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n<Xdmf Version=\"3.0\">\n  <Domain>\n"
    << "    <Grid Name=\"fpdp\" GridType=\"Collection\" CollectionType=\"Temporal\">\n";
  for (const auto& s : steps) {
    const std::string group = Hdf5Output::stepGroup(s.step);
    x << "    <Grid Name=\"" << group.substr(group.rfind('/') + 1) << "\" GridType=\"Uniform\">\n"
      << "      <Time Value=\"" << number(s.time) << "\"/>\n"
      << geometry.str();
    for (const auto& name : fieldNames)
      x << "      <Attribute Name=\"" << name << "\" AttributeType=\"Scalar\" Center=\"Cell\">\n"
        << "        <DataItem Dimensions=\"" << cellDims << "\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">"
        << h5FileName << ":" << group << "/" << name << "</DataItem>\n      </Attribute>\n";
    for (const auto& sc : s.scalars)
      x << "      <Attribute Name=\"" << sc.name << "\" AttributeType=\"Scalar\" Center=\"Grid\">\n"
        << inlineItem("1", number(sc.value), "        ") << "      </Attribute>\n";
    x << "    </Grid>\n";
  }
  x << "    </Grid>\n  </Domain>\n</Xdmf>\n";

  writeWholeFile(path, x.str());  // through a temporary name, never through a link (io/OutputFile)
}

}  // namespace fpdp::io
