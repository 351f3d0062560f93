#include "app/observers/FieldOutput.hpp"

#include "meshes/PetscHandles.hpp"

namespace fpdp::app {

FieldOutput::FieldOutput(io::Hdf5Output& h5, const meshes::DistributedBoxMesh& mesh,
                         const solver::NoisyGradientDescent* gd, ParaViewOutput paraview)
    : h5_(h5), gd_(gd), p_(mesh.createScalarVector()), q_(mesh.createScalarVector()), paraview_(std::move(paraview)) {}

void FieldOutput::observe(const OutputStep& s) {
  FPDP_PETSC(VecStrideGather(s.u, 0, p_, INSERT_VALUES));
  FPDP_PETSC(VecStrideGather(s.u, 1, q_, INSERT_VALUES));
  h5_.writeFields(s.step, s.t, {{"p", p_.get()}, {"q", q_.get()}});
  if (gd_) {
    h5_.writeReplicated(io::Hdf5Output::stepGroup(s.step), "boundary_p", gd_->boundary().p);
    h5_.writeReplicated(io::Hdf5Output::stepGroup(s.step), "boundary_q", gd_->boundary().q);
  }
  paraview_.writeStep(s.step, s.t, p_, q_, s.columns, s.row);
}

void FieldOutput::restoreState(const io::CheckpointData&, const RestoredStep& at) {
  paraview_.restoreSteps(at.columns, at.rows);
}

void FieldOutput::close() { paraview_.writeXdmf(); }

}  // namespace fpdp::app
