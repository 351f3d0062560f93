#include "app/platform/PetscConfiguration.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <petscts.h>
#include <unistd.h>

#include <cerrno>
#include <initializer_list>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "app/platform/PetscOptionPolicy.hpp"
#include "meshes/PetscHandles.hpp"

namespace fpdp::app {

PetscErrorCapture::PetscErrorCapture() { (void)PetscPushErrorHandler(&PetscErrorCapture::handler, this); }
PetscErrorCapture::~PetscErrorCapture() { (void)PetscPopErrorHandler(); }

PetscErrorCode PetscErrorCapture::handler(MPI_Comm, int, const char*, const char*, PetscErrorCode n, PetscErrorType,
                                          const char* mess, void* ctx) {
  auto* self = static_cast<PetscErrorCapture*>(ctx);
  if (self->message_.empty() && mess && *mess) self->message_ = mess;
  if (self->code_ == 0) self->code_ = n;
  return n;
}

bool PetscErrorCapture::configurationError() const {
  switch (code_) {
    case PETSC_ERR_SUP:
    case PETSC_ERR_ARG_WRONG:
    case PETSC_ERR_ARG_INCOMP:
    case PETSC_ERR_ARG_OUTOFRANGE:
    case PETSC_ERR_ARG_UNKNOWN_TYPE:
    case PETSC_ERR_ARG_BADPTR:
    case PETSC_ERR_ARG_SIZ:
    case PETSC_ERR_ARG_WRONGSTATE:
      return true;
    default:
      return false;
  }
}

std::optional<int> launcherRank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return std::nullopt;
}

bool launchedByMpiLauncher() {
  return launcherRank().has_value() || std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr ||
         std::getenv("PMI_SIZE") != nullptr;
}

namespace {
// A positive integer from the environment, or 0 if unset or not one.
long positiveVariable(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  return *end == '\0' && n > 0 ? n : 0;
}
}  // namespace

bool openMpiJobOnOneNode() {
  const long world = positiveVariable("OMPI_COMM_WORLD_SIZE");
  return world > 0 && positiveVariable("OMPI_COMM_WORLD_LOCAL_SIZE") == world;
}

bool preferSharedMemoryMpiTransport() {
  // Measured on the benchmark machine (bench/README.md): MPI_Init of a singleton 0.34 s with UCX, 0.12 s with ob1;
  // `fpdp check` on 2 ranks under mpiexec 0.35-0.37 s with UCX, 0.14-0.15 s with ob1.
  if (std::getenv("OMPI_MCA_pml") != nullptr) return false;
  if (launchedByMpiLauncher() && !openMpiJobOnOneNode()) return false;
  return setenv("OMPI_MCA_pml", "ob1", /*overwrite=*/0) == 0;
}

bool avoidSharedFilePointers() {
  if (std::getenv("OMPI_MCA_sharedfp") != nullptr) return false;
  return setenv("OMPI_MCA_sharedfp", "^sm", /*overwrite=*/0) == 0;
}

std::string temporaryDirectoryProblem() {
  const char* set = std::getenv("TMPDIR");
  const std::string dir = set && *set ? set : "/tmp";
  const std::string name = set && *set ? "TMPDIR '" + dir + "'" : "the temporary directory '/tmp' (TMPDIR is unset)";
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    return name + " cannot be used: " + std::strerror(errno) + "; set TMPDIR to a writable directory";
  if (!S_ISDIR(st.st_mode)) return name + " is not a directory; set TMPDIR to a writable directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return name + " is not writable (" + std::strerror(errno) + "); set TMPDIR to a writable directory";
  // Open MPI maps small files there (a few MiB at most for the processes of one node).
  struct statvfs fs {};
  constexpr unsigned long long kNeeded = 4ull << 20;
  if (::statvfs(dir.c_str(), &fs) == 0 && static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize < kNeeded)
    return name + " is full (less than 4 MiB free); Open MPI keeps its session files there: free space or set "
                  "TMPDIR to another directory";
  return "";
}

namespace {
constexpr const char* kIsolatedVariable = "OMPI_MCA_ess_singleton_isolated";
constexpr const char* kTmpdirBaseVariable = "OMPI_MCA_orte_tmpdir_base";
// hwloc's discovery of I/O devices, which Open MPI's MPI_Init loads for network locality: one process has no network
// to place. Reading the PCI configuration cost 8-10 ms of every serial run; the OpenCL and GL components looked for
// GPUs, the latter by connecting to X displays :0 to :9 (94 connect calls, about 0.5 ms).
constexpr const char* kHwlocComponentsVariable = "HWLOC_COMPONENTS";
constexpr const char* kNoIoDiscovery = "-pci,-linuxio,-opencl,-gl";
}  // namespace

namespace {
// The private base for the handler of SIGINT and SIGTERM, which end the process without running the destructor
// (Ctrl-C, timeout(1), a batch system's stop): written before the handler is installed, read only by it.
char gPrivateBase[4096] = {};
struct sigaction gPreviousInterrupt {}, gPreviousTerminate {};

// Removes the tree `name` under the directory `parent` with system calls only (async-signal-safe: no allocation, no
// stdio, no std::filesystem). Open MPI's session tree is 4 directories deep; `depth` bounds the recursion.
void removeTreeAt(int parent, const char* name, int depth) {
  if (unlinkat(parent, name, 0) == 0) return;
  const int dir = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) return;
  alignas(dirent64) char buffer[2048];
  // Entries removed while the directory is read may shift the rest: read it again until a pass removes nothing.
  for (bool removed = true; removed && depth > 0;) {
    removed = false;
    (void)lseek(dir, 0, SEEK_SET);
    for (ssize_t n; (n = getdents64(dir, buffer, sizeof buffer)) > 0;)
      for (ssize_t at = 0; at < n;) {
        const auto* entry = reinterpret_cast<const dirent64*>(buffer + at);
        at += entry->d_reclen;
        const char* e = entry->d_name;
        if (e[0] == '.' && (e[1] == '\0' || (e[1] == '.' && e[2] == '\0'))) continue;
        removeTreeAt(dir, e, depth - 1);
        removed = true;
      }
  }
  close(dir);
  (void)unlinkat(parent, name, AT_REMOVEDIR);
}

extern "C" void removePrivateBaseOnSignal(int signal) {
  removeMpiSessionBaseInSignalHandler();
  // Then the signal's default course: the end of the process.
  std::signal(signal, SIG_DFL);
  raise(signal);
}
}  // namespace

void removeMpiSessionBaseInSignalHandler() {
  if (gPrivateBase[0] == '\0') return;
  const int savedErrno = errno;
  removeTreeAt(AT_FDCWD, gPrivateBase, 8);
  errno = savedErrno;
}

LightSingletonStartup::LightSingletonStartup() {
  if (launchedByMpiLauncher() || std::getenv(kIsolatedVariable) != nullptr ||
      std::getenv(kTmpdirBaseVariable) != nullptr)
    return;
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/fpdp-mpi-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return;  // no private directory: the daemon start-up stays
  if (setenv(kTmpdirBaseVariable, pattern.c_str(), 1) != 0 || setenv(kIsolatedVariable, "1", 1) != 0) {
    unsetenv(kTmpdirBaseVariable);
    unsetenv(kIsolatedVariable);
    std::error_code ec;
    std::filesystem::remove_all(pattern, ec);
    return;
  }
  privateBase_ = pattern;
  environmentSet_ = true;
  // A run stopped by SIGINT or SIGTERM left its base behind (1003 of them in /tmp of a test machine, 2026-11-26).
  if (privateBase_.size() < sizeof gPrivateBase) {
    std::snprintf(gPrivateBase, sizeof gPrivateBase, "%s", privateBase_.c_str());
    struct sigaction remove {};
    remove.sa_handler = removePrivateBaseOnSignal;
    sigemptyset(&remove.sa_mask);
    // A signal the parent had ignored (a shell's background job: SIGINT) stays ignored until the run's InterruptHint.
    signalHandlersSet_ = sigaction(SIGINT, nullptr, &gPreviousInterrupt) == 0 &&
                         sigaction(SIGTERM, nullptr, &gPreviousTerminate) == 0;
    if (signalHandlersSet_ && gPreviousInterrupt.sa_handler != SIG_IGN) sigaction(SIGINT, &remove, nullptr);
    if (signalHandlersSet_ && gPreviousTerminate.sa_handler != SIG_IGN) sigaction(SIGTERM, &remove, nullptr);
  }
  hwlocSet_ = std::getenv(kHwlocComponentsVariable) == nullptr && setenv(kHwlocComponentsVariable, kNoIoDiscovery, 0) == 0;
}

void LightSingletonStartup::releaseEnvironment() {
  if (hwlocSet_) unsetenv(kHwlocComponentsVariable);
  hwlocSet_ = false;
  if (!environmentSet_) return;
  unsetenv(kTmpdirBaseVariable);
  unsetenv(kIsolatedVariable);
  environmentSet_ = false;
}

LightSingletonStartup::~LightSingletonStartup() {
  releaseEnvironment();
  if (signalHandlersSet_) {
    sigaction(SIGINT, &gPreviousInterrupt, nullptr);
    sigaction(SIGTERM, &gPreviousTerminate, nullptr);
  }
  // Open MPI removes its session directory at MPI_Finalize; this removes the base and anything a failed run left.
  gPrivateBase[0] = '\0';
  if (!privateBase_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(privateBase_, ec);
  }
}

void refuseForbiddenOptions() {
  char* all = nullptr;
  FPDP_PETSC(PetscOptionsGetAll(nullptr, &all));
  std::istringstream tokens(all ? all : "");
  FPDP_PETSC(PetscFree(all));
  for (std::string token; tokens >> token;)
    if (const auto problem = forbiddenPetscOption(token))
      throw SolverConfigurationError("PETSc option '" + token + "' (from the command line or PETSC_OPTIONS) " + *problem);
}

void insertCaseOptions(const SolverSpec& solver) {
  std::istringstream in(solver.petsc_options);
  std::vector<std::string> tokens;
  for (std::string t; in >> t;) tokens.push_back(t);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& name = tokens[i];
    if (name.size() < 2 || name[0] != '-')
      throw SolverConfigurationError("solver.petsc_options: '" + name + "' is not an option name (options start with '-')");
    std::string value;
    if (i + 1 < tokens.size() && !(tokens[i + 1].size() >= 2 && tokens[i + 1][0] == '-' &&
                                   !(tokens[i + 1][1] >= '0' && tokens[i + 1][1] <= '9')))
      value = tokens[++i];
    PetscBool set = PETSC_FALSE;
    FPDP_PETSC(PetscOptionsHasName(nullptr, nullptr, name.c_str(), &set));
    if (!set) FPDP_PETSC(PetscOptionsSetValue(nullptr, name.c_str(), value.empty() ? nullptr : value.c_str()));
  }
}

namespace {
template <class Obj, PetscErrorCode (*SetType)(Obj, const char*)>
void checkType(Obj obj, const std::string& key, const std::string& name, const char* what) {
  PetscErrorCapture capture;
  if (SetType(obj, name.c_str()) != 0)
    throw SolverConfigurationError(key + " = \"" + name + "\": PETSc has no " + what + " of that name (" +
                                   capture.message() + "); run 'fpdp run CASE -help' for the registered types");
}

std::string optionOr(const char* name, const std::string& fallback) {
  char buf[256];
  PetscBool set = PETSC_FALSE;
  FPDP_PETSC(PetscOptionsGetString(nullptr, nullptr, name, buf, sizeof buf, &set));
  return set ? std::string(buf) : fallback;
}
}  // namespace

namespace {
/// Whether a PETSc option beginning with one of `prefixes` is set (command line or solver.petsc_options), diagnostics
/// (-ts_view, -ksp_monitor, -ksp_converged_reason, ...) and -ts_type aside.
bool optionGivenWithPrefix(std::initializer_list<const char*> prefixes) {
  // Every option set, used or not (reading an option marks it used, so PetscOptionsLeftGet would depend on who asked
  // first): PetscOptionsGetAll gives them as one command-line string.
  char* all = nullptr;
  FPDP_PETSC(PetscOptionsGetAll(nullptr, &all));
  std::istringstream tokens(all ? all : "");
  FPDP_PETSC(PetscFree(all));
  bool given = false;
  for (std::string token; tokens >> token;) {
    const bool diagnostic = token.find("_view") != std::string::npos || token.find("_monitor") != std::string::npos ||
                            token.find("_converged_reason") != std::string::npos;
    for (const char* prefix : prefixes)
      if (token.rfind(prefix, 0) == 0 && token != "-ts_type" && !diagnostic) given = true;
  }
  return given;
}

/// Whether a PETSc time-stepping or linear-solver option is set (command line or solver.petsc_options), or the case
/// names a linear solver: the user is configuring a stepping integrator.
bool steppingOptionsGiven(const SolverSpec& solver) {
  if (solver.ksp_type != SolverSpec{}.ksp_type || solver.pc_type != SolverSpec{}.pc_type) return true;
  return optionGivenWithPrefix({"-ts_", "-ksp_", "-pc_", "-snes_", "-mg_", "-sub_"});
}
}  // namespace

bool linearSolverOptionsGiven() { return optionGivenWithPrefix({"-ksp_", "-pc_", "-snes_", "-mg_", "-sub_"}); }

std::string requestedTsType(const SolverSpec& solver) { return optionOr("-ts_type", solver.ts_type); }

std::string effectiveTsType(const Case& c) {
  const std::string chosen = requestedTsType(c.solver);
  if (chosen != kAutoTsType) return chosen;
  // exp(T A) where it applies (docs/scheme.md §3, "Exponential integration"), unless the user sets stepping or
  // linear-solver options: then a stepping integrator is wanted. Otherwise BDF2.
  return !exponentialObstacle(c) && !steppingOptionsGiven(c.solver) ? kExponentialTsType : "bdf";
}

void validateSolverTypes(const Case& c) {
  const SolverSpec& solver = c.solver;
  PetscHandle<TS, TSDestroy> ts;
  PetscHandle<KSP, KSPDestroy> ksp;
  PetscHandle<PC, PCDestroy> pc;
  FPDP_PETSC(TSCreate(PETSC_COMM_SELF, ts.out()));
  FPDP_PETSC(KSPCreate(PETSC_COMM_SELF, ksp.out()));
  FPDP_PETSC(PCCreate(PETSC_COMM_SELF, pc.out()));
  // The effective names: a command-line / petsc_options value wins over the typed key.
  const std::string tsType = effectiveTsType(c);
  if (tsType != kExponentialTsType)
    checkType<TS, TSSetType>(ts, "solver.ts_type / -ts_type", tsType, "time integrator");
  checkType<KSP, KSPSetType>(ksp, "solver.ksp_type / -ksp_type", optionOr("-ksp_type", solver.ksp_type),
                             "Krylov solver");
  checkType<PC, PCSetType>(pc, "solver.pc_type / -pc_type", optionOr("-pc_type", solver.pc_type), "preconditioner");
}

}  // namespace fpdp::app
