// Case reader, [case], [noisy_gd], [time], [batch], [noise] and [initial]: the dynamics, its noise and start.
#include "app/case/CaseParser.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>

#include "meshes/BoxMesh.hpp"

namespace fpdp::app::detail {

// GCC 12 at -O3 reports a false -Wrestrict inside std::string's operator+ ("'" + std::string(1, ch)) when this
// function is compiled out of line, as here; inlined into CaseParser::parse it reports nothing.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wrestrict"
#endif
void CaseParser::readCaseTable(Case& c) {
  const Parameter& nameParameter = parameter("case", "name");
  if (const toml::node* node = given("case", "name")) {
    c.name = string(*node, "case.name", nameParameter.allowed);
    if (c.name.empty()) fail("case.name", *node, "must not be empty", nameParameter.allowed);
    // The default output directory "<name>-output" and its ".partial" must be a file name (at most 255 bytes).
    if (c.name.size() > kMaxNameLength)
      fail("case.name", *node, "has " + std::to_string(c.name.size()) + " characters, more than 200",
           nameParameter.allowed);
    for (char ch : c.name) {
      if (!isNameCharacter(ch)) {
        const auto u = static_cast<unsigned char>(ch);
        const std::string what = (u >= 0x20 && u < 0x7f) ? "'" + std::string(1, ch) + "'"
                                                         : std::string("a control or non-ASCII character");
        fail("case.name", *node, "contains " + what + ", which cannot be part of a case name",
             nameParameter.allowed);
      }
    }
  } else {
    c.name = nameFromPath(file_);
  }

  c.dynamics = choiceAt("case", "dynamics");
  dynamics_ = c.dynamics;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

bool CaseParser::isNameCharacter(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '-';
}

// The default name must itself be a valid name, whatever the file is called.
std::string CaseParser::nameFromPath(const fs::path& file) {
  std::string name = file.stem().string();
  for (char& ch : name) {
    if (!isNameCharacter(ch)) ch = '_';
  }
  if (name.size() > kMaxNameLength) name.resize(kMaxNameLength);
  return name.empty() ? std::string("case") : name;
}

// [time] belongs to Langevin diffusion and [noisy_gd] to noisy GD: a key of the other dynamics is an error, not
// silently ignored (a user who wrote time.dt for a noisy-GD case believes it has an effect).
void CaseParser::checkDynamicsApplicability() const {
  for (const Parameter& p : parameterSchema()) {
    if (p.dynamics.empty() || p.dynamics == dynamics_) continue;
    if (const toml::node* node = given(p.table, p.key)) {
      fail(parameterPath(p), *node,
           "applies only to case.dynamics = \"" + std::string(p.dynamics) + "\", but case.dynamics = \"" +
               dynamics_ + "\"",
           "no " + parameterPath(p) + " with case.dynamics = \"" + dynamics_ + "\"");
    }
  }
}

void CaseParser::readNoisyGd(Case& c) const {
  c.noisyGd.eta = numberAt("noisy_gd", "eta");
  c.noisyGd.steps = static_cast<long>(integerAt("noisy_gd", "steps"));
  c.noisyGd.diffusion = choiceAt("noisy_gd", "diffusion");
  const toml::node& diffusionNode = required(parameter("noisy_gd", "diffusion"));
  const bool kernelRoute = c.noisyGd.diffusion == "chapman_kolmogorov";
  // Beyond three axes the whole-field steps run a full Sigma in the coordinates where it is diagonal
  // (models::DecorrelatedCoordinates); on the DMDA meshes the kernel routes work in theta itself.
  if ((c.noisyGd.diffusion == "exact_convolution" || kernelRoute) && c.noise.covariance &&
      !c.noise.covariance->isDiagonal(0.0) && (kernelRoute || c.mesh.dim <= 3)) {
    fail("noisy_gd.diffusion", diffusionNode,
         c.noisyGd.diffusion + " needs a diagonal noise.covariance" + (kernelRoute ? "" : " for d <= 3") +
             " (the Gaussian kernel is applied axis by axis)",
         "fokker_planck with a full noise.covariance, or exact_convolution for d >= 4 (in the coordinates where Sigma "
         "is diagonal)");
  }
  if (kernelRoute)
    for (int a = 0; a < c.mesh.dim; ++a)
      if (c.mesh.grading[static_cast<std::size_t>(a)] != 1.0)
        fail("noisy_gd.diffusion", diffusionNode,
             "chapman_kolmogorov needs a uniform mesh (its midpoint rule is spectrally accurate only on equal "
             "cells), but mesh.grading[" + std::to_string(a) + "] = " +
                 floatLiteral(c.mesh.grading[static_cast<std::size_t>(a)]),
             "mesh.grading = 1 (uniform) on every axis, or another noisy_gd.diffusion");
  c.noisyGd.diffusion_substeps = static_cast<long>(integerAt("noisy_gd", "diffusion_substeps"));
  c.noisyGd.tracing_substeps = static_cast<long>(integerAt("noisy_gd", "tracing_substeps"));
  const toml::node& tracingNode = required(parameter("noisy_gd", "tracing_substeps"));
  c.noisyGd.clipNorm = optionalNumberAt("noisy_gd", "clip_norm");
  readConstraint(c);
  if (kernelRoute && !c.noisyGd.constraintSet.isNone())
    fail("noisy_gd.diffusion", diffusionNode,
         "chapman_kolmogorov evolves point values, which cannot carry the point masses Pi_C puts on the boundary "
         "of C (noisy_gd.constraint = \"" + c.noisyGd.constraint + "\")",
         "fokker_planck or exact_convolution with a constraint");
  if (kernelRoute && c.noisyGd.tracing_substeps > 0)
    fail("noisy_gd.tracing_substeps", tracingNode,
         "the tracing diffusions co-transport cell averages (docs/tracing.md); chapman_kolmogorov evolves point "
         "values",
         "0 with noisy_gd.diffusion = \"chapman_kolmogorov\"");
  if (c.noisyGd.tracing_substeps > 0 && !c.noisyGd.constraintSet.isNone())
    fail("noisy_gd.tracing_substeps", tracingNode,
         "the tracing diffusions (MATH.md §2.2) are not defined for projected noisy GD (noisy_gd.constraint = \"" +
             c.noisyGd.constraint + "\")",
         "0 with a constraint");
}

void CaseParser::readTime(Case& c) const {
  c.time.t_end = numberAt("time", "t_end");
  const Parameter& dtParameter = parameter("time", "dt");
  const toml::node& dtNode = required(dtParameter);
  c.time.dt = numberOf(dtParameter, dtNode);
  if (c.time.dt > c.time.t_end) {
    fail("time.dt", dtNode, "is larger than time.t_end = " + floatLiteral(c.time.t_end), dtParameter.allowed);
  }
  const double steps = c.time.t_end / c.time.dt;
  const std::string ratio = "time.t_end / time.dt = " + floatLiteral(c.time.t_end) + " / " +
                            floatLiteral(c.time.dt) + " = " + shortestDouble(steps);
  if (steps > kMaxSteps) fail("time.dt", dtNode, ratio + " steps, more than 10^9", dtParameter.allowed);
  if (std::abs(steps - std::round(steps)) > kStepTolerance * steps) {
    fail("time.dt", dtNode, ratio + " is not an integer number of steps", dtParameter.allowed);
  }
}

// [batch] (MATH.md §8): the batch size must leave at least one record per batch; sampling decides which of size
// and rate is required, and the other one is an error rather than silently ignored.
void CaseParser::readBatch(Case& c) const {
  const std::size_t n = c.data.records.size();
  c.batch.sampling = choiceAt("batch", "sampling");
  const toml::node* sizeNode = given("batch", "size");
  const toml::node* rateNode = given("batch", "rate");
  const std::string mode = "batch.sampling = \"" + c.batch.sampling + "\"";
  if (sizeNode && c.batch.sampling != "cyclic")
    fail("batch.size", *sizeNode, "applies only to cyclic batches, but " + mode,
         "no batch.size unless batch.sampling = \"cyclic\"");
  if (rateNode && c.batch.sampling != "poisson")
    fail("batch.rate", *rateNode, "applies only to Poisson sampling, but " + mode,
         "no batch.rate unless batch.sampling = \"poisson\"");
  if (c.batch.sampling == "cyclic") {
    const Parameter& size = parameter("batch", "size");
    if (!sizeNode) failMissing("batch.size", size.type, size.allowed, "batch.size (needed by " + mode + ")");
    const std::int64_t b = integerOf(size, *sizeNode);
    if (static_cast<std::uint64_t>(b) > n)
      fail("batch.size", *sizeNode, "is more than the n = " + std::to_string(n) + " records", size.allowed);
    c.batch.size = static_cast<long>(b);
  } else if (c.batch.sampling == "poisson") {
    const Parameter& rate = parameter("batch", "rate");
    if (!rateNode) failMissing("batch.rate", rate.type, rate.allowed, "batch.rate (needed by " + mode + ")");
    c.batch.rate = numberOf(rate, *rateNode);
  }
  for (const char* key : {"mixture", "mixture_tolerance"})
    if (const toml::node* node = given("batch", key); node && c.batch.sampling != "poisson")
      fail("batch." + std::string(key), *node, "applies only to Poisson sampling, but " + mode,
           "no batch." + std::string(key) + " unless batch.sampling = \"poisson\"");
  if (c.batch.sampling != "poisson") return;
  c.batch.mixture = choiceAt("batch", "mixture");
  c.batch.mixtureTolerance = numberAt("batch", "mixture_tolerance");
}

void CaseParser::readNoise(Case& c) const {
  const Parameter& sigma = parameter("noise", "sigma");
  const Parameter& cov = parameter("noise", "covariance");
  const toml::node* sigmaNode = given("noise", "sigma");
  const toml::node* covNode = given("noise", "covariance");
  if (sigmaNode && covNode) {
    fail("noise.covariance", *covNode, "given together with noise.sigma",
         "exactly one of noise.sigma (isotropic) and noise.covariance");
  }
  const Parameter& multiplier = parameter("noise", "multiplier");
  if (given("noise", "multiplier") && c.dynamics != "noisy_gd") checkDynamicsApplicability();
  if (const toml::node* zNode = given("noise", "multiplier"); zNode && c.dynamics == "noisy_gd") {
    if (sigmaNode || covNode)
      fail("noise.multiplier", *zNode, std::string("given together with noise.") + (sigmaNode ? "sigma" : "covariance"),
           "exactly one of noise.sigma, noise.covariance and noise.multiplier");
    const double z = numberOf(multiplier, *zNode);
    const toml::node* clipNode = given("noisy_gd", "clip_norm");
    if (!clipNode)
      failMissing("noisy_gd.clip_norm", parameter("noisy_gd", "clip_norm").type, parameter("noisy_gd", "clip_norm").allowed,
                  "noisy_gd.clip_norm (needed by noise.multiplier: the noise is z times the clip norm)");
    const double clip = numberOf(parameter("noisy_gd", "clip_norm"), *clipNode);
    const double eta = numberAt("noisy_gd", "eta");
    c.noise.multiplier = z;
    c.noise.sigma = sigmaFromNoiseMultiplier(z, clip, eta, c.batch.expectedSize(c.data.records.size()));
    return;
  }
  if (!sigmaNode && !covNode)
    failMissing("noise.sigma", sigma.type, sigma.allowed,
                dynamics_ == "noisy_gd" ? "noise.sigma, noise.covariance or noise.multiplier"
                                        : "noise.sigma or noise.covariance");
  if (sigmaNode) {
    c.noise.sigma = numberOf(sigma, *sigmaNode);
  } else {
    c.noise.covariance = covarianceMatrix(*covNode, "noise.covariance", cov.allowed);
    // sigma^2 = the largest eigenvalue: the scale reported where one number is needed (e.g. the summary).
    c.noise.sigma = std::sqrt(Eigen::SelfAdjointEigenSolver<models::Matrix>(*c.noise.covariance).eigenvalues().maxCoeff());
  }
  const Parameter& covPrime = parameter("noise", "covariance_prime");
  if (const toml::node* node = given("noise", "covariance_prime")) {
    c.noise.covariancePrime = covarianceMatrix(*node, "noise.covariance_prime", covPrime.allowed);
  }
}

// The noise's diffusion D = Sigma/2 against the cells: its eigenvalues must be normal doubles and D / h^2 (the
// operator's entries) must stay far from overflow.
void CaseParser::checkDiffusionScale(const Case& c) {
  const std::string path =
      c.noise.covariance ? "noise.covariance" : (c.noise.multiplier ? "noise.multiplier" : "noise.sigma");
  const toml::node& node = *given("noise", path.substr(6));
  const std::string allowed(parameter("noise", path.substr(6)).allowed);
  double smallest = 0.5 * c.noise.sigma * c.noise.sigma, largest = smallest;
  for (const auto* sigma : {&c.noise.covariance, &c.noise.covariancePrime}) {
    if (!*sigma) continue;
    const auto eigenvalues = Eigen::SelfAdjointEigenSolver<models::Matrix>(**sigma).eigenvalues();
    smallest = std::min(smallest, 0.5 * eigenvalues.minCoeff());
    largest = std::max(largest, 0.5 * eigenvalues.maxCoeff());
  }
  if (!(smallest >= DBL_MIN) || !std::isfinite(largest))
    fail(path, node,
         "gives a diffusion Sigma/2 with eigenvalues in [" + shortestDouble(smallest) + ", " + shortestDouble(largest) +
             "], not normal finite doubles",
         allowed);
  double hmin = minWidth_[0];
  for (std::size_t a = 1; a < dim_; ++a) hmin = std::min(hmin, minWidth_[a]);
  const double rate = largest / hmin / hmin;
  if (!(rate <= kMaxCellRate))
    fail(path, node,
         "gives a diffusion over the squared smallest cell width D / h^2 = " + shortestDouble(rate) +
             ", more than 1e100",
         allowed);
  cellRate_ = rate;
}

void CaseParser::readInitial(Case& c) const {
  const auto d = static_cast<Eigen::Index>(dim_);
  const Parameter& meanParameter = parameter("initial", "mean");
  if (const toml::node* node = lookup(meanParameter)) {
    c.initial.mean = pointOfDimension(*node, "initial.mean", meanParameter.allowed);
  } else {
    c.initial.mean = models::Vector::Zero(d);
  }

  const Parameter& covParameter = parameter("initial", "covariance");
  c.initial.covariance = covarianceMatrix(required(covParameter), "initial.covariance", covParameter.allowed);
}

// A number v (meaning v I) or a symmetric positive-definite d x d array (initial.covariance, noise.covariance).
models::Matrix CaseParser::covarianceMatrix(const toml::node& node, const std::string& path,
                                            std::string_view allowed) const {
  const auto d = static_cast<Eigen::Index>(dim_);
  if (node.is_number()) return positive(node, path, allowed) * models::Matrix::Identity(d, d);
  if (!node.is_array()) fail(path, node, "must be a number or a d x d array, not " + typeName(node), allowed);
  const toml::array& rows = *node.as_array();
  if (rows.size() != dim_) {
    fail(path, node,
         "has " + entries(rows.size(), "row", "rows") + ", expected a " + std::to_string(dim_) + " x " +
             std::to_string(dim_) + " array (" + dimensionReason_ + ")",
         allowed);
  }
  models::Matrix a(d, d);
  for (std::size_t i = 0; i < dim_; ++i) {
    const std::string rowPath = indexed(path, i);
    const toml::node& row = *rows.get(i);
    if (!row.is_array()) fail(rowPath, row, "must be an array (row " + std::to_string(i) + " of the matrix)", allowed);
    a.row(static_cast<Eigen::Index>(i)) = pointOfDimension(row, rowPath, allowed).transpose();
  }
  const double scale = a.cwiseAbs().maxCoeff();
  for (std::size_t i = 0; i < dim_; ++i) {
    for (std::size_t j = i + 1; j < dim_; ++j) {
      const double aij = a(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
      const double aji = a(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(i));
      if (std::abs(aij - aji) > kSymmetryTolerance * scale) {
        fail(path + "[" + std::to_string(i) + "][" + std::to_string(j) + "]", *rows.get(i)->as_array()->get(j),
             "not symmetric: " + path + "[" + std::to_string(j) + "][" + std::to_string(i) + "] = " +
                 floatLiteral(aji),
             allowed);
      }
    }
  }
  if (Eigen::LLT<models::Matrix>(a).info() != Eigen::Success) {
    fail(path, node, "not positive definite (its Cholesky factorisation fails)", allowed);
  }
  // Exact symmetry downstream (Cholesky factors, Gaussian densities) instead of a 1e-12 asymmetry.
  return 0.5 * (a + a.transpose());
}

// The output interval dt * output.every in units of the fastest cell diffusion time h^2 / D (checkDiffusionScale).
void CaseParser::checkOutputInterval(const Case& c) const {
  const long every = std::min(c.output.every, c.time.steps());
  const double interval = c.time.dt * static_cast<double>(every) * cellRate_;
  if (!(interval <= kMaxOutputInterval))
    fail("time.dt", *given("time", "dt"),
         "times output.every = " + std::to_string(c.output.every) + " is " + shortestDouble(interval) +
             " diffusion times of the smallest cell (h^2 / D), more than 1e9: the run's cost per output step "
             "grows with it",
         parameter("time", "dt").allowed);
}

}  // namespace fpdp::app::detail
