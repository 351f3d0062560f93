// Case reader, [mesh] and the constraint set of [noisy_gd]: the box, its cells and grading; C inside the box.
#include "app/case/CaseParser.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <exception>
#include <limits>
#include <string>

#include "meshes/BoxMesh.hpp"
#include "models/ConstraintSet.hpp"

namespace fpdp::app::detail {

void CaseParser::readMesh(Case& c) {
  const Parameter& lowerParameter = parameter("mesh", "lower");
  const toml::node& lowerNode = required(lowerParameter);
  const toml::array& lowerArray = array(lowerNode, "mesh.lower", lowerParameter.allowed);
  if (lowerArray.empty() || lowerArray.size() > kMaxDimension) {
    fail("mesh.lower", lowerNode,
         "has " + entries(lowerArray.size()) +
             "; the dimension d must be 1 to 6 (up to three axes a PETSc DMDA; four to six noisy GD on whole fields, "
             "docs/scaling.md §9)",
         lowerParameter.allowed);
  }
  dim_ = lowerArray.size();
  dimensionReason_ = "d = " + std::to_string(dim_) + ", the length of mesh.lower";
  c.mesh.dim = static_cast<int>(dim_);
  const models::Vector lower = pointOfDimension(lowerNode, "mesh.lower", lowerParameter.allowed);

  const Parameter& upperParameter = parameter("mesh", "upper");
  const toml::node& upperNode = required(upperParameter);
  const models::Vector upper = pointOfDimension(upperNode, "mesh.upper", upperParameter.allowed);
  for (std::size_t i = 0; i < dim_; ++i) {
    const auto k = static_cast<Eigen::Index>(i);
    if (!(upper[k] > lower[k])) {
      fail(indexed("mesh.upper", i), *upperNode.as_array()->get(i),
           "must be greater than mesh.lower[" + std::to_string(i) + "] = " + floatLiteral(lower[k]),
           upperParameter.allowed);
    }
    if (!std::isfinite(upper[k] - lower[k])) {  // e.g. [-1e308, 1e308]: every cell width would be inf
      fail(indexed("mesh.upper", i), *upperNode.as_array()->get(i),
           "the width mesh.upper[" + std::to_string(i) + "] - mesh.lower[" + std::to_string(i) +
               "] overflows a double",
           upperParameter.allowed);
    }
    c.mesh.lower[i] = lower[k];
    c.mesh.upper[i] = upper[k];
  }

  const Parameter& cellsParameter = parameter("mesh", "cells");
  const toml::node& cellsNode = required(cellsParameter);
  const toml::array& cells = array(cellsNode, "mesh.cells", cellsParameter.allowed);
  if (cells.size() != dim_) {
    fail("mesh.cells", cellsNode,
         "has " + entries(cells.size()) + ", expected " + std::to_string(dim_) + " (" + dimensionReason_ + ")",
         cellsParameter.allowed);
  }
  std::int64_t total = 1;  // at most 65536^3 = 2^48 after the range checks: no overflow
  for (std::size_t i = 0; i < dim_; ++i) {
    const std::string path = indexed("mesh.cells", i);
    const std::int64_t n = integerOf(cellsParameter, *cells.get(i), path);
    c.mesh.cells[i] = static_cast<int>(n);
    total *= n;
  }
  if (total > kMaxTotalCells) {
    fail("mesh.cells", cellsNode, "gives " + std::to_string(total) + " cells in total, more than 268435456",
         cellsParameter.allowed);
  }
  const Parameter& grading = parameter("mesh", "grading");
  if (const toml::node* node = given("mesh", "grading")) {
    pointOfDimension(*node, "mesh.grading", grading.allowed);  // d finite numbers
    for (std::size_t i = 0; i < dim_; ++i)
      c.mesh.grading[i] = numberOf(grading, *node->as_array()->get(i), indexed("mesh.grading", i));
  }
  checkCellWidths(c);
}

// The cells the run builds (meshes::Axis::graded) must have distinct faces and widths that are normal doubles
// and resolvable against the coordinates: e.g. 400 cells on [0, 5e-324] or 65536 cells graded by 1.2 are not.
void CaseParser::checkCellWidths(const Case& c) {
  for (std::size_t i = 0; i < dim_; ++i) {
    const bool graded = c.mesh.grading[i] != 1.0;
    const std::string path = graded ? indexed("mesh.grading", i) : indexed("mesh.cells", i);
    const toml::node& node = graded ? *given("mesh", "grading")->as_array()->get(i)
                                    : *given("mesh", "cells")->as_array()->get(i);
    const std::string allowed = graded ? std::string(parameter("mesh", "grading").allowed)
                                       : std::string(parameter("mesh", "cells").allowed);
    const std::string axis = " on axis " + std::to_string(i) + " ([" + floatLiteral(c.mesh.lower[i]) + ", " +
                             floatLiteral(c.mesh.upper[i]) + "], " + std::to_string(c.mesh.cells[i]) + " cells";
    double smallest = 0.0, largest = 0.0;
    try {
      const auto ax = meshes::Axis::graded(c.mesh.lower[i], c.mesh.upper[i], c.mesh.cells[i], c.mesh.grading[i]);
      smallest = std::numeric_limits<double>::infinity();
      for (int k = 0; k < ax.cells(); ++k) {
        smallest = std::min(smallest, ax.width(k));
        largest = std::max(largest, ax.width(k));
      }
    } catch (const std::exception&) {
      fail(path, node, "gives cell faces that are not distinct increasing doubles" + axis + ")", allowed);
    }
    const double magnitude = std::max(std::abs(c.mesh.lower[i]), std::abs(c.mesh.upper[i]));
    if (!(smallest >= DBL_MIN) || !std::isfinite(largest) || smallest < kMinRelativeCellWidth * magnitude)
      fail(path, node,
           "gives cells of width " + shortestDouble(smallest) + axis +
               "): cell widths must be normal doubles of at least 1e-10 of the largest |coordinate|",
           allowed);
    minWidth_[i] = smallest;
  }
}

// Pi_C maps whole cells only if C's faces are mesh faces (docs/noisy-gd.md §6): a box's faces, a 1-D ball's ends.
void CaseParser::requireMeshFace(const Case& c, std::size_t axis, double x, const std::string& keyPath,
                                 const toml::node& node, const std::string& what, std::string_view allowed) const {
  const auto ax = meshes::Axis::graded(c.mesh.lower[axis], c.mesh.upper[axis], c.mesh.cells[axis],
                                       c.mesh.grading[axis]);
  if (ax.faceIndexAt(x) >= 0) return;
  const auto [below, above] = ax.nearestFaces(x);
  fail(keyPath, node,
       what + " " + floatLiteral(x) + " is not a face of the mesh on axis " + std::to_string(axis) +
           " (the faces of C must be mesh cell faces); the nearest faces are " + floatLiteral(below) + " and " +
           floatLiteral(above),
       allowed);
}

// [noisy_gd] constraint: none, a box or a ball inside the mesh box; only the keys of the chosen kind may appear.
void CaseParser::readConstraint(Case& c) const {
  c.noisyGd.constraint = choiceAt("noisy_gd", "constraint");
  const std::string& k = c.noisyGd.constraint;
  const char* keysOf[][2] = {{"constraint_lower", "box"}, {"constraint_upper", "box"},
                             {"constraint_centre", "ball"}, {"constraint_radius", "ball"}};
  for (const auto& [key, owner] : keysOf) {
    const toml::node* node = given("noisy_gd", key);
    const std::string path = std::string("noisy_gd.") + key;
    if (node && k != owner) {
      fail(path, *node, "applies only to noisy_gd.constraint = \"" + std::string(owner) + "\", but it is \"" + k + "\"",
           "no " + path + " with noisy_gd.constraint = \"" + k + "\"");
    }
    if (!node && k == owner) {
      const Parameter& missing = parameter("noisy_gd", key);
      failMissing(path, missing.type, missing.allowed, path + " (needed by noisy_gd.constraint = \"" + k + "\")");
    }
  }
  const double tol = 1e-12;
  if (k == "box") {
    const Parameter& lp = parameter("noisy_gd", "constraint_lower");
    const Parameter& up = parameter("noisy_gd", "constraint_upper");
    const toml::node& ln = *given("noisy_gd", "constraint_lower");
    const toml::node& un = *given("noisy_gd", "constraint_upper");
    const models::Vector lo = pointOfDimension(ln, "noisy_gd.constraint_lower", lp.allowed);
    const models::Vector hi = pointOfDimension(un, "noisy_gd.constraint_upper", up.allowed);
    for (std::size_t i = 0; i < dim_; ++i) {
      const auto j = static_cast<Eigen::Index>(i);
      const double width = c.mesh.upper[i] - c.mesh.lower[i];
      if (lo[j] < c.mesh.lower[i] - tol * width)
        fail(indexed("noisy_gd.constraint_lower", i), *ln.as_array()->get(i),
             "lies below mesh.lower[" + std::to_string(i) + "] = " + floatLiteral(c.mesh.lower[i]), lp.allowed);
      if (hi[j] > c.mesh.upper[i] + tol * width)
        fail(indexed("noisy_gd.constraint_upper", i), *un.as_array()->get(i),
             "lies above mesh.upper[" + std::to_string(i) + "] = " + floatLiteral(c.mesh.upper[i]), up.allowed);
      if (!(hi[j] > lo[j]))
        fail(indexed("noisy_gd.constraint_upper", i), *un.as_array()->get(i),
             "must be greater than noisy_gd.constraint_lower[" + std::to_string(i) + "] = " + floatLiteral(lo[j]),
             up.allowed);
    }
    for (std::size_t i = 0; i < dim_; ++i) {
      const auto j = static_cast<Eigen::Index>(i);
      requireMeshFace(c, i, lo[j], indexed("noisy_gd.constraint_lower", i), *ln.as_array()->get(i), "the lower face",
                      lp.allowed);
      requireMeshFace(c, i, hi[j], indexed("noisy_gd.constraint_upper", i), *un.as_array()->get(i), "the upper face",
                      up.allowed);
    }
    c.noisyGd.constraintSet = models::ConstraintSet::box(lo, hi);
  } else if (k == "ball") {
    const Parameter& cp = parameter("noisy_gd", "constraint_centre");
    const Parameter& rp = parameter("noisy_gd", "constraint_radius");
    const toml::node& cn = *given("noisy_gd", "constraint_centre");
    const toml::node& rn = *given("noisy_gd", "constraint_radius");
    const models::Vector centre = pointOfDimension(cn, "noisy_gd.constraint_centre", cp.allowed);
    const double radius = numberOf(rp, rn);
    for (std::size_t i = 0; i < dim_; ++i) {
      const auto j = static_cast<Eigen::Index>(i);
      const double width = c.mesh.upper[i] - c.mesh.lower[i];
      if (centre[j] - radius < c.mesh.lower[i] - tol * width || centre[j] + radius > c.mesh.upper[i] + tol * width)
        fail("noisy_gd.constraint_radius", rn,
             "makes the ball leave the mesh box on axis " + std::to_string(i) + " (centre " +
                 floatLiteral(centre[j]) + ", mesh [" + floatLiteral(c.mesh.lower[i]) + ", " +
                 floatLiteral(c.mesh.upper[i]) + "])",
             rp.allowed);
    }
    if (dim_ == 1) {  // a 1-D ball is the box [centre - radius, centre + radius]
      requireMeshFace(c, 0, centre[0] - radius, "noisy_gd.constraint_radius", rn, "a 1-D ball's end centre - radius =",
                      rp.allowed);
      requireMeshFace(c, 0, centre[0] + radius, "noisy_gd.constraint_radius", rn, "a 1-D ball's end centre + radius =",
                      rp.allowed);
    }
    c.noisyGd.constraintSet = models::ConstraintSet::ball(centre, radius);
  }
}

}  // namespace fpdp::app::detail
