#include "app/commands/NoiseStudy.hpp"

#include <petscsys.h>
#include <toml++/toml.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "app/case/CaseReader.hpp"
#include "io/CsvTable.hpp"

namespace fs = std::filesystem;

namespace fpdp::app {

namespace {

/// The last row of a CSV file as column -> value.
std::map<std::string, double> lastRow(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("noise study: cannot read " + path);
  std::string header, line, last;
  std::getline(in, header);
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  std::map<std::string, double> row;
  std::istringstream h(header), v(last);
  for (std::string name, value; std::getline(h, name, ',') && std::getline(v, value, ',');)
    row[name] = std::strtod(value.c_str(), nullptr);
  return row;
}

/// Trapezoid integrals over t of the columns gap_sq_* of kl_rate.csv.
std::array<double, 3> integratedGapSquared(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("noise study: cannot read " + path);
  std::string header;
  std::getline(in, header);
  std::vector<std::string> names;
  std::istringstream h(header);
  for (std::string name; std::getline(h, name, ',');) names.push_back(name);
  auto column = [&](const std::string& n) {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == n) return i;
    throw std::runtime_error("noise study: no column " + n + " in " + path);
  };
  const std::size_t ct = column("t"), cx = column("gap_sq_x"), cy = column("gap_sq_y"), cz = column("gap_sq_z");
  std::array<double, 3> integral{0, 0, 0}, prev{0, 0, 0};
  double prevT = 0;
  bool first = true;
  for (std::string line; std::getline(in, line);) {
    std::vector<double> v;
    std::istringstream ls(line);
    for (std::string cell; std::getline(ls, cell, ',');) v.push_back(std::strtod(cell.c_str(), nullptr));
    const std::array<double, 3> g{v[cx], v[cy], v[cz]};
    if (!first)
      for (int a = 0; a < 3; ++a) integral[a] += 0.5 * (g[a] + prev[a]) * (v[ct] - prevT);
    prev = g;
    prevT = v[ct];
    first = false;
  }
  return integral;
}

/// The case with its noise replaced by the diagonal covariance diag(s), written through the resolved TOML and read
/// back by the case reader (so the new case is validated like any other).
Case withDiagonalNoise(const Case& c, const std::array<double, 3>& s, const std::string& name) {
  toml::table root = toml::parse(c.resolvedToml);
  toml::array rows;
  for (int i = 0; i < c.mesh.dim; ++i) {
    toml::array row;
    for (int j = 0; j < c.mesh.dim; ++j) row.push_back(i == j ? s[i] : 0.0);
    rows.push_back(std::move(row));
  }
  root.insert_or_assign("noise", toml::table{{"covariance", std::move(rows)}});
  root["case"].as_table()->insert_or_assign("name", name);
  std::ostringstream out;
  out << root << '\n';
  return readCaseString(out.str(), c.sourcePath);
}

}  // namespace

int runNoiseStudy(const Case& c, const RunOptions& options) {
  if (c.dynamics != "langevin")
    throw InputError(c.sourcePath.string() + ": case.dynamics = \"" + c.dynamics +
                         "\": the noise-shape study needs Langevin dynamics; allowed: langevin",
                     "case.dynamics", c.dynamics, "langevin");
  if (c.noise.covariancePrime)
    throw InputError(c.sourcePath.string() + ": noise.covariance_prime is given: the study compares Sigma = Sigma' "
                                             "noises; allowed: no covariance_prime",
                     "noise.covariance_prime", "", "no covariance_prime");
  int rank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  const int d = c.mesh.dim;
  const double budget = c.noise.sigmaFor(false, d).trace();
  checkOutputDirectory(options.outputDirectory);
  if (rank == 0) {  // fpdp's own folder of two runs: a later study may replace it (app/run/OutputDirectory)
    fs::create_directories(options.outputDirectory);
    writeOwnerMark(options.outputDirectory);
  }

  std::array<double, 3> iso{0, 0, 0};
  for (int a = 0; a < d; ++a) iso[a] = budget / d;
  RunOptions run = options;
  run.outputDirectory = options.outputDirectory + "/isotropic";
  const Case isoCase = withDiagonalNoise(c, iso, c.name + "-isotropic");
  if (int status = runCase(isoCase, run)) return status;
  const auto A = integratedGapSquared(run.outputDirectory + "/kl_rate.csv");

  double sumSqrt = 0;
  for (int a = 0; a < d; ++a) sumSqrt += std::sqrt(A[a]);
  if (!(sumSqrt > 0)) throw std::runtime_error("noise study: D and D' have the same drift (b = b'): nothing to shape");
  std::array<double, 3> opt{0, 0, 0};
  for (int a = 0; a < d; ++a) opt[a] = std::max(budget * std::sqrt(A[a]) / sumSqrt, 1e-6 * budget);
  run.outputDirectory = options.outputDirectory + "/anisotropic";
  const Case anisoCase = withDiagonalNoise(c, opt, c.name + "-anisotropic");
  if (int status = runCase(anisoCase, run)) return status;
  const auto Aaniso = integratedGapSquared(run.outputDirectory + "/kl_rate.csv");

  if (rank == 0) {
    const auto isoRow = lastRow(options.outputDirectory + "/isotropic/divergence.csv");
    const auto anisoRow = lastRow(options.outputDirectory + "/anisotropic/divergence.csv");
    auto bound = [&](const std::array<double, 3>& s, const std::array<double, 3>& a) {
      double b = 0;
      for (int k = 0; k < d; ++k) b += 0.25 * a[k] / s[k];
      return b;
    };
    std::vector<std::string> cols{"noise", "sigma_x2", "sigma_y2", "sigma_z2", "kl_bound", "kl", "tv"};
    for (const auto& o : c.divergence.orders) cols.push_back("renyi_" + o.label);
    io::CsvTable table(options.outputDirectory + "/noise-study.csv", cols);
    std::ostringstream s;
    s << "\nnoise-shape study of '" << c.name << "' (BKPP §4, §6.1): budget tr(Sigma) = " << budget
      << ", Sigma = Sigma', t = " << c.time.t_end << "\n\n";
    char b[256];
    std::snprintf(b, sizeof b, "  %-12s %-30s %-14s %-14s %-14s\n", "noise", "diag(Sigma)", "KL bound", "KL (true)",
                  "TV (true)");
    s << b;
    for (int which = 0; which < 2; ++which) {
      const auto& sig = which ? opt : iso;
      const auto& row = which ? anisoRow : isoRow;
      const double bd = which ? bound(opt, Aaniso) : bound(iso, A);
      std::ostringstream diag;
      for (int a = 0; a < d; ++a) diag << (a ? ", " : "") << sig[a];
      std::snprintf(b, sizeof b, "  %-12s %-30s %-14.6e %-14.6e %-14.6e\n", which ? "anisotropic" : "isotropic",
                    diag.str().c_str(), bd, row.at("kl"), row.at("tv"));
      s << b;
      std::vector<double> out{static_cast<double>(which), sig[0], sig[1], sig[2], bd, row.at("kl"), row.at("tv")};
      for (const auto& o : c.divergence.orders) out.push_back(row.at("renyi_" + o.label));
      table.addRow(out);
    }
    const double gain = isoRow.at("kl") / anisoRow.at("kl");
    s << "\n  the bound-optimal anisotropic noise " << (gain > 1 ? "WINS" : "does NOT win")
      << " on the true KL: KL(isotropic) / KL(anisotropic) = " << gain << "\n";
    s << "  (the bound predicted a ratio of " << bound(iso, A) / bound(opt, Aaniso) << ")\n";
    s << "  output: " << options.outputDirectory << "/{isotropic,anisotropic}/, noise-study.csv\n";
    std::fputs(s.str().c_str(), stdout);
    writeManifest(options.outputDirectory);  // what a later study may replace (app/run/OutputDirectory)
  }
  return 0;
}

}  // namespace fpdp::app
