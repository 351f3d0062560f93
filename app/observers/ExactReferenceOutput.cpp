#include "app/observers/ExactReferenceOutput.hpp"

#include <cmath>
#include <limits>

#include "io/NumberText.hpp"
#include "models/GaussianFunctionals.hpp"

namespace fpdp::app {

double relativeError(double computed, double exact) {
  if (std::isinf(exact) && std::isinf(computed) && (exact > 0) == (computed > 0)) return 0.0;
  if (std::isinf(exact) != std::isinf(computed)) return INFINITY;  // a finite value for an infinite one, or the reverse
  if (exact == 0) return computed;
  return (computed - exact) / exact;
}

ExactReferenceOutput::ExactReferenceOutput(const std::string& directory, bool writer, const Case& c,
                                           const ExactOracle& oracle)
    : oracle_(oracle) {
  std::vector<std::string> columns{"step", "t", "l1_error_p", "l1_error_q", "kl_exact", "kl_rel_error",
                                   "tv_exact", "tv_rel_error"};
  for (const auto& o : c.divergence.orders) {
    orders_.push_back(o.alpha);
    columns.push_back("renyi_" + o.label + "_exact");
    columns.push_back("renyi_" + o.label + "_rel_error");
  }
  for (double delta : c.privacy.deltaGrid) {
    deltas_.push_back(delta);
    columns.push_back("eps_exact_delta_" + io::shortestText(delta) + "_exact");
    columns.push_back("eps_exact_delta_" + io::shortestText(delta) + "_rel_error");
  }
  if (writer) csv_.emplace(directory + "/exact.csv", columns);
}

void ExactReferenceOutput::observe(const OutputStep& s) {
  const auto err = oracle_.errors(s.u, s.step, s.t);
  lastErrors_ = err;
  if (!csv_) return;
  const double klExact = oracle_.kl(s.step, s.t);
  std::vector<double> row{static_cast<double>(s.step), s.t, err.l1P, err.l1Q, klExact,
                          relativeError(s.values.kl, klExact)};
  // TV = delta(0) and eps(delta) of the two Gaussian laws (MATH.md §6, §7): TV wherever gaussianHockeyStick has a
  // form (not 3-D with unequal covariances), eps where that form is cheap enough to solve for (d = 1, or equal
  // covariances); NaN elsewhere.
  const auto [P, Q] = oracle_.laws(s.step, s.t);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const bool tvKnown = P.dim() <= 2 || models::gaussianHockeyStickIsCheap(P.covariance(), Q.covariance());
  const double tvExact = tvKnown ? models::gaussianHockeyStick(P.mean(), P.covariance(), Q.mean(), Q.covariance(), 0.0) : nan;
  row.push_back(tvExact);
  row.push_back(relativeError(s.values.tv, tvExact));
  for (std::size_t k = 0; k < orders_.size(); ++k) {
    const double exact = oracle_.renyi(orders_[k], s.step, s.t);
    row.push_back(exact);
    row.push_back(relativeError(s.values.renyi[k], exact));
  }
  const bool epsKnown = models::gaussianHockeyStickIsCheap(P.covariance(), Q.covariance());
  for (std::size_t j = 0; j < deltas_.size(); ++j) {
    const double exact =
        epsKnown ? models::gaussianExactEpsilon(P.mean(), P.covariance(), Q.mean(), Q.covariance(), deltas_[j]) : nan;
    const double computed = j < s.values.exactEpsilon.size() ? s.values.exactEpsilon[j].pair.epsilon() : nan;
    row.push_back(exact);
    row.push_back(relativeError(computed, exact));
  }
  csv_->addRow(row);
}

void ExactReferenceOutput::restoreState(const io::CheckpointData&, const RestoredStep& at) {
  lastErrors_ = oracle_.errors(at.u, at.step, at.t);
}

void ExactReferenceOutput::close() { csv_.reset(); }

}  // namespace fpdp::app
