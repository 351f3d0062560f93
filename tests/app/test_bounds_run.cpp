// End-to-end tests of the privacy output of `fpdp run` (docs/output.md, docs/bounds.md): bounds.csv, epsilon.csv,
// bound_applicability.csv, their HDF5 copies, the summary, and the PNG plots (drawn by the run, redrawn by `fpdp plot`).
//
// The quadratic noisy-GD case (MATH.md §5 items 5, 6): 1-D, l = (lambda/2)(theta - x)^2, lambda = 1, D = {0.3},
// D' = {0}, eta = 0.5, sigma = 1, start N(0, 0.1), K = 40, the Fokker-Planck route for the noise (docs/noisy-gd.md).
// The start's variance enters v_K as c^(2K) v_0 (c = 1 - eta lambda = 0.5), so from K = 12 on the run is the
// deterministic-start run to c^(2K) v_0 / v_K < 5e-9 relative. It is run twice: fine (1400 cells, 16 diffusion
// substeps) and coarse (700 cells, 8 substeps). If halving the cell width and the substep divides the error by
// rho, the fine error is |R_fine - R_coarse| / (rho - 1); the scheme is second order in both (rho -> 4), the run
// shows rho between 1.5 and 3.5 here, and the tolerance assumes rho >= 4/3: tol = 3 |R_fine - R_coarse|. Checked:
//  - computed R_alpha matches the exact value of the case's start (exact.csv, item 6 with v_0 = 0.1) at every step
//    within tol;
//  - it matches bound 5 (the shifted-divergence bound, = item 6 with v_0 = 0) within tol for K >= 12;
//  - bounds 5 and 6 agree to 1e-8 relative (tests/models checks more lambda, eta, K);
//  - the computed value lies below bounds 1-4 at every step.
// (The fokker_planck route: the run checks the bounds whatever the route; the exact_convolution route's large orders
// from narrow starts are tested in tests/solver/test_noisy_gd.cpp, exact_convolution_keeps_far_tails_for_large_orders.)
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE app_bounds
#include <boost/test/unit_test.hpp>

#include <hdf5.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ProcessSupport.hpp"
#include "models/RdpConversion.hpp"

namespace fs = std::filesystem;
using fpdp::app::test::shellQuote;
using fpdp::app::test::TemporaryDirectory;
using fpdp::app::test::readText;
using fpdp::app::test::writeText;
using fpdp::app::test::contains;

namespace {

const fs::path kSourceDir = FPDP_SOURCE_DIR;

struct Outcome {
  int status = -1;
  std::string out;
};

/// Runs `command` in `dir` (stdout and stderr together).
Outcome run(const std::string& command, const fs::path& dir) {
  const fs::path log = dir / "command.log";
  const int s = std::system(("cd " + shellQuote(dir.string()) + " && " + command + " > " +
                             shellQuote(log.string()) + " 2>&1 < /dev/null")
                                .c_str());
  Outcome o;
  o.status = (s != -1 && WIFEXITED(s)) ? WEXITSTATUS(s) : -1;
  o.out = fs::exists(log) ? readText(log) : "";
  return o;
}

Outcome runFpdp(const fs::path& caseFile, const fs::path& out, const fs::path& dir) {
  return run(shellQuote(FPDP_EXECUTABLE) + " run " + shellQuote(caseFile.string()) + " --output " +
                 shellQuote(out.string()) + " --quiet",
             dir);
}

/// A CSV file as named columns; an empty cell is NaN (a bound that does not apply), "inf" is +inf.
struct Table {
  std::vector<std::string> header;
  std::map<std::string, std::vector<double>> col;
  bool has(const std::string& c) const { return col.count(c) > 0; }
  const std::vector<double>& operator[](const std::string& c) const {
    const auto it = col.find(c);
    if (it == col.end()) throw std::runtime_error("no column " + c);
    return it->second;
  }
  std::size_t rows() const { return col.empty() ? 0 : col.begin()->second.size(); }
};

Table readTable(const fs::path& file) {
  std::istringstream in(readText(file));
  Table t;
  std::string line;
  std::getline(in, line);
  {
    std::istringstream h(line);
    for (std::string c; std::getline(h, c, ',');) t.header.push_back(c);
  }
  while (std::getline(in, line)) {
    std::istringstream r(line);
    std::string cell;
    for (std::size_t i = 0; i < t.header.size(); ++i) {
      if (!std::getline(r, cell, ',')) cell.clear();
      t.col[t.header[i]].push_back(cell.empty() ? std::nan("") : std::strtod(cell.c_str(), nullptr));
    }
  }
  return t;
}

std::string quadraticCase(const std::string& name, int cells, int substeps, bool plots, double eta = 0.5,
                          long steps = 40) {
  std::ostringstream s;
  s << "[case]\nname = \"" << name << "\"\ndynamics = \"noisy_gd\"\n\n"
    << "[mesh]\nlower = [-9.0]\nupper = [9.0]\ncells = [" << cells << "]\n\n"
    << "[loss]\ntype = \"quadratic\"\nlambda = 1.0\n\n[data]\nrecords = [[0.3]]\n\n"
    << "[neighbour]\nindex = 0\nrecord = [0.0]\n\n[noise]\nsigma = 1.0\n\n"
    << "[initial]\nmean = [0.0]\ncovariance = 0.1\n\n"
    << "[noisy_gd]\neta = " << eta << "\nsteps = " << steps << "\ndiffusion = \"fokker_planck\"\n"
    << "diffusion_substeps = " << substeps << "\n\n"
    << "[output]\nevery = 1\nfields = false\nplots = " << (plots ? "true" : "false") << "\n\n"
    << "[divergence]\norders = [2, 10]\n\n[privacy]\ndelta = 1e-5\ndelta_grid = [1e-2, 1e-8]\n";
  return s.str();
}

/// renyi.csv at its last output step: the orders, R_alpha(p || q) and R_alpha(q || p) as the eps conversions use them
/// (status 0 finite or 1 infinite; NaN for the unreliable statuses 2 and 3), and R_alpha(p || q) as computed.
struct LastOrders {
  std::vector<double> orders, forward, reverse, all;
};
LastOrders lastOrders(const Table& renyi) {
  LastOrders o;
  const double lastStep = renyi["step"].back();
  auto usable = [](double r, double status) { return status == 2 || status == 3 ? std::nan("") : r; };
  for (std::size_t i = 0; i < renyi.rows(); ++i) {
    if (renyi["step"][i] != lastStep) continue;
    o.orders.push_back(renyi["alpha"][i]);
    o.all.push_back(renyi["renyi"][i]);
    o.forward.push_back(usable(renyi["renyi"][i], renyi["status"][i]));
    o.reverse.push_back(usable(renyi["renyi_reverse"][i], renyi["status_reverse"][i]));
  }
  return o;
}

bool isPng(const fs::path& file) {
  if (!fs::exists(file) || fs::file_size(file) < 1000) return false;
  const std::string head = readText(file).substr(0, 8);
  return head == std::string("\x89PNG\r\n\x1a\n", 8);
}

bool h5Has(const fs::path& file, const char* path) {
  const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return false;
  const std::string p(path);
  bool ok = true;
  for (std::size_t at = p.find('/', 1);; at = p.find('/', at + 1)) {  // every prefix must exist for H5Lexists
    if (H5Lexists(f, p.substr(0, at).c_str(), H5P_DEFAULT) <= 0) {
      ok = false;
      break;
    }
    if (at == std::string::npos) break;
  }
  H5Fclose(f);
  return ok;
}

const char* kPlots[] = {"renyi_bounds.png", "epsilon_delta.png", "step_contributions.png", "divergences.png"};

}  // namespace

BOOST_AUTO_TEST_CASE(quadratic_noisy_gd_truth_bounds_and_plots) {
  TemporaryDirectory t("fpdp-bounds");
  writeText(t.path() / "fine.toml", quadraticCase("fine", 1400, 16, true));
  writeText(t.path() / "coarse.toml", quadraticCase("coarse", 700, 8, false));
  const Outcome fine = runFpdp("fine.toml", "fine", t.path());
  BOOST_TEST_REQUIRE(fine.status == 0, fine.out);
  const Outcome coarse = runFpdp("coarse.toml", "coarse", t.path());
  BOOST_TEST_REQUIRE(coarse.status == 0, coarse.out);

  const Table div = readTable(t.path() / "fine" / "divergence.csv");
  const Table divCoarse = readTable(t.path() / "coarse" / "divergence.csv");
  const Table exact = readTable(t.path() / "fine" / "exact.csv");
  const Table bounds = readTable(t.path() / "fine" / "bounds.csv");
  BOOST_TEST_REQUIRE(div.rows() == 41u);
  BOOST_TEST_REQUIRE(bounds.rows() == 41u);
  for (const char* label : {"2", "10"}) {
    const std::string r = std::string("renyi_") + label;
    double worstExact = 0, worstBound5 = 0, worstEstimate = 0;
    for (std::size_t k = 1; k < div.rows(); ++k) {
      const double computed = div[r][k], coarseValue = divCoarse[r][k];
      // Discretisation error estimate (see the header), with a floor at the quadrature's round-off (1e-13 relative).
      const double tol = 3.0 * std::fabs(computed - coarseValue) + 1e-13 * computed;
      worstEstimate = std::max(worstEstimate, tol / computed);
      const double ex = exact[r + "_exact"][k];
      worstExact = std::max(worstExact, std::fabs(computed - ex) / ex);
      BOOST_TEST(std::fabs(computed - ex) <= tol, r << " step " << k << ": computed " << computed << " exact " << ex
                                                    << " tolerance " << tol);
      const double b5 = bounds["bound5_" + r][k], b6 = bounds["bound6_" + r][k];
      BOOST_TEST(std::fabs(b5 - b6) <= 1e-8 * b6, "step " << k);
      if (k >= 12) {  // the start's effect: c^(2K) v_0 / v_K <= 0.5^24 * 0.1 / 1.33 < 5e-9 relative
        worstBound5 = std::max(worstBound5, std::fabs(computed - b5) / b5);
        BOOST_TEST(std::fabs(ex - b5) <= 5e-9 * b5, "start effect at step " << k);
        BOOST_TEST(std::fabs(computed - b5) <= tol, r << " step " << k << ": computed " << computed << " bound 5 "
                                                      << b5 << " tolerance " << tol);
      }
      for (int item = 1; item <= 4; ++item) {
        const double b = bounds["bound" + std::to_string(item) + "_" + r][k];
        BOOST_TEST_REQUIRE(!std::isnan(b), "bound " << item << " should apply");
        BOOST_TEST(computed <= b, r << " step " << k << ": computed " << computed << " above bound " << item << " "
                                    << b);
      }
    }
    BOOST_TEST_MESSAGE(r << ": worst relative error vs exact " << worstExact << ", vs bound 5 (K >= 12) "
                         << worstBound5 << ", discretisation estimate " << worstEstimate);
  }
  // Bounds that cannot apply to noisy GD are empty columns.
  BOOST_TEST(std::isnan(bounds["bound7_renyi_2"][10]));
  BOOST_TEST(std::isnan(bounds["bound8_measured_gap_renyi_2"][10]));

  // epsilon.csv: the conversions of the computed R_alpha(p || q) and R_alpha(q || p) (renyi.csv) as the models compute
  // them, the pair's eps the larger; one row per delta and step.
  const Table eps = readTable(t.path() / "fine" / "epsilon.csv");
  const LastOrders ro = lastOrders(readTable(t.path() / "fine" / "renyi.csv"));
  BOOST_TEST_REQUIRE(ro.orders.size() == 2u);
  BOOST_TEST(ro.forward[0] == div["renyi_2"][40]);
  BOOST_TEST_REQUIRE(eps.rows() == 41u * 3u);  // delta_grid [1e-2, 1e-8] plus delta = 1e-5
  const std::size_t last = eps.rows() - 1;
  const double lastStep = eps["step"][last];
  for (std::size_t i = 0; i < eps.rows(); ++i) {
    if (eps["step"][i] != lastStep) continue;
    const double delta = eps["delta"][i];
    const auto cksPq = fpdp::models::cksEpsilon(ro.orders, ro.forward, delta);
    const auto cksQp = fpdp::models::cksEpsilon(ro.orders, ro.reverse, delta);
    const auto mirPq = fpdp::models::mironovEpsilon(ro.orders, ro.forward, delta);
    const auto mirQp = fpdp::models::mironovEpsilon(ro.orders, ro.reverse, delta);
    BOOST_TEST(eps["eps_rdp_cks_pq"][i] == cksPq.epsilon, boost::test_tools::tolerance(1e-14));
    BOOST_TEST(eps["eps_rdp_cks_qp"][i] == cksQp.epsilon, boost::test_tools::tolerance(1e-14));
    BOOST_TEST(eps["eps_rdp_mironov_pq"][i] == mirPq.epsilon, boost::test_tools::tolerance(1e-14));
    BOOST_TEST(eps["eps_rdp_mironov_qp"][i] == mirQp.epsilon, boost::test_tools::tolerance(1e-14));
    BOOST_TEST(eps["eps_rdp_cks"][i] == std::max(cksPq.epsilon, cksQp.epsilon),
               boost::test_tools::tolerance(1e-14));
    BOOST_TEST(eps["eps_rdp_mironov"][i] == std::max(mirPq.epsilon, mirQp.epsilon),
               boost::test_tools::tolerance(1e-14));
    // A bound's eps is at least the computed one's (same conversion, larger R_alpha).
    BOOST_TEST(eps["eps_bound1_cks"][i] >= eps["eps_rdp_cks"][i]);
    // The exact eps: the larger direction, a root (status 0) or 0 (status 1), below every conversion.
    BOOST_TEST(eps["eps_exact"][i] == std::max(eps["eps_exact_pq"][i], eps["eps_exact_qp"][i]));
    BOOST_TEST((eps["eps_exact_status"][i] == 0 || eps["eps_exact_status"][i] == 1));
    BOOST_TEST(eps["eps_exact"][i] <= eps["eps_rdp_cks"][i]);
  }
  BOOST_TEST(contains(fine.out, "eps exact (root of delta(eps) = delta by quadrature)"));
  BOOST_TEST(h5Has(t.path() / "fine" / "fpdp.h5", "/epsilon/eps_exact_status"));
  BOOST_TEST(h5Has(t.path() / "fine" / "fpdp.h5", "/renyi/renyi_reverse"));

  // Summary, HDF5 copies, applicability file.
  BOOST_TEST(contains(fine.out, "bounds on R_10 at the end"));
  BOOST_TEST(contains(fine.out, "plots: PNG files in the output directory"));
  BOOST_TEST(contains(fine.out, "; plots "), fine.out);  // the wall-time breakdown has the plots' seconds
  BOOST_TEST(!contains(coarse.out, "; plots "), coarse.out);
  BOOST_TEST(h5Has(t.path() / "fine" / "fpdp.h5", "/bounds/bound5_renyi_2"));
  BOOST_TEST(h5Has(t.path() / "fine" / "fpdp.h5", "/bounds/applicability"));
  BOOST_TEST(h5Has(t.path() / "fine" / "fpdp.h5", "/epsilon/eps_rdp_cks"));
  BOOST_TEST(contains(readText(t.path() / "fine" / "bound_applicability.csv"), "8,bound8,FMTT Thm 1,S_g/n,no,"));

  // Plots: made by the run, and remade by `fpdp plot` alone.
  for (const char* png : kPlots) BOOST_TEST(isPng(t.path() / "fine" / png), png);
  for (const char* png : kPlots) BOOST_TEST(!fs::exists(t.path() / "coarse" / png), png);  // output.plots = false
  BOOST_TEST(contains(coarse.out, "plots: not drawn (output.plots = false)"));
  for (const char* png : kPlots) fs::remove(t.path() / "fine" / png);
  const Outcome replot = run(shellQuote(FPDP_EXECUTABLE) + " plot fine", t.path());
  BOOST_TEST(replot.status == 0, replot.out);
  for (const char* png : kPlots) BOOST_TEST(isPng(t.path() / "fine" / png), png);
  // A directory fpdp did not make: `fpdp plot` draws nothing into it (exit 2, one line).
  fs::create_directories(t.path() / "empty");
  const Outcome foreign = run(shellQuote(FPDP_EXECUTABLE) + " plot empty", t.path());
  BOOST_TEST(foreign.status == 2);
  BOOST_TEST(contains(foreign.out, "not made by fpdp"), foreign.out);
  BOOST_TEST(fs::is_empty(t.path() / "empty"));
  // One of fpdp's without the run's files: `fpdp plot` fails with a one-line reason.
  std::ofstream(t.path() / "empty" / ".fpdp-output") << "made by fpdp\n";
  const Outcome bad = run(shellQuote(FPDP_EXECUTABLE) + " plot empty", t.path());
  BOOST_TEST(bad.status == 1);
  BOOST_TEST(contains(bad.out, "divergence.csv"), bad.out);
}

BOOST_AUTO_TEST_CASE(bounds_whose_assumptions_fail_are_reported_not_applicable) {
  TemporaryDirectory t("fpdp-bounds-na");
  // eta = 1.5 > 1/beta = 1 for the quadratic loss: the contraction / LSI bounds 2, 3, 5 do not apply (the quadratic
  // closed forms 4 and 6 still do: eta lambda < 2).
  // The run also meets a plotter that cannot draw (FPDP_FONT names a file that is no font): the run succeeds and
  // the summary carries the reason as a WARNING; no plot is written.
  writeText(t.path() / "big-step.toml", quadraticCase("big-step", 300, 4, true, 1.5, 5));
  writeText(t.path() / "not-a-font.ttf", "broken for the test\n");
  const Outcome o = run("FPDP_FONT=" + shellQuote((t.path() / "not-a-font.ttf").string()) + " " +
                            shellQuote(FPDP_EXECUTABLE) + " run big-step.toml --output big-step --quiet",
                        t.path());
  BOOST_TEST_REQUIRE(o.status == 0, o.out);
  BOOST_TEST(contains(o.out, "WARNING: plotting failed"), o.out);
  BOOST_TEST(contains(o.out, "not-a-font.ttf"), o.out);
  BOOST_TEST(!fs::exists(t.path() / "big-step" / "renyi_bounds.png"));
  BOOST_TEST(contains(o.out, "eta <= 1/beta fails (eta beta = 1.5)"), o.out);
  const Table b = readTable(t.path() / "big-step" / "bounds.csv");
  for (const char* col : {"bound2_renyi_2", "bound3_renyi_2", "bound5_renyi_2", "bound5_measured_gap_renyi_10"})
    for (double v : b[col]) BOOST_TEST(std::isnan(v), col);
  for (double v : b["bound6_renyi_2"]) BOOST_TEST(!std::isnan(v));
  const std::string applicability = readText(t.path() / "big-step" / "bound_applicability.csv");
  BOOST_TEST(contains(applicability, "5,bound5,shifted divergence,S_g/n,no,eta <= 1/beta fails (eta beta = 1.5)"));

  // A non-convex loss (double well): no lambda, so bounds 2, 3, 5 do not apply; composition does (measured gap).
  const std::string doubleWell =
      "[case]\nname = \"well\"\ndynamics = \"noisy_gd\"\n\n[mesh]\nlower = [-3.0]\nupper = [3.0]\ncells = [300]\n\n"
      "[loss]\ntype = \"double_well\"\nlambda = 1.0\nwidth = 1.0\n\n[data]\nrecords = [[0.0]]\n\n"
      "[neighbour]\nindex = 0\nrecord = [0.2]\n\n[noise]\nsigma = 0.8\n\n[initial]\nmean = [0.0]\ncovariance = 0.2\n\n"
      "[noisy_gd]\neta = 0.05\nsteps = 4\n\n[output]\nevery = 1\nfields = false\nplots = false\n\n"
      "[divergence]\norders = [2]\n";
  writeText(t.path() / "well.toml", doubleWell);
  const Outcome w = runFpdp("well.toml", "well", t.path());
  BOOST_TEST_REQUIRE(w.status == 0, w.out);
  // The rows of bound_applicability.csv for items 2, 3 and 5 say "no" and why.
  std::istringstream rowsOfWell(readText(t.path() / "well" / "bound_applicability.csv"));
  int notApplicable = 0;
  for (std::string line; std::getline(rowsOfWell, line);)
    for (const char* item : {"2,bound2", "3,bound3", "5,bound5"})
      if (line.rfind(item, 0) == 0) {
        BOOST_TEST(contains(line, ",no,lambda > 0 fails"), line);
        ++notApplicable;
      }
  BOOST_TEST(notApplicable == 6);  // three items, two gap variants each
  const Table wb = readTable(t.path() / "well" / "bounds.csv");
  for (double v : wb["bound3_measured_gap_renyi_2"]) BOOST_TEST(std::isnan(v));
  BOOST_TEST(!std::isnan(wb["bound1_measured_gap_renyi_2"][4]));
  BOOST_TEST(contains(w.out, "not applicable: lambda > 0 fails"), w.out);
}

// An order whose computed R_alpha is truncated by the box (renyi.csv status 2, truncated_suspect: an underestimate)
// must not enter the RDP -> (eps, delta) conversions, where its too small R_alpha could give too small an eps. The
// 2-D quadratic case in [-4, 4]^2 with orders 10, 40 and 80: their tilted laws leave the box (R_80 reads 14.2
// against an exact 75.3), and at the small deltas a truncated order would win the minimum.
BOOST_AUTO_TEST_CASE(unreliable_orders_are_left_out_of_the_eps_conversions) {
  TemporaryDirectory t("fpdp-eps-reliable");
  std::string text = readText(kSourceDir / "tests" / "app" / "good_cases" / "quadratic.toml");
  const auto replace = [&text](const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    BOOST_TEST_REQUIRE(at != std::string::npos, from);
    text.replace(at, from.size(), to);
  };
  replace("orders = [2, 10]", "orders = [2, 10, 40, 80]");
  replace("every = 10", "every = 100\nplots = false");
  writeText(t.path() / "box.toml", text);
  const Outcome o = run(shellQuote(FPDP_EXECUTABLE) + " run box.toml --output box", t.path());
  BOOST_TEST_REQUIRE(o.status == 0, o.out);
  const Table renyi = readTable(t.path() / "box" / "renyi.csv");
  const Table eps = readTable(t.path() / "box" / "epsilon.csv");
  const LastOrders ro = lastOrders(renyi);
  const double lastStep = renyi["step"].back();
  const std::vector<double>& orders = ro.orders;
  BOOST_TEST_REQUIRE(orders.size() == 4u);
  BOOST_TEST_REQUIRE(std::isnan(ro.forward[3]), "R_80 should be truncated_suspect here; R_80 = " << ro.all[3]);
  bool checkedDifference = false;
  for (std::size_t i = 0; i < eps.rows(); ++i) {
    if (eps["step"][i] != lastStep) continue;
    const double delta = eps["delta"][i];
    BOOST_TEST_CONTEXT("delta " << delta) {
      // Each direction without its unreliable orders; the pair's eps the larger, with that direction's order.
      const auto mPq = fpdp::models::mironovEpsilon(orders, ro.forward, delta);
      const auto mQp = fpdp::models::mironovEpsilon(orders, ro.reverse, delta);
      const auto kPq = fpdp::models::cksEpsilon(orders, ro.forward, delta);
      const auto kQp = fpdp::models::cksEpsilon(orders, ro.reverse, delta);
      const auto m = mQp.epsilon > mPq.epsilon ? mQp : mPq;
      const auto k = kQp.epsilon > kPq.epsilon ? kQp : kPq;
      BOOST_TEST(eps["eps_rdp_mironov"][i] == m.epsilon, boost::test_tools::tolerance(1e-14));
      BOOST_TEST(eps["eps_rdp_mironov_order"][i] == m.order);
      BOOST_TEST(eps["eps_rdp_cks"][i] == k.epsilon, boost::test_tools::tolerance(1e-14));
      BOOST_TEST(eps["eps_rdp_cks_order"][i] == k.order);
      BOOST_TEST(eps["eps_rdp_mironov_pq"][i] == mPq.epsilon, boost::test_tools::tolerance(1e-14));
      // Where the truncated orders would have won, the reported eps is the larger, reliable one.
      const auto withAll = fpdp::models::mironovEpsilon(orders, ro.all, delta);
      bool truncatedWins = false;
      for (std::size_t j = 0; j < orders.size(); ++j)
        truncatedWins |= std::isnan(ro.forward[j]) && withAll.order == orders[j];
      if (truncatedWins) {
        checkedDifference = true;
        BOOST_TEST(eps["eps_rdp_mironov_pq"][i] > withAll.epsilon);
      }
    }
  }
  BOOST_TEST(checkedDifference, "no delta where a truncated order would have given the minimum");
  BOOST_TEST(contains(o.out, "orders skipped as not reliable (their eps could be too small): 10 (truncated_suspect), "
                             "40 (truncated_suspect), 80 (truncated_suspect)"),
             o.out);
}

// eps_exact is the root of delta(eps) = delta by quadrature at each trial eps (MATH.md §7), not an interpolation on
// the hockey-stick grid: CYS Figure 1's setting (lambda = 1) with K = 500 steps (c^K = 0.98^500 = 4e-5, so the pair is
// Figure 1's to 1e-4) is two Gaussians of equal variance with mu^2 = 2 R_alpha/alpha (exact.csv), whose profile is
// Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) (MATH.md §6). The 0.05 grid's interpolation gave 0.1444 at
// delta = 1e-5 against 0.1247 (+16 %); here the grid ends at 0.1, below every eps at delta <= 1e-4, where the grid
// gave no number. Measured: at most 1.7e-5 relative from the closed form over delta = 1e-1 .. 1e-12 (the midpoint
// rule at the kink of (p - e^eps q)_+, 2000 cells); checked to 1e-4.
BOOST_AUTO_TEST_CASE(eps_exact_is_the_root_of_the_profile_not_a_grid_interpolation) {
  TemporaryDirectory t("fpdp-eps-exact");
  std::string text = readText(kSourceDir / "cases" / "figure1-lambda1.toml");
  const auto replace = [&text](const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    BOOST_TEST_REQUIRE(at != std::string::npos, from);
    text.replace(at, from.size(), to);
  };
  replace("steps = 10000", "steps = 500");
  replace("file = \"data/figure1-records.csv\"",
          "file = \"" + (kSourceDir / "cases" / "data" / "figure1-records.csv").string() + "\"");
  replace("orders = [10, 20, 30]", "orders = [10, 20, 30]\nhockey_stick_eps_max = 0.1");
  replace("fields = false", "fields = false\nplots = false");
  writeText(t.path() / "figure1.toml", text);
  const Outcome o = runFpdp(t.path() / "figure1.toml", t.path() / "out", t.path());
  BOOST_TEST_REQUIRE(o.status == 0, o.out);
  const Table exact = readTable(t.path() / "out" / "exact.csv");
  const Table eps = readTable(t.path() / "out" / "epsilon.csv");
  const double mu = std::sqrt(2.0 * exact["renyi_30_exact"].back() / 30.0);
  BOOST_TEST(mu == 0.0398, boost::test_tools::tolerance(1e-3));
  auto profile = [mu](double e) {
    auto Phi = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
    return Phi(-e / mu + mu / 2) - std::exp(e) * Phi(-e / mu - mu / 2);
  };
  const double lastStep = eps["step"].back();
  int beyondGrid = 0;
  for (std::size_t i = 0; i < eps.rows(); ++i) {
    if (eps["step"][i] != lastStep) continue;
    const double delta = eps["delta"][i];
    double truth = 0.0;
    if (profile(0.0) > delta) {
      double lo = 0.0, hi = 1.0;
      for (int k = 0; k < 200; ++k) {
        const double mid = 0.5 * (lo + hi);
        (profile(mid) > delta ? lo : hi) = mid;
      }
      truth = hi;
    }
    BOOST_TEST_CONTEXT("delta " << delta << ": eps_exact " << eps["eps_exact"][i] << ", closed form " << truth) {
      if (truth == 0.0) {
        BOOST_TEST(eps["eps_exact"][i] == 0.0);
        BOOST_TEST(eps["eps_exact_status"][i] == 1.0);  // delta(0) = TV <= delta
        continue;
      }
      BOOST_TEST(eps["eps_exact"][i] == truth, boost::test_tools::tolerance(1e-4));
      BOOST_TEST(eps["eps_exact_status"][i] == 0.0);
      BOOST_TEST(eps["eps_exact"][i] == std::max(eps["eps_exact_pq"][i], eps["eps_exact_qp"][i]));
      if (truth > 0.1) ++beyondGrid;
    }
  }
  BOOST_TEST(beyondGrid >= 8);  // delta = 1e-5 .. 1e-12: eps beyond the grid's end 0.1
  BOOST_TEST(contains(o.out, "eps exact (root of delta(eps) = delta by quadrature)           1.247"), o.out);
}

// The pair's eps does not depend on which dataset is called D: the logistic noisy-GD case (cases/
// logistic-noisy-gd-1d.toml, K = 200) and the same with record 0 of D and of D' exchanged. Its two directions
// differ (R_alpha(p || q) and R_alpha(q || p) by about 20 %), so an eps from one direction alone would change with
// the exchange. Every eps column of the pair is the same, and each direction's column is the other's of the
// exchanged run; at the small deltas eps_exact lies beyond 10, the default grid's end.
BOOST_AUTO_TEST_CASE(exchanging_d_and_d_prime_keeps_every_eps) {
  TemporaryDirectory t("fpdp-eps-exchange");
  std::string text = readText(kSourceDir / "cases" / "logistic-noisy-gd-1d.toml");
  const auto replace = [](std::string& s, const std::string& from, const std::string& to) {
    const auto at = s.find(from);
    BOOST_TEST_REQUIRE(at != std::string::npos, from);
    s.replace(at, from.size(), to);
  };
  replace(text, "every = 20", "every = 100\nfields = false\nplots = false");
  std::string exchanged = text;
  replace(exchanged, "records = [[1.2]", "records = [[-2.0]");
  replace(exchanged, "record = [-2.0]", "record = [1.2]");
  writeText(t.path() / "a.toml", text);
  writeText(t.path() / "b.toml", exchanged);
  const Outcome a = runFpdp(t.path() / "a.toml", t.path() / "a", t.path());
  const Outcome b = runFpdp(t.path() / "b.toml", t.path() / "b", t.path());
  BOOST_TEST_REQUIRE(a.status == 0, a.out);
  BOOST_TEST_REQUIRE(b.status == 0, b.out);
  const Table ea = readTable(t.path() / "a" / "epsilon.csv"), eb = readTable(t.path() / "b" / "epsilon.csv");
  BOOST_TEST_REQUIRE(ea.rows() == eb.rows());
  bool asymmetricRdp = false, asymmetricExact = false, beyondTen = false;
  for (std::size_t i = 0; i < ea.rows(); ++i) {
    BOOST_TEST_CONTEXT("row " << i << ", delta " << ea["delta"][i]) {
      for (const char* c : {"eps_exact", "eps_rdp_mironov", "eps_rdp_cks", "eps_bound5_measured_gap_cks"})
        BOOST_TEST(ea[c][i] == eb[c][i], boost::test_tools::tolerance(1e-12));
      for (const char* m : {"eps_exact", "eps_rdp_mironov", "eps_rdp_cks"}) {
        const std::string pq = std::string(m) + "_pq", qp = std::string(m) + "_qp";
        BOOST_TEST(ea[pq][i] == eb[qp][i], boost::test_tools::tolerance(1e-12));
        BOOST_TEST(ea[qp][i] == eb[pq][i], boost::test_tools::tolerance(1e-12));
        BOOST_TEST(ea[m][i] == std::max(ea[pq][i], ea[qp][i]));
      }
      if (ea["step"][i] == 0) continue;
      asymmetricRdp |= std::fabs(ea["eps_rdp_cks_pq"][i] - ea["eps_rdp_cks_qp"][i]) > 0.1 * ea["eps_rdp_cks"][i];
      asymmetricExact |= std::fabs(ea["eps_exact_pq"][i] - ea["eps_exact_qp"][i]) > 0.1 * ea["eps_exact"][i];
      beyondTen |= ea["eps_exact"][i] > 10.0 && std::isfinite(ea["eps_exact"][i]) && ea["eps_exact_status"][i] == 0;
    }
  }
  BOOST_TEST(asymmetricRdp);
  BOOST_TEST(asymmetricExact);
  BOOST_TEST(beyondTen);
}
