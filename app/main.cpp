// fpdp: the command-line program. Parses the command line, reads and validates the case, and runs it.
// Exit status: 0 success, 1 run-time failure, 2 bad input (docs/parameters.md, `fpdp --help`).
#include <petscsys.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "app/case/CaseOverrides.hpp"
#include "app/case/CaseReader.hpp"
#include "app/run/Checkpoint.hpp"
#include "app/platform/ChildProcesses.hpp"
#include "app/commands/CommandFailure.hpp"
#include "app/platform/CommandLine.hpp"
#include "app/platform/HugePageHeap.hpp"
#include "app/commands/MemberDispatch.hpp"
#include "app/commands/NoiseStudy.hpp"
#include "app/platform/PetscConfiguration.hpp"
#include "app/case/ResourceEstimate.hpp"
#include "app/commands/RunCommand.hpp"
#include "app/commands/RunCase.hpp"
#include "app/plots/RunFigures.hpp"
#include "app/run/OutputDirectory.hpp"
#include "app/run/OutputLock.hpp"
#include "app/run/RunPlan.hpp"
#include "app/commands/SampleCase.hpp"
#include "app/commands/SweepCommand.hpp"
#include "app/commands/WorstCaseCommand.hpp"
#include "app/commands/ValidateCommand.hpp"
#include "meshes/PetscHandles.hpp"
#include "models/Dataset.hpp"

namespace {

using fpdp::app::outputDirectoryOf;
using fpdp::app::reportError;

/// This process's rank before MPI is initialised (from the launcher's environment), so that an input error found
/// before start-up is printed once under mpiexec.
int launcherRank() { return fpdp::app::launcherRank().value_or(0); }

/// A case file is untrusted: unless --output or --allow-outside says otherwise, its output.directory must be a relative
/// path that stays, lexically, below the directory it is resolved in (an output.directory = "../x" replaced another
/// run there). Throws InputError naming the key.
void requireOutputInside(const fpdp::app::CommandLine& cl, const fpdp::app::Case& c) {
  if (cl.output || cl.allowOutside || cl.restart) return;
  if (cl.command != "run" && cl.command != "sample") return;  // noise-study's default is its own name
  const std::filesystem::path written(c.output.directory);
  const std::filesystem::path normal = written.lexically_normal();
  const bool escapes = written.is_absolute() || written.has_root_name() || normal.empty() ||
                       (!normal.empty() && *normal.begin() == "..");
  if (!escapes) return;
  throw fpdp::app::InputError(c.sourcePath.string() + ": output.directory = \"" + c.output.directory +
                                  "\": leaves the directory it is resolved in (an absolute path or one that goes up "
                                  "with ..); allowed: a relative path below it; or give --output DIR, or "
                                  "--allow-outside to accept the case's choice",
                              "output.directory", "\"" + c.output.directory + "\"",
                              "a relative path below the working directory");
}

/// `fpdp sweep` and `fpdp worst-case`: the study, its members run by app/commands/MemberRuns.
int studyCommand(int argc, char** argv) {
  try {
    const std::string self = fpdp::app::selfExecutable(argv[0]);
    const bool sweep = std::string(argv[1]) == "sweep";
    const auto sweepOptions = sweep ? fpdp::app::parseSweepCommandLine(argc, argv) : fpdp::app::SweepOptions{};
    const auto worstOptions = sweep ? fpdp::app::WorstCaseOptions{} : fpdp::app::parseWorstCaseCommandLine(argc, argv);
    if (sweepOptions.study.help || worstOptions.study.help) {
      std::fputs(fpdp::app::helpText().c_str(), stdout);
      return 0;
    }
    return sweep ? fpdp::app::runSweep(sweepOptions, self) : fpdp::app::runWorstCase(worstOptions, self);
  } catch (...) {
    const auto failure = fpdp::app::describeFailure(std::current_exception(), nullptr, std::string(argv[1]) + " failed");
    std::fprintf(stderr, "fpdp: %s\n", failure.line().c_str());
    return failure.status;
  }
}

int fpdpMain(int argc, char** argv) {
  // `fpdp plot DIR` redraws a run's plots from its files; no MPI or PETSc.
  if (argc >= 2 && std::string(argv[1]) == "plot") return fpdp::app::plots::plotCommand(argc, argv);
  // `fpdp validate` runs the validation suite with child processes of this program; it starts no PETSc itself.
  if (argc >= 2 && std::string(argv[1]) == "validate") {
    try {
      const auto options = fpdp::app::parseValidateCommandLine(argc, argv);
      return fpdp::app::runValidation(options, fpdp::app::selfExecutable(argv[0]));
    } catch (const fpdp::app::UsageError& e) {
      std::fprintf(stderr, "fpdp: error: %s\n", e.what());
      return 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fpdp: validate failed: %s\n", e.what());
      return 1;
    }
  }
  // `fpdp sweep` and `fpdp worst-case` run their members as child processes (`fpdp run`); no PETSc here either.
  // Under mpiexec the members run in this program on groups of ranks instead (app/commands/MemberDispatch).
  if (argc >= 2 && (std::string(argv[1]) == "sweep" || std::string(argv[1]) == "worst-case"))
    return fpdp::app::studyLaunchedOnRanks() ? fpdp::app::runStudyOnRanks(argc, argv, studyCommand)
                                             : studyCommand(argc, argv);
  fpdp::app::CommandLine cl;
  try {
    cl = fpdp::app::parseCommandLine(argc, argv);
  } catch (const fpdp::app::UsageError& e) {
    std::fprintf(stderr, "fpdp: error: %s\n", e.what());
    return 2;
  }
  if (cl.command == "help") {
    std::fputs(fpdp::app::helpText().c_str(), stdout);
    return 0;
  }
  if (cl.command == "version") {
    std::printf("fpdp %s\n", FPDP_VERSION);
    return 0;
  }
  if (cl.command == "schema") {
    std::fputs(fpdp::app::parameterSchemaMarkdown().c_str(), stdout);
    return 0;
  }
  // The case is read and validated before MPI and PETSc start: bad input costs no start-up and creates nothing.
  fpdp::app::Case c;
  std::shared_ptr<const fpdp::io::CheckpointData> checkpoint;
  std::string restartDir;
  // One writer per output directory (app/run/OutputLock): taken by the process that becomes rank 0 before it looks
  // at DIR or DIR.partial, held until it ends.
  std::optional<fpdp::app::OutputLock> outputLock;
  const bool lockHolder = launcherRank() == 0;
  try {
    if (cl.restart) {
      // --restart: the checkpoint of DIR.partial, and its case (or CASE, which must resolve to the same).
      const auto target = fpdp::app::locateRestart(*cl.restart);
      if (lockHolder) outputLock.emplace(fpdp::app::normaliseOutputDirectory(target.finalDir));
      checkpoint = std::make_shared<const fpdp::io::CheckpointData>(fpdp::app::loadCheckpoint(target.checkpoint));
      const std::string source = cl.casePath.empty() ? "'" + target.workDir + "/parameters.toml'" : "'" + cl.casePath + "'";
      c = cl.casePath.empty() ? fpdp::app::readCase(target.workDir + "/parameters.toml") : fpdp::app::readCase(cl.casePath);
      fpdp::app::requireSameCase(*checkpoint, c.resolvedToml, source);
      // Restart proves its inputs: the data file, and every file carried over from DIR.partial (under the lock).
      fpdp::app::requireSameData(*checkpoint, c.data.file, c.data.fileSha256);
      if (lockHolder) fpdp::app::requireCarriedFilesUnchanged(*checkpoint, target.workDir);
      restartDir = target.finalDir;
    } else {
      c = cl.overrides.empty() ? fpdp::app::readCase(cl.casePath)
                               : fpdp::app::readOverriddenCase(fpdp::app::readCaseSource(cl.casePath), cl.overrides);
    }
    // Before anything is allocated for the case: a run that cannot fit in this machine's memory is refused.
    fpdp::app::requireMemoryFits(c, !cl.petscArgs.empty(),
                                 cl.command == "sample" ? std::optional<int>(cl.threads.value_or(c.sampler.threads))
                                                        : std::nullopt);
    if (cl.command == "run" || cl.command == "noise-study" || cl.command == "check")
      fpdp::app::requireOutputFits(c, cl.restart ? *cl.restart : cl.output.value_or(c.output.directory));
    requireOutputInside(cl, c);
    const bool writes = cl.command == "run" || cl.command == "noise-study" || cl.command == "sample";
    if (writes && !cl.restart && lockHolder)
      outputLock.emplace(fpdp::app::normaliseOutputDirectory(outputDirectoryOf(cl, c)));
  } catch (const fpdp::app::InputError&) {
    return reportError(launcherRank(), fpdp::app::describeFailure(std::current_exception(), nullptr));
  } catch (const fpdp::app::CheckpointError&) {
    return reportError(launcherRank(), fpdp::app::describeFailure(std::current_exception(), nullptr));
  } catch (const fpdp::app::OutputDirectoryError&) {
    return reportError(launcherRank(), fpdp::app::describeFailure(std::current_exception(), nullptr));
  }
  // The heap in transparent huge pages, sized for the case (app/platform/HugePageHeap.hpp): about 1.5 KiB per cell.
  std::size_t cells = 1;
  for (int a = 0; a < c.mesh.dim; ++a) cells *= static_cast<std::size_t>(c.mesh.cells[static_cast<std::size_t>(a)]);
  fpdp::app::reserveHugePageHeap(cells * 1536);
  // PETSc sees only its own options, never fpdp's.
  // PETSc would also read options from ./.petscrc and ./petscrc: files in the folder a shared case came in, which
  // could carry -log_view :FILE past the case's allow-list. fpdp reads options only from the command line, the case
  // and PETSC_OPTIONS.
  static char skipPetscrc[] = "-skip_petscrc";
  std::vector<char*> petscArgv{argv[0], skipPetscrc};
  for (auto& a : cl.petscArgs) petscArgv.push_back(a.data());
  petscArgv.push_back(nullptr);
  int petscArgc = static_cast<int>(petscArgv.size()) - 1;
  char** pargv = petscArgv.data();
  if (const std::string problem = fpdp::app::temporaryDirectoryProblem(); !problem.empty())
    return reportError(launcherRank(), "error", problem, 2);
  fpdp::app::preferSharedMemoryMpiTransport();
  fpdp::app::avoidSharedFilePointers();
  fpdp::app::LightSingletonStartup singleton;  // outlives PetscFinalize: it removes its directory afterwards
  if (PetscInitialize(&petscArgc, &pargv, nullptr, nullptr) != 0) {
    std::fprintf(stderr, "fpdp: error: PETSc could not be initialised\n");
    return 1;
  }
  singleton.releaseEnvironment();
  int status = fpdp::app::runCommand(cl, c, checkpoint, restartDir);
  // PETSc's -options_left report is fpdp's job (unusedPetscOptions), so it is not printed twice. PetscFinalize
  // writes what -log_view and similar options asked for: a failure there (a full disk, -log_view :/dev/full) is the
  // run's failure too, never exit status 0.
  const PetscErrorCode finalized = PetscFinalize();
  if (finalized != 0 && status == 0) status = reportError(launcherRank(), "run failed", "PETSc could not finish "
                                                          "(the output of a -log_view or similar option could not be written)", 1);
  if (status == 0 && (std::fflush(stdout) != 0 || std::ferror(stdout)))
    status = reportError(launcherRank(), "run failed", "cannot write the standard output", 1);
  return status;
}

}  // namespace

// Whatever the input, fpdp ends with one line and an exit status: an exception that no command caught (memory
// exhausted while reading a case, say) is reported here instead of aborting the process.
int main(int argc, char** argv) {
  try {
    return fpdpMain(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "fpdp: run failed: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fpdp: run failed: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "fpdp: run failed: unknown exception\n");
  }
  return 1;
}
