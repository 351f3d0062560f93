#include "app/run/Certification.hpp"

#include "models/GaussianComposition.hpp"

#include <Eigen/Eigenvalues>
#include <boost/math/special_functions/erf.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include "io/Column.hpp"
#include "io/NumberText.hpp"

namespace fpdp::app {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kRoundOff = 1e-12;                // relative differences below this are round-off
constexpr double kAsymptoticRatio = 2.8284271247;  // 2^1.5: observed order >= 1.5
// An order alpha is undecided (the truth may be +inf) from this share of the tails' critical order on: the fitted
// precisions of the far field are only as good as the fit (docs/scheme.md §5), so a margin separates the orders
// decided finite from the critical one.
constexpr double kCriticalOrderMargin = 0.8;

bool plusInf(double x) { return std::isinf(x) && x > 0; }

/// The spectral route: noisy GD's transition kernel by the midpoint rule on point values (docs/noisy-gd.md §7).
bool spectralRoute(const Case& c) { return c.dynamics == "noisy_gd" && c.noisyGd.diffusion == "chapman_kolmogorov"; }
}  // namespace

const char* uncertaintyName(Uncertainty u) {
  switch (u) {
    case Uncertainty::Certified: return "certified";
    case Uncertainty::AboveTolerance: return "above_tolerance";
    case Uncertainty::NotConverging: return "not_converging";
    case Uncertainty::PreAsymptotic: return "pre_asymptotic";
    case Uncertainty::OrderUnconfirmed: return "order_unconfirmed";
    case Uncertainty::TimeErrorNotEstimated: return "time_error_not_estimated";
    case Uncertainty::BoxTruncation: return "box_truncation";
    case Uncertainty::NoiseFloor: return "noise_floor";
    case Uncertainty::NumericalFault: return "numerical_fault";
    case Uncertainty::NoEstimate: return "no_estimate";
    case Uncertainty::ZeroUnproven: return "zero_unproven";
    case Uncertainty::InfiniteUndecided: return "infinite_undecided";
    case Uncertainty::DensityBound: return "density_bound";
    case Uncertainty::UnderResolved: return "under_resolved";
    case Uncertainty::NotComputed: return "not_computed";
    case Uncertainty::RareTrajectories: return "rare_trajectories";
  }
  return "unknown";
}

std::string uncertaintyCodeTable() {
  std::vector<std::string> names;
  for (int k = 0; k <= static_cast<int>(kLastUncertainty); ++k)
    names.push_back(uncertaintyName(static_cast<Uncertainty>(k)));
  return io::codeTable(names);
}

bool refinementMayCertify(Uncertainty u) {
  return u == Uncertainty::AboveTolerance || u == Uncertainty::NotConverging || u == Uncertainty::PreAsymptotic ||
         u == Uncertainty::OrderUnconfirmed || u == Uncertainty::TimeErrorNotEstimated ||
         u == Uncertainty::NoEstimate || u == Uncertainty::UnderResolved;
}

std::string uncertaintyRemedy(Uncertainty u, const Case& c) {
  // What refines, by what the run already did: "run with --certify" after a --certify run repeats it (the headline's
  // refinement does not look at the other numbers; every number's stops at a budget that its certify line names).
  const auto refine = [&c](const std::string& what) -> std::string {
    // Beyond three axes the refinement doubles the cells per axis (2^d times the cells: docs/scaling.md §9) and
    // neither widens the box nor refines a time step.
    if (c.mesh.dim > 3 && c.accuracy.certify == "off")
      return "run with --certify (finer meshes until it is certified, each 2^" + std::to_string(c.mesh.dim) +
             " times the cells), or more mesh.cells; where the cells that needs do not fit, quote the conservative "
             "value, which the accountants' composition caps";
    if (c.mesh.dim > 3)
      return "see the certify line: raise the refinement's budget it names (accuracy.certify_seconds, "
             "accuracy.certify_max_cells), or quote the conservative value, which the accountants' composition caps";
    if (c.accuracy.certify == "headline")
      return "run with --certify=last_step (" + what + " for every number of the last step; --certify refines for the "
             "headline eps only)";
    if (c.accuracy.certify == "last_step")
      return "see the certify line: raise the refinement's budget it names (accuracy.certify_seconds, "
             "accuracy.certify_max_cells), or quote the conservative value";
    return "run with --certify (" + what + " until it is certified)";
  };
  const std::string certify = refine("refines the mesh and the time step");
  switch (u) {
    case Uncertainty::Certified: return "";
    case Uncertainty::AboveTolerance:
    case Uncertainty::NotConverging:
    case Uncertainty::PreAsymptotic:
    case Uncertainty::OrderUnconfirmed: return certify;
    case Uncertainty::TimeErrorNotEstimated:
      return certify + (c.dynamics == "langevin" ? ", or solver.ts_type = \"exponential\" (exact in time)" : "");
    case Uncertainty::BoxTruncation:
      if (c.mesh.dim > 3) return "widen mesh.lower and mesh.upper (raising mesh.cells to keep the cell widths)";
      return c.accuracy.certify == "off" ? "run with --certify (widens the box), or widen mesh.lower and mesh.upper"
                                          : refine("widens the box") + "; or widen mesh.lower and mesh.upper";
    case Uncertainty::NoiseFloor: {
      // With cross terms of Sigma the second-order fitted edge scheme is monotone on a uniform mesh whose cells keep
      // Sigma diagonally dominant (Sigma_aa/h_a^2 >= sum_b |Sigma_ab|/(h_a h_b), docs/scheme.md §2); elsewhere (the
      // fourth-order fluxes, a graded mesh, cells of the wrong aspect) its sign errors are made in space, and no time
      // integrator or solver tolerance removes them. spatialSignErrors says what does ("" where the scheme keeps the
      // sign: no cross terms, or the fitted edges on a mesh that keeps Sigma dominant).
      const auto spatialSignErrors = [&](bool prime) -> std::string {
        const models::Matrix S = c.noise.sigmaFor(prime, c.mesh.dim);
        if ((S - models::Matrix(S.diagonal().asDiagonal())).cwiseAbs().maxCoeff() == 0.0) return "";
        if (c.solver.spatial_order != 2)
          return "set solver.spatial_order = 2 (the fitted edges keep the sign; the fourth-order fluxes do not)";
        std::array<double, 3> h{};
        for (std::size_t a = 0; a < static_cast<std::size_t>(c.mesh.dim); ++a) {
          if (c.mesh.grading[a] != 1.0)
            return "take a uniform mesh (mesh.grading = 1: the fitted edges keep the sign there, graded cells do not)";
          h[a] = (c.mesh.upper[a] - c.mesh.lower[a]) / c.mesh.cells[a];
        }
        for (int a = 0; a < c.mesh.dim; ++a) {
          double offDiagonal = 0.0;
          for (int b = 0; b < c.mesh.dim; ++b)
            if (b != a) offDiagonal += std::fabs(S(a, b)) / h[static_cast<std::size_t>(b)];
          if (S(a, a) / h[static_cast<std::size_t>(a)] < offDiagonal)
            return "choose mesh.cells so that Sigma stays diagonally dominant on the cells (Sigma_aa/h_a >= "
                   "sum_b |Sigma_ab|/h_b for every axis a)";
        }
        return "";
      };
      for (bool prime : {false, true})
        if (const std::string fix = spatialSignErrors(prime); !fix.empty())
          return fix + ": the cross terms of the noise covariance make sign errors in space on this mesh that hide the "
                       "densities where this number is decided (docs/scheme.md §2); else quote the conservative value, "
                       "or the eps of a larger delta that is certified (epsilon.csv, accuracy.csv)";
      // (solver.ts_type as the case gives it: the remedies are text, read without PETSc.) The Chebyshev expansion
      // knows a cell to its tolerance of the largest value; the positive series, where the scheme keeps the sign (as
      // here), to a relative round-off (docs/scheme.md §3).
      const bool exponential = c.solver.ts_type == kExponentialTsType || c.solver.ts_type == kAutoTsType;
      const bool anisotropic = !c.noise.bothIsotropic(c.mesh.dim);
      if (exponential && anisotropic && c.solver.exponential_series != "positive")
        return "set solver.exponential_series = \"positive\" (the exponential integrator's positive series knows every "
               "cell to a relative round-off; --certify switches to it), or quote the conservative value";
      if (exponential)
        return "none at this delta: it is decided where a density lies below the time integrator's round-off (its "
               "sign errors, kept within a relative 1e-12 of the largest value); quote the conservative value, or the "
               "eps of a larger delta that is certified (epsilon.csv, accuracy.csv)";
      return "take solver.ts_type = \"exponential\" or a tighter linear solver (-ksp_rtol 1e-12): the scheme's sign "
             "errors decide it";
    }
    case Uncertainty::NumericalFault: return "mend the numerical fault the summary names (docs/faults.md)";
    case Uncertainty::NoEstimate:
      return c.accuracy.estimate ? "give mesh.cells at least 16 per axis, or " + refine("refines the mesh")
                                 : "set accuracy.estimate = true, or " + refine("refines the mesh");
    case Uncertainty::ZeroUnproven:
      return "quote its conservative value (a zero is proved only where p = q; the value is bounded from the profile, "
             "an eps of 0 by TV): where that is +inf or 1, finer meshes (mesh.cells, or the companions of --certify's "
             "refinement) bound TV";
    case Uncertainty::InfiniteUndecided:
      return "none: the order may be infinite, or one density underflows where the other does not; use a lower order "
             "or eps_exact";
    case Uncertainty::DensityBound:
      // The lattice's TV bound shrinks only in proportion to batch.mixture_tolerance, whose lattice soon exceeds its
      // budget (cases/dpsgd-poisson-large-n-1d.toml: a 5x lower tolerance halves the estimate, 100x does not fit):
      // the remedy is the conservative value, which is an upper bound.
      // (The walls' removed mass and the start's cut-off tail are box_truncation: a wider box removes them.)
      return "quote the conservative value (an upper bound: the displacement lattice's TV bound is in it); a smaller "
             "batch.mixture_tolerance narrows it as far as its lattice fits the budget; KL and R_alpha have none";
    case Uncertainty::UnderResolved:
      if (c.mesh.dim > 3)
        return refine("finer meshes") + ": the densities, or the tail region that decides the number, are narrower "
               "than the coarser meshes' cells";
      return refine("finer meshes") + ", or more mesh.cells: the densities, or the tail region that decides the "
             "number, are narrower than the coarser meshes' cells";
    case Uncertainty::NotComputed: return "";
    case Uncertainty::RareTrajectories:
      return "use a lower order, or eps_exact (the hockey-stick profile, which trajectories of probability w move by at "
             "most w): at this order R_alpha may be decided by the batches that took the record many times, whose "
             "tilted law lies beyond the box or below double precision";
  }
  return "";
}

namespace {
/// Three or more finite levels whose successive differences are all within kPlateauShare rtol of the first.
bool convergedPlateau(std::span<const double> levels, double rtol) {
  if (levels.size() < 3) return false;
  const double tolerance = kPlateauShare * rtol * std::max(std::fabs(levels[0]), std::numeric_limits<double>::min());
  for (std::size_t i = 0; i + 1 < levels.size(); ++i)
    if (!std::isfinite(levels[i]) || !std::isfinite(levels[i + 1]) || !(std::fabs(levels[i] - levels[i + 1]) <= tolerance))
      return false;
  return true;
}
}  // namespace

NumberAccuracy numberAccuracy(std::span<const double> levels, double rtol, double upperLimit, double largestRatio) {
  const double fine = levels.empty() ? kNaN : levels[0];
  NumberAccuracy a{fine, kNaN, kNaN, false, Uncertainty::NoEstimate};
  if (std::isnan(fine)) {
    a.reason = Uncertainty::NotComputed;
    return a;
  }
  if (levels.size() < 3 || std::isnan(levels[1]) || std::isnan(levels[2])) {
    a.conservative = upperLimit;  // nothing is known beyond the quantity's range
    return a;
  }
  const std::size_t L = std::isnan(levels.size() > 3 ? levels[3] : kNaN) ? 3 : levels.size();
  if (std::all_of(levels.begin(), levels.begin() + static_cast<std::ptrdiff_t>(L), plusInf)) {
    a.estimate = 0.0;  // +inf on every mesh: infinite
    a.conservative = fine;
    a.certified = true;
    a.reason = Uncertainty::Certified;
    return a;
  }
  if (!std::all_of(levels.begin(), levels.begin() + static_cast<std::ptrdiff_t>(L),
                   [](double x) { return std::isfinite(x); })) {
    a.conservative = upperLimit;
    a.reason = Uncertainty::NotConverging;
    return a;
  }
  std::vector<double> d(L - 1);
  for (std::size_t i = 0; i + 1 < L; ++i) d[i] = std::fabs(levels[i] - levels[i + 1]);
  const double scale = std::max(std::fabs(fine), std::numeric_limits<double>::min());
  const double roundOff = kRoundOff * scale;
  bool asymptotic = false, preAsymptotic = false;
  Uncertainty why = Uncertainty::Certified;
  if (convergedPlateau(levels.first(L), rtol)) {
    // Every level agrees far inside rtol: converged (the routes exact in space, round-off, root-finding), whatever
    // the ratios of such small differences.
    a.estimate = 2.0 * *std::max_element(d.begin(), d.end());
    asymptotic = true;
  } else if (d[1] <= roundOff && levels[1] != 0.0 && d[0] <= 0.5 * std::fabs(fine)) {
    // The coarser pair already at round-off (the spectral routes). Not where both are exact zeros under a non-zero
    // fine value: coarse meshes whose profile ends before this eps say nothing of the fine value's error (seen:
    // delta(2.25) 8.5e-13 on 100 cells, 0 on 50 and 25, "estimate" 1.7e-12, against a truth of 1.7e-11). Nor where
    // they agree because both are negligible beside the fine value (seen: delta_pq(1.25) 1.28e-16, 7.6e-48, 0 on
    // 1000, 500, 250 cells of the heat route, estimate 2.6e-16, against a truth of 5.58e-13).
    a.estimate = 2.0 * std::max(d[0], d[1]);
    asymptotic = true;
  } else if (d[0] >= d[1]) {  // not converging: nothing bounds the error
    a.estimate = INFINITY;
    why = Uncertainty::NotConverging;
  } else {
    // With the order capped at 2 (r = 4), the fine error follows from the finer pair, d0/(r - 1), and equally from
    // the coarser one, d1/(r (r - 1)) = d1/12. An observed ratio above 4 is either a faster route or two finer meshes
    // agreeing by chance while the coarsest is not yet asymptotic (seen for eps_exact at small delta on 32^2): only
    // the coarser pair's difference then bounds the error, so the larger of the two is taken.
    const double r = d[0] > 0.0 ? d[1] / d[0] : INFINITY;
    a.estimate = 2.0 * std::max(d[0] / (std::min(r, 4.0) - 1.0), d[1] / 12.0);
    if (r < kAsymptoticRatio) {
      // Slower than order 1.5: not yet in Richardson's range, where the error may be far beyond the differences
      // (measured on 48 cells: R_10 2.12 with value + estimate 5.53 against the closed form 8.78).
      preAsymptotic = true;
      why = Uncertainty::PreAsymptotic;
    } else if (L >= 4 && !(d[1] > 0.0 && d[2] / d[1] >= kAsymptoticRatio)) {
      // The coarser triple (2h, 4h, 8h) does not converge at order 1.5: the finer ratio in range is a chance agreement
      // of errors of different sources or signs (measured: R_2(q || p) of a fokker_planck noisy-GD case certified
      // with an estimate of 1.0e-3 against an error of 3.7e-3, its forward twin, the same number, not converging).
      preAsymptotic = true;
      why = Uncertainty::PreAsymptotic;
    } else if ((levels[0] - levels[1]) * (levels[1] - levels[2]) < 0.0 && d[0] > roundOff) {
      // The differences change sign: the error is not one C h^p yet (its differences would all have C's sign), and
      // the ratio of their sizes says nothing of the fine error (measured: R_10 of a Poisson noisy-GD case on 100,
      // 50, 25 cells, errors -4.9e-6, -1.1e-5, +1.2e-5, r = 3.8 and an estimate of 4.3e-6 below the error; the
      // local ratio at 100 cells was 2.8).
      preAsymptotic = true;
      why = Uncertainty::PreAsymptotic;
    } else if (r <= largestRatio) {
      asymptotic = true;
    } else if (L >= 4 && d[2] / d[1] > largestRatio && std::fabs(std::log2(r) - std::log2(d[2] / d[1])) <= 1.0) {
      // Faster than the route's nominal order, and the next coarser triple sees the same faster order: a route that
      // converges faster (the Poisson lattice's fourth order), or coarse meshes whose error decays fast before the
      // route's own order takes over (an under-resolved start: the default case's eps(1e-5) shows r = 15.3 and 15.7
      // on 128^2 .. 16^2 while its finest pair converges at second order). The estimate therefore keeps the
      // second-order form, which covers both (8.3e-4 true error, 5.9e-3 estimate there); the confirmation only lets it
      // certify. A coarser triple at the nominal order confirms nothing faster: the finer pair then agrees better than
      // the order says by chance (seen: delta(0.5) of a Langevin case on 12288 cells, r = 6.4 and r' = 4.0, error 1.8e-6
      // against the estimate 1.7e-6, its conservative value below the truth).
      asymptotic = true;
    } else {
      // Beyond the route's range and unconfirmed: errors of different signs or sizes meeting by chance (measured:
      // r = 8.5 on the default case's delta(1.85) at t = 2.8, whose estimate was 2.4 times too small). With the
      // coarsest mesh far off (beyond 10 % of the value) the coarser pair's term bounds nothing either (measured:
      // R_10 3.20, 3.10, 0.47 on 48, 24, 12 cells, r = 27, value + estimate 3.63 against the closed form 9.58).
      preAsymptotic = d[1] > 0.1 * std::fabs(fine);
      why = Uncertainty::OrderUnconfirmed;
      // Nor does the finer pair's agreement say that the fine error is a quarter of the 2h mesh's: the two finer
      // meshes may share an error that stopped decreasing (seen: delta(1) of a Langevin BDF case from an under-resolved
      // start, values 0.5979219, 0.5979227, 0.5980204 on 400, 200 and 100 cells, r = 116, error 1.9e-5 against the
      // second-order form's estimate 1.6e-5). The coarser pair bounds the 2h error at second order, d1/3, and the fine
      // error differs from it by at most d0.
      a.estimate = 2.0 * (d[1] / 3.0 + d[0]);
    }
  }
  a.conservative = preAsymptotic || std::isinf(a.estimate) ? upperLimit : std::min(fine + a.estimate, upperLimit);
  a.certified = asymptotic && a.estimate <= rtol * std::fabs(fine);
  a.reason = a.certified ? Uncertainty::Certified : (asymptotic ? Uncertainty::AboveTolerance : why);
  return a;
}

void uncertifiedAtLimit(NumberAccuracy& a, double upperLimit, Uncertainty why, bool unbounded) {
  if (std::isnan(a.value)) return;
  if (unbounded) a.estimate = INFINITY;
  a.conservative = upperLimit;
  a.certified = false;
  a.reason = why;
}

double largestConvergenceRatio(const Case& c) {
  if (spectralRoute(c)) return INFINITY;
  const double order = c.dynamics == "noisy_gd" || c.solver.spatial_order == 2 ? 2.0 : 4.0;
  return std::pow(2.0, order + 0.5);
}

bool identicalPair(const Case& c, bool datasetsEqual) {
  const int d = c.mesh.dim;
  return datasetsEqual && (c.noise.sigmaFor(false, d) - c.noise.sigmaFor(true, d)).cwiseAbs().maxCoeff() == 0.0;
}

double PoissonMixtureModel::componentVariance(long k) const {
  if (k <= 0) return startVariance;
  return linear ? startVariance + static_cast<double>(k) * stepVariance : stepVariance;
}

bool PoissonMixtureModel::rareTrajectoriesMayDecide(long k, double alpha, double renyi, double share,
                                                    double reach) const {
  if (!(alpha > 1.0) || k <= 0 || !(rate > 0.0) || !(rate < 1.0)) return false;
  if (!(shift < INFINITY) || !(stepVariance > 0.0)) return true;  // nothing bounds where the inclusions carry the law
  if (!(shift > 0.0)) return false;                                // the record moves nothing
  // Doubles below exp(kLogSmallestDensity) of a density's largest value underflow or lose their digits.
  constexpr double kLogSmallestDensity = -700.0;
  const double K = static_cast<double>(k);
  const double logShare = (alpha - 1.0) * std::max(renyi, 0.0) + std::log(share);
  const double widest = std::sqrt(startVariance + K * stepVariance);  // a component's sd, maps that do not expand
  double logWeight = K * std::log1p(-rate);                           // Bin(0; k, gamma)
  const double logOdds = std::log(rate) - std::log1p(-rate);
  for (long j = 1; j <= k; ++j) {
    const double J = static_cast<double>(j);
    logWeight += std::log((K - J + 1.0) / J) + logOdds;
    // The component's mean moved by D_j <= j s from q's; D_j^2 / V is exactly j^2 s^2 / (V0 + k v) for a linear loss,
    // and at most j s^2 / v otherwise (Cauchy–Schwarz: each step contracts displacement and noise alike).
    const double D = J * shift;
    const double d2OverV = linear ? D * D / (startVariance + K * stepVariance) : J * shift * shift / stepVariance;
    // Its share of E_alpha: w^alpha E_q[(p_j / q)^alpha] = w^alpha exp(alpha (alpha - 1) D^2 / (2 V)) for Gaussian
    // components of one variance (every term of E_alpha is non-negative, so this much is in the truth).
    if (alpha * logWeight + 0.5 * alpha * (alpha - 1.0) * d2OverV < logShare) continue;
    // Its tilted law peaks alpha D from q's mean, where p_j is exp(-(alpha - 1)^2 D^2 / (2 V)) of its largest value.
    const double peakDensity = logWeight - 0.5 * (alpha - 1.0) * (alpha - 1.0) * d2OverV;
    if (alpha * D + 3.0 * widest > reach || peakDensity < kLogSmallestDensity) return true;
  }
  return false;
}

std::optional<PoissonMixtureModel> poissonMixtureModel(const Case& c, std::optional<double> recordGradientGap,
                                                       std::optional<double> smoothness) {
  if (c.dynamics != "noisy_gd" || c.batch.sampling != "poisson") return std::nullopt;
  const int d = c.mesh.dim;
  PoissonMixtureModel m;
  m.rate = c.batch.rate;
  double gap = recordGradientGap && *recordGradientGap >= 0.0 ? *recordGradientGap : INFINITY;
  if (c.noisyGd.clipNorm)
    gap = std::min(gap, (c.neighbour.kind == models::NeighbourKind::Replace ? 2.0 : 1.0) * *c.noisyGd.clipNorm);
  // The smaller dataset's expected batch: its steps move most per inclusion.
  const std::size_t n = c.data.records.size();
  const double b = c.batch.expectedSize(c.neighbour.kind == models::NeighbourKind::Remove && n > 1 ? n - 1 : n);
  m.shift = b > 0.0 ? c.noisyGd.eta * gap / b : INFINITY;
  const auto smallestEigenvalue = [](const models::Matrix& M) {
    return Eigen::SelfAdjointEigenSolver<models::Matrix>(M, Eigen::EigenvaluesOnly).eigenvalues().minCoeff();
  };
  m.stepVariance = 2.0 * c.noisyGd.eta *
                   std::min(smallestEigenvalue(c.noise.sigmaFor(false, d)), smallestEigenvalue(c.noise.sigmaFor(true, d)));
  m.startVariance = c.initial.covariance.rows() == d ? smallestEigenvalue(c.initial.covariance) : 0.0;
  m.linear = smoothness && *smoothness == 0.0;
  return m;
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

namespace {

/// The bounds on TV between the computed p (q) and the law they stand for, summed: the displacement lattice's and the
/// absorbing walls' removed mass (solver::DivergenceValues); absent where the run has neither.
/// With `beyondWalls`, also the bound on the masses beyond the walls (DivergenceValues::wallTailMass) where the walls
/// do not absorb (absorbing walls count that mass themselves).
/// `stateTv`: the time integrator's error bound as a TV bound of each density (stateErrorTv).
std::optional<std::array<double, 2>> densityTvBound(const solver::DivergenceValues& v, bool beyondWalls,
                                                    double stateTv) {
  const bool tails = beyondWalls && !v.absorbedMass && (v.wallTailMass[0] > 0.0 || v.wallTailMass[1] > 0.0);
  if (!v.mixtureTvBound && !v.absorbedMass && !(v.startTruncation > 0.0) && !tails && !(stateTv > 0.0))
    return std::nullopt;
  const double s = stateTv > 0.0 ? stateTv : 0.0;
  std::array<double, 2> m{v.startTruncation + s, v.startTruncation + s};
  if (tails) m = {m[0] + v.wallTailMass[0], m[1] + v.wallTailMass[1]};
  for (const auto& part : {v.mixtureTvBound, v.absorbedMass})
    if (part) m = {m[0] + (*part)[0], m[1] + (*part)[1]};
  return m;
}

/// The time integrator's error bound on every cell value (DivergenceValues::stateErrorFloor, raw units) as a TV bound
/// of each normalised density: the floor over the box's volume, twice (the normalisation by the mass moves each
/// cell by as much again), over the smaller mass. +inf where the bound is not finite.
double stateErrorTv(const solver::DivergenceValues& v, const Case& c) {
  if (!(v.stateErrorFloor > 0.0)) return 0.0;
  double volume = 1.0;
  for (int a = 0; a < c.mesh.dim; ++a) volume *= c.mesh.upper[a] - c.mesh.lower[a];
  const double mass = std::min(v.p.mass, v.q.mass);
  const double tv = 2.0 * v.stateErrorFloor * volume / mass;
  return mass > 0.0 && std::isfinite(tv) ? tv : INFINITY;
}

/// Whether the companions can judge a delta(eps) of this hockey-stick status: a plain value, or one resting on the
/// wall cells where the walls absorb (the removed mass, in densityTvBound, covers what the box cuts off).
bool profileValueJudged(const solver::DivergenceValues& v, int status) {
  using S = models::ExactEpsilonStatus;
  return status == static_cast<int>(S::Root) ||
         (status == static_cast<int>(S::TruncatedSuspect) && v.absorbedMass.has_value());
}

/// At the start both densities are the one initial law ([initial], the same for D and D'): in truth every divergence
/// and delta(eps) is exactly 0 there, and a value the mesh gives as exactly 0 is that truth, whatever the companions
/// (which may hold no start), the start's cut-off tail or the walls (they act on p and q alike), or the tails'
/// critical order (R_alpha of one law and itself is 0 at every order). (Such zeros were no_estimate,
/// above_tolerance from the start's truncation, or infinite_undecided.)
void certifyExactZerosAtTheStart(long step, std::vector<NumberAccuracy>& numbers) {
  if (step != 0) return;
  for (auto& a : numbers)
    if (a.value == 0.0) a = {0.0, 0.0, 0.0, true, Uncertainty::Certified};
}

/// Absorbing walls that removed more than kAbsorbedMassGuard of either density.
bool absorbedBeyondGuard(const std::optional<std::array<double, 2>>& absorbedMass) {
  return absorbedMass && std::max((*absorbedMass)[0], (*absorbedMass)[1]) > kAbsorbedMassGuard;
}

/// Why a TV bound of the densities leaves a number uncertified, by what removes the bound: the displacement lattice's
/// spacing (density_bound), else a wider box (the walls' removed mass, the start's cut-off tail: box_truncation, which
/// --certify widens). Seen: a Poisson case whose mixture is enumerated, its R_alpha blocked by 2.5e-9 of mass at the
/// walls, told to lower batch.mixture_tolerance, which it does not use.
Uncertainty tvBoundReason(const solver::DivergenceValues& v) {
  return v.mixtureTvBound ? Uncertainty::DensityBound : Uncertainty::BoxTruncation;
}

/// A TV bound of the densities (a Poisson displacement lattice's, the absorbing walls' removed mass) added to a
/// number's estimate: the conservative value grows with it, and the number stays certified only if the sum is within
/// rtol. Nothing without an estimate (its conservative value is already the quantity's limit).
void addDensityBound(NumberAccuracy& a, double bound, double rtol, double upperLimit) {
  if (std::isnan(a.estimate)) return;
  a.estimate += bound;
  a.conservative = std::min(std::max(a.conservative, a.value + a.estimate), upperLimit);
  if (a.certified && !(a.estimate <= rtol * std::fabs(a.value))) {
    a.certified = false;
    a.reason = Uncertainty::AboveTolerance;
  }
}

/// What the box cuts off beyond its walls (DivergenceValues::klWallTail, renyiWallTail), an error every mesh shares:
/// `bound` on the number added to its estimate, a conservative value at least value + estimate, and certified only if
/// the sum is within rtol; +inf: nothing bounds it (conservative value the limit). Nothing without an estimate. Not at
/// the start or for identical laws (p = q: every divergence is exactly 0, whatever the tails).
void addWallTail(NumberAccuracy& a, double bound, double rtol) {
  if (std::isnan(a.value) || !std::isfinite(a.value) || std::isnan(bound) || bound == 0.0) return;
  if (std::isinf(bound)) {
    uncertifiedAtLimit(a, INFINITY, Uncertainty::BoxTruncation, true);
    return;
  }
  const bool wasCertified = a.certified;
  addDensityBound(a, bound, rtol, INFINITY);
  if (wasCertified && !a.certified) a.reason = Uncertainty::BoxTruncation;
}

/// Whether the laws carry singular masses (projected noisy GD's boundary bins), the only proof of an infinite KL or
/// of an infinite R_alpha below the far field's critical order: an atom of one law where the other has none.
bool singularMasses(const solver::DivergenceValues& v) { return v.p.singularMass > 0.0 || v.q.singularMass > 0.0; }

/// KL (or eps(delta)) = +inf proves nothing without singular masses: a density that underflowed to 0 where the other did not (seen:
/// KL = +inf "certified" against a truth of 0.41). Not certified then; its conservative value stays +inf.
void infiniteUnproven(const solver::DivergenceValues& v, NumberAccuracy& a) {
  if (plusInf(a.value) && a.certified && !singularMasses(v))
    uncertifiedAtLimit(a, INFINITY, Uncertainty::InfiniteUndecided, true);
}

/// The order from which R_alpha(p || q) may be infinite: the far-field model's critical order (the smallest alpha > 1
/// at which alpha P_p + (1 - alpha) P_q stops being positive definite, from the fitted precisions of p and q), and,
/// where the two noises differ, the same for their covariances (the stationary laws' tails for a quadratic trend).
/// +inf where neither gives one; NaN where the noises differ and the far field is not modelled (laws that fill the box,
/// or singular masses): then no order is decided.
/// The smallest alpha > 1 at which alpha A + (1 - alpha) B = B + alpha (A - B) loses definiteness: 1/mu, mu the
/// largest eigenvalue of B^(-1/2) (B - A) B^(-1/2) (+inf where mu <= 0; NaN where the pencil fails).
double pencilCriticalOrder(const models::Matrix& A, const models::Matrix& B) {
  Eigen::GeneralizedSelfAdjointEigenSolver<models::Matrix> pencil(B - A, B, Eigen::EigenvaluesOnly);
  if (pencil.info() != Eigen::Success) return kNaN;
  const double mu = pencil.eigenvalues().maxCoeff();
  return mu > 0.0 ? 1.0 / mu : INFINITY;
}

/// The critical order of the noises alone (+inf for equal noises): the Gibbs tails exp(-L Sigma^-1) of two unequal
/// noise covariances make R_alpha infinite from it on, whatever the losses (a structural infinity, unlike a fit's).
double noiseCriticalOrder(const models::Matrix& sigmaP, const models::Matrix& sigmaQ) {
  if ((sigmaP - sigmaQ).cwiseAbs().maxCoeff() == 0.0) return INFINITY;
  return pencilCriticalOrder(sigmaP.inverse(), sigmaQ.inverse());
}

double criticalOrder(const std::vector<double>& precisionP, const std::vector<double>& precisionQ, int dim,
                     const models::Matrix& sigmaP, const models::Matrix& sigmaQ, bool modelApplies) {
  const auto critical = pencilCriticalOrder;
  const bool noisesDiffer = (sigmaP - sigmaQ).cwiseAbs().maxCoeff() != 0.0;
  double order = INFINITY;
  if (noisesDiffer) order = critical(sigmaP.inverse(), sigmaQ.inverse());  // Gibbs tails exp(-L Sigma^-1)
  const auto n = static_cast<std::size_t>(dim * dim);
  if (modelApplies && precisionP.size() == n && precisionQ.size() == n) {
    const models::Matrix Pp = Eigen::Map<const models::Matrix>(precisionP.data(), dim, dim);
    const models::Matrix Pq = Eigen::Map<const models::Matrix>(precisionQ.data(), dim, dim);
    const double fitted = critical(Pp, Pq);
    order = std::isnan(fitted) ? kNaN : std::min(order, fitted);
  } else if (noisesDiffer) {
    order = kNaN;
  }
  return order;
}

}  // namespace

AccuracyJudge::AccuracyJudge(const Case& c, std::vector<double> eps, CompanionValues companion, bool identical)
    : case_(c), eps_(std::move(eps)), companion_(std::move(companion)), largestRatio_(largestConvergenceRatio(c)),
      identical_(identical), mixture_(poissonMixtureModel(c, std::nullopt, std::nullopt)) {
  // The initial Gaussian's conditional standard deviation along each axis (as the start's resolution is measured,
  // solver::LangevinDiscretisation::initialResolution).
  if (c.initial.covariance.rows() == c.mesh.dim && c.mesh.dim > 0) {
    const models::Matrix precision = c.initial.covariance.inverse();
    for (int a = 0; a < c.mesh.dim; ++a)
      if (precision(a, a) > 0.0) startSpread_[static_cast<std::size_t>(a)] = 1.0 / std::sqrt(precision(a, a));
  }
  names_ = {"kl", "tv"};
  for (const auto& o : c.divergence.orders) names_.push_back("renyi_" + o.label);
  for (double delta : c.privacy.deltaGrid) names_.push_back("eps_exact_delta_" + io::shortestText(delta));
  names_.push_back("kl_qp");
  for (const auto& o : c.divergence.orders) names_.push_back("renyi_qp_" + o.label);
  for (const char* conversion : {"mironov", "cks"})
    for (double delta : c.privacy.deltaGrid)
      names_.push_back(std::string("eps_rdp_") + conversion + "_delta_" + io::shortestText(delta));
}

std::size_t AccuracyJudge::epsIndex(double delta) const {
  const std::string name = "eps_exact_delta_" + io::shortestText(delta);
  for (std::size_t k = 0; k < names_.size(); ++k)
    if (names_[k] == name) return k;
  return std::string::npos;
}

AccuracyJudge::Levels AccuracyJudge::companionsAt(long step, const solver::DivergenceValues& v) const {
  Levels out;
  double factor = 1.0;
  for (const auto& level : companion_.levels) {
    factor *= 2.0;
    // The level's cells against the densities' spread: a mesh coarser than the densities says nothing of the
    // finer ones' error, whatever its ratios (seen: delta(eps) 0.78 against 0.997 with ratios in range, densities of
    // half a cell on the run's mesh).
    double sdPerCell = INFINITY, startSdPerCell = INFINITY;
    for (int a = 0; a < case_.mesh.dim; ++a) {
      const double width = factor * (case_.mesh.upper[a] - case_.mesh.lower[a]) / case_.mesh.cells[a];
      const auto axis = static_cast<std::size_t>(a);
      // A Poisson mixture's components are narrower than the mixture (seen: eps(0.01) 27.33 with conservative value
      // 28.94 against 29.25, decided between components of sd 0.3 that the 4h cells, 0.35 wide, did not resolve,
      // while the mixture's spread looked resolved).
      const double spread = std::min(v.p.spread[axis], v.q.spread[axis]);
      sdPerCell = std::min(sdPerCell, (mixture_ ? std::min(spread, std::sqrt(mixture_->componentVariance(step))) : spread) / width);
      startSdPerCell = std::min(startSdPerCell, startSpread_[axis] / width);
    }
    // A start narrower than the companions' cells (unless taken exactly) leaves them an error that is not in
    // Richardson's range at any later step (seen: KL of a noisy-SGD case from N(0, 0.001) on 1000 cells, 2.1 cells
    // per standard deviation at the start, 0.17 % low at step 2, with its conservative value below the truth).
    // The estimate needs 2h and 4h; 8h confirms, and where it exists but is left out the estimate lacks its check of
    // a chance agreement of the finer three: under-resolved too (seen: R_10 certified on 3072 cells with an estimate
    // of 6.4e-3 and an error of 0.22, from a start of 0.6 standard deviations per 8h cell; the 8h level's ratio was
    // 0.74).
    if (!(sdPerCell >= kCellsPerSpread) || (!startTakenExactly_ && !(startSdPerCell >= kCellsPerSpread))) {
      out.underResolved = true;
      break;
    }
    const auto it = level.find(step);
    out.coarse.push_back(it != level.end() ? &it->second : nullptr);
    out.sdPerCell.push_back(sdPerCell);
  }
  return out;
}

namespace {
double standardNormalUpperQuantile(double tail) {  // z with 1 - Phi(z) = tail
  if (!(tail > 0.0)) return INFINITY;
  if (tail >= 0.5) return 0.0;
  return std::sqrt(2.0) * boost::math::erfc_inv(2.0 * tail);
}
}  // namespace

double klDepth(double kl) { return std::max(1.0, std::sqrt(2.0 * std::max(kl, 0.0))); }

double tvDepth(double tv) {
  // TV = 2 Phi(mu/2) - 1: mu/2 = z with 1 - Phi(z) = (1 - TV)/2.
  return std::max(1.0, standardNormalUpperQuantile(0.5 * (1.0 - std::min(std::max(tv, 0.0), 1.0))));
}

double renyiDepth(double alpha, double renyi) {
  if (!(alpha > 0.0) || alpha == 1.0) return klDepth(renyi);
  const double mu = std::sqrt(2.0 * std::max(renyi, 0.0) / alpha);
  return std::max(1.0, std::max(alpha, std::fabs(1.0 - alpha)) * mu);
}

double hockeyStickDepth(double delta, double eps, double klSmaller, double klLarger) {
  // Two readings of the same model, the smaller taken: the boundary p = e^eps q of the Gaussian pair at distance mu
  // lies eps/mu + mu/2 into q's tail (exact for the pair, but a small mu from a mixture's KL makes it deep); and
  // (p - e^eps q)_+ of mass delta lies at most Phi^-1(1 - delta) into p's tail, mu more into q's (deep where delta is
  // tiny whatever mu). Each with the mu that makes it the deeper: the boundary's decreases in mu below sqrt(2 eps).
  const double muSmall = std::sqrt(2.0 * std::max(klSmaller, 0.0)), muLarge = std::sqrt(2.0 * std::max(klLarger, 0.0));
  const double byDelta = standardNormalUpperQuantile(delta) + muLarge;
  const double byBoundary = muSmall > 0.0 && eps >= 0.0 && std::isfinite(eps) ? eps / muSmall + 0.5 * muSmall : INFINITY;
  return std::max(1.0, std::min(byDelta, byBoundary));
}

template <class Get>
NumberAccuracy AccuracyJudge::judge(long step, const solver::DivergenceValues& v, const Levels& c, Get get,
                                    double upperLimit, double depth) const {
  std::vector<double> levels{get(v)};
  // The levels whose cells resolve the region that decides the number: a density that changes by more than a factor
  // e^(kBulkDepth / kCellsPerSpread) per cell there has no relative accuracy, and differences of such meshes bound
  // nothing (seen: R_2 of a Poisson mixture, decided 11 standard deviations into q's tail, 4.157 with value + estimate
  // 4.332 against a truth of 4.350; its 4h mesh agreed with ratio 4.4 by chance).
  // Levels that agree far inside rtol (a converged plateau: the routes exact in space) are read whatever the depth.
  // A number without a finite depth (an infinity, a zero) is judged on the bulk's criterion. So is every number of
  // the spectral route: its state is point values, each a sum of non-negative terms, and its error at a point is the
  // midpoint rule's aliasing term for the integrand p_k(x) N(y; T(x), 2 eta Sigma), whose width in x does not depend
  // on how deep y lies in the tail (for a Gaussian p_k exactly): relative accuracy does not fall with the depth there.
  const bool depthMatters = std::isfinite(depth) && !spectralRoute(case_);
  const double needed = kCellsPerSpread * (depthMatters ? std::max(1.0, depth / kBulkDepth) : 1.0);
  for (const auto* level : c.coarse) levels.push_back(level ? get(*level) : kNaN);
  bool underResolved = c.underResolved;
  // Dropping the 8h level drops its check too (the coarser triple's ratio, which tells a chance agreement of the three
  // finer meshes from convergence): the number is then under-resolved as well (as in companionsAt).
  if (!convergedPlateau(levels, case_.accuracy.rtol))
    for (std::size_t l = 0; l < c.coarse.size(); ++l)
      if (!(c.sdPerCell[l] >= needed)) {
        underResolved = underResolved || l < 2 || c.coarse[l] != nullptr;
        levels.resize(l + 1);
        break;
      }
  NumberAccuracy a = numberAccuracy(levels, case_.accuracy.rtol, upperLimit, largestRatio_);
  if (underResolved && !companion_.levels.empty() && step != 0)
    uncertifiedAtLimit(a, upperLimit, Uncertainty::UnderResolved, true);
  // A time error the companions share is not in the estimate: nothing bounds the number then.
  if (!companion_.timeUnrefined.empty() && step != 0)
    uncertifiedAtLimit(a, upperLimit, Uncertainty::TimeErrorNotEstimated, false);
  // An exact zero on the meshes is proved only where p = q: at the start (one initial density for both), or for
  // identical datasets and noises; otherwise a zero may be a value below what the meshes resolve (seen: delta(eps) =
  // 0 on three meshes against a truth of 1.9e-3).
  if (a.value == 0.0 && !identical_ && step != 0) uncertifiedAtLimit(a, upperLimit, Uncertainty::ZeroUnproven, false);
  return a;
}

std::vector<NumberAccuracy> AccuracyJudge::profile(long step, const solver::DivergenceValues& v, bool faulted) const {
  const auto coarse = companionsAt(step, v);
  const double largerKl = std::max(v.kl, v.reverse.kl), smallerKl = std::min(v.kl, v.reverse.kl);
  // The TV bounds of the densities, the same at every eps (the integrator's part also on its own).
  const double stateTv = stateErrorTv(v, case_);
  const auto tvBound = densityTvBound(v, step != 0 && !identical_, stateTv);
  std::vector<NumberAccuracy> out;
  for (std::size_t k = 0; k < eps_.size(); ++k)
    for (int dir = 0; dir < 2; ++dir) {
      const auto value = [k, dir](const solver::DivergenceValues& d) {
        const auto& curve = dir == 0 ? d.hockeyStickPQ : d.hockeyStickQP;
        return k < curve.size() ? curve[k] : kNaN;
      };
      out.push_back(judge(step, v, coarse, value, 1.0, hockeyStickDepth(value(v), eps_[k], smallerKl, largerKl)));
      // A value resting on the walls or on the noise floor (or past the box's largest log-ratio at a wall) is not
      // bounded by the companions, which share the box: not certified, conservative value 1.
      const auto& statuses = dir == 0 ? v.hockeyStickStatusPQ : v.hockeyStickStatusQP;
      if (k < statuses.size() && !profileValueJudged(v, statuses[k]))
        uncertifiedAtLimit(out.back(), 1.0,
                           statuses[k] == static_cast<int>(models::ExactEpsilonStatus::NoiseLimited)
                               ? Uncertainty::NoiseFloor
                               : Uncertainty::BoxTruncation,
                           false);
      // |delta_pq(eps) - delta~_pq(eps)| <= TV(p, p~) + e^eps TV(q, q~) (docs/noisy-gd.md §9.2).
      if (tvBound) {
        const auto& m = *tvBound;
        const double bound = dir == 0 ? m[0] + std::exp(eps_[k]) * m[1] : m[1] + std::exp(eps_[k]) * m[0];
        NumberAccuracy& a = out.back();
        const bool wasCertified = a.certified;
        addDensityBound(a, bound, case_.accuracy.rtol, 1.0);
        if (wasCertified && !a.certified) a.reason = tvBoundReason(v);
        // The integrator's bound alone beyond rtol: no finer mesh helps; its remedy is the integrator's (NoiseFloor).
        if (!std::isnan(a.value) && !(stateTv * (1.0 + std::exp(eps_[k])) <= case_.accuracy.rtol * std::fabs(a.value))) {
          a.certified = false;
          a.reason = Uncertainty::NoiseFloor;
        }
      }
    }
  certifyExactZerosAtTheStart(step, out);
  // delta(eps) does not increase with eps: each conservative value is at most those at the smaller eps of the grid.
  // This bounds the values the meshes cannot judge from below (an exact zero past the largest log-ratio they resolve)
  // by the last value they can.
  for (int dir = 0; dir < 2; ++dir) {
    double envelope = 1.0;
    for (std::size_t k = 0; k < eps_.size(); ++k) {
      NumberAccuracy& a = out[2 * k + static_cast<std::size_t>(dir)];
      if (std::isnan(a.value)) continue;
      a.conservative = std::min(a.conservative, envelope);
      envelope = a.conservative;
    }
  }
  if (faulted)
    for (auto& a : out) uncertifiedAtLimit(a, 1.0, Uncertainty::NumericalFault, false);
  capProfileByComposition(step, out);
  return out;
}

void AccuracyJudge::judgeOrders(long step, const solver::DivergenceValues& v, const Levels& c, bool reverse,
                                std::vector<NumberAccuracy>& out) const {
  const auto& values = reverse ? v.reverse.renyi : v.renyi;
  const auto& statuses = reverse ? v.reverse.renyiStatus : v.renyiStatus;
  const int dim = case_.mesh.dim;
  const bool modelApplies = v.renyiTailPrecision.size() == case_.divergence.orders.size() &&
                            std::any_of(v.renyiTailPrecision.begin(), v.renyiTailPrecision.end(),
                                        [](double x) { return !std::isnan(x); });
  // R(q || p): the roles of p and q exchanged, in the fitted precisions and the noises.
  const double critical =
      reverse ? criticalOrder(v.tailPrecisionQ, v.tailPrecisionP, dim, case_.noise.sigmaFor(true, dim),
                              case_.noise.sigmaFor(false, dim), modelApplies)
              : criticalOrder(v.tailPrecisionP, v.tailPrecisionQ, dim, case_.noise.sigmaFor(false, dim),
                              case_.noise.sigmaFor(true, dim), modelApplies);
  const double noiseCritical = reverse ? noiseCriticalOrder(case_.noise.sigmaFor(true, dim), case_.noise.sigmaFor(false, dim))
                                       : noiseCriticalOrder(case_.noise.sigmaFor(false, dim), case_.noise.sigmaFor(true, dim));
  for (std::size_t k = 0; k < case_.divergence.orders.size(); ++k) {
    const auto get = [k, reverse](const solver::DivergenceValues& d) {
      const auto& r = reverse ? d.reverse.renyi : d.renyi;
      return k < r.size() ? r[k] : kNaN;
    };
    if (k >= values.size()) {
      out.push_back({kNaN, kNaN, kNaN, false, Uncertainty::NotComputed});
      continue;
    }
    // The depth: the Gaussian model's from the value, or where the integrand's largest term lies if that is deeper
    // (a mixture's far component: the model put R_2 of a Poisson mixture 4 standard deviations out, its largest term
    // lay 11 out).
    const auto& measuredDepth = reverse ? v.reverse.renyiDepth : v.renyiDepth;
    const double depth = std::max(renyiDepth(case_.divergence.orders[k].alpha, get(v)),
                                  k < measuredDepth.size() ? measuredDepth[k] : 0.0);
    out.push_back(judge(step, v, c, get, INFINITY, depth));
    NumberAccuracy& a = out.back();
    const auto status = k < statuses.size() ? statuses[k] : solver::RenyiStatus::Finite;
    // truncated_suspect, noise_suspect: value + estimate bounds nothing (seen: R_10 53 % below the closed form, its
    // "conservative value" too).
    if (status == solver::RenyiStatus::TruncatedSuspect)
      uncertifiedAtLimit(a, INFINITY, Uncertainty::BoxTruncation, true);
    else if (status == solver::RenyiStatus::NoiseSuspect)
      uncertifiedAtLimit(a, INFINITY, Uncertainty::NoiseFloor, true);
    // A finite value at an order the truth may make infinite: the far-field model decides finiteness only away from
    // its critical order, and not at all where the noises differ and the far field is not modelled (seen: 16 orders
    // reported finite with Sigma != Sigma' whose truth was +inf).
    const double alpha = case_.divergence.orders[k].alpha;
    if (std::isfinite(a.value) && (std::isnan(critical) || alpha >= kCriticalOrderMargin * critical))
      uncertifiedAtLimit(a, INFINITY, Uncertainty::InfiniteUndecided, true);
    // +inf is proved only by the singular masses of projected laws (an atom of p where q has none) or at orders past
    // the noises' own critical order. A density that underflowed to 0 where the other did not proves nothing (seen:
    // R_1.5 = +inf "certified" against a truth of 122, a Poisson mixture's far component beyond the range of doubles
    // in q), nor does the far-field fit (seen: R_5 = +inf against 1846, the fit of a mixture's middle range).
    if (plusInf(a.value) && a.certified && !singularMasses(v) && !(alpha >= noiseCritical))
      uncertifiedAtLimit(a, INFINITY, Uncertainty::InfiniteUndecided, true);
    // The integrand beyond the walls: E_alpha is short by at most tail E_alpha, R_alpha by log1p(tail)/|alpha - 1|
    // (seen: R_10 2e-8 below the truth, certified, with 2e-7 of the tilted law beyond the box and a wall share of 9e-8).
    const auto& tails = reverse ? v.reverse.renyiWallTail : v.renyiWallTail;
    if (k < tails.size() && alpha != 1.0 && step != 0 && !identical_)
      addWallTail(a, std::log1p(tails[k]) / std::fabs(alpha - 1.0), case_.accuracy.rtol);
    // A Poisson mixture's rare components (many inclusions) can decide a high order from beyond the box or below
    // double precision, where no mesh sees them (seen: R_5 = 0.0409 certified against a truth of 15.13, the 60-fold
    // inclusion of weight 1e-120 peaking at 30 in a box of half-width 10.5).
    if (mixture_ && step != 0 && !identical_ && std::isfinite(a.value) && !std::isnan(a.value) &&
        mixture_->rareTrajectoriesMayDecide(step, alpha, a.value,
                                            0.1 * case_.accuracy.rtol * (alpha - 1.0) * std::max(a.value, 1e-300),
                                            wallReach(v)))
      uncertifiedAtLimit(a, INFINITY, Uncertainty::RareTrajectories, true);
  }
}

double AccuracyJudge::wallReach(const solver::DivergenceValues& v) const {
  double reach = INFINITY;
  for (const auto* h : {&v.p, &v.q})
    for (int a = 0; a < case_.mesh.dim; ++a) {
      const double m = h->mean[static_cast<std::size_t>(a)];
      reach = std::min(reach, std::min(case_.mesh.upper[a] - m, m - case_.mesh.lower[a]));
    }
  return reach;
}

std::vector<NumberAccuracy> AccuracyJudge::numbers(long step, const solver::DivergenceValues& v,
                                                   const std::vector<NumberAccuracy>& profile, bool faulted) const {
  const auto coarse = companionsAt(step, v);
  std::vector<NumberAccuracy> out;
  // A KL or TV that rests on the wall cells is not bounded by the companions, which share the box (as R_alpha's
  // truncated_suspect). TV = delta(0): the hockey-stick profile's status at eps = 0 says it, judged as the profile
  // is. Seen: a box cutting 5 % of the initial density gave KL 7 % and R_10 16 % below the closed form, R_alpha
  // flagged and KL "certified".
  const bool klOnWalls = v.klBoundaryShare > solver::DivergenceFunctionals::kBoundaryShareTolerance;
  const bool tvOnWalls = !v.hockeyStickStatusPQ.empty() && !eps_.empty() && eps_.front() == 0.0 &&
                         !profileValueJudged(v, v.hockeyStickStatusPQ.front());
  out.push_back(judge(step, v, coarse, [](const solver::DivergenceValues& c) { return c.kl; }, INFINITY, klDepth(v.kl)));
  infiniteUnproven(v, out.back());
  if (klOnWalls) uncertifiedAtLimit(out.back(), INFINITY, Uncertainty::BoxTruncation, true);
  if (step != 0 && !identical_) addWallTail(out.back(), v.klWallTail, case_.accuracy.rtol);
  out.push_back(judge(step, v, coarse, [](const solver::DivergenceValues& c) { return c.tv; }, 1.0, tvDepth(v.tv)));
  if (tvOnWalls) uncertifiedAtLimit(out.back(), 1.0, Uncertainty::BoxTruncation, true);
  judgeOrders(step, v, coarse, false, out);
  // eps_exact of the pair (the larger direction) at every delta of privacy.delta_grid.
  for (std::size_t j = 0; j < case_.privacy.deltaGrid.size(); ++j) {
    const auto eps = [j](const solver::DivergenceValues& c) {
      return j < c.exactEpsilon.size() ? c.exactEpsilon[j].pair.epsilon() : kNaN;
    };
    const auto status =
        j < v.exactEpsilon.size() ? v.exactEpsilon[j].pair.status() : models::ExactEpsilonStatus::NotComputed;
    if (status == models::ExactEpsilonStatus::NotComputed) {
      out.push_back({kNaN, kNaN, kNaN, false, Uncertainty::NotComputed});
      continue;
    }
    out.push_back(judge(step, v, coarse, eps, INFINITY,
                        hockeyStickDepth(case_.privacy.deltaGrid[j], eps(v), std::min(v.kl, v.reverse.kl),
                                         std::max(v.kl, v.reverse.kl))));
    infiniteUnproven(v, out.back());  // an unreachable delta: the floor of a density that underflowed
    // A root that rests on the walls or on the noise floor is not bounded by the companions (they share the box and
    // cannot resolve the noise): its conservative value is +inf.
    if (status == models::ExactEpsilonStatus::TruncatedSuspect && !v.absorbedMass)
      uncertifiedAtLimit(out.back(), INFINITY, Uncertainty::BoxTruncation, true);
    else if (status == models::ExactEpsilonStatus::NoiseLimited)
      uncertifiedAtLimit(out.back(), INFINITY, Uncertainty::NoiseFloor, true);
  }
  out.push_back(judge(step, v, coarse, [](const solver::DivergenceValues& c) { return c.reverse.kl; }, INFINITY,
                      klDepth(v.reverse.kl)));
  infiniteUnproven(v, out.back());
  // KL(q || p) on the walls alike (seen: 4e-6 of p beyond the box put KL(q || p) 1e-4 below the truth, certified with a
  // conservative value below it, while KL(p || q) was flagged).
  if (v.reverse.klBoundaryShare > solver::DivergenceFunctionals::kBoundaryShareTolerance)
    uncertifiedAtLimit(out.back(), INFINITY, Uncertainty::BoxTruncation, true);
  if (step != 0 && !identical_) addWallTail(out.back(), v.reverse.klWallTail, case_.accuracy.rtol);
  judgeOrders(step, v, coarse, true, out);
  const double stateTv = stateErrorTv(v, case_);
  if (const auto tvBound = densityTvBound(v, step != 0 && !identical_, stateTv)) applyDensityTvBound(v, *tvBound, stateTv, out);
  certifyExactZerosAtTheStart(step, out);
  boundZeroEpsilons(v, profile, out);
  capNumbersByComposition(step, out);  // before the conversions, which read the conservative R_alpha
  judgeRdpConversions(v, out);
  // eps_exact is at most what the conversions give from the conservative R_alpha (MATH.md §7: the exact profile is
  // the tightest), so their conservative values bound it too, where its own is wider (a root on the walls, say).
  {
    const std::size_t D = case_.privacy.deltaGrid.size(), K = case_.divergence.orders.size();
    const std::size_t firstEps = 2 + K, firstConversion = 2 + K + D + 1 + K;
    for (std::size_t j = 0; j < D && firstConversion + D + j < out.size(); ++j) {
      NumberAccuracy& a = out[firstEps + j];
      if (std::isnan(a.value)) continue;
      for (const std::size_t c : {firstConversion + j, firstConversion + D + j})
        if (!std::isnan(out[c].conservative)) a.conservative = std::min(a.conservative, out[c].conservative);
    }
  }
  if (faulted)
    for (std::size_t k = 0; k < out.size(); ++k) uncertifiedAtLimit(out[k], k == 1 ? 1.0 : INFINITY, Uncertainty::NumericalFault, false);
  capNumbersByComposition(step, out);  // a fault bears on the computed values, not on the truth the cap bounds
  return out;
}

namespace {
/// An upper bound of the truth on a number's conservative value: the smaller of the two, never below the value (a
/// value above a proven bound is itself an upper bound).
void capConservative(NumberAccuracy& a, double bound) {
  if (std::isnan(a.value) || std::isnan(bound)) return;
  const double capped = std::min(a.conservative, bound);
  a.conservative = std::isfinite(a.value) ? std::max(capped, a.value) : capped;
}
}  // namespace

void AccuracyJudge::capNumbersByComposition(long step, std::vector<NumberAccuracy>& out) const {
  const std::size_t K = case_.divergence.orders.size(), D = case_.privacy.deltaGrid.size();
  const std::size_t reverseKl = 2 + K + D;
  if (out.size() < reverseKl + 1 + K) return;
  const double mu = compositionMu_ ? compositionMu_(step) : kNaN;
  const bool bounded = std::isfinite(mu) && mu >= 0.0;
  for (std::size_t k = 0; k < K; ++k) {
    const double alpha = case_.divergence.orders[k].alpha;
    for (const std::size_t i : {2 + k, reverseKl + 1 + k}) {
      NumberAccuracy& a = out[i];
      // Without a proof of finiteness a finite value may stand for an infinite truth.
      if (!bounded && finitenessNeedsComposition_ && step != 0 && !identical_ && std::isfinite(a.value))
        uncertifiedAtLimit(a, INFINITY, Uncertainty::InfiniteUndecided, true);
      if (bounded) capConservative(a, alpha * mu * mu / 2.0);
    }
  }
  if (!bounded) return;
  capConservative(out[0], mu * mu / 2.0);
  capConservative(out[reverseKl], mu * mu / 2.0);
  capConservative(out[1], models::gdpDelta(mu, 0.0));
  for (std::size_t j = 0; j < D; ++j) capConservative(out[2 + K + j], models::gdpEpsilon(mu, case_.privacy.deltaGrid[j]));
}

void AccuracyJudge::capProfileByComposition(long step, std::vector<NumberAccuracy>& profile) const {
  const double mu = compositionMu_ ? compositionMu_(step) : kNaN;
  if (!(std::isfinite(mu) && mu >= 0.0)) return;
  for (std::size_t k = 0; k < eps_.size() && 2 * k + 1 < profile.size(); ++k)
    for (int dir = 0; dir < 2; ++dir) capConservative(profile[2 * k + static_cast<std::size_t>(dir)], models::gdpDelta(mu, eps_[k]));
}

void AccuracyJudge::judgeRdpConversions(const solver::DivergenceValues& v, std::vector<NumberAccuracy>& out) const {
  // The conversions of MATH.md §7 are non-decreasing in every R_alpha: of the conservative values (both directions) an
  // upper bound of the truth's conversion, of value - estimate a lower one. An order whose status the conversions skip
  // (truncated, noise-limited) stays out of the value as in epsilon.csv; +inf orders give nothing.
  const std::size_t K = case_.divergence.orders.size();
  const std::size_t forward = 2, reverse = 2 + K + case_.privacy.deltaGrid.size() + 1;
  std::vector<double> orders;
  for (const auto& o : case_.divergence.orders) orders.push_back(o.alpha);
  const auto skipped = [](const std::vector<solver::RenyiStatus>& s, std::size_t k) {
    return k < s.size() && s[k] != solver::RenyiStatus::Finite && s[k] != solver::RenyiStatus::InfiniteDetected;
  };
  std::array<std::vector<double>, 2> value, upper, lower;  // per direction
  for (int dir = 0; dir < 2; ++dir) {
    const std::size_t first = dir == 0 ? forward : reverse;
    const auto& statuses = dir == 0 ? v.renyiStatus : v.reverse.renyiStatus;
    for (std::size_t k = 0; k < K; ++k) {
      const NumberAccuracy& a = out[first + k];
      value[dir].push_back(skipped(statuses, k) ? kNaN : a.value);
      upper[dir].push_back(a.conservative);
      lower[dir].push_back(std::isfinite(a.estimate) ? std::max(0.0, a.value - a.estimate) : 0.0);
    }
  }
  using Conversion = models::EpsilonAtDelta (*)(std::span<const double>, std::span<const double>, double);
  for (const Conversion convert : {Conversion(&models::mironovEpsilon), Conversion(&models::cksEpsilon)})
    for (double delta : case_.privacy.deltaGrid) {
      const auto pair = [&](const std::array<std::vector<double>, 2>& r) {
        const double a = convert(orders, r[0], delta).epsilon, b = convert(orders, r[1], delta).epsilon;
        return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
      };
      NumberAccuracy a{pair(value), kNaN, pair(upper), false, Uncertainty::NotComputed};
      if (std::isnan(a.value)) {
        out.push_back(a);
        continue;
      }
      const double low = pair(lower);
      if (std::isnan(a.conservative)) a.conservative = INFINITY;
      a.estimate = std::max(a.conservative - a.value, a.value - low);
      a.certified = std::isfinite(a.estimate) && a.conservative - low <= case_.accuracy.rtol * std::fabs(a.value);
      a.reason = a.certified ? Uncertainty::Certified : Uncertainty::AboveTolerance;
      if (!a.certified)  // the reason of the orders that keep the bound wide
        for (int dir = 0; dir < 2; ++dir)
          for (std::size_t k = 0; k < K; ++k)
            if (!out[(dir == 0 ? forward : reverse) + k].certified &&
                out[(dir == 0 ? forward : reverse) + k].reason != Uncertainty::AboveTolerance &&
                a.reason == Uncertainty::AboveTolerance)
              a.reason = out[(dir == 0 ? forward : reverse) + k].reason;
      out.push_back(a);
    }
}

void AccuracyJudge::boundProfileByRenyi(std::vector<NumberAccuracy>& profile,
                                        const std::vector<NumberAccuracy>& numbers) const {
  const std::size_t K = case_.divergence.orders.size();
  const std::size_t forward = 2, reverse = 2 + K + case_.privacy.deltaGrid.size() + 1;
  if (numbers.size() < reverse + K) return;
  std::vector<double> orders;
  for (const auto& o : case_.divergence.orders) orders.push_back(o.alpha);
  std::array<std::vector<double>, 2> upper;  // the conservative R_alpha per direction (+inf where nothing bounds it)
  for (int dir = 0; dir < 2; ++dir)
    for (std::size_t k = 0; k < K; ++k) {
      const double c = numbers[(dir == 0 ? forward : reverse) + k].conservative;
      upper[static_cast<std::size_t>(dir)].push_back(std::isnan(c) ? INFINITY : c);
    }
  for (std::size_t k = 0; k < eps_.size() && 2 * k + 1 < profile.size(); ++k)
    for (std::size_t dir = 0; dir < 2; ++dir) {
      NumberAccuracy& a = profile[2 * k + dir];
      if (std::isnan(a.value) || !(eps_[k] >= 0.0)) continue;
      a.conservative = std::min(a.conservative, models::cksDelta(orders, upper[dir], eps_[k]));
    }
}

namespace {
/// The lower convex envelope of the points (x_i, y_i), sorted by x then y, evaluated at each x_i (Andrew's monotone
/// chain; of points with equal x the lowest counts).
std::vector<double> lowerConvexEnvelope(const std::vector<std::pair<double, double>>& points) {
  std::vector<std::pair<double, double>> hull;
  for (const auto& p : points) {
    if (!hull.empty() && hull.back().first == p.first) continue;  // the same x, a larger y
    while (hull.size() >= 2) {
      const auto& a = hull[hull.size() - 2];
      const auto& b = hull.back();
      // b on or above the segment from a to p: not a vertex of the lower envelope
      if ((b.first - a.first) * (p.second - a.second) - (b.second - a.second) * (p.first - a.first) <= 0.0)
        hull.pop_back();
      else
        break;
    }
    hull.push_back(p);
  }
  std::vector<double> out;
  out.reserve(points.size());
  for (const auto& p : points) {
    const auto it = std::lower_bound(hull.begin(), hull.end(), p.first,
                                     [](const std::pair<double, double>& h, double x) { return h.first < x; });
    if (it == hull.end()) {
      out.push_back(hull.back().second);
    } else if (it->first == p.first || it == hull.begin()) {
      out.push_back(it->second);
    } else {
      const auto& a = *(it - 1);
      const auto& b = *it;
      out.push_back(a.second + (b.second - a.second) * (p.first - a.first) / (b.first - a.first));
    }
  }
  return out;
}
}  // namespace

void AccuracyJudge::boundProfileByEpsilons(std::vector<NumberAccuracy>& profile,
                                           const std::vector<NumberAccuracy>& numbers) const {
  const std::size_t first = 2 + case_.divergence.orders.size();
  const auto& deltas = case_.privacy.deltaGrid;
  if (numbers.size() < first + deltas.size()) return;
  // TV = delta_pq(0) = delta_qp(0) >= delta(eps) for every eps >= 0: TV's conservative value bounds the whole profile.
  const double tvBound = numbers[1].conservative;
  if (tvBound >= 0.0)
    for (std::size_t k = 0; k < eps_.size() && 2 * k + 1 < profile.size(); ++k)
      for (std::size_t dir = 0; dir < 2; ++dir) {
        NumberAccuracy& a = profile[2 * k + dir];
        if (!std::isnan(a.value) && eps_[k] >= 0.0)
          a.conservative = std::min(a.conservative, std::max(tvBound, a.value));
      }
  std::vector<std::pair<double, double>> epsBounds;  // (conservative eps(delta_j), delta_j)
  for (std::size_t j = 0; j < deltas.size(); ++j) {
    const double bound = numbers[first + j].conservative;  // >= the pair's true eps(delta_j), or +inf / NaN
    if (!(bound < INFINITY) || !(bound >= 0.0)) continue;
    epsBounds.emplace_back(bound, deltas[j]);
    for (std::size_t k = 0; k < eps_.size() && 2 * k + 1 < profile.size(); ++k) {
      if (!(eps_[k] >= bound)) continue;
      for (std::size_t dir = 0; dir < 2; ++dir) {
        NumberAccuracy& a = profile[2 * k + dir];
        if (!std::isnan(a.value)) a.conservative = std::min(a.conservative, deltas[j]);
      }
    }
  }
  // Convexity: delta(eps) = sup_A P(A) - e^eps Q(A) is convex in x = e^eps, so between any two eps whose delta is
  // bounded it lies below the chord (in x) of their bounds, and the lower convex envelope (in x) of all the bounds
  // (the grid's conservative values and the points above) bounds it at every eps of the grid. It matters between the
  // points of eps(delta): cases/dpsgd-cyclic-1d.toml's delta_qp(1.1) kept the bound 1e-5 of eps(1e-5) = 0.968 up to
  // eps(1e-6) = 1.187, where the chord gives 3.8e-6. x is taken relative to the largest eps (no overflow); eps more
  // than 700 below it take no part.
  double top = -INFINITY;
  for (double e : eps_) top = std::max(top, e);
  for (const auto& b : epsBounds) top = std::max(top, b.first);
  constexpr std::size_t kNotOnTheGrid = static_cast<std::size_t>(-1);
  for (std::size_t dir = 0; dir < 2; ++dir) {
    struct Bound {
      double x, delta;
      std::size_t k;  // the grid's index, or kNotOnTheGrid
    };
    std::vector<Bound> bounds;
    for (std::size_t k = 0; k < eps_.size() && 2 * k + 1 < profile.size(); ++k) {
      const NumberAccuracy& a = profile[2 * k + dir];
      if (!std::isnan(a.value) && std::isfinite(a.conservative) && eps_[k] >= top - 700.0)
        bounds.push_back({std::exp(eps_[k] - top), a.conservative, k});
    }
    for (const auto& b : epsBounds)
      if (b.first >= top - 700.0) bounds.push_back({std::exp(b.first - top), b.second, kNotOnTheGrid});
    if (bounds.size() < 3) continue;
    std::sort(bounds.begin(), bounds.end(),
              [](const Bound& a, const Bound& b) { return a.x < b.x || (a.x == b.x && a.delta < b.delta); });
    std::vector<std::pair<double, double>> points;
    for (const auto& b : bounds) points.emplace_back(b.x, b.delta);
    const std::vector<double> envelope = lowerConvexEnvelope(points);
    for (std::size_t i = 0; i < bounds.size(); ++i) {
      if (bounds[i].k == kNotOnTheGrid) continue;
      NumberAccuracy& a = profile[2 * bounds[i].k + dir];
      a.conservative = std::min(a.conservative, std::max(envelope[i] * (1.0 + 1e-12), 0.0));
    }
  }
}

void AccuracyJudge::boundEpsilonsByProfile(std::vector<NumberAccuracy>& numbers,
                                           const std::vector<NumberAccuracy>& profile) const {
  const std::size_t first = 2 + case_.divergence.orders.size();
  const auto& deltas = case_.privacy.deltaGrid;
  if (numbers.size() < first + deltas.size() || eps_.empty() || profile.size() < 2 * eps_.size()) return;
  // TV is either direction's delta(0): the smaller of their conservative values bounds it (never below its value).
  for (std::size_t k = 0; k < eps_.size(); ++k) {
    if (eps_[k] != 0.0) continue;
    NumberAccuracy& tv = numbers[1];
    const double bound = std::min(profile[2 * k].conservative, profile[2 * k + 1].conservative);
    if (!std::isnan(tv.value) && bound >= 0.0) tv.conservative = std::min(tv.conservative, std::max(bound, tv.value));
  }
  // The grid's eps in increasing order (the case's grid is; sorted here all the same).
  std::vector<std::size_t> order(eps_.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return eps_[a] < eps_[b]; });
  const auto directionBound = [&](std::size_t dir, double delta) {
    // the smallest eps at which the chord (in e^eps) of the conservative values at consecutive grid eps reaches delta
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::size_t k = order[i];
      const NumberAccuracy& b = profile[2 * k + dir];
      if (std::isnan(b.value) || !(eps_[k] >= 0.0) || !(b.conservative <= delta)) continue;
      if (i == 0) return eps_[k];
      const std::size_t j = order[i - 1];
      const NumberAccuracy& a = profile[2 * j + dir];
      if (std::isnan(a.value) || !std::isfinite(a.conservative) || !(a.conservative > b.conservative))
        return eps_[k];
      // x = e^(eps - eps_k) on [e^(eps_j - eps_k), 1]: the chord from (x_a, A) to (1, B) meets delta at x*
      const double xa = std::exp(eps_[j] - eps_[k]);
      const double x = xa + (a.conservative - delta) / (a.conservative - b.conservative) * (1.0 - xa);
      return std::min(eps_[k], eps_[k] + std::log(x) + 1e-12 * std::max(1.0, std::fabs(eps_[k])));
    }
    return static_cast<double>(INFINITY);
  };
  for (std::size_t j = 0; j < deltas.size(); ++j) {
    NumberAccuracy& a = numbers[first + j];
    if (std::isnan(a.value)) continue;
    const double bound = std::max(directionBound(0, deltas[j]), directionBound(1, deltas[j]));
    if (bound < a.conservative) a.conservative = std::max(bound, 0.0);
  }
}

void AccuracyJudge::boundZeroEpsilons(const solver::DivergenceValues& v, const std::vector<NumberAccuracy>& profile,
                                      std::vector<NumberAccuracy>& out) const {
  // eps = 0 (delta(0) = TV <= delta) is only as sure as TV: where TV's conservative value exceeds delta, eps may be
  // positive (measured: 0 on 24, 12 and 6 cells, certified, against the closed form 1.6e-3). Not certified then; the
  // conservative value is the smallest eps of the grid whose conservative delta(eps) is within delta both ways. Where
  // TV's conservative value is within delta, the truth is 0: proved.
  const std::size_t first = 2 + case_.divergence.orders.size();
  for (std::size_t j = 0; j < case_.privacy.deltaGrid.size() && j < v.exactEpsilon.size(); ++j) {
    NumberAccuracy& a = out[first + j];
    const double delta = case_.privacy.deltaGrid[j];
    if (v.exactEpsilon[j].pair.status() != models::ExactEpsilonStatus::Zero) continue;
    if (out[1].conservative <= delta) {
      a.certified = true;  // TV <= its conservative value <= delta: eps = 0 exactly
      a.reason = Uncertainty::Certified;
      a.estimate = 0.0;
      a.conservative = 0.0;
      continue;
    }
    double bound = INFINITY;
    for (std::size_t k = 0; k < eps_.size() && 2 * k + 1 < profile.size(); ++k)
      if (profile[2 * k].conservative <= delta && profile[2 * k + 1].conservative <= delta) {
        bound = eps_[k];
        break;
      }
    a.certified = false;
    if (a.reason == Uncertainty::Certified) a.reason = Uncertainty::ZeroUnproven;
    a.conservative = bound;  // the judge's value + estimate bounds nothing of a zero
    if (!std::isnan(a.estimate)) a.estimate = std::max(a.estimate, a.conservative - a.value);
  }
}

void AccuracyJudge::applyDensityTvBound(const solver::DivergenceValues& v, const std::array<double, 2>& m,
                                        double stateTv, std::vector<NumberAccuracy>& out) const {
  const std::size_t orders = case_.divergence.orders.size();
  const std::size_t firstEps = 2 + orders, reverseFirst = firstEps + case_.privacy.deltaGrid.size();
  // KL and R_alpha (both directions): a TV bound bounds nothing of them. The walls' removed mass does not either, and
  // the wall-share test of their statuses cannot see it (absorbing walls empty the cells beside them; measured: R_10
  // 2e-5 low with 5e-9 of the mass removed and every wall share below 1e-6): beyond kAbsorbedMassGuard neither is
  // certified.
  // The start's cut-off tail acts alike: measured, 7.4e-7 of N(0, 0.5) cut by [-3.5, 3.5] put R_2 0.25 % off after 5
  // noisy-GD steps (the tilted law p^2/q weighs the start's tail), with every wall share below 1e-6.
  const Uncertainty tvReason = tvBoundReason(v);
  if (v.mixtureTvBound || absorbedBeyondGuard(v.absorbedMass) || v.startTruncation > kAbsorbedMassGuard)
    for (std::size_t k = 0; k < out.size(); ++k)
      if (k != 1 && (k < firstEps || k >= reverseFirst)) uncertifiedAtLimit(out[k], INFINITY, tvReason, false);
  const bool tvWasCertified = out[1].certified;
  addDensityBound(out[1], m[0] + m[1], case_.accuracy.rtol, 1.0);
  if (tvWasCertified && !out[1].certified) out[1].reason = tvReason;
  // eps(delta): each direction's root moved to where its delta~(eps) plus the bound falls to delta
  // (epsilonShiftBound), the larger of the two moved roots against the pair's value; +inf where none is found.
  for (std::size_t j = 0; j < case_.privacy.deltaGrid.size() && j < v.exactEpsilon.size(); ++j) {
    NumberAccuracy& a = out[firstEps + j];
    if (std::isnan(a.value) || std::isnan(a.estimate)) continue;  // no estimate: conservative +inf already
    const double delta = case_.privacy.deltaGrid[j];
    const models::PairEpsilon& pair = v.exactEpsilon[j].pair;
    const double movedPQ = pair.pq.epsilon + epsilonShiftBound(pair.pq, delta, eps_, v.hockeyStickPQ, m[0], m[1]);
    const double movedQP = pair.qp.epsilon + epsilonShiftBound(pair.qp, delta, eps_, v.hockeyStickQP, m[1], m[0]);
    const double shift = std::max(movedPQ, movedQP) - a.value;
    a.estimate += std::max(0.0, std::isnan(shift) ? INFINITY : shift);
    a.conservative = std::max(a.conservative, a.value + a.estimate);
    if (a.certified && !(a.estimate <= case_.accuracy.rtol * std::fabs(a.value))) {
      a.certified = false;
      a.reason = tvReason;
    }
    // The integrator's bound alone moves the root beyond rtol: no finer mesh helps (NoiseFloor, whose remedy is the
    // integrator's; --certify switches to the positive series).
    if (stateTv > 0.0) {
      const double statePQ = epsilonShiftBound(pair.pq, delta, eps_, v.hockeyStickPQ, stateTv, stateTv);
      const double stateQP = epsilonShiftBound(pair.qp, delta, eps_, v.hockeyStickQP, stateTv, stateTv);
      const double stateShift = std::max(pair.pq.epsilon + statePQ, pair.qp.epsilon + stateQP) - a.value;
      if (!(std::max(0.0, stateShift) <= case_.accuracy.rtol * std::fabs(a.value))) {
        a.certified = false;
        a.reason = Uncertainty::NoiseFloor;
      }
    }
  }
}

}  // namespace fpdp::app
