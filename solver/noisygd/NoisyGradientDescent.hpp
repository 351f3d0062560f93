#pragma once
// One step of projected noisy gradient descent on the densities (MATH.md §2.1, CYS Algorithm 1), for p (dataset D)
// and q (D'):
//
//   p_{k+1} = Pi_C # ( (T_D # p_k) * N(0, 2 eta Sigma) ),    T_D(theta) = theta - eta g_D(theta),
//
// as two operators (docs/noisy-gd.md):
//   1. push-forward through T_D: PushForward (conservative, non-negative, third order on uniform meshes);
//   2. convolution with N(0, 2 eta Sigma), which is the heat semigroup of d_t u = div(Sigma grad u) over time eta:
//        fokker_planck (default): the Fokker–Planck solver with zero drift, `substeps` implicit steps of PETSc TS
//          (options prefix -diffusion_, e.g. -diffusion_ts_type), no-flux walls;
//        exact_convolution: GaussianConvolution, exact for the piecewise-quadratic reconstruction (diagonal Sigma),
//          mass beyond the mesh reported as outflow: the cross-check of the first.
//   Or both at once, chapman_kolmogorov: ChapmanKolmogorovQuadrature, the midpoint rule of the step's transition
//   kernel on the cell centres; the state is then POINT VALUES at the centres (meshes::FieldRepresentation), the rule
//   converges spectrally on smooth problems (docs/noisy-gd.md §7). Uniform mesh, diagonal Sigma, no constraint.
//   3. with a constraint set C (box or ball), Pi_C #: ConstraintProjection. p_k is then the pair (cell averages in C,
//      boundary bins on the boundary of C; docs/noisy-gd.md §6). The bins enter the next step as point masses at
//      their representative points, pushed through T_D exactly (a point maps to a point) and deposited before the
//      noise: by the linear cloud-in-cell weights for the Fokker–Planck route, by the exact Gaussian cell integrals
//      for the exact-convolution route. The exact convolution runs on a copy of the mesh padded by 9 noise
//      standard deviations on every side, so the mass it carries beyond the mesh walls is projected like all mass
//      outside C instead of being lost (beyond the padding: Phi(-9) = 1.1e-19 of a wall cell's mass, outflow); the Fokker–Planck route has no-flux walls and reports the mass in
//      the wall cells (keep several noise standard deviations between C and the walls: constraintMargin()).
// Minibatch noisy SGD (MATH.md §8, docs/noisy-gd.md §9): the map of step k is the cyclic batch k mod m's, or the
// push-forward is the Poisson mixture sum_B w_B T_B # p_k (PoissonBatchMixture; the boundary bins' point masses go
// to every T_B(x) with weight w_B); the noise and Pi_C are the same operators.
// Both fields are gathered to every rank for the push-forward (a line-by-line remap) and scattered back; the
// diffusion runs distributed. The results do not depend on the number of ranks beyond the linear solver's rounding.
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "meshes/FieldRepresentation.hpp"
#include "models/ConstraintSet.hpp"
#include "models/Gaussian.hpp"
#include "solver/noisygd/ConstraintProjection.hpp"
#include "solver/propagation/DensityEvolution.hpp"
#include "solver/noisygd/ChapmanKolmogorovQuadrature.hpp"
#include "solver/functionals/Divergences.hpp"
#include "solver/discretisation/FokkerPlanckOperator.hpp"
#include "solver/noisygd/GaussianConvolution.hpp"
#include "solver/noisygd/MinibatchDrift.hpp"
#include "solver/noisygd/PoissonBatchMixture.hpp"
#include "solver/noisygd/PoissonLatticeMixture.hpp"
#include "solver/noisygd/PushForward.hpp"

namespace fpdp::solver {

enum class DiffusionMethod { FokkerPlanck, ExactConvolution, ChapmanKolmogorov };

struct NoisyGdSettings {
  double eta = 0.1;
  std::array<double, 3> noiseVariance{1, 1, 1};  // Sigma_aa (isotropic noise: sigma^2 on every axis)
  std::array<double, 3> noiseCross{0, 0, 0};     // Sigma_xy, Sigma_xz, Sigma_yz (fokker_planck only; box stencil)
  DiffusionMethod diffusion = DiffusionMethod::FokkerPlanck;
  int diffusionSubsteps = 16;
  std::string diffusionTsType = "arkimex";  // L-stable SDIRK (ARKIMEX L2, fully implicit): one shift, one LU
  std::string kspType = "preonly";
  std::string pcType = "lu";
  models::ConstraintSet constraint;  // C of Pi_C; the whole space: no projection, no boundary bins
  int ballAngularBins = 0;           // ball: boundary bins per full turn (0: automatic, BoundaryBins)
};

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

/// The smallest eigenvalue of the noise covariance Sigma (noiseVariance, noiseCross) on the first `dim` axes.
double smallestNoiseVariance(const NoisyGdSettings& settings, int dim);

/// The exact-convolution route with a constraint would pad the mesh beyond NoisyGradientDescent::kMaxPaddedCells.
struct PaddedMeshTooLarge : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class NoisyGradientDescent {
public:
  /// The padded mesh of the exact-convolution route with a constraint holds at most this many cells (as many as a
  /// case's mesh may have): the padding grows with the kernel's standard deviation over the wall cells' width, and a
  /// kernel wider than the box (noise.sigma = 500 on a 64^2 case: 32264^2 cells) took 10 GB and minutes in its
  /// set-up. Beyond it the constructor throws PaddedMeshTooLarge before anything is allocated.
  static constexpr double kMaxPaddedCells = 268435456.0;
  /// Full-batch noisy GD with the gradients of L_D and L_D'.
  NoisyGradientDescent(const meshes::DistributedBoxMesh& mesh, GradientField gradientD, GradientField gradientDPrime,
                       const NoisyGdSettings& settings);
  /// Minibatch noisy SGD (cyclic batches or Poisson sampling; MinibatchDrift::fullBatch is the constructor above).
  /// Poisson sampling with chapman_kolmogorov is refused (std::invalid_argument).
  NoisyGradientDescent(const meshes::DistributedBoxMesh& mesh, MinibatchDrift drift, const NoisyGdSettings& settings);
  // The projections hold references to bins_ and padded_: not copyable, not movable.
  NoisyGradientDescent(const NoisyGradientDescent&) = delete;
  NoisyGradientDescent& operator=(const NoisyGradientDescent&) = delete;

  struct StepReport {
    Outflow pushP, pushQ;  // mass the push-forward carried beyond the mesh
    Outflow diffP, diffQ;  // mass the exact convolution carried beyond the mesh (0 for the Fokker–Planck walls, and
                           // 0 with a constraint: the padded mesh holds the kernel's reach, and Pi_C takes it)
    double wallMassP = 0, wallMassQ = 0;  // Fokker–Planck route with a constraint: mass in the wall cells after
                                          // the noise, before Pi_C (what the no-flux walls may have distorted)
    // Poisson on a displacement lattice: the step's TV bounds against the exact mixture (PoissonLatticeMixture).
    PoissonLatticeMixture::StepBound mixtureBoundP, mixtureBoundQ;
  };
  /// Advances the interlaced (p, q) state, with the boundary bins, by one noisy-GD step: p_k -> p_{k+1} with k =
  /// stepIndex (0-based), which chooses the cyclic batch k mod m (full batches and Poisson sampling ignore it).
  StepReport step(Vec u, long stepIndex = 0);
  /// Whether the Poisson mixture is on the displacement lattice (StepReport::mixtureBound* then bound its error).
  bool boundsMixture() const { return latticeD_ != nullptr; }
  /// Whether stepFromGaussian applies: no constraint set, a diagonal noise covariance, and for a Poisson mixture at
  /// most kMixtureStartWork (batch maps x quadrature nodes x cells).
  bool canStepFromGaussian() const;
  static constexpr double kMixtureStartWork = 268435456.0;  // 2^28: seconds
  /// The first step taken exactly from a Gaussian start theta_0 ~ N(m_0, V_0) instead of from the cell averages of u
  /// (docs/noisy-gd.md, "Under-resolved starts"): p_1 = (T_D # N(m_0, V_0)) * N(0, 2 eta Sigma), whose cell averages
  /// (point values for chapman_kolmogorov) are int N(x; m_0, V_0) P(T_D(x) + Z in cell) dx (cyclic batches: batch 0's
  /// map; Poisson: the sum over the batches of w_B P(T_B(x) + Z in cell)), by Gauss–Hermite
  /// quadrature in x (kGaussHermiteNodes per axis of V_0's Cholesky factor) with the exact Gaussian cell probabilities
  /// of Z; q_1 with T_D'. Exact for an affine T_D up to the quadrature's rounding-level error when V_0 is small
  /// against the noise (the case it is for); for any smooth T_D the integrand is smooth on the scale of V_0. Mass
  /// beyond the mesh is reported as outflow. Requires canStepFromGaussian(). Collective.
  StepReport stepFromGaussian(Vec u, const models::Gaussian& start) const;
  static constexpr int kGaussHermiteNodes = 16;
  /// Pi_C # of a state (the initial law theta_0 ~ Pi_C(N(m_0, V_0)), MATH.md §2.1): cells outside C are emptied into
  /// the boundary bins. Nothing happens without a constraint.
  void projectState(Vec u);
  /// The boundary bins' masses of p and q (paired, replicated on every rank): the SingularMasses of the divergences.
  const SingularMasses& boundary() const { return boundary_; }
  /// Checkpoint/restart: sets the boundary bins' masses (sizes must match boundaryBins()).
  void setBoundary(SingularMasses masses);
  const BoundaryBins& boundaryBins() const { return bins_; }
  bool constrained() const { return !bins_.empty(); }
  /// What the state's numbers are: point values at the cell centres for chapman_kolmogorov, else cell averages.
  meshes::FieldRepresentation representation() const {
    return !kernelD_.empty() ? meshes::FieldRepresentation::PointValues : meshes::FieldRepresentation::CellAverages;
  }
  /// chapman_kolmogorov: the quadrature of the step for D (aliasing estimate, resolution); null otherwise.
  const ChapmanKolmogorovQuadrature* kernelQuadrature() const { return kernelD_.empty() ? nullptr : kernelD_[0].get(); }
  /// Smallest distance between C and the mesh walls, in noise standard deviations sqrt(2 eta Sigma_aa) of the axis
  /// (+inf without a constraint).
  double constraintMargin() const;
  std::string describe() const;

private:
  const meshes::DistributedBoxMesh& mesh_;
  NoisyGdSettings settings_;
  BatchSampling sampling_;
  std::vector<PushForward> pushD_, pushDPrime_;                   // full: one; cyclic: one per batch; Poisson: none
  std::unique_ptr<PoissonBatchMixture> mixtureD_, mixtureDPrime_;  // Poisson, enumerated
  std::unique_ptr<PoissonLatticeMixture> latticeD_, latticeDPrime_;  // Poisson on a displacement lattice (1-D, 2-D)
  FieldGatherer gatherer_;
  std::unique_ptr<FokkerPlanckOperator> heat_;
  std::unique_ptr<DensityEvolution> diffusion_;
  std::unique_ptr<GaussianConvolution> convolution_;
  // chapman_kolmogorov: the whole step, one per batch map
  std::vector<std::unique_ptr<ChapmanKolmogorovQuadrature>> kernelD_, kernelDPrime_;
  // Constraint (docs/noisy-gd.md §6).
  BoundaryBins bins_;
  std::unique_ptr<ConstraintProjection> projection_;
  SingularMasses boundary_;
  meshes::AxisValues kernelStdDev_{};  // sqrt(2 eta Sigma_aa): the noise kernel of every route
  std::array<int, 3> pad_{0, 0, 0};
  std::unique_ptr<meshes::BoxMesh> padded_;  // exact convolution with a constraint
  std::unique_ptr<ConstraintProjection> paddedProjection_;
  std::unique_ptr<GaussianConvolution> paddedConvolution_;
  /// The push-forward of step k for field 0 (p, D) or 1 (q, D'), in place.
  /// bound (out): the Poisson lattice's TV bounds of the push-forward (0 otherwise).
  Outflow push(int field, long k, std::vector<double>& values, PoissonLatticeMixture::StepBound& bound) const;
  /// The images of a point mass at x under step k's map(s) with their weights (one image of weight 1 unless Poisson).
  void forEachImage(int field, long k, const ParameterPoint& x,
                    const std::function<void(const ParameterPoint&, double)>& f) const;
  std::size_t batchIndex(long k) const { return static_cast<std::size_t>(k % static_cast<long>(pushD_.size())); }
  /// Exact-convolution route with a constraint: noise and Pi_C on the padded mesh; the bins (p_k's) enter as pushed
  /// point masses and leave holding p_{k+1}'s.
  Outflow convolveAndProject(std::vector<double>& values, std::vector<double>& bins, int field, long k) const;
};

}  // namespace fpdp::solver
