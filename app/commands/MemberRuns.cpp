#include "app/commands/MemberRuns.hpp"

#include <sched.h>

#include <algorithm>
#include <optional>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <thread>

#include "app/case/CaseReader.hpp"
#include "app/platform/ChildProcesses.hpp"
#include "app/platform/CommandLine.hpp"
#include "app/run/OutputDirectory.hpp"
#include "io/CsvReader.hpp"
#include "io/NumberText.hpp"
#include "io/OutputFile.hpp"
#include "models/InputFile.hpp"

#ifndef FPDP_SWEEP_PLOT_SCRIPT
#error "FPDP_SWEEP_PLOT_SCRIPT (the path of scripts/plot-sweep) must be defined by the build"
#endif

namespace fpdp::app {

namespace fs = std::filesystem;

Member memberCase(const CaseSource& source, std::string name, std::vector<CaseOverride> overrides,
                  const std::string& label, bool lean, std::string& caseText) {
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
    caseText = overriddenCaseText(source, all);
    const Case resolved = readCaseString(caseText, source.path);
    m.facts = {resolved.privacy.delta, resolved.divergence.orders, resolved.mesh.dim};
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
/// A member's run that finished in an earlier, interrupted study: its output directory was published (fpdp's mark
/// and its manifest, which a run writes only when it succeeds).
bool finishedEarlier(const fs::path& runDir) {
  std::error_code ec;
  return fs::is_directory(fs::symlink_status(runDir, ec)) && hasOwnerMark(runDir) &&
         fs::is_regular_file(fs::symlink_status(runDir / kManifest, ec));
}

MemberRunner& memberRunner() {
  static MemberRunner runner;
  return runner;
}
}  // namespace

void setMemberRunner(MemberRunner runner) { memberRunner() = std::move(runner); }

std::vector<MemberOutcome> runMembers(const std::string& executable, const fs::path& work,
                                      const std::function<std::optional<MadeMember>(std::size_t)>& make, int jobs,
                                      bool quiet, std::vector<Member>& members) {
  members.clear();
  std::vector<MemberOutcome> outcomes;
  std::vector<std::size_t> memberOfJob;
  std::vector<fs::path> stderrFiles;
  std::size_t done = 0;
  const auto report = [&](std::size_t m) {
    ++done;
    if (quiet) return;
    const MemberOutcome& o = outcomes[m];
    std::printf("  [%zu] %s: %s\n", done, members[m].name.c_str(),
                o.exitStatus == 0 ? "done" : ("FAILED (exit status " + std::to_string(o.exitStatus) + "): " + o.failure).c_str());
    std::fflush(stdout);
  };
  // Job i of the children is a member that runs; members finished earlier are passed over (and reported) here.
  const auto nextJob = [&](std::size_t) -> std::optional<ChildJob> {
    for (;;) {
      std::optional<MadeMember> made = make(members.size());
      if (!made) return std::nullopt;
      members.push_back(std::move(made->member));
      outcomes.emplace_back();
      const Member& m = members.back();
      const fs::path dir = work / "members" / m.name, runDir = memberRunDirectory(work, m);
      if (finishedEarlier(runDir)) {
        outcomes.back().exitStatus = 0;
        report(members.size() - 1);
        continue;
      }
      std::error_code ec;
      fs::remove_all(dir, ec);  // what an interrupted attempt left (fpdp's own: inside the study's DIR.partial)
      fs::create_directories(dir);
      io::writeWholeFile(dir / "case.toml", made->caseText);
      memberOfJob.push_back(members.size() - 1);
      stderrFiles.push_back(dir / "stderr.log");
      return ChildJob{{"run", (dir / "case.toml").string(), "--output", runDir.string(), "--quiet"},
                      dir / "stdout.log",
                      dir / "stderr.log",
                      {}};
    }
  };
  const auto finished = [&](std::size_t job, int status) {
    const std::size_t m = memberOfJob[job];
    outcomes[m].exitStatus = status;
    if (status != 0) outcomes[m].failure = lastLines(stderrFiles[job], 3);
    report(m);
  };
  if (memberRunner()) {
    // The installed runner (MPI groups) takes the whole batch at once: every member is made first.
    std::vector<ChildJob> childJobs;
    while (std::optional<ChildJob> job = nextJob(childJobs.size())) childJobs.push_back(std::move(*job));
    const std::vector<int> statuses = memberRunner()(childJobs);
    for (std::size_t job = 0; job < statuses.size(); ++job) finished(job, statuses[job]);
  } else {
    runChildrenAsMade(executable, nextJob, jobs, finished);
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

std::vector<std::pair<std::string, std::string>> lastStepCells(const fs::path& runDir, const MemberFacts& c) {
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
    if (delta == c.delta) atDelta = r;
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
  // R_alpha(q || p) of every order at the last step. Beyond three axes there is no renyi.csv (no I_alpha, no
  // derivative in alpha): the value is accuracy.csv's renyi_qp_<order>, its status not written there.
  if (c.dim > 3) {
    for (const RenyiOrder& order : c.orders)
      cells.emplace_back("renyi_reverse_" + order.label, accuracy.cell(accLast, "renyi_qp_" + order.label));
    return cells;
  }
  // renyi.csv: one row per step and order.
  const CsvFile renyi(runDir / "renyi.csv");
  for (const RenyiOrder& order : c.orders)
    for (std::size_t r = 0; r < renyi.text.rows.size(); ++r)
      if (renyi.cell(r, "step") == step && renyi.number(r, "alpha") == order.alpha) {
        cells.emplace_back("renyi_reverse_" + order.label, renyi.cell(r, "renyi_reverse"));
        cells.emplace_back("status_renyi_reverse_" + order.label, renyi.cell(r, "status_reverse"));
      }
  return cells;
}

toml::table readStudyRecordTable(const fs::path& work) {
  const fs::path file = work / kStudyRecord;
  try {
    return parseCaseToml(models::readInputFile(file, models::kMaxCaseFileBytes), file);
  } catch (const models::InputFileError& e) {
    throw OutputDirectoryError("cannot read '" + file.string() + "': " + e.what());
  }
}

StudyDirectory::StudyDirectory(const std::string& finalDir, const CaseSource& source, const std::string& record,
                               bool continued, const std::string& command)
    : final_(normaliseOutputDirectory(finalDir)), work_(final_ + ".partial"), continued_(continued) {
  lock_ = std::make_unique<OutputLock>(final_);  // before DIR or DIR.partial is looked at
  std::error_code ec;
  if (continued) {
    const auto status = fs::symlink_status(work_, ec);
    if (!fs::is_directory(status) || fs::is_symlink(status) || !hasOwnerMark(work_) ||
        !fs::is_regular_file(fs::symlink_status(work_ / kStudyRecord, ec)))
      throw OutputDirectoryError("--restart " + final_ + ": '" + work_.string() + "' holds no interrupted study of "
                                 "fpdp (its mark and " + kStudyRecord + "); nothing to continue");
    checkOutputDirectory(final_);
    return;
  }
  checkOutputDirectory(final_);
  if (fs::is_regular_file(fs::symlink_status(work_ / kStudyRecord, ec)) && hasOwnerMark(work_))
    throw OutputDirectoryError("'" + work_.string() + "' holds an interrupted study with its finished members: "
                               "continue it with 'fpdp " + command + " --restart " + final_ + "', or remove '" +
                               work_.string() + "' to start again");
  removeStalePartial(work_, final_);
  fs::create_directories(work_ / "members");
  writeOwnerMark(work_);
  io::writeWholeFile(work_ / "case.toml", source.text);
  if (!record.empty()) io::writeWholeFile(work_ / kStudyRecord, record);  // a study that --restart can continue
}

StudyDirectory::~StudyDirectory() {
  // An interrupted or failed study keeps its finished members for --restart; bad input and a study that ran none
  // leave nothing.
  std::error_code ec;
  if (published_ || !hasOwnerMark(work_)) return;
  bool anyMember = false;
  for (auto it = fs::directory_iterator(work_ / "members", ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    anyMember = true;
  if (discard_ || (!anyMember && !continued_)) fs::remove_all(work_, ec);
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
    else if (t == "--restart") o.restart = value();
    else if (t == "--jobs") o.jobs = static_cast<int>(integerOption(t, value(), 1, 1024));
    else if (t == "--quiet") o.quiet = true;
    else if (t.rfind("-", 0) == 0)
      throw UsageError("unknown option '" + t + "' of 'fpdp " + command + "'; allowed: " + ownAllowed +
                       ", --output DIR, --jobs N, --quiet");
    else if (o.casePath.empty()) o.casePath = t;
    else throw UsageError("'fpdp " + command + "' takes one case file, got '" + o.casePath + "' and '" + t + "'");
  }
  if (o.restart && o.restart->empty()) throw UsageError("--restart needs a non-empty directory name");
  if (o.casePath.empty() && !o.restart)
    throw UsageError("'fpdp " + command + "' needs a case file: fpdp " + command + " CASE.toml ...");
  if (o.output && o.output->empty()) throw UsageError("--output needs a non-empty directory name");
  return o;
}

std::string plotStudy(const fs::path& dir, const std::string& kind) {
  return runPlotScript(FPDP_SWEEP_PLOT_SCRIPT, {kind, dir.string()}, dir / (kind + "-plot.log"));
}

}  // namespace fpdp::app
