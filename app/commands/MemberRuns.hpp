#pragma once
// The runs behind `fpdp sweep` and `fpdp worst-case` (docs/sweeps.md): each member is the case file with some keys
// overridden (app/case/CaseOverrides), validated before anything runs, then solved by `fpdp run` in a child process of
// this program (app/platform/ChildProcesses), several at a time. The study's directory DIR is written as DIR.partial and put
// in DIR's place at the end (app/run/OutputDirectory: only an earlier fpdp output is replaced):
//
//   DIR/case.toml                         the case file as given
//   DIR/members/<name>/case.toml          the member's case (overrides applied, plots off)
//   DIR/members/<name>/stdout.log, stderr.log
//   DIR/members/<name>/output/            the member's `fpdp run` output (docs/output.md)
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <toml++/toml.h>

#include "app/case/Case.hpp"
#include "app/case/CaseOverrides.hpp"
#include "app/platform/ChildProcesses.hpp"
#include "app/run/OutputLock.hpp"

namespace fpdp::app {

/// What a study reads back from a member's run (lastStepCells), kept instead of its whole case: a sweep of 10,000
/// members of a 0.6 MB case held 3 GB of cases and their data before any member started.
struct MemberFacts {
  double delta = 0.0;              // privacy.delta
  std::vector<RenyiOrder> orders;  // divergence.orders
  int dim = 0;                     // d: beyond three axes the run writes no renyi.csv (docs/scaling.md §9)
};

struct Member {
  std::string name;                     // its directory under DIR/members/, e.g. "03-steps-20_sigma-0.5"
  std::vector<CaseOverride> overrides;  // what differs from the case file
  MemberFacts facts;
};

/// The member's case: the overrides, then output.plots = false (and, when `lean`, no density fields either: only
/// the tables are needed), read and validated; its text goes to `caseText`. An invalid member throws InputError
/// whose message starts with `label` (which member, with which values) and goes on with the case reader's (key,
/// value, what is allowed).
Member memberCase(const CaseSource& source, std::string name, std::vector<CaseOverride> overrides,
                  const std::string& label, bool lean, std::string& caseText);

/// A directory name part for an override: the key's last part and the value, e.g. "sigma-0.5".
std::string overrideSlug(const CaseOverride& o);

struct MemberOutcome {
  int exitStatus = -1;
  std::string failure;  // the last lines of its stderr when exitStatus != 0
};

/// What runs the members' `run` commands instead of child processes (app/commands/MemberDispatch under MPI): the jobs as
/// runChildren takes them, their exit statuses returned in order. With a runner installed, runMembers makes every
/// member first and hands the whole batch over.
using MemberRunner = std::function<std::vector<int>(const std::vector<ChildJob>& jobs)>;
/// Installs the runner runMembers uses from now on (an empty one: child processes again).
void setMemberRunner(MemberRunner runner);

/// A member made for its run: the member and its case's text.
struct MadeMember {
  Member member;
  std::string caseText;
};

/// Runs the members as they are made, `jobs` at a time: `make(i)` makes member i (i = 0, 1, ...; nullopt: none
/// left) just before it starts, so that the first starts at once and only the running members' cases are held.
/// Each member's case goes to work/members/<name>/case.toml, then `executable run case.toml --output output --quiet`
/// runs; one line per finished member on stdout unless `quiet`. A member whose run finished earlier (its output
/// directory published: a study continued with --restart) is not run again: its outcome is success. When `make`
/// throws (an invalid member), no further member starts, the running ones are stopped, and the error propagates.
/// `members` receives the members made, in order; the outcomes are theirs.
std::vector<MemberOutcome> runMembers(const std::string& executable, const std::filesystem::path& work,
                                      const std::function<std::optional<MadeMember>(std::size_t)>& make, int jobs,
                                      bool quiet, std::vector<Member>& members);

/// The run directory of a member.
std::filesystem::path memberRunDirectory(const std::filesystem::path& work, const Member& m);

/// The last output step of a member's run as (column, cell) pairs, the cells copied from the run's CSV files:
/// step, t; at every delta of the member's privacy.delta_grid eps_exact_delta_<d>, eps_exact_status_delta_<d>,
/// eps_exact_certified_delta_<d>, eps_exact_conservative_delta_<d>; delta (privacy.delta) and epsilon.csv's row
/// there (every column: the conversions, the bounds' eps, eps_composition, composition_mu); kl, tv, renyi_<a> and
/// status_renyi_<a> of divergence.csv with each value's _certified and _conservative of accuracy.csv; every column
/// of bounds.csv (docs/output.md, sweep.csv). Throws std::runtime_error when a file is missing or unreadable.
std::vector<std::pair<std::string, std::string>> lastStepCells(const std::filesystem::path& runDir,
                                                               const MemberFacts& c);

/// The study directory, locked for this process (app/run/OutputLock) from before it is looked at until the end: DIR
/// checked (absent, empty or fpdp's own), DIR.partial made with fpdp's mark, the case file and `record` (what a
/// continued study needs: kStudyRecord); publish() puts it in DIR's place. A study interrupted (a signal, a crash)
/// leaves DIR.partial with its finished members; a new study refuses it, `continued` keeps it (`fpdp sweep --restart
/// DIR`). Throws OutputDirectoryError.
class StudyDirectory {
public:
  /// `command`: "sweep" or "worst-case", for the message that names the command that continues an interrupted study.
  StudyDirectory(const std::string& finalDir, const CaseSource& source, const std::string& record, bool continued,
                 const std::string& command);
  ~StudyDirectory();  // a study that failed before any member ran removes DIR.partial; otherwise it stays
  StudyDirectory(const StudyDirectory&) = delete;
  StudyDirectory& operator=(const StudyDirectory&) = delete;
  const std::filesystem::path& work() const { return work_; }
  const std::string& finalDir() const { return final_; }
  /// A bad-input failure (exit 2): DIR.partial goes even if members ran.
  void discard() { discard_ = true; }
  void publish();

private:
  std::string final_;
  std::filesystem::path work_;
  std::unique_ptr<OutputLock> lock_;
  bool published_ = false, discard_ = false, continued_ = false;
};

/// The file of DIR.partial that records how a study was started (its case's path and its command's values), so that
/// `--restart` continues it with the same members.
inline constexpr const char* kStudyRecord = "study.toml";

/// The record of the interrupted study in `work` (DIR.partial/study.toml), read within a case file's limits and
/// parsed as one. Throws OutputDirectoryError when it cannot be read, InputError when it is not TOML.
toml::table readStudyRecordTable(const std::filesystem::path& work);

/// The default of --jobs: the cores this process may use.
int defaultJobs();

/// The options every study takes: `fpdp <command> CASE.toml [--output DIR] [--jobs N] [--quiet] [--help]`.
struct StudyOptions {
  std::string casePath;
  std::optional<std::string> output;  // default: "<case name>-<command>"
  std::optional<int> jobs;            // default: defaultJobs()
  bool quiet = false;
  bool help = false;                  // --help: print fpdp's help and exit
  std::optional<std::string> restart;  // --restart DIR: continue the interrupted study in DIR.partial
};

/// Parses argv[2..] of `fpdp <command>`: the common options here, the command's own by `own(option, value)`, which
/// returns whether it took the option (value() consumes its argument); `ownAllowed` lists them for the message of
/// an unknown option. Throws UsageError.
StudyOptions parseStudyCommandLine(
    int argc, const char* const* argv, const std::string& command, const std::string& ownAllowed,
    const std::function<bool(const std::string& option, const std::function<std::string()>& value)>& own);

/// Draws DIR/<kind>.png with scripts/plot-sweep (kind: sweep or worst-case); "" on success, else the warning.
std::string plotStudy(const std::filesystem::path& dir, const std::string& kind);

}  // namespace fpdp::app
