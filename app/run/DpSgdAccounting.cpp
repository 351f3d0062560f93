#include "app/run/DpSgdAccounting.hpp"

#include <stdexcept>

#include <Eigen/Eigenvalues>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "app/run/NumberFormat.hpp"
#include "models/GaussianComposition.hpp"
#include "models/MinibatchSchedule.hpp"

namespace fpdp::app {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The smallest noise scale of Sigma: the direction the record's gradient is least hidden in.
double smallestSigma(const Case& c) {
  const models::Matrix S = c.noise.sigmaFor(false, c.mesh.dim);
  return std::sqrt(Eigen::SelfAdjointEigenSolver<models::Matrix>(S).eigenvalues().minCoeff());
}

std::string g6(double v) { return formatNumber(v, "%.6g"); }

}  // namespace

DpSgdVocabulary dpSgdVocabulary(const Case& c, std::optional<double> sensitivity) {
  DpSgdVocabulary v;
  v.sampling = c.batch.sampling;
  v.n = static_cast<double>(c.data.records.size());
  v.b = c.batch.expectedSize(c.data.records.size());
  v.gamma = c.batch.sampling == "poisson" ? c.batch.rate : v.b / v.n;
  v.steps = c.noisyGd.steps;
  v.eta = c.noisyGd.eta;
  v.sigma = smallestSigma(c);
  v.noiseOnSum = v.sigma * v.b * std::sqrt(2.0 / v.eta);
  v.clipNorm = c.noisyGd.clipNorm;
  if (v.clipNorm) v.dpsgdMultiplier = v.noiseOnSum / *v.clipNorm;
  v.sensitivity = sensitivity;
  if (sensitivity && *sensitivity > 0) v.fpdpMultiplier = v.noiseOnSum / *sensitivity;
  return v;
}

std::string DpSgdVocabulary::text() const {
  std::string s = "  DP-SGD vocabulary (MATH.md §8, docs/dpsgd.md): learning rate eta = " + g6(eta) +
                  ", steps K = " + std::to_string(steps) + ", ";
  if (sampling == "poisson")
    s += "Poisson sampling rate gamma = " + g6(gamma) + " (expected batch b = gamma n = " + g6(b) + ")";
  else if (sampling == "cyclic")
    s += "cyclic batches of b = " + g6(b) + " records";
  else
    s += "full batch b = n = " + g6(n);
  const std::string fromZ = dpsgdMultiplier ? "z C sqrt(eta/2) / b = " : "";
  s += "\n    noise: fpdp's sigma = " + fromZ + g6(sigma) + " (per step N(0, 2 eta sigma^2)), the std sigma b sqrt(2/eta) = " +
       g6(noiseOnSum) + " of the noise on the summed gradient\n";
  s += "    DP-SGD noise multiplier (add/remove, sensitivity C): ";
  s += dpsgdMultiplier ? "z = " + g6(*dpsgdMultiplier) + " with clip norm C = " + g6(*clipNorm)
                       : std::string("none (no noisy_gd.clip_norm C)");
  s += "\n    fpdp's replace-one noise multiplier per step: ";
  s += fpdpMultiplier ? "sigma b sqrt(2/eta) / S_g = " + g6(*fpdpMultiplier) + " with S_g = " + g6(*sensitivity) +
                            (clipNorm ? " (2C = " + g6(2.0 * *clipNorm) + ")" : std::string())
                      : std::string("not known (S_g is not known)");
  return s + "\n";
}

CompositionBaseline::CompositionBaseline(const Case& c, std::optional<double> sensitivity) {
  const DpSgdVocabulary v = dpSgdVocabulary(c, sensitivity);
  poisson_ = c.batch.sampling == "poisson";
  if (poisson_) {
    gamma_ = c.batch.rate;
    description_ = "add/remove neighbours (sensitivity C of the summed gradient), the composition of K "
                   "Poisson-subsampled Gaussian mechanisms (PLD accountant)";
    if (!v.dpsgdMultiplier) unavailable_ = "needs noisy_gd.clip_norm C (the add/remove sensitivity)";
    else {
      muPerUse_ = 1.0 / *v.dpsgdMultiplier;
      try {  // a mechanism the grid cannot hold (extreme z or rate) leaves the baseline not computed, with the reason
        accountant_.emplace(muPerUse_, gamma_, models::pldGridFor(muPerUse_, gamma_));
      } catch (const std::invalid_argument& e) {
        unavailable_ = e.what();
      }
    }
    return;
  }
  description_ = "replace-one neighbours (S_g), the exact GDP composition of the Gaussian mechanisms of the steps "
                 "whose batch holds the differing record";
  cycle_ = c.batch.cycleLength(c.data.records.size());
  // The batch that holds the differing record: models::cyclicBatches' partition (an added record joins the last).
  const std::size_t n = c.data.records.size();
  const models::CyclicBatches batches = models::cyclicBatches(
      n, std::max(c.batch.size, 1L), models::Neighbour{c.neighbour.index, c.neighbour.replacement, c.neighbour.kind});
  const bool added = c.neighbour.kind == models::NeighbourKind::Add;
  const std::size_t record = added ? n : c.neighbour.index;
  for (std::size_t j = 0; j < batches.cycleLength(); ++j) {
    const auto& batch = batches.batches[added ? 1 : 0][j];
    if (std::find(batch.begin(), batch.end(), record) != batch.end()) batchIndex_ = static_cast<long>(j);
  }
  if (!sensitivity) unavailable_ = "S_g is not known (give loss.sensitivity)";
  else muPerUse_ = models::gaussianCompositionMu(*sensitivity / v.b, v.eta, v.sigma * v.sigma);
}

long CompositionBaseline::uses(long step) const {
  return step / cycle_ + (step % cycle_ > batchIndex_ ? 1 : 0);
}

double CompositionBaseline::mu(long step) const {
  if (poisson_ || !unavailable_.empty()) return kNaN;
  return muPerUse_ * std::sqrt(static_cast<double>(uses(step)));
}

std::vector<models::PldEpsilon> CompositionBaseline::epsilons(long step, const std::vector<double>& deltas) {
  if (!unavailable_.empty()) return std::vector<models::PldEpsilon>(deltas.size(), {kNaN, kNaN});
  if (poisson_) {
    try {
      return accountant_->epsilons(step, deltas);
    } catch (const std::invalid_argument& e) {
      unavailable_ = e.what();
      return std::vector<models::PldEpsilon>(deltas.size(), {kNaN, kNaN});
    }
  }
  std::vector<models::PldEpsilon> out;
  for (double delta : deltas) {
    const double eps = models::gdpEpsilon(mu(step), delta);
    out.push_back({eps, eps});
  }
  return out;
}

std::function<double(long)> lastIterateCompositionMu(const Case& c, std::optional<double> sensitivity) {
  if (c.dynamics != "noisy_gd" || !sensitivity || c.neighbour.kind != models::NeighbourKind::Replace) return {};
  if (c.batch.sampling != "full" && c.batch.sampling != "cyclic") return {};
  // The steps whose batch holds the differing record: every step (full batch), or those of its cyclic batch.
  std::function<long(long)> uses = [](long step) { return step; };
  if (c.batch.sampling == "cyclic") {
    auto baseline = std::make_shared<CompositionBaseline>(c, sensitivity);
    if (!baseline->unavailable().empty()) return {};
    uses = [baseline](long step) { return baseline->uses(step); };
  }
  // Sigma = Sigma' for noisy GD (the reader takes noise.covariance_prime for Langevin only): each such step is a
  // Gaussian mechanism of sensitivity eta S_g / b against N(0, 2 eta Sigma), at worst along Sigma's smallest
  // eigenvalue. One formula for both samplings, so that cyclic batches of size n give the full batch's bits.
  const int d = c.mesh.dim;
  const double lambdaMin =
      Eigen::SelfAdjointEigenSolver<models::Matrix>(c.noise.sigmaFor(false, d)).eigenvalues().minCoeff();
  const double gap = *sensitivity / c.batch.expectedSize(c.data.records.size());
  const double eta = c.noisyGd.eta;
  return [gap, eta, lambdaMin, uses](long step) {
    return models::gaussianCompositionMu(gap, eta * static_cast<double>(uses(step)), lambdaMin);
  };
}

}  // namespace fpdp::app
