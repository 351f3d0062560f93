#include "app/commands/MemberDispatch.hpp"

#include <fcntl.h>
#include <petscsys.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/case/CaseReader.hpp"
#include "app/platform/CommandLine.hpp"
#include "app/commands/MemberRuns.hpp"
#include "app/platform/PetscConfiguration.hpp"
#include "app/commands/RunCommand.hpp"

namespace fpdp::app {

namespace {

constexpr const char* kRanksOption = "--ranks-per-member";

/// The jobs as one string to broadcast: per job its arguments, stdout and stderr files, each ended by '\0', and the
/// job ended by an empty field.
std::string pack(const std::vector<ChildJob>& jobs) {
  std::string text;
  for (const ChildJob& j : jobs) {
    for (const std::string& a : j.args) text += a + '\0';
    text += j.stdoutFile.string() + '\0' + j.stderrFile.string() + '\0' + '\0';
  }
  return text;
}

std::vector<ChildJob> unpack(const std::string& text) {
  std::vector<ChildJob> jobs;
  std::vector<std::string> fields;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\0', at);
    const std::string field = text.substr(at, end - at);
    at = end + 1;
    if (!field.empty()) {
      fields.push_back(field);
      continue;
    }
    ChildJob j;
    j.stderrFile = fields.back();
    fields.pop_back();
    j.stdoutFile = fields.back();
    fields.pop_back();
    j.args = std::move(fields);
    fields.clear();
    jobs.push_back(std::move(j));
  }
  return jobs;
}

/// The member's output appended to its log files (the group's first rank prints; the others print nothing).
class Redirect {
public:
  Redirect(const ChildJob& job, bool active) : active_(active) {
    if (!active_) return;
    std::fflush(stdout);
    std::fflush(stderr);
    saved_[0] = dup(STDOUT_FILENO);
    saved_[1] = dup(STDERR_FILENO);
    const int out = open(job.stdoutFile.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    const int err = job.stderrFile == job.stdoutFile ? out : open(job.stderrFile.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (out >= 0) dup2(out, STDOUT_FILENO);
    if (err >= 0) dup2(err, STDERR_FILENO);
    if (out >= 0) close(out);
    if (err >= 0 && err != out) close(err);
  }
  ~Redirect() {
    if (!active_) return;
    std::fflush(stdout);
    std::fflush(stderr);
    dup2(saved_[0], STDOUT_FILENO);
    dup2(saved_[1], STDERR_FILENO);
    close(saved_[0]);
    close(saved_[1]);
  }
  Redirect(const Redirect&) = delete;
  Redirect& operator=(const Redirect&) = delete;

private:
  bool active_;
  int saved_[2] = {-1, -1};
};

/// One member's `run` command in this process on PETSC_COMM_WORLD (the group): what main() does for `fpdp run`
/// after start-up, with a PETSc options database of its own.
int runInProcess(const ChildJob& job) {
  int rank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  const Redirect redirect(job, rank == 0);
  std::vector<const char*> argv{"fpdp"};
  for (const std::string& a : job.args) argv.push_back(a.c_str());
  CommandLine cl;
  Case c;
  try {
    cl = parseCommandLine(static_cast<int>(argv.size()), argv.data());
    c = readCase(cl.casePath);
  } catch (...) {
    return reportError(rank, describeFailure(std::current_exception(), nullptr));
  }
  PetscOptions options = nullptr;
  if (PetscOptionsCreate(&options) != 0 || PetscOptionsPush(options) != 0)
    return reportError(rank, "run failed", "PETSc could not make an options database", 1);
  const int status = runCommand(cl, c, nullptr, "");
  PetscOptionsPop();
  PetscOptionsDestroy(&options);
  return status;
}

/// The members of one dispatch: every group runs those m with m mod groups == group, and rank 0 receives the
/// statuses (each member's from its group's first rank).
std::vector<int> runShare(const std::vector<ChildJob>& jobs, int group, int groups) {
  int groupRank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &groupRank);
  std::vector<int> mine(jobs.size(), 0), all(jobs.size(), 0);
  for (std::size_t m = static_cast<std::size_t>(group); m < jobs.size(); m += static_cast<std::size_t>(groups)) {
    const int status = runInProcess(jobs[m]);
    if (groupRank == 0) mine[m] = status + 1;  // 0: not run here
  }
  MPI_Reduce(mine.data(), all.data(), static_cast<int>(jobs.size()), MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  for (int& s : all) s -= 1;
  return all;
}

/// Broadcasts a dispatch from rank 0 (count -1: the study has ended).
void broadcast(long& count, std::string& text) {
  MPI_Bcast(&count, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  if (count < 0) return;
  long size = static_cast<long>(text.size());
  MPI_Bcast(&size, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  text.resize(static_cast<std::size_t>(size));
  MPI_Bcast(text.data(), static_cast<int>(size), MPI_CHAR, 0, MPI_COMM_WORLD);
}

}  // namespace

bool studyLaunchedOnRanks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* v = std::getenv(name)) return std::atol(v) > 1;
  return false;
}

int runStudyOnRanks(int argc, char** argv, const std::function<int(int, char**)>& study) {
  // --ranks-per-member M is this file's option: taken out before the study parses the rest.
  long ranksPerMember = 1;
  std::vector<char*> rest;
  std::string badValue;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == kRanksOption || a.rfind(std::string(kRanksOption) + "=", 0) == 0) {
      const std::string value = a == kRanksOption ? (i + 1 < argc ? argv[++i] : "") : a.substr(a.find('=') + 1);
      try {
        ranksPerMember = integerOption(kRanksOption, value, 1, 1 << 20);
      } catch (const UsageError& e) {
        badValue = e.what();
      }
      continue;
    }
    rest.push_back(argv[i]);
  }
  preferSharedMemoryMpiTransport();
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (badValue.empty() && size % ranksPerMember != 0)
    badValue = std::string(kRanksOption) + " " + std::to_string(ranksPerMember) + " does not divide the " +
               std::to_string(size) + " ranks; allowed: a divisor of the number of ranks";
  if (!badValue.empty()) {
    if (rank == 0) std::fprintf(stderr, "fpdp: error: %s\n", badValue.c_str());
    MPI_Finalize();
    return rank == 0 ? 2 : 0;
  }
  const int groups = size / static_cast<int>(ranksPerMember), group = rank / static_cast<int>(ranksPerMember);
  MPI_Comm groupComm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, group, rank, &groupComm);
  PETSC_COMM_WORLD = groupComm;
  static char skipPetscrc[] = "-skip_petscrc";
  char* petscArgv[] = {argv[0], skipPetscrc, nullptr};
  int petscArgc = 2;
  char** pargv = petscArgv;
  if (PetscInitialize(&petscArgc, &pargv, nullptr, nullptr) != 0) {
    if (rank == 0) std::fprintf(stderr, "fpdp: error: PETSc could not be initialised\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int status = 0;
  if (rank == 0) {
    setMemberRunner([&](const std::vector<ChildJob>& jobs) {
      long count = static_cast<long>(jobs.size());
      std::string text = pack(jobs);
      broadcast(count, text);
      return runShare(jobs, group, groups);
    });
    rest.push_back(nullptr);
    status = study(static_cast<int>(rest.size()) - 1, rest.data());
    setMemberRunner({});
    long done = -1;
    std::string none;
    broadcast(done, none);
  } else {
    for (;;) {
      long count = 0;
      std::string text;
      broadcast(count, text);
      if (count < 0) break;
      runShare(unpack(text), group, groups);
    }
  }
  PetscFinalize();
  MPI_Comm_free(&groupComm);
  MPI_Finalize();
  return status;
}

}  // namespace fpdp::app
