#include "app/observers/FieldOutput.hpp"

#include "meshes/PetscHandles.hpp"

namespace fpdp::app {

FieldOutput::FieldOutput(io::Hdf5Output& h5, const meshes::DistributedBoxMesh& mesh,
                         const solver::NoisyGradientDescent* gd, ParaViewOutput paraview)
    : h5_(h5), gd_(gd), p_(mesh.createScalarVector()), q_(mesh.createScalarVector()), paraview_(std::move(paraview)) {
  namespace u = io::units;
  const std::string density = u::density(mesh.dim());
  const std::string perCell = " per cell (cell averages; point values on the chapman_kolmogorov route), x fastest.";
  pInfo_ = io::real("p", density, "The density p trained on D" + perCell);
  qInfo_ = io::real("q", density, "The density q trained on D'" + perCell);
  boundaryP_ = io::real("boundary_p", u::kOne, "The masses of p in the boundary bins of the constraint set.");
  boundaryQ_ = io::real("boundary_q", u::kOne, "The masses of q in the boundary bins of the constraint set.");
}

void FieldOutput::observe(const OutputStep& s) {
  FPDP_PETSC(VecStrideGather(s.u, 0, p_, INSERT_VALUES));
  FPDP_PETSC(VecStrideGather(s.u, 1, q_, INSERT_VALUES));
  h5_.writeFields(s.step, s.t, {{pInfo_, p_.get()}, {qInfo_, q_.get()}});
  if (gd_) {
    h5_.writeReplicated(io::Hdf5Output::stepGroup(s.step), boundaryP_, gd_->boundary().p);
    h5_.writeReplicated(io::Hdf5Output::stepGroup(s.step), boundaryQ_, gd_->boundary().q);
  }
  paraview_.writeStep(s.step, s.t, p_, q_, s.columns, s.row);
}

void FieldOutput::restoreState(const io::CheckpointData&, const RestoredStep& at) {
  paraview_.restoreSteps(at.columns, at.rows);
}

void FieldOutput::close() { paraview_.writeXdmf(); }

}  // namespace fpdp::app
