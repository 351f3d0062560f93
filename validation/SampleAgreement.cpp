// The formulas are derived in SampleAgreement.hpp.
#include "validation/SampleAgreement.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "models/RdpConversion.hpp"

#include <boost/math/distributions/beta.hpp>
#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>

namespace fpdp::validation {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> normalised(const std::vector<double>& mass) {
  double total = 0.0;
  for (double m : mass) {
    if (!(m >= 0.0) || !std::isfinite(m)) throw std::invalid_argument("SampleAgreement: a bin mass is negative or not finite");
    total += m;
  }
  if (!(total > 0.0)) throw std::invalid_argument("SampleAgreement: the bin masses sum to zero");
  std::vector<double> out(mass.size());
  for (std::size_t i = 0; i < mass.size(); ++i) out[i] = mass[i] / total;
  return out;
}

/// E|X - N p| for X ~ Binomial(N, p), de Moivre's closed form: 2 m (1-p)^(N-m+1) p^m C(N, m), m = floor(N p) + 1.
double binomialMeanAbsoluteDeviation(std::int64_t N, double p) {
  if (p <= 0.0 || p >= 1.0) return 0.0;
  const double n = static_cast<double>(N);
  const double m = std::floor(n * p) + 1.0;
  if (m > n) return 0.0;
  const double logValue = std::log(2.0 * m) + (n - m + 1.0) * std::log1p(-p) + m * std::log(p) + std::lgamma(n + 1.0) -
                          std::lgamma(m + 1.0) - std::lgamma(n - m + 1.0);
  return std::exp(logValue);
}

Interval meanInterval(double sum, double sumSquares, std::int64_t n, double z) {
  Interval out;
  if (n < 2) {
    out.estimate = out.lower = out.upper = n ? sum : std::numeric_limits<double>::quiet_NaN();
    out.standardError = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  const double N = static_cast<double>(n);
  out.estimate = sum / N;
  const double variance = std::max(0.0, (sumSquares - sum * sum / N) / (N - 1.0));
  out.standardError = std::sqrt(variance / N);
  out.lower = out.estimate - z * out.standardError;
  out.upper = out.estimate + z * out.standardError;
  return out;
}

}  // namespace

double normalQuantileTwoSided(double confidence) {
  if (!(confidence > 0.0 && confidence < 1.0)) throw std::invalid_argument("confidence must lie in (0, 1)");
  return boost::math::quantile(boost::math::normal_distribution<double>(), 0.5 + 0.5 * confidence);
}

HistogramAgreement compareHistogram(const std::vector<std::int64_t>& counts, std::int64_t outside,
                                    const std::vector<double>& mass, double confidence) {
  if (counts.size() != mass.size()) throw std::invalid_argument("compareHistogram: counts and masses differ in length");
  const std::vector<double> P = normalised(mass);
  HistogramAgreement out;
  std::int64_t N = outside;
  for (auto c : counts) N += c;
  out.samples = N;
  if (N == 0) throw std::invalid_argument("compareHistogram: no samples");
  const double n = static_cast<double>(N);
  double expected = binomialMeanAbsoluteDeviation(N, 0.0);  // the outside bin: the solver holds no mass there
  double l1 = static_cast<double>(outside) / n;
  double chi = 0.0, pooledCount = static_cast<double>(outside), pooledExpected = 0.0;
  int bins = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    l1 += std::abs(static_cast<double>(counts[i]) / n - P[i]);
    expected += binomialMeanAbsoluteDeviation(N, P[i]) / n;
    const double e = n * P[i];
    if (e >= 5.0) {
      const double diff = static_cast<double>(counts[i]) - e;
      chi += diff * diff / e;
      ++bins;
    } else {
      pooledCount += static_cast<double>(counts[i]);
      pooledExpected += e;
    }
  }
  if (pooledExpected > 0.0) {
    const double diff = pooledCount - pooledExpected;
    chi += diff * diff / pooledExpected;
    ++bins;
  } else if (pooledCount > 0.0) {
    chi = kInf;  // samples where the solver has no mass at all
  }
  const double gamma = 1.0 - confidence;
  out.l1 = l1;
  out.tv = 0.5 * l1;
  out.l1Expected = expected;
  out.l1Band = expected + std::sqrt(2.0 * std::log(1.0 / gamma) / n);
  out.withinBand = l1 <= out.l1Band;
  out.chiSquare = chi;
  out.degreesOfFreedom = std::max(1, bins - 1);
  out.pValue = std::isfinite(chi) ? boost::math::cdf(boost::math::complement(
                                        boost::math::chi_squared_distribution<double>(out.degreesOfFreedom), chi))
                                  : 0.0;
  out.outsideFraction = static_cast<double>(outside) / n;
  out.agrees = out.withinBand && out.pValue >= gamma;
  return out;
}

DivergenceEstimates estimateDivergences(const std::vector<std::int64_t>& countsP, std::int64_t totalP,
                                        const std::vector<std::int64_t>& countsQ, std::int64_t totalQ,
                                        const std::vector<double>& massP, const std::vector<double>& massQ,
                                        const std::vector<double>& orders, double confidence) {
  const std::size_t K = massP.size();
  if (countsP.size() != K || countsQ.size() != K || massQ.size() != K)
    throw std::invalid_argument("estimateDivergences: bins differ in number");
  const std::vector<double> P = normalised(massP), Q = normalised(massQ);
  const double z = normalQuantileTwoSided(confidence);
  DivergenceEstimates out;

  // 2. The solver's log-ratio averaged over the samples.
  double sum = 0.0, sumSq = 0.0, binKl = 0.0;
  std::int64_t used = 0;
  for (std::size_t i = 0; i < K; ++i) {
    if (P[i] > 0.0 && Q[i] > 0.0) {
      const double lr = std::log(P[i] / Q[i]);
      const double c = static_cast<double>(countsP[i]);
      sum += c * lr;
      sumSq += c * lr * lr;
      used += countsP[i];
      binKl += P[i] * lr;
    } else if (P[i] > 0.0) {
      binKl = kInf;
    }
  }
  out.samplesWithoutRatio[0] = totalP - used;
  out.kl = meanInterval(sum, sumSq, used, z);
  out.binKl = binKl;
  for (double alpha : orders) {
    // binE: the bin sum (+inf where P > 0 = Q); seenE, seenE2: its moments over the bins a sample from q can reach
    // (Q > 0), from which the standard error the samples should show is predicted. (With the +inf in them the
    // prediction was NaN, read as 0: the tail was never flagged where the bin sum is infinite.)
    double s = 0.0, s2 = 0.0, binE = 0.0, seenE = 0.0, seenE2 = 0.0;
    std::int64_t usedQ = 0;
    for (std::size_t i = 0; i < K; ++i) {
      if (P[i] > 0.0 && Q[i] > 0.0) {
        const double ra = std::exp(alpha * std::log(P[i] / Q[i]));
        const double c = static_cast<double>(countsQ[i]);
        s += c * ra;
        s2 += c * ra * ra;
        usedQ += countsQ[i];
        seenE += Q[i] * ra;
        seenE2 += Q[i] * ra * ra;
      } else if (P[i] > 0.0) {
        binE = kInf;
      }
    }
    binE += seenE;
    out.samplesWithoutRatio[1] = totalQ - usedQ;
    const Interval e = meanInterval(s, s2, usedQ, z);
    out.eAlpha.push_back(e);
    const double variance = seenE2 - seenE * seenE;
    const double predicted =
        usedQ > 0 && !std::isnan(variance) ? std::sqrt(std::max(0.0, variance) / static_cast<double>(usedQ)) : kInf;
    out.eAlphaPredictedStandardError.push_back(predicted);
    out.eAlphaTailUnsampled.push_back(e.standardError < 0.1 * predicted);
    auto R = [alpha](double E) { return E > 0.0 ? std::log(E) / (alpha - 1.0) : -kInf; };
    out.renyi.push_back(Interval{R(e.estimate), R(e.lower), R(e.upper), e.standardError / (e.estimate * (alpha - 1.0))});
    out.binRenyi.push_back(R(binE));
  }

  // 3. Plug-in from the two histograms.
  std::int64_t nP = 0, nQ = 0;
  for (std::size_t i = 0; i < K; ++i) nP += countsP[i], nQ += countsQ[i];
  if (nP == 0 || nQ == 0) throw std::invalid_argument("estimateDivergences: an empty histogram");
  double kl = 0.0, excluded = 0.0, ratioSum = 0.0;
  int bins = 0;
  std::vector<double> e(orders.size(), 0.0), eBias(orders.size(), 0.0);
  for (std::size_t i = 0; i < K; ++i) {
    const double p = static_cast<double>(countsP[i]) / static_cast<double>(nP);
    const double q = static_cast<double>(countsQ[i]) / static_cast<double>(nQ);
    if (p > 0.0 && q == 0.0) excluded += p;
    if (p == 0.0 || q == 0.0) continue;
    ++bins;
    kl += p * std::log(p / q);
    ratioSum += p / q;
    for (std::size_t k = 0; k < orders.size(); ++k) {
      const double a = orders[k];
      e[k] += std::pow(p, a) * std::pow(q, 1.0 - a);
      eBias[k] += std::pow(p / q, a - 1.0) * (1.0 - p) + std::pow(p / q, a) * (1.0 - q);
    }
  }
  const double N = 0.5 * (static_cast<double>(nP) + static_cast<double>(nQ));  // nP = nQ for the sampler
  out.pluginBins = bins;
  out.pluginExcludedMassP = excluded;
  out.pluginKl = kl;
  out.pluginKlBias = ((bins - 1) + (ratioSum - 1.0)) / (2.0 * N);
  out.pluginKlCorrected = kl - out.pluginKlBias;
  for (std::size_t k = 0; k < orders.size(); ++k) {
    const double a = orders[k];
    const double biasE = a * (a - 1.0) / (2.0 * N) * eBias[k];
    const double R = std::log(e[k]) / (a - 1.0);
    const double Rc = std::log(std::max(e[k] - biasE, std::numeric_limits<double>::min())) / (a - 1.0);
    out.pluginRenyi.push_back(R);
    out.pluginRenyiBias.push_back(R - Rc);
    out.pluginRenyiCorrected.push_back(Rc);
  }
  return out;
}

double hockeyStick(const std::vector<double>& massP, const std::vector<double>& massQ, double eps) {
  const std::vector<double> P = normalised(massP), Q = normalised(massQ);
  const double factor = std::exp(eps);
  double delta = 0.0;
  for (std::size_t i = 0; i < P.size(); ++i) delta += std::max(P[i] - factor * Q[i], 0.0);
  return delta;
}

double epsilonAtDelta(const std::vector<double>& massP, const std::vector<double>& massQ, double delta) {
  // The root finder of the run's eps_exact (models::exactEpsilons, MATH.md §7) on this serial sum.
  const std::vector<double> P = normalised(massP), Q = normalised(massQ);
  models::PrivacyProfileEnds ends;
  for (std::size_t i = 0; i < P.size(); ++i) {
    if (!(P[i] > Q[i])) continue;
    if (Q[i] > 0.0) ends.flatFrom = std::max(ends.flatFrom, std::log(P[i]) - std::log(Q[i]));
    else ends.floor += P[i];
  }
  const models::ProfileRequest request{0, delta};
  const auto found = models::exactEpsilons(
      std::span(&request, 1), std::span(&ends, 1),
      [&](std::span<const models::ProfileQuery> queries, std::span<double> values, std::span<const double>) {
        for (std::size_t i = 0; i < queries.size(); ++i) {
          const double factor = std::exp(queries[i].eps);
          double d = 0.0;
          for (std::size_t j = 0; j < P.size(); ++j) d += std::max(P[j] - factor * Q[j], 0.0);
          values[i] = d;
        }
      });
  return found[0].epsilon;
}

Interval clopperPearson(std::int64_t x, std::int64_t n, double confidence) {
  const double g = 1.0 - confidence;
  Interval out;
  out.estimate = n > 0 ? static_cast<double>(x) / static_cast<double>(n) : 0.0;
  const double X = static_cast<double>(x), N = static_cast<double>(n);
  out.lower = x == 0 ? 0.0 : boost::math::quantile(boost::math::beta_distribution<double>(X, N - X + 1.0), 0.5 * g);
  out.upper = x == n ? 1.0 : boost::math::quantile(boost::math::beta_distribution<double>(X + 1.0, N - X), 1.0 - 0.5 * g);
  return out;
}

AuditResult audit(const std::vector<std::int64_t>& countsP, std::int64_t totalP,
                  const std::vector<std::int64_t>& countsQ, std::int64_t totalQ, const std::vector<double>& massP,
                  const std::vector<double>& massQ, double delta, double confidence, int thresholds) {
  const std::size_t K = massP.size();
  if (countsP.size() != K || countsQ.size() != K || massQ.size() != K)
    throw std::invalid_argument("audit: bins differ in number");
  const std::vector<double> P = normalised(massP), Q = normalised(massQ);
  // Bins in decreasing order of the log-ratio (the Neyman–Pearson order); bins where both masses vanish carry no
  // information and come last (log r = -inf: never flagged).
  std::vector<double> logRatio(K);
  for (std::size_t i = 0; i < K; ++i)
    logRatio[i] = P[i] > 0.0 ? (Q[i] > 0.0 ? std::log(P[i] / Q[i]) : kInf) : -kInf;
  std::vector<std::size_t> order(K);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return logRatio[a] > logRatio[b]; });
  // Thresholds at the p-mass quantiles m/(M+1), m = 1..M of the ordered bins (ties: all bins with equal log r).
  AuditResult out;
  out.delta = delta;
  const double levelEach = 1.0 - (1.0 - confidence) / (2.0 * thresholds);  // Bonferroni: M thresholds x 2 rates
  double cumP = 0.0, cumQ = 0.0;
  std::int64_t cP = 0, cQ = 0;
  int next = 1;
  out.epsilonLowerBound = -kInf;
  out.epsilonPointEstimate = -kInf;
  for (std::size_t j = 0; j < K && next <= thresholds; ++j) {
    const std::size_t i = order[j];
    cumP += P[i];
    cumQ += Q[i];
    cP += countsP[i];
    cQ += countsQ[i];
    const bool endOfTie = j + 1 == K || logRatio[order[j + 1]] != logRatio[i];
    if (!endOfTie || !std::isfinite(logRatio[i]) || cumP < static_cast<double>(next) / (thresholds + 1)) continue;
    while (next <= thresholds && cumP >= static_cast<double>(next) / (thresholds + 1)) ++next;
    AuditPoint pt;
    pt.logRatioThreshold = logRatio[i];
    const Interval tpr = clopperPearson(cP, totalP, levelEach), fpr = clopperPearson(cQ, totalQ, levelEach);
    pt.tpr = tpr.estimate, pt.tprLower = tpr.lower, pt.tprUpper = tpr.upper;
    pt.fpr = fpr.estimate, pt.fprLower = fpr.lower, pt.fprUpper = fpr.upper;
    pt.tprExact = cumP, pt.fprExact = cumQ;
    auto bound = [delta](double t, double f) {
      double e = -kInf;
      if (t - delta > 0.0) e = std::max(e, f > 0.0 ? std::log((t - delta) / f) : kInf);
      if (1.0 - delta - f > 0.0) e = std::max(e, t < 1.0 ? std::log((1.0 - delta - f) / (1.0 - t)) : kInf);
      return e;
    };
    pt.epsilonLowerBound = bound(pt.tprLower, pt.fprUpper);
    out.epsilonLowerBound = std::max(out.epsilonLowerBound, pt.epsilonLowerBound);
    out.epsilonPointEstimate = std::max(out.epsilonPointEstimate, bound(pt.tpr, pt.fpr));
    if (cumP < pt.tprLower || cumP > pt.tprUpper || cumQ < pt.fprLower || cumQ > pt.fprUpper) ++out.exactOutsideBand;
    out.curve.push_back(pt);
  }
  out.epsilonExact = std::max(epsilonAtDelta(P, Q, delta), epsilonAtDelta(Q, P, delta));
  return out;
}

}  // namespace fpdp::validation
