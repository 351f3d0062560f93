#pragma once
// A small Ornstein–Uhlenbeck (quadratic-loss Langevin) problem built directly, for solver tests:
// D = {xbar}, D' = {xbar'}, l = (lambda/2)|theta - x|^2, p0 = q0 = N(m0, v0 I), noise sigma.
#include <memory>

#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"
#include "models/Loss.hpp"
#include "solver/propagation/DensityEvolution.hpp"
#include "solver/functionals/Divergences.hpp"
#include "solver/discretisation/LangevinDiscretisation.hpp"
#include "validation/GaussianReference.hpp"

namespace fpdp::testing {

struct OuSetup {
  int dim = 1;
  double halfWidth = 6.0;
  int cells = 100;
  double lambda = 1.0, sigma = 0.7, v0 = 0.5;
  std::array<double, 3> centreP{1.0, 0.5, -0.5}, centreQ{0.0, 0.0, 0.0}, m0{0.0, 0.0, 0.0};
  std::shared_ptr<const models::Loss> loss;  // default: quadratic(lambda)
};

/// The OU set-up of the operator-level tests: p and q drift towards centres apart on every axis, so that no
/// coefficient of the two fields' operators coincides.
inline OuSetup distinctCentresSetup(int dim, int cells) {
  OuSetup s;
  s.dim = dim;
  s.cells = cells;
  s.centreP = {0.8, -0.4, 0.3};
  s.centreQ = {-0.2, 0.3, 0.0};
  return s;
}

inline models::Vector vec(const std::array<double, 3>& a, int d) {
  models::Vector v(d);
  for (int i = 0; i < d; ++i) v[i] = a[i];
  return v;
}

inline meshes::BoxMesh ouBox(const OuSetup& s) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < s.dim; ++a) axes.push_back(meshes::Axis::uniform(-s.halfWidth, s.halfWidth, s.cells));
  return meshes::BoxMesh(std::move(axes));
}

inline solver::LangevinProblem ouProblem(const OuSetup& s) {
  const int d = s.dim;
  auto loss = s.loss ? s.loss : std::make_shared<const models::QuadraticLoss>(s.lambda);
  auto LD = std::make_shared<const models::EmpiricalLoss>(loss, models::Dataset({{vec(s.centreP, d), 1.0}}));
  auto LDp = std::make_shared<const models::EmpiricalLoss>(loss, models::Dataset({{vec(s.centreQ, d), 1.0}}));
  return {LD, LDp, s.sigma, models::Gaussian(vec(s.m0, d), s.v0 * models::Matrix::Identity(d, d))};
}

}  // namespace fpdp::testing
