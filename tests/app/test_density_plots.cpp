// The density plots of a run (densities.png, docs/output.md; app/plots): a 1-D, a 2-D and a 3-D Langevin run with
// output.fields = true draw them; each must be a PNG that is not blank. "Not blank" is judged from the pixels by
// matplotlib's PNG reader: more than 1% of the pixels coloured (the curves or the viridis images; axes and text are
// grey) and more than 16 distinct colours. A run with output.fields = false has no fields and draws no densities.png.
#define BOOST_TEST_MODULE app_density_plots
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ProcessSupport.hpp"

namespace fs = std::filesystem;
using fpdp::app::test::shellQuote;
using fpdp::app::test::TemporaryDirectory;
using fpdp::app::test::readText;

namespace {

int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// An OU case of dimension d, small and fast, with fields and plots.
std::string ouCase(int d, bool fields) {
  auto vec = [d](const char* v) {
    std::string s = "[";
    for (int a = 0; a < d; ++a) s += std::string(a ? ", " : "") + v;
    return s + "]";
  };
  std::ostringstream s;
  s << "[case]\nname = \"ou-" << d << "d\"\n[mesh]\nlower = " << vec("-5.0") << "\nupper = " << vec("5.0")
    << "\ncells = " << vec(d == 3 ? "16" : "40") << "\n[loss]\ntype = \"quadratic\"\nlambda = 1.0\n"
    << "[data]\nrecords = [" << vec("0.3") << "]\n[neighbour]\nindex = 0\nrecord = " << vec("0.0") << "\n"
    << "[noise]\nsigma = 0.7\n[initial]\nmean = " << vec("0.0") << "\ncovariance = 0.5\n"
    << "[time]\nt_end = 0.5\ndt = 0.05\n[output]\nevery = 2\nplots = true\nfields = " << (fields ? "true" : "false")
    << "\nvtk = false\n[divergence]\norders = [2]\nprivacy_loss_bins = 0\n";
  return s.str();
}

/// Per PNG: the coloured-pixel share and the number of distinct colours (matplotlib's reader; one Python start for
/// all files). Missing entries mean the file could not be read.
std::vector<std::pair<double, long>> pixelFigures(const std::vector<fs::path>& pngs, const fs::path& scratch) {
  const fs::path out = scratch / "pixels.txt";
  const std::string script =
      "import sys, numpy as np, matplotlib.image as m\n"
      "for f in sys.argv[1:]:\n"
      "    a = m.imread(f)[..., :3]\n"
      "    coloured = (a.max(axis=2) - a.min(axis=2)) > 0.1\n"
      "    print(coloured.mean(), len(np.unique(a.reshape(-1, 3), axis=0)))\n";
  std::string command = "/usr/bin/python3 -c " + shellQuote(script);
  for (const auto& png : pngs) command += " " + shellQuote(png.string());
  shell(command + " > " + shellQuote(out.string()) + " 2>&1");
  std::istringstream in(readText(out));
  std::vector<std::pair<double, long>> figures;
  double share;
  long colours;
  while (in >> share >> colours) figures.emplace_back(share, colours);
  return figures;
}

}  // namespace

BOOST_AUTO_TEST_CASE(densities_png_in_1d_2d_3d) {
  TemporaryDirectory tmp("fpdp-density-plots");
  std::vector<fs::path> pngs;
  for (int d = 1; d <= 3; ++d) {
    const fs::path caseFile = tmp.path() / ("ou-" + std::to_string(d) + "d.toml");
    std::ofstream(caseFile) << ouCase(d, d != 1);
    const fs::path out = tmp.path() / ("out-" + std::to_string(d));
    const int status = shell(shellQuote(FPDP_EXECUTABLE) + " run " + shellQuote(caseFile.string()) + " --output " +
                             shellQuote(out.string()) + " --quiet > " + shellQuote(out.string() + ".log") + " 2>&1");
    BOOST_TEST_REQUIRE(status == 0, readText(out.string() + ".log"));
    BOOST_TEST(fs::exists(out / "divergences.png"));
    if (d == 1) {
      // Without fields (output.fields = false) there is nothing to draw: no densities.png.
      BOOST_TEST(!fs::exists(out / "densities.png"));
      std::ofstream(caseFile) << ouCase(d, true);
      BOOST_TEST_REQUIRE(shell(shellQuote(FPDP_EXECUTABLE) + " run " + shellQuote(caseFile.string()) + " --output " +
                               shellQuote(out.string()) + " --quiet > /dev/null 2>&1") == 0);
    }
    const fs::path png = out / "densities.png";
    BOOST_TEST_REQUIRE(fs::exists(png), readText(out.string() + ".log"));
    BOOST_TEST(readText(png).substr(0, 8) == std::string("\x89PNG\r\n\x1a\n", 8));
    pngs.push_back(png);
  }
  const auto figures = pixelFigures(pngs, tmp.path());
  BOOST_TEST_REQUIRE(figures.size() == pngs.size(), readText(tmp.path() / "pixels.txt"));
  for (std::size_t i = 0; i < pngs.size(); ++i) {
    BOOST_TEST(figures[i].first > 0.01, pngs[i] << ": coloured share " << figures[i].first);
    BOOST_TEST(figures[i].second > 16, pngs[i] << ": distinct colours " << figures[i].second);
  }
}
