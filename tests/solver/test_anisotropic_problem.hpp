#pragma once
// Anisotropic, unequal-noise Ornstein–Uhlenbeck problems built directly, for the tests of the full-tensor diffusion
// (solver/discretisation/AnisotropicDiffusion.hpp) and of the infinite-divergence detection (solver/functionals/Divergences.hpp):
//   d_t p = div(p lambda (theta - c_p)) + div(Sigma grad p),   d_t q = div(q lambda (theta - c_q)) + div(Sigma' grad q),
// p_0 = q_0 = N(m_0, C_0); exact laws from models::ornsteinUhlenbeckLaw (MATH.md §6) via GaussianReference.
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "meshes/DistributedBoxMesh.hpp"
#include "models/Gaussian.hpp"
#include "models/Loss.hpp"
#include "solver/propagation/DensityEvolution.hpp"
#include "solver/propagation/ExponentialEvolution.hpp"
#include "solver/functionals/Divergences.hpp"
#include "solver/discretisation/LangevinDiscretisation.hpp"
#include "validation/GaussianReference.hpp"

namespace fpdp::testing {

/// Rotation by angle t in the plane of axes (a, b) of R^d.
inline models::Matrix planeRotation(int d, int a, int b, double t) {
  models::Matrix R = models::Matrix::Identity(d, d);
  R(a, a) = std::cos(t), R(a, b) = -std::sin(t);
  R(b, a) = std::sin(t), R(b, b) = std::cos(t);
  return R;
}

/// R diag(eigenvalues) R^T.
inline models::Matrix rotatedMatrix(const models::Matrix& R, const std::vector<double>& eigenvalues) {
  models::Vector e(static_cast<Eigen::Index>(eigenvalues.size()));
  for (std::size_t i = 0; i < eigenvalues.size(); ++i) e[static_cast<Eigen::Index>(i)] = eigenvalues[i];
  models::Matrix S = R * e.asDiagonal() * R.transpose();
  return 0.5 * (S + S.transpose());
}

/// Faces of a smoothly graded axis on [-L, L]: x = L sinh(beta xi) / sinh(beta), xi uniform on [-1, 1] (cells are
/// smallest at the centre; neighbouring widths differ by O(h^2)).
inline meshes::Axis sinhAxis(double L, int cells, double beta) {
  std::vector<double> f(static_cast<std::size_t>(cells) + 1);
  for (int i = 0; i <= cells; ++i) {
    const double xi = -1.0 + 2.0 * i / cells;
    f[i] = L * std::sinh(beta * xi) / std::sinh(beta);
  }
  f.front() = -L, f.back() = L;
  return meshes::Axis::fromFaces(std::move(f));
}

/// Geometric grading from the centre outward on [-L, L] (cells = even): widths w_0 r^k, k = 0..cells/2-1 per side.
inline meshes::Axis geometricAxis(double L, int cells, double ratio) {
  const int half = cells / 2;
  double sum = 0.0;
  for (int k = 0; k < half; ++k) sum += std::pow(ratio, k);
  const double w0 = L / sum;
  std::vector<double> f(static_cast<std::size_t>(cells) + 1);
  f[half] = 0.0;
  double x = 0.0;
  for (int k = 0; k < half; ++k) {
    x += w0 * std::pow(ratio, k);
    f[half + k + 1] = x;
    f[half - k - 1] = -x;
  }
  f.front() = -L, f.back() = L;
  return meshes::Axis::fromFaces(std::move(f));
}

/// A rough axis: widths alternate h (1 + eps), h (1 - eps) (neighbouring widths differ by O(h)).
inline meshes::Axis roughAxis(double L, int cells, double eps) {
  const double h = 2.0 * L / cells;
  std::vector<double> f(static_cast<std::size_t>(cells) + 1);
  f[0] = -L;
  for (int i = 0; i < cells; ++i) f[i + 1] = f[i] + h * (1.0 + ((i % 2 == 0) ? eps : -eps));
  f.back() = L;
  return meshes::Axis::fromFaces(std::move(f));
}

struct AnisotropicOu {
  int dim = 2;
  double lambda = 1.0;
  models::Matrix sigmaP, sigmaQ;  // Sigma (p), Sigma' (q)
  models::Vector centreP, centreQ, m0;
  models::Matrix C0;

  solver::LangevinProblem problem() const {
    auto loss = std::make_shared<const models::QuadraticLoss>(lambda);
    auto LD = std::make_shared<const models::EmpiricalLoss>(loss, models::Dataset({{centreP, 1.0}}));
    auto LDp = std::make_shared<const models::EmpiricalLoss>(loss, models::Dataset({{centreQ, 1.0}}));
    solver::LangevinProblem pr{LD, LDp, 1.0, models::Gaussian(m0, C0)};
    pr.sigmaMatrix = sigmaP;
    pr.sigmaMatrixPrime = sigmaQ;
    return pr;
  }
  validation::GaussianReference reference() const {
    return validation::GaussianReference::forQuadratic(lambda, centreP, centreQ, sigmaP, sigmaQ,
                                                       models::Gaussian(m0, C0));
  }
};

/// Rotated, unequal Sigma and Sigma' (all off-diagonal entries non-zero), OU towards distinct centres.
inline AnisotropicOu rotatedUnequalProblem(int dim) {
  AnisotropicOu s;
  s.dim = dim;
  if (dim == 2) {
    s.sigmaP = rotatedMatrix(planeRotation(2, 0, 1, 0.5), {0.6, 0.3});
    s.sigmaQ = rotatedMatrix(planeRotation(2, 0, 1, -0.35), {0.5, 0.35});
  } else {
    s.sigmaP = rotatedMatrix(planeRotation(3, 0, 1, 0.5) * planeRotation(3, 1, 2, 0.4),
                                      {0.45, 0.3, 0.22});
    s.sigmaQ = rotatedMatrix(planeRotation(3, 0, 2, -0.45) * planeRotation(3, 0, 1, 0.3),
                                      {0.4, 0.3, 0.25});
  }
  s.centreP = models::Vector::Constant(dim, 0.3);
  s.centreQ = models::Vector::Constant(dim, -0.1);
  s.m0 = models::Vector::Zero(dim);
  s.C0 = 0.4 * models::Matrix::Identity(dim, dim);
  return s;
}

struct AnisotropicResult {
  solver::DivergenceValues div;
  validation::GaussianReference::DensityErrors err;
  validation::GaussianReference::Moments momentsP, momentsQ;
  solver::PositivityReport positivity;
  long highOrderFaces = 0;
  double minDensity = INFINITY;  // over all steps and both fields
  double maxDensity = 0.0;
  double maxMassDrift = 0.0;     // relative
  std::vector<double> state;     // rank-local final state, if asked
  std::string solver;            // the integrator's description
  double integratorEstimate = 0.0;  // the exponential integrator's a posteriori estimate (relative)
  long products = 0;                // its operator products
};

/// Solves the problem on `axes` from 0 to T in `steps` steps; orders for the divergences. ti.tsType = "exponential":
/// the exponential integrator with a posteriori control (solver/propagation/ExponentialEvolution.hpp) in one output
/// interval, with the tolerances of `exponential` (its dt, steps and observeEvery are set here).
inline AnisotropicResult solveAnisotropic(const AnisotropicOu& s, const std::vector<meshes::Axis>& axes, double T,
                                          long steps, const std::vector<double>& orders, MPI_Comm comm,
                                          solver::TimeIntegration ti = {}, bool keepState = false,
                                          solver::SpatialAccuracy accuracy = {},
                                          solver::ExponentialSettings exponential = {}) {
  const meshes::DistributedBoxMesh mesh(comm, meshes::BoxMesh(axes), 2, meshes::StencilShape::Box,
                                        accuracy.order == 4 ? 2 : 1);
  const auto problem = s.problem();
  const solver::LangevinDiscretisation disc(mesh, problem, solver::FaceFluxScheme::ScharfetterGummel, accuracy);
  ti.dt = T / static_cast<double>(steps);
  ti.steps = steps;
  AnisotropicResult r;
  std::unique_ptr<solver::DensityPropagator> propagator;
  const solver::ExponentialEvolution* exp = nullptr;
  if (ti.tsType == "exponential") {
    exponential.dt = ti.dt, exponential.steps = steps, exponential.observeEvery = steps;
    auto e = std::make_unique<solver::ExponentialEvolution>(mesh, disc.spatialOperator(), exponential);
    exp = e.get();
    propagator = std::move(e);
  } else {
    propagator = std::make_unique<solver::DensityEvolution>(mesh, disc.spatialOperator().assemble(), ti);
  }
  solver::DensityPropagator& evo = *propagator;
  r.positivity = disc.spatialOperator().positivity();
  r.highOrderFaces = disc.spatialOperator().highOrderFaces();
  const solver::DivergenceFunctionals funcs(mesh, orders);
  auto u = mesh.createVector();
  disc.setInitialState(u);
  double mass0[2] = {0, 0};
  evo.run(u, [&](long step, double, Vec x) {
    const auto v = funcs.evaluate(x);
    if (step == 0) mass0[0] = v.p.mass, mass0[1] = v.q.mass;
    r.maxMassDrift = std::max({r.maxMassDrift, std::fabs(v.p.mass - mass0[0]) / mass0[0],
                               std::fabs(v.q.mass - mass0[1]) / mass0[1]});
    r.minDensity = std::min({r.minDensity, v.p.min, v.q.min});
    r.maxDensity = std::max({r.maxDensity, v.p.max, v.q.max});
  });
  r.div = funcs.evaluate(u);
  r.solver = evo.describe();
  if (exp) r.integratorEstimate = exp->errorEstimate(), r.products = exp->operatorProducts();
  const auto ref = s.reference();
  r.err = ref.densityErrors(mesh, u, T);
  r.momentsP = validation::GaussianReference::cellMoments(mesh, u, 0);
  r.momentsQ = validation::GaussianReference::cellMoments(mesh, u, 1);
  if (keepState) {
    const PetscScalar* a;
    PetscInt n;
    VecGetLocalSize(u, &n);
    VecGetArrayRead(u, &a);
    r.state.assign(a, a + n);
    VecRestoreArrayRead(u, &a);
  }
  return r;
}

inline double maxAbs(const models::Matrix& m) { return m.cwiseAbs().maxCoeff(); }
inline double rate(double eCoarse, double eFine, double ratio = 2.0) {
  return std::log(eCoarse / eFine) / std::log(ratio);
}

}  // namespace fpdp::testing
