// The bounds of MATH.md §5 (models/PrivacyBounds.hpp): each formula against the paper's printed form (with the
// corrected misprints) or an independent computation; the quadratic noisy-GD closed form (item 6) against the exact
// Gaussian recursion of MATH.md §6 and against the shifted-divergence bound (item 5, equal for a point start);
// the ordering exact <= bounds 1-4; the continuous-time limit (item 7); and the assumption checks.
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>

#include "models/Gaussian.hpp"
#include "models/PrivacyBounds.hpp"

using namespace fpdp::models;

namespace {

Matrix scalar(double v, int d = 1) { return v * Matrix::Identity(d, d); }

/// A 1-D quadratic noisy-GD problem: l = (lambda/2)(theta - x)^2, S_g/n = gap.
BoundProblem quadraticGd(double lambda, double eta, double sigma2, double gap, double v0 = 0.0) {
  BoundProblem p;
  p.noisyGd = true;
  p.eta = eta;
  p.strongConvexity = lambda;
  p.smoothness = lambda;
  p.quadraticLoss = true;
  p.quadraticLambda = lambda;
  p.Sigma = p.SigmaPrime = scalar(sigma2);
  p.startCovariance = scalar(v0);
  p.worstCaseGap = gap;
  p.measuredGap = gap;
  return p;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_SUITE(privacy_bounds)

BOOST_AUTO_TEST_CASE(formulas_match_the_papers_as_printed) {
  // CYS Figure 1 setting: alpha = 10, lambda = 2, S_g = 4, n = 5000, eta = 0.02, sigma = 0.02 (g = S_g/n).
  const double alpha = 10, lambda = 2, Sg = 4, n = 5000, eta = 0.02, sigma = 0.02, s2 = sigma * sigma;
  for (long K : {1L, 10L, 100L, 1000L}) {
    const double tau = eta * K;
    // Composition (CYS App. E): alpha S_g^2 eta K / (4 n^2 sigma^2).
    BOOST_TEST(compositionBound(alpha, Sg / n, s2, tau) == alpha * Sg * Sg * eta * K / (4 * n * n * s2),
               boost::test_tools::tolerance(1e-13));
    // Cor 1 (Figure 1 caption): alpha S_g^2 / (lambda sigma^2 n^2) (1 - e^(-lambda eta K / 2)).
    BOOST_TEST(corollary1Bound(alpha, Sg / n, s2, lambda, tau) ==
                   alpha * Sg * Sg / (lambda * s2 * n * n) * (1 - std::exp(-lambda * eta * K / 2)),
               boost::test_tools::tolerance(1e-12));
    // Thm 2 with Lemma 5's c = lambda/(2 sigma^2) is Cor 1.
    BOOST_TEST(lsiBound(alpha, Sg / n, s2, lambda / (2 * s2), tau) == corollary1Bound(alpha, Sg / n, s2, lambda, tau),
               boost::test_tools::tolerance(1e-12));
    // Cor 2 (eq. 18 with n^2 for the printed eta^2), l = |theta - x|^2 / 2 (lambda = 1):
    // alpha S_g^2 / ((2 - eta) sigma^2 n^2) (1 - e^(-(2 - eta) eta K / 2)).
    BOOST_TEST(quadraticLsiBound(alpha, Sg / n, s2, 1.0, eta, K) ==
                   alpha * Sg * Sg / ((2 - eta) * s2 * n * n) * (1 - std::exp(-(2 - eta) * eta * K / 2)),
               boost::test_tools::tolerance(1e-12));
    // ... and it is Thm 2 with the sharpened LSI constant at lambda = 1 (= CYS's (2 - eta)/(2 sigma^2)).
    BOOST_TEST(sharpenedLsiConstant(true, 1.0, s2, eta) == (2 - eta) / (2 * s2), boost::test_tools::tolerance(1e-15));
    BOOST_TEST(lsiBound(alpha, Sg / n, s2, sharpenedLsiConstant(true, 1.0, s2, eta), tau) ==
                   quadraticLsiBound(alpha, Sg / n, s2, 1.0, eta, K),
               boost::test_tools::tolerance(1e-12));
  }
  // OU (item 7): alpha S_g^2 / (2 lambda sigma^2 n^2) tanh(lambda t / 2) for a point start.
  BOOST_TEST(ouExact(alpha, Sg / n, s2, lambda, 0.7, 0.0) ==
                 alpha * Sg * Sg / (2 * lambda * s2 * n * n) * std::tanh(lambda * 0.7 / 2),
             boost::test_tools::tolerance(1e-12));
  // KL bound (item 9) is the composition bound at alpha = 1; Pinsker.
  BOOST_TEST(klBoundSameNoise(0.3, 0.5, 2.0) == compositionBound(1.0, 0.3, 0.5, 2.0));
  BOOST_TEST(pinskerTvBound(0.08) == 0.2, boost::test_tools::tolerance(1e-15));
}

BOOST_AUTO_TEST_CASE(exact_quadratic_gd_equals_the_shifted_divergence_bound) {
  // MATH.md §5 items 5 and 6: for a deterministic start the closed form is attained by the shifted-divergence bound.
  // Both are written with expm1/log1p, so they agree to round-off; the brief asks for <= 1e-8 relative.
  for (double lambda : {0.1, 1.0, 3.0})
    for (double eta : {0.01, 0.1, 0.3})
      for (long K : {1L, 2L, 7L, 50L, 1000L}) {
        if (eta * lambda >= 1.0) continue;
        const double exact = quadraticNoisyGdExact(2.5, 0.04, 0.09, lambda, eta, K, 0.0);
        const double pabi = shiftedDivergenceBound(2.5, 0.04, 0.09, lambda, eta, K);
        BOOST_TEST(std::fabs(exact - pabi) <= 1e-8 * exact, "lambda " << lambda << " eta " << eta << " K " << K
                                                                       << ": exact " << exact << " item 5 " << pabi);
      }
}

BOOST_AUTO_TEST_CASE(exact_quadratic_gd_matches_the_gaussian_recursion) {
  // Independent: iterate the mean/variance recursions of MATH.md §6 (m <- (1 - eta lambda) m + eta lambda xbar,
  // v <- (1 - eta lambda)^2 v + 2 eta sigma^2) for D and D' and apply the Gaussian Rényi closed form.
  const double lambda = 1.5, eta = 0.2, s2 = 0.25, xbar = 0.3, xbarPrime = 0.0, gap = lambda * (xbar - xbarPrime);
  for (double v0 : {0.0, 0.01, 0.5}) {
    double m = 0.0, mp = 0.0, v = v0;
    for (long K = 1; K <= 40; ++K) {
      const double c = 1 - eta * lambda;
      m = c * m + eta * lambda * xbar;
      mp = c * mp + eta * lambda * xbarPrime;
      v = c * c * v + 2 * eta * s2;
      for (double alpha : {1.5, 2.0, 10.0}) {
        const double ref = gaussianRenyi(Vector::Constant(1, m), scalar(v), Vector::Constant(1, mp), scalar(v), alpha);
        BOOST_TEST(quadraticNoisyGdExact(alpha, gap, s2, lambda, eta, K, v0) == ref,
                   boost::test_tools::tolerance(1e-11));
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(overshooting_steps_eta_lambda_between_1_and_2) {
  // c = 1 - eta lambda < 0: the iterates oscillate; the recursion of MATH.md §6 still holds (|c| < 1).
  const double lambda = 1.0, eta = 1.5, s2 = 0.5, xbar = 0.4;
  double m = 0.0, mp = 0.0, v = 0.0;
  for (long K = 1; K <= 12; ++K) {
    const double c = 1 - eta * lambda;
    m = c * m + eta * lambda * xbar;
    mp = c * mp;
    v = c * c * v + 2 * eta * s2;
    const double ref = gaussianRenyi(Vector::Constant(1, m), scalar(v), Vector::Constant(1, mp), scalar(v), 3.0);
    BOOST_TEST(quadraticNoisyGdExact(3.0, lambda * xbar, s2, lambda, eta, K, 0.0) == ref,
               boost::test_tools::tolerance(1e-12));
    BOOST_TEST(shiftedDivergenceBound(3.0, lambda * xbar, s2, lambda, eta, K) == ref,
               boost::test_tools::tolerance(1e-12));
  }
}

BOOST_AUTO_TEST_CASE(exact_lies_below_bounds_1_to_4_at_every_step) {
  // Quadratic noisy GD (CYS Thm 3's instance), several lambda and eta: exact (point start) <= items 1-4 for every K.
  for (double lambda : {0.5, 1.0, 2.0})
    for (double eta : {0.05, 0.2, 0.45}) {
      const PrivacyBounds b(quadraticGd(lambda, eta, 0.16, 0.05));
      for (int item = 1; item <= 6; ++item) BOOST_TEST_REQUIRE(b.applicability(item, GapKind::WorstCase).applies);
      for (long K = 1; K <= 300; ++K)
        for (double alpha : {2.0, 10.0}) {
          const double exact = b.renyi(6, GapKind::WorstCase, alpha, K, eta * K);
          BOOST_TEST(exact == b.renyi(5, GapKind::WorstCase, alpha, K, eta * K), boost::test_tools::tolerance(1e-8));
          for (int item = 1; item <= 4; ++item)
            BOOST_TEST(exact <= b.renyi(item, GapKind::WorstCase, alpha, K, eta * K) * (1 + 1e-12),
                       "item " << item << " K " << K << " lambda " << lambda << " eta " << eta);
        }
    }
}

BOOST_AUTO_TEST_CASE(continuous_time_limit_and_fmtt_theorem_1) {
  // Noisy GD with eta = t/K tends to the OU closed form (item 7) at first order in eta (the Euler scheme of the OU
  // equation): observed order between K and 2K close to 1.
  const double lambda = 1.3, s2 = 0.2, gap = 0.1, t = 1.7, alpha = 3.0;
  for (double v0 : {0.0, 0.05}) {
    const double ou = ouExact(alpha, gap, s2, lambda, t, v0);
    double previous = 0.0;
    for (long K : {100L, 200L, 400L}) {
      const double err = std::fabs(quadraticNoisyGdExact(alpha, gap, s2, lambda, t / K, K, v0) - ou);
      if (previous > 0) BOOST_TEST(std::fabs(std::log2(previous / err) - 1.0) < 0.05);
      previous = err;
    }
  }
  // FMTT Thm 1 is tight for identity maps: X_T ~ N(x_0, T s^2) against N(x'_0, T s^2).
  for (long T : {1L, 5L, 40L}) {
    const double ref = gaussianRenyi(Vector::Constant(1, 0.7), scalar(T * 0.3), Vector::Constant(1, 0.2),
                                     scalar(T * 0.3), 4.0);
    BOOST_TEST(fmttTheorem1(4.0, 0.5, T, 0.3) == ref, boost::test_tools::tolerance(1e-13));
  }
  // Item 5 tends to the composition bound as lambda -> 0 (and is that bound at lambda = 0).
  BOOST_TEST(shiftedDivergenceBound(2, 0.1, 0.3, 1e-9, 0.1, 50) == compositionBound(2, 0.1, 0.3, 5.0),
             boost::test_tools::tolerance(1e-7));
  BOOST_TEST(shiftedDivergenceBound(2, 0.1, 0.3, 0.0, 0.1, 50) == compositionBound(2, 0.1, 0.3, 5.0));
}

BOOST_AUTO_TEST_CASE(a_bound_whose_assumptions_fail_is_not_applicable) {
  // eta > 1/beta: items 2, 3, 5 do not apply and say why; no number is given.
  {
    BoundProblem p = quadraticGd(1.0, 0.1, 0.1, 0.05);
    p.quadraticLoss = false;
    p.smoothness = 20.0;  // eta beta = 2
    const PrivacyBounds b(p);
    for (int item : {2, 3, 5}) {
      BOOST_TEST(!b.applicability(item, GapKind::WorstCase).applies);
      BOOST_TEST(contains(b.applicability(item, GapKind::WorstCase).reason, "1/beta fails"));
      BOOST_TEST(std::isnan(b.renyi(item, GapKind::WorstCase, 2.0, 10, 1.0)));
    }
    BOOST_TEST(b.applicability(1, GapKind::WorstCase).applies);
    for (int item : {4, 6}) BOOST_TEST(contains(b.applicability(item, GapKind::WorstCase).reason, "not the quadratic"));
  }
  // A non-convex loss (double well: no lambda): the LSI and contraction bounds do not apply.
  {
    BoundProblem p = quadraticGd(1.0, 0.1, 0.1, 0.05);
    p.quadraticLoss = false;
    p.strongConvexity.reset();
    const PrivacyBounds b(p);
    for (int item : {2, 3, 5}) BOOST_TEST(contains(b.applicability(item, GapKind::Measured).reason, "lambda > 0 fails"));
    BOOST_TEST(b.applicability(1, GapKind::Measured).applies);
  }
  // A start wider than CYS's N(0, 2 sigma^2/lambda): Cor 1 does not apply.
  {
    const PrivacyBounds b(quadraticGd(1.0, 0.1, 0.1, 0.05, 0.5));
    BOOST_TEST(contains(b.applicability(3, GapKind::WorstCase).reason, "start too wide"));
  }
  // Anisotropic noise: the isotropic statements do not apply; composition and shifted divergence use lambda_min.
  {
    BoundProblem p = quadraticGd(1.0, 0.1, 0.1, 0.05);
    p.Sigma = p.SigmaPrime = Matrix::Identity(2, 2);
    p.Sigma(1, 1) = p.SigmaPrime(1, 1) = 0.25;
    p.startCovariance = Matrix::Zero(2, 2);
    const PrivacyBounds b(p);
    BOOST_TEST(b.sigma2() == 0.25);
    for (int item : {2, 3, 4, 6}) BOOST_TEST(contains(b.applicability(item, GapKind::WorstCase).reason, "anisotropic"));
    BOOST_TEST(b.applicability(5, GapKind::WorstCase).applies);
    BOOST_TEST(contains(b.applicability(5, GapKind::WorstCase).reason, "lambda_min"));
    BOOST_TEST(b.renyi(1, GapKind::WorstCase, 2, 10, 1.0) == compositionBound(2, 0.05, 0.25, 1.0));
  }
  // Langevin with Sigma != Sigma': composition and the KL bound do not apply; unknown S_g: only the measured gap.
  {
    BoundProblem p = quadraticGd(1.0, 0.0, 0.1, 0.05);
    p.noisyGd = false;
    p.SigmaPrime = scalar(0.2);
    p.worstCaseGap.reset();
    const PrivacyBounds b(p);
    BOOST_TEST(contains(b.applicability(1, GapKind::Measured).reason, "Sigma != Sigma'"));
    BOOST_TEST(std::isnan(b.kl(GapKind::Measured, 0, 1.0)));
    BOOST_TEST(contains(b.applicability(5, GapKind::Measured).reason, "noisy GD only"));
    p.SigmaPrime = p.Sigma;
    const PrivacyBounds same(p);
    BOOST_TEST(contains(same.applicability(1, GapKind::WorstCase).reason, "S_g unknown"));
    BOOST_TEST(same.applicability(1, GapKind::Measured).applies);
    BOOST_TEST(same.applicability(7, GapKind::Measured).applies);
    BOOST_TEST(same.kl(GapKind::Measured, 0, 2.0) == klBoundSameNoise(0.05, 0.1, 2.0));
  }
  // Clipping: the contraction and LSI bounds need a gradient drift.
  {
    BoundProblem p = quadraticGd(1.0, 0.1, 0.1, 0.05);
    p.clipped = true;
    const PrivacyBounds b(p);
    for (int item : {2, 3, 4, 5, 6}) BOOST_TEST(contains(b.applicability(item, GapKind::WorstCase).reason, "clipping"));
  }
  // Item 8 never applies to a pair whose maps differ.
  BOOST_TEST(!PrivacyBounds(quadraticGd(1.0, 0.1, 0.1, 0.05)).applicability(8, GapKind::Measured).applies);
}

BOOST_AUTO_TEST_SUITE_END()
