#pragma once
// The accountants' side of a noisy-GD case (MATH.md §8, docs/dpsgd.md): the mapping between the DP-SGD vocabulary
// (clip norm C, noise multiplier z, sampling rate or batch size, steps, learning rate) and fpdp's (sigma, eta, S_g,
// b, fpdp's own replace-one noise multiplier), and the composition baseline of a minibatch case: the eps of the
// mechanism that releases every iterate, beside fpdp's exact last-iterate eps. Without a run: a function of the Case.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "app/case/Case.hpp"
#include "models/PrivacyLossDistribution.hpp"

namespace fpdp::app {

/// The two vocabularies of one noisy-GD case. Noise per step N(0, 2 eta sigma^2 I) on the parameter is
/// eta / b times N(0, (z C)^2 I) on the summed clipped gradient: z C = sigma b sqrt(2/eta).
struct DpSgdVocabulary {
  std::string sampling;                  // batch.sampling
  double n = 0;                          // records
  double b = 0;                          // expected batch size (n full, size cyclic, gamma n Poisson)
  double gamma = 1;                      // sampling rate (Poisson), b/n otherwise
  long steps = 0;                        // K
  double eta = 0;                        // learning rate
  double sigma = 0;                      // fpdp's sigma (the smallest when Sigma is anisotropic)
  double noiseOnSum = 0;                 // std of the noise on the summed gradient: sigma b sqrt(2/eta)
  std::optional<double> clipNorm;        // C
  std::optional<double> dpsgdMultiplier; // z = noiseOnSum / C (add/remove neighbours, sensitivity C)
  std::optional<double> sensitivity;     // S_g (replace-one; = 2C with clipping)
  std::optional<double> fpdpMultiplier;  // fpdp's replace-one multiplier per step: sigma b sqrt(2/eta) / S_g
  /// The mapping as indented lines (the run's start and its summary print the same).
  std::string text() const;
};

/// The vocabulary of a noisy-GD case; `sensitivity` is S_g as the run knows it (stated or computed), if known.
DpSgdVocabulary dpSgdVocabulary(const Case& c, std::optional<double> sensitivity);

/// The composition baseline of a minibatch noisy-GD case (the full batch has its own in PrivacyOutput): cyclic
/// batches release every iterate as the composition of the Gaussian mechanisms of the steps whose batch holds the
/// differing record (exact GDP, replace-one with S_g, b = batch.size); Poisson sampling as the composition of K
/// Poisson-subsampled Gaussian mechanisms (add/remove with C, noise multiplier z; models/PrivacyLossDistribution).
class CompositionBaseline {
public:
  CompositionBaseline(const Case& c, std::optional<double> sensitivity);

  /// Empty when the baseline exists; else why not (a missing clip norm or S_g).
  const std::string& unavailable() const { return unavailable_; }
  /// The neighbouring relation and the mechanism, for the column and summary text.
  const std::string& description() const { return description_; }
  bool poisson() const { return poisson_; }

  /// Cyclic: how many of the steps 0 .. step-1 use the differing record's batch.
  long uses(long step) const;
  /// Cyclic: mu of the GDP composition after `step` steps; NaN for Poisson (not GDP) and when unavailable.
  double mu(long step) const;
  /// eps at each delta after `step` steps: pessimistic (reported) and optimistic (exact closed form: both alike);
  /// NaN when unavailable. Poisson: the accountant keeps its composition, so increasing steps along a run cost one
  /// extension each (models::SubsampledGaussianAccountant).
  std::vector<models::PldEpsilon> epsilons(long step, const std::vector<double>& deltas);

private:
  std::string unavailable_, description_;
  bool poisson_ = false;
  double muPerUse_ = 0;   // cyclic: one use's GDP mu; Poisson: the subsampled Gaussian's shift 1/z
  double gamma_ = 1;
  long cycle_ = 1, batchIndex_ = 0;
  std::optional<models::SubsampledGaussianAccountant> accountant_;  // Poisson
};

/// mu(step) of the GDP composition of every iterate of a noisy-GD case (MATH.md §8), where it exists: noisy GD with
/// full or cyclic batches, a replaced record and S_g known on all of R^d (`sensitivity`: provenSensitivity). The last
/// iterate is a post-processing of the iterates, so its R_alpha <= alpha mu^2/2, KL <= mu^2/2, delta(eps) <= the GDP
/// profile and eps(delta) <= its root (AccuracyJudge::setCompositionBound). Empty otherwise (Langevin, Poisson
/// sampling, add/remove neighbours, S_g unknown).
std::function<double(long)> lastIterateCompositionMu(const Case& c, std::optional<double> sensitivity);

}  // namespace fpdp::app
