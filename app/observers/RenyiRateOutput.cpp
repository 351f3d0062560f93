#include "app/observers/RenyiRateOutput.hpp"

#include "app/run/NumberFormat.hpp"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <stdexcept>

#include <Eigen/Eigenvalues>

#include "io/CsvTable.hpp"
#include "io/OutputFile.hpp"

namespace fpdp::app {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// status and lsi_status: the names in code order.
const std::vector<std::string> kStatusNames{"ok", "violation", "not_applicable"};

double statusCode(const std::string& s) {
  const auto it = std::find(kStatusNames.begin(), kStatusNames.end(), s);
  if (it == kStatusNames.end()) throw std::logic_error("RenyiRateOutput: no status " + s);
  return static_cast<double>(it - kStatusNames.begin());
}

const std::vector<io::Column>& columns() {
  namespace u = io::units;
  static const std::vector<io::Column> columns{
      // The contract of docs/output.md (read by fpdp validate): keep these first columns and their order.
      io::integer("step", u::kSteps, "The output step (Langevin) or the noisy-GD step k."),
      io::real("s", u::kTime, "The time within the noisy-GD step (0 for Langevin)."),
      io::real("t", u::kTime, "The time of the row."),
      io::real("alpha", u::kOne, "The Renyi order."),
      io::real("renyi", u::kNats, "The computed R_alpha(p || q)."),
      io::real("rate_finite_difference", u::kNatsPerTime, "d R_alpha/dt from neighbouring rows of the same order."),
      io::real("rate_identity", u::kNatsPerTime, "d R_alpha/dt from the rate identity by quadrature."),
      io::real("rate_abs_difference", u::kNatsPerTime, "abs(rate_identity - rate_finite_difference)."),
      io::real("lemma2_rhs_optimal_Sv", u::kNatsPerTime,
               "The right side of CYS Lemma 2 with the optimal gamma and S_v = S_g/n."),
      io::real("lemma2_rhs_half_Sv", u::kNatsPerTime,
               "The right side of CYS Lemma 2 with gamma = 1/2 and S_v = S_g/n."),
      io::real("lemma2_rhs_optimal_measured", u::kNatsPerTime,
               "The right side of CYS Lemma 2 with the optimal gamma and the measured gap."),
      io::real("lemma2_rhs_half_measured", u::kNatsPerTime,
               "The right side of CYS Lemma 2 with gamma = 1/2 and the measured gap."),
      io::real("margin_optimal_measured", u::kNatsPerTime,
               "lemma2_rhs_optimal_measured minus the larger of the two rate estimates."),
      io::real("sup_drift_gap", u::kDrift, "The measured S_v: the largest drift difference over the cells with mass."),
      io::real("Sv", u::kDrift, "S_g/n (NaN when unknown)."),
      io::real("c_eff", u::kPerParameterSquared, "The effective LSI constant of CYS Lemma 3."),
      io::real("c_theory", u::kPerParameterSquared,
               "The LSI constant lambda/(2 sigma^2) of CYS Lemma 5 (NaN where it does not hold)."),
      io::real("lsi_ratio", u::kOne, "c_eff / c_theory."),
      io::status("status", "Whether the row satisfies CYS Lemma 2.", io::codeTable(kStatusNames)),
      // Added after the contract's columns.
      io::real("rate_tolerance", u::kNatsPerTime, "The estimate of the discretisation error of the rate."),
      io::real("margin_optimal_Sv", u::kNatsPerTime, "lemma2_rhs_optimal_Sv minus the larger rate."),
      io::real("information_ratio", u::kPerParameterSquared, "I_alpha / E_alpha."),
      io::real("information_ratio_sigma", u::kPerTime, "I^Sigma_alpha / E_alpha."),
      io::real("cross_term", u::kPerTime, "X = E_q[r^alpha <grad log r, g1 - g2>] / E_alpha."),
      io::real("excluded_share", u::kOne, "The tilted share of the cells left out of I and X."),
      io::status("lsi_status", "Whether c_eff is at least c_theory.", io::codeTable(kStatusNames))};
  return columns;
}

std::string fmt(double v, const char* f = "%.4e") { return formatNumber(v, f); }
}  // namespace

RenyiRateOutput::RenyiRateOutput(const std::string& directory, int rank, const meshes::DistributedBoxMesh& mesh,
                                 RenyiRateSetup setup, std::shared_ptr<solver::LogRatioWorkspace> workspace)
    : directory_(directory),
      rank_(rank),
      mesh_(mesh),
      setup_(std::move(setup)),
      functional_(mesh, setup_.orders, setup_.sigma, std::move(workspace)) {
  sigmaMinEigenvalue_ = Eigen::SelfAdjointEigenSolver<models::Matrix>(setup_.sigma).eigenvalues().minCoeff();
  if (setup_.langevinGap && setup_.langevinGap->size() != static_cast<std::size_t>(mesh.owned().size()))
    throw std::invalid_argument("RenyiRateOutput: one drift gap per owned cell");
}

void RenyiRateOutput::add(long step, long segment, double s, double t, Vec u, const solver::DivergenceValues& v,
                          const std::vector<std::array<double, 3>>& gap) {
  const auto rate = functional_.evaluate(u, gap);
  for (std::size_t k = 0; k < setup_.orders.size(); ++k) {
    Row r;
    r.step = step, r.segment = segment, r.s = s, r.t = t, r.alpha = setup_.orders[k], r.order = k;
    r.renyi = v.renyi[k];
    r.dRenyiDAlpha = v.dRenyiDAlpha[k];
    r.renyiReliable = v.renyiStatus[k] == solver::RenyiStatus::Finite;
    r.rate = rate[k];
    rows_.push_back(r);
  }
}

void RenyiRateOutput::observeLangevin(long step, double t, Vec u, const solver::DivergenceValues& v) {
  add(step, 0, 0.0, t, u, v, *setup_.langevinGap);
}

void RenyiRateOutput::observeTracing(long k, const solver::TracingState& st, double t, Vec u,
                                     const solver::DivergenceValues& v) {
  // g1 - g2 = V_t - V'_t (MATH.md §2.2: d_t p' = div(p' V'_t) + ...); NaN where either is undefined.
  const int d = mesh_.dim();
  const auto& box = mesh_.box();
  const long n0 = box.cells(0), n1 = d > 1 ? box.cells(1) : 1;
  gapWork_.assign(static_cast<std::size_t>(mesh_.owned().size()), {0, 0, 0});
  mesh_.forEachOwnedCell([&](PetscInt i, PetscInt j, PetscInt k, PetscInt l) {
    const long natural = static_cast<long>(i) + n0 * (static_cast<long>(j) + n1 * static_cast<long>(k));
    for (int a = 0; a < d; ++a) {
      const auto at = static_cast<std::size_t>(natural) * static_cast<std::size_t>(d) + static_cast<std::size_t>(a);
      gapWork_[static_cast<std::size_t>(l)][a] = st.v[at] - st.vPrime[at];
    }
  });
  add(k, k, st.s, t, u, v, gapWork_);
}

void RenyiRateOutput::finish(io::Hdf5Output& h5) {
  // Finite difference of R_alpha between neighbouring rows of one segment and order: the derivative of the quadratic
  // through three neighbouring rows (central in the interior, one-sided second order at the segment's ends), the
  // plain difference when the segment has two rows, NaN with one.
  std::map<std::pair<long, std::size_t>, std::vector<std::size_t>> segments;
  for (std::size_t i = 0; i < rows_.size(); ++i) segments[{rows_[i].segment, rows_[i].order}].push_back(i);
  for (auto& [key, idx] : segments) {
    std::sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return rows_[a].t < rows_[b].t; });
    const std::size_t m = idx.size();
    for (std::size_t j = 0; j < m; ++j) {
      Row& r = rows_[idx[j]];
      if (m == 1) {
        r.finiteDifference = kNaN;
      } else if (m == 2) {
        r.finiteDifference = (rows_[idx[1]].renyi - rows_[idx[0]].renyi) / (rows_[idx[1]].t - rows_[idx[0]].t);
      } else {
        const std::size_t first = j == 0 ? 0 : (j + 1 == m ? m - 3 : j - 1);
        double x[3], y[3];
        for (int a = 0; a < 3; ++a) x[a] = rows_[idx[first + a]].t, y[a] = rows_[idx[first + a]].renyi;
        r.finiteDifference = solver::threePointDerivative(x, y, static_cast<int>(j - first));
      }
      if (!std::isfinite(r.finiteDifference)) r.finiteDifference = kNaN;
    }
  }
  // Lemma 2, the margin, c_eff (docs/rate.md §3).
  for (Row& r : rows_) {
    const auto& e = r.rate;
    const double alpha = r.alpha;
    const double B = alpha * e.informationRatioSigma;
    const double aMeasured = alpha * e.supDriftGapSigma * e.supDriftGapSigma / 4.0;
    const double aSv = setup_.sv ? alpha * *setup_.sv * *setup_.sv / (4.0 * sigmaMinEigenvalue_) : kNaN;
    r.rhsOptimalMeasured = solver::lemma2RightSide(aMeasured, B);
    r.rhsHalfMeasured = solver::lemma2RightSide(aMeasured, B, 0.5);
    r.rhsOptimalSv = solver::lemma2RightSide(aSv, B);
    r.rhsHalfSv = solver::lemma2RightSide(aSv, B, 0.5);
    const double identity = e.rateIdentity;
    const double rate = std::isfinite(r.finiteDifference) ? std::max(identity, r.finiteDifference) : identity;
    r.marginOptimalMeasured = r.rhsOptimalMeasured - rate;
    r.marginOptimalSv = r.rhsOptimalSv - rate;
    const double gap = std::isfinite(r.finiteDifference) ? std::fabs(identity - r.finiteDifference) : 0.0;
    const double scale = B + std::fabs(alpha * e.cross) + 2.0 * std::sqrt(std::max(aMeasured * B, 0.0));
    const double termScale = B + std::fabs(alpha * e.cross);
    // The cells left out of I and X (excluded_share of the tilted mass) are assumed to carry terms of the same size.
    const double excluded = std::isfinite(e.excludedShare) ? e.excludedShare : 0.0;
    r.tolerance = kSafetyFactor * gap + kRoundOff * scale + excluded * termScale;
    // Rows that cannot check the inequality: the identity does not apply, R_alpha is not finite or not reliable (the
    // divergences' status), the information is undefined on a non-negligible tilted share, or the two rate estimates
    // disagree by more than kUnresolvedGap of the terms' magnitude (unresolved densities, e.g. a point-mass start).
    if (!setup_.identityNotApplicable.empty()) r.reason = setup_.identityNotApplicable;
    else if (!functional_.unavailable().empty()) r.reason = functional_.unavailable();
    else if (!std::isfinite(r.renyi) || !r.renyiReliable || !std::isfinite(identity))
      r.reason = "R_alpha not finite or not reliable (renyi.csv status)";
    else if (!(e.excludedShare <= kExcludedShareLimit))
      r.reason = "grad log r or the drift undefined on a tilted share > 1e-3 (excluded_share)";
    else if (termScale > 0 && gap > kUnresolvedGap * termScale)
      r.reason = "the two rate estimates differ by more than half the terms' size (unresolved densities)";
    if (!r.reason.empty()) {
      r.status = "not_applicable";
    } else {
      const bool violated = r.marginOptimalMeasured < -r.tolerance ||
                            (std::isfinite(r.marginOptimalSv) && r.marginOptimalSv < -r.tolerance);
      r.status = violated ? "violation" : "ok";
    }
    r.cEff = solver::effectiveLsiConstant(alpha, e.informationRatio, r.renyi, r.dRenyiDAlpha);
    r.lsiRatio = setup_.cTheory ? r.cEff / *setup_.cTheory : kNaN;
    if (!setup_.cTheory || !std::isfinite(r.lsiRatio) || !r.reason.empty()) {
      r.lsiStatus = "not_applicable";
    } else {
      // Relative tolerance: the relative discrepancy of the two rates (the discretisation error of the same
      // quadrature quantities I/E, R, dR/dalpha enter c_eff), times the safety factor, plus round-off.
      const double relative = std::isfinite(r.finiteDifference) && termScale > 0 ? gap / termScale : 0.0;
      r.lsiStatus = r.lsiRatio < 1.0 - kSafetyFactor * relative - excluded - kRoundOff ? "violation" : "ok";
    }
  }
  finished_ = true;
  // Rows in time order (the order they were observed in), orders within a time in the case's order.
  std::vector<std::vector<double>> numeric;
  numeric.reserve(rows_.size());
  std::vector<std::vector<std::string>> text;
  for (const Row& r : rows_) {
    const double svOut = setup_.sv ? *setup_.sv : kNaN;
    const double cTheory = setup_.cTheory ? *setup_.cTheory : kNaN;
    const double absDiff = std::fabs(r.rate.rateIdentity - r.finiteDifference);
    std::vector<double> values{static_cast<double>(r.step), r.s, r.t, r.alpha, r.renyi, r.finiteDifference,
                               r.rate.rateIdentity, absDiff, r.rhsOptimalSv, r.rhsHalfSv, r.rhsOptimalMeasured,
                               r.rhsHalfMeasured, r.marginOptimalMeasured, r.rate.supDriftGap, svOut, r.cEff, cTheory,
                               r.lsiRatio, statusCode(r.status), r.tolerance, r.marginOptimalSv,
                               r.rate.informationRatio, r.rate.informationRatioSigma, r.rate.cross,
                               r.rate.excludedShare, statusCode(r.lsiStatus)};
    if (rank_ == 0) {
      std::vector<std::string> cells;
      for (std::size_t c = 0; c < values.size(); ++c) {
        const std::string& name = columns()[c].name;
        if (name == "status") cells.push_back(r.status);
        else if (name == "lsi_status") cells.push_back(r.lsiStatus);
        else if (name == "step") cells.push_back(std::to_string(r.step));
        else cells.push_back(io::CsvTable::format(values[c]));
      }
      text.push_back(std::move(cells));
    }
    numeric.push_back(std::move(values));
  }
  if (rank_ == 0) io::writeWholeFile(directory_ + "/renyi_rate.csv", io::textCsv(io::columnNames(columns()), text));
  h5.writeTable("renyi_rate", columns(), numeric,
                {{"status_codes", "The codes of status and lsi_status.",
                  "status, lsi_status: " + io::codeTable(kStatusNames)},
                 {"identity_not_applicable", "Why the rate identity does not apply (empty: it does).",
                  setup_.identityNotApplicable},
                 {"c_theory_not_applicable", "Why c_theory is NaN (empty: it is known).",
                  setup_.cTheoryNotApplicable}});
}

void RenyiRateOutput::summary(std::ostream& s) const {
  if (!finished_) return;
  std::size_t violations = 0, lsiViolations = 0, usable = 0;
  const Row* worstMargin = nullptr;
  const Row* worstLsi = nullptr;
  const Row* firstViolation = nullptr;
  const Row* firstLsiViolation = nullptr;
  double worstRelativeGap = 0.0;
  for (const Row& r : rows_) {
    if (r.status == "not_applicable") continue;
    ++usable;
    const double m = std::min(r.marginOptimalMeasured, std::isfinite(r.marginOptimalSv) ? r.marginOptimalSv : INFINITY);
    if (!worstMargin || m < std::min(worstMargin->marginOptimalMeasured,
                                     std::isfinite(worstMargin->marginOptimalSv) ? worstMargin->marginOptimalSv : INFINITY))
      worstMargin = &r;
    if (r.status == "violation" && violations++ == 0) firstViolation = &r;
    const double termScale = r.alpha * r.rate.informationRatioSigma + std::fabs(r.alpha * r.rate.cross);
    if (std::isfinite(r.finiteDifference) && termScale > 0)
      worstRelativeGap = std::max(worstRelativeGap, std::fabs(r.rate.rateIdentity - r.finiteDifference) / termScale);
    if (r.lsiStatus != "not_applicable" && (!worstLsi || r.lsiRatio < worstLsi->lsiRatio)) worstLsi = &r;
    if (r.lsiStatus == "violation" && lsiViolations++ == 0) firstLsiViolation = &r;
  }
  // Rows left out, by reason, with the range of steps.
  struct Skipped {
    std::size_t count = 0;
    long firstStep = 0, lastStep = 0;
  };
  std::map<std::string, Skipped> skipped;
  for (const Row& r : rows_)
    if (r.status == "not_applicable") {
      Skipped& k = skipped[r.reason];
      if (k.count++ == 0) k.firstStep = r.step;
      k.lastStep = r.step;
    }
  s << "  Renyi rate (renyi_rate.csv, docs/rate.md): ";
  if (!setup_.identityNotApplicable.empty()) {
    s << "not applicable: " << setup_.identityNotApplicable << "\n";
    return;
  }
  if (!functional_.unavailable().empty()) {
    s << "not computed: " << functional_.unavailable() << "\n";
    return;
  }
  if (usable == 0) {
    s << "no row could be evaluated (" << rows_.size() << " rows: R_alpha or the information not finite)\n";
    return;
  }
  s << usable << " rows checked; |identity - finite difference| <= " << fmt(worstRelativeGap, "%.2e")
    << " of alpha (I^Sigma/E + |X|)"
    << "; Lemma 2 worst margin " << fmt(std::min(worstMargin->marginOptimalMeasured,
                                                 std::isfinite(worstMargin->marginOptimalSv) ? worstMargin->marginOptimalSv
                                                                                             : INFINITY))
    << " (tolerance " << fmt(worstMargin->tolerance, "%.2e") << "; alpha " << worstMargin->alpha << ", step "
    << worstMargin->step << ", t " << fmt(worstMargin->t, "%.6g")
    << "; optimal gamma, " << (std::isfinite(worstMargin->marginOptimalSv) ? "S_v = S_g/n and measured" : "measured S_v")
    << "); ";
  if (violations == 0) {
    s << "no violation\n";
  } else {
    const Row& r = *firstViolation;
    s << violations << " VIOLATION(S), first at step " << r.step << ", t " << fmt(r.t, "%.6g") << ", alpha " << r.alpha
      << ": rate identity " << fmt(r.rate.rateIdentity) << ", finite difference " << fmt(r.finiteDifference)
      << ", rhs (measured) " << fmt(r.rhsOptimalMeasured) << ", rhs (S_g/n) " << fmt(r.rhsOptimalSv) << ", tolerance "
      << fmt(r.tolerance) << "\n";
  }
  for (const auto& [reason, k] : skipped)
    s << "    " << k.count << " rows not_applicable (steps " << k.firstStep << ".." << k.lastStep << "): " << reason << "\n";
  if (!setup_.sv) s << "    Lemma 2 with S_v = S_g/n not evaluated: " << setup_.svSource << "\n";
  s << "  LSI (CYS Lemma 3/5): ";
  if (!setup_.cTheory) {
    s << "c_theory not applicable: " << setup_.cTheoryNotApplicable << "\n";
  } else if (!worstLsi) {
    s << "c_theory = " << fmt(*setup_.cTheory, "%.6g") << "; c_eff not defined at any row (p = q)\n";
  } else {
    s << "c_theory = lambda/(2 sigma^2) = " << fmt(*setup_.cTheory, "%.6g") << "; worst c_eff/c_theory "
      << fmt(worstLsi->lsiRatio, "%.6g") << " (alpha " << worstLsi->alpha << ", step " << worstLsi->step << ", t "
      << fmt(worstLsi->t, "%.6g") << "); ";
    if (lsiViolations == 0) {
      s << "no violation\n";
    } else {
      const Row& r = *firstLsiViolation;
      s << lsiViolations << " VIOLATION(S) (c_eff < c_theory), first at step " << r.step << ", t " << fmt(r.t, "%.6g")
        << ", alpha " << r.alpha << ": c_eff " << fmt(r.cEff) << "\n";
    }
  }
}

RenyiRateSetup renyiRateSetup(const Case& c, std::size_t n, bool replacement, const models::LossConstants& constants,
                              const std::vector<double>& orders,
                              std::shared_ptr<const solver::CellDriftGap> langevinGap) {
  RenyiRateSetup r;
  r.orders = orders;
  for (const auto& o : c.divergence.orders) r.labels.push_back(o.label);
  const int d = c.mesh.dim;
  const bool noisyGd = c.dynamics == "noisy_gd";
  const double sigma2 = c.noise.sigma * c.noise.sigma;
  const bool isotropic = !c.noise.covariance && !c.noise.covariancePrime;
  if (noisyGd) {
    // The tracing diffusions run with sigma^2 I (app/observers/TracingOutput.cpp, TracingSettings::noiseVariance).
    r.sigma = sigma2 * models::Matrix::Identity(d, d);
    if (!isotropic)
      r.identityNotApplicable = "the tracing diffusions are run with isotropic noise sigma^2 I, but the case gives "
                                "noise.covariance";
  } else {
    r.sigma = c.noise.sigmaFor(false, d);
    if ((c.noise.sigmaFor(false, d) - c.noise.sigmaFor(true, d)).norm() != 0.0)
      r.identityNotApplicable = "Sigma != Sigma' (noise.covariance_prime): the identity of MATH.md §4 needs one "
                                "diffusion matrix (kl_rate.csv covers this case)";
    r.langevinGap = std::move(langevinGap);
  }
  const std::optional<double> sg = c.loss.sensitivity ? c.loss.sensitivity : constants.sensitivity;
  if (sg && replacement) {
    r.sv = *sg / static_cast<double>(n);
    r.svSource = c.loss.sensitivity ? "S_g given in the case file" : "S_g computed for this pair";
  } else {
    r.svSource = !replacement ? "S_g is not defined for an added or removed record" : constants.sensitivitySource;
  }
  // CYS Lemma 5: c = lambda/(2 sigma^2) for lambda-strongly convex, beta-smooth losses, eta < 1/beta, and the initial
  // law N(0, (2 sigma^2/lambda) I); any initial N(m, V) with V <= (2 sigma^2/lambda) I is c-LSI with a constant at least
  // as good, which the proof's recursion keeps (docs/rate.md §4). Langevin: the continuous-time limit (Bakry–Émery).
  const auto lambda = constants.strongConvexity;
  std::string why;
  if (!isotropic) why = "CYS Lemma 5 assumes isotropic noise sigma^2 I";
  else if (!lambda || !(*lambda > 0)) why = "the loss is not strongly convex (lambda > 0 not established)";
  else if (noisyGd && !constants.smoothness) why = "the smoothness beta is unknown (eta < 1/beta cannot be checked)";
  else if (noisyGd && !(c.noisyGd.eta * *constants.smoothness < 1.0))
    why = "eta * beta = " + fmt(c.noisyGd.eta * *constants.smoothness, "%.4g") + " >= 1";
  else {
    const double vMax = Eigen::SelfAdjointEigenSolver<models::Matrix>(c.initial.covariance).eigenvalues().maxCoeff();
    if (vMax > 2.0 * sigma2 / *lambda)
      why = "the initial covariance (largest eigenvalue " + fmt(vMax, "%.4g") + ") exceeds 2 sigma^2/lambda = " +
            fmt(2.0 * sigma2 / *lambda, "%.4g") + " (Lemma 5's initial law)";
  }
  if (why.empty()) r.cTheory = *lambda / (2.0 * sigma2);
  else r.cTheoryNotApplicable = why;
  return r;
}

namespace {
constexpr std::size_t kCheckpointColumns = 16;
}

void RenyiRateOutput::saveState(io::CheckpointData& ck) const {
  std::vector<std::vector<double>> table;
  for (const auto& r : rows_)
    table.push_back({static_cast<double>(r.step), static_cast<double>(r.segment), r.s, r.t, r.alpha,
                     static_cast<double>(r.order), r.renyi, r.dRenyiDAlpha, r.renyiReliable ? 1.0 : 0.0,
                     r.rate.informationRatio, r.rate.informationRatioSigma, r.rate.cross, r.rate.rateIdentity,
                     r.rate.supDriftGap, r.rate.supDriftGapSigma, r.rate.excludedShare});
  ck.putTable("/renyi_rate/rows", table, kCheckpointColumns);
}

void RenyiRateOutput::restoreState(const io::CheckpointData& ck) {
  rows_.clear();
  for (const auto& v : ck.table("/renyi_rate/rows", kCheckpointColumns, std::nullopt)) {
    Row r;
    r.step = static_cast<long>(v[0]);
    r.segment = static_cast<long>(v[1]);
    r.s = v[2], r.t = v[3], r.alpha = v[4];
    if (!(v[5] >= 0 && v[5] < static_cast<double>(setup_.orders.size())))
      ck.fail("/renyi_rate/rows", "an order index outside the run's " + std::to_string(setup_.orders.size()) + " orders");
    r.order = static_cast<std::size_t>(v[5]);
    r.renyi = v[6], r.dRenyiDAlpha = v[7], r.renyiReliable = v[8] != 0.0;
    r.rate.informationRatio = v[9], r.rate.informationRatioSigma = v[10], r.rate.cross = v[11];
    r.rate.rateIdentity = v[12], r.rate.supDriftGap = v[13], r.rate.supDriftGapSigma = v[14];
    r.rate.excludedShare = v[15];
    rows_.push_back(std::move(r));
  }
}

}  // namespace fpdp::app
