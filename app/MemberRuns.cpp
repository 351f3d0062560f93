#include "app/MemberRuns.hpp"

#include <sched.h>

#include <algorithm>
#include <optional>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <thread>

#include "app/CaseReader.hpp"
#include "app/ChildProcesses.hpp"
#include "app/CommandLine.hpp"
#include "app/run/OutputDirectory.hpp"
#include "io/CsvReader.hpp"
#include "io/NumberText.hpp"

#ifndef FPDP_SWEEP_PLOT_SCRIPT
#error "FPDP_SWEEP_PLOT_SCRIPT (the path of scripts/plot-sweep) must be defined by the build"
#endif

namespace fpdp::app {

namespace fs = std::filesystem;

Member memberCase(const CaseSource& source, std::string name, std::vector<CaseOverride> overrides,
                  const std::string& label, bool lean) {
  std::vector<CaseOverride> all = overrides;
  all.push_back({"output.plots", "false"});  // the study draws its own plot; a member's would only cost time
  if (lean) {
    all.push_back({"output.fields", "false"});
    all.push_back({"output.vtk", "false"});
  }
  Member m;
  m.name = std::move(name);
  m.overrides = std::move(overrides);
  try {
    m.caseText = overriddenCaseText(source, all);
    m.resolved = readCaseString(m.caseText, source.path);
  } catch (const InputError& e) {
    throw InputError(label + ": " + e.what(), e.keyPath, e.value, e.allowed);
  }
  return m;
}

std::string overrideSlug(const CaseOverride& o) {
  std::string slug = o.key.substr(o.key.find('.') + 1) + "-";
  for (char ch : o.literal) {
    const bool plain = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-';
    if (plain) slug += ch;
    else if (!slug.empty() && slug.back() != '_' && slug.back() != '-' && ch != '"') slug += '_';
  }
  while (!slug.empty() && slug.back() == '_') slug.pop_back();
  return slug.substr(0, 40);
}

fs::path memberRunDirectory(const fs::path& work, const Member& m) { return work / "members" / m.name / "output"; }

namespace {
MemberRunner& memberRunner() {
  static MemberRunner runner;
  return runner;
}
}  // namespace

void setMemberRunner(MemberRunner runner) { memberRunner() = std::move(runner); }

std::vector<MemberOutcome> runMembers(const std::string& executable, const fs::path& work,
                                      const std::vector<Member>& members, int jobs, bool quiet) {
  std::vector<ChildJob> childJobs;
  for (const Member& m : members) {
    const fs::path dir = work / "members" / m.name;
    fs::create_directories(dir);
    std::ofstream(dir / "case.toml") << m.caseText;
    childJobs.push_back({{"run", (dir / "case.toml").string(), "--output", memberRunDirectory(work, m).string(),
                          "--quiet"},
                         dir / "stdout.log",
                         dir / "stderr.log"});
  }
  std::vector<MemberOutcome> outcomes(members.size());
  std::size_t done = 0;
  const auto finished = [&](std::size_t i, int status) {
    MemberOutcome& o = outcomes[i];
    o.exitStatus = status;
    if (status != 0) o.failure = lastLines(childJobs[i].stderrFile, 3);
    ++done;
    if (!quiet) {
      std::printf("  [%zu/%zu] %s: %s\n", done, members.size(), members[i].name.c_str(),
                  status == 0 ? "done" : ("FAILED (exit status " + std::to_string(status) + "): " + o.failure).c_str());
      std::fflush(stdout);
    }
  };
  if (memberRunner()) {
    const auto statuses = memberRunner()(childJobs);
    for (std::size_t i = 0; i < statuses.size(); ++i) finished(i, statuses[i]);
  } else {
    runChildren(executable, childJobs, jobs, finished);
  }
  return outcomes;
}

namespace {

/// A CSV file of a run with its columns by name.
struct CsvFile {
  io::CsvText text;
  std::map<std::string, std::size_t> index;
  explicit CsvFile(const fs::path& file) : text(io::readCsv(file.string())) {
    for (std::size_t c = 0; c < text.columns.size(); ++c) index[text.columns[c]] = c;
  }
  bool has(const std::string& column) const { return index.count(column) > 0; }
  const std::string& cell(std::size_t row, const std::string& column) const {
    const auto it = index.find(column);
    if (it == index.end()) throw std::runtime_error("the run's table has no column " + column);
    return text.rows.at(row).at(it->second);
  }
  double number(std::size_t row, const std::string& column) const {
    double v = NAN;
    io::parseCsvNumber(cell(row, column), v);
    return v;
  }
  /// The last row whose step is the largest step.
  std::size_t lastRow() const {
    if (text.rows.empty()) throw std::runtime_error("a table of the run has no rows");
    return text.rows.size() - 1;
  }
};

/// accuracy.csv's label of eps_exact at delta d (the delta as the run spelt it), found by value.
std::string accuracyEpsColumn(const CsvFile& accuracy, double delta) {
  const std::string prefix = "eps_exact_delta_", suffix = "_certified";
  for (const std::string& column : accuracy.text.columns) {
    if (column.rfind(prefix, 0) != 0 || column.size() <= prefix.size() + suffix.size() ||
        column.compare(column.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    double d = NAN;
    const std::string label = column.substr(prefix.size(), column.size() - prefix.size() - suffix.size());
    if (io::parseCsvNumber(label, d) && d == delta) return prefix + label;
  }
  throw std::runtime_error("accuracy.csv has no eps_exact at delta " + io::shortestText(delta));
}

}  // namespace

std::vector<std::pair<std::string, std::string>> lastStepCells(const fs::path& runDir, const Case& c) {
  const CsvFile epsilon(runDir / "epsilon.csv"), accuracy(runDir / "accuracy.csv"),
      divergence(runDir / "divergence.csv"), bounds(runDir / "bounds.csv");
  std::vector<std::pair<std::string, std::string>> cells;
  const std::size_t last = divergence.lastRow(), accLast = accuracy.lastRow();
  const std::string step = divergence.cell(last, "step");
  cells.emplace_back("step", step);
  cells.emplace_back("t", divergence.cell(last, "t"));
  std::optional<std::size_t> atDelta;
  for (std::size_t r = 0; r < epsilon.text.rows.size(); ++r) {
    if (epsilon.cell(r, "step") != step) continue;
    const double delta = epsilon.number(r, "delta");
    const std::string label = io::shortestText(delta), acc = accuracyEpsColumn(accuracy, delta);
    cells.emplace_back("eps_exact_delta_" + label, epsilon.cell(r, "eps_exact"));
    cells.emplace_back("eps_exact_status_delta_" + label, epsilon.cell(r, "eps_exact_status"));
    cells.emplace_back("eps_exact_certified_delta_" + label, accuracy.cell(accLast, acc + "_certified"));
    cells.emplace_back("eps_exact_conservative_delta_" + label, accuracy.cell(accLast, acc + "_conservative"));
    if (delta == c.privacy.delta) atDelta = r;
  }
  if (!atDelta) throw std::runtime_error("epsilon.csv has no row at the last step and privacy.delta");
  cells.emplace_back("delta", epsilon.cell(*atDelta, "delta"));
  for (std::size_t col = 0; col < epsilon.text.columns.size(); ++col) {
    const std::string& name = epsilon.text.columns[col];
    if (name != "step" && name != "t" && name != "delta") cells.emplace_back(name, epsilon.text.rows[*atDelta][col]);
  }
  for (const std::string& name : divergence.text.columns) {
    const bool value = name == "kl" || name == "tv" || name.rfind("renyi_", 0) == 0;
    if (!value && name.rfind("status_renyi_", 0) != 0) continue;
    cells.emplace_back(name, divergence.cell(last, name));
    if (value && accuracy.has(name + "_certified")) {
      cells.emplace_back(name + "_certified", accuracy.cell(accLast, name + "_certified"));
      cells.emplace_back(name + "_conservative", accuracy.cell(accLast, name + "_conservative"));
    }
  }
  for (const std::string& name : bounds.text.columns)
    if (name != "step" && name != "t") cells.emplace_back(name, bounds.cell(bounds.lastRow(), name));
  // R_alpha(q || p) of every order at the last step (renyi.csv: one row per step and order).
  const CsvFile renyi(runDir / "renyi.csv");
  for (const RenyiOrder& order : c.divergence.orders)
    for (std::size_t r = 0; r < renyi.text.rows.size(); ++r)
      if (renyi.cell(r, "step") == step && renyi.number(r, "alpha") == order.alpha) {
        cells.emplace_back("renyi_reverse_" + order.label, renyi.cell(r, "renyi_reverse"));
        cells.emplace_back("status_renyi_reverse_" + order.label, renyi.cell(r, "status_reverse"));
      }
  return cells;
}

StudyDirectory::StudyDirectory(const std::string& finalDir, const CaseSource& source)
    : final_(normaliseOutputDirectory(finalDir)), work_(final_ + ".partial") {
  checkOutputDirectory(final_);
  removeStalePartial(work_, final_);
  fs::create_directories(work_ / "members");
  writeOwnerMark(work_);
  std::ofstream(work_ / "case.toml") << source.text;
}

StudyDirectory::~StudyDirectory() {
  std::error_code ec;
  if (!published_ && hasOwnerMark(work_)) fs::remove_all(work_, ec);
}

void StudyDirectory::publish() {
  putInPlace(work_.string(), final_);
  published_ = true;
}

int defaultJobs() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

StudyOptions parseStudyCommandLine(
    int argc, const char* const* argv, const std::string& command, const std::string& ownAllowed,
    const std::function<bool(const std::string& option, const std::function<std::string()>& value)>& own) {
  StudyOptions o;
  for (int i = 2; i < argc; ++i) {
    const std::string t = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(t + " needs a value");
      return argv[++i];
    };
    if (t == "--help" || t == "-h") {
      o.help = true;
      return o;
    }
    if (own(t, value)) continue;
    if (t == "--output") o.output = value();
    else if (t == "--jobs") o.jobs = static_cast<int>(integerOption(t, value(), 1, 1024));
    else if (t == "--quiet") o.quiet = true;
    else if (t.rfind("-", 0) == 0)
      throw UsageError("unknown option '" + t + "' of 'fpdp " + command + "'; allowed: " + ownAllowed +
                       ", --output DIR, --jobs N, --quiet");
    else if (o.casePath.empty()) o.casePath = t;
    else throw UsageError("'fpdp " + command + "' takes one case file, got '" + o.casePath + "' and '" + t + "'");
  }
  if (o.casePath.empty())
    throw UsageError("'fpdp " + command + "' needs a case file: fpdp " + command + " CASE.toml ...");
  if (o.output && o.output->empty()) throw UsageError("--output needs a non-empty directory name");
  return o;
}

std::string plotStudy(const fs::path& dir, const std::string& kind) {
  return runPlotScript(FPDP_SWEEP_PLOT_SCRIPT, {kind, dir.string()}, dir / (kind + "-plot.log"));
}

}  // namespace fpdp::app
