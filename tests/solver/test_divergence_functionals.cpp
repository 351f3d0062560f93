// The divergence functionals of MATH.md §3 beyond R_alpha/KL/TV (solver/functionals/Divergences.hpp): d R_alpha/d alpha,
// E_alpha, the Rényi information I_alpha/E_alpha and I_alpha^Sigma/E_alpha, the hockey-stick curve delta(eps) both
// ways, and the privacy-loss histograms, against the closed forms of MATH.md §6 (models/GaussianFunctionals.hpp) for
// Gaussians with equal and unequal covariances in 1-D and 2-D. Densities: exact cell averages through the
// production path (fourth-order point values, midpoint rule), refined to measure the observed order.
#define BOOST_TEST_MODULE solver_divergence_functionals
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>

#include "DivergenceFunctionalsFixture.hpp"
#include "PetscFixture.hpp"
#include "TestSupport.hpp"
#include "models/GaussianFunctionals.hpp"

BOOST_TEST_GLOBAL_FIXTURE(PetscFixture);

using namespace fpdp;
using solver::RenyiStatus;

namespace {

using fpdp::testing::vec;

models::Matrix mat2(double a, double b, double c) {
  models::Matrix S(2, 2);
  S << a, b, b, c;
  return S;
}

models::Matrix rotated(double angle, double e1, double e2) {
  models::Matrix R(2, 2);
  R << std::cos(angle), -std::sin(angle), std::sin(angle), std::cos(angle);
  models::Matrix D = models::Matrix::Zero(2, 2);
  D(0, 0) = e1, D(1, 1) = e2;
  models::Matrix S = R * D * R.transpose();
  return 0.5 * (S + S.transpose());
}

double rel(double got, double exact) { return std::fabs(got - exact) / std::fabs(exact); }

/// d R_alpha/d alpha of the closed form by the central difference with step h = 1e-4: truncation h^2 R'''/6 ~ 1e-9
/// relative for these pairs, round-off 1e-16 R/h ~ 1e-12.
double renyiSlope(const models::Gaussian& p, const models::Gaussian& q, double alpha) {
  const double h = 1e-4;
  return (models::gaussianRenyi(p.mean(), p.covariance(), q.mean(), q.covariance(), alpha + h) -
          models::gaussianRenyi(p.mean(), p.covariance(), q.mean(), q.covariance(), alpha - h)) /
         (2 * h);
}

/// Errors of every functional against the closed forms, for one mesh.
struct Errors {
  double renyi = 0, kl = 0, slope = 0, info = 0, infoSigma = 0, hockey = 0;  // largest relative errors (hockey: abs)
};

Errors measure(const models::Gaussian& p, const models::Gaussian& q, double L, int cells,
               const std::vector<double>& orders, const std::vector<double>& eps, const models::Matrix& Sigma,
               bool hockeyClosedForm) {
  solver::FunctionalSettings s{orders, eps, 0, Sigma};
  const auto v = testing::functionalsOfExactAverages(p, q, L, cells, s);
  Errors e;
  const auto &m1 = p.mean(), &m2 = q.mean();
  const auto &S1 = p.covariance(), &S2 = q.covariance();
  const models::Matrix I = models::Matrix::Identity(p.dim(), p.dim());
  e.kl = rel(v.kl, models::gaussianKL(m1, S1, m2, S2));
  for (std::size_t k = 0; k < orders.size(); ++k) {
    BOOST_TEST((v.renyiStatus[k] == RenyiStatus::Finite), "order " << orders[k] << " at " << cells << " cells");
    e.renyi = std::max(e.renyi, rel(v.renyi[k], models::gaussianRenyi(m1, S1, m2, S2, orders[k])));
    e.slope = std::max(e.slope, rel(v.dRenyiDAlpha[k], renyiSlope(p, q, orders[k])));
    e.info = std::max(e.info, rel(v.informationRatio[k], models::gaussianInformationRatio(m1, S1, m2, S2, orders[k], I)));
    e.infoSigma = std::max(
        e.infoSigma, rel(v.informationRatioSigma[k], models::gaussianInformationRatio(m1, S1, m2, S2, orders[k], Sigma)));
    // E_alpha itself: log E_alpha = (alpha - 1) R_alpha and E_alpha - 1 = expm1 of it.
    BOOST_TEST(std::fabs(v.logEAlpha[k] - (orders[k] - 1) * v.renyi[k]) <= 1e-14 * v.logEAlpha[k]);
    BOOST_TEST(std::fabs(v.eAlphaMinusOne[k] - std::expm1(v.logEAlpha[k])) <= 1e-13 * v.eAlphaMinusOne[k]);
  }
  if (hockeyClosedForm)
    for (std::size_t k = 0; k < eps.size(); ++k) {
      const double ePQ = std::fabs(v.hockeyStickPQ[k] - models::gaussianHockeyStick(m1, S1, m2, S2, eps[k]));
      const double eQP = std::fabs(v.hockeyStickQP[k] - models::gaussianHockeyStick(m2, S2, m1, S1, eps[k]));
      e.hockey = std::max({e.hockey, ePQ, eQP});
    }
  // delta(0) is the total variation distance, both ways (the same sum of non-negative terms, read two ways).
  if (!eps.empty() && eps[0] == 0.0) {
    BOOST_TEST(std::fabs(v.hockeyStickPQ[0] - v.tv) <= 1e-13 * v.tv);
    BOOST_TEST(std::fabs(v.hockeyStickQP[0] - v.tv) <= 1e-13 * v.tv);
  }
  return e;
}

/// Prints the refinement table and checks the observed orders: at least `order - 0.3` for R_alpha, KL, d R/d alpha,
/// the information ratios and delta(eps) between each pair of meshes. delta(eps) integrates max(p - e^eps q, 0),
/// which has a kink where p = e^eps q: the plain midpoint sum is second order there (its error about |f'| h^2/8 per
/// kink in 1-D), so the fourth order asked of delta is the kink correction's (HockeyStickKinks.hpp).
void refinementStudy(const char* title, const models::Gaussian& p, const models::Gaussian& q, double L,
                     const std::vector<int>& cells, const std::vector<double>& orders, const std::vector<double>& eps,
                     const models::Matrix& Sigma, bool hockeyClosedForm, double order, double hockeyOrder) {
  BOOST_TEST_MESSAGE(title << "\n  N      R_alpha   rate   KL        rate   dR/da     rate   I/E       rate   "
                              "I^S/E     rate   delta     rate");
  Errors prev;
  for (std::size_t n = 0; n < cells.size(); ++n) {
    const Errors e = measure(p, q, L, cells[n], orders, eps, Sigma, hockeyClosedForm);
    auto rate = [&](double a, double b) { return n == 0 ? 0.0 : std::log2(a / b); };
    char line[400];
    std::snprintf(line, sizeof line, "  %-5d  %.2e  %5.2f  %.2e  %5.2f  %.2e  %5.2f  %.2e  %5.2f  %.2e  %5.2f  %.2e  %5.2f",
                  cells[n], e.renyi, rate(prev.renyi, e.renyi), e.kl, rate(prev.kl, e.kl), e.slope,
                  rate(prev.slope, e.slope), e.info, rate(prev.info, e.info), e.infoSigma,
                  rate(prev.infoSigma, e.infoSigma), e.hockey, rate(prev.hockey, e.hockey));
    BOOST_TEST_MESSAGE(line);
    if (n > 0) {
      BOOST_TEST(rate(prev.renyi, e.renyi) >= order - 0.3, title << " R_alpha at " << cells[n]);
      BOOST_TEST(rate(prev.kl, e.kl) >= order - 0.3, title << " KL at " << cells[n]);
      BOOST_TEST(rate(prev.slope, e.slope) >= order - 0.3, title << " dR/dalpha at " << cells[n]);
      BOOST_TEST(rate(prev.info, e.info) >= order - 0.3, title << " I/E at " << cells[n]);
      BOOST_TEST(rate(prev.infoSigma, e.infoSigma) >= order - 0.3, title << " I^Sigma/E at " << cells[n]);
      if (hockeyClosedForm)
        BOOST_TEST(rate(prev.hockey, e.hockey) >= hockeyOrder - 0.3, title << " delta at " << cells[n]);
    }
    prev = e;
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(equal_covariances_1d) {
  // p = N(0.6, 1), q = N(0, 1) on [-12, 12]: R_alpha = 0.18 alpha, dR/dalpha = 0.18, I/E = 0.36 (x sigma^2 = 0.5 in
  // the Sigma form), delta(eps) closed form. The tilted law of order 4 is centred at 2.4, 9.6 s.d. from the wall.
  const models::Gaussian p(vec({0.6}), models::Matrix::Identity(1, 1));
  const models::Gaussian q(vec({0.0}), models::Matrix::Identity(1, 1));
  refinementStudy("1-D, equal variances", p, q, 12.0, {60, 120, 240}, {1.5, 2.0, 4.0}, {0.0, 0.1, 0.5, 1.0, 2.0},
                  0.5 * models::Matrix::Identity(1, 1), true, 4.0, 4.0);
}

BOOST_AUTO_TEST_CASE(equal_covariances_2d) {
  const models::Matrix S = mat2(1.0, 0.3, 0.8);
  const models::Gaussian p(vec({0.5, -0.3}), S);
  const models::Gaussian q(vec({0.0, 0.2}), S);
  refinementStudy("2-D, equal covariances", p, q, 8.0, {32, 64, 128}, {1.5, 2.0, 4.0}, {0.0, 0.25, 1.0, 2.0},
                  mat2(0.5, 0.1, 0.3), true, 4.0, 4.0);
}

BOOST_AUTO_TEST_CASE(unequal_variances_1d) {
  // p = N(0.3, 0.7), q = N(0, 1): S_alpha = 0.7 + 0.3 alpha > 0, finite for every order.
  const models::Gaussian p(vec({0.3}), 0.7 * models::Matrix::Identity(1, 1));
  const models::Gaussian q(vec({0.0}), models::Matrix::Identity(1, 1));
  refinementStudy("1-D, unequal variances", p, q, 12.0, {60, 120, 240}, {1.5, 2.0, 4.0}, {0.0, 0.1, 0.5, 1.0},
                  0.5 * models::Matrix::Identity(1, 1), true, 4.0, 4.0);
}

BOOST_AUTO_TEST_CASE(tv_and_delta_keep_their_kink_correction_on_fine_meshes) {
  // On 16000 cells of [-12, 12] the faces -12 + h i round at 12's magnitude, more than 1e-12 of h: the kink windows
  // must still be taken as uniform (Axis::equalWidths), or TV and delta(eps) fall back to the plain midpoint sum and
  // its O(h^2) kink error (about 1e-8 here; seen as TV changing by 3.4e-8 between 9600 and 19200 cells).
  const models::Gaussian p(vec({0.6}), models::Matrix::Identity(1, 1));
  const models::Gaussian q(vec({0.0}), models::Matrix::Identity(1, 1));
  const std::vector<double> eps{0.0, 0.5};
  solver::FunctionalSettings s{{2.0}, eps, 0, 0.5 * models::Matrix::Identity(1, 1)};
  const auto v = testing::functionalsOfExactAverages(p, q, 12.0, 16000, s);
  const auto &m1 = p.mean(), &m2 = q.mean();
  const auto &S1 = p.covariance(), &S2 = q.covariance();
  const double tv = models::gaussianHockeyStick(m1, S1, m2, S2, 0.0);
  BOOST_TEST_MESSAGE("TV on 16000 cells: " << v.tv << " against " << tv);
  BOOST_TEST(std::fabs(v.tv - tv) <= 1e-11);
  for (std::size_t k = 0; k < eps.size(); ++k) {
    BOOST_TEST(std::fabs(v.hockeyStickPQ[k] - models::gaussianHockeyStick(m1, S1, m2, S2, eps[k])) <= 1e-11);
    BOOST_TEST(std::fabs(v.hockeyStickQP[k] - models::gaussianHockeyStick(m2, S2, m1, S1, eps[k])) <= 1e-11);
  }
}

BOOST_AUTO_TEST_CASE(unequal_rotated_covariances_2d) {
  // S1 = R diag(1.5, 0.5) R^T (p), S2 = R diag(1, 0.5) R^T (q), R = 30 degrees: finite iff alpha < 3.
  const double angle = std::numbers::pi / 6;
  const models::Gaussian p(vec({0.3, 0.0}), rotated(angle, 1.5, 0.5));
  const models::Gaussian q(vec({0.0, 0.1}), rotated(angle, 1.0, 0.5));
  refinementStudy("2-D, unequal rotated covariances", p, q, 12.0, {48, 96, 192}, {1.5, 2.0}, {},
                  mat2(0.5, 0.1, 0.3), false, 4.0, 2.0);
}

BOOST_AUTO_TEST_CASE(finite_and_infinite_orders_on_both_sides_of_the_critical_order) {
  // p = N(0, 2), q = N(0, 1): S_alpha = 2 - alpha, finite iff alpha < 2. alpha = 1.9: the tilted law has variance
  // 2/(2 - alpha) = 20 (s.d. 4.5), the box [-30, 30] holds 6.7 s.d. (a wider box would take q below the range of
  // doubles, 1e-308, where p is not: q = 0 there makes every order +inf); alpha = 2.1: +inf, detected from the convex
  // growth of the log-integrand toward the walls. Then d R/d alpha is +inf and I_alpha/E_alpha undefined (NaN).
  const models::Gaussian p(vec({0.0}), 2.0 * models::Matrix::Identity(1, 1));
  const models::Gaussian q(vec({0.0}), models::Matrix::Identity(1, 1));
  const models::Matrix I = models::Matrix::Identity(1, 1);
  double prevR = 0, prevI = 0, prevS = 0;
  for (int cells : {300, 600}) {
    const auto v = testing::functionalsOfExactAverages(p, q, 30.0, cells, {{1.9, 2.1}, {}, 0, std::nullopt});
    BOOST_TEST((v.renyiStatus[0] == RenyiStatus::Finite));
    BOOST_TEST((v.renyiStatus[1] == RenyiStatus::InfiniteDetected));
    BOOST_TEST(std::isinf(v.renyi[1]));
    BOOST_TEST(std::isinf(v.dRenyiDAlpha[1]));
    BOOST_TEST(std::isinf(v.logEAlpha[1]));
    BOOST_TEST(std::isnan(v.informationRatio[1]));
    const double eR = rel(v.renyi[0], models::gaussianRenyi(p.mean(), p.covariance(), q.mean(), q.covariance(), 1.9));
    const double eS = rel(v.dRenyiDAlpha[0], renyiSlope(p, q, 1.9));
    const double eI = rel(v.informationRatio[0],
                          models::gaussianInformationRatio(p.mean(), p.covariance(), q.mean(), q.covariance(), 1.9, I));
    BOOST_TEST_MESSAGE("alpha 1.9, " << cells << " cells: rel. errors R " << eR << ", dR/dalpha " << eS << ", I/E "
                                     << eI << "; alpha 2.1: " << solver::renyiStatusName(v.renyiStatus[1])
                                     << " (box number " << v.renyiOnBox[1] << ")");
    if (prevR > 0) {  // fourth order (the wall share is ~1e-9, far below the discretisation error)
      BOOST_TEST(std::log2(prevR / eR) >= 3.7);
      BOOST_TEST(std::log2(prevS / eS) >= 3.7);
      BOOST_TEST(std::log2(prevI / eI) >= 3.7);
    }
    prevR = eR, prevS = eS, prevI = eI;
  }
  // 2-D: S1 = R diag(1.5, 0.5) R^T, S2 = R diag(1, 0.5) R^T (30 degrees): finite iff alpha < 3. alpha = 2.5 has a
  // tilted law of variance 6 along R e_1 (s.d. 2.4; [-20, 20]^2 holds 8 s.d.), alpha = 3.5 is +inf.
  const double angle = std::numbers::pi / 6;
  const models::Gaussian p2(vec({0.0, 0.0}), rotated(angle, 1.5, 0.5));
  const models::Gaussian q2(vec({0.0, 0.0}), rotated(angle, 1.0, 0.5));
  double prevR2 = 0, prevI2 = 0;
  for (int cells : {120, 240}) {
    const auto w = testing::functionalsOfExactAverages(p2, q2, 20.0, cells, {{2.5, 3.5}, {}, 0, std::nullopt});
    const double eR = rel(w.renyi[0], models::gaussianRenyi(p2.mean(), p2.covariance(), q2.mean(), q2.covariance(), 2.5));
    const double eI = rel(w.informationRatio[0], models::gaussianInformationRatio(p2.mean(), p2.covariance(), q2.mean(),
                                                                                  q2.covariance(), 2.5,
                                                                                  models::Matrix::Identity(2, 2)));
    BOOST_TEST_MESSAGE("2-D, " << cells << "^2, alpha 2.5: rel. errors R " << eR << ", I/E " << eI << " ("
                               << solver::renyiStatusName(w.renyiStatus[0]) << "); alpha 3.5: "
                               << solver::renyiStatusName(w.renyiStatus[1]));
    BOOST_TEST((w.renyiStatus[0] == RenyiStatus::Finite));
    BOOST_TEST((w.renyiStatus[1] == RenyiStatus::InfiniteDetected));
    BOOST_TEST(std::isinf(w.renyi[1]));
    if (prevR2 > 0) {
      BOOST_TEST(std::log2(prevR2 / eR) >= 3.7);
      BOOST_TEST(std::log2(prevI2 / eI) >= 3.7);
    }
    prevR2 = eR, prevI2 = eI;
  }
}

BOOST_AUTO_TEST_CASE(tiny_divergences_keep_their_digits) {
  // p = N(d/2, 1), q = N(-d/2, 1): R_alpha = alpha d^2/2, d R/d alpha = d^2/2, I/E = d^2, delta(eps) closed form.
  // The relative discretisation error of every functional is c_h + O(d^2) (each is d^2 times a discretised integral
  // plus O(d^4)), so from d = 1e-4 (reference) to d = 1e-7 (R_2 = 1e-14) it changes by about 1e-8 x c_h ~ 1e-11
  // plus what the inputs carry: the exact cell averages are rounded (1e-16 relative), so each p - q ~ d p is known to
  // 1e-16/d relative, and every functional inherits errors of order eps_mach/d (measured: 6 eps_mach/d). Bound:
  // 100 eps_mach/d. Lost digits (E_alpha - 1 as a difference of numbers near 1 errs by eps_mach/d^2 = 1% at
  // d = 1e-7) would exceed it by 1e5. The eps grid scales with d so that the kinks of max(p - e^eps q, 0), at
  // x = eps/d, do not move.
  const std::vector<double> orders{1.1, 2.0, 10.0, 64.0};
  const models::Matrix I = models::Matrix::Identity(1, 1);
  std::vector<double> reference;
  for (double d : {1e-4, 1e-6, 1e-7}) {
    const models::Gaussian p(vec({0.5 * d}), I), q(vec({-0.5 * d}), I);
    const std::vector<double> eps{0.0, 0.5 * d, d};
    const auto v = testing::functionalsOfExactAverages(p, q, 12.0, 240, {orders, eps, 0, std::nullopt});
    std::vector<double> errors{rel(v.kl, 0.5 * d * d)};
    for (std::size_t k = 0; k < orders.size(); ++k) {
      errors.push_back(rel(v.renyi[k], 0.5 * orders[k] * d * d));
      errors.push_back(rel(v.dRenyiDAlpha[k], 0.5 * d * d));
      errors.push_back(rel(v.informationRatio[k], d * d));
      errors.push_back(rel(v.eAlphaMinusOne[k], std::expm1(0.5 * orders[k] * (orders[k] - 1) * d * d)));
    }
    for (std::size_t k = 0; k < eps.size(); ++k) {
      errors.push_back(rel(v.hockeyStickPQ[k], models::gaussianHockeyStick(p.mean(), I, q.mean(), I, eps[k])));
      errors.push_back(rel(v.hockeyStickQP[k], models::gaussianHockeyStick(q.mean(), I, p.mean(), I, eps[k])));
    }
    double worst = 0, worstShift = 0;
    for (std::size_t i = 0; i < errors.size(); ++i) {
      worst = std::max(worst, errors[i]);
      if (!reference.empty()) worstShift = std::max(worstShift, std::fabs(errors[i] - reference[i]));
    }
    BOOST_TEST_MESSAGE("d = " << d << ": R_2 = " << v.renyi[1] << ", largest relative error " << worst
                              << ", largest change from d = 1e-4 " << worstShift);
    if (reference.empty()) reference = errors;
    else BOOST_TEST(worstShift <= 100 * std::numeric_limits<double>::epsilon() / d, "d = " << d);
  }
}

BOOST_AUTO_TEST_CASE(privacy_loss_histograms) {
  // Equal variances: log r(Theta) with Theta ~ p is N(mu^2/2, mu^2) (mu = 0.6), and log(q/p)(Theta) with Theta ~ q
  // has the same law. u = log r is affine, so a cell's value is exact and the histogram's CDF at a bin edge differs
  // from the law's only by the mass of the one cell that straddles the edge (at most h max p) and the quadrature error.
  const double mu = 0.6, L = 12.0;
  const int cells = 480;
  const models::Matrix I = models::Matrix::Identity(1, 1);
  const models::Gaussian p(vec({mu}), I), q(vec({0.0}), I);
  const auto v = testing::functionalsOfExactAverages(p, q, L, cells, {{2.0}, {}, 200, std::nullopt});
  const double h = 2 * L / cells, pMax = 1 / std::sqrt(2 * std::numbers::pi);
  for (const auto* hist : {&v.privacyLossP, &v.privacyLossQ}) {
    BOOST_TEST(hist->mass.size() == 200u);
    double total = hist->massInfinity, cdf = 0, worst = 0, mean = 0;
    for (double m : hist->mass) total += m;
    BOOST_TEST(std::fabs(total - 1.0) <= 1e-13);
    BOOST_TEST(hist->massInfinity == 0.0);
    for (std::size_t b = 0; b < hist->mass.size(); ++b) {
      cdf += hist->mass[b];
      mean += hist->mass[b] * (hist->lower + (b + 0.5) * hist->binWidth());
      const double edge = hist->lower + (b + 1) * hist->binWidth();
      const double exact = 0.5 * std::erfc(-(edge - 0.5 * mu * mu) / (mu * std::numbers::sqrt2));
      worst = std::max(worst, std::fabs(cdf - exact));
    }
    BOOST_TEST_MESSAGE("privacy-loss histogram on [" << hist->lower << ", " << hist->upper << "]: largest CDF error "
                                                     << worst << " (bound h max p = " << h * pMax << "), mean " << mean
                                                     << " (KL = " << 0.5 * mu * mu << ")");
    BOOST_TEST(worst <= h * pMax);
    // The mean of the bin centres: KL up to the binning (at most half a bin width).
    BOOST_TEST(std::fabs(mean - 0.5 * mu * mu) <= 0.5 * hist->binWidth());
  }
  // Where q vanishes and p does not, the privacy loss under p is +inf with p's mass there; under q it never is.
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_SELF, meshes::BoxMesh({meshes::Axis::uniform(0.0, 1.0, 4)}), 2);
  const solver::DivergenceFunctionals f(mesh, solver::FunctionalSettings{{2.0}, {0.0, 1.0}, 10, std::nullopt});
  std::vector<double> pv{1, 1, 1, 1}, qv{2, 2, 0, 0};
  const auto w = f.evaluate(pv.data(), qv.data(), 1);
  BOOST_TEST(w.privacyLossP.massInfinity == 0.5);
  BOOST_TEST(w.privacyLossQ.massInfinity == 0.0);
  // delta(eps) of the p mass where q = 0 stays 0.5 for every eps; the q-side cells give max(1 - e^eps, 0)/4 x 2 ...
  BOOST_TEST(w.hockeyStickPQ[0] == 0.5);
  BOOST_TEST(w.hockeyStickPQ[1] == 0.5);
  // ... and (q || p): q = 2 p on the first half: max(0.5 - e^eps 0.25, 0) x 2 cells -> 0.5 at eps = 0, 0 at eps = 1.
  BOOST_TEST(w.hockeyStickQP[0] == 0.5);
  BOOST_TEST(w.hockeyStickQP[1] == 0.0);
  BOOST_TEST(std::isinf(w.renyi[0]));
  BOOST_TEST(std::isinf(w.dRenyiDAlpha[0]));
}

BOOST_AUTO_TEST_CASE(singular_masses_enter_the_new_functionals_in_mass_form) {
  // Moving the content of some cells into singular masses (mass form) leaves E_alpha, d R/d alpha, delta(eps) and the
  // privacy-loss masses unchanged (the same terms, DivergenceFunctionals header). I_alpha's numerator has no
  // singular part (an atom carries no gradient), so the cells moved out and their stencil neighbours change it; the
  // neighbours whose stencils now meet an empty cell are reported as left out.
  const int N = 200;
  const meshes::DistributedBoxMesh mesh(PETSC_COMM_SELF, meshes::BoxMesh({meshes::Axis::uniform(-1.0, 1.0, N)}), 2);
  const solver::DivergenceFunctionals funcs(mesh, solver::FunctionalSettings{{1.5, 2.0, 10.0}, {0.0, 0.2}, 50,
                                                                              std::nullopt});
  const auto& w = mesh.ownedVolumes();
  std::vector<double> p(N), q(N);
  for (int c = 0; c < N; ++c) {
    const double x = -1.0 + (c + 0.5) * 2.0 / N;
    p[c] = std::exp(-4.0 * (x - 0.2) * (x - 0.2));
    q[c] = std::exp(-4.0 * x * x);
  }
  const auto whole = funcs.evaluate(p.data(), q.data(), 1);
  solver::SingularMasses atoms;
  auto pCut = p, qCut = q;
  for (int c : {0, 1, N - 1}) {
    atoms.p.push_back(w[c] * p[c]);
    atoms.q.push_back(w[c] * q[c]);
    pCut[c] = qCut[c] = 0.0;
  }
  const auto split = funcs.evaluate(pCut.data(), qCut.data(), 1, &atoms);
  const auto tol = boost::test_tools::tolerance(1e-12);
  for (std::size_t k = 0; k < 3; ++k) {
    BOOST_TEST(split.logEAlpha[k] == whole.logEAlpha[k], tol);
    BOOST_TEST(split.dRenyiDAlpha[k] == whole.dRenyiDAlpha[k], tol);
  }
  for (std::size_t k = 0; k < 2; ++k) {
    BOOST_TEST(split.hockeyStickPQ[k] == whole.hockeyStickPQ[k], tol);
    BOOST_TEST(split.hockeyStickQP[k] == whole.hockeyStickQP[k], tol);
  }
  double massWhole = 0, massSplit = 0;
  for (double m : whole.privacyLossP.mass) massWhole += m;
  for (double m : split.privacyLossP.mass) massSplit += m;
  BOOST_TEST(massSplit == massWhole, tol);
  BOOST_TEST(whole.informationExcludedMassP == 0.0);
  BOOST_TEST(split.informationExcludedMassP > 0.0);
}

BOOST_AUTO_TEST_CASE(hockey_stick_across_a_closed_kink_curve_2d) {
  // Unequal covariances: {p = e^eps q} is an ellipse, tangent to the lines of axis 0 at two points, where the corrected
  // line sums behave like a 3/2 power across lines (HockeyStickKinks.hpp). Against the closed form computed line by
  // line (models::gaussianHockeyStick), with TV = delta(0). In 2-D the plain sum's O(h^2) kink errors nearly average
  // out along a curve that crosses the cells at every offset, so this case shows the tangencies, not the correction
  // (which the 1-D studies above require: order 4 where the plain sum has 2).
  const double angle = std::numbers::pi / 6;
  const models::Gaussian p(vec({0.3, 0.0}), rotated(angle, 1.5, 0.5));
  const models::Gaussian q(vec({0.0, 0.1}), rotated(angle, 1.0, 0.5));
  const std::vector<double> eps{0.0, 0.25, 0.5};
  std::vector<double> exact;
  for (double e : eps) exact.push_back(models::gaussianHockeyStick(p.mean(), p.covariance(), q.mean(), q.covariance(), e));
  for (double e : eps) exact.push_back(models::gaussianHockeyStick(q.mean(), q.covariance(), p.mean(), p.covariance(), e));
  for (int cells : {40, 80, 160, 320}) {
    const auto v = testing::functionalsOfExactAverages(p, q, 12.0, cells, solver::FunctionalSettings{{2.0}, eps, 0, {}});
    std::vector<double> got(v.hockeyStickPQ);
    got.insert(got.end(), v.hockeyStickQP.begin(), v.hockeyStickQP.end());
    std::vector<double> err;
    for (std::size_t j = 0; j < got.size(); ++j) err.push_back(std::fabs(got[j] - exact[j]));
    BOOST_TEST_MESSAGE(cells << " cells: TV " << v.tv << " (exact " << exact[0] << "), largest error "
                             << *std::max_element(err.begin(), err.end()));
    BOOST_TEST(std::fabs(v.tv - exact[0]) <= 1.5 * err[0] + 1e-15);
    // The tangencies' O(h^2.5) term is not corrected and oscillates with their offset from the lattice: measured
    // 2.3e-5 at 160 cells and 6.6e-6 at 320 (1.3e-5 at 80); a regression guard, not an order.
    if (cells >= 160) BOOST_TEST(*std::max_element(err.begin(), err.end()) <= 3e-5, cells << " cells");
  }
}

// Where each order's integrand p^alpha q^(1-alpha) peaks, in standard deviations from the densities' means (the depth
// the accuracy estimate asks its companions to resolve): for p = N(mu, 1), q = N(0, 1) the tilted law is centred at
// alpha mu, alpha mu from q's mean and (alpha - 1) mu from p's; and the reverse direction alike.
BOOST_AUTO_TEST_CASE(the_depth_of_each_order_is_where_its_integrand_peaks) {
  const double mu = 0.6;
  const models::Gaussian p(vec({mu}), models::Matrix::Identity(1, 1));
  const models::Gaussian q(vec({0.0}), models::Matrix::Identity(1, 1));
  const std::vector<double> orders{1.5, 4.0, 10.0};
  solver::FunctionalSettings s{orders, {0.0}, 0, models::Matrix::Identity(1, 1)};
  s.reverseDirection = true;
  const int cells = 2400;
  const double L = 12.0, h = 2 * L / cells;
  const auto v = testing::functionalsOfExactAverages(p, q, L, cells, s);
  BOOST_TEST_REQUIRE(v.renyiDepth.size() == orders.size());
  BOOST_TEST_REQUIRE(v.reverse.renyiDepth.size() == orders.size());
  for (std::size_t k = 0; k < orders.size(); ++k) {
    BOOST_TEST(std::fabs(v.renyiDepth[k] - orders[k] * mu) <= h, "order " << orders[k] << ": " << v.renyiDepth[k]);
    BOOST_TEST(std::fabs(v.reverse.renyiDepth[k] - orders[k] * mu) <= h, "reverse " << orders[k]);
  }
}
