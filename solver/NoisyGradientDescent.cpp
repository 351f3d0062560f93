#include "solver/NoisyGradientDescent.hpp"

#include <cmath>
#include <sstream>

namespace fpdp::solver {

FieldGatherer::FieldGatherer(const meshes::DistributedBoxMesh& mesh) : mesh_(mesh) {
  global_ = mesh.createScalarVector();
  FPDP_PETSC(DMDACreateNaturalVector(mesh.scalarDM(), natural_.out()));
  Vec all = nullptr;
  FPDP_PETSC(VecScatterCreateToAll(natural_, &toAll_, &all));
  all_ = meshes::VecHandle(all);
}

FieldGatherer::~FieldGatherer() {
  if (toAll_) (void)VecScatterDestroy(&toAll_);
}

std::vector<double> FieldGatherer::gather(Vec u, int field) const {
  FPDP_PETSC(VecStrideGather(u, field, global_, INSERT_VALUES));
  FPDP_PETSC(DMDAGlobalToNaturalBegin(mesh_.scalarDM(), global_, INSERT_VALUES, natural_));
  FPDP_PETSC(DMDAGlobalToNaturalEnd(mesh_.scalarDM(), global_, INSERT_VALUES, natural_));
  FPDP_PETSC(VecScatterBegin(toAll_, natural_, all_, INSERT_VALUES, SCATTER_FORWARD));
  FPDP_PETSC(VecScatterEnd(toAll_, natural_, all_, INSERT_VALUES, SCATTER_FORWARD));
  PetscInt n;
  const PetscScalar* a;
  FPDP_PETSC(VecGetLocalSize(all_, &n));
  FPDP_PETSC(VecGetArrayRead(all_, &a));
  std::vector<double> out(a, a + n);
  FPDP_PETSC(VecRestoreArrayRead(all_, &a));
  return out;
}

void FieldGatherer::scatter(const std::vector<double>& values, Vec u, int field) const {
  PetscScalar* a;
  FPDP_PETSC(VecGetArray(all_, &a));
  std::copy(values.begin(), values.end(), a);
  FPDP_PETSC(VecRestoreArray(all_, &a));
  // Every rank holds the same values; the reverse scatter writes each rank's owned part.
  FPDP_PETSC(VecScatterBegin(toAll_, all_, natural_, INSERT_VALUES, SCATTER_REVERSE));
  FPDP_PETSC(VecScatterEnd(toAll_, all_, natural_, INSERT_VALUES, SCATTER_REVERSE));
  FPDP_PETSC(DMDANaturalToGlobalBegin(mesh_.scalarDM(), natural_, INSERT_VALUES, global_));
  FPDP_PETSC(DMDANaturalToGlobalEnd(mesh_.scalarDM(), natural_, INSERT_VALUES, global_));
  FPDP_PETSC(VecStrideScatter(global_, field, u, INSERT_VALUES));
}

NoisyGradientDescent::NoisyGradientDescent(const meshes::DistributedBoxMesh& mesh, GradientField gradientD,
                                           GradientField gradientDPrime, const NoisyGdSettings& settings)
    : mesh_(mesh),
      settings_(settings),
      pushD_(mesh.box(), std::move(gradientD), settings.eta),
      pushDPrime_(mesh.box(), std::move(gradientDPrime), settings.eta),
      gatherer_(mesh) {
  if (mesh.fields() != 2) throw std::invalid_argument("NoisyGradientDescent: the mesh must carry 2 fields (p, q)");
  if (settings_.diffusion == DiffusionMethod::FokkerPlanck) {
    DriftDiffusionEquation heat;
    heat.potential = [](const Point&) { return 0.0; };
    heat.diffusion = settings_.noiseVariance;
    heat.crossDiffusion = settings_.noiseCross;
    heat_ = std::make_unique<FokkerPlanckOperator>(mesh, std::vector<DriftDiffusionEquation>{heat, heat},
                                                   FaceFluxScheme::ScharfetterGummel);
    TimeIntegration ti;
    ti.dt = settings_.eta / settings_.diffusionSubsteps;
    ti.steps = settings_.diffusionSubsteps;
    ti.tsType = settings_.diffusionTsType;
    ti.kspType = settings_.kspType;
    ti.pcType = settings_.pcType;
    ti.optionsPrefix = "diffusion_";
    diffusion_ = std::make_unique<DensityEvolution>(mesh, heat_->assemble(), ti);
  } else {
    if (settings_.noiseCross != std::array<double, 3>{0, 0, 0})
      throw std::invalid_argument("exact_convolution needs a diagonal noise covariance");
    std::array<double, 3> s{0, 0, 0};
    for (int a = 0; a < mesh.dim(); ++a) s[a] = std::sqrt(2.0 * settings_.eta * settings_.noiseVariance[a]);
    convolution_ = std::make_unique<GaussianConvolution>(mesh.box(), s);
  }
}

NoisyGradientDescent::StepReport NoisyGradientDescent::step(Vec u) {
  StepReport r;
  auto p = gatherer_.gather(u, 0);
  auto q = gatherer_.gather(u, 1);
  r.pushP = pushD_.apply(p);
  r.pushQ = pushDPrime_.apply(q);
  if (convolution_) {
    r.diffP = convolution_->apply(p);
    r.diffQ = convolution_->apply(q);
  }
  gatherer_.scatter(p, u, 0);
  gatherer_.scatter(q, u, 1);
  if (diffusion_) diffusion_->run(u, [](long, double, Vec) {});
  return r;
}

std::string NoisyGradientDescent::describe() const {
  std::ostringstream os;
  os << "push-forward: monotone cubic remap by shears; diffusion: ";
  if (diffusion_) os << "fokker_planck, " << settings_.diffusionSubsteps << " substeps, " << diffusion_->describe();
  else os << "exact_convolution";
  return os.str();
}

}  // namespace fpdp::solver
