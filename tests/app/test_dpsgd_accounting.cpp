// The accountants' side of a noisy-GD case (app/run/DpSgdAccounting, MATH.md §8): the DP-SGD vocabulary round-trips
// through the case reader's sigma = z C sqrt(eta/2) / b, and the composition baseline of cyclic and Poisson batches
// is the one its closed form or the PLD accountant gives, as a function of the case (no run).
#define BOOST_TEST_MODULE app_dpsgd_accounting
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "app/case/CaseReader.hpp"
#include "app/run/DpSgdAccounting.hpp"
#include "models/GaussianComposition.hpp"
#include "models/PrivacyLossDistribution.hpp"

using namespace fpdp::app;

namespace {

std::filesystem::path goodCase() { return std::filesystem::path(FPDP_SOURCE_DIR) / "tests/app/good_cases/noisy_gd.toml"; }

/// The good noisy-GD case (n = 4, eta = 0.1, K = 20, neighbour replaces record 0) with noise.multiplier z, clip norm
/// C = 2 and the given [batch] lines.
Case dpsgdCase(double z, const std::string& batch, long steps = 20) {
  std::ifstream in(goodCase());
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  t.replace(t.find("sigma = 0.5"), 11, "multiplier = " + std::to_string(z));
  t.replace(t.find("steps = 20"), 10, "steps = " + std::to_string(steps) + "\nclip_norm = 2.0");
  return readCaseString(t + "\n[batch]\n" + batch + "\n", goodCase());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dpsgd_accounting)

BOOST_AUTO_TEST_CASE(vocabulary_maps_both_ways) {
  for (const std::string batch : {"", "sampling = \"cyclic\"\nsize = 3", "sampling = \"poisson\"\nrate = 0.25"}) {
    const Case c = dpsgdCase(3.0, batch);
    const DpSgdVocabulary v = dpSgdVocabulary(c, 4.0);  // S_g = 2C
    BOOST_TEST_INFO("batch: " << batch);
    BOOST_TEST(v.b == c.batch.expectedSize(4));
    // The reader's sigma maps back to the case's z (add/remove, sensitivity C).
    BOOST_TEST(*v.dpsgdMultiplier == 3.0, boost::test_tools::tolerance(1e-14));
    BOOST_TEST(v.noiseOnSum == 6.0, boost::test_tools::tolerance(1e-14));
    // fpdp's replace-one multiplier per step: sigma b sqrt(2/eta) / S_g = z C / (2C) = z / 2.
    BOOST_TEST(*v.fpdpMultiplier == 1.5, boost::test_tools::tolerance(1e-14));
    const std::string text = v.text();
    BOOST_TEST(text.find("z = 3") != std::string::npos, text);
    BOOST_TEST(text.find("sigma = z C sqrt(eta/2) / b") != std::string::npos, text);
    BOOST_TEST(text.find("= 1.5 with S_g = 4") != std::string::npos, text);
  }
  // The CYS Figure 1 reading of MATH.md §8: n = 5000, S_g = 4, eta = 0.02, sigma = 0.02 is z_fpdp = 250 (full batch).
  Case c = dpsgdCase(3.0, "");
  c.noise.sigma = 0.02;
  c.noisyGd.eta = 0.02;
  c.data.records = fpdp::models::Dataset(std::vector<fpdp::models::Record>(5000, c.data.records[0]));
  BOOST_TEST(*dpSgdVocabulary(c, 4.0).fpdpMultiplier == 250.0, boost::test_tools::tolerance(1e-13));
  BOOST_TEST(!dpSgdVocabulary(c, std::nullopt).fpdpMultiplier);
}

BOOST_AUTO_TEST_CASE(cyclic_baseline_is_the_gdp_of_the_records_uses) {
  // n = 4, size 3: batches {0,1,2}, {3}; record 0 is in batch 0, used in steps 0, 2, 4, ...: 10 of 20 steps.
  const Case c = dpsgdCase(3.0, "sampling = \"cyclic\"\nsize = 3");
  CompositionBaseline base(c, 4.0);
  BOOST_TEST(base.unavailable().empty());
  BOOST_TEST(!base.poisson());
  BOOST_TEST(base.uses(20) == 10);
  BOOST_TEST(base.uses(1) == 1);
  BOOST_TEST(base.uses(2) == 1);
  BOOST_TEST(base.uses(3) == 2);
  // One use: mu = eta (S_g / b) / (sqrt(2 eta) sigma) = 1 / z_fpdp = 2/3; 10 uses compose to 2/3 sqrt(10).
  BOOST_TEST(base.mu(20) == 2.0 / 3.0 * std::sqrt(10.0), boost::test_tools::tolerance(1e-13));
  const auto eps = base.epsilons(20, {1e-5});
  BOOST_TEST(eps[0].pessimistic == fpdp::models::gdpEpsilon(base.mu(20), 1e-5));
  BOOST_TEST(eps[0].optimistic == eps[0].pessimistic);
  BOOST_TEST(base.description().find("replace-one") != std::string::npos);
  // Record 3 (the short last batch) is used in the odd steps.
  Case last = c;
  last.neighbour.index = 3;
  BOOST_TEST(CompositionBaseline(last, 4.0).uses(20) == 10);
  BOOST_TEST(CompositionBaseline(last, 4.0).uses(1) == 0);
  // An added record joins the last batch: used in the odd steps as record 3 is, not in batch 0's.
  Case added = c;
  added.neighbour.kind = fpdp::models::NeighbourKind::Add;
  added.neighbour.index = 0;
  BOOST_TEST(CompositionBaseline(added, 4.0).uses(1) == 0);
  BOOST_TEST(CompositionBaseline(added, 4.0).uses(21) == 10);
  BOOST_TEST(!CompositionBaseline(c, std::nullopt).unavailable().empty());
  BOOST_TEST(std::isnan(CompositionBaseline(c, std::nullopt).epsilons(20, {1e-5})[0].pessimistic));
}

BOOST_AUTO_TEST_CASE(poisson_baseline_is_the_pld_accountant_with_mu_one_over_z) {
  const Case c = dpsgdCase(3.0, "sampling = \"poisson\"\nrate = 0.25");
  CompositionBaseline base(c, 4.0);
  BOOST_TEST(base.poisson());
  BOOST_TEST(base.unavailable().empty());
  BOOST_TEST(base.description().find("add/remove") != std::string::npos);
  BOOST_TEST(std::isnan(base.mu(20)));
  const auto eps = base.epsilons(20, {1e-3, 1e-5});
  // The accountant's own answer for the DP-SGD parameters (z read back from sigma: equal up to round-off).
  const auto ref = fpdp::models::subsampledGaussianEpsilons(1.0 / 3.0, 0.25, 20, {1e-3, 1e-5});
  for (std::size_t k = 0; k < 2; ++k) {
    BOOST_TEST(eps[k].pessimistic == ref[k].pessimistic, boost::test_tools::tolerance(1e-9));
    BOOST_TEST(eps[k].optimistic <= eps[k].pessimistic);
  }
  // Subsampling amplifies: below the full batch's GDP at the same z (mu = 1/z per step, add/remove).
  BOOST_TEST(eps[1].pessimistic < fpdp::models::gdpEpsilon(std::sqrt(20.0) / 3.0, 1e-5));
  // Without a clip norm the add/remove sensitivity is not known.
  Case noClip = c;
  noClip.noisyGd.clipNorm.reset();
  BOOST_TEST(CompositionBaseline(noClip, 4.0).unavailable().find("clip_norm") != std::string::npos);
}

// A mechanism whose composed privacy loss the accountant's grid cannot hold (tiny noise, many steps) leaves the
// baseline not computed with the reason, instead of failing the run.
BOOST_AUTO_TEST_CASE(poisson_baseline_beyond_the_grid_is_not_computed) {
  const Case c = dpsgdCase(0.05, "sampling = \"poisson\"\nrate = 0.5", 10000);
  CompositionBaseline base(c, 4.0);
  std::vector<fpdp::models::PldEpsilon> eps;
  BOOST_CHECK_NO_THROW(eps = base.epsilons(10000, {1e-5}));
  BOOST_TEST_REQUIRE(eps.size() == 1u);
  BOOST_TEST(std::isnan(eps[0].pessimistic));
  BOOST_TEST(base.unavailable().find("grid points") != std::string::npos, base.unavailable());
}

// A mechanism whose loss reaches far beyond 709, where e^L overflows: its eps(1e-3) is far above 100 (delta(eps) >=
// gamma (1 - o(1)) for eps below mu^2/2 at the first step already), and the upper bound must say so. Before the grid
// stopped at |L| = 700, z = 0.018 and 0.0054 (gamma = 0.3, K = 8) gave NaN masses and eps(1e-3) = 2.9 and 2.9.
BOOST_AUTO_TEST_CASE(poisson_baseline_of_a_loss_beyond_exp_overflow_stays_an_upper_bound) {
  for (double z : {0.054, 0.018, 0.0054}) {
    const auto far = fpdp::models::subsampledGaussianEpsilons(1.0 / z, 0.3, 8, {1e-3});
    BOOST_TEST(far[0].pessimistic > 100.0, "z " << z << ": " << far[0].pessimistic);
    BOOST_TEST(!std::isnan(far[0].optimistic));
  }
}

BOOST_AUTO_TEST_SUITE_END()
