#pragma once
// The coupled Langevin problem of MATH.md §2.3 on a mesh: p (trained on D) and q (on D') as the two interlaced
// fields of one state vector,
//   d_t p = div(p grad L_D)  + div(Sigma  grad p),      d_t q = div(q grad L_D') + div(Sigma' grad q),
// with Sigma = Sigma' = sigma^2 I (isotropic noise, the default) or any constant symmetric positive-definite Sigma,
// Sigma', which may differ (anisotropic and unequal noise, BKPP; docs/scheme.md "Anisotropic diffusion"), both
// started from the same Gaussian N(m0, V0), taken as exact cell averages and renormalised to unit mass on the box
// (the mass the box cuts off is reported by truncatedInitialMass()). Off-diagonal entries of Sigma or Sigma' need a
// mesh created with meshes::StencilShape::Box (requiresBoxStencil tells).
#include <memory>
#include <optional>
#include <stdexcept>

#include "meshes/DistributedBoxMesh.hpp"
#include "meshes/FieldRepresentation.hpp"
#include "models/Gaussian.hpp"
#include "models/Loss.hpp"
#include "solver/discretisation/FokkerPlanckOperator.hpp"

namespace fpdp::solver {

struct LangevinProblem {
  std::shared_ptr<const models::EmpiricalLoss> lossD;       // L_D
  std::shared_ptr<const models::EmpiricalLoss> lossDPrime;  // L_D'
  double sigma = 1.0;                                       // noise: sqrt(2) sigma dW
  models::Gaussian initial;
  // Anisotropic / unequal noise: d Theta = -grad L_D dt + sqrt(2 Sigma) dW for p, sqrt(2 Sigma') dW for q
  // (dim x dim, symmetric positive definite). Each one that is not set is sigma^2 I.
  std::optional<models::Matrix> sigmaMatrix = std::nullopt;       // Sigma (p)
  std::optional<models::Matrix> sigmaMatrixPrime = std::nullopt;  // Sigma' (q)

  /// Sigma of p and Sigma' of q as dim x dim matrices (sigma^2 I where not set).
  models::Matrix diffusionMatrixP(int dim) const;
  models::Matrix diffusionMatrixQ(int dim) const;
};

/// Whether the problem's diffusion matrices have off-diagonal entries, so that the mesh must be created with
/// meshes::StencilShape::Box.
bool requiresBoxStencil(const LangevinProblem& problem, int dim);

/// The per-axis and off-diagonal entries of a dim x dim Sigma as a DriftDiffusionEquation's diffusion data
/// (checks symmetry and size; positive definiteness is checked by FokkerPlanckOperator).
void setDiffusionMatrix(DriftDiffusionEquation& equation, const models::Matrix& Sigma);

/// Exact cell averages of g on this rank's owned cells of the mesh (models::TensorCellAverages on the mesh's faces):
/// the initial state here, the reference errors in validation::cellErrors.
/// probabilityFloor: as models::TensorCellAverages' (0: every cell relatively accurate, as a state needs).
models::TensorCellAverages ownedCellAverages(const models::Gaussian& g, const meshes::DistributedBoxMesh& mesh,
                                             double probabilityFloor = 0.0);

/// The case's start cannot be represented on the mesh (no mass inside the box, or point values that all underflow):
/// bad input, not a failure of the run.
struct UnrepresentableStart : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class LangevinDiscretisation {
public:
  /// mesh must have 2 fields (p, q).
  /// `accuracy`: SpatialAccuracy (order 4 needs a mesh of stencil width 2 with a box stencil).
  LangevinDiscretisation(const meshes::DistributedBoxMesh& mesh, LangevinProblem problem, FaceFluxScheme scheme,
                         SpatialAccuracy accuracy = {});

  const FokkerPlanckOperator& spatialOperator() const { return op_; }
  /// Fills u with the initial cell averages of p and q (or, for a point-value state, the initial density at the cell
  /// centres), normalised to unit discrete mass (sum of volume times value).
  void setInitialState(Vec u, meshes::FieldRepresentation representation = meshes::FieldRepresentation::CellAverages) const;
  /// 1 - (probability of the box under the initial Gaussian): what the renormalisation removed.
  double truncatedInitialMass() const;
  /// How finely the mesh resolves the initial Gaussian: min over axes a of its conditional standard deviation along
  /// a, 1/sqrt((V0^-1)_aa), over the width of the cell holding the mean (the nearest cell if the mean is outside).
  double initialResolution() const;
  /// Below this ratio the first steps under-report R_alpha (measured on cases/figure1-lambda1.toml, R_10 at K = 1 /
  /// K = 10 against the closed form: ratio 0.38: -35 % / -3.5 %; 0.75: -5.5 % / -0.51 %; 1: -1.1 % / -0.10 %; 1.5:
  /// -0.029 % / -0.0027 %; 2 - 4: <= 0.03 %; docs/scheme.md §5): the cell averages are exact, but the first step's
  /// within-cell reconstruction cannot place a mass narrower than a cell.
  static constexpr double kResolvedStartRatio = 1.5;
  /// "" when initialResolution() >= kResolvedStartRatio, else the run summary's warning (without "WARNING: ").
  std::string underResolvedStartWarning() const;
  /// max over cell centres of |grad L_D - grad L_D'| (MATH.md §1, the instance's measured gradient gap).
  double measuredGradientGap() const;
  /// Fills u with the discrete Gibbs densities exp(-L/D) at cell centres, each normalised to unit mass (the exact
  /// discrete steady state of the Scharfetter–Gummel scheme), for Sigma = D I and Sigma' = D' I. Throws
  /// std::logic_error for a Sigma that is not a multiple of the identity (the steady state is then no Gibbs density).
  void setGibbsState(Vec u) const;
  /// Fills w with W = sqrt(pi / V) per cell and field (pi = exp(-L/D), V the cell volume, up to one constant per
  /// field): the Scharfetter–Gummel operator of Sigma = D I satisfies detailed balance a_ij pi_j V_i = a_ji pi_i V_j,
  /// so W^-1 A W is symmetric (ExponentialEvolution checks it). Throws std::logic_error for a Sigma or Sigma' that is
  /// not a multiple of the identity.
  void setSymmetrisingWeights(Vec w) const;
  const LangevinProblem& problem() const { return problem_; }
  /// Frees the operator's potentials once the propagator is built (FokkerPlanckOperator::releasePotentials): 16 B
  /// per cell for p and q, about 5 % of a 3-D run's peak memory. setGibbsState and setSymmetrisingWeights throw
  /// std::logic_error afterwards.
  void releaseOperatorPotentials() { op_.releasePotentials(); }

private:
  const meshes::DistributedBoxMesh& mesh_;
  LangevinProblem problem_;
  FokkerPlanckOperator op_;
};

}  // namespace fpdp::solver
