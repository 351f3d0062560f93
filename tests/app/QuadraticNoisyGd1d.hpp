#pragma once
// The small 1-D noisy-GD case of the app tests that build case files in memory: the quadratic loss (lambda = 1),
// D' replacing record 0 by x' = 0, sigma = 1, theta_0 ~ N(0, 0.5), eta = 0.1, on [-halfWidth, halfWidth].
#include <string>

namespace fpdp::app::test {

/// `noisyGdExtra` is appended to [noisy_gd] (e.g. "clip_norm = 2.0\n"), `tables` after it (further tables).
inline std::string quadraticNoisyGd1d(const std::string& name, const std::string& halfWidth, int cells,
                                      const std::string& records, long steps, const std::string& noisyGdExtra = "",
                                      const std::string& tables = "") {
  return "[case]\nname = \"" + name + "\"\ndynamics = \"noisy_gd\"\n[mesh]\nlower = [-" + halfWidth +
         "]\nupper = [" + halfWidth + "]\ncells = [" + std::to_string(cells) +
         "]\n[loss]\ntype = \"quadratic\"\nlambda = 1.0\n[data]\nrecords = " + records +
         "\n[neighbour]\nindex = 0\nrecord = [0.0]\n[noise]\nsigma = 1.0\n[initial]\nmean = [0.0]\ncovariance = "
         "0.5\n[noisy_gd]\neta = 0.1\nsteps = " +
         std::to_string(steps) + "\n" + noisyGdExtra + tables;
}

}  // namespace fpdp::app::test
