#include "app/run/RunSummary.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "app/run/DpSgdAccounting.hpp"
#include "app/run/NumberFormat.hpp"
#include "app/run/MinibatchSchedule.hpp"
#include "io/NumberText.hpp"
#include "solver/noisygd/ChapmanKolmogorovQuadrature.hpp"

namespace fpdp::app {

namespace {

std::string fmt(double v, const char* f = "%.6e") { return formatNumber(v, f); }

/// What was run: dynamics, mesh, ranks, loss, neighbour, noise and solver (docs/noisy-gd.md §7: the midpoint rule's
/// aliasing of the spectral route, per step and over the K steps).
void describeRun(std::ostream& s, const RunReport& r) {
  const RunPlan& p = r.plan;
  const Case& c = p.c;
  const long steps = p.steps();
  s << "\nfpdp run '" << c.name << "': " << (p.noisyGd ? "noisy gradient descent" : "Langevin diffusion") << ", "
    << c.mesh.dim << "-D, cells";
  for (int a = 0; a < c.mesh.dim; ++a) s << (a ? "x" : " ") << c.mesh.cells[a];
  s << ", " << r.ranks << " rank(s)\n";
  s << "  loss " << c.loss.type << ", n = " << p.D().size() << ", neighbour: ";
  if (c.neighbour.kind == models::NeighbourKind::Replace) s << "replaces record " << c.neighbour.index;
  else if (c.neighbour.kind == models::NeighbourKind::Add) s << "adds a record (n' = " << p.DPrime().size() << ")";
  else s << "removes record " << c.neighbour.index << " (n' = " << p.DPrime().size() << ")";
  s << ", sigma = " << c.noise.sigma << "\n";
  if (!p.noisyGd) {
    s << "  solver: " << p.solverDescription << ", dt = " << c.time.dt << ", " << steps << " steps to t = " << p.tEnd()
      << "\n";
    if (!p.autoFallback.empty()) s << "  solver.ts_type = \"auto\" chose bdf, not exponential: " << p.autoFallback << "\n";
    return;
  }
  s << "  eta = " << c.noisyGd.eta << ", K = " << steps << " steps (t = eta K = " << p.tEnd() << ")\n  "
    << p.solverDescription << "\n";
  if (c.batch.sampling != "full") s << describeMinibatches(c, p.losses);
  s << dpSgdVocabulary(c, p.statedSensitivity()).text();
  if (const auto* kq = p.gd->kernelQuadrature()) {
    // The start N(m_0, V_0) is summed by the first step: its own aliasing term joins once.
    double startTerm = 0.0;
    for (int a = 0; a < p.dim; ++a)
      startTerm += solver::ChapmanKolmogorovQuadrature::aliasingTerm(std::sqrt(c.initial.covariance(a, a)),
                                                                      p.mesh.box().axis(a).width(0));
    const double perStep = kq->aliasingEstimate();
    const double total = perStep * static_cast<double>(steps) + startTerm;
    s << "  state: point values at the cell centres; quadrature aliasing estimate " << fmt(perStep, "%.2e")
      << " per step, " << fmt(total, "%.2e") << " over K steps and the start\n";
    if (total > 1e-8)
      s << "  WARNING: the mesh resolves the transition kernel poorly (" << fmt(kq->resolution(), "%.2f")
        << " cells per noise standard deviation, aliasing up to " << fmt(total, "%.1e")
        << " of the densities): refine mesh.cells (about 1.5 cells per standard deviation reach round-off)\n";
  }
}

/// The problem constants, where each comes from, and which of the papers' assumptions hold.
void describeConstants(std::ostream& s, const RunReport& r) {
  const RunPlan& p = r.plan;
  const Case& c = p.c;
  s << "  measured sup|grad L_D - grad L_D'| on the mesh = " << fmt(p.gradientGap);
  if (p.pairGap) s << "  (closed form " << (p.pairGap->exact ? "= " : "<= ") << fmt(p.pairGap->value / p.D().size()) << ")";
  s << "\n";
  auto constant = [&](const char* name, const std::optional<double>& v, const std::string& source) {
    s << "  " << name << " = " << (v ? fmt(*v, "%.6g") : std::string("none")) << "  (" << source << ")\n";
  };
  const models::LossConstants& k = p.constants;
  constant("lambda (strong convexity)", k.strongConvexity, k.strongConvexitySource);
  constant("beta (smoothness)", k.smoothness, k.smoothnessSource);
  if (c.loss.sensitivity) s << "  S_g = " << fmt(*c.loss.sensitivity, "%.6g") << "  (given in the case file)\n";
  else constant("S_g (sensitivity of this pair)", k.sensitivity, k.sensitivitySource);
  if (p.noisyGd && k.smoothness) {
    const double etaBeta = c.noisyGd.eta * *k.smoothness;
    s << "  assumption eta < 1/beta (CYS, FMTT contraction): eta * beta = " << fmt(etaBeta, "%.4g")
      << (etaBeta < 1.0 ? "  holds\n" : "  FAILS: the bounds that need it do not apply\n");
  }
  if (!k.strongConvexity || *k.strongConvexity <= 0)
    s << "  assumption lambda > 0 (strong convexity, CYS Thm 2/Cor 1): FAILS for this loss\n";
  s << "  initial mass outside the box (renormalised) = " << fmt(p.truncatedInitialMass, "%.3e") << "\n\n";
}

const char* renyiStatusExplanation(solver::RenyiStatus status) {
  switch (status) {
    case solver::RenyiStatus::InfiniteDetected:
      return " (R_alpha = +inf, not the box's finite number: q = 0 where p > 0, or the fitted far-field precision "
             "alpha P_p + (1 - alpha) P_q of the integrand is not positive definite)\n";
    case solver::RenyiStatus::NoiseSuspect: return nullptr;  // with its share: see below
    default: return " (a non-negligible share of the integrand lies at the walls: the number is not reliable)\n";
  }
}

/// The final KL, R_alpha, I/E, TV and Pinsker's bound, beside the closed form where one exists; the orders whose
/// numbers are not finite or not reliable.
void quantityTable(std::ostream& s, const RunReport& r) {
  const RunPlan& p = r.plan;
  const Case& c = p.c;
  const solver::DivergenceValues& last = r.stepper.last();
  const auto& reference = p.reference;
  const long steps = p.steps();
  const double tEnd = p.tEnd();
  s << "  quantity            computed";
  if (reference) s << "           exact              rel. error";
  s << "\n";
  auto line = [&](const std::string& name, double val, std::optional<double> exact) {
    char b[200];
    std::snprintf(b, sizeof b, "  %-18s  %-17s", name.c_str(), fmt(val, "%.10e").c_str());
    s << b;
    if (exact) {
      std::snprintf(b, sizeof b, "  %-17s  %s", fmt(*exact, "%.10e").c_str(),
                    fmt(relativeError(val, *exact), "%.2e").c_str());
      s << b;
    }
    s << "\n";
  };
  line("KL(p||q)", last.kl, reference ? std::optional<double>(reference->kl(steps, tEnd)) : std::nullopt);
  const auto& orders = c.divergence.orders;
  for (std::size_t k = 0; k < orders.size(); ++k) {
    // The dense grid's 156 orders are in renyi.csv; the summary shows a few.
    const std::string& label = orders[k].label;
    if (c.divergence.denseOrders && label != "2" && label != "10" && label != "32" && label != "1024") continue;
    line("R_" + label, last.renyi[k],
         reference ? std::optional<double>(reference->renyi(orders[k].alpha, steps, tEnd)) : std::nullopt);
  }
  if (c.divergence.denseOrders) s << "  (R_alpha at all " << orders.size() << " orders: renyi.csv)\n";
  for (std::size_t k = 0; k < orders.size() && k < last.informationRatio.size(); ++k)
    if (orders[k].label == "2" || (!c.divergence.denseOrders && k == 0)) {
      line("I_" + orders[k].label + "/E_" + orders[k].label, last.informationRatio[k], std::nullopt);
      break;
    }
  line("TV(p,q)", last.tv, std::nullopt);
  // BKPP §3.1: TV is the best membership-inference advantage; Pinsker bounds it by sqrt(KL/2).
  line("sqrt(KL/2) Pinsker", std::sqrt(0.5 * last.kl), std::nullopt);
  for (std::size_t k = 0; k < orders.size() && k < last.renyiStatus.size(); ++k) {
    const auto status = last.renyiStatus[k];
    if (status == solver::RenyiStatus::Finite) continue;
    s << "  R_" << orders[k].label << " at the end: " << solver::renyiStatusName(status);
    if (const char* why = renyiStatusExplanation(status)) s << why;
    else
      s << " (" << formatNumber(last.renyiNoiseShare[k], "%.1e") << " of E_alpha lies in cells at the scheme's noise "
        << "floor, below " << fmt(solver::DivergenceFunctionals::kNoiseFloorFactor, "%g")
        << "x the largest negative value: the number is not reliable; tighten the linear solver (ksp_rtol), shorten "
           "dt or use a sign-preserving scheme, docs/scheme.md §5)\n";
  }
  s << "\n";
}

/// Conservation and positivity: the masses, the smallest density, the operator's positivity condition, and the
/// L1 errors against the exact cell values.
void conservationAndPositivity(std::ostream& s, const RunReport& r, const SummaryContext& at) {
  const RunPlan& p = r.plan;
  char b[400];
  r.observers.summarize(SummaryPart::Health, at, s);
  if (!p.noisyGd && p.fourthOrder())
    s << "  spatial order 4 (docs/scheme.md §7): " << p.highOrderFaces << " faces carry the fourth-order flux, the rest "
      << "the second-order one; the fourth-order rows are not sign-preserving, so the row check below counts them\n";
  if (!p.noisyGd) {
    if (p.positivity.holds) {
      s << "  positivity condition of the operator (docs/scheme.md): holds in all " << p.positivity.rows << " rows\n";
    } else {
      // The densities' smallest value over the run is the Health part's (min density, above).
      std::snprintf(b, sizeof b,
                    "  positivity condition of the operator FAILS in %ld of %ld rows (most negative off-diagonal "
                    "%.3e, %.2e of the diagonal): densities may go negative (min density above)\n",
                    p.positivity.violatingRows, p.positivity.rows, p.positivity.mostNegativeOffDiagonal,
                    p.positivity.worstRelativeViolation);
      s << b;
    }
  }
  r.observers.summarize(SummaryPart::Reference, at, s);
}

/// The constraint C of projected noisy GD, its boundary bins, and what the mesh walls may have done to the noise
/// (docs/noisy-gd.md §6).
void constraintFigures(std::ostream& s, const RunReport& r) {
  const RunPlan& p = r.plan;
  const solver::DivergenceValues& last = r.stepper.last();
  const double margin = p.gd->constraintMargin();
  const bool fokkerPlanck = p.c.noisyGd.diffusion != "exact_convolution";
  char b[600];
  s << "  constraint C: " << p.c.noisyGd.constraintSet.describe() << "\n";
  std::snprintf(b, sizeof b,
                "  boundary bins: %zu; boundary mass at t_end: p %.10f, q %.10f (in mass_p, mass_q and in every "
                "divergence)\n  distance from C to the mesh walls: %.2f noise standard deviations "
                "sqrt(2 eta Sigma_aa)%s\n",
                p.gd->boundaryBins().size(), last.p.singularMass, last.q.singularMass, margin,
                fokkerPlanck ? "" : " (exact_convolution: the padded mesh takes the kernel's reach, Pi_C the rest)");
  s << b;
  if (!fokkerPlanck) return;
  const double wallMass = r.stepper.largestWallMass();
  std::snprintf(b, sizeof b, "  largest mass in the wall cells after the noise (no-flux walls): %.3e%s\n", wallMass,
                (margin < 5.0 || wallMass > 1e-8)
                    ? "  WARNING: the walls reflect noise that should reach beyond them; leave at least 5 "
                      "noise standard deviations between C and the walls (mesh.lower/upper)"
                    : "");
  s << b;
}

/// Warnings: numbers the box or the scheme may have made wrong are flagged, never passed off as accurate.
void warnings(std::ostream& s, const RunReport& r, const SummaryContext& at) {
  const RunPlan& p = r.plan;
  const Case& c = p.c;
  char b[600];
  // docs/noisy-gd.md §5: the implicit heat solve of a noisy-GD step gives the kernel heavier (rational) tails,
  // which orders above 2 weight by r^alpha (logistic case: R_10 18.1 vs 30.69 converged). One line for all orders.
  std::string heavyTails;
  if (p.noisyGd && c.noisyGd.diffusion == "fokker_planck")
    for (const auto& o : c.divergence.orders)
      if (o.alpha > 2.0) heavyTails += (heavyTails.empty() ? "R_" : ", R_") + o.label;
  if (!heavyTails.empty())
    s << "  WARNING: " << heavyTails << " (orders > 2) by noisy_gd.diffusion = \"fokker_planck\" depend on the far "
      << "tails, which implicit heat steps make too heavy (docs/noisy-gd.md §5): cross-check with "
         "\"exact_convolution\" (diagonal Sigma)\n";
  r.observers.summarize(SummaryPart::Warnings, at, s);  // the walls' share of R_alpha, the tracing diffusions
  if (p.constrained()) constraintFigures(s, r);
  const double outP = r.stepper.outflowP().total(), outQ = r.stepper.outflowQ().total();
  if (outP > 0 || outQ > 0) {
    std::snprintf(b, sizeof b, "  mass carried beyond the mesh (push-forward and noise kernel): p %.3e, q %.3e%s\n",
                  outP, outQ, std::max(outP, outQ) > 1e-8 ? "  WARNING: enlarge the box" : "");
    s << b;
  }
  if (p.gd && p.gd->boundsMixture()) {
    const auto& m = r.stepper.mixtureTvBound();
    const auto& w = r.stepper.withinCellTvBound();
    s << "  Poisson displacement lattice (docs/noisy-gd.md §9.2): TV to the exact batch mixture added by the lattice at "
      << "most p " << formatNumber(m[0], "%.3e") << ", q " << formatNumber(m[1], "%.3e")
      << " (in accuracy.csv's estimates of TV, delta(eps) and eps; KL and R_alpha not certified)"
      << (std::max(m[0], m[1]) > c.batch.mixtureTolerance ? "  WARNING: above batch.mixture_tolerance" : "") << "\n"
      << "    the cells' within-cell discretisation (first order in the cell width; the companion meshes estimate it "
      << "with the other spatial errors): at most p " << formatNumber(w[0], "%.3e") << ", q "
      << formatNumber(w[1], "%.3e") << " in the worst case\n";
  }
  r.faults.summary(s);
  if (!r.divergences.informationUnavailable().empty())
    s << "  WARNING: the Renyi information is not computed (nan in renyi.csv): "
      << r.divergences.informationUnavailable() << "\n";
  if (p.exactFirstStep) s << "  the initial density is narrower than the mesh resolves: step 1 taken exactly from it\n";
  else if (const std::string w = p.disc.underResolvedStartWarning(); !w.empty()) s << "  WARNING: " << w << "\n";
  if (p.truncatedInitialMass > 1e-10) {
    std::snprintf(b, sizeof b, "  WARNING: the box cuts off %.1e of the initial density (renormalised away)\n",
                  p.truncatedInitialMass);
    s << b;
  }
}

/// Checkpoints, plots, the wall time and where the output is.
void footer(std::ostream& s, const RunReport& r) {
  const RunPlan& p = r.plan;
  if (!p.noCheckpoints.empty()) s << "  checkpoints: none (" << p.noCheckpoints << ")\n";
  if (!p.c.output.plots) s << "  plots: not drawn (output.plots = false)\n";
  else if (r.plotWarning.empty()) s << "  plots: PNG files in the output directory ('fpdp plot DIR' redraws them)\n";
  else s << "  WARNING: " << r.plotWarning << "\n";
  char b[200];
  std::snprintf(b, sizeof b, "  wall time %.2f s (set-up %.3f s, of which the companion solve %.3f s; time stepping "
                "and output %.2f s", r.times.wall, r.times.setup, r.times.companion, r.times.stepping);
  s << b;
  if (!p.noisyGd) {
    std::snprintf(b, sizeof b, "; time integration %.3f s", r.times.stepping - r.times.observers);
    s << b;
  }
  if (p.c.output.plots) {
    std::snprintf(b, sizeof b, "; plots %.2f s", r.times.plots);
    s << b;
  }
  s << ")\n  output: " << r.outputDirectory << "/\n";
}

}  // namespace

std::string runSummaryText(const RunReport& r) {
  std::ostringstream s;
  const SummaryContext at{r.plan, r.stepper.last()};
  describeRun(s, r);
  describeConstants(s, r);
  quantityTable(s, r);
  conservationAndPositivity(s, r, at);
  warnings(s, r, at);
  for (const SummaryPart part : {SummaryPart::Accuracy, SummaryPart::Rates, SummaryPart::Privacy})
    r.observers.summarize(part, at, s);
  footer(s, r);
  r.observers.summarize(SummaryPart::Headline, at, s);  // the answer a user quotes, last
  return s.str();
}

}  // namespace fpdp::app
