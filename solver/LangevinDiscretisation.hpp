#pragma once
// The coupled Langevin problem of MATH.md §2.3 on a mesh: p (trained on D) and q (on D') as the two interlaced
// fields of one state vector,
//   d_t p = div(p grad L_D)  + sigma^2 Lap p,      d_t q = div(q grad L_D') + sigma^2 Lap q,
// both started from the same Gaussian N(m0, V0), taken as exact cell averages and renormalised to unit mass
// on the box (the mass the box cuts off is reported by truncatedInitialMass()).
#include <memory>

#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"
#include "models/Loss.hpp"
#include "solver/FokkerPlanckOperator.hpp"

namespace fpdp::solver {

struct LangevinProblem {
  std::shared_ptr<const models::EmpiricalLoss> lossD;       // L_D
  std::shared_ptr<const models::EmpiricalLoss> lossDPrime;  // L_D'
  double sigma = 1.0;                                       // noise: sqrt(2) sigma dW
  models::Gaussian initial;
};

class LangevinDiscretisation {
public:
  /// mesh must have 2 fields (p, q).
  LangevinDiscretisation(const meshes::DistributedBoxMesh& mesh, LangevinProblem problem, FaceFluxScheme scheme);

  const FokkerPlanckOperator& spatialOperator() const { return op_; }
  /// Fills u with the initial cell averages of p and q.
  void setInitialState(Vec u) const;
  /// 1 - (probability of the box under the initial Gaussian): what the renormalisation removed.
  double truncatedInitialMass() const;
  /// max over cell centres of |grad L_D - grad L_D'| (MATH.md §1, the instance's measured gradient gap).
  double measuredGradientGap() const;
  /// Fills u with the discrete Gibbs densities exp(-L/sigma^2) at cell centres, each normalised to unit mass
  /// (the exact discrete steady state of the Scharfetter–Gummel scheme).
  void setGibbsState(Vec u) const;
  const LangevinProblem& problem() const { return problem_; }

private:
  const meshes::DistributedBoxMesh& mesh_;
  LangevinProblem problem_;
  FokkerPlanckOperator op_;
};

}  // namespace fpdp::solver
