#pragma once
// The names of a mesh's axes in fpdp's files (fpdp.h5, sample.h5, sample_moments.csv): x, y, z on at most three axes
// (the DMDA meshes), theta_0 .. theta_(d-1) beyond (the whole-field meshes of 4 to 6 axes), and y_0 .. y_(d-1) for
// the state y = L^-1 theta of a whole-field run under a full Sigma = L D L^T (models::DecorrelatedCoordinates). One
// place for all writers and readers.
#include <string>

namespace fpdp::io {

inline std::string axisName(int dim, int a, bool decorrelatedState = false) {
  static const char* const xyz[3] = {"x", "y", "z"};
  if (dim > 3 && decorrelatedState) return "y_" + std::to_string(a);
  return dim <= 3 ? std::string(xyz[a]) : "theta_" + std::to_string(a);
}

/// The name of the (a, b) entry of a covariance: "xy" on at most three axes, "theta_0_theta_1" beyond.
inline std::string axisPairName(int dim, int a, int b) {
  return dim <= 3 ? axisName(dim, a) + axisName(dim, b) : axisName(dim, a) + "_" + axisName(dim, b);
}

}  // namespace fpdp::io
