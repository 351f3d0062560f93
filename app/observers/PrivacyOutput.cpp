// bounds.csv, bound_applicability.csv, epsilon.csv, /bounds and /epsilon in fpdp.h5, the summary's privacy tables and
// the plots (docs/output.md). The formulas live in models/PrivacyBounds (MATH.md §5) and models/RdpConversion (§7).
#include "app/observers/PrivacyOutput.hpp"
#include "app/run/RunPlan.hpp"

#include "app/run/NumberFormat.hpp"
#include "app/run/StepColumns.hpp"

#include <sys/wait.h>

#include <Eigen/Eigenvalues>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "io/OutputFile.hpp"
#include "models/RdpConversion.hpp"
#include "models/GaussianComposition.hpp"

namespace fs = std::filesystem;

namespace fpdp::app {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr models::GapKind kKinds[2] = {models::GapKind::WorstCase, models::GapKind::Measured};

std::string stem(int item, models::GapKind kind) {
  return "bound" + std::to_string(item) + (kind == models::GapKind::Measured ? "_measured_gap" : "");
}

std::string fmt(double v, const char* f = "%.4e") { return formatNumber(v, f); }

std::optional<double> present(double v) { return std::isnan(v) ? std::nullopt : std::optional<double>(v); }

/// A computed R_alpha the (eps, delta) conversions leave out: a number that is not reliable (truncated by the box, so
/// an underestimate, or resting on the scheme's noise floor) could give an eps below the truth. An infinite one is
/// used (+inf: that order gives nothing).
bool skippedByConversions(solver::RenyiStatus s) {
  return s != solver::RenyiStatus::Finite && s != solver::RenyiStatus::InfiniteDetected;
}

std::string gapText(models::GapKind kind) {
  return kind == models::GapKind::Measured ? "the measured gradient gap" : "the gradient gap S_g/n";
}

/// The columns of epsilon.csv: the eps_exact columns only where the run finds eps(delta) by root-finding
/// (observe() at the first output step, and restoreState() for a continued run); a minibatch case's composition
/// baseline (described by `minibatch`) has its own text and the accuracy column.
std::vector<io::Column> epsilonColumns(bool exactColumn, const std::optional<CompositionBaseline>& minibatch) {
  namespace u = io::units;
  std::vector<io::Column> columns{outputStepColumn(), outputTimeColumn(),
                                  io::real("delta", u::kOne, "The delta of privacy.delta_grid.")};
  if (exactColumn)
    columns.insert(columns.end(),
                   {io::real("eps_exact", u::kNats, "The smallest eps at this delta for the pair (larger direction)."),
                    io::real("eps_exact_pq", u::kNats, "The smallest eps with int max(p - e^eps q, 0) <= delta."),
                    io::real("eps_exact_qp", u::kNats, "The smallest eps with int max(q - e^eps p, 0) <= delta."),
                    io::status("eps_exact_status", "How eps_exact was found.", exactEpsilonStatusCodes())});
  const auto conversion = [](const std::string& name, const std::string& whose) {
    return io::real(name, u::kNats, "eps from " + whose + ".");
  };
  columns.insert(columns.end(),
                 {conversion("eps_rdp_mironov", "Mironov's conversion of the computed R_alpha, the larger direction "
                                                "(an upper bound only where accuracy.csv certifies "
                                                "eps_rdp_mironov_delta_<delta>; else take its conservative value)"),
                  io::real("eps_rdp_mironov_order", u::kOne, "The order that minimises eps_rdp_mironov."),
                  conversion("eps_rdp_cks", "the CKS conversion of the computed R_alpha, the larger direction "
                                            "(an upper bound only where accuracy.csv certifies "
                                            "eps_rdp_cks_delta_<delta>; else take its conservative value)"),
                  io::real("eps_rdp_cks_order", u::kOne, "The order that minimises eps_rdp_cks."),
                  conversion("eps_rdp_mironov_pq", "Mironov's conversion of R_alpha(p || q)"),
                  conversion("eps_rdp_mironov_qp", "Mironov's conversion of R_alpha(q || p)"),
                  conversion("eps_rdp_cks_pq", "the CKS conversion of R_alpha(p || q)"),
                  conversion("eps_rdp_cks_qp", "the CKS conversion of R_alpha(q || p)")});
  for (int item = 1; item <= 8; ++item)
    for (auto kind : kKinds) {
      const std::string bound = "bound " + std::to_string(item) + " (" + models::PrivacyBounds::info(item).name +
                                ") on R_alpha with " + gapText(kind);
      columns.push_back(conversion("eps_" + stem(item, kind) + "_mironov", "Mironov's conversion of " + bound));
      columns.push_back(conversion("eps_" + stem(item, kind) + "_cks", "the CKS conversion of " + bound));
    }
  // The accountants' baseline: every iterate released, exact Gaussian composition (models/GaussianComposition.hpp).
  if (!minibatch) {
    columns.insert(columns.end(),
                   {conversion("eps_composition", "the exact composition of the Gaussian mechanisms of every iterate"),
                    io::real("composition_mu", u::kOne, "The mu of the mu-GDP composition behind eps_composition.")});
    return columns;
  }
  // Minibatches (app/run/DpSgdAccounting.hpp): the relation is stated in the text; Poisson's eps is the PLD accountant's
  // certified (pessimistic) value and the accuracy its gap to the optimistic one.
  columns.insert(columns.end(),
                 {conversion("eps_composition", "every iterate released: " + minibatch->description() +
                                                    (minibatch->poisson() ? "; certified upper bound" : "")),
                  io::real("composition_mu", u::kOne,
                           "The mu of the mu-GDP composition behind eps_composition (NaN: not GDP, Poisson)."),
                  io::real("eps_composition_accuracy", u::kNats,
                           "eps_composition minus the accountant's optimistic eps (0 for the exact closed form).")});
  return columns;
}
constexpr std::size_t kExactColumns = 4;  // eps_exact, _pq, _qp, _status
constexpr std::size_t kRdpColumns = 8;    // eps_rdp_*

/// The computed R_alpha the conversions may use: skipped orders enter as missing (NaN).
std::vector<double> usableRenyi(const std::vector<double>& renyi, const std::vector<solver::RenyiStatus>& status) {
  std::vector<double> r = renyi;
  for (std::size_t k = 0; k < r.size(); ++k)
    if (k < status.size() && skippedByConversions(status[k])) r[k] = kNaN;
  return r;
}

}  // namespace

std::string exactEpsilonStatusCodes() {
  std::vector<std::string> names;
  for (int code = 0; code <= static_cast<int>(models::ExactEpsilonStatus::NoiseLimited); ++code)
    names.push_back(models::exactEpsilonStatusName(static_cast<models::ExactEpsilonStatus>(code)));
  return io::codeTable(names);
}

const solver::ExactEpsilonAtDelta* exactEpsilonAt(const solver::DivergenceValues& v, double delta) {
  for (const auto& e : v.exactEpsilon)
    if (e.delta == delta) return &e;
  return nullptr;
}

models::EpsilonAtDelta PairConversion::pair() const {
  if (std::isnan(pq.epsilon) || std::isnan(qp.epsilon)) return {kNaN, kNaN};
  return qp.epsilon > pq.epsilon ? qp : pq;
}

std::pair<PairConversion, PairConversion> computedRdpEpsilon(const std::vector<double>& orders,
                                                             const solver::DivergenceValues& v, double delta) {
  if (v.reverse.renyi.size() != v.renyi.size())
    throw std::logic_error("PrivacyOutput: the divergences carry no R_alpha(q || p) "
                           "(solver::FunctionalSettings::reverseDirection); eps needs both directions (MATH.md §7)");
  const auto pq = usableRenyi(v.renyi, v.renyiStatus), qp = usableRenyi(v.reverse.renyi, v.reverse.renyiStatus);
  return {PairConversion{models::mironovEpsilon(orders, pq, delta), models::mironovEpsilon(orders, qp, delta)},
          PairConversion{models::cksEpsilon(orders, pq, delta), models::cksEpsilon(orders, qp, delta)}};
}

models::BoundProblem boundProblem(const Case& c, const std::optional<double>& strongConvexity,
                                  const std::optional<double>& smoothness, std::optional<double> worstCaseGap,
                                  double measuredGap) {
  const int d = c.mesh.dim;
  models::BoundProblem p;
  p.noisyGd = c.dynamics == "noisy_gd";
  p.eta = p.noisyGd ? c.noisyGd.eta : 0.0;
  p.strongConvexity = strongConvexity;
  p.smoothness = smoothness;
  p.quadraticLoss = c.loss.type == "quadratic";
  p.quadraticLambda = p.quadraticLoss ? c.loss.lambda : 0.0;
  p.clipped = p.noisyGd && c.noisyGd.clipNorm.has_value();
  p.constrained = p.noisyGd && !c.noisyGd.constraintSet.isNone();
  p.Sigma = c.noise.sigmaFor(false, d);
  p.SigmaPrime = p.noisyGd ? p.Sigma : c.noise.sigmaFor(true, d);  // noisy GD: one noise for both
  p.startCovariance = c.initial.covariance;
  p.worstCaseGap = worstCaseGap;
  p.measuredGap = measuredGap;
  return p;
}

PrivacyOutput::PrivacyOutput(const Case& c, models::BoundProblem problem, const std::string& directory, bool writer)
    : case_(c), bounds_(std::move(problem)), directory_(directory), writer_(writer) {
  if (c.dynamics == "noisy_gd" && c.batch.sampling != "full")
    minibatchReason_ = "batch.sampling = \"" + c.batch.sampling +
                       "\": the bound is stated for full-batch noisy GD (MATH.md §5); minibatch noisy SGD (§8) "
                       "changes the per-step gradient gap and its distribution, and no bound for it is derived here";
  setUpComposition();
  for (const auto& o : c.divergence.orders) orders_.push_back(o.alpha);
  namespace u = io::units;
  boundColumns_ = {outputStepColumn(), outputTimeColumn()};
  for (int item = 1; item <= 8; ++item)
    for (auto kind : kKinds)
      for (const auto& o : c.divergence.orders)
        boundColumns_.push_back(io::real(stem(item, kind) + "_renyi_" + o.label, u::kNats,
                                         "Bound " + std::to_string(item) + " (" +
                                             models::PrivacyBounds::info(item).name + ") on R_" + o.label +
                                             " with " + gapText(kind) + " (NaN where it does not apply)."));
  for (auto kind : kKinds) {
    boundColumns_.push_back(io::real(stem(9, kind) + "_kl", u::kNats,
                                     "Bound 9 on KL with " + gapText(kind) + " (NaN where it does not apply)."));
    boundColumns_.push_back(io::real(stem(9, kind) + "_tv", u::kOne,
                                     "Pinsker's bound on TV from bound 9 with " + gapText(kind) +
                                         " (NaN where it does not apply)."));
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& info : models::PrivacyBounds::catalogue())
    for (auto kind : kKinds) {
      const auto& a = applicability(info.item, kind);
      rows.push_back({std::to_string(info.item), stem(info.item, kind), info.name,
                      kind == models::GapKind::Measured ? "measured" : "S_g/n", a.applies ? "yes" : "no", a.reason,
                      info.source, info.assumptions});
    }
  applicabilityText_ = io::textCsv(
      {"item", "label", "name", "gap", "applies", "reason_or_qualification", "source", "assumptions"}, rows);
  if (writer_) {
    boundsCsv_.emplace(directory + "/bounds.csv", io::columnNames(boundColumns_));
    io::writeWholeFile(directory + "/bound_applicability.csv", applicabilityText_);
  }
}

void PrivacyOutput::observe(long step, double t, const solver::DivergenceValues& v) {
  // bounds.csv
  std::vector<double> row{static_cast<double>(step), t};
  for (int item = 1; item <= 8; ++item)
    for (auto kind : kKinds)
      for (double a : orders_) row.push_back(boundRenyi(item, kind, a, step, t));
  for (auto kind : kKinds) {
    row.push_back(boundKl(kind, step, t));
    row.push_back(boundTv(kind, step, t));
  }
  boundRows_.push_back(row);
  if (boundsCsv_) {
    std::vector<std::optional<double>> cells;
    for (double x : row) cells.push_back(present(x));
    boundsCsv_->addRowWithMissing(cells);
  }

  // epsilon.csv: the exact columns exist iff the divergences carry eps(delta) roots.
  if (!epsilonOpened_) {
    exactColumn_ = !v.exactEpsilon.empty();
    epsilonColumns_ = epsilonColumns(exactColumn_, minibatch_);
    if (writer_) epsilonCsv_.emplace(directory_ + "/epsilon.csv", io::columnNames(epsilonColumns_));
    epsilonOpened_ = true;
  }
  std::vector<std::vector<double>> boundOnRenyi;  // per (item, kind): R_alpha on the order grid
  for (int item = 1; item <= 8; ++item)
    for (auto kind : kKinds) {
      std::vector<double> r;
      for (double a : orders_) r.push_back(boundRenyi(item, kind, a, step, t));
      boundOnRenyi.push_back(r);
    }
  const double mu = compositionMu(t);
  const auto minibatchEps = minibatch_ ? minibatch_->epsilons(step, case_.privacy.deltaGrid)
                                       : std::vector<models::PldEpsilon>{};
  for (std::size_t di = 0; di < case_.privacy.deltaGrid.size(); ++di) {
    const double delta = case_.privacy.deltaGrid[di];
    std::vector<double> e{static_cast<double>(step), t, delta};
    if (exactColumn_) {
      const auto* x = exactEpsilonAt(v, delta);
      if (!x) throw std::logic_error("PrivacyOutput: no eps(delta) root at delta = " + fmt(delta, "%.17g"));
      e.insert(e.end(), {x->pair.epsilon(), x->pair.pq.epsilon, x->pair.qp.epsilon,
                         static_cast<double>(static_cast<int>(x->pair.status()))});
    }
    const auto [m, k] = computedRdpEpsilon(orders_, v, delta);
    const auto mp = m.pair(), kp = k.pair();
    e.insert(e.end(), {mp.epsilon, mp.order, kp.epsilon, kp.order, m.pq.epsilon, m.qp.epsilon, k.pq.epsilon,
                       k.qp.epsilon});
    // The bounds (MATH.md §5) bound R_alpha of either direction alike (they are symmetric in D and D').
    for (const auto& r : boundOnRenyi) {
      const bool applies = !r.empty() && !std::isnan(r.front());
      e.push_back(applies ? models::mironovEpsilon(orders_, r, delta).epsilon : kNaN);
      e.push_back(applies ? models::cksEpsilon(orders_, r, delta).epsilon : kNaN);
    }
    if (!minibatch_)
      e.insert(e.end(), {models::gdpEpsilon(mu, delta), mu});
    else
      e.insert(e.end(), {minibatchEps[di].pessimistic, minibatch_->mu(step),
                         minibatchEps[di].pessimistic - minibatchEps[di].optimistic});
    epsilonRows_.push_back(e);
    if (epsilonCsv_) {
      std::vector<std::optional<double>> cells;
      for (double x : e) cells.push_back(present(x));
      epsilonCsv_->addRowWithMissing(cells);
    }
  }
  lastStep_ = step;
  lastT_ = t;
  last_ = v;
}

void PrivacyOutput::saveState(io::CheckpointData& ck) const {
  ck.putTable("/privacy/bound_rows", boundRows_, boundColumns_.size());
  ck.putScalar("/privacy/epsilon_opened", epsilonOpened_ ? 1 : 0);
  ck.putScalar("/privacy/exact_column", exactColumn_ ? 1 : 0);
  ck.putTable("/privacy/epsilon_rows", epsilonRows_, epsilonOpened_ ? epsilonColumns_.size() : 0);
}

void PrivacyOutput::restoreState(const io::CheckpointData& ck, long step, double t, const solver::DivergenceValues& v,
                                 std::size_t outputSteps) {
  boundRows_ = ck.table("/privacy/bound_rows", boundColumns_.size(), outputSteps);
  epsilonOpened_ = ck.integer("/privacy/epsilon_opened", 0, 1) == 1;
  exactColumn_ = ck.integer("/privacy/exact_column", 0, 1) == 1;
  if (epsilonOpened_ != (outputSteps > 0)) ck.fail("/privacy/epsilon_opened", "disagrees with the output steps");
  if (exactColumn_ != !v.exactEpsilon.empty())
    ck.fail("/privacy/exact_column", "disagrees with this run's eps(delta) roots");
  // The columns as observe() makes them at the first output step.
  epsilonColumns_ = epsilonColumns(exactColumn_, minibatch_);
  epsilonRows_ = ck.table("/privacy/epsilon_rows", epsilonOpened_ ? epsilonColumns_.size() : 0,
                          outputSteps * case_.privacy.deltaGrid.size());
  if (writer_ && epsilonOpened_) epsilonCsv_.emplace(directory_ + "/epsilon.csv", io::columnNames(epsilonColumns_));
  lastStep_ = step;
  lastT_ = t;
  last_ = v;
}

void PrivacyOutput::writeHdf5(io::Hdf5Output& h5) {
  h5.writeTable("bounds", boundColumns_, boundRows_,
                {{"applicability", "The text of bound_applicability.csv: which bound applies, and why not.",
                  applicabilityText_}});
  if (!epsilonOpened_) return;
  // /epsilon: the rows (output step, delta) as [output steps, deltas] arrays; step and t per output step, delta per
  // delta of the grid (the same at every step).
  const std::size_t D = case_.privacy.deltaGrid.size(), S = D ? epsilonRows_.size() / D : 0;
  if (S * D != epsilonRows_.size()) throw std::logic_error("PrivacyOutput: epsilon rows are not output steps x deltas");
  std::vector<io::Hdf5Output::Array> arrays;
  for (std::size_t c = 0; c < epsilonColumns_.size(); ++c) {
    const io::Column& column = epsilonColumns_[c];
    io::Hdf5Output::Array a{column, {S, D}, {}};
    if (column.name == "step" || column.name == "t") {
      a.shape = {S};
      for (std::size_t s = 0; s < S; ++s) a.values.push_back(epsilonRows_[s * D][c]);
    } else if (column.name == "delta") {
      a.shape = {D};
      for (std::size_t j = 0; j < D; ++j) a.values.push_back(epsilonRows_[j][c]);
    } else {
      for (const auto& row : epsilonRows_) a.values.push_back(row[c]);
    }
    arrays.push_back(std::move(a));
  }
  h5.writeArrays("epsilon", arrays);
}

void PrivacyOutput::close() {
  boundsCsv_.reset();
  epsilonCsv_.reset();
}

void PrivacyOutput::summary(std::ostream& s, const std::string& epsAccuracy, const std::string& rdpAccuracy) const {
  if (lastStep_ < 0) return;
  const auto& orderSpec = case_.divergence.orders;
  // The last order of divergence.orders whose computed R_alpha is trustworthy (finite status); the last order if none.
  std::size_t shown = orderSpec.size() - 1;
  for (std::size_t k = orderSpec.size(); k-- > 0;)
    if (k < last_.renyiStatus.size() && last_.renyiStatus[k] == solver::RenyiStatus::Finite) {
      shown = k;
      break;
    }
  const double alpha = orders_[shown];
  char b[512];
  s << "\n  bounds on R_" << orderSpec[shown].label
    << " at the end (MATH.md §5; every order and step: bounds.csv; reasons: bound_applicability.csv)\n";
  std::snprintf(b, sizeof b, "    %-40s %-22s %s\n", "computed", fmt(last_.renyi[shown]).c_str(), "");
  s << b;
  if (!minibatchReason_.empty()) s << "    none applies: " << minibatchReason_ << "\n";
  else {
    std::snprintf(b, sizeof b, "    %-40s %-22s %s\n", "bound", "with S_g/n", "with the measured gap");
    s << b;
    for (const auto& info : models::PrivacyBounds::catalogue()) {
      std::string name = std::to_string(info.item) + " " + info.name;
      std::string cells[2];
      for (int k = 0; k < 2; ++k) {
        const auto& a = applicability(info.item, kKinds[k]);
        if (!a.applies) {
          cells[k] = "n/a";
          continue;
        }
        const double val = info.item == 9 ? boundKl(kKinds[k], lastStep_, lastT_)
                                          : boundRenyi(info.item, kKinds[k], alpha, lastStep_, lastT_);
        cells[k] = (info.item == 9 ? "KL <= " : "") + fmt(val);
      }
      std::snprintf(b, sizeof b, "    %-40s %-22s %s\n", name.c_str(), cells[0].c_str(), cells[1].c_str());
      s << b;
      const auto& w = applicability(info.item, kKinds[0]);
      const auto& m = applicability(info.item, kKinds[1]);
      if (!w.applies && !m.applies && w.reason == m.reason)
        s << "        not applicable: " << w.reason << "\n";
      else {
        if (!w.applies) s << "        S_g/n not applicable: " << w.reason << "\n";
        if (!m.applies) s << "        measured gap not applicable: " << m.reason << "\n";
      }
    }
    {
      const auto& P = bounds_.problem();
      if (P.strongConvexity && *P.strongConvexity > 0) {
        s << "    LSI constants: CYS Lemma 5 c = lambda/(2 sigma^2) = " << fmt(*P.strongConvexity / (2 * bounds_.sigma2()))
          << " (item 3); c* = " << fmt(models::sharpenedLsiConstant(P.noisyGd, *P.strongConvexity, bounds_.sigma2(), P.eta))
          << " (item 2, docs/bounds.md §2; Lemma 5's factor 2 is conservative)\n";
      }
    }
    if (applicability(9, kKinds[1]).applies)
      s << "    (TV <= sqrt(KL bound/2) = " << fmt(boundTv(kKinds[1], lastStep_, lastT_))
        << " with the measured gap; computed TV " << fmt(last_.tv) << ")\n";
  }

  // (eps, delta) at the user's delta, last output step.
  const double delta = case_.privacy.delta;
  const std::vector<double>* row = nullptr;
  for (const auto& r : epsilonRows_)
    if (static_cast<long>(r[0]) == lastStep_ && r[2] == delta) row = &r;
  if (!row) return;
  const std::size_t base = 3 + (exactColumn_ ? kExactColumns : 0);
  s << "\n  (eps, delta = " << fmt(delta, "%.3g")
    << ") at the end, the larger of the two directions D, D' and D', D (MATH.md §7; every delta and step: "
       "epsilon.csv)\n";
  std::snprintf(b, sizeof b, "    %-62s %-22s %s\n", "", "Mironov", "Canonne-Kamath-Steinke");
  s << b;
  if (exactColumn_) {
    const double eps = (*row)[3], pq = (*row)[4], qp = (*row)[5];
    const auto status = static_cast<models::ExactEpsilonStatus>(static_cast<int>((*row)[6]));
    std::string text = fmt(eps) + " (p||q " + fmt(pq) + ", q||p " + fmt(qp) + ")";
    if (status == models::ExactEpsilonStatus::Unreachable)
      text += ": delta(eps) > delta at every eps, the mass of one density where the other is 0 exceeds delta";
    else if (status == models::ExactEpsilonStatus::NotComputed)
      text += ": not computed, the densities are not finite";
    else if (status == models::ExactEpsilonStatus::Zero)
      text += ": delta(0) = TV <= delta";
    else if (status == models::ExactEpsilonStatus::TruncatedSuspect && wallsAbsorb(case_))
      text += ": delta(eps) rests on the wall cells; the walls absorb, so the mass they removed bounds what the box "
              "cuts off (in accuracy.csv's estimate); widen the box for a closer value";
    else if (status == models::ExactEpsilonStatus::TruncatedSuspect)
      text += ": TRUNCATED? delta(eps) rests on the wall cells (the box cuts the tail that decides eps, which may be "
              "larger): widen the box";
    else if (status == models::ExactEpsilonStatus::NoiseLimited)
      text += ": NOISE-LIMITED: delta(eps) rests on cells at a density's noise floor (round-off), eps is not resolved "
              "at this delta (conservative value +inf)";
    s << "    eps exact (root of delta(eps) = delta by quadrature)" << std::string(11, ' ') << text << "\n";
    if (!epsAccuracy.empty()) s << "      " << epsAccuracy << "\n";
  } else {
    s << "    eps exact (root of delta(eps) = delta by quadrature)" << std::string(11, ' ')
      << "not computed: the run's divergences find no eps(delta) roots\n";
  }
  // NaN: no order gave a conversion (every one skipped as not reliable, listed below).
  auto rdp = [](double e) { return std::isnan(e) ? std::string("none") : fmt(e); };
  auto withOrder = [&](double e, double a) { return rdp(e) + (std::isnan(a) ? "" : " (alpha " + fmt(a, "%g") + ")"); };
  std::snprintf(b, sizeof b, "    %-62s %-22s %s\n", "from the computed R_alpha",
                withOrder((*row)[base], (*row)[base + 1]).c_str(), withOrder((*row)[base + 2], (*row)[base + 3]).c_str());
  s << b;
  std::snprintf(b, sizeof b, "    %-62s %-22s %s\n", "  of R_alpha(p||q)", rdp((*row)[base + 4]).c_str(),
                rdp((*row)[base + 6]).c_str());
  s << b;
  std::snprintf(b, sizeof b, "    %-62s %-22s %s\n", "  of R_alpha(q||p)", rdp((*row)[base + 5]).c_str(),
                rdp((*row)[base + 7]).c_str());
  s << b;
  if (!rdpAccuracy.empty()) s << "      " << rdpAccuracy << "\n";
  {
    std::string skipped;
    for (std::size_t k = 0; k < last_.renyiStatus.size() && k < orderSpec.size(); ++k)
      if (skippedByConversions(last_.renyiStatus[k]))
        skipped += (skipped.empty() ? "" : ", ") + orderSpec[k].label + " (" +
                   solver::renyiStatusName(last_.renyiStatus[k]) + ")";
    for (std::size_t k = 0; k < last_.reverse.renyiStatus.size() && k < orderSpec.size(); ++k)
      if (skippedByConversions(last_.reverse.renyiStatus[k]))
        skipped += (skipped.empty() ? "" : ", ") + orderSpec[k].label + " of q||p (" +
                   solver::renyiStatusName(last_.reverse.renyiStatus[k]) + ")";
    if (!skipped.empty()) s << "      orders skipped as not reliable (their eps could be too small): " << skipped << "\n";
  }
  std::size_t col = base + kRdpColumns;
  for (int item = 1; item <= 8; ++item)
    for (auto kind : kKinds) {
      const double mir = (*row)[col], cks = (*row)[col + 1];
      col += 2;
      if (std::isnan(mir) && std::isnan(cks)) continue;
      const std::string name = "from bound " + std::to_string(item) + " " + models::PrivacyBounds::info(item).name +
                               (kind == models::GapKind::Measured ? ", measured gap" : ", S_g/n");
      std::snprintf(b, sizeof b, "    %-62s %-22s %s\n", name.c_str(), fmt(mir).c_str(), fmt(cks).c_str());
      s << b;
    }
  compositionSummary(s, *row, col);
}

/// The summary's line of the accountants' baseline from the epsilon.csv row: the full-batch GDP composition or the
/// minibatch one (app/run/DpSgdAccounting), with its neighbouring relation.
void PrivacyOutput::compositionSummary(std::ostream& s, const std::vector<double>& row, std::size_t col) const {
  const double composition = row[col], mu = row[col + 1];
  if (minibatch_) {
    s << "    every iterate released (the accountants' composition, MATH.md §8; " << minibatch_->description()
      << "): ";
    if (!minibatch_->unavailable().empty())
      s << "not computed: " << minibatch_->unavailable() << "\n";
    else if (minibatch_->poisson() && std::isinf(composition))
      s << "eps +inf: the accountant's tail cuts and round-off allowance exceed delta here (conservative)\n";
    else if (minibatch_->poisson())
      s << "eps " << fmt(composition) << " (certified; optimistic " << fmt(composition - row[col + 2])
        << ", accuracy " << fmt(row[col + 2], "%.2e") << ")\n";
    else
      s << "eps " << fmt(composition) << ", mu = " << fmt(mu, "%.6g") << " over " << minibatch_->uses(lastStep_)
        << " uses of the record's batch\n";
    s << "    fpdp's eps above: the last iterate only, for the case's neighbours (" << models::toString(case_.neighbour.kind);
    if (case_.neighbour.kind != models::NeighbourKind::Add) s << " record " << case_.neighbour.index;
    s << ")\n";
    return;
  }
  s << "    every iterate released (the accountants' composition, exact GDP; MATH.md §8): ";
  if (std::isnan(mu)) s << "not computed: " << compositionUnavailable_ << "\n";
  else {
    s << "eps " << fmt(composition) << ", mu = " << fmt(mu, "%.6g");
    const auto& P = bounds_.problem();
    if (P.noisyGd && lastStep_ > 0)
      s << " (per step " << fmt(mu / std::sqrt(static_cast<double>(lastStep_)), "%.6g") << ": noise multiplier z = "
        << fmt(std::sqrt(static_cast<double>(lastStep_)) / mu, "%.6g") << ")";
    s << "\n";
  }
}

PrivacyHeadline PrivacyOutput::headline() const {
  PrivacyHeadline h;
  const double delta = case_.privacy.delta;
  const std::vector<double>* row = nullptr;
  for (const auto& r : epsilonRows_)
    if (static_cast<long>(r[0]) == lastStep_ && r[2] == delta) row = &r;
  if (!row || !exactColumn_) return h;
  h.available = true;
  h.step = lastStep_;
  h.t = lastT_;
  h.delta = delta;
  h.eps = (*row)[3];
  h.pq = (*row)[4];
  h.qp = (*row)[5];
  h.status = static_cast<models::ExactEpsilonStatus>(static_cast<int>((*row)[6]));
  const std::size_t col = 3 + kExactColumns + kRdpColumns + 8 * 2 * 2;  // after the bounds' conversions
  h.composition = (*row)[col];
  if (minibatch_) {
    h.compositionText = "every iterate released, " + minibatch_->description() +
                        (minibatch_->unavailable().empty() ? "" : ": not computed, " + minibatch_->unavailable());
  } else {
    h.compositionText = std::isnan(compositionMu(lastT_))
                            ? "every iterate released: not computed, " + compositionUnavailable_
                            : "every iterate released, exact Gaussian composition (mu = " +
                                  fmt(compositionMu(lastT_), "%.6g") + ")";
  }
  return h;
}

models::Applicability PrivacyOutput::applicability(int item, models::GapKind kind) const {
  if (!minibatchReason_.empty()) return {false, minibatchReason_};
  return bounds_.applicability(item, kind);
}

double PrivacyOutput::boundRenyi(int item, models::GapKind kind, double alpha, long step, double t) const {
  return minibatchReason_.empty() ? bounds_.renyi(item, kind, alpha, step, t) : kNaN;
}

double PrivacyOutput::boundKl(models::GapKind kind, long step, double t) const {
  return minibatchReason_.empty() ? bounds_.kl(kind, step, t) : kNaN;
}

double PrivacyOutput::boundTv(models::GapKind kind, long step, double t) const {
  return minibatchReason_.empty() ? bounds_.tv(kind, step, t) : kNaN;
}

void PrivacyOutput::setUpComposition() {
  const auto& P = bounds_.problem();
  if (P.noisyGd && case_.batch.sampling != "full") {
    const double n = static_cast<double>(case_.data.records.size());
    minibatch_.emplace(case_, P.worstCaseGap ? std::optional<double>(*P.worstCaseGap * n) : std::nullopt);
  }
  if (!minibatchReason_.empty()) {
    // The full-batch composition is not the minibatch mechanism's: minibatch_ gives that one (app/run/DpSgdAccounting).
    compositionUnavailable_ = "batch.sampling = \"" + case_.batch.sampling +
                              "\": the baseline composes full-batch Gaussian mechanisms, not this minibatch schedule";
  } else if (!P.worstCaseGap) {
    compositionUnavailable_ = "S_g/n is not known (give loss.sensitivity)";
  } else if (!P.noisyGd && (P.Sigma - P.SigmaPrime).norm() != 0.0) {
    compositionUnavailable_ = "Sigma != Sigma': the two paths' laws are mutually singular (eps = inf for the whole path)";
  } else {
    const double lambdaMin = Eigen::SelfAdjointEigenSolver<models::Matrix>(P.Sigma).eigenvalues().minCoeff();
    compositionMuAtUnitTime_ = models::gaussianCompositionMu(*P.worstCaseGap, 1.0, lambdaMin);
  }
}

double PrivacyOutput::compositionMu(double t) const { return compositionMuAtUnitTime_ * std::sqrt(t); }

void PrivacyOutput::summarize(SummaryPart part, const SummaryContext& at, std::ostream& out) const {
  if (part != SummaryPart::Privacy) return;
  const double delta = at.plan.c.privacy.delta;
  summary(out, accuracy_ ? accuracy_->epsNote(delta) : "", accuracy_ ? accuracy_->rdpNote(delta) : "");
  out << "\n";
}

}  // namespace fpdp::app
