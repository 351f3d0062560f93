#include "app/observers/ExactReferenceOutput.hpp"

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>

#include "app/run/StepColumns.hpp"
#include "io/NumberText.hpp"
#include "models/GaussianFunctionals.hpp"

namespace fpdp::app {

ExactReferenceOutput::ExactReferenceOutput(const std::string& directory, bool writer, const Case& c,
                                           const ExactOracle& oracle)
    : oracle_(oracle), writer_(writer) {
  namespace u = io::units;
  const auto exactAndError = [&](const std::string& stem, const std::string& unit, const std::string& what) {
    columns_.push_back(io::real(stem + "_exact", unit, "The exact " + what + " of the two laws (closed form)."));
    columns_.push_back(io::real(stem + "_rel_error", u::kOne,
                                "The relative error (computed - exact)/exact of the computed " + what + "."));
  };
  columns_ = {outputStepColumn(), outputTimeColumn(),
              io::real("l1_error_p", u::kOne, "The L1 distance of the computed p from the exact cell averages."),
              io::real("l1_error_q", u::kOne, "The L1 distance of the computed q from the exact cell averages.")};
  exactAndError("kl", u::kNats, "KL(p || q)");
  exactAndError("tv", u::kOne, "total variation distance");
  for (const auto& o : c.divergence.orders) {
    orders_.push_back(o.alpha);
    exactAndError("renyi_" + o.label, u::kNats, "R_" + o.label + "(p || q)");
  }
  for (double delta : c.privacy.deltaGrid) {
    deltas_.push_back(delta);
    exactAndError("eps_exact_delta_" + io::shortestText(delta), u::kNats,
                  "eps at delta = " + io::shortestText(delta) + " (the larger direction)");
  }
  if (writer) csv_.emplace(directory + "/exact.csv", io::columnNames(columns_));
}

void ExactReferenceOutput::observe(const OutputStep& s) {
  const auto err = oracle_.errors(s.u, s.step, s.t);
  lastErrors_ = err;
  if (!writer_) return;
  const double klExact = oracle_.kl(s.step, s.t);
  std::vector<double> row{static_cast<double>(s.step), s.t, err.l1P, err.l1Q, klExact,
                          relativeError(s.values.kl, klExact)};
  // TV = delta(0) and eps(delta): the oracle's own where its laws are not Gaussian; else of the two Gaussian laws
  // (MATH.md §6, §7): TV wherever gaussianHockeyStick has a form (not 3-D with unequal covariances), eps where that
  // form is cheap enough to solve for (d = 1, or equal covariances); NaN elsewhere.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::function<double(double)> epsilonExact;
  double tvExact = nan;
  if (oracle_.tv) {
    tvExact = oracle_.tv(s.step, s.t);
    epsilonExact = [&](double delta) { return oracle_.epsilon(delta, s.step, s.t); };
  } else {
    const auto [P, Q] = oracle_.laws(s.step, s.t);
    const bool cheap = models::gaussianHockeyStickIsCheap(P.covariance(), Q.covariance());
    if (P.dim() <= 2 || cheap) tvExact = models::gaussianHockeyStick(P.mean(), P.covariance(), Q.mean(), Q.covariance(), 0.0);
    if (cheap)
      epsilonExact = [P, Q](double delta) {
        return models::gaussianExactEpsilon(P.mean(), P.covariance(), Q.mean(), Q.covariance(), delta);
      };
  }
  row.push_back(tvExact);
  row.push_back(relativeError(s.values.tv, tvExact));
  for (std::size_t k = 0; k < orders_.size(); ++k) {
    const double exact = oracle_.renyi(orders_[k], s.step, s.t);
    row.push_back(exact);
    row.push_back(relativeError(s.values.renyi[k], exact));
  }
  for (std::size_t j = 0; j < deltas_.size(); ++j) {
    const double exact = epsilonExact ? epsilonExact(deltas_[j]) : nan;
    const double computed = j < s.values.exactEpsilon.size() ? s.values.exactEpsilon[j].pair.epsilon() : nan;
    row.push_back(exact);
    row.push_back(relativeError(computed, exact));
  }
  csv_->addRow(row);
  rows_.push_back(std::move(row));
}

void ExactReferenceOutput::saveState(io::CheckpointData& ck) const {
  ck.putTable("/exact/rows", rows_, columns_.size());
}

void ExactReferenceOutput::restoreState(const io::CheckpointData& ck, const RestoredStep& at) {
  lastErrors_ = oracle_.errors(at.u, at.step, at.t);
  // Rank 0's rows (the checkpoint is rank 0's); read on every rank, so that a bad checkpoint fails on all alike.
  rows_ = ck.table("/exact/rows", columns_.size(), at.outputSteps);
}

void ExactReferenceOutput::writeHdf5(io::Hdf5Output& h5) { h5.writeTable("exact", columns_, rows_); }

void ExactReferenceOutput::close() { csv_.reset(); }

void ExactReferenceOutput::summarize(SummaryPart part, const SummaryContext&, std::ostream& out) const {
  if (part != SummaryPart::Reference || !lastErrors_) return;
  char b[400];
  std::snprintf(b, sizeof b, "  L1 error vs exact cell averages at the end: p %.3e, q %.3e\n", lastErrors_->l1P,
                lastErrors_->l1Q);
  out << b;
}

}  // namespace fpdp::app
