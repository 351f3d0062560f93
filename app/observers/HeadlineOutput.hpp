#pragma once
// The answer a user quotes, first in what they read: the last lines of a run's summary and DIR/result.json
// (docs/output.md, "result.json"). At the last output step: eps(delta) at privacy.delta for the pair (the larger
// direction, and which one it is), whether it is certified to accuracy.rtol or else its conservative value with the
// reason and the remedy, and the accountants' composition baseline beside it; result.json adds every number of
// accuracy.csv at that step and what `accuracy.certify` did.
#include <ostream>
#include <optional>
#include <string>
#include <utility>

#include "app/observers/AccuracyOutput.hpp"
#include "app/observers/PrivacyOutput.hpp"
#include "app/run/CertifyRefinement.hpp"
#include "app/run/RunObserver.hpp"

namespace fpdp::app {

class HeadlineOutput final : public RunObserver {
public:
  /// Rank 0 (`writer`) writes DIR/result.json at the finish.
  HeadlineOutput(const std::string& directory, bool writer, const Case& c, const PrivacyOutput& privacy,
                 const AccuracyOutput& accuracy, CertificationReport certification);
  void observe(const OutputStep&) override {}
  /// Writes result.json into the output directory (before it is published).
  void writeHdf5(io::Hdf5Output&) override;
  /// What --certify did, once it is known (after the run's steps, before the finish).
  void setCertification(CertificationReport certification) { certification_ = std::move(certification); }
  /// The headline lines (the summary ends with them).
  void print(std::ostream& s) const;
  /// Headline: print()'s lines, the summary's last.
  void summarize(SummaryPart part, const SummaryContext&, std::ostream& out) const override {
    if (part == SummaryPart::Headline) print(out);
  }
  /// result.json's text.
  std::string json() const;

private:
  /// The eps at the smallest delta of privacy.delta_grid above `delta` that is certified (nullopt: none), for the
  /// answer a user can quote when eps(delta) is not certified.
  std::optional<std::pair<double, NumberAccuracy>> nearestCertified(double delta) const;
  /// The headline eps's remedy: the budget that stopped --certify where one did, else uncertaintyRemedy.
  std::string remedy(const NumberAccuracy& eps) const;

  std::string directory_;
  bool writer_;
  const Case& case_;
  const PrivacyOutput& privacy_;
  const AccuracyOutput& accuracy_;
  CertificationReport certification_;
};

}  // namespace fpdp::app
