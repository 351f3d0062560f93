#pragma once
// Stage 2 of a run (docs/architecture.md): where its files go. A run writes into DIR.partial and renames it to DIR
// when it succeeds, so that a failed run leaves no half-written DIR; a killed run leaves DIR.partial, which is never
// mistaken for a result and which `fpdp run --restart DIR` continues from its last checkpoint (app/Checkpoint).
#include <mpi.h>

#include <stdexcept>
#include <string>

namespace fpdp::app {

struct OutputDirectoryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Every fpdp output directory holds this file (the resolved case).
inline constexpr const char* kOutputMarker = "parameters.toml";

/// Checks that the output directory may be written (absent, empty, or an earlier fpdp output);
/// throws OutputDirectoryError otherwise. Creates nothing.
void checkOutputDirectory(const std::string& dir);

class RunOutputDirectory {
public:
  /// Collective. A new run: checks DIR, creates DIR.partial with the resolved case in it. A continued run
  /// (`continued`): keeps DIR.partial and removes only the temporary files the killed process left.
  RunOutputDirectory(MPI_Comm comm, int rank, std::string finalDir, const std::string& resolvedToml, bool continued);
  /// A run that did not publish leaves nothing behind, unless it was continued (its checkpoint stays).
  ~RunOutputDirectory();
  RunOutputDirectory(const RunOutputDirectory&) = delete;
  RunOutputDirectory& operator=(const RunOutputDirectory&) = delete;

  const std::string& workDir() const { return workDir_; }
  const std::string& finalDir() const { return finalDir_; }
  /// Collective: DIR.partial becomes DIR, without the checkpoint and the per-step field files that served the run.
  void publish();

private:
  MPI_Comm comm_;
  int rank_;
  std::string finalDir_, workDir_;
  bool continued_;
  bool published_ = false;
};

}  // namespace fpdp::app
