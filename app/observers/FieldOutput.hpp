#pragma once
// The fields of an output step: p and q into fpdp.h5 (with the boundary bins' masses of projected noisy GD), and the
// ParaView files (VTK per step, fpdp.xmf over fpdp.h5 at the end; app/observers/ParaViewOutput). Registered when
// output.fields is on.
#include <string>

#include "app/observers/ParaViewOutput.hpp"
#include "app/run/RunObserver.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "solver/noisygd/NoisyGradientDescent.hpp"

namespace fpdp::app {

class FieldOutput final : public RunObserver {
public:
  /// `gd`: the projected noisy-GD propagator whose boundary bins are written beside the fields (null: none).
  FieldOutput(io::Hdf5Output& h5, const meshes::DistributedBoxMesh& mesh, const solver::NoisyGradientDescent* gd,
              ParaViewOutput paraview);

  void observe(const OutputStep& s) override;
  void restoreState(const io::CheckpointData& ck, const RestoredStep& at) override;
  void close() override;

private:
  io::Hdf5Output& h5_;
  const solver::NoisyGradientDescent* gd_;
  meshes::VecHandle p_, q_;
  ParaViewOutput paraview_;
  io::Column pInfo_, qInfo_, boundaryP_, boundaryQ_;  // what the datasets of /fields/step_NNNNNNNN/ mean
};

}  // namespace fpdp::app
