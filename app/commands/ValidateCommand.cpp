#include "app/commands/ValidateCommand.hpp"

#include <algorithm>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "app/case/CaseReader.hpp"
#include "app/platform/ChildProcesses.hpp"
#include "app/platform/CommandLine.hpp"
#include "app/run/ModelBuilding.hpp"
#include "app/run/NumberFormat.hpp"
#include "app/observers/PrivacyOutput.hpp"
#include "app/plots/RunFigures.hpp"
#include "app/commands/ValidationSuite.hpp"
#include "io/CsvReader.hpp"
#include "io/CsvTable.hpp"
#include "models/LossConstants.hpp"
#include "validation/ValidationChecks.hpp"

namespace fpdp::app {

namespace fs = std::filesystem;
using validation::CheckResult;
using validation::Status;
using validation::Table;

namespace {

constexpr const char* kReportMarker = ".fpdp-validation-report";

std::string fmt(double v, const char* format = "%.3e") { return formatNumber(v, format, "-"); }

Table readTable(const fs::path& file) {
  auto csv = io::readCsv(file.string());
  std::vector<std::vector<double>> numbers;
  for (const auto& row : csv.rows) {
    std::vector<double> values(row.size());
    for (std::size_t c = 0; c < row.size(); ++c)
      if (!io::parseCsvNumber(row[c], values[c])) values[c] = NAN;  // a text cell
    numbers.push_back(std::move(values));
  }
  return Table(std::move(csv.columns), std::move(csv.rows), std::move(numbers));
}

std::optional<Table> readTableIfPresent(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  return readTable(file);
}

struct Row {
  std::string caseName;
  CheckResult result;
};

/// The bounds' inputs of a case as `fpdp run` computes them (app/commands/RunCase.cpp, "Constants of a replace-one pair"):
/// lambda, beta, S_g/n from models::computeConstants over the box (or the case file), the measured gap over the cell
/// centres. Used only to evaluate the formulas of bounds whose assumptions fail (beyond_assumptions cases).
models::BoundProblem caseBoundProblem(const Case& c) {
  const auto losses = buildEmpiricalLosses(c);
  const meshes::BoxMesh box = buildBox(c.mesh);
  const models::Dataset& D = c.data.records;
  const bool replacement = c.neighbour.kind == models::NeighbourKind::Replace;
  const models::LossConstants constants = caseLossConstants(c, losses, box);
  const std::optional<double> Sg = c.loss.sensitivity ? c.loss.sensitivity : constants.sensitivity;
  double gap = 0.0;
  for (int k = 0; k < box.cells(2); ++k)
    for (int j = 0; j < box.cells(1); ++j)
      for (int i = 0; i < box.cells(0); ++i) {
        const auto x3 = box.centre(i, j, k);
        models::Vector x(c.mesh.dim);
        for (int a = 0; a < c.mesh.dim; ++a) x[a] = x3[a];
        gap = std::max(gap, (losses.lossD->gradient(x) - losses.lossDPrime->gradient(x)).norm());
      }
  return boundProblem(c, constants.strongConvexity, constants.smoothness,
                      Sg && replacement ? std::optional<double>(*Sg / D.size()) : std::nullopt, gap);
}

/// formula_bounds.csv: the truth and every bound formula of items 1-7, evaluated with or without its assumptions,
/// for the plot of a case beyond the assumptions (scripts/plot-validation).
void writeFormulaBounds(const fs::path& file, const Table& divergence, const models::BoundProblem& problem) {
  const auto orders = validation::renyiOrders(divergence);
  std::vector<std::string> columns{"step", "t"};
  for (const auto& o : orders) columns.push_back("renyi_" + o);
  for (int item = 1; item <= 7; ++item)
    for (const auto& o : orders) columns.push_back("bound" + std::to_string(item) + "_formula_renyi_" + o);
  io::CsvTable csv(file.string(), columns);
  for (std::size_t r = 0; r < divergence.rows(); ++r) {
    const double step = divergence.number(r, "step"), t = divergence.number(r, "t");
    std::vector<double> row{step, t};
    for (const auto& o : orders) row.push_back(divergence.number(r, "renyi_" + o));
    for (int item = 1; item <= 7; ++item)
      for (const auto& o : orders)
        row.push_back(validation::boundFormulaIgnoringAssumptions(problem, item, std::stod(o),
                                                                   static_cast<long>(step), t));
    csv.addRow(row);
  }
}

/// Draws formula_bounds.png with scripts/plot-validation; "" on success, else the warning.
std::string plotFormulaBounds(const fs::path& directory) {
  return runPlotScript(FPDP_VALIDATION_PLOT_SCRIPT, {directory.string()}, directory / "formula-bounds-plot.log");
}

struct CaseOutcome {
  std::string name, description, caseFile;
  double seconds = 0.0;
  bool beyond = false;
  std::vector<std::string> plots;     // relative to the report directory
  std::vector<std::string> warnings;
  std::vector<std::string> referenceDiffs;  // --update-references: old vs new per column
};

/// --update-references: the per-column changes between the old reference (if any) and the new run, as text.
std::string describeReferenceChange(const fs::path& oldFile, const Table& fresh) {
  std::error_code ec;
  if (!fs::exists(oldFile, ec)) return "  new reference " + oldFile.string() + "\n";
  std::ostringstream s;
  try {
    const Table old = readTable(oldFile);
    const auto changes = validation::columnChanges(old, fresh);
    s << "  " << oldFile.string() << ":\n";
    s << "    column                          largest rel. change   row   old                     new\n";
    for (const auto& c : changes) {
      char line[256];
      std::snprintf(line, sizeof line, "    %-32s %-21s %-5zu %-23s %s\n", c.column.c_str(),
                    fmt(c.largestRelativeChange).c_str(), c.row + 1, fmt(c.oldValue, "%.15e").c_str(),
                    fmt(c.newValue, "%.15e").c_str());
      s << line;
    }
  } catch (const std::exception& e) {
    s << "  " << oldFile.string() << ": not comparable with the new run (" << e.what() << "); replaced\n";
  }
  return s.str();
}

/// Every check of one validation case on its run's files (validation/ValidationChecks); with --update-references the
/// references are rewritten instead of compared, and their changes appended to `referenceReport`.
std::vector<CheckResult> checkRun(const ValidationCase& vc, const fs::path& runDir, const fs::path& log,
                                  const ValidateOptions& options, std::string& referenceReport) {
  std::vector<CheckResult> rows;
  auto add = [&](CheckResult r) { rows.push_back(std::move(r)); };
  auto addAll = [&](std::vector<CheckResult> rs) {
    for (auto& r : rs) rows.push_back(std::move(r));
  };
  {
    // The run's own reliability warnings (box truncation, walls, known defects: docs/output.md) are a failure
    // of a validation case: its numbers would not mean what the checks assume. Warnings the checks file lists as
    // expected (a known limitation of the case's route) are reported as INFO rows instead.
    std::ifstream in(log);
    long warnings = 0;
    std::string first;
    for (std::string line; std::getline(in, line);) {
      const auto at = line.find("WARNING");
      if (at == std::string::npos) continue;
      const std::string text = line.substr(at);
      const auto& expected = vc.checks.expectedWarnings;
      if (std::any_of(expected.begin(), expected.end(), [&](const std::string& w) { return text.find(w) != std::string::npos; })) {
        add(validation::info("expected run warning", text));
        continue;
      }
      if (++warnings == 1) first = text;
    }
    add(validation::judged("run warnings", static_cast<double>(warnings), "<=", 0.0,
                           warnings ? "first: " + first : "no unexpected WARNING in the run's summary"));
  }
  try {
    const Table divergence = readTable(runDir / "divergence.csv");
    const Table bounds = readTable(runDir / "bounds.csv");
    const auto& ch = vc.checks;
    if (ch.massTolerance) add(validation::massConservation(divergence, *ch.massTolerance));
    if (ch.boundsTolerance) addAll(validation::boundsAboveTruth(divergence, bounds, *ch.boundsTolerance));
    if (ch.lowerBound)
      for (const auto& label : ch.lowerBound->bounds)
        add(validation::lowerBoundMatch(divergence, bounds, label, ch.lowerBound->fromStep,
                                        ch.lowerBound->tolerance));
    if (ch.exact) {
      if (const auto exact = readTableIfPresent(runDir / "exact.csv"))
        addAll(validation::exactErrors(*exact, ch.exact->tolerances, ch.exact->fromStep));
      else
        add(validation::judged("exact", NAN, "<=", 0, "the run wrote no exact.csv (no closed form for this case)"));
    }
    if (ch.lemma4Tolerance) addAll(validation::lemma4(readTable(runDir / "tracing.csv"), *ch.lemma4Tolerance));
    if (ch.monteCarlo) {
      const auto agreement = readTableIfPresent(runDir / "sample_agreement.csv");
      const auto sampleDivergence = readTableIfPresent(runDir / "sample_divergence.csv");
      if (agreement && sampleDivergence) addAll(validation::monteCarlo(*agreement, *sampleDivergence));
      else add(validation::judged("Monte Carlo", NAN, "<=", 0, "fpdp sample wrote no agreement files"));
    }
    if (ch.renyiRate)
      addAll(validation::renyiRate(readTableIfPresent(runDir / "renyi_rate.csv"), ch.renyiRate->rateTolerance,
                                   ch.renyiRate->lsiTolerance));
    if (ch.beyondAssumptions) {
      for (const auto& o : validation::renyiOrders(divergence)) add(validation::convergenceInK(divergence, "renyi_" + o));
      add(validation::convergenceInK(divergence, "kl"));
      const models::BoundProblem problem = caseBoundProblem(vc.runCase);
      addAll(validation::unapplicableBoundsVersusTruth(
          divergence, readTable(runDir / "bound_applicability.csv"),
          [&](int item, double alpha, long step, double t) {
            return validation::boundFormulaIgnoringAssumptions(problem, item, alpha, step, t);
          },
          ch.boundsTolerance.value_or(0.0)));
      writeFormulaBounds(runDir / "formula_bounds.csv", divergence, problem);
    }
    if (ch.exchanged) {
      const fs::path otherDir = runDir.parent_path() / ch.exchanged->of;  // the same report's runs/
      const auto eps = readTableIfPresent(otherDir / "epsilon.csv"), renyi = readTableIfPresent(otherDir / "renyi.csv"),
                 div = readTableIfPresent(otherDir / "divergence.csv");
      if (eps && renyi && div) {
        const Table ownEps = readTable(runDir / "epsilon.csv"), ownRenyi = readTable(runDir / "renyi.csv");
        addAll(validation::exchangedPair({*eps, *renyi, *div}, {ownEps, ownRenyi, divergence}, ch.exchanged->tolerance));
      } else {
        add(validation::judged("exchanged D, D'", NAN, "<=", ch.exchanged->tolerance,
                               "case " + ch.exchanged->of + " has not run in this report (select it too; it must sort "
                               "before " + vc.name + ")"));
      }
    }
    if (ch.regression) {
      for (const auto& file : ch.regression->files) {
        const fs::path refFile = options.referencesDirectory / vc.name / file;
        const auto current = readTableIfPresent(runDir / file);
        if (!current) {
          add(validation::judged("regression: " + file, NAN, "<=", ch.regression->tolerance,
                                 "the run wrote no " + file));
          continue;
        }
        if (options.updateReferences) {
          referenceReport += describeReferenceChange(refFile, *current);
          fs::create_directories(refFile.parent_path());
          fs::copy_file(runDir / file, refFile, fs::copy_options::overwrite_existing);
          add(validation::info("regression: " + file, "reference rewritten (--update-references): " +
                                                          refFile.string()));
          continue;
        }
        const auto reference = readTableIfPresent(refFile);
        if (!reference)
          add(validation::judged("regression: " + file, NAN, "<=", ch.regression->tolerance,
                                 "no reference " + refFile.string() +
                                     " (create it with fpdp validate --update-references)"));
        else
          add(validation::compareWithReference(file, *reference, *current, ch.regression->tolerance));
      }
    }
  } catch (const std::exception& e) {
    add(validation::judged("reading the run's output", NAN, "<=", 0, e.what()));
  }
  return rows;
}

void checkReportDirectory(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  if (!fs::is_directory(dir, ec))
    throw InputError("report directory '" + dir.string() + "' exists and is not a directory", "", "", "");
  if (fs::is_empty(dir, ec) || fs::exists(dir / kReportMarker, ec)) return;
  throw InputError("report directory '" + dir.string() +
                       "' exists and is not an earlier fpdp validation report; refusing to replace it",
                   "", "", "");
}

/// Prints the table, writes REPORT_DIR/results.csv and REPORT_DIR/report.md; returns the number of FAIL rows.
long writeReport(const fs::path& report, const ValidateOptions& options, std::size_t cases, const std::vector<Row>& rows,
                 const std::vector<CaseOutcome>& outcomes, const std::string& referenceReport, double seconds) {
  long failed = 0, passed = 0, skippedCount = 0;
  for (const auto& r : rows) {
    failed += r.result.status == Status::Fail;
    passed += r.result.status == Status::Pass;
    skippedCount += r.result.status == Status::Skipped;
  }
  std::size_t wCase = 4, wCheck = 5;
  for (const auto& r : rows) {
    wCase = std::max(wCase, r.caseName.size());
    wCheck = std::max(wCheck, r.result.check.size());
  }
  std::printf("\n%-*s  %-*s  %-11s  %-13s  %s\n", static_cast<int>(wCase), "case", static_cast<int>(wCheck), "check",
              "measured", "tolerance", "status");
  for (const auto& r : rows) {
    const auto& c = r.result;
    const std::string tol = std::isnan(c.tolerance) ? "-" : c.comparison + " " + fmt(c.tolerance, "%.2e");
    std::printf("%-*s  %-*s  %-11s  %-13s  %s\n", static_cast<int>(wCase), r.caseName.c_str(),
                static_cast<int>(wCheck), c.check.c_str(), fmt(c.measured).c_str(), tol.c_str(),
                validation::statusName(c.status));
    if (c.status != Status::Pass) std::printf("%*s  %s\n", static_cast<int>(wCase), "", c.detail.c_str());
  }
  std::printf("\n%ld PASS, %ld FAIL, %ld SKIPPED, %zu INFO in %.1f s; report: %s\n", passed, failed, skippedCount,
              rows.size() - passed - failed - skippedCount, seconds, (report / "report.md").c_str());
  if (!referenceReport.empty())
    std::printf("\nReferences rewritten in %s (old vs new):\n%s", options.referencesDirectory.c_str(),
                referenceReport.c_str());

  {
    std::vector<std::vector<std::string>> cells;
    for (const auto& r : rows)
      cells.push_back({r.caseName, r.result.check, fmt(r.result.measured, "%.17g"),
                       std::isnan(r.result.tolerance) ? "" : r.result.comparison + " " + fmt(r.result.tolerance, "%.17g"),
                       validation::statusName(r.result.status), r.result.detail});
    std::ofstream(report / "results.csv")
        << io::textCsv({"case", "check", "measured", "tolerance", "status", "detail"}, cells);
  }
  std::ofstream md(report / "report.md");
  auto escape = [](std::string s) {
    std::string o;
    for (char ch : s) o += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return o;
  };
  md << "# fpdp validation report\n\n"
     << (options.quick ? "Quick suite" : (options.cases.empty() ? "Full suite" : "Selected cases")) << ": "
     << cases << " case(s) from `" << options.casesDirectory.string() << "`, references `"
     << options.referencesDirectory.string() << "`. " << passed << " PASS, " << failed << " FAIL, " << skippedCount
     << " SKIPPED, " << rows.size() - passed - failed - skippedCount << " INFO; wall time " << fmt(seconds, "%.1f")
     << " s.\n\nChecks and tolerances: docs/validation.md. INFO rows are findings (cases beyond the papers' "
        "assumptions), not judged.\n\n";
  md << "| case | check | measured | tolerance | status | detail |\n|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const auto& c = r.result;
    md << "| " << r.caseName << " | " << escape(c.check) << " | " << fmt(c.measured) << " | "
       << (std::isnan(c.tolerance) ? "-" : escape(c.comparison) + " " + fmt(c.tolerance, "%.2e")) << " | **"
       << validation::statusName(c.status) << "** | " << escape(c.detail) << " |\n";
  }
  for (const auto& o : outcomes) {
    md << "\n## " << o.name << "\n\n" << o.description << "\n\nCase file `" << o.caseFile << "`, run in "
       << fmt(o.seconds, "%.1f") << " s; output `runs/" << o.name << "/`, log `runs/" << o.name << ".log`.\n";
    bool heading = false;
    for (const auto& r : rows) {
      if (r.caseName != o.name || r.result.status != Status::Info) continue;
      if (!heading)
        md << (o.beyond ? "\nWhat the numbers show (beyond the papers' assumptions):\n\n" : "\nFindings:\n\n");
      heading = true;
      md << "- " << r.result.check << ": " << r.result.detail << "\n";
    }
    for (const auto& w : o.warnings) md << "\nWARNING: " << w << "\n";
    for (const auto& p : o.plots) md << "\n![" << p << "](" << p << ")\n";
  }
  if (!referenceReport.empty()) md << "\n## References rewritten\n\n```\n" << referenceReport << "```\n";
  md.close();
  return failed;
}

}  // namespace

ValidateOptions parseValidateCommandLine(int argc, const char* const* argv) {
  ValidateOptions o;
  o.casesDirectory = fs::path(FPDP_SOURCE_TREE) / "validation" / "cases";
  o.referencesDirectory = fs::path(FPDP_SOURCE_TREE) / "validation" / "references";
  auto value = [&](int& i, const std::string& option) -> std::string {
    if (i + 1 >= argc) throw UsageError(option + " needs a value");
    const std::string v = argv[++i];
    if (v.empty()) throw UsageError(option + " needs a non-empty value");
    if (v[0] == '-') throw UsageError(option + " needs a value, not the option '" + v + "'");
    return v;
  };
  for (int i = 2; i < argc; ++i) {
    const std::string t = argv[i];
    if (t == "--quick") o.quick = true;
    else if (t == "--update-references") o.updateReferences = true;
    else if (t == "--no-plots") o.plots = false;
    else if (t == "--schema") o.schema = true;
    else if (t == "--help" || t == "-h") o.help = true;
    else if (t == "--cases") o.casesDirectory = value(i, t);
    else if (t == "--references") o.referencesDirectory = value(i, t);
    else if (t == "-o" || t == "--output") o.reportDirectory = value(i, t);
    else if (t.rfind("-", 0) == 0)
      throw UsageError("unknown option '" + t + "' of 'fpdp validate'; allowed: --quick, --update-references, "
                       "--no-plots, --cases DIR, --references DIR, -o/--output REPORT_DIR, --schema, --help");
    else o.cases.push_back(t);
  }
  return o;
}

int runValidation(const ValidateOptions& options, const std::string& executable) {
  if (options.help) {
    std::cout << helpText();
    return 0;
  }
  if (options.schema) {
    std::cout << validationChecksSchemaMarkdown();
    return 0;
  }
  // 1. Everything is read and validated before anything runs or is written.
  std::vector<ValidationCase> suite;
  try {
    suite = readValidationSuite(options.casesDirectory, options.cases, options.quick);
    checkReportDirectory(options.reportDirectory);
  } catch (const InputError& e) {
    std::fprintf(stderr, "fpdp: error: %s\n", e.what());
    return 2;
  }
  const fs::path report = options.reportDirectory;
  fs::remove_all(report);
  fs::create_directories(report / "runs");
  std::ofstream(report / kReportMarker) << "fpdp validate\n";

  const auto start = std::chrono::steady_clock::now();
  std::vector<Row> rows;
  std::vector<CaseOutcome> outcomes;
  std::string referenceReport;
  std::printf("fpdp validate: %zu case(s)%s from %s\n", suite.size(), options.quick ? " (quick suite)" : "",
              options.casesDirectory.c_str());
  for (const auto& vc : suite) {
    CaseOutcome out;
    out.name = vc.name;
    out.description = vc.checks.description;
    out.caseFile = vc.caseFile.string();
    out.beyond = vc.checks.beyondAssumptions;
    const fs::path runDir = report / "runs" / vc.name;
    const fs::path log = report / "runs" / (vc.name + ".log");
    auto add = [&](CheckResult r) { rows.push_back(Row{vc.name, std::move(r)}); };
    auto addAll = [&](std::vector<CheckResult> rs) {
      for (auto& r : rs) add(std::move(r));
    };
    const auto t0 = std::chrono::steady_clock::now();
    std::printf("  running %s ...", vc.name.c_str());
    std::fflush(stdout);
    const int status = runChild(executable, {"run", vc.caseFile.string(), "--output", runDir.string(), "--quiet"}, log);
    if (status != 0) {
      out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf(" FAILED (exit status %d)\n", status);
      add(validation::judged("run", status, "<=", 0, "fpdp run exit status " + std::to_string(status) + ": " +
                                                         lastLines(log, 3)));
      outcomes.push_back(out);
      continue;
    }
    if (vc.checks.monteCarlo) {
      const auto& mc = *vc.checks.monteCarlo;
      const int s = runChild(executable,
                             {"sample", vc.caseFile.string(), "--output", runDir.string(), "--quiet", "--particles",
                              std::to_string(mc.particles), "--seed", std::to_string(mc.seed), "--threads",
                              std::to_string(mc.threads)},
                             log);
      if (s != 0)
        add(validation::judged("Monte Carlo: fpdp sample", s, "<=", 0,
                               "fpdp sample exit status " + std::to_string(s) + ": " + lastLines(log, 3)));
    }
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(" %.1f s\n", out.seconds);
    addAll(checkRun(vc, runDir, log, options, referenceReport));
    if (options.plots) {
      if (const std::string w = plots::drawRunPlotsOrWarn(runDir.string()); !w.empty()) out.warnings.push_back(w);
      else
        for (const char* png : {"renyi_bounds.png", "epsilon_delta.png", "divergences.png", "step_contributions.png"})
          if (fs::exists(runDir / png)) out.plots.push_back("runs/" + vc.name + "/" + png);
      if (vc.checks.beyondAssumptions) {
        if (const std::string w = plotFormulaBounds(runDir); !w.empty()) out.warnings.push_back(w);
        else out.plots.push_back("runs/" + vc.name + "/formula_bounds.png");
      }
    }
    outcomes.push_back(out);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  // 2. The table (stdout), results.csv, report.md.
  const long failed = writeReport(report, options, suite.size(), rows, outcomes, referenceReport, seconds);
  return failed > 0 ? 1 : 0;
}

}  // namespace fpdp::app
