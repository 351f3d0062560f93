#pragma once
// `fpdp run`: build the models and the mesh from a Case, evolve p and q, and record divergences and fields.
//
// The story of a run (RunCase.cpp):
//   1. models:  L_D and L_D' from the loss, D and D' = D with one record replaced; the initial Gaussian.
//   2. mesh:    a DMDA box with the two densities interlaced.
//   3. solver:  the Scharfetter–Gummel Fokker–Planck operator, assembled once; PETSc TS (BDF2 by default).
//   4. output:  at every output step the divergences by quadrature (and, when a closed form exists, the exact
//               values and L1 errors), appended to divergence.csv / exact.csv and fpdp.h5.
//   5. summary: a table of the final state, conservation and positivity figures, timings.
// Output goes to DIR.partial and is renamed to DIR when the run succeeds, so a failed run leaves no half-written
// DIR (a killed run leaves DIR.partial, which is never mistaken for a result, and which `fpdp run --restart DIR`
// continues from its last checkpoint: app/Checkpoint).
#include <memory>
#include <string>

#include "app/Case.hpp"
#include "io/CheckpointFile.hpp"

namespace fpdp::app {

struct RunOptions {
  std::string outputDirectory;  // resolved: --output or case.output.directory
  bool quiet = false;
  /// --restart: the checkpoint to continue from (read and checked against the case by the caller; every rank holds
  /// it). The run continues in outputDirectory + ".partial" (app/Checkpoint).
  std::shared_ptr<const io::CheckpointData> resume;
};

/// Collective over PETSC_COMM_WORLD. Returns the process exit status (0 on success).
int runCase(const Case& c, const RunOptions& options);

/// Checks that the output directory may be written (absent, empty, or an earlier fpdp output);
/// throws OutputDirectoryError otherwise. Creates nothing.
void checkOutputDirectory(const std::string& dir);

struct OutputDirectoryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace fpdp::app
