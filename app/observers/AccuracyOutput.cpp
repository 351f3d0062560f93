#include "app/observers/AccuracyOutput.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "app/run/NumberFormat.hpp"
#include "app/observers/PrivacyOutput.hpp"
#include "app/run/StepColumns.hpp"
#include "io/NumberText.hpp"

namespace fpdp::app {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// The columns of hockey_stick_accuracy.csv and /hockey_stick_accuracy.
const std::vector<io::Column>& profileColumns() {
  static const std::vector<io::Column> columns = [] {
    namespace u = io::units;
    std::vector<io::Column> c{outputStepColumn(), outputTimeColumn(),
                              io::real("eps", u::kNats, "eps of the hockey-stick grid.")};
    const std::string codes = exactEpsilonStatusCodes(), reasons = uncertaintyCodeTable();
    for (const char* dir : {"pq", "qp"}) {
      const std::string d = std::string("delta_") + dir, what = std::string("delta_") + dir + "(eps)";
      c.insert(c.end(),
               {io::real(d, u::kOne, "The run's value of " + what + "."),
                io::real(d + "_error_estimate", u::kOne, "The estimate of the discretisation error of " + what + "."),
                io::integer(d + "_certified", u::kOne, "1 where " + what + " is certified to accuracy.rtol, else 0."),
                io::real(d + "_conservative", u::kOne,
                         "An upper bound of " + what + " (at most 1, and at most its value at a smaller eps)."),
                io::status(d + "_status",
                           "Whether the companions can judge " + what +
                               " (0; 4 truncated_suspect, 5 noise_limited: not certified).",
                           codes),
                io::status(d + "_reason", "Why " + what + " is not certified (0: it is).", reasons)});
    }
    return c;
  }();
  return columns;
}

/// What accuracy.csv's number `name` is, and its units.
std::pair<std::string, std::string> describe(const std::string& name, const Case& c) {
  namespace u = io::units;
  if (name == "kl") return {"KL(p || q)", u::kNats};
  if (name == "kl_qp") return {"KL(q || p)", u::kNats};
  if (name == "tv") return {"the total variation distance", u::kOne};
  if (name.rfind("renyi_qp_", 0) == 0) return {"R_" + name.substr(9) + "(q || p)", u::kNats};
  if (name.rfind("renyi_", 0) == 0) return {"R_" + name.substr(6) + "(p || q)", u::kNats};
  if (name.rfind("eps_rdp_mironov_delta_", 0) == 0)
    return {"Mironov's conversion of R_alpha of the pair at delta = " + name.substr(22), u::kNats};
  if (name.rfind("eps_rdp_cks_delta_", 0) == 0)
    return {"the CKS conversion of R_alpha of the pair at delta = " + name.substr(18), u::kNats};
  return {"eps_exact at delta = " + name.substr(16), u::kNats};  // eps_exact_delta_<delta>
}

std::vector<double> accuracyCells(const NumberAccuracy& a) {
  return {a.value, a.estimate, a.certified ? 1.0 : 0.0, a.conservative, static_cast<double>(a.reason)};
}
}  // namespace

AccuracyOutput::AccuracyOutput(const std::string& directory, bool writer, AccuracyJudge judge)
    : judge_(std::move(judge)) {
  namespace u = io::units;
  const Case& c = judge_.caseSpec();
  const std::string reasons = uncertaintyCodeTable();
  columns_ = {outputStepColumn(), outputTimeColumn()};
  for (const auto& name : judge_.names()) {
    const auto [what, units] = describe(name, c);
    columns_.insert(columns_.end(),
                    {io::real(name, units, "The run's value of " + what + "."),
                     io::real(name + "_error_estimate", units,
                              "The estimate of the discretisation error of " + what + " (NaN: none)."),
                     io::integer(name + "_certified", u::kOne,
                                 "1 where " + what + " is certified to accuracy.rtol, else 0."),
                     io::real(name + "_conservative", units,
                              "An upper bound of " + what + ": the value plus the estimate, or the quantity's limit "
                              "where nothing bounds the error."),
                     io::status(name + "_reason", "Why " + what + " is not certified (0: it is).", reasons)});
  }
  if (writer) csv_.emplace(directory + "/accuracy.csv", io::columnNames(columns_));
  if (writer && !judge_.eps().empty())
    profileCsv_.emplace(directory + "/hockey_stick_accuracy.csv", io::columnNames(profileColumns()));
}

void AccuracyOutput::observe(const OutputStep& s) {
  lastProfile_ = judge_.profile(s.step, s.values, faulted());
  last_ = judge_.numbers(s.step, s.values, lastProfile_, faulted());
  judge_.boundProfileByRenyi(lastProfile_, last_);
  judge_.boundProfileByEpsilons(lastProfile_, last_);
  judge_.boundEpsilonsByProfile(last_, lastProfile_);
  absorbedMass_ = s.values.absorbedMass;
  startTruncation_ = s.values.startTruncation;
  faultsAtLast_ = faults_ ? faults_->faultsSoFar() : "";
  std::vector<double> row{static_cast<double>(s.step), s.t};
  for (const auto& a : last_) {
    const auto cells = accuracyCells(a);
    row.insert(row.end(), cells.begin(), cells.end());
  }
  rows_.push_back(row);
  if (csv_) csv_->addRow(row);
  const auto& eps = judge_.eps();
  for (std::size_t k = 0; k < eps.size(); ++k) {
    std::vector<double> r{static_cast<double>(s.step), s.t, eps[k]};
    for (int dir = 0; dir < 2; ++dir) {
      const auto& a = lastProfile_[2 * k + static_cast<std::size_t>(dir)];
      const auto& statuses = dir == 0 ? s.values.hockeyStickStatusPQ : s.values.hockeyStickStatusQP;
      const double status = k < statuses.size() ? statuses[k] : kNaN;
      r.insert(r.end(), {a.value, a.estimate, a.certified ? 1.0 : 0.0, a.conservative, status,
                         static_cast<double>(a.reason)});
    }
    if (profileCsv_) profileCsv_->addRow(r);
    profileRows_.push_back(std::move(r));
  }
}

void AccuracyOutput::saveState(io::CheckpointData& ck) const {
  ck.putTable("/accuracy/rows", rows_, columns_.size());
  ck.putTable("/accuracy/profile_rows", profileRows_, profileColumns().size());
}

void AccuracyOutput::restoreState(const io::CheckpointData& ck, const RestoredStep& at) {
  rows_ = ck.table("/accuracy/rows", columns_.size(), at.outputSteps);
  profileRows_ = ck.table("/accuracy/profile_rows", profileColumns().size(), at.outputSteps * judge_.eps().size());
  lastProfile_ = judge_.profile(at.step, at.values, faulted());
  last_ = judge_.numbers(at.step, at.values, lastProfile_, faulted());
  judge_.boundProfileByRenyi(lastProfile_, last_);
  judge_.boundProfileByEpsilons(lastProfile_, last_);
  judge_.boundEpsilonsByProfile(last_, lastProfile_);
  absorbedMass_ = at.values.absorbedMass;
  startTruncation_ = at.values.startTruncation;
  faultsAtLast_ = faults_ ? faults_->faultsSoFar() : "";
}

void AccuracyOutput::writeHdf5(io::Hdf5Output& h5) {
  const CompanionValues& companion = judge_.companion();
  h5.writeTable("accuracy", columns_, rows_,
                {{"companion_mesh", "The meshes of the companion solves.", companion.meshDescription},
                 {"companion_time", "How the companion solves coarsened the time step (empty: not at all).",
                  companion.timeDescription},
                 {"time_error_not_estimated", "Why a time error is not in the estimate (empty: it is).",
                  companion.timeUnrefined},
                 {"unavailable", "Why there is no estimate (empty: there is one).", companion.unavailable},
                 {"rtol", "accuracy.rtol, the relative tolerance of the certification.",
                  formatNumber(judge_.caseSpec().accuracy.rtol, "%.17g")}});
  if (!judge_.eps().empty())
    h5.writeTable("hockey_stick_accuracy", profileColumns(), profileRows_,
                  {{"companion_mesh", "The meshes of the companion solves.", companion.meshDescription},
                   {"unavailable", "Why there is no estimate (empty: there is one).", companion.unavailable}});
}

void AccuracyOutput::close() {
  csv_.reset();
  profileCsv_.reset();
}

std::optional<NumberAccuracy> AccuracyOutput::last(const std::string& name) const {
  const auto& names = judge_.names();
  for (std::size_t k = 0; k < last_.size() && k < names.size(); ++k)
    if (names[k] == name) return last_[k];
  return std::nullopt;
}

std::optional<NumberAccuracy> AccuracyOutput::epsAt(double delta) const {
  return last("eps_exact_delta_" + io::shortestText(delta));
}

void AccuracyOutput::summary(std::ostream& s) const {
  const Case& c = judge_.caseSpec();
  const CompanionValues& companion = judge_.companion();
  s << "  accuracy (accuracy.rtol = " << formatNumber(c.accuracy.rtol, "%g") << ", accuracy.csv): ";
  if (!companion.unavailable.empty()) {
    s << "no estimate: " << companion.unavailable << "; no number is certified\n";
    return;
  }
  s << "companion solves on " << companion.meshDescription
    << (companion.timeDescription.empty() ? "" : " with " + companion.timeDescription) << "\n";
  // Where the accountants' composition bounds the truth, the limits are capped by it (AccuracyJudge).
  const std::string limits = judge_.capsByComposition() ? "the quantities' limits capped by the accountants' composition"
                                                        : "the quantities' limits";
  const std::string infinite = judge_.capsByComposition() ? "conservative: the accountants' composition" : "conservative +inf";
  if (!companion.timeUnrefined.empty())
    s << "    no number is certified: " << companion.timeUnrefined << "; conservative values are " << limits << "\n";
  if (!faultsAtLast_.empty())
    s << "    no number is certified: numerical faults beyond their default tolerances (" << faultsAtLast_
      << ") did not stop the run (docs/faults.md); conservative values are " << limits << "\n";
  if (absorbedMass_ && std::max((*absorbedMass_)[0], (*absorbedMass_)[1]) > kAbsorbedMassGuard)
    s << "    the walls removed p " << formatNumber((*absorbedMass_)[0], "%.3e") << ", q "
      << formatNumber((*absorbedMass_)[1], "%.3e")
      << " of the mass: a bound on TV, delta(eps) and eps (in their estimates), none on KL and R_alpha (beyond "
      << formatNumber(kAbsorbedMassGuard, "%g") << ": not certified, " << infinite << "; widen the box)\n";
  if (startTruncation_ > kAbsorbedMassGuard)
    s << "    the box cut off " << formatNumber(startTruncation_, "%.3e")
      << " of the initial density: a bound on TV, delta(eps) and eps (in their estimates), none on KL and R_alpha "
         "(not certified, " << infinite << "; widen the box)\n";
  const auto& names = judge_.names();
  const std::string shownEps = "eps_exact_delta_" + io::shortestText(c.privacy.delta);
  int hidden = 0, hiddenUncertified = 0, certified = 0;  // numbers left out of the summary
  std::map<Uncertainty, std::vector<std::string>> byReason;
  for (std::size_t k = 0; k < last_.size() && k < names.size(); ++k) {
    const auto& a = last_[k];
    if (std::isnan(a.value)) continue;
    if (a.certified) ++certified;
    else byReason[a.reason].push_back(names[k]);
    // eps_exact at privacy.delta only, the forward direction, and of the dense order grid the orders the quantity
    // table shows; the rest are in accuracy.csv.
    const bool denseHidden = c.divergence.denseOrders && names[k].rfind("renyi_", 0) == 0 && names[k] != "renyi_2" &&
                             names[k] != "renyi_10" && names[k] != "renyi_32" && names[k] != "renyi_1024";
    const bool reverse = names[k] == "kl_qp" || names[k].rfind("renyi_qp_", 0) == 0 ||
                         names[k].rfind("eps_rdp_", 0) == 0;
    if ((names[k].rfind("eps_exact_delta_", 0) == 0 && names[k] != shownEps) || denseHidden || reverse) {
      ++hidden;
      if (!a.certified) ++hiddenUncertified;
      continue;
    }
    s << "    " << names[k] << " = " << formatNumber(a.value, "%.6e") << "  error estimate "
      << formatNumber(a.estimate, "%.1e") << "  ("
      << (a.value != 0.0 ? formatNumber(a.estimate / std::fabs(a.value), "%.1e") : std::string("-"))
      << " relative)  "
      << (a.certified ? "certified"
                      : "NOT CERTIFIED (" + std::string(uncertaintyName(a.reason)) + "), conservative value " +
                            formatNumber(a.conservative, "%.6e"))
      << "\n";
  }
  if (hidden > 0)
    s << "    the other " << hidden << " numbers (orders, deltas, q || p, RDP conversions): " << hiddenUncertified
      << " not certified (accuracy.csv)\n";
  if (byReason.empty()) return;
  // Not a WARNING line: `fpdp validate` fails a run on those, and an uncertified number is reported with its
  // conservative value, not wrong.
  s << "  NOT CERTIFIED to accuracy.rtol at the end (" << certified << " of " << certified + [&] {
    std::size_t n = 0;
    for (const auto& [why, list] : byReason) n += list.size();
    return n;
  }() << " numbers certified), by reason (accuracy.csv's *_reason; docs/scheme.md §8):\n";
  for (const auto& [why, list] : byReason) {
    s << "    " << uncertaintyName(why) << ":";
    if (list.size() > 8) s << " " << list.size() << " numbers";
    else
      for (const auto& n : list) s << " " << n;
    const std::string remedy = uncertaintyRemedy(why, c);
    s << (remedy.empty() ? "" : "\n      remedy: " + remedy) << "\n";
  }
}

void AccuracyOutput::summarize(SummaryPart part, const SummaryContext&, std::ostream& out) const {
  if (part == SummaryPart::Accuracy) summary(out);
}

std::string AccuracyOutput::epsNote(double delta) const {
  const auto a = epsAt(delta);
  if (!a || a->certified || std::isnan(a->value)) return "";
  return "NOT CERTIFIED to accuracy.rtol (" + std::string(uncertaintyName(a->reason)) +
         "): use its conservative value " + formatNumber(a->conservative, "%.4e") + " (accuracy.csv)";
}

std::string AccuracyOutput::rdpNote(double delta) const {
  const auto m = last("eps_rdp_mironov_delta_" + io::shortestText(delta));
  const auto k = last("eps_rdp_cks_delta_" + io::shortestText(delta));
  if (!m || !k || (m->certified && k->certified) || std::isnan(m->value)) return "";
  const Uncertainty why = m->certified ? k->reason : m->reason;
  return "NOT CERTIFIED to accuracy.rtol (" + std::string(uncertaintyName(why)) +
         "): upper bounds from the conservative R_alpha: Mironov " + formatNumber(m->conservative, "%.4e") + ", CKS " +
         formatNumber(k->conservative, "%.4e") + " (accuracy.csv)";
}

}  // namespace fpdp::app
