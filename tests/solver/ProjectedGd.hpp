#pragma once
// Shared set-up of the projected noisy-GD tests (test_projection.cpp, test_projection_parallel.cpp): a quadratic loss
// l = (lambda/2)|theta - x|^2 with per-example clipping at norm `clip` (0: none; a non-linear gradient map), one
// record per dataset (D = {xP}, D' = {xQ}), theta_0 ~ Pi_C(N(m0, v0 I)), run by solver::NoisyGradientDescent.
#include <memory>
#include <vector>

#include "TestSupport.hpp"
#include "meshes/DistributedBoxMesh.hpp"
#include "models/ConstraintSet.hpp"
#include "models/Gaussian.hpp"
#include "models/Loss.hpp"
#include "solver/noisygd/NoisyGradientDescent.hpp"

namespace projected_gd {

using namespace fpdp;

struct Setup {
  int dim = 1;
  std::array<int, 3> cells{600, 1, 1};
  std::array<double, 3> lower{-3, -3, -3}, upper{3, 3, 3};  // the mesh
  models::ConstraintSet C;
  double lambda = 1.0, eta = 0.5, sigma = 1.0, clip = 0.0;
  models::Vector xP = models::Vector::Constant(1, 0.3), xQ = models::Vector::Constant(1, 0.0);
  models::Vector m0 = models::Vector::Zero(1);
  double v0 = 0.03;
  solver::DiffusionMethod method = solver::DiffusionMethod::ExactConvolution;
  int substeps = 16;
  int ballBins = 0;
};

inline std::shared_ptr<const models::EmpiricalLoss> empiricalLoss(const Setup& s, const models::Vector& x) {
  auto loss = std::make_shared<models::QuadraticLoss>(s.lambda);
  return std::make_shared<const models::EmpiricalLoss>(loss, models::Dataset({models::Record{x, 1.0}}),
                                                       s.clip > 0 ? std::optional<double>(s.clip) : std::nullopt);
}

inline solver::GradientField gradientField(std::shared_ptr<const models::EmpiricalLoss> L, int dim) {
  return [L, dim](const solver::ParameterPoint& t) {
    models::Vector x(dim);
    for (int a = 0; a < dim; ++a) x[a] = t[a];
    const models::Vector g = L->gradient(x);
    solver::ParameterPoint out{0, 0, 0};
    for (int a = 0; a < dim; ++a) out[a] = g[a];
    return out;
  };
}

/// The solver's state after K steps, gathered: whole fields p, q (natural order, cell averages) and the bins.
struct SolverOutcome {
  std::vector<double> p, q, binsP, binsQ;
  double maxMassDrift = 0.0;  // max over steps of |cells + bins - initial| (both densities)
  double minValue = 0.0;
  std::vector<solver::ParameterPoint> binPoints;
};

inline SolverOutcome runSolver(const Setup& s, long K, MPI_Comm comm = PETSC_COMM_WORLD) {
  std::vector<meshes::Axis> axes;
  for (int a = 0; a < s.dim; ++a) axes.push_back(meshes::Axis::uniform(s.lower[a], s.upper[a], s.cells[a]));
  const meshes::DistributedBoxMesh mesh(comm, meshes::BoxMesh(std::move(axes)), 2);
  solver::NoisyGdSettings st;
  st.eta = s.eta;
  st.noiseVariance = {s.sigma * s.sigma, s.sigma * s.sigma, s.sigma * s.sigma};
  st.diffusion = s.method;
  st.diffusionSubsteps = s.substeps;
  st.constraint = s.C;
  st.ballAngularBins = s.ballBins;
  solver::NoisyGradientDescent gd(mesh, gradientField(empiricalLoss(s, s.xP), s.dim),
                                  gradientField(empiricalLoss(s, s.xQ), s.dim), st);
  const models::Gaussian g0(s.m0, s.v0 * models::Matrix::Identity(s.dim, s.dim));
  auto u = mesh.createVector();
  testing::setNormalisedGaussianState(mesh, u, g0);
  gd.projectState(u);
  solver::FieldGatherer gather(mesh);
  auto total = [&](const std::vector<double>& f, const std::vector<double>& bins) {
    double m = 0;
    std::size_t c = 0;
    for (int k = 0; k < mesh.box().cells(2); ++k)
      for (int j = 0; j < mesh.box().cells(1); ++j)
        for (int i = 0; i < mesh.box().cells(0); ++i) m += f[c++] * mesh.box().cellVolume(i, j, k);
    for (double b : bins) m += b;
    return m;
  };
  SolverOutcome out;
  const double m0P = total(gather.gather(u, 0), gd.boundary().p), m0Q = total(gather.gather(u, 1), gd.boundary().q);
  for (long k = 0; k < K; ++k) {
    gd.step(u);
    const auto p = gather.gather(u, 0), q = gather.gather(u, 1);
    out.maxMassDrift = std::max({out.maxMassDrift, std::fabs(total(p, gd.boundary().p) - m0P),
                                 std::fabs(total(q, gd.boundary().q) - m0Q)});
  }
  out.p = gather.gather(u, 0);
  out.q = gather.gather(u, 1);
  out.binsP = gd.boundary().p;
  out.binsQ = gd.boundary().q;
  out.binPoints = gd.boundaryBins().points();
  out.minValue = std::min(*std::min_element(out.p.begin(), out.p.end()), *std::min_element(out.q.begin(), out.q.end()));
  for (double b : out.binsP) out.minValue = std::min(out.minValue, b);
  return out;
}

}  // namespace projected_gd
