#pragma once
// The bridge between a case's [solver] table / the command line and PETSc's options database.
// Precedence: command-line options > case solver.petsc_options > case solver.{ts,ksp,pc}_type > fpdp defaults.
#include <petscsys.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "app/case/Case.hpp"

namespace fpdp::app {

/// This process's rank as the MPI launcher (mpiexec, srun, hydra) put it in the environment, before MPI starts; none
/// when no launcher started it.
std::optional<int> launcherRank();
/// True when an MPI launcher started this process: its environment names a rank or a world size.
bool launchedByMpiLauncher();
/// True when Open MPI's launcher started this process and put every rank of the job on this node: its
/// OMPI_COMM_WORLD_LOCAL_SIZE equals its OMPI_COMM_WORLD_SIZE (the same answer on every rank of the job).
bool openMpiJobOnOneNode();
/// Before MPI starts: Open MPI's default point-to-point layer (UCX) spends about 0.2 s of every process's MPI_Init
/// probing network devices. A process no launcher started (an Open MPI singleton) never uses one, and neither does a
/// job whose ranks all run on one node (openMpiJobOnOneNode): for those, and only if the user has not chosen a layer
/// (OMPI_MCA_pml unset), this selects the ob1 layer (self and shared memory), which starts in a fraction of that.
/// Every rank of a one-node job makes the same choice, as they must. Jobs across nodes, and launchers other than
/// Open MPI's, are left alone: a cluster wants its fabric. Returns true if it set the choice (other MPI
/// implementations ignore the variable).
bool preferSharedMemoryMpiTransport();

/// Before MPI starts: Open MPI's MPI-IO layer (OMPIO) opens a shared-file-pointer module with every file it opens.
/// On one node its default, sm, keeps a POSIX semaphore named after the file's base name alone
/// (/dev/shm/sem.OMPIO_<name>), shared by every process of every user on the machine: a run killed between that
/// module's sem_wait and sem_post (a full TMPDIR made it fail with SIGBUS there) left the semaphore at 0, and every
/// later run that opened a file of that name with MPI-IO waited in sem_wait for good. Unless the user chose the
/// components (OMPI_MCA_sharedfp set), sm is excluded: OMPIO then takes lockedfile, whose state is a file beside the
/// data file named with the job's and the process's ids (in the run's own locked output directory) under a record
/// lock the kernel releases when the process ends. Excluding every component made MPI_File_open fail. Returns true
/// if it set the choice.
bool avoidSharedFilePointers();

/// Why the temporary directory Open MPI keeps its session files in ($TMPDIR, else /tmp) cannot be used (not a
/// directory, not writable, full), or "" when it can: checked before MPI starts, so that the run ends with one line
/// instead of Open MPI's page of diagnostics (or a SIGBUS when a full one is mapped).
std::string temporaryDirectoryProblem();

/// Open MPI's singleton start-up without its daemon, for a process no launcher started (bench/README.md, start-up).
/// A singleton's MPI_Init forks an orted daemon, so that MPI_Comm_spawn could work later; fpdp never spawns, and
/// the fork cost 0.1 s of every serial run (0.43 s -> 0.32 s for the 256^2 benchmark). An isolated singleton
/// (OMPI_MCA_ess_singleton_isolated) starts without it, but every isolated singleton takes job family 0 and so the
/// same session directory under Open MPI's temporary-directory base: the first to finish removed it while another
/// run still had its MPI-IO shared-file-pointer file there (mca_sharedfp_sm errors when two runs overlapped). Each
/// isolated process therefore gets a private base, made here under $TMPDIR (or /tmp) and removed by the destructor,
/// after MPI_Finalize, or by the handler this object installs for SIGINT and SIGTERM while it lives (which then
/// passes the signal on to the handler that was there before).
/// An isolated process also skips hwloc's discovery of I/O devices and GPUs (HWLOC_COMPONENTS=-pci,-linuxio,-opencl,-gl,
/// unless set), which MPI_Init loads to place network traffic: one process has none, and reading the PCI
/// configuration cost 8-10 ms of every serial run (the GL component also connected to X displays :0 to :9).
/// Nothing is changed for a launched process, where the user set either Open MPI variable, or where the private
/// directory cannot be made (the daemon start-up then stays). releaseEnvironment, once MPI has started, takes the
/// variables this object set out of the environment again, so that child processes (fpdp validate's runs, mpiexec)
/// choose for themselves instead of sharing this process's directory.
class LightSingletonStartup {
public:
  LightSingletonStartup();
  ~LightSingletonStartup();
  LightSingletonStartup(const LightSingletonStartup&) = delete;
  LightSingletonStartup& operator=(const LightSingletonStartup&) = delete;

  /// After MPI_Init: removes the variables this object set from the environment.
  void releaseEnvironment();
  /// Whether this process starts as an isolated singleton with a private session-directory base.
  bool isolated() const { return !privateBase_.empty(); }
  /// The private base (empty if not isolated).
  const std::string& privateBase() const { return privateBase_; }

private:
  std::string privateBase_;
  bool environmentSet_ = false;
  bool hwlocSet_ = false;
  bool signalHandlersSet_ = false;  // SIGINT and SIGTERM remove the private base before the process ends
};

/// For a handler of a signal that ends the process: removes the private session-directory base of this process's
/// LightSingletonStartup, if it has one (system calls only: async-signal-safe).
void removeMpiSessionBaseInSignalHandler();

/// A solver choice PETSc rejects (unknown type, unused option): bad input, exit status 2.
struct SolverConfigurationError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws SolverConfigurationError if PETSc's options database holds an option no run may have
/// (forbiddenPetscOption): the command line is checked before PETSc starts, this catches what PETSc read from the
/// PETSC_OPTIONS environment variable and petscrc files.
void refuseForbiddenOptions();
/// Adds the case's petsc_options to the options database unless the command line already set them.
void insertCaseOptions(const SolverSpec& solver);
/// The time integrator in effect: -ts_type from the command line or petsc_options, else solver.ts_type; "auto" resolves
/// to "exponential" (solver::ExponentialEvolution) for Langevin runs with Sigma and Sigma' multiples of the identity and
/// solver.spatial_order = 2, and to "bdf" otherwise. Reading -ts_type marks it used.
std::string effectiveTsType(const Case& c);
/// Whether a PETSc linear-solver option (-ksp_*, -pc_*, -snes_*, -mg_*, -sub_*; diagnostics aside) is set on the
/// command line or in solver.petsc_options.
bool linearSolverOptionsGiven();
/// -ts_type from the command line or petsc_options, else solver.ts_type, unresolved ("auto" stays "auto").
std::string requestedTsType(const SolverSpec& solver);
/// Checks the TS/KSP/PC type names of the case and of the command line against PETSc's registries.
void validateSolverTypes(const Case& c);

/// While alive, PETSc errors are not printed but recorded; message() is the first one's text.
class PetscErrorCapture {
public:
  PetscErrorCapture();
  ~PetscErrorCapture();
  const std::string& message() const { return message_; }
  /// The first error's PETSc code (0: none).
  PetscErrorCode code() const { return code_; }
  /// Whether the first error is PETSc refusing its arguments or options (an unsupported or incompatible choice, a
  /// value out of range): the solver configuration is at fault, not the run.
  bool configurationError() const;

private:
  static PetscErrorCode handler(MPI_Comm, int, const char*, const char*, PetscErrorCode, PetscErrorType, const char*,
                                void*);
  std::string message_;
  PetscErrorCode code_ = 0;
};

}  // namespace fpdp::app
