#pragma once
// Shared set-ups of the sampler tests: small noisy-GD problems built from models/ exactly as the app builds them.
#include <memory>

#include "meshes/BoxMesh.hpp"
#include "models/Loss.hpp"
#include "validation/MonteCarloSampler.hpp"

namespace fpdp::testing {

inline models::Dataset records1d(std::initializer_list<double> xs, std::initializer_list<double> ys = {}) {
  std::vector<models::Record> r;
  auto y = ys.begin();
  for (double x : xs) {
    models::Record rec;
    rec.x = models::Vector::Constant(1, x);
    if (y != ys.end()) rec.y = *y++;
    r.push_back(rec);
  }
  return models::Dataset(r);
}

/// Quadratic loss (lambda = 1), D = {xbarP}, D' = {xbarQ}, isotropic or given Sigma, start N(m0, V0).
inline validation::SamplerProblem quadraticProblem(const models::Vector& xbarP, const models::Vector& xbarQ,
                                                   const models::Matrix& Sigma, double eta, long steps,
                                                   const models::Vector& m0, const models::Matrix& V0) {
  auto loss = std::make_shared<models::QuadraticLoss>(1.0);
  validation::SamplerProblem p;
  p.lossD = std::make_shared<models::EmpiricalLoss>(loss, models::Dataset({models::Record{xbarP, 1.0}}));
  p.lossDPrime = std::make_shared<models::EmpiricalLoss>(loss, models::Dataset({models::Record{xbarQ, 1.0}}));
  p.sigma = p.sigmaPrime = Sigma;
  p.initialMean = m0;
  p.initialCovariance = V0;
  p.step = eta;
  p.steps = steps;
  return p;
}

/// The 1-D logistic problem of the solver comparison: n = 6 records, one replaced, regularisation 0.5.
inline validation::SamplerProblem logisticProblem(double eta, long steps, double sigma) {
  auto loss = std::make_shared<models::LogisticLoss>(0.5);
  const models::Dataset D = records1d({1.2, 0.8, 1.5, -0.7, -1.1, 0.9}, {1, 1, 1, -1, -1, 1});
  models::Record replacement;
  replacement.x = models::Vector::Constant(1, -2.0);
  replacement.y = 1.0;
  const models::Dataset DPrime = models::Neighbour::replace(0, replacement).apply(D);
  validation::SamplerProblem p;
  p.lossD = std::make_shared<models::EmpiricalLoss>(loss, D);
  p.lossDPrime = std::make_shared<models::EmpiricalLoss>(loss, DPrime);
  p.sigma = p.sigmaPrime = models::Matrix::Constant(1, 1, sigma * sigma);
  p.initialMean = models::Vector::Zero(1);
  p.initialCovariance = models::Matrix::Constant(1, 1, 0.04);
  p.step = eta;
  p.steps = steps;
  return p;
}

inline bool identical(const validation::SampleSnapshot& a, const validation::SampleSnapshot& b) {
  for (int s = 0; s < 2; ++s) {
    const auto &ha = a.histogram[s], &hb = b.histogram[s];
    if (ha.cells != hb.cells || ha.boundary != hb.boundary || ha.outside != hb.outside) return false;
    const auto &ma = a.moments[s], &mb = b.moments[s];
    if (ma.count != mb.count || ma.mean != mb.mean || ma.covariance != mb.covariance) return false;
    // Standard errors may be NaN (too few blocks): compare bit patterns through equality or both NaN.
    for (Eigen::Index i = 0; i < ma.covarianceStandardError.size(); ++i) {
      const double x = ma.covarianceStandardError.data()[i], y = mb.covarianceStandardError.data()[i];
      if (!(x == y || (x != x && y != y))) return false;
    }
  }
  return true;
}

}  // namespace fpdp::testing
