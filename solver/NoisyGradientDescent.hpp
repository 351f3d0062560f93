#pragma once
// One step of noisy gradient descent on the densities (MATH.md §2.1, CYS Algorithm 1), for p (dataset D) and q (D'):
//
//   p_{k+1} = (T_D # p_k) * N(0, 2 eta Sigma),    T_D(theta) = theta - eta g_D(theta),
//
// as two operators (docs/noisy-gd.md):
//   1. push-forward through T_D: PushForward (conservative, non-negative, third order on uniform meshes);
//   2. convolution with N(0, 2 eta Sigma), which is the heat semigroup of d_t u = div(Sigma grad u) over time eta:
//        fokker_planck (default): the Fokker–Planck solver with zero drift, `substeps` implicit steps of PETSc TS
//          (options prefix -diffusion_, e.g. -diffusion_ts_type), no-flux walls;
//        exact_convolution: GaussianConvolution, exact for the piecewise-quadratic reconstruction (diagonal Sigma),
//          mass beyond the mesh reported as outflow: the cross-check of the first.
// Both fields are gathered to every rank for the push-forward (a line-by-line remap) and scattered back; the
// diffusion runs distributed. The results do not depend on the number of ranks beyond the linear solver's rounding.
#include <functional>
#include <memory>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "solver/DensityEvolution.hpp"
#include "solver/FokkerPlanckOperator.hpp"
#include "solver/GaussianConvolution.hpp"
#include "solver/PushForward.hpp"

namespace fpdp::solver {

enum class DiffusionMethod { FokkerPlanck, ExactConvolution };

struct NoisyGdSettings {
  double eta = 0.1;
  std::array<double, 3> noiseVariance{1, 1, 1};  // Sigma_aa (isotropic noise: sigma^2 on every axis)
  std::array<double, 3> noiseCross{0, 0, 0};     // Sigma_xy, Sigma_xz, Sigma_yz (fokker_planck only; box stencil)
  DiffusionMethod diffusion = DiffusionMethod::FokkerPlanck;
  int diffusionSubsteps = 16;
  std::string diffusionTsType = "arkimex";  // L-stable SDIRK (ARKIMEX L2, fully implicit): one shift, one LU
  std::string kspType = "preonly";
  std::string pcType = "lu";
};

using GradientField = std::function<Point3(const Point3&)>;

/// Whole-field copies of one field of a distributed state, in natural order, on every rank.
class FieldGatherer {
public:
  explicit FieldGatherer(const meshes::DistributedBoxMesh& mesh);
  ~FieldGatherer();
  std::vector<double> gather(Vec u, int field) const;
  void scatter(const std::vector<double>& values, Vec u, int field) const;

private:
  const meshes::DistributedBoxMesh& mesh_;
  meshes::VecHandle global_, natural_, all_;
  VecScatter toAll_ = nullptr;
};

class NoisyGradientDescent {
public:
  NoisyGradientDescent(const meshes::DistributedBoxMesh& mesh, GradientField gradientD, GradientField gradientDPrime,
                       const NoisyGdSettings& settings);

  struct StepReport {
    Outflow pushP, pushQ;  // mass the push-forward carried beyond the mesh
    Outflow diffP, diffQ;  // mass the exact convolution carried beyond the mesh (0 for the Fokker–Planck walls)
  };
  /// Advances the interlaced (p, q) state by one noisy-GD step.
  StepReport step(Vec u);
  std::string describe() const;

private:
  const meshes::DistributedBoxMesh& mesh_;
  NoisyGdSettings settings_;
  PushForward pushD_, pushDPrime_;
  FieldGatherer gatherer_;
  std::unique_ptr<FokkerPlanckOperator> heat_;
  std::unique_ptr<DensityEvolution> diffusion_;
  std::unique_ptr<GaussianConvolution> convolution_;
};

}  // namespace fpdp::solver
