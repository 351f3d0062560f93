#pragma once
// The ParaView-ready output of a run (docs/output.md, "Opening the output in ParaView"):
//   - VTK XML (io/VtkOutput): at every output step the cell fields
//       p, q                      the densities (cell averages)
//       log_ratio                 log(p/q) (the privacy-loss random variable's value, MATH.md §3); NaN where p <= 0
//                                 or q <= 0 (undefined there; ParaView draws NaN in its NaN colour and leaves it out
//                                 of data ranges)
//       renyi_integrand_<label>   p^alpha q^(1-alpha) for the first order of divergence.orders (MATH.md §3: its
//                                 integral is E_alpha); alpha > 1, so its limits are used where a density is not
//                                 positive: 0 where p <= 0, +inf where p > 0 and q <= 0
//       drift_p, drift_q          -grad L_D and -grad L_D' at the cell centres (3 components; 0 beyond d): the
//                                 drift of the Langevin SDEs (MATH.md §2.3), for noisy GD the gradient-map drift
//                                 (the step is theta - eta grad L_D, MATH.md §2.1; clipped gradients when clipping)
//     and the row of divergence.csv as FieldData;
//   - fpdp.xmf (io/XdmfOutput), written at the end, opening p and q of fpdp.h5 with the same per-step scalars.
#include <petscvec.h>

#include <memory>
#include <string>
#include <vector>

#include "io/VtkOutput.hpp"
#include "io/XdmfOutput.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "solver/noisygd/NoisyGradientDescent.hpp"

namespace fpdp::app {

class ParaViewOutput {
public:
  /// `vtk`: whether the VTK files are written (the XDMF file always is). Collective.
  ParaViewOutput(const std::string& directory, const meshes::DistributedBoxMesh& mesh,
                 const solver::GradientField& gradientD, const solver::GradientField& gradientDPrime,
                 double firstOrder, const std::string& firstOrderLabel, bool vtk);

  /// One output step: p and q (vectors on mesh.scalarDM()) and the divergence.csv row with its column names.
  /// Collective.
  void writeStep(long step, double time, Vec p, Vec q, const std::vector<std::string>& columns,
                 const std::vector<double>& row);

  /// Checkpoint/restart: the steps written before the checkpoint (their divergence.csv rows), so that fpdp.xmf and
  /// fpdp.pvd list them.
  void restoreSteps(const std::vector<std::string>& columns, const std::vector<std::vector<double>>& rows);

  /// fpdp.xmf over every step written; call after fpdp.h5 is complete. Collective (rank 0 writes).
  void writeXdmf();

private:
  std::string directory_;
  const meshes::DistributedBoxMesh& mesh_;
  double alpha_;
  std::string integrandName_;
  std::vector<double> driftP_, driftQ_;  // owned cells, 3 interlaced components
  std::unique_ptr<io::VtkOutput> vtk_;
  std::vector<io::XdmfStep> steps_;
};

}  // namespace fpdp::app
