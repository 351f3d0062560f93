#include "app/observers/AccuracyOutput.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "app/NumberFormat.hpp"
#include "app/observers/PrivacyOutput.hpp"
#include "app/observers/StepColumns.hpp"
#include "io/NumberText.hpp"

namespace fpdp::app {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kRoundOff = 1e-12;               // relative differences below this are round-off
constexpr double kAsymptoticRatio = 2.8284271247; // 2^1.5: observed order >= 1.5
/// The columns of hockey_stick_accuracy.csv and /hockey_stick_accuracy.
const std::vector<io::Column>& profileColumns() {
  static const std::vector<io::Column> columns = [] {
    namespace u = io::units;
    std::vector<io::Column> c{outputStepColumn(), outputTimeColumn(),
                              io::real("eps", u::kNats, "eps of the hockey-stick grid.")};
    const std::string codes = exactEpsilonStatusCodes();
    for (const char* dir : {"pq", "qp"}) {
      const std::string d = std::string("delta_") + dir, what = std::string("delta_") + dir + "(eps)";
      c.insert(c.end(),
               {io::real(d, u::kOne, "The run's value of " + what + "."),
                io::real(d + "_error_estimate", u::kOne, "The estimate of the discretisation error of " + what + "."),
                io::integer(d + "_certified", u::kOne, "1 where " + what + " is certified to accuracy.rtol, else 0."),
                io::real(d + "_conservative", u::kOne, "The conservative value of " + what + " (at most 1)."),
                io::status(d + "_status",
                           "Whether the companions can judge " + what +
                               " (0; 4 truncated_suspect, 5 noise_limited: not certified).",
                           codes)});
    }
    return c;
  }();
  return columns;
}
}  // namespace

NumberAccuracy numberAccuracy(double fine, double coarse, double coarser, double rtol, bool trusted,
                              double upperLimit, double largestRatio) {
  NumberAccuracy a{fine, kNaN, kNaN, false};
  const auto plusInf = [](double x) { return std::isinf(x) && x > 0; };
  if (plusInf(fine) && plusInf(coarse) && plusInf(coarser)) {  // +inf on every mesh: infinite
    a.estimate = 0.0;
    a.conservative = fine;
    a.certified = trusted;
    return a;
  }
  if (!std::isfinite(fine) || !std::isfinite(coarse) || !std::isfinite(coarser)) {
    a.conservative = std::isnan(fine) ? kNaN : upperLimit;  // nothing is known beyond the quantity's range
    return a;
  }
  const double d = std::fabs(fine - coarse), dCoarse = std::fabs(coarse - coarser);
  const double roundOff = kRoundOff * std::max(std::fabs(fine), std::numeric_limits<double>::min());
  bool asymptotic = false;
  bool preAsymptotic = false;  // before Richardson's range (see below): the estimate bounds nothing
  if (dCoarse <= roundOff) {  // the coarsest mesh already at round-off (the spectral routes)
    a.estimate = 2.0 * std::max(d, dCoarse);
    asymptotic = true;
  } else if (d >= dCoarse) {  // not converging: nothing bounds the error
    a.estimate = INFINITY;
  } else if (d == 0.0) {  // the two finer meshes agree to the last bit: the coarse pair's difference, extrapolated
    a.estimate = 2.0 * dCoarse / 3.0;
    asymptotic = true;
  } else {
    // With the order capped at 2 (r = 4), the fine error follows from the finer pair, d/(r - 1), and equally from
    // the coarser one, dCoarse/(r (r - 1)) = dCoarse/12. An observed ratio above 4 is either a faster route or two
    // finer meshes agreeing by chance while the coarsest is not yet asymptotic (seen for eps_exact at small delta on
    // 32^2): only the coarser pair's difference then bounds the error, so the larger of the two is taken.
    const double r = dCoarse / d;
    a.estimate = 2.0 * std::max(d / (std::min(r, 4.0) - 1.0), dCoarse / 12.0);
    // The asymptotic range of the route's order p: 2^1.5 <= r <= 2^(p + 0.5). A ratio beyond it is not that order
    // converging but errors of different signs or sizes meeting by chance (measured: r = 8.5 on the default case's
    // delta(1.85) at t = 2.8, whose estimate was 2.4 times too small).
    asymptotic = r >= kAsymptoticRatio && r <= largestRatio;
    // Faster than the route's order with the coarsest mesh far off (beyond 10 % of the value): the finer pair agrees
    // by chance and the coarsest is not asymptotic either, so the coarser pair's term bounds nothing (measured: R_10
    // 3.20, 3.10, 0.47 on 48, 24, 12 cells, r = 27, value + estimate 3.63 against the closed form 9.58). A guard, not
    // a bound: on the default case eps(1e-5) has r = 15 with the coarsest 1.9 % off and an estimate that covers it.
    preAsymptotic = r < kAsymptoticRatio || (r > largestRatio && dCoarse > 0.1 * std::fabs(fine));
  }
  // Meshes converging more slowly than order 1.5 are not yet in Richardson's range, where the error may still be
  // much larger than their differences: the estimate is kept (it says how far the meshes disagree), but the
  // conservative value is the quantity's limit (measured on 48 cells: R_10 2.12 with value + estimate 5.53 against
  // the closed form 8.78). Ratios above the range keep value + estimate, guarded by the coarser pair's term.
  a.conservative = preAsymptotic ? upperLimit : std::min(fine + a.estimate, upperLimit);
  a.certified = trusted && asymptotic && a.estimate <= rtol * std::fabs(fine);
  return a;
}

double largestConvergenceRatio(const Case& c) {
  if (c.dynamics == "noisy_gd" && c.noisyGd.diffusion == "chapman_kolmogorov") return INFINITY;  // spectral
  const double order = c.dynamics == "noisy_gd" || c.solver.spatial_order == 2 ? 2.0 : 4.0;
  return std::pow(2.0, order + 0.5);
}

AccuracyOutput::AccuracyOutput(const std::string& directory, bool writer, const Case& c, std::vector<double> eps,
                               CompanionValues companion)
    : case_(c), companion_(std::move(companion)), largestRatio_(largestConvergenceRatio(c)) {
  // The numbers estimated: name, units, what they are.
  namespace u = io::units;
  struct Quantity {
    std::string name, units, what;
  };
  std::vector<Quantity> quantities{{"kl", u::kNats, "KL(p || q)"}, {"tv", u::kOne, "the total variation distance"}};
  for (const auto& o : c.divergence.orders)
    quantities.push_back({"renyi_" + o.label, u::kNats, "R_" + o.label + "(p || q)"});
  for (double delta : c.privacy.deltaGrid)
    quantities.push_back({"eps_exact_delta_" + io::shortestText(delta), u::kNats,
                          "eps_exact at delta = " + io::shortestText(delta)});
  columns_ = {outputStepColumn(), outputTimeColumn()};
  for (const auto& q : quantities) {
    names_.push_back(q.name);
    columns_.insert(columns_.end(),
                    {io::real(q.name, q.units, "The run's value of " + q.what + "."),
                     io::real(q.name + "_error_estimate", q.units,
                              "The estimate of the discretisation error of " + q.what + " (NaN: none)."),
                     io::integer(q.name + "_certified", u::kOne,
                                 "1 where " + q.what + " is certified to accuracy.rtol, else 0."),
                     io::real(q.name + "_conservative", q.units,
                              "The conservative value of " + q.what + ", the value plus the estimate.")});
  }
  if (writer) csv_.emplace(directory + "/accuracy.csv", io::columnNames(columns_));
  eps_ = std::move(eps);
  if (writer && !eps_.empty())
    profileCsv_.emplace(directory + "/hockey_stick_accuracy.csv", io::columnNames(profileColumns()));
}

std::array<const solver::DivergenceValues*, 2> AccuracyOutput::companionsAt(long step) const {
  std::array<const solver::DivergenceValues*, 2> coarse{nullptr, nullptr};
  for (int level = 0; level < 2; ++level)
    if (const auto it = companion_.atStep[level].find(step); it != companion_.atStep[level].end())
      coarse[static_cast<std::size_t>(level)] = &it->second;
  return coarse;
}

namespace {

/// The bounds on TV between the computed p (q) and the law they stand for, summed: the displacement lattice's and the
/// absorbing walls' removed mass (solver::DivergenceValues); absent where the run has neither.
std::optional<std::array<double, 2>> densityTvBound(const solver::DivergenceValues& v) {
  if (!v.mixtureTvBound && !v.absorbedMass) return std::nullopt;
  std::array<double, 2> m{0.0, 0.0};
  for (const auto& part : {v.mixtureTvBound, v.absorbedMass})
    if (part) m = {m[0] + (*part)[0], m[1] + (*part)[1]};
  return m;
}

/// Whether the companions can judge a delta(eps) of this hockey-stick status: a plain value, or one resting on the
/// wall cells where the walls absorb (the removed mass, in densityTvBound, covers what the box cuts off).
bool profileValueJudged(const solver::DivergenceValues& v, int status) {
  using S = models::ExactEpsilonStatus;
  return status == static_cast<int>(S::Root) ||
         (status == static_cast<int>(S::TruncatedSuspect) && v.absorbedMass.has_value());
}

/// Absorbing walls that removed more than kAbsorbedMassGuard of either density.
bool absorbedBeyondGuard(const std::optional<std::array<double, 2>>& absorbedMass) {
  return absorbedMass && std::max((*absorbedMass)[0], (*absorbedMass)[1]) > kAbsorbedMassGuard;
}

/// A Poisson displacement lattice's TV bound (docs/noisy-gd.md §9.2) added to a number's estimate: the conservative
/// value grows with it, and the number stays certified only if the sum is within rtol. Nothing without an estimate
/// (its conservative value is already the quantity's limit).
void addMixtureBound(NumberAccuracy& a, double bound, double rtol, double upperLimit) {
  if (std::isnan(a.estimate)) return;
  a.estimate += bound;
  a.conservative = std::min(std::max(a.conservative, a.value + a.estimate), upperLimit);
  a.certified = a.certified && a.estimate <= rtol * std::fabs(a.value);
}

/// A number resting on the box walls or on the noise floor: the companions share both, so their difference bounds
/// nothing of its error. Not certified; the error estimate +inf and the conservative value the quantity's limit.
void markUnbounded(NumberAccuracy& a, double upperLimit) {
  if (std::isnan(a.value)) return;
  a.estimate = INFINITY;
  a.conservative = upperLimit;
  a.certified = false;
}

}  // namespace

std::vector<NumberAccuracy> AccuracyOutput::evaluateProfile(long step, const solver::DivergenceValues& v) const {
  const auto coarse = companionsAt(step);
  const bool timeSeen = companion_.timeUnrefined.empty();
  std::vector<NumberAccuracy> out;
  for (std::size_t k = 0; k < eps_.size(); ++k)
    for (int dir = 0; dir < 2; ++dir) {
      const auto value = [k, dir](const solver::DivergenceValues* d) {
        if (!d) return kNaN;
        const auto& curve = dir == 0 ? d->hockeyStickPQ : d->hockeyStickQP;
        return k < curve.size() ? curve[k] : kNaN;
      };
      // A value resting on the walls or on the noise floor (or past the box's largest log-ratio at a wall) is not
      // bounded by the companions, which share the box: not certified, conservative value 1.
      const auto& statuses = dir == 0 ? v.hockeyStickStatusPQ : v.hockeyStickStatusQP;
      const bool judged = k < statuses.size() && profileValueJudged(v, statuses[k]);
      out.push_back(numberAccuracy(value(&v), value(coarse[0]), value(coarse[1]), case_.accuracy.rtol,
                                   timeSeen && judged, 1.0, largestRatio_));
      if (!judged) out.back().conservative = 1.0;
      // |delta_pq(eps) - delta~_pq(eps)| <= TV(p, p~) + e^eps TV(q, q~) (docs/noisy-gd.md §9.2).
      if (const auto tvBound = densityTvBound(v)) {
        const auto& m = *tvBound;
        const double bound = dir == 0 ? m[0] + std::exp(eps_[k]) * m[1] : m[1] + std::exp(eps_[k]) * m[0];
        addMixtureBound(out.back(), bound, case_.accuracy.rtol, 1.0);
      }
    }
  giveUpAfterFaults(out, [](std::size_t) { return 1.0; });
  return out;
}

std::vector<NumberAccuracy> AccuracyOutput::evaluate(long step, const solver::DivergenceValues& v,
                                                     const std::vector<NumberAccuracy>& profile) const {
  const auto coarse = companionsAt(step);
  const auto at = [&](std::size_t level, auto member) { return coarse[level] ? member(*coarse[level]) : kNaN; };
  const auto renyi = [](std::size_t k) {
    return [k](const solver::DivergenceValues& c) { return k < c.renyi.size() ? c.renyi[k] : kNaN; };
  };
  const double rtol = case_.accuracy.rtol;
  std::vector<NumberAccuracy> out;
  const auto kl = [](const solver::DivergenceValues& c) { return c.kl; };
  const auto tv = [](const solver::DivergenceValues& c) { return c.tv; };
  // A time error the companions share is not in the estimate: nothing is certified then.
  const bool timeSeen = companion_.timeUnrefined.empty();
  // A KL or TV that rests on the wall cells is not bounded by the companions, which share the box (as R_alpha's
  // truncated_suspect). TV = delta(0): the hockey-stick profile's status at eps = 0 says it, judged as the profile
  // is. Seen: a box cutting 5 % of the initial density gave KL 7 % and R_10 16 % below the closed form, R_alpha
  // flagged and KL "certified".
  const bool klOnWalls = v.klBoundaryShare > solver::DivergenceFunctionals::kBoundaryShareTolerance;
  const bool tvOnWalls = !v.hockeyStickStatusPQ.empty() && !eps_.empty() && eps_.front() == 0.0 &&
                         !profileValueJudged(v, v.hockeyStickStatusPQ.front());
  out.push_back(numberAccuracy(v.kl, at(0, kl), at(1, kl), rtol, timeSeen, INFINITY, largestRatio_));
  if (klOnWalls) markUnbounded(out.back(), INFINITY);
  out.push_back(numberAccuracy(v.tv, at(0, tv), at(1, tv), rtol, timeSeen, 1.0, largestRatio_));
  if (tvOnWalls) markUnbounded(out.back(), 1.0);
  for (std::size_t k = 0; k < v.renyi.size(); ++k) {
    const bool trusted = timeSeen && (k >= v.renyiStatus.size() || v.renyiStatus[k] == solver::RenyiStatus::Finite ||
                                      v.renyiStatus[k] == solver::RenyiStatus::InfiniteDetected);
    out.push_back(numberAccuracy(v.renyi[k], at(0, renyi(k)), at(1, renyi(k)), rtol, trusted, INFINITY, largestRatio_));
    // truncated_suspect, noise_suspect: value + estimate bounded nothing (seen: R_10 53 % below the closed form,
    // its "conservative value" too).
    if (k < v.renyiStatus.size() && (v.renyiStatus[k] == solver::RenyiStatus::TruncatedSuspect ||
                                     v.renyiStatus[k] == solver::RenyiStatus::NoiseSuspect))
      markUnbounded(out.back(), INFINITY);
  }
  // eps_exact of the pair (the larger direction) at every delta of privacy.delta_grid.
  for (std::size_t j = 0; j < case_.privacy.deltaGrid.size(); ++j) {
    const auto eps = [j](const solver::DivergenceValues& c) {
      return j < c.exactEpsilon.size() ? c.exactEpsilon[j].pair.epsilon() : kNaN;
    };
    const bool computed = j < v.exactEpsilon.size() &&
                          v.exactEpsilon[j].pair.status() != models::ExactEpsilonStatus::NotComputed;
    // A root that rests on the walls or on the noise floor is not bounded by the companions (they share the box and
    // cannot resolve the noise): its conservative value is +inf.
    const auto status = j < v.exactEpsilon.size() ? v.exactEpsilon[j].pair.status() : models::ExactEpsilonStatus::NotComputed;
    const bool suspect = (status == models::ExactEpsilonStatus::TruncatedSuspect && !v.absorbedMass) ||
                         status == models::ExactEpsilonStatus::NoiseLimited;
    out.push_back(numberAccuracy(computed ? eps(v) : kNaN, at(0, eps), at(1, eps), rtol, computed && timeSeen,
                                 INFINITY, largestRatio_));
    if (suspect) markUnbounded(out.back(), INFINITY);
  }
  if (const auto tvBound = densityTvBound(v)) applyDensityTvBound(v, *tvBound, out);
  // eps = 0 (delta(0) = TV <= delta) is only as sure as TV: where TV's conservative value exceeds delta, eps may be
  // positive (measured: 0 on 24, 12 and 6 cells, certified, against the closed form 1.6e-3). Not certified then; the
  // conservative value is the smallest eps of the grid whose conservative delta(eps) is within delta both ways.
  for (std::size_t j = 0; j < case_.privacy.deltaGrid.size() && j < v.exactEpsilon.size(); ++j) {
    NumberAccuracy& a = out[2 + v.renyi.size() + j];
    const double delta = case_.privacy.deltaGrid[j];
    if (v.exactEpsilon[j].pair.status() != models::ExactEpsilonStatus::Zero || !(out[1].conservative > delta)) continue;
    double bound = INFINITY;
    for (std::size_t k = 0; k < eps_.size() && 2 * k + 1 < profile.size(); ++k)
      if (profile[2 * k].conservative <= delta && profile[2 * k + 1].conservative <= delta) {
        bound = eps_[k];
        break;
      }
    a.certified = false;
    a.conservative = std::max(a.conservative, bound);
    if (!std::isnan(a.estimate)) a.estimate = std::max(a.estimate, a.conservative - a.value);
  }
  giveUpAfterFaults(out, [&](std::size_t k) { return k == 1 ? 1.0 : INFINITY; });  // out: kl, tv, renyi..., eps...
  return out;
}

template <class Limit>
void AccuracyOutput::giveUpAfterFaults(std::vector<NumberAccuracy>& out, Limit upperLimit) const {
  if (!faults_ || faults_->faultsSoFar().empty()) return;
  for (std::size_t k = 0; k < out.size(); ++k) {
    out[k].certified = false;
    if (!std::isnan(out[k].value)) out[k].conservative = upperLimit(k);
  }
}

double epsilonShiftBound(const models::ExactEpsilon& root, double delta, std::span<const double> gridEps,
                         std::span<const double> gridDelta, double boundSelf, double boundOther) {
  using S = models::ExactEpsilonStatus;
  if (root.status == S::NotComputed || root.status == S::Unreachable || root.status == S::NoiseLimited ||
      !std::isfinite(root.epsilon) || !std::isfinite(root.deltaAtEpsilon))
    return INFINITY;
  const auto allowance = [&](double x) { return boundSelf + x * boundOther; };
  const double x0 = std::exp(root.epsilon), y0 = root.deltaAtEpsilon;
  if (y0 + allowance(x0) <= delta) return 0.0;
  for (std::size_t k = 0; k < gridEps.size() && k < gridDelta.size(); ++k) {
    if (!(gridEps[k] > root.epsilon) || !std::isfinite(gridDelta[k])) continue;
    const double xg = std::exp(gridEps[k]), yg = gridDelta[k];
    if (yg + allowance(xg) > delta) continue;
    // delta~ is convex in x = e^eps, so on [x0, xg] it lies below its chord; the chord plus the allowance (a line)
    // falls from above delta at x0 to at most delta at xg, and where it meets delta so has delta~ + allowance.
    const double slope = (yg - y0) / (xg - x0);
    const double x = (delta - y0 - boundSelf + slope * x0) / (slope + boundOther);
    const double xStar = std::clamp(x * (1.0 + 1e-12), x0, xg);  // the division's rounding, upwards
    return std::log(xStar) - root.epsilon;
  }
  return INFINITY;
}

void AccuracyOutput::applyDensityTvBound(const solver::DivergenceValues& v, const std::array<double, 2>& m,
                                         std::vector<NumberAccuracy>& out) const {
  const std::size_t orders = v.renyi.size();
  // KL and R_alpha (out: kl, tv, renyi..., eps...): a TV bound bounds nothing of them. The walls' removed mass does
  // not either, and the wall-share test of their statuses cannot see it (absorbing walls empty the cells beside them;
  // measured: R_10 2e-5 low with 5e-9 of the mass removed and every wall share below 1e-6): beyond
  // kAbsorbedMassGuard neither is certified.
  if (v.mixtureTvBound || absorbedBeyondGuard(v.absorbedMass))
    for (std::size_t k = 0; k < 2 + orders; ++k) {
      if (k == 1) continue;
      out[k].certified = false;
      out[k].conservative = INFINITY;
    }
  addMixtureBound(out[1], m[0] + m[1], case_.accuracy.rtol, 1.0);
  // eps(delta): each direction's root moved to where its delta~(eps) plus the bound falls to delta
  // (epsilonShiftBound), the larger of the two moved roots against the pair's value; +inf where none is found.
  for (std::size_t j = 0; j < case_.privacy.deltaGrid.size() && j < v.exactEpsilon.size(); ++j) {
    NumberAccuracy& a = out[2 + orders + j];
    if (std::isnan(a.value) || std::isnan(a.estimate)) continue;  // no estimate: conservative +inf already
    const double delta = case_.privacy.deltaGrid[j];
    const models::PairEpsilon& pair = v.exactEpsilon[j].pair;
    const double movedPQ = pair.pq.epsilon + epsilonShiftBound(pair.pq, delta, eps_, v.hockeyStickPQ, m[0], m[1]);
    const double movedQP = pair.qp.epsilon + epsilonShiftBound(pair.qp, delta, eps_, v.hockeyStickQP, m[1], m[0]);
    const double shift = std::max(movedPQ, movedQP) - a.value;
    a.estimate += std::max(0.0, std::isnan(shift) ? INFINITY : shift);
    a.conservative = std::max(a.conservative, a.value + a.estimate);
    a.certified = a.certified && a.estimate <= case_.accuracy.rtol * std::fabs(a.value);
  }
}

void AccuracyOutput::observe(const OutputStep& s) {
  const auto profile = evaluateProfile(s.step, s.values);
  last_ = evaluate(s.step, s.values, profile);
  absorbedMass_ = s.values.absorbedMass;
  faultsAtLast_ = faults_ ? faults_->faultsSoFar() : "";
  std::vector<double> row{static_cast<double>(s.step), s.t};
  for (const auto& a : last_) row.insert(row.end(), {a.value, a.estimate, a.certified ? 1.0 : 0.0, a.conservative});
  rows_.push_back(row);
  if (csv_) csv_->addRow(row);
  for (std::size_t k = 0; k < eps_.size(); ++k) {
    std::vector<double> r{static_cast<double>(s.step), s.t, eps_[k]};
    for (int dir = 0; dir < 2; ++dir) {
      const auto& a = profile[2 * k + static_cast<std::size_t>(dir)];
      const auto& statuses = dir == 0 ? s.values.hockeyStickStatusPQ : s.values.hockeyStickStatusQP;
      const double status = k < statuses.size() ? statuses[k] : kNaN;
      r.insert(r.end(), {a.value, a.estimate, a.certified ? 1.0 : 0.0, a.conservative, status});
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
  profileRows_ = ck.table("/accuracy/profile_rows", profileColumns().size(), at.outputSteps * eps_.size());
  last_ = evaluate(at.step, at.values, evaluateProfile(at.step, at.values));
  absorbedMass_ = at.values.absorbedMass;
  faultsAtLast_ = faults_ ? faults_->faultsSoFar() : "";
}

void AccuracyOutput::writeHdf5(io::Hdf5Output& h5) {
  h5.writeTable("accuracy", columns_, rows_,
                {{"companion_mesh", "The meshes of the companion solves.", companion_.meshDescription},
                 {"companion_time", "How the companion solves coarsened the time step (empty: not at all).",
                  companion_.timeDescription},
                 {"time_error_not_estimated", "Why a time error is not in the estimate (empty: it is).",
                  companion_.timeUnrefined},
                 {"unavailable", "Why there is no estimate (empty: there is one).", companion_.unavailable},
                 {"rtol", "accuracy.rtol, the relative tolerance of the certification.",
                  formatNumber(case_.accuracy.rtol, "%.17g")}});
  if (!eps_.empty())
    h5.writeTable("hockey_stick_accuracy", profileColumns(), profileRows_,
                  {{"companion_mesh", "The meshes of the companion solves.", companion_.meshDescription},
                   {"unavailable", "Why there is no estimate (empty: there is one).", companion_.unavailable}});
}

void AccuracyOutput::close() {
  csv_.reset();
  profileCsv_.reset();
}

std::string AccuracyOutput::epsNote(double delta) const {
  const std::string name = "eps_exact_delta_" + io::shortestText(delta);
  for (std::size_t k = 0; k < last_.size() && k < names_.size(); ++k)
    if (names_[k] == name && !last_[k].certified && !std::isnan(last_[k].value))
      return "NOT CERTIFIED to accuracy.rtol: use its conservative value " +
             formatNumber(last_[k].conservative, "%.4e") + " (accuracy.csv)";
  return "";
}

void AccuracyOutput::summary(std::ostream& s) const {
  s << "  accuracy (accuracy.rtol = " << formatNumber(case_.accuracy.rtol, "%g") << ", accuracy.csv): ";
  if (!companion_.unavailable.empty()) {
    s << "no estimate: " << companion_.unavailable << "; no number is certified\n";
    return;
  }
  s << "companion solves on " << companion_.meshDescription
    << (companion_.timeDescription.empty() ? "" : " with " + companion_.timeDescription) << "\n";
  if (!companion_.timeUnrefined.empty()) s << "    no number is certified: " << companion_.timeUnrefined << "\n";
  if (!faultsAtLast_.empty())
    s << "    no number is certified: numerical faults beyond their default tolerances (" << faultsAtLast_
      << ") did not stop the run (docs/faults.md); conservative values are the quantities' limits\n";
  if (absorbedBeyondGuard(absorbedMass_))
    s << "    the walls removed p " << formatNumber((*absorbedMass_)[0], "%.3e") << ", q "
      << formatNumber((*absorbedMass_)[1], "%.3e")
      << " of the mass: a bound on TV, delta(eps) and eps (in their estimates), none on KL and R_alpha (beyond "
      << formatNumber(kAbsorbedMassGuard, "%g") << ": not certified, conservative +inf; widen the box)\n";
  std::vector<std::string> uncertified;
  const std::string shownEps = "eps_exact_delta_" + io::shortestText(case_.privacy.delta);
  int hiddenEps = 0, hiddenEpsUncertified = 0;  // numbers left out of the summary
  for (std::size_t k = 0; k < last_.size() && k < names_.size(); ++k) {
    const auto& a = last_[k];
    if (!a.certified) uncertified.push_back(names_[k]);
    // eps_exact at privacy.delta only, and of the dense order grid the orders the quantity table shows; the rest
    // are in accuracy.csv.
    const bool denseHidden = case_.divergence.denseOrders && names_[k].rfind("renyi_", 0) == 0 &&
                             names_[k] != "renyi_2" && names_[k] != "renyi_10" && names_[k] != "renyi_32" &&
                             names_[k] != "renyi_1024";
    if ((names_[k].rfind("eps_exact_delta_", 0) == 0 && names_[k] != shownEps) || denseHidden) {
      ++hiddenEps;
      if (!a.certified) ++hiddenEpsUncertified;
      continue;
    }
    s << "    " << names_[k] << " = " << formatNumber(a.value, "%.6e") << "  error estimate "
      << formatNumber(a.estimate, "%.1e") << "  ("
      << (a.value != 0.0 ? formatNumber(a.estimate / std::fabs(a.value), "%.1e") : std::string("-"))
      << " relative)  " << (a.certified ? "certified" : "NOT CERTIFIED, conservative value " +
                                                           formatNumber(a.conservative, "%.6e"))
      << "\n";
  }
  if (hiddenEps > 0)
    s << "    the other " << hiddenEps << " numbers (orders, deltas): " << hiddenEpsUncertified
      << " not certified (accuracy.csv)\n";
  if (uncertified.size() > 12) uncertified.assign({std::to_string(uncertified.size()) + " numbers"});
  if (!uncertified.empty()) {
    // Not a WARNING line: `fpdp validate` fails a run on those, and an uncertified number is reported with its
    // conservative value, not wrong.
    s << "  NOT CERTIFIED to accuracy.rtol at the end:";
    for (const auto& n : uncertified) s << " " << n;
    s << " (refine mesh.cells, or use the conservative values; docs/scheme.md §8)\n";
  }
}

}  // namespace fpdp::app
