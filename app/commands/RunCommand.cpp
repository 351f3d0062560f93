#include "app/commands/RunCommand.hpp"

#include <petscsys.h>

#include <cstdio>
#include <new>

#include "app/case/CaseReader.hpp"
#include "app/run/Checkpoint.hpp"
#include "app/commands/NoiseStudy.hpp"
#include "app/platform/PetscConfiguration.hpp"
#include "app/commands/RunCase.hpp"
#include "app/commands/SampleCase.hpp"
#include "app/run/OutputDirectory.hpp"
#include "app/run/RunPlan.hpp"
#include "app/run/WholeFieldRun.hpp"
#include "meshes/PetscHandles.hpp"

namespace fpdp::app {

int reportError(int rank, const CommandFailure& failure) {
  if (rank == 0) std::fprintf(stderr, "fpdp: %s\n", failure.line().c_str());
  return failure.status;
}

int reportError(int rank, const std::string& kind, const std::string& message, int status) {
  return reportError(rank, CommandFailure{status, kind, message});
}

std::string outputDirectoryOf(const CommandLine& cl, const Case& c) {
  if (cl.output) return *cl.output;
  if (cl.command == "noise-study") return c.name + "-noise-study";
  return c.output.directory;
}

int runCommand(const CommandLine& cl, const Case& c, std::shared_ptr<const io::CheckpointData> checkpoint,
               const std::string& restartDir) {
  int rank = 0;
  MPI_Comm_rank(PETSC_COMM_WORLD, &rank);
  // PETSc's errors are recorded, not printed as traces: a failure ends in one line (below).
  PetscErrorCapture petscErrors;
  try {
    refuseForbiddenOptions();
    insertCaseOptions(c.solver);
    validateSolverTypes(c);
    if (cl.command == "check" && c.mesh.dim > 3) {
      checkWholeFieldCase(c, PETSC_COMM_WORLD);
      if (rank == 0) std::printf("%s: valid case '%s' (%d-D, %zu records)\n", cl.casePath.c_str(), c.name.c_str(),
                                 c.mesh.dim, c.data.records.size());
      return 0;
    }
    if (c.mesh.dim > 3 && cl.command != "run" && cl.command != "sample")
      throw InputError(cl.casePath + ": mesh.lower has " + std::to_string(c.mesh.dim) + " entries: `fpdp " +
                           cl.command + "` takes cases of d <= 3; a case of d = 4..6 runs with `fpdp run` (and `fpdp "
                           "check`, `fpdp sample`)",
                       "mesh.lower", std::to_string(c.mesh.dim) + " entries", "1 to 3 entries for fpdp " + cl.command);
    if (cl.command == "check") {
      // Everything the run builds before its first step (models, mesh, discretisation, the integrator with the
      // PETSc options), so that check refuses what run would refuse; nothing is written.
      const RunPlan plan(c, PETSC_COMM_WORLD, nullptr);
      if (plan.evolution) {
        auto u = plan.mesh.createVector();
        plan.disc.setInitialState(u, plan.representation);
        plan.evolution->setUp(u);
      }
      if (rank == 0) std::printf("%s: valid case '%s' (%d-D, %zu records)\n", cl.casePath.c_str(), c.name.c_str(),
                                 c.mesh.dim, c.data.records.size());
      return 0;
    }
    RunOptions options;
    options.outputDirectory = outputDirectoryOf(cl, c);
    options.quiet = cl.quiet;
    if (cl.command == "sample") {
      SampleOptions sample;
      sample.outputDirectory = options.outputDirectory;
      sample.quiet = cl.quiet;
      sample.particles = cl.particles;
      if (cl.seed) sample.seed = static_cast<std::uint64_t>(*cl.seed);
      sample.threads = cl.threads;
      return sampleCase(c, sample);
    }
    if (cl.command == "noise-study") return runNoiseStudy(c, options);
    if (checkpoint) {
      checkOutputDirectory(restartDir);  // the finished run replaces DIR: only an earlier fpdp output may be there
      options.outputDirectory = restartDir;
      options.resume = std::move(checkpoint);
    } else {
      checkOutputDirectory(options.outputDirectory);
    }
    return runCase(c, options);
  } catch (...) {
    return reportError(rank, describeFailure(std::current_exception(), &petscErrors));
  }
}

}  // namespace fpdp::app
