// MATH.md §5: the bounds, and the checks of their assumptions (docs/bounds.md lists both).
#include "models/PrivacyBounds.hpp"

#include <Eigen/Eigenvalues>

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace fpdp::models {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// c^K and 1 - c^K for c = 1 - eta lambda, without cancellation when eta lambda K is small
/// (1 - c^K = -expm1(K log1p(-eta lambda))). For eta lambda in (1, 2) the map overshoots (c < 0): c^K = (-1)^K |c|^K.
struct ContractionPower {
  double power, oneMinus;
};
ContractionPower contractionPower(double etaLambda, double K) {
  if (etaLambda <= 1.0) {
    const double logc = std::log1p(-etaLambda);
    return {std::exp(K * logc), -std::expm1(K * logc)};
  }
  const double logAbs = std::log(etaLambda - 1.0);
  const bool odd = std::fmod(K, 2.0) != 0.0;
  const double absPower = std::exp(K * logAbs);
  return odd ? ContractionPower{-absPower, 1.0 + absPower} : ContractionPower{absPower, -std::expm1(K * logAbs)};
}

std::string num(double v) {
  std::ostringstream s;
  s.precision(4);
  s << v;
  return s.str();
}

}  // namespace

double compositionBound(double alpha, double gap, double sigma2, double tau) {
  return alpha * gap * gap * tau / (4.0 * sigma2);
}

double lsiBound(double alpha, double gap, double sigma2, double c, double tau) {
  return alpha * gap * gap / (2.0 * c * sigma2 * sigma2) * -std::expm1(-sigma2 * c * tau);
}

double corollary1Bound(double alpha, double gap, double sigma2, double lambda, double tau) {
  return alpha * gap * gap / (lambda * sigma2) * -std::expm1(-lambda * tau / 2.0);
}

double quadraticLsiBound(double alpha, double gap, double sigma2, double lambda, double eta, long K) {
  // Thm 2 with c = lambda (2 - eta lambda)/(2 sigma^2): alpha g^2/(2 c sigma^4) = alpha g^2/(lambda (2 - eta lambda)
  // sigma^2), sigma^2 c eta K = lambda (2 - eta lambda) eta K / 2.
  const double a = lambda * (2.0 - eta * lambda);
  return alpha * gap * gap / (a * sigma2) * -std::expm1(-a * eta * static_cast<double>(K) / 2.0);
}

double shiftedDivergenceBound(double alpha, double gap, double sigma2, double lambda, double eta, long K) {
  const double k = static_cast<double>(K);
  if (lambda == 0.0) return compositionBound(alpha, gap, sigma2, eta * k);
  const auto [cK, oneMinusCK] = contractionPower(eta * lambda, k);
  return alpha * gap * gap * (2.0 - eta * lambda) * oneMinusCK / (4.0 * lambda * sigma2 * (1.0 + cK));
}

double quadraticNoisyGdExact(double alpha, double gap, double sigma2, double lambda, double eta, long K, double v0) {
  const double k = static_cast<double>(K);
  const auto [cK, oneMinusCK] = contractionPower(eta * lambda, k);
  const auto [c2K, oneMinusC2K] = contractionPower(eta * lambda, 2.0 * k);
  (void)cK;
  const double meanGap = oneMinusCK * gap / lambda;  // |xbar - xbar'| = g / lambda
  const double vK = c2K * v0 + 2.0 * sigma2 * oneMinusC2K / (lambda * (2.0 - eta * lambda));
  if (vK == 0.0) return meanGap == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return alpha * meanGap * meanGap / (2.0 * vK);
}

double ouExact(double alpha, double gap, double sigma2, double lambda, double t, double v0) {
  const double oneMinus = -std::expm1(-lambda * t), oneMinus2 = -std::expm1(-2.0 * lambda * t);
  const double meanGap = oneMinus * gap / lambda;
  const double vt = std::exp(-2.0 * lambda * t) * v0 + sigma2 / lambda * oneMinus2;
  if (vt == 0.0) return meanGap == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return alpha * meanGap * meanGap / (2.0 * vt);
}

double fmttTheorem1(double alpha, double startDistance, long T, double stepVariance) {
  return alpha * startDistance * startDistance / (2.0 * static_cast<double>(T) * stepVariance);
}

double klBoundSameNoise(double gap, double lambdaMinSigma, double tau) {
  return tau * gap * gap / (4.0 * lambdaMinSigma);
}

double pinskerTvBound(double kl) { return std::sqrt(0.5 * kl); }

// The argument of CYS Lemma 5 (App. D.3), followed exactly. An L-Lipschitz map takes a c-LSI law to a (c/L^2)-LSI
// law, and convolution with N(0, s I) takes it to a 1/(1/c + s)-LSI law. One noisy-GD step (or a tracing diffusion
// up to time s <= eta, whose map psi_s = id - a grad L_D - b grad L_D' with a + b = eta is (1 - eta lambda)-Lipschitz
// for a lambda-strongly convex, beta-smooth loss and eta <= 1/beta) therefore maps
//     1/c  ->  (1 - eta lambda)^2 / c + 2 eta sigma^2,
// whose fixed point is 1/c* = 2 eta sigma^2 / (1 - (1 - eta lambda)^2) = 2 sigma^2 / (lambda (2 - eta lambda)).
// A start with 1/c_0 <= 1/c* (e.g. a Gaussian with covariance <= 2 sigma^2 / (lambda (2 - eta lambda)), or a point)
// stays below it, so every law is c*-LSI. c* >= lambda/(2 sigma^2), Lemma 5's constant (which needs the start to be
// at least as concentrated as N(0, 2 sigma^2/lambda I)); at lambda = 1 it is CYS Cor 2's (2 - eta)/(2 sigma^2) for the
// quadratic loss, where it is attained. In continuous time (eta -> 0) the recursion becomes
// d(1/c)/dt = -2 lambda/c + 2 sigma^2: Langevin laws from a start with 1/c_0 <= sigma^2/lambda are (lambda/sigma^2)-LSI,
// the Bakry-Emery constant of the Gibbs law exp(-L/sigma^2) (so Lemma 5's factor 2 is conservative).
double sharpenedLsiConstant(bool noisyGd, double lambda, double sigma2, double eta) {
  return noisyGd ? lambda * (2.0 - eta * lambda) / (2.0 * sigma2) : lambda / sigma2;
}

namespace {

// The catalogue: MATH.md §5 items 1-9.
const BoundInfo kCatalogue[] = {
    {1, "bound1", "composition", "CYS Thm 1 (Langevin), App. E (noisy GD: moments accountant)",
     "none beyond a finite gradient gap (Langevin: the same noise for D and D')"},
    {2, "bound2", "LSI (CYS Thm 2)",
     "CYS Thm 2 with the LSI constant c* of the Lemma 5 argument followed to its fixed point (docs/bounds.md)",
     "lambda > 0; noisy GD: beta known, eta <= 1/beta; no clipping; isotropic noise, equal for D and D'; start "
     "covariance <= 1/c*"},
    {3, "bound3", "CYS Cor 1", "CYS Cor 1 (Thm 2 with Lemma 5: c = lambda/(2 sigma^2))",
     "lambda > 0; noisy GD: beta known, eta < 1/beta; no clipping; isotropic noise, equal for D and D'; start "
     "covariance <= 2 sigma^2/lambda (CYS start N(0, 2 sigma^2/lambda I) or more concentrated)"},
    {4, "bound4", "CYS Cor 2 (quadratic)",
     "CYS Cor 2 (eq. 18, eta^2 corrected to n^2), written for l = (lambda/2)|theta - x|^2",
     "noisy GD; quadratic loss; unconstrained; no clipping; isotropic noise; 0 < eta lambda < 2; start covariance <= "
     "2 sigma^2/(lambda (2 - eta lambda))"},
    {5, "bound5", "shifted divergence", "FMTT Thm 22 with c-contractive maps (= Bok-Su-Altschuler 2024)",
     "noisy GD; lambda > 0; beta known, eta <= 1/beta; no clipping (anisotropic noise: lambda_min(Sigma))"},
    {6, "bound6", "exact quadratic GD (point start)", "CYS Thm 3, re-derived (MATH.md §5 item 6), v_0 = 0",
     "noisy GD; quadratic loss; unconstrained; no clipping; isotropic noise; eta lambda < 2. Exact for a point start, "
     "an upper bound for any start law common to D and D'"},
    {7, "bound7", "exact quadratic Langevin (point start)", "OU closed form (MATH.md §5 item 7)",
     "Langevin; quadratic loss; isotropic noise, equal for D and D'. Exact for a point start, an upper bound for any "
     "common start law"},
    {8, "bound8", "FMTT Thm 1", "FMTT Thm 1 (same contractive maps, different start points)",
     "the two runs share every map (gradient gap 0) and differ only in the start, which fpdp's runs share"},
    {9, "bound9", "KL and TV (BKPP)", "BKPP Sec. 4 (KL), Pinsker TV <= sqrt(KL/2) (BKPP Sec. 3.1)",
     "the same noise for D and D' (anisotropic: lambda_min(Sigma))"},
};

}  // namespace

std::span<const BoundInfo> PrivacyBounds::catalogue() { return kCatalogue; }

const BoundInfo& PrivacyBounds::info(int item) {
  if (item < 1 || item > 9) throw std::out_of_range("PrivacyBounds::info: item " + std::to_string(item));
  return kCatalogue[item - 1];
}

PrivacyBounds::PrivacyBounds(BoundProblem problem) : problem_(std::move(problem)) {
  const BoundProblem& P = problem_;
  const int d = static_cast<int>(P.Sigma.rows());
  if (d < 1 || P.Sigma.cols() != d || P.SigmaPrime.rows() != d || P.startCovariance.rows() != d)
    throw std::invalid_argument("PrivacyBounds: Sigma, Sigma' and the start covariance must be d x d");
  const Eigen::SelfAdjointEigenSolver<Matrix> sigmaEig(P.Sigma);
  sigma2_ = sigmaEig.eigenvalues().minCoeff();
  const bool isotropic = (P.Sigma - sigma2_ * Matrix::Identity(d, d)).norm() <= 1e-14 * sigma2_;
  const bool equalNoise = (P.Sigma - P.SigmaPrime).norm() == 0.0;
  const double startVariance = Eigen::SelfAdjointEigenSolver<Matrix>(P.startCovariance).eigenvalues().maxCoeff();
  const double lambda = P.strongConvexity.value_or(0.0);
  const bool stronglyConvex = P.strongConvexity && *P.strongConvexity > 0;
  const double etaBeta = P.smoothness ? P.eta * *P.smoothness : kNaN;

  applicability_.assign(18, {});
  // Conditions shared by several items; each returns the reason it fails ("" when it holds).
  auto needStronglyConvex = [&]() -> std::string {
    return stronglyConvex ? "" : "lambda > 0 fails: the loss is not known to be strongly convex";
  };
  auto needStepSize = [&](bool strict) -> std::string {
    if (!P.noisyGd) return "";
    if (!P.smoothness) return "beta unknown: eta " + std::string(strict ? "<" : "<=") + " 1/beta cannot be checked";
    if (strict ? etaBeta < 1.0 : etaBeta <= 1.0) return "";
    return std::string("eta ") + (strict ? "<" : "<=") + " 1/beta fails (eta beta = " + num(etaBeta) + ")";
  };
  auto needNoClipping = [&]() -> std::string {
    return P.clipped ? "per-example clipping: the drift is no gradient of a strongly convex loss" : "";
  };
  auto needIsotropic = [&]() -> std::string {
    return isotropic ? "" : "anisotropic noise: the statement is for sigma^2 I only (not derived for a general Sigma)";
  };
  auto needEqualNoise = [&]() -> std::string {
    return equalNoise ? "" : "Sigma != Sigma': the bound needs the same noise for D and D'";
  };
  auto needQuadratic = [&]() -> std::string {
    return P.quadraticLoss ? "" : "the loss is not the quadratic (lambda/2)|theta - x|^2";
  };
  auto needUnconstrained = [&]() -> std::string {
    return P.constrained ? "constrained (projection): the closed form is for C = R^d" : "";
  };
  auto needNoisyGd = [&]() -> std::string { return P.noisyGd ? "" : "noisy GD only (this run is Langevin)"; };
  auto needLangevin = [&]() -> std::string { return P.noisyGd ? "Langevin only (this run is noisy GD)" : ""; };
  auto needStart = [&](double maxVariance, const char* what) -> std::string {
    if (startVariance <= maxVariance * (1.0 + 1e-12)) return "";
    return std::string("start too wide: largest start variance ") + num(startVariance) + " > " + what + " = " +
           num(maxVariance);
  };
  auto allFailures = [](std::initializer_list<std::string> reasons) {
    std::string all;
    for (const auto& r : reasons)
      if (!r.empty()) all += (all.empty() ? "" : "; ") + r;
    return all;
  };

  const double qLambda = P.quadraticLambda;
  lsiConstant_ = kNaN;
  std::string itemReason[10];
  itemReason[1] = P.noisyGd ? "" : needEqualNoise();
  {
    std::string r = allFailures({needStronglyConvex(), needStepSize(false), needNoClipping(), needIsotropic(),
                                  needEqualNoise()});
    if (r.empty()) {
      lsiConstant_ = sharpenedLsiConstant(P.noisyGd, lambda, sigma2_, P.eta);
      r = needStart(1.0 / lsiConstant_, "1/c*");
      if (!r.empty()) lsiConstant_ = kNaN;
    }
    itemReason[2] = r;
  }
  itemReason[3] = allFailures({needStronglyConvex(), needStepSize(true), needNoClipping(), needIsotropic(),
                                needEqualNoise()});
  if (itemReason[3].empty()) itemReason[3] = needStart(2.0 * sigma2_ / lambda, "2 sigma^2/lambda");
  const bool etaLambdaBelow2 = P.eta * qLambda > 0 && P.eta * qLambda < 2.0;
  itemReason[4] = allFailures({needNoisyGd(), needQuadratic(), needUnconstrained(), needNoClipping(), needIsotropic()});
  if (itemReason[4].empty() && !etaLambdaBelow2) itemReason[4] = "eta lambda = " + num(P.eta * qLambda) + " not in (0, 2)";
  if (itemReason[4].empty())
    itemReason[4] = needStart(2.0 * sigma2_ / (qLambda * (2.0 - P.eta * qLambda)), "2 sigma^2/(lambda (2 - eta lambda))");
  itemReason[5] = allFailures({needNoisyGd(), needStronglyConvex(), needStepSize(false), needNoClipping()});
  itemReason[6] = allFailures({needNoisyGd(), needQuadratic(), needUnconstrained(), needNoClipping(), needIsotropic()});
  if (itemReason[6].empty() && !etaLambdaBelow2) itemReason[6] = "eta lambda = " + num(P.eta * qLambda) + " not in (0, 2)";
  itemReason[7] = allFailures({needLangevin(), needQuadratic(), needIsotropic(), needEqualNoise()});
  itemReason[8] = "FMTT Thm 1 needs the same maps for both runs (gradient gap 0) and different starts; here D and D' "
                  "change the map at every step from a common start (their FMTT Thm 22 form is item 5)";
  itemReason[9] = needEqualNoise();

  for (int item = 1; item <= 9; ++item)
    for (int k = 0; k < 2; ++k) {
      Applicability& a = applicability_[2 * (item - 1) + k];
      std::string r = itemReason[item];
      if (item == 8 && k == 1 && P.measuredGap == 0.0) r.clear();  // the maps agree: the bound (0) applies
      if (r.empty() && k == 0 && !P.worstCaseGap)
        r = "S_g unknown (no closed form or stated value for this pair): only the measured-gap variant is evaluated";
      a.applies = r.empty();
      a.reason = r;
      if (a.applies && !isotropic && (item == 1 || item == 5 || item == 9))
        a.reason = "anisotropic noise: evaluated with sigma^2 = lambda_min(Sigma) = " + num(sigma2_);
      if (a.applies && (item == 6 || item == 7) && startVariance > 0)
        a.reason = "upper bound: point start (the case's Gaussian start gives the exact value in exact.csv)";
      if (a.applies && k == 1)
        a.reason += std::string(a.reason.empty() ? "" : "; ") +
                    "with the gap measured on the mesh (an estimate of the sup over R^d, exact for the quadratic)";
    }
}

const Applicability& PrivacyBounds::applicability(int item, GapKind kind) const {
  if (item < 1 || item > 9) throw std::out_of_range("PrivacyBounds::applicability: item " + std::to_string(item));
  return applicability_[2 * (item - 1) + (kind == GapKind::Measured ? 1 : 0)];
}

double PrivacyBounds::gap(GapKind kind) const {
  return kind == GapKind::Measured ? problem_.measuredGap : problem_.worstCaseGap.value_or(kNaN);
}

double PrivacyBounds::tau(long step, double t) const {
  return problem_.noisyGd ? problem_.eta * static_cast<double>(step) : t;
}

double PrivacyBounds::renyi(int item, GapKind kind, double alpha, long step, double t) const {
  if (item < 1 || item > 8) throw std::out_of_range("PrivacyBounds::renyi: item " + std::to_string(item));
  if (!applicability(item, kind).applies) return kNaN;
  const double g = gap(kind), s2 = sigma2_, T = tau(step, t);
  const double lambda = problem_.strongConvexity.value_or(0.0), eta = problem_.eta;
  switch (item) {
    case 1: return compositionBound(alpha, g, s2, T);
    case 2: return lsiBound(alpha, g, s2, lsiConstant_, T);
    case 3: return corollary1Bound(alpha, g, s2, lambda, T);
    case 4: return quadraticLsiBound(alpha, g, s2, problem_.quadraticLambda, eta, step);
    case 5: return shiftedDivergenceBound(alpha, g, s2, lambda, eta, step);
    case 6: return quadraticNoisyGdExact(alpha, g, s2, problem_.quadraticLambda, eta, step, 0.0);
    case 7: return ouExact(alpha, g, s2, problem_.quadraticLambda, t, 0.0);
    default: return 0.0;  // item 8 applies only when the maps agree and the start is common: the bound is 0
  }
}

double PrivacyBounds::kl(GapKind kind, long step, double t) const {
  if (!applicability(9, kind).applies) return kNaN;
  return klBoundSameNoise(gap(kind), sigma2_, tau(step, t));
}

double PrivacyBounds::tv(GapKind kind, long step, double t) const {
  const double k = kl(kind, step, t);
  return std::isnan(k) ? kNaN : pinskerTvBound(k);
}

}  // namespace fpdp::models
