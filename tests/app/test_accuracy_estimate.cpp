// The error estimate of every number (accuracy.csv; docs/scheme.md §8) against the truth of closed-form cases
// (exact.csv): wherever the estimate exists it must be at least the true error, and a number marked certified must be
// within accuracy.rtol of the truth. A start narrower than a cell (the Figure 1 setting, where R_10 comes out 35 %
// low after one step) must be flagged, not certified. An estimator that returned 0, or one too small, fails here.
#define BOOST_TEST_MODULE app_accuracy_estimate
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdlib>
#include <random>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ProcessSupport.hpp"
#include "QuadraticNoisyGd1d.hpp"
#include "app/observers/AccuracyOutput.hpp"

namespace fs = std::filesystem;
using fpdp::app::test::readText;
using fpdp::app::test::shellQuote;
using fpdp::app::test::TemporaryDirectory;
using fpdp::app::test::writeText;

namespace {

const fs::path kSourceDir = FPDP_SOURCE_DIR;

using Table = std::vector<std::map<std::string, double>>;

Table readCsv(const fs::path& file) {
  std::istringstream in(readText(file));
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  for (std::istringstream h(line); std::getline(h, line, ',');) header.push_back(line);
  Table rows;
  while (std::getline(in, line)) {
    std::map<std::string, double> row;
    std::istringstream cells(line);
    std::string cell;
    for (std::size_t k = 0; std::getline(cells, cell, ','); ++k) row[header.at(k)] = std::strtod(cell.c_str(), nullptr);
    rows.push_back(row);
  }
  return rows;
}

void run(const fs::path& caseFile, const fs::path& out) {
  const auto r = fpdp::app::test::runCaseFile(caseFile, out);
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.log);
}

/// For every output step after the start and every quantity with a closed form: estimate >= |computed - exact|,
/// and certified only within rtol of the truth. Returns how many numbers were certified.
/// The quantities: KL, TV, R_alpha at `orders` and eps_exact at every delta of `deltas`.
int checkAgainstTruth(const fs::path& out, const std::vector<std::string>& orders, double rtol,
                      const std::vector<std::string>& deltas = {}) {
  const Table exact = readCsv(out / "exact.csv"), accuracy = readCsv(out / "accuracy.csv");
  BOOST_REQUIRE_EQUAL(exact.size(), accuracy.size());
  int certified = 0;
  for (std::size_t n = 1; n < exact.size(); ++n) {
    std::vector<std::pair<std::string, std::string>> quantities{{"kl", "kl_exact"}, {"tv", "tv_exact"}};
    for (const auto& o : orders) quantities.push_back({"renyi_" + o, "renyi_" + o + "_exact"});
    for (const auto& d : deltas) quantities.push_back({"eps_exact_delta_" + d, "eps_exact_delta_" + d + "_exact"});
    for (const auto& [q, truthColumn] : quantities) {
      const auto& a = accuracy[n];
      const double value = a.at(q), truth = exact[n].at(truthColumn), estimate = a.at(q + "_error_estimate");
      const double error = std::fabs(value - truth);
      BOOST_TEST_INFO("step " << a.at("step") << ", " << q << " = " << value << ", exact " << truth << ", estimate "
                              << estimate);
      BOOST_TEST(estimate >= error);
      if (a.at(q + "_certified") == 1.0) {
        ++certified;
        BOOST_TEST(error <= rtol * std::fabs(truth) * (1 + 1e-12));
      }
      BOOST_TEST(a.at(q + "_conservative") >= truth);
    }
  }
  return certified;
}

/// The 1-D OU case of these tests: quadratic loss, D = {x}, D' = {0}, theta_0 ~ N(0, 0.5), t_end = 2 with dt = 0.05,
/// output every 8 steps, no plots or fields; `tables` appended (e.g. "[accuracy]\nrtol = 1e-2\n").
std::string ouCase(const std::string& name, const std::string& halfWidth, int cells, const std::string& sigma,
                   const std::string& x, const std::string& orders, const std::string& tables = "") {
  return "[case]\nname = \"" + name + "\"\n[mesh]\nlower = [-" + halfWidth + "]\nupper = [" + halfWidth +
         "]\ncells = [" + std::to_string(cells) + "]\n[loss]\ntype = \"quadratic\"\n[data]\nrecords = [[" + x +
         "]]\n[neighbour]\nindex = 0\nrecord = [0.0]\n[noise]\nsigma = " + sigma +
         "\n[initial]\nmean = [0.0]\ncovariance = 0.5\n[time]\nt_end = 2.0\ndt = 0.05\n[output]\nevery = 8\n"
         "plots = false\nfields = false\n[divergence]\norders = [" + orders + "]\n" + tables;
}

/// Every conservative value of `quantities` at least its closed form (exact.csv), at every output step after the
/// start; returns how many numbers `counts(row, quantity, truth)` counts (and lets it check more).
template <class Counts>
int everyConservativeValueCoversTheTruth(const fs::path& out, const std::vector<std::string>& quantities,
                                         Counts counts) {
  const Table accuracy = readCsv(out / "accuracy.csv"), exact = readCsv(out / "exact.csv");
  BOOST_REQUIRE_EQUAL(exact.size(), accuracy.size());
  int counted = 0;
  for (std::size_t n = 1; n < exact.size(); ++n)
    for (const auto& q : quantities) {
      const auto& a = accuracy[n];
      const double truth = exact[n].at(q + "_exact");
      BOOST_TEST_INFO("step " << a.at("step") << ", " << q << " = " << a.at(q) << ", exact " << truth);
      BOOST_TEST(a.at(q + "_conservative") >= truth);
      if (counts(a, q, truth)) ++counted;
    }
  return counted;
}

/// An unclipped linear loss under Poisson subsampling (the closed-form sweep's Poisson seed 18, run 6, without its
/// clip norm): 400 records, one at 1.5, gamma = 0.01, K = 60, sigma = 0.05, enumerated, certify = "last_step".
std::string linearPoissonCase(int cells, const std::string& orders, const std::string& deltas) {
  std::string records = "[1.5]";
  for (int i = 1; i < 400; ++i) records += ", [0.0]";
  return "[case]\nname = \"poisson\"\ndynamics = \"noisy_gd\"\n[mesh]\nlower = [-4.5]\nupper = [10.5]\ncells = [" +
         std::to_string(cells) + "]\n[loss]\ntype = \"expression\"\nexpression = \"-x1*theta1\"\ngradient = [\"-x1\"]\n"
         "[data]\nrecords = [" + records + "]\n[neighbour]\nindex = 0\nrecord = [0.0]\n[noise]\nsigma = 0.05\n"
         "[initial]\nmean = [0.0]\ncovariance = 0.1\n[batch]\nsampling = \"poisson\"\nrate = 0.01\n"
         "mixture = \"enumerate\"\n[noisy_gd]\neta = 0.5\nsteps = 60\ndiffusion = \"exact_convolution\"\n"
         "[output]\nevery = 15\nplots = false\nfields = false\nvtk = false\n[divergence]\norders = [" + orders + "]\n"
         "[privacy]\ndelta = 0.01\ndelta_grid = [" + deltas + "]\n[accuracy]\ncertify = \"last_step\"\n";
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_estimate_covers_the_true_error_of_a_langevin_ou_case) {
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "ou.toml";
  // 192 cells: the 8h level (24 cells of 0.5) resolves the start's standard deviation of 0.71.
  writeText(caseFile, ouCase("ou", "6.0", 192, "0.7", "0.2", "2, 10", "[accuracy]\nrtol = 1e-2\n"));
  run(caseFile, tmp.path() / "out");
  const int certified = checkAgainstTruth(tmp.path() / "out", {"2", "10"}, 1e-2);
  BOOST_TEST(certified > 0, "nothing certified: the test would not see a wrong certification");
}

BOOST_AUTO_TEST_CASE(a_start_narrower_than_a_cell_is_flagged) {
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "narrow-start.toml";
  // Langevin from N(0, 1e-6) on cells of 0.03: the start is a point mass at the mesh's scale, and the early numbers
  // are off by more than the scheme's order predicts.
  writeText(caseFile, "[case]\nname = \"narrow\"\n[mesh]\nlower = [-3.0]\nupper = [3.0]\ncells = [200]\n"
                      "[loss]\ntype = \"quadratic\"\n[data]\nrecords = [[0.3]]\n[neighbour]\nindex = 0\n"
                      "record = [0.0]\n[noise]\nsigma = 0.5\n[initial]\nmean = [0.0]\ncovariance = 1e-6\n"
                      "[time]\nt_end = 0.5\ndt = 0.01\n[output]\nevery = 5\nplots = false\nfields = false\n"
                      "[divergence]\norders = [2, 10]\n");
  run(caseFile, tmp.path() / "out");
  checkAgainstTruth(tmp.path() / "out", {"2", "10"}, 1e-3);
  const Table accuracy = readCsv(tmp.path() / "out" / "accuracy.csv");
  for (std::size_t n = 1; n + 1 < accuracy.size(); ++n)
    BOOST_TEST(accuracy[n].at("renyi_10_certified") == 0.0, "R_10 certified at step " << accuracy[n].at("step"));
}

// A box that cuts the densities (faults relaxed so that the run goes on): the companions share the box, so their
// estimate says nothing of what it cuts off. KL and TV were certified 9.9 % and 2.9 % and R_10 53 % below the closed
// form, and R_10's "conservative value" was below the truth; every number resting on the walls must be flagged with a
// conservative value at or above the truth.
BOOST_AUTO_TEST_CASE(a_box_that_cuts_the_densities_certifies_nothing_it_cuts) {
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "box.toml";
  writeText(caseFile,
            "[case]\nname = \"box\"\n[mesh]\nlower = [-1.5]\nupper = [1.5]\ncells = [96]\n[loss]\n"
            "type = \"quadratic\"\n[data]\nrecords = [[0.2]]\n[neighbour]\nindex = 0\nrecord = [-0.4]\n[noise]\n"
            "sigma = 0.7\n[initial]\nmean = [0.0]\ncovariance = 0.5\n[time]\nt_end = 2.0\ndt = 0.05\n[output]\n"
            "every = 8\nplots = false\nfields = false\n[divergence]\norders = [2, 10]\n[faults]\nstop_on = []\n");
  run(caseFile, tmp.path() / "out");
  checkAgainstTruth(tmp.path() / "out", {"2", "10"}, 1e-3, {"1e-05"});
  const Table accuracy = readCsv(tmp.path() / "out" / "accuracy.csv");
  for (const char* q : {"kl", "tv", "renyi_10"})
    BOOST_TEST(accuracy.back().at(std::string(q) + "_certified") == 0.0, q << " certified at the end");
}

// KL(q || p) rests on the walls where p's tail leaves the box (4e-6 of p beyond it after one step): the companions
// share the box, so its conservative value must be the limit, as KL(p || q)'s is. Seen: KL(q || p) certified with a
// conservative value 8e-5 below the truth while KL(p || q) was flagged.
BOOST_AUTO_TEST_CASE(the_reverse_kl_on_the_walls_bounds_nothing) {
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "reverse-kl-walls.toml";
  const double eta = 0.3, lambda = 0.5, sigma2 = 0.49, start = 1e-3;
  writeText(caseFile,
            "[case]\nname = \"reverse-kl-walls\"\ndynamics = \"noisy_gd\"\n[mesh]\nlower = [-2.5]\nupper = [2.5]\n"
            "cells = [96]\n[loss]\ntype = \"quadratic\"\nlambda = 0.5\n[data]\nrecords = [[1.0]]\n[neighbour]\nindex = 0\n"
            "record = [0.0]\n[noise]\ncovariance = [[0.49]]\n[initial]\nmean = [0.0]\ncovariance = [[0.001]]\n"
            "[noisy_gd]\neta = 0.3\nsteps = 1\ndiffusion = \"fokker_planck\"\n[output]\nevery = 1\nplots = false\n"
            "fields = false\n[divergence]\norders = [2]\n");
  run(caseFile, tmp.path() / "out");
  const Table accuracy = readCsv(tmp.path() / "out" / "accuracy.csv");
  BOOST_REQUIRE_EQUAL(accuracy.size(), 2u);
  // The last iterates after one step: N(eta lambda xbar, c^2 V_0 + 2 eta sigma^2) with c = 1 - eta lambda, xbar = 1
  // for p and 0 for q; equal variances, so KL(q || p) = (m_p - m_q)^2 / (2 V) (MATH.md §6).
  const double c = 1.0 - eta * lambda, V = c * c * start + 2.0 * eta * sigma2, dm = eta * lambda;
  const double truth = dm * dm / (2.0 * V);
  const auto& a = accuracy[1];
  BOOST_TEST_INFO("KL(q || p) = " << a.at("kl_qp") << ", conservative " << a.at("kl_qp_conservative") << ", exact "
                                  << truth);
  BOOST_TEST(a.at("kl_qp_conservative") >= truth);
  BOOST_TEST(a.at("kl_conservative") >= truth);  // KL(p || q) has the same truth here
}

// The tilted law p^10 q^-9 of R_10 leaves 2e-7 of itself beyond the box while the wall cells hold 9e-8 of it, below
// the wall-share tolerance: every mesh misses the same tail, so the companions cannot see it (seen: R_10 2e-8 below
// the truth, certified, its conservative value below the truth). The bound on what lies beyond the walls must cover it.
BOOST_AUTO_TEST_CASE(what_lies_beyond_the_walls_is_in_the_conservative_value) {
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "beyond-walls.toml";
  const double eta = 0.3, lambda = 2.0, sigma2 = 0.49, start = 1e-3, xbar = 0.2;
  const long steps = 5;
  writeText(caseFile,
            "[case]\nname = \"beyond-walls\"\ndynamics = \"noisy_gd\"\n[mesh]\nlower = [-5.0]\nupper = [5.0]\n"
            "cells = [200]\n[loss]\ntype = \"quadratic\"\nlambda = 2.0\n[data]\nrecords = [[0.2]]\n[neighbour]\n"
            "index = 0\nrecord = [0.0]\n[noise]\ncovariance = [[0.49]]\n[initial]\nmean = [0.0]\n"
            "covariance = [[0.001]]\n[noisy_gd]\neta = 0.3\nsteps = 5\ndiffusion = \"chapman_kolmogorov\"\n"
            "[output]\nevery = 5\nplots = false\nfields = false\n[divergence]\norders = [2, 10]\n");
  run(caseFile, tmp.path() / "out");
  const Table accuracy = readCsv(tmp.path() / "out" / "accuracy.csv");
  BOOST_REQUIRE_EQUAL(accuracy.size(), 2u);
  // The last iterates: N(m_k, V_k) with m_{k+1} = c m_k + eta lambda xbar (xbar = 0.2 for p, 0 for q), V_{k+1} =
  // c^2 V_k + 2 eta sigma^2, c = 1 - eta lambda; equal variances, so R_alpha = alpha (m_p - m_q)^2 / (2 V) both ways.
  const double c = 1.0 - eta * lambda;
  double m = 0.0, V = start;
  for (long k = 0; k < steps; ++k) m = c * m + eta * lambda * xbar, V = c * c * V + 2.0 * eta * sigma2;
  for (const char* q : {"renyi_10", "renyi_qp_10", "renyi_2", "kl"}) {
    const double alpha = std::string(q) == "kl" ? 1.0 : (std::string(q).find("_2") != std::string::npos ? 2.0 : 10.0);
    const double truth = alpha * m * m / (2.0 * V);
    const auto& a = accuracy[1];
    BOOST_TEST_INFO(q << " = " << a.at(q) << ", conservative " << a.at(std::string(q) + "_conservative") << ", exact "
                      << truth);
    BOOST_TEST(a.at(std::string(q) + "_conservative") >= truth * (1.0 - 1e-13));  // R_10 was 1.5e-8 low
  }
}

BOOST_AUTO_TEST_CASE(the_default_case_certifies_no_eps_beyond_its_error) {
  // 2-D Langevin, 128^2 with companions on 64^2 and 32^2: for small delta the 32^2 mesh is not yet asymptotic while
  // 64^2 and 128^2 can agree by chance (measured 2026-11-26: eps_exact at delta 1e-11, relative errors 5.8e-4 and
  // 4.5e-4, an estimate from the finer pair alone of 1.3e-4 would have certified a number off by 1.5e-3 against
  // rtol 1e-3 x 3.26). Every delta of the default grid is checked against the closed form. On 256^2: the shipped
  // 128^2's 16^2 level does not resolve the start, which leaves every number under-resolved (nothing to check).
  TemporaryDirectory tmp("fpdp-accuracy");
  std::string text = readText(kSourceDir / "cases" / "default.toml");
  const auto at = text.find("[output]");
  BOOST_REQUIRE(at != std::string::npos);
  text.insert(at + 8, "\nplots = false\nfields = false");
  const auto cells = text.find("cells = [128, 128]");
  BOOST_REQUIRE(cells != std::string::npos);
  text.replace(cells, 18, "cells = [256, 256]");
  writeText(tmp.path() / "default.toml", text);
  run(tmp.path() / "default.toml", tmp.path() / "out");
  std::vector<std::string> deltas;
  for (int e = 1; e <= 12; ++e) deltas.push_back(e < 4 ? "0." + std::string(static_cast<std::size_t>(e - 1), '0') + "1"
                                                        : "1e-" + std::string(e < 10 ? "0" : "") + std::to_string(e));
  checkAgainstTruth(tmp.path() / "out", {"1.5", "2", "5", "10"}, 1e-3, deltas);
  // hockey_stick_accuracy.csv: delta(eps) both ways on the eps grid against the closed form of two Gaussians with one
  // covariance, delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), mu^2 = 2 KL (MATH.md §6). The
  // conservative value is never below the truth, a certified value is within rtol of it, and the values past the
  // box's reach (delta below 1e-30 or so on this box) are flagged truncated_suspect, not certified.
  const Table exact = readCsv(tmp.path() / "out" / "exact.csv");
  std::map<long, double> klExact;
  for (const auto& row : exact) klExact[static_cast<long>(row.at("step"))] = row.at("kl_exact");
  const auto Phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  int certified = 0, flagged = 0;
  for (const auto& row : readCsv(tmp.path() / "out" / "hockey_stick_accuracy.csv")) {
    const long step = static_cast<long>(row.at("step"));
    if (step == 0) continue;
    const double mu = std::sqrt(2 * klExact.at(step)), eps = row.at("eps");
    const double truth = Phi(-eps / mu + mu / 2) - std::exp(eps) * Phi(-eps / mu - mu / 2);
    for (const char* dir : {"delta_pq", "delta_qp"}) {
      const std::string d(dir);
      BOOST_TEST_INFO("step " << step << ", eps " << eps << ", " << d << " = " << row.at(d) << ", exact " << truth);
      BOOST_TEST(row.at(d + "_conservative") >= truth * (1 - 1e-12));
      if (row.at(d + "_certified") == 1.0) {
        ++certified;
        BOOST_TEST(std::fabs(row.at(d) - truth) <= 1e-3 * truth);
      }
      if (row.at(d + "_status") == 4.0) ++flagged;
    }
  }
  BOOST_TEST(certified > 0, "no delta(eps) certified: the test would not see a wrong certification");
  BOOST_TEST(flagged > 0, "no delta(eps) flagged: the box's reach was not tested");
}

namespace {

/// A privacy profile delta(x) = sum_i max(a_i - x b_i, 0) (x = e^eps) of two discretised laws: convex in x, as
/// every profile the functionals sum.
struct Profile {
  std::vector<double> a, b;
  double at(double x) const {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += std::max(a[i] - x * b[i], 0.0);
    return s;
  }
  /// The first eps at which at(e^eps) + mSelf + e^eps mOther falls to delta (the bound on delta(eps) that decides
  /// eps(delta), delta(eps) not increasing): a scan in steps of 1e-3, then bisection.
  double root(double delta, double mSelf = 0, double mOther = 0) const {
    const auto above = [&](double eps) { return at(std::exp(eps)) + mSelf + std::exp(eps) * mOther > delta; };
    double lo = 0, hi = 0;
    while (above(hi) && hi < 60) lo = hi, hi += 1e-3;
    for (int k = 0; k < 60; ++k) {
      const double mid = 0.5 * (lo + hi);
      (above(mid) ? lo : hi) = mid;
    }
    return hi;
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(the_eps_shift_of_a_tv_bound_covers_the_moved_root) {
  // Random pairs of laws on 400 points (Gaussians with random means and widths, perturbed): for TV bounds from 0 to
  // beyond delta, the bound on the root's move is at least the true move of the root of delta(eps) + m_p + e^eps m_q
  // (bisection) and at most the move to the first grid eps at which that sum is within delta (the rule it replaces).
  // A tangent at the root instead of the chord, or the allowance left out at the grid point, fails here.
  std::mt19937_64 random(11);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int shifted = 0, refused = 0;
  for (int trial = 0; trial < 40; ++trial) {
    Profile pr;
    const double mp = 2 * u(random) - 1, mq = 2 * u(random) - 1, sp = 0.3 + u(random), sq = 0.3 + u(random);
    double sa = 0, sb = 0;
    for (int i = 0; i < 400; ++i) {
      const double t = -8 + 16 * (i + 0.5) / 400;
      pr.a.push_back(std::exp(-0.5 * std::pow((t - mp) / sp, 2)) * (1 + 0.1 * u(random)));
      pr.b.push_back(std::exp(-0.5 * std::pow((t - mq) / sq, 2)) * (1 + 0.1 * u(random)));
      sa += pr.a.back();
      sb += pr.b.back();
    }
    for (auto& x : pr.a) x /= sa;
    for (auto& x : pr.b) x /= sb;
    std::vector<double> gridEps, gridDelta;
    for (int k = 0; k <= 400; ++k) {
      gridEps.push_back(0.05 * k);
      gridDelta.push_back(pr.at(std::exp(gridEps.back())));
    }
    for (double delta : {1e-2, 1e-4, 1e-6}) {
      fpdp::models::ExactEpsilon root;
      root.epsilon = pr.root(delta);
      root.deltaAtEpsilon = pr.at(std::exp(root.epsilon));
      root.status = fpdp::models::ExactEpsilonStatus::Root;
      if (root.epsilon >= 19.9) continue;  // beyond the grid
      for (double scale : {0.0, 1e-3, 1e-1, 0.5, 2.0}) {
        const double m0 = scale * delta * u(random), m1 = scale * delta * u(random) * std::exp(-root.epsilon);
        const double bound = fpdp::app::epsilonShiftBound(root, delta, gridEps, gridDelta, m0, m1);
        BOOST_TEST_INFO("trial " << trial << ", delta " << delta << ", m " << m0 << ", " << m1 << ", root "
                                 << root.epsilon << ", bound " << bound);
        if (scale == 0.0) {
          BOOST_TEST(bound == 0.0);
          continue;
        }
        if (m0 >= delta) {
          BOOST_TEST(std::isinf(bound));
          ++refused;
          continue;
        }
        const double moved = pr.root(delta, m0, m1);
        BOOST_TEST(root.epsilon + bound >= moved - 1e-12);
        // No farther than the first grid point where delta + the allowance fits.
        for (std::size_t k = 0; k < gridEps.size(); ++k)
          if (gridEps[k] > root.epsilon && gridDelta[k] + m0 + std::exp(gridEps[k]) * m1 <= delta) {
            BOOST_TEST(root.epsilon + bound <= gridEps[k] * (1 + 1e-12));
            break;
          }
        if (bound > 0) ++shifted;
      }
    }
  }
  BOOST_TEST(shifted > 100);
  BOOST_TEST(refused > 0);
}

BOOST_AUTO_TEST_CASE(absorbing_walls_bound_what_the_box_cuts_off) {
  // Noisy GD with the exact convolution on a box too narrow for the run: mass leaves through the walls (about 5e-7
  // of p over 60 steps) and the profile that decides eps(1e-5) rests on the wall cells. The run's densities are those
  // of the paths that stayed in the box; the removed mass bounds their TV to the process on R (docs/noisy-gd.md
  // §4.1). Against the closed form on R: the estimates of TV and eps cover the true error, every conservative value
  // is at least the truth, and eps(1e-5), flagged as resting on the walls, has a finite conservative value (without
  // the bound it would be +inf, with the bound left out of the estimate it would fall below the truth).
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "narrow-box.toml";
  writeText(caseFile, fpdp::app::test::quadraticNoisyGd1d(
                          "narrow-box", "6.0", 600, "[[0.3]]", 60, "diffusion = \"exact_convolution\"\n",
                          "[output]\nevery = 20\nplots = false\nfields = false\n[divergence]\norders = [2]\n"
                          "[privacy]\ndelta_grid = [0.01, 1e-05]\n"));
  run(caseFile, tmp.path() / "out");
  const std::string log = readText(tmp.path() / "out.log");
  BOOST_TEST(log.find("mass carried beyond the mesh") != std::string::npos, log);
  const Table accuracy = readCsv(tmp.path() / "out" / "accuracy.csv");
  const Table exact = readCsv(tmp.path() / "out" / "exact.csv");
  BOOST_REQUIRE_EQUAL(exact.size(), accuracy.size());
  for (std::size_t n = 1; n < exact.size(); ++n) {
    const auto& a = accuracy[n];
    // TV and eps: the removed mass is in the estimate.
    for (const std::string q : {"tv", "eps_exact_delta_0.01", "eps_exact_delta_1e-05"}) {
      const double truth = exact[n].at(q + "_exact");
      BOOST_TEST_INFO("step " << a.at("step") << ", " << q << " = " << a.at(q) << ", exact " << truth);
      BOOST_TEST(a.at(q + "_error_estimate") >= std::fabs(a.at(q) - truth));
      BOOST_TEST(a.at(q + "_conservative") >= truth);
      if (a.at(q + "_certified") == 1.0) BOOST_TEST(std::fabs(a.at(q) - truth) <= 1e-3 * truth);
    }
    // KL and R_2: the box cuts them (measured 3e-6 and 4e-6 low at the end) and the meshes do not bound that: not
    // certified (kAbsorbedMassGuard); their conservative values are the accountants' composition, mu^2/2 and mu^2
    // (full batch, S_g = lambda |x - x'| in closed form), which the truth cannot exceed.
    for (const std::string q : {"kl", "renyi_2"}) {
      const double truth = exact[n].at(q + "_exact");
      BOOST_TEST_INFO("step " << a.at("step") << ", " << q << " = " << a.at(q) << ", exact " << truth);
      BOOST_TEST(a.at(q + "_certified") == 0.0);
      BOOST_TEST(std::isfinite(a.at(q + "_conservative")));
      BOOST_TEST(a.at(q + "_conservative") >= truth);
    }
  }
  BOOST_TEST(log.find("the walls removed p") != std::string::npos, log);
  const Table epsilon = readCsv(tmp.path() / "out" / "epsilon.csv");
  bool restsOnWalls = false;
  for (const auto& row : epsilon)
    if (row.at("delta") == 1e-5 && row.at("step") == 60) restsOnWalls = row.at("eps_exact_status") == 4.0;
  BOOST_TEST(restsOnWalls, "eps(1e-5) does not rest on the walls: the test does not reach the bound");
  const double conservative = accuracy.back().at("eps_exact_delta_1e-05_conservative");
  BOOST_TEST(std::isfinite(conservative));
  BOOST_TEST(conservative < accuracy.back().at("eps_exact_delta_1e-05") + 0.1);
}

BOOST_AUTO_TEST_CASE(nothing_is_certified_past_a_relaxed_fault) {
  // The same OU case on [-2, 2]: the densities reach the walls (wall figure 4.6e-3 against the default tolerance
  // 1e-3), and a case file that relaxes faults.wall_mass_tolerance lets the run go on. The companions share the box:
  // KL and TV came out certified at rtol 1e-2 while 2 % and 0.4 % low. After such a fault nothing is certified and
  // every conservative value is the quantity's limit (TV: 1).
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "ou-walls.toml";
  writeText(caseFile, ouCase("ou-walls", "2.0", 96, "0.7", "0.2", "2",
                             "[accuracy]\nrtol = 1e-2\n[faults]\nwall_mass_tolerance = 0.5\n"));
  run(caseFile, tmp.path() / "out");
  const int offByMoreThanRtol = everyConservativeValueCoversTheTruth(
      tmp.path() / "out", {"kl", "tv", "renyi_2", "eps_exact_delta_1e-05"},
      [](const auto& a, const std::string& q, double truth) {
        BOOST_TEST(a.at(q + "_certified") == 0.0);
        return std::fabs(a.at(q) - truth) > 1e-2 * truth;
      });
  BOOST_TEST(offByMoreThanRtol > 0, "no number off by more than rtol: the test does not reach the rule");
  const std::string log = readText(tmp.path() / "out.log");
  BOOST_TEST(log.find("no number is certified: numerical faults") != std::string::npos, log);
  // The (eps, delta) table says it too, under eps, with the conservative value.
  BOOST_TEST(log.find("NOT CERTIFIED to accuracy.rtol (numerical_fault): use its conservative value inf") !=
                 std::string::npos,
             log);
}

BOOST_AUTO_TEST_CASE(meshes_before_the_asymptotic_range_bound_nothing) {
  // OU with sigma = 0.3 on [-8, 8] with 48 cells (companions 24 and 12): the densities are barely resolved, and the
  // meshes converge more slowly than order 1.5, or faster than the route's order with the coarsest far off, where the
  // error can be far beyond their differences (measured: R_10 3.20, 3.10, 0.47 on the three meshes, value + estimate
  // 3.63, closed form 9.58). The densities' standard deviation (0.3) is below a cell of the 4h mesh, so the meshes'
  // differences say nothing of the error: such numbers have the quantity's limit as conservative value; every
  // conservative KL, TV and R_alpha is at least the truth. R_30 (8.6 on all three meshes against 28.8 at t = 2) peaks, by the far-field
  // model, where the densities underflow: truncated_suspect, conservative +inf.
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "ou-coarse.toml";
  writeText(caseFile, ouCase("ou-coarse", "8.0", 48, "0.3", "0.5", "1.5, 2, 10, 30"));
  run(caseFile, tmp.path() / "out");
  const int farBelow = everyConservativeValueCoversTheTruth(
      tmp.path() / "out", {"kl", "tv", "renyi_1.5", "renyi_2", "renyi_10", "renyi_30"},
      [](const auto& a, const std::string& q, double truth) {
        // The densities (standard deviation 0.3) are narrower than a cell of the 4h mesh (1.33): under_resolved (13),
        // whose error estimate is +inf: nothing bounds the error.
        if (a.at(q + "_reason") != 13.0) return false;
        BOOST_TEST(std::isinf(a.at(q + "_error_estimate")));
        return a.at(q) < 0.9 * truth;
      });
  BOOST_TEST(farBelow > 0, "no under-resolved value far below the truth: the test does not reach the rule");
}

BOOST_AUTO_TEST_CASE(a_zero_eps_is_as_sure_as_tv) {
  // OU on 24 cells, early (t = 0.1): TV is just above delta = 0.01 while every mesh computes it just below, so eps(0.01)
  // is 0 on all three and their agreement certified it (closed form 1.6e-3). A zero eps rests on TV <= delta: where
  // TV's conservative value exceeds delta it is not certified and its conservative value comes from the profile.
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "ou-early.toml";
  std::string text = ouCase("ou-early", "6.0", 24, "0.7", "0.2", "2", "[accuracy]\nrtol = 1e-2\n");
  const std::string time = "t_end = 2.0\ndt = 0.05";
  text.replace(text.find(time), time.size(), "t_end = 0.5\ndt = 0.0125");
  writeText(caseFile, text);
  run(caseFile, tmp.path() / "out");
  const int zeros = everyConservativeValueCoversTheTruth(
      tmp.path() / "out", {"tv", "eps_exact_delta_0.01"}, [](const auto& a, const std::string& q, double truth) {
        if (a.at(q + "_certified") == 1.0) BOOST_TEST(std::fabs(a.at(q) - truth) <= 1e-2 * std::fabs(truth));
        return q != "tv" && a.at(q) == 0.0 && truth > 0.0;
      });
  BOOST_TEST(zeros > 0, "no zero eps against a positive truth: the test does not reach the rule");
}

BOOST_AUTO_TEST_CASE(a_time_error_the_companions_cannot_coarsen_bounds_nothing) {
  // One BDF2 step (t_end = dt): the companions cannot take a coarser time step, so the estimate sees only the mesh.
  // value + that estimate was below the truth (KL 0.07238 against 0.07809): now no number is certified and every
  // conservative value is the quantity's limit, with the reason time_error_not_estimated (5).
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "ou-bdf.toml";
  std::string text = ouCase("ou-bdf", "6.0", 200, "0.7", "0.5", "2, 10", "[solver]\nts_type = \"bdf\"\n");
  const std::string time = "t_end = 2.0\ndt = 0.05";
  text.replace(text.find(time), time.size(), "t_end = 0.4\ndt = 0.4");
  text.replace(text.find("every = 8"), 9, "every = 1");
  writeText(caseFile, text);
  run(caseFile, tmp.path() / "out");
  const int below = everyConservativeValueCoversTheTruth(
      tmp.path() / "out", {"kl", "tv", "renyi_2", "renyi_10", "eps_exact_delta_1e-05"},
      [](const auto& a, const std::string& q, double truth) {
        BOOST_TEST(a.at(q + "_certified") == 0.0);
        BOOST_TEST(a.at(q + "_reason") == 5.0);
        return a.at(q) + a.at(q + "_error_estimate") < truth;
      });
  BOOST_TEST(below > 0, "value + estimate covers every truth: the test does not reach the rule");
}

BOOST_AUTO_TEST_CASE(the_headline_is_the_summary_s_last_lines_and_result_json) {
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "ou.toml";
  writeText(caseFile, ouCase("ou", "6.0", 96, "0.7", "0.2", "2, 10", "[accuracy]\nrtol = 1e-2\n"));
  const auto r = fpdp::app::test::runCaseFile(caseFile, tmp.path() / "out");
  BOOST_REQUIRE_MESSAGE(r.status == 0, r.log);
  // --quiet prints nothing; the summary is in the log of a run without it.
  const std::string command = fpdp::app::test::shellQuote(FPDP_EXECUTABLE) + " run " +
                              fpdp::app::test::shellQuote(caseFile.string()) + " --output " +
                              fpdp::app::test::shellQuote((tmp.path() / "loud").string()) + " > " +
                              fpdp::app::test::shellQuote((tmp.path() / "loud.log").string()) + " 2>&1";
  BOOST_REQUIRE(std::system(command.c_str()) == 0);
  const std::string log = readText(tmp.path() / "loud.log");
  const auto lastLines = log.substr(log.rfind("\n  eps(delta = 1e-05)"));
  BOOST_TEST(lastLines.find("of the last iterate at step 40") != std::string::npos, lastLines);
  BOOST_TEST(lastLines.find("every iterate released") != std::string::npos, lastLines);
  const std::string json = readText(tmp.path() / "loud" / "result.json");
  const Table accuracy = readCsv(tmp.path() / "loud" / "accuracy.csv");
  const bool certified = accuracy.back().at("eps_exact_delta_1e-05_certified") == 1.0;
  BOOST_TEST(json.find(std::string("\"certified\": ") + (certified ? "true" : "false")) != std::string::npos, json);
  BOOST_TEST(lastLines.find(certified ? "certified to rtol" : "NOT CERTIFIED") != std::string::npos, lastLines);
  BOOST_TEST(json.find("\"numbers\": {") != std::string::npos);
  BOOST_TEST(json.find("\"renyi_qp_10\"") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(certify_refines_until_the_headline_is_certified) {
  // 24 cells leave eps(1e-5) uncertified at rtol 1e-3; --certify refines until it is, and the certified value is
  // within rtol of the closed form.
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "ou-coarse.toml";
  writeText(caseFile, ouCase("ou-coarse", "6.0", 24, "0.7", "0.5", "2, 10"));
  run(caseFile, tmp.path() / "plain");
  const Table plain = readCsv(tmp.path() / "plain" / "accuracy.csv");
  BOOST_TEST(plain.back().at("eps_exact_delta_1e-05_certified") == 0.0, "the test needs an uncertified start");
  const std::string command = fpdp::app::test::shellQuote(FPDP_EXECUTABLE) + " run " +
                              fpdp::app::test::shellQuote(caseFile.string()) + " --certify --output " +
                              fpdp::app::test::shellQuote((tmp.path() / "certified").string()) + " > " +
                              fpdp::app::test::shellQuote((tmp.path() / "certified.log").string()) + " 2>&1";
  const int status = std::system(command.c_str());
  BOOST_REQUIRE_MESSAGE(status == 0, readText(tmp.path() / "certified.log"));
  const Table accuracy = readCsv(tmp.path() / "certified" / "accuracy.csv");
  const Table exact = readCsv(tmp.path() / "certified" / "exact.csv");
  BOOST_TEST(accuracy.back().at("eps_exact_delta_1e-05_certified") == 1.0);
  const double truth = exact.back().at("eps_exact_delta_1e-05_exact");
  BOOST_TEST(std::fabs(accuracy.back().at("eps_exact_delta_1e-05") - truth) <= 1e-3 * truth);
  const std::string json = readText(tmp.path() / "certified" / "result.json");
  BOOST_TEST(json.find("\"outcome\": \"certified on") != std::string::npos, json);
  const std::string parameters = readText(tmp.path() / "certified" / "parameters.toml");
  BOOST_TEST(parameters.find("cells = [ 24 ]") == std::string::npos, parameters);  // the refined mesh is recorded
  // The numbers the headline's refinement did not look at are not told to run --certify again, but to refine for every
  // number; and that remedy, followed, certifies them.
  const std::string log = readText(tmp.path() / "certified.log");
  BOOST_TEST(log.find("remedy: run with --certify (") == std::string::npos, log);
  BOOST_TEST(log.find("remedy: run with --certify=last_step") != std::string::npos, log);
  const std::string everyNumber = fpdp::app::test::shellQuote(FPDP_EXECUTABLE) + " run " +
                                  fpdp::app::test::shellQuote(caseFile.string()) + " --certify=last_step --output " +
                                  fpdp::app::test::shellQuote((tmp.path() / "every").string()) + " > " +
                                  fpdp::app::test::shellQuote((tmp.path() / "every.log").string()) + " 2>&1";
  const int everyStatus = std::system(everyNumber.c_str());
  BOOST_REQUIRE_MESSAGE(everyStatus == 0, readText(tmp.path() / "every.log"));
  const Table every = readCsv(tmp.path() / "every" / "accuracy.csv");
  for (const char* q : {"kl", "tv", "renyi_2", "renyi_10", "eps_exact_delta_1e-05"}) {
    BOOST_TEST_INFO(q);
    BOOST_TEST(every.back().at(std::string(q) + "_certified") == 1.0);
  }
}

BOOST_AUTO_TEST_CASE(certify_says_what_blocks_it) {
  // A budget too small for the next mesh: the run goes on with the finest mesh solved and says what blocked it.
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "ou-coarse.toml";
  writeText(caseFile, ouCase("ou-coarse", "6.0", 24, "0.7", "0.5", "2, 10",
                             "[accuracy]\ncertify = \"headline\"\ncertify_max_cells = 30\n"));
  run(caseFile, tmp.path() / "out");
  const std::string json = readText(tmp.path() / "out" / "result.json");
  BOOST_TEST(json.find("exceeds accuracy.certify_max_cells = 30") != std::string::npos, json);
  // The remedy is the budget (not "run with --certify", which was done), and following it lets the next mesh run.
  const std::string remedy = "--certify --set accuracy.certify_max_cells=48";
  BOOST_TEST(json.find("\"remedy\": \"" + remedy) != std::string::npos, json);
  const std::string log = readText(tmp.path() / "out.log");
  BOOST_TEST(log.find("    remedy: " + remedy) != std::string::npos, log.substr(log.rfind("\n  eps(delta")));
  const std::string command = fpdp::app::test::shellQuote(FPDP_EXECUTABLE) + " run " +
                              fpdp::app::test::shellQuote(caseFile.string()) + " " + remedy + " --output " +
                              fpdp::app::test::shellQuote((tmp.path() / "followed").string()) + " > " +
                              fpdp::app::test::shellQuote((tmp.path() / "followed.log").string()) + " 2>&1";
  const int status = std::system(command.c_str());  // before the message, which the macro evaluates first
  BOOST_REQUIRE_MESSAGE(status == 0, readText(tmp.path() / "followed.log"));
  const std::string followed = readText(tmp.path() / "followed" / "result.json");
  BOOST_TEST(followed.find("48 cells") != std::string::npos, followed);  // the next mesh was solved
  BOOST_TEST(followed.find("exceeds accuracy.certify_max_cells = 30") == std::string::npos, followed);
}

BOOST_AUTO_TEST_CASE(certify_judges_a_poisson_mixture_with_its_loss_constants) {
  // A linear loss under Poisson subsampling without clipping (the closed-form sweep's Poisson seed 18, run 6, without
  // its clip norm, R_1.5 only): the refinement's judge, like the run's, takes the gradient gap and the linearity from
  // the loss constants. Without them the inclusion shift is unbounded and every R_alpha "rare_trajectories": the
  // refinement stopped at once (blocked), though the run's own judge certifies R_1.5.
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "poisson.toml";
  writeText(caseFile, linearPoissonCase(1000, "1.5", "0.01, 1e-08"));
  run(caseFile, tmp.path() / "out");
  const std::string json = readText(tmp.path() / "out" / "result.json");
  BOOST_TEST(json.find("\"outcome\": \"certified on") != std::string::npos, json);
  BOOST_TEST(json.find("rare_trajectories") == std::string::npos, json);
}

BOOST_AUTO_TEST_CASE(certify_every_number_refines_past_the_numbers_no_mesh_certifies) {
  // --certify=last_step on the unclipped linear Poisson case of the test above, with R_5 beside R_1.5: R_5 is
  // rare_trajectories on every mesh (no refinement removes it), and the other numbers need finer meshes than the
  // case's 250 cells. The refinement goes on for them and names R_5 with its reason (it stopped at once before).
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "poisson.toml";
  writeText(caseFile, linearPoissonCase(250, "1.5, 5", "0.01"));
  run(caseFile, tmp.path() / "out");
  const std::string json = readText(tmp.path() / "out" / "result.json");
  BOOST_TEST(json.find("\"outcome\": \"certified on") != std::string::npos, json);
  BOOST_TEST(json.find("except renyi_5, renyi_qp_5") != std::string::npos, json);
  BOOST_TEST(json.find("250 cells\"") == std::string::npos, json);  // refined beyond the case's mesh
  const Table accuracy = readCsv(tmp.path() / "out" / "accuracy.csv");
  for (const char* q : {"kl", "tv", "renyi_1.5", "eps_exact_delta_0.01"}) {
    BOOST_TEST_INFO(q);
    BOOST_TEST(accuracy.back().at(std::string(q) + "_certified") == 1.0);
  }
  BOOST_TEST(accuracy.back().at("renyi_5_reason") == 15.0);  // rare_trajectories
}

BOOST_AUTO_TEST_CASE(a_refinement_that_failed_is_the_headline_s_remedy) {
  // The spectral route holds point values: a start of 0.006 cells (2h) is 0 at every centre of the 2x coarser mesh, so
  // the refinement is blocked by its first companion. The headline eps (no_estimate, a reason a refinement removes)
  // is told why the refinement stopped, not to run a refinement again.
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "ck.toml";
  writeText(caseFile, "[case]\nname = \"ck\"\ndynamics = \"noisy_gd\"\n[mesh]\nlower = [-6.0]\nupper = [6.0]\n"
                      "cells = [96]\n[loss]\ntype = \"quadratic\"\n[data]\nrecords = [[0.5]]\n[neighbour]\nindex = 0\n"
                      "record = [0.0]\n[noise]\nsigma = 0.7\n[initial]\nmean = [0.0625]\ncovariance = 2.25e-6\n"
                      "[noisy_gd]\neta = 0.1\nsteps = 10\ndiffusion = \"chapman_kolmogorov\"\n[output]\nevery = 5\n"
                      "plots = false\nfields = false\n[divergence]\norders = [2]\n[accuracy]\ncertify = \"headline\"\n");
  run(caseFile, tmp.path() / "out");
  const std::string json = readText(tmp.path() / "out" / "result.json");
  const std::string headline = json.substr(0, json.find("\"composition\""));
  BOOST_TEST(headline.find("\"certified\": false") != std::string::npos, headline);
  BOOST_TEST(headline.find("\"remedy\": \"the refinement stopped (the certify line): blocked: the solve on 48 cells "
                           "failed") != std::string::npos, headline);
  BOOST_TEST(headline.find("--certify") == std::string::npos, headline);
}

BOOST_AUTO_TEST_CASE(certify_judges_a_start_taken_exactly_as_the_run_does) {
  // A start of 0.001 standard deviation (the Figure 1 setting), far narrower than a cell: the run takes its first step
  // exactly from the Gaussian, and its judge does not ask the cells to resolve the start. The refinement's judge did,
  // and refined to 102400 cells where 800 certify eps (the Figure 1 cases: 32000 cells and 409 s, where the run
  // certifies on its own 2000).
  TemporaryDirectory tmp("fpdp-accuracy");
  std::string text = fpdp::app::test::quadraticNoisyGd1d(
      "narrow", "7.0", 400, "[[1.0]]", 20, "diffusion = \"exact_convolution\"\n",
      "[output]\nevery = 10\nplots = false\nfields = false\n[divergence]\norders = [2]\n[accuracy]\n"
      "certify = \"headline\"\n");
  text.replace(text.find("covariance = 0.5"), 16, "covariance = 1e-6");
  writeText(tmp.path() / "narrow.toml", text);
  run(tmp.path() / "narrow.toml", tmp.path() / "out");
  BOOST_TEST(readText(tmp.path() / "out.log").find("step 1 taken exactly") != std::string::npos);
  const std::string json = readText(tmp.path() / "out" / "result.json");
  const std::string key = "\"outcome\": \"certified on ";
  const auto at = json.find(key);
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, json);
  BOOST_TEST(std::stol(json.substr(at + key.size())) <= 1600, json);
  const Table accuracy = readCsv(tmp.path() / "out" / "accuracy.csv");
  const Table exact = readCsv(tmp.path() / "out" / "exact.csv");
  const double truth = exact.back().at("eps_exact_delta_1e-05_exact");
  BOOST_TEST(std::fabs(accuracy.back().at("eps_exact_delta_1e-05") - truth) <= 1e-3 * truth);
}

BOOST_AUTO_TEST_CASE(certify_blocked_by_the_box_names_what_widens_it) {
  // The walls decide eps(1e-5) and the axis is graded, which --certify does not widen: the remedy is to widen the box
  // by hand, not to run --certify again.
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "box.toml";
  writeText(caseFile,
            "[case]\nname = \"box\"\n[mesh]\nlower = [-1.5]\nupper = [1.5]\ncells = [96]\ngrading = [1.02]\n"
            "[loss]\ntype = \"quadratic\"\n[data]\nrecords = [[0.2]]\n[neighbour]\nindex = 0\nrecord = [-0.4]\n"
            "[noise]\nsigma = 0.7\n[initial]\nmean = [0.0]\ncovariance = 0.5\n[time]\nt_end = 2.0\ndt = 0.05\n"
            "[output]\nevery = 8\nplots = false\nfields = false\n[divergence]\norders = [2, 10]\n[faults]\n"
            "stop_on = []\n[accuracy]\ncertify = \"headline\"\n");
  run(caseFile, tmp.path() / "out");
  const std::string json = readText(tmp.path() / "out" / "result.json");
  BOOST_TEST(json.find("an axis is graded") != std::string::npos, json);
  BOOST_TEST(json.find("\"remedy\": \"widen mesh.lower and mesh.upper by hand") != std::string::npos, json);
  const std::string headline = json.substr(0, json.find("\"numbers\""));
  BOOST_TEST(headline.find("run with --certify") == std::string::npos, headline);
}

BOOST_AUTO_TEST_CASE(certify_every_number_refines_past_the_numbers_the_box_decides_for_good) {
  // A graded axis, which --certify does not widen: R_10 both ways stays box_truncation on every mesh, while KL and
  // eps(1e-5), under-resolved on the requested 48 cells, are certified by finer meshes. The box's numbers are set
  // aside and the others refined; the outcome says both.
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "graded.toml";
  std::string text = ouCase("graded", "5.5", 48, "0.7", "0.5", "2, 10", "[accuracy]\ncertify = \"last_step\"\n");
  text.replace(text.find("cells = [48]"), 12, "cells = [48]\ngrading = [1.01]");
  writeText(caseFile, text);
  run(caseFile, tmp.path() / "out");
  const std::string json = readText(tmp.path() / "out" / "result.json");
  const std::string certify = json.substr(json.find("\"certify\""));
  BOOST_TEST(certify.find("\"outcome\": \"certified on ") != std::string::npos, certify);
  BOOST_TEST(certify.find("cells except the numbers the box decides (renyi_10") != std::string::npos, certify);
  BOOST_TEST(certify.find("an axis is graded") != std::string::npos, certify);
  BOOST_TEST(readText(tmp.path() / "out" / "parameters.toml").find("cells = [ 48 ]") == std::string::npos);
  const Table accuracy = readCsv(tmp.path() / "out" / "accuracy.csv");
  for (const char* q : {"kl", "renyi_2", "eps_exact_delta_1e-05"}) {
    BOOST_TEST_INFO(q);
    BOOST_TEST(accuracy.back().at(std::string(q) + "_certified") == 1.0);
  }
  BOOST_TEST(accuracy.back().at("renyi_10_certified") == 0.0);
  BOOST_TEST(accuracy.back().at("renyi_10_reason") == 6.0);  // box_truncation
}

BOOST_AUTO_TEST_CASE(certify_switches_to_the_positive_series_where_the_noise_floor_decides) {
  // The shipped anisotropic case on 32^2: eps(1e-5), decided where q is far below 1e-12 of its peak, is noise_floor
  // under the exponential integrator's Chebyshev expansion; the remedy names the positive series, and --certify
  // switches to it (then widens the box and refines until its cell budget stops it).
  TemporaryDirectory tmp("fpdp-accuracy");
  std::string text = readText(kSourceDir / "cases" / "anisotropic-ou-2d.toml");
  const auto at = text.find("cells = [128, 128]");
  BOOST_REQUIRE(at != std::string::npos);
  text.replace(at, 18, "cells = [32, 32]");
  writeText(tmp.path() / "aniso.toml", text);
  run(tmp.path() / "aniso.toml", tmp.path() / "plain");
  const auto headline = [&](const fs::path& out) {
    const std::string json = readText(out / "result.json");
    return json.substr(0, json.find("\"composition\""));
  };
  const std::string plain = headline(tmp.path() / "plain");
  BOOST_TEST(plain.find("\"reason\": \"noise_floor\"") != std::string::npos, plain);
  BOOST_TEST(plain.find("solver.exponential_series = \\\"positive\\\"") != std::string::npos, plain);
  writeText(tmp.path() / "budget.toml",
            text + "\n[accuracy]\ncertify = \"headline\"\ncertify_max_cells = 4096\n");
  run(tmp.path() / "budget.toml", tmp.path() / "certify");
  const std::string log = readText(tmp.path() / "certify.log");
  BOOST_TEST(log.find("ts_type=exponential (positive series") != std::string::npos, log);
  const std::string parameters = readText(tmp.path() / "certify" / "parameters.toml");
  BOOST_TEST(parameters.find("exponential_series = 'positive'") != std::string::npos, parameters);
  const std::string certified = headline(tmp.path() / "certify");
  BOOST_TEST(certified.find("noise_floor") == std::string::npos, certified);
}

BOOST_AUTO_TEST_CASE(certify_takes_noisy_gd_noise_by_exact_convolution) {
  // Noisy GD with the default heat route (diffusion = "fokker_planck"): its time error is refined with substeps, so
  // every refinement costs twice the cells' growth. --certify takes the same Gaussian kernel by exact convolution,
  // says so in the summary, records it in parameters.toml, and its certified eps(1e-5) is within rtol of the closed form.
  TemporaryDirectory tmp("fpdp-accuracy");
  const fs::path caseFile = tmp.path() / "heat.toml";
  writeText(caseFile, fpdp::app::test::quadraticNoisyGd1d("heat", "7.0", 60, "[[1.0]]", 20, "",
                                                          "[output]\nevery = 10\nplots = false\nfields = false\n"
                                                          "[divergence]\norders = [2]\n[accuracy]\ncertify = "
                                                          "\"headline\"\n"));
  run(caseFile, tmp.path() / "out");
  const std::string log = readText(tmp.path() / "out.log");
  BOOST_TEST(log.find("diffusion: exact_convolution") != std::string::npos, log);
  const std::string parameters = readText(tmp.path() / "out" / "parameters.toml");
  BOOST_TEST(parameters.find("diffusion = 'exact_convolution'") != std::string::npos, parameters);
  const std::string json = readText(tmp.path() / "out" / "result.json");
  BOOST_TEST(json.find("\"outcome\": \"certified on") != std::string::npos, json);
  const Table accuracy = readCsv(tmp.path() / "out" / "accuracy.csv");
  const Table exact = readCsv(tmp.path() / "out" / "exact.csv");
  BOOST_TEST(accuracy.back().at("eps_exact_delta_1e-05_certified") == 1.0);
  const double truth = exact.back().at("eps_exact_delta_1e-05_exact");
  BOOST_TEST(std::fabs(accuracy.back().at("eps_exact_delta_1e-05") - truth) <= 1e-3 * truth);
  BOOST_TEST(accuracy.back().at("eps_exact_delta_1e-05_conservative") >= truth);
}

BOOST_AUTO_TEST_CASE(fourth_order_fluxes_run_in_one_dimension) {
  // solver.spatial_order = 4 passed the schema and then failed in every 1-D case: PETSc's DMCreateMatrix refuses a 1-D
  // DMDA of stencil width 2 (meshes::DistributedBoxMesh::createMatrix builds that one). The fourth-order run is closer
  // to the closed form than the second-order one on the same mesh.
  TemporaryDirectory tmp("fpdp-accuracy");
  double error[2];
  for (int order : {2, 4}) {
    const fs::path caseFile = tmp.path() / ("ou" + std::to_string(order) + ".toml");
    writeText(caseFile, ouCase("ou", "6.0", 96, "0.7", "0.5", "2",
                               "[solver]\nts_type = \"bdf\"\nspatial_order = " + std::to_string(order) +
                                   "\n[accuracy]\nestimate = false\n"));
    run(caseFile, tmp.path() / ("out" + std::to_string(order)));
    const Table exact = readCsv(tmp.path() / ("out" + std::to_string(order)) / "exact.csv");
    error[order / 4] = exact.back().at("l1_error_p");
  }
  BOOST_TEST(error[1] < error[0]);
}

BOOST_AUTO_TEST_CASE(an_eight_times_coarser_companion_that_fails_is_left_out) {
  // cases/noisy-gd-box-2d.toml projects onto a box whose faces are faces of the 64^2, 32^2 and 16^2 meshes but not of
  // the 8^2 one: that companion fails, and the estimate goes on with 2h and 4h (it took every estimate with it).
  TemporaryDirectory tmp("fpdp-accuracy");
  const std::string command = fpdp::app::test::shellQuote(FPDP_EXECUTABLE) + " run " +
                              fpdp::app::test::shellQuote((kSourceDir / "cases" / "noisy-gd-box-2d.toml").string()) +
                              " --output " + fpdp::app::test::shellQuote((tmp.path() / "out").string()) +
                              " --set output.plots=false > " +
                              fpdp::app::test::shellQuote((tmp.path() / "run.log").string()) + " 2>&1";
  const int status = std::system(command.c_str());
  const std::string log = readText(tmp.path() / "run.log");
  BOOST_REQUIRE_MESSAGE(status == 0, log);
  BOOST_TEST(log.find("companion solves on 32x32 and 16x16 cells (the 8x8-cell solve failed and was left out)") !=
                 std::string::npos,
             log);
  // The companions judged the numbers (here: the densities are narrower than the 16^2 mesh's cells), which they
  // could not do without them (no_estimate, code 9).
  const Table accuracy = readCsv(tmp.path() / "out" / "accuracy.csv");
  BOOST_TEST(accuracy.back().at("kl_reason") == 13.0);
}
