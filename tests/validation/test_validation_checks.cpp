// The checks of `fpdp validate` (validation/ValidationChecks) on small hand-made tables, each where it must pass
// and where it must fail; and the CSV reader (io/CsvReader) they are fed by.
#define BOOST_TEST_MODULE validation_checks
#define BOOST_TEST_DYN_LINK
#include <cstdio>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "io/CsvReader.hpp"
#include "validation/ValidationChecks.hpp"

using namespace fpdp;
using validation::Status;
using validation::Table;

namespace {

// As app/commands/ValidateCommand reads a run's files.
Table table(const std::string& csv) {
  auto t = io::parseCsv(csv, "test");
  std::vector<std::vector<double>> numbers;
  for (const auto& row : t.rows) {
    std::vector<double> values(row.size());
    for (std::size_t c = 0; c < row.size(); ++c)
      if (!io::parseCsvNumber(row[c], values[c])) values[c] = std::nan("");
    numbers.push_back(values);
  }
  return Table(std::move(t.columns), std::move(t.rows), std::move(numbers));
}

const Table kDivergence = table(
    "step,t,mass_p,mass_q,kl,tv,renyi_2,renyi_10\n"
    "0,0,1,1,0,0,0,0\n"
    "1,0.5,1.000000000001,0.9999999999995,0.01,0.05,0.02,0.1\n"
    "2,1,1,1,0.015,0.06,0.03,0.15\n");

}  // namespace

BOOST_AUTO_TEST_CASE(csv_reader_quotes_empty_cells_and_errors) {
  const auto t = io::parseCsv("a,b,c\n1,\"x, \"\"y\"\"\",\n2,inf,nan\n", "t");
  BOOST_TEST(t.columns.size() == 3u);
  BOOST_TEST(t.rows.size() == 2u);
  BOOST_TEST(t.rows[0][1] == "x, \"y\"");
  BOOST_TEST(t.rows[0][2] == "");
  double v = 0;
  BOOST_TEST(io::parseCsvNumber("inf", v));
  BOOST_TEST(std::isinf(v));
  BOOST_TEST(io::parseCsvNumber("", v));
  BOOST_TEST(std::isnan(v));
  BOOST_TEST(!io::parseCsvNumber("yes", v));
  BOOST_CHECK_THROW(io::parseCsv("a,b\n1,2,3\n", "t"), std::runtime_error);
  BOOST_CHECK_THROW(io::parseCsv("a,b\n\"1,2\n", "t"), std::runtime_error);
  BOOST_CHECK_THROW(io::parseCsv("", "t"), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(bounds_above_truth_pass_fail_and_tightness) {
  // bound5 equals the truth at step 2 up to 1e-4 relative (within a 1e-3 tolerance); bound1 is below it at step 1.
  const Table bounds = table(
      "step,t,bound1_renyi_2,bound1_renyi_10,bound5_renyi_2,bound5_renyi_10,bound3_renyi_2,bound3_renyi_10,bound9_kl\n"
      "0,0,0,0,0,0,,,0\n"
      "1,0.5,0.019,0.2,0.025,0.11,,,0.02\n"
      "2,1,0.5,2.5,0.029997,0.15,,,0.03\n");
  const auto rows = validation::boundsAboveTruth(kDivergence, bounds, 1e-3);
  BOOST_REQUIRE(rows.size() == 3u);  // bound1, bound5, bound9; bound3 has only empty cells (not applicable)
  BOOST_TEST(rows[0].check == "bound1 >= truth");
  BOOST_TEST((rows[0].status == Status::Fail));
  BOOST_TEST(rows[0].measured == (0.02 - 0.019) / 0.019, boost::test_tools::tolerance(1e-12));
  BOOST_TEST((rows[1].status == Status::Pass));
  BOOST_TEST(rows[1].measured == (0.03 - 0.029997) / 0.029997, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(rows[1].detail.find("tightness bound/truth min 0.9999") != std::string::npos, rows[1].detail);
  BOOST_TEST((rows[2].status == Status::Pass));  // KL 0.01 <= 0.02, 0.015 <= 0.03
  // The same bounds with a tolerance smaller than bound5's deficit fail.
  BOOST_TEST((validation::boundsAboveTruth(kDivergence, bounds, 1e-5)[1].status == Status::Fail));
}

BOOST_AUTO_TEST_CASE(lower_bound_match_and_exact_errors) {
  const Table bounds = table("step,t,bound5_renyi_2,bound5_renyi_10\n0,0,0,0\n1,0.5,0.03,0.2\n2,1,0.0300003,0.15\n");
  const auto from2 = validation::lowerBoundMatch(kDivergence, bounds, "bound5", 2, 1e-5);
  BOOST_TEST((from2.status == Status::Pass));
  BOOST_TEST(from2.measured == std::fabs(0.03 / 0.0300003 - 1.0), boost::test_tools::tolerance(1e-9));
  BOOST_TEST((validation::lowerBoundMatch(kDivergence, bounds, "bound5", 1, 1e-5).status == Status::Fail));
  BOOST_TEST((validation::lowerBoundMatch(kDivergence, bounds, "bound6", 1, 1e-5).status == Status::Fail));

  const Table exact = table(
      "step,t,l1_error_p,l1_error_q,kl_exact,kl_rel_error,renyi_2_exact,renyi_2_rel_error\n"
      "0,0,1e-16,1e-16,0,0,1e-32,-1\n1,0.5,2e-4,3e-4,0.01,-2e-5,0.02,1e-5\n");
  const auto rows = validation::exactErrors(exact, {{"kl", 1e-5}, {"renyi_2", 1e-5}, {"l1", 5e-4}, {"renyi_7", 1}}, 1);
  BOOST_REQUIRE(rows.size() == 4u);
  BOOST_TEST((rows[0].status == Status::Fail));  // 2e-5 > 1e-5
  BOOST_TEST((rows[1].status == Status::Pass));  // step 0's -1 is not compared (from_step 1)
  BOOST_TEST((rows[2].status == Status::Pass));
  BOOST_TEST(rows[2].measured == 3e-4);
  BOOST_TEST((rows[3].status == Status::Fail));  // no such column
}

BOOST_AUTO_TEST_CASE(mass_lemma4) {
  BOOST_TEST((validation::massConservation(kDivergence, 2e-12).status == Status::Pass));
  BOOST_TEST((validation::massConservation(kDivergence, 5e-13).status == Status::Fail));
  const Table tracing = table(
      "step,s,t,sup_drift_gap,lemma4_bound,cells_above_bound\n0,0.25,0.25,0.30000000000000004,0.3,0\n"
      "0,0.5,0.5,0.29,0.3,0\n");
  auto rows = validation::lemma4(tracing, 1e-12);
  BOOST_REQUIRE(rows.size() == 3u);
  BOOST_TEST((rows[0].status == Status::Pass));
  BOOST_TEST((rows[1].status == Status::Pass));
  BOOST_TEST((rows[2].status == Status::Info));
  const Table violated = table("step,s,t,kl,sup_drift_gap,lemma4_bound,cells_above_bound\n0,0.25,0.25,inf,0.31,0.3,3\n");
  rows = validation::lemma4(violated, 1e-12);
  BOOST_TEST((rows[0].status == Status::Fail));
  BOOST_TEST((rows[1].status == Status::Fail));
  BOOST_TEST(rows[2].detail.find("1 of 1 tracing times have a non-finite KL") != std::string::npos, rows[2].detail);
}

BOOST_AUTO_TEST_CASE(renyi_rate_absent_is_skipped_present_is_judged) {
  const auto absent = validation::renyiRate(std::nullopt, 1e-2, 0.0);
  BOOST_REQUIRE(absent.size() == 3u);
  for (const auto& r : absent) {
    BOOST_TEST((r.status == Status::Skipped));
    BOOST_TEST(r.detail.find("not available in this build") != std::string::npos);
  }
  const std::string header =
      "step,s,t,alpha,renyi,rate_finite_difference,rate_identity,rate_abs_difference,lemma2_rhs_optimal_Sv,"
      "lemma2_rhs_half_Sv,lemma2_rhs_optimal_measured,lemma2_rhs_half_measured,margin_optimal_measured,sup_drift_gap,"
      "Sv,c_eff,c_theory,lsi_ratio,status\n";
  // Interior rows only (the first and last of each order's series are one-sided); R = t^2 for alpha 2, so the
  // identity's rates 2t have no third derivative and any |identity - FD| is discretisation disagreement.
  const Table good = table(header +
                           "1,0,0.1,2,0.01,0.19,0.2,0.01,0.3,0.35,0.3,0.35,0.1,0.3,0.3,1.2,1,1.2,ok\n"
                           "2,0,0.2,2,0.04,0.401,0.4,0.001,0.5,0.55,0.5,0.55,0.1,0.3,0.3,1.1,1,1.1,ok\n"
                           "3,0,0.3,2,0.09,0.6005,0.6,0.0005,0.7,0.75,0.7,0.75,0.1,0.3,0.3,1.3,1,1.3,ok\n"
                           "4,0,0.4,2,0.16,0.9,0.8,0.1,0.9,0.95,0.9,0.95,0.1,0.3,0.3,1.4,1,1.4,ok\n"
                           "5,0,0.5,2,nan,nan,nan,nan,nan,nan,nan,nan,nan,0.3,0.3,nan,nan,nan,not_applicable\n");
  auto rows = validation::renyiRate(good, 2e-2, 0.0);
  BOOST_REQUIRE(rows.size() == 3u);
  BOOST_TEST((rows[0].status == Status::Pass));
  BOOST_TEST(rows[0].measured == 0.001 / 0.8, boost::test_tools::tolerance(1e-12));  // the one-sided ends ignored
  BOOST_TEST((rows[1].status == Status::Pass));
  BOOST_TEST((rows[2].status == Status::Pass));
  BOOST_TEST(rows[2].measured == 1.1, boost::test_tools::tolerance(1e-12));
  // Rates t^3 (R = t^4/4): at t = 0.2 the central difference's truncation error is h^2 |d3R/dt3| / 6 with d3R/dt3
  // the second difference of the rates, (0.027 - 2 0.008 + 0.001)/0.01 = 1.2, i.e. 0.002; a gap of 0.003 is within
  // twice that, a gap of 0.0064 (= 0.1 of the largest rate) is not.
  const auto cubic = [&](double fdAt02) {
    char row[160];
    std::snprintf(row, sizeof row, "2,0,0.2,2,0.0004,%.6g,0.008,%.6g,1,1,1,1,1,0.3,0.3,nan,nan,nan,ok\n", fdAt02,
                  std::fabs(fdAt02 - 0.008));
    return table(header + "1,0,0.1,2,0.000025,0.001,0.001,0,1,1,1,1,1,0.3,0.3,nan,nan,nan,ok\n" + row +
                 "3,0,0.3,2,0.002025,0.027,0.027,0,1,1,1,1,1,0.3,0.3,nan,nan,nan,ok\n"
                 "4,0,0.4,2,0.0064,0.064,0.064,0,1,1,1,1,1,0.3,0.3,nan,nan,nan,ok\n");
  };
  rows = validation::renyiRate(cubic(0.011), 2e-2, 0.0);
  BOOST_TEST((rows[0].status == Status::Pass), rows[0].detail);
  rows = validation::renyiRate(cubic(0.008 + 0.004 + 0.0064), 2e-2, 0.0);
  BOOST_TEST((rows[0].status == Status::Fail), rows[0].detail);
  const Table bad = table(header +
                          "1,0,0.1,2,0.01,0.2,0.2,0,0.05,0.06,0.05,0.06,-0.05,0.3,0.3,0.8,1,0.8,violation\n"
                          "2,0,0.2,2,0.04,0.6,0.4,0.2,0.05,0.06,0.05,0.06,-0.05,0.3,0.3,0.8,1,0.8,ok\n"
                          "3,0,0.3,2,0.09,0.6,0.6,0,0.05,0.06,0.05,0.06,-0.05,0.3,0.3,0.8,1,0.8,ok\n");
  rows = validation::renyiRate(bad, 2e-2, 0.1);
  BOOST_TEST((rows[0].status == Status::Fail));  // |0.6 - 0.4| / 0.6 = 1/3 at the interior row
  BOOST_TEST((rows[1].status == Status::Fail));  // one violation
  BOOST_TEST(rows[1].detail.find("first violation at step 1") != std::string::npos, rows[1].detail);
  BOOST_TEST((rows[2].status == Status::Fail));  // 0.8 < 1 - 0.1
}

BOOST_AUTO_TEST_CASE(regression_against_a_reference) {
  const Table same = kDivergence;
  BOOST_TEST((validation::compareWithReference("d.csv", kDivergence, same, 1e-10).status == Status::Pass));
  const Table changed = table(
      "step,t,mass_p,mass_q,kl,tv,renyi_2,renyi_10\n0,0,1,1,0,0,0,0\n"
      "1,0.5,1.000000000001,0.9999999999995,0.01,0.05,0.02000001,0.1\n2,1,1,1,0.015,0.06,0.03,0.15\n");
  const auto r = validation::compareWithReference("d.csv", kDivergence, changed, 1e-10);
  BOOST_TEST((r.status == Status::Fail));
  BOOST_TEST(r.measured == 1e-8 / 0.02000001, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(r.detail.find("renyi_2 row 2") != std::string::npos, r.detail);
  const Table fewerRows = table("step,t,mass_p,mass_q,kl,tv,renyi_2,renyi_10\n0,0,1,1,0,0,0,0\n");
  BOOST_TEST((validation::compareWithReference("d.csv", kDivergence, fewerRows, 1e-10).status == Status::Fail));
  const Table infinite = table("step,x\n0,inf\n1,nan\n");
  BOOST_TEST((validation::compareWithReference("i.csv", infinite, infinite, 0.0).status == Status::Pass));
}

BOOST_AUTO_TEST_CASE(convergence_in_k_is_classified) {
  auto series = [](const std::vector<double>& R) {
    std::string csv = "step,t,renyi_2\n";
    for (std::size_t k = 0; k < R.size(); ++k)
      csv += std::to_string(10 * k) + "," + std::to_string(k) + "," + std::to_string(R[k]) + "\n";
    return table(csv);
  };
  // Geometric approach to 1 with ratio 0.5: the extrapolated limit is exact.
  const auto geometric = validation::convergenceInK(series({0, 0.5, 0.75, 0.875, 0.9375}), "renyi_2");
  BOOST_TEST(geometric.measured == 0.5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(geometric.detail.find("converges (increment ratio 0.5") != std::string::npos, geometric.detail);
  BOOST_TEST(geometric.detail.find("extrapolation to 1.000000e+00") != std::string::npos, geometric.detail);
  const auto linear = validation::convergenceInK(series({0, 1, 2, 3, 4}), "renyi_2");
  BOOST_TEST(linear.detail.find("still growing") != std::string::npos, linear.detail);
  const auto oscillating = validation::convergenceInK(series({0, 1.5, 0.75, 1.125, 0.9375}), "renyi_2");
  BOOST_TEST(oscillating.detail.find("converges, oscillating") != std::string::npos, oscillating.detail);
  BOOST_TEST((validation::convergenceInK(series({0, 1}), "renyi_2").status == Status::Skipped));
}

BOOST_AUTO_TEST_CASE(formulas_outside_their_assumptions) {
  // Quadratic noisy GD, lambda = 1, eta = 1.5 (eta > 1/beta): item 5 is what the formula gives, item 7 is Langevin only.
  models::BoundProblem p;
  p.noisyGd = true;
  p.eta = 1.5;
  p.strongConvexity = 1.0;
  p.smoothness = 1.0;
  p.quadraticLoss = true;
  p.quadraticLambda = 1.0;
  p.Sigma = p.SigmaPrime = models::Matrix::Identity(1, 1);
  p.startCovariance = models::Matrix::Zero(1, 1);
  p.worstCaseGap = 0.3;
  BOOST_TEST(validation::boundFormulaIgnoringAssumptions(p, 5, 2.0, 7, 10.5) ==
                 models::shiftedDivergenceBound(2.0, 0.3, 1.0, 1.0, 1.5, 7),
             boost::test_tools::tolerance(1e-15));
  BOOST_TEST(std::isnan(validation::boundFormulaIgnoringAssumptions(p, 7, 2.0, 7, 10.5)));
  p.strongConvexity.reset();
  BOOST_TEST(std::isnan(validation::boundFormulaIgnoringAssumptions(p, 3, 2.0, 7, 10.5)));

  const Table applicability = table(
      "item,label,name,gap,applies,reason_or_qualification,source,assumptions\n"
      "5,bound5,shifted,S_g/n,no,eta <= 1/beta fails,FMTT,x\n3,bound3,cor1,S_g/n,no,\"lambda > 0 fails, really\",CYS,x\n"
      "1,bound1,composition,S_g/n,yes,,CYS,x\n");
  // A formula equal to 0.9 x truth is below it; 1.5 x truth above.
  const auto rows = validation::unapplicableBoundsVersusTruth(
      kDivergence, applicability,
      [](int item, double alpha, long step, double) {
        const double truth = step == 0 ? 0.0 : (alpha == 2 ? 0.02 : 0.1) * (step == 1 ? 1.0 : 1.5);
        return item == 5 ? 0.9 * truth : 1.5 * truth;
      },
      1e-2);
  BOOST_REQUIRE(rows.size() == 2u);  // items 3 and 5, in item order (item 1 applies)
  BOOST_TEST(rows[0].detail.find("above the truth at every step") != std::string::npos, rows[0].detail);
  BOOST_TEST(rows[1].detail.find("BELOW the truth") != std::string::npos, rows[1].detail);
  // Formulas without a value (NaN: a constant does not exist) are summarised in one row.
  const auto none = validation::unapplicableBoundsVersusTruth(
      kDivergence, applicability, [](int, double, long, double) { return std::nan(""); }, 1e-2);
  BOOST_REQUIRE(none.size() == 1u);
  BOOST_TEST(none[0].detail.find("item 3: lambda > 0 fails, really; item 5: eta <= 1/beta fails") != std::string::npos,
             none[0].detail);
}
