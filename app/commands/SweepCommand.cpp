#include "app/commands/SweepCommand.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <toml++/toml.h>

#include "app/case/CaseReader.hpp"
#include "app/platform/CommandLine.hpp"
#include "app/commands/MemberRuns.hpp"
#include "app/run/OutputDirectory.hpp"
#include "io/CsvTable.hpp"
#include "io/NumberText.hpp"
#include "io/OutputFile.hpp"

namespace fpdp::app {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxMembers = 10000;

/// The combinations of the axes' values, the last axis varying fastest.
std::vector<std::vector<CaseOverride>> combinations(const std::vector<OverrideAxis>& axes) {
  std::vector<std::vector<CaseOverride>> all{{}};
  for (const OverrideAxis& axis : axes) {
    std::vector<std::vector<CaseOverride>> next;
    for (const auto& partial : all)
      for (const std::string& literal : axis.literals) {
        auto c = partial;
        c.push_back({axis.key, literal});
        next.push_back(std::move(c));
      }
    all = std::move(next);
  }
  return all;
}

std::string describe(const std::vector<CaseOverride>& overrides) {
  std::string text;
  for (const auto& o : overrides) text += (text.empty() ? "" : ", ") + o.key + " = " + o.literal;
  return text;
}

/// One row per member, the columns the union over the members in the order first seen.
void writeSweepTable(const fs::path& file, const SweepOptions& options, const std::vector<Member>& members,
                     const std::vector<MemberOutcome>& outcomes,
                     const std::vector<std::vector<std::pair<std::string, std::string>>>& cells,
                     const std::vector<std::string>& statuses) {
  std::vector<std::string> columns{"member", "directory"};
  for (const auto& axis : options.axes) columns.push_back(axis.key);
  columns.push_back("exit_status");
  columns.push_back("status");
  std::map<std::string, std::size_t> position;
  for (const auto& row : cells)
    for (const auto& [name, value] : row)
      if (position.emplace(name, columns.size()).second) columns.push_back(name);
  std::vector<std::vector<std::string>> rows;
  for (std::size_t m = 0; m < members.size(); ++m) {
    std::vector<std::string> row{std::to_string(m), "members/" + members[m].name + "/output"};
    for (const auto& o : members[m].overrides) row.push_back(o.literal);
    row.push_back(std::to_string(outcomes[m].exitStatus));
    row.push_back(statuses[m]);
    row.resize(columns.size());
    for (const auto& [name, value] : cells[m]) row[position.at(name)] = value;
    rows.push_back(std::move(row));
  }
  io::writeWholeFile(file, io::textCsv(columns, rows));
}

void printSummary(const std::vector<Member>& members, const std::vector<MemberOutcome>& outcomes,
                  const std::vector<std::vector<std::pair<std::string, std::string>>>& cells,
                  const std::vector<std::string>& statuses, const std::string& dir) {
  auto find = [](const std::vector<std::pair<std::string, std::string>>& row, const std::string& name) {
    for (const auto& [n, v] : row)
      if (n == name) return v;
    return std::string("-");
  };
  // eps with its status (e.g. truncated_suspect: an underestimate) and, where not certified, its conservative value.
  std::printf("\n  %-40s %-8s %-24s %-12s %-10s %-24s %-14s\n", "member", "status", "eps_exact (privacy.delta)",
              "eps status", "certified", "conservative", "eps_composition");
  for (std::size_t m = 0; m < members.size(); ++m) {
    const std::string delta = io::shortestText(members[m].facts.delta);
    std::printf("  %-40s %-8s %-24s %-12s %-10s %-24s %-14s\n", members[m].name.c_str(), statuses[m].c_str(),
                find(cells[m], "eps_exact").c_str(), find(cells[m], "eps_exact_status").c_str(),
                find(cells[m], "eps_exact_certified_delta_" + delta).c_str(),
                find(cells[m], "eps_exact_conservative_delta_" + delta).c_str(),
                find(cells[m], "eps_composition").c_str());
    if (outcomes[m].exitStatus != 0)
      std::printf("    exit status %d: %s\n", outcomes[m].exitStatus, outcomes[m].failure.c_str());
    else if (statuses[m] != "ok")
      std::printf("    %s\n", statuses[m].c_str());
  }
  std::printf("\n  table: %s/sweep.csv, plot: %s/sweep.png\n", dir.c_str(), dir.c_str());
}

}  // namespace

SweepOptions parseSweepCommandLine(int argc, const char* const* argv) {
  SweepOptions o;
  o.study = parseStudyCommandLine(argc, argv, "sweep", "--set KEY=V1,V2,..., --restart DIR",
                                  [&](const std::string& t, const std::function<std::string()>& value) {
                                    if (t == "--set") o.axes.push_back(parseOverrideOption(value(), true));
                                    else if (t.rfind("--set=", 0) == 0)
                                      o.axes.push_back(parseOverrideOption(t.substr(6), true));
                                    else return false;
                                    return true;
                                  });
  if (o.study.help) return o;
  if (o.study.restart) {
    // The interrupted study's own case and values are in DIR.partial.
    if (!o.study.casePath.empty() || !o.axes.empty() || o.study.output)
      throw UsageError("'fpdp sweep --restart DIR' continues the sweep with its own case and --set values: give no "
                       "case file, --set or --output (allowed: --jobs N, --quiet)");
    return o;
  }
  if (o.axes.empty()) throw UsageError("'fpdp sweep' needs at least one --set KEY=V1,V2,...");
  for (std::size_t a = 0; a < o.axes.size(); ++a)
    for (std::size_t b = 0; b < a; ++b)
      if (o.axes[a].key == o.axes[b].key)
        throw UsageError("--set " + o.axes[a].key + " is given twice; allowed: each key once, with all its values");
  return o;
}

namespace {

/// What `--restart` needs to make the same members: the case file's path (relative data paths are resolved against
/// it), the SHA-256 of its data file, and the values of every --set (DIR.partial/study.toml).
std::string studyRecord(const CaseSource& source, const std::string& dataSha256, const std::vector<OverrideAxis>& axes) {
  toml::table record;
  record.insert("case_file", fs::absolute(source.path).lexically_normal().string());
  record.insert("data_file_sha256", dataSha256);
  toml::array sets;
  for (const OverrideAxis& axis : axes) {
    toml::array values;
    for (const std::string& literal : axis.literals) values.push_back(literal);
    toml::table set;
    set.insert("key", axis.key);
    set.insert("values", std::move(values));
    sets.push_back(std::move(set));
  }
  record.insert("set", std::move(sets));
  std::ostringstream out;
  out << record << "\n";
  return out.str();
}

/// The interrupted study's case (its copy in DIR.partial, read as if it were at its first path) and --set values.
void readStudyRecord(const fs::path& work, CaseSource& source, std::string& dataSha256, std::vector<OverrideAxis>& axes) {
  const toml::table record = readStudyRecordTable(work);
  source.path = record["case_file"].value_or(std::string());
  dataSha256 = record["data_file_sha256"].value_or(std::string());
  if (const toml::array* sets = record["set"].as_array())
    for (const toml::node& node : *sets) {
      const toml::table* set = node.as_table();
      if (!set) continue;
      OverrideAxis axis;
      axis.key = (*set)["key"].value_or(std::string());
      if (const toml::array* values = (*set)["values"].as_array())
        for (const toml::node& v : *values) axis.literals.push_back(v.value_or(std::string()));
      axes.push_back(std::move(axis));
    }
  if (source.path.empty() || axes.empty())
    throw OutputDirectoryError("'" + (work / kStudyRecord).string() + "' does not record a sweep (its case_file and set)");
  source.text = readCaseSource(work / "case.toml").text;
}

}  // namespace

int runSweep(const SweepOptions& given, const std::string& executable) {
  SweepOptions options = given;
  CaseSource source;
  std::string recordedDataSha256;
  std::optional<fs::path> restartWork;
  if (options.study.restart) {
    const std::string dir = normaliseOutputDirectory(*options.study.restart);
    restartWork = dir + ".partial";
    readStudyRecord(*restartWork, source, recordedDataSha256, options.axes);
    options.study.output = dir;
  } else {
    source = readCaseSource(options.study.casePath);
  }
  // 1. The members' combinations; the first member is validated (with the case's data) before the study starts.
  const auto combos = combinations(options.axes);
  if (combos.size() > kMaxMembers)
    throw InputError("the sweep has " + std::to_string(combos.size()) + " members; allowed: at most " +
                         std::to_string(kMaxMembers),
                     "", "", "");
  const Case base = readCaseString(source.text, source.path);
  if (restartWork && recordedDataSha256 != base.data.fileSha256)
    throw InputError("--restart: the data file '" + base.data.file + "' has changed since the sweep started; its "
                     "members would mix two datasets: restore it, or start the sweep again",
                     "data.file", "", "");
  const int width = static_cast<int>(std::to_string(combos.size() - 1).size());
  const auto memberName = [&](std::size_t m) {
    char index[32];
    std::snprintf(index, sizeof index, "%0*zu", width, m);
    std::string name = index;
    for (std::size_t k = 0; k < combos[m].size(); ++k) {
      name += k ? '_' : '-';
      name += overrideSlug(combos[m][k]);
    }
    return name;
  };
  const auto make = [&](std::size_t m) -> std::optional<MadeMember> {
    if (m >= combos.size()) return std::nullopt;
    MadeMember made;
    made.member = memberCase(source, memberName(m), combos[m],
                             "sweep member " + std::to_string(m) + " (" + describe(combos[m]) + ")", false,
                             made.caseText);
    return made;
  };
  // The first member is validated before DIR is touched: a case the reader refuses is bad input, nothing written.
  (void)make(0);
  StudyDirectory study(options.study.output.value_or(base.name + "-sweep"), source,
                       studyRecord(source, base.data.fileSha256, options.axes), restartWork.has_value(), "sweep");
  const int jobs = options.study.jobs.value_or(defaultJobs());
  std::printf("fpdp sweep '%s': %zu member(s), %d at a time, into %s%s\n", source.path.c_str(), combos.size(), jobs,
              study.finalDir().c_str(), restartWork ? " (continued: finished members kept)" : "");
  std::fflush(stdout);

  // 2. The runs, started as they are made, then one row per member from its output.
  std::vector<Member> members;
  std::vector<MemberOutcome> outcomes;
  try {
    outcomes = runMembers(executable, study.work(), make, jobs, options.study.quiet, members);
  } catch (const InputError&) {
    study.discard();  // bad input: nothing is kept
    throw;
  }
  std::vector<std::vector<std::pair<std::string, std::string>>> cells(members.size());
  std::vector<std::string> statuses(members.size(), "ok");
  bool allSucceeded = true;
  for (std::size_t m = 0; m < members.size(); ++m) {
    if (outcomes[m].exitStatus != 0) {
      statuses[m] = "failed";
      allSucceeded = false;
      continue;
    }
    try {
      cells[m] = lastStepCells(memberRunDirectory(study.work(), members[m]), members[m].facts);
    } catch (const std::exception& e) {
      statuses[m] = std::string("unreadable: ") + e.what();
      allSucceeded = false;
    }
  }
  writeSweepTable(study.work() / "sweep.csv", options, members, outcomes, cells, statuses);
  const std::string plotWarning = plotStudy(study.work(), "sweep");
  study.publish();
  printSummary(members, outcomes, cells, statuses, study.finalDir());
  if (!plotWarning.empty()) std::printf("  WARNING: %s\n", plotWarning.c_str());
  if (!allSucceeded) std::fprintf(stderr, "fpdp: sweep: not every member succeeded (sweep.csv: status)\n");
  return allSucceeded ? 0 : 1;
}

}  // namespace fpdp::app
