#pragma once
// Stage 2 of a run (docs/architecture.md): where its files go, and what fpdp may delete (docs/faults.md, "Output
// directories"). A run writes into DIR.partial and puts it in DIR's place when it succeeds, so a failed run leaves
// no half-written DIR; a killed run leaves DIR.partial, which is never mistaken for a result and which
// `fpdp run --restart DIR` continues from its last checkpoint (app/run/Checkpoint).
//
// fpdp deletes or replaces only directories it made: each holds the owner mark file kOwnerMark. An existing DIR is
// replaced only if it is empty or holds the mark, by an atomic exchange with DIR.partial (renameat2
// RENAME_EXCHANGE), so that at every moment DIR is either the old output or the new one. An existing DIR.partial
// without the mark, or one that holds an interrupted run's checkpoint, is never removed by a new run.
#include <mpi.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace fpdp::app {

struct OutputDirectoryError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Every fpdp output directory holds this file (the resolved case).
inline constexpr const char* kOutputMarker = "parameters.toml";
/// fpdp's mark on a directory it made (a finished DIR, a DIR.partial): only such a directory is ever replaced.
inline constexpr const char* kOwnerMark = ".fpdp-output";

/// The list of every file fpdp wrote into a finished directory, one path (relative to it) a line: what a later run
/// may remove when it replaces the directory. A file not in it is someone else's, and the replacement is refused.
inline constexpr const char* kManifest = ".fpdp-manifest";

/// Whether `dir` holds fpdp's owner mark; writeOwnerMark puts it there.
bool hasOwnerMark(const std::filesystem::path& dir);
void writeOwnerMark(const std::filesystem::path& dir);

/// Writes the manifest of `dir`: every file below it (a partial directory, which only fpdp writes, just before it is
/// put in place). addToManifest adds the files a later fpdp command wrote into a finished directory (fpdp plot's PNGs,
/// a sample's tables). filesNotInManifest lists the files below `dir` its manifest does not name (none when it has no
/// manifest: the output of an fpdp version before manifests).
void writeManifest(const std::filesystem::path& dir);
void addToManifest(const std::filesystem::path& dir, const std::vector<std::string>& names);
std::vector<std::string> filesNotInManifest(const std::filesystem::path& dir);

/// A new run's partial directory `work` (of `finalDir`): absent, or fpdp's own leftovers without a checkpoint, which
/// are removed; anything else (not fpdp's, a link, an interrupted run's checkpoint) throws OutputDirectoryError.
void removeStalePartial(const std::filesystem::path& work, const std::string& finalDir);

/// Puts the finished directory `work` in the place of `finalDir` (absent, empty or fpdp's own, checked again) by an
/// atomic exchange, then removes what was there: at every moment finalDir is the old output or the new one.
void putInPlace(const std::string& work, const std::string& finalDir);

/// The output directory as written, without trailing separators and "." components; throws OutputDirectoryError for
/// a path that names no directory of its own to replace (empty, "/", ".", "..", a path ending in "..") or that
/// contains the working directory.
std::string normaliseOutputDirectory(const std::string& dir);

/// Checks that the output directory may be written (absent, empty, or an fpdp output with the owner mark);
/// throws OutputDirectoryError otherwise. Creates nothing.
void checkOutputDirectory(const std::string& dir);

class RunOutputDirectory {
public:
  /// Collective. A new run: checks DIR and DIR.partial, creates DIR.partial with the owner mark and the resolved
  /// case. A continued run (`continued`): keeps DIR.partial and removes only the temporary files the killed process
  /// left.
  RunOutputDirectory(MPI_Comm comm, int rank, const std::string& finalDir, const std::string& resolvedToml,
                     bool continued);
  /// A run that did not publish leaves nothing behind, unless it was continued or keepForRestart() was called (its
  /// checkpoint stays).
  ~RunOutputDirectory();
  RunOutputDirectory(const RunOutputDirectory&) = delete;
  RunOutputDirectory& operator=(const RunOutputDirectory&) = delete;

  const std::string& workDir() const { return workDir_; }
  const std::string& finalDir() const { return finalDir_; }
  /// A failure the user can mend (a full disk, a lost permission): DIR.partial and its last checkpoint stay, so that
  /// `fpdp run --restart DIR` continues once it is mended.
  void keepForRestart() { keep_ = true; }
  /// Whether DIR.partial holds a checkpoint a restart can continue from (rank 0; false elsewhere).
  bool holdsCheckpoint() const;
  /// Collective: the checkpoint and the per-step field files that served the run are removed from DIR.partial, which
  /// then takes DIR's place (the earlier fpdp output there, if any, is removed after the exchange).
  void publish();

private:
  MPI_Comm comm_;
  int rank_;
  std::string finalDir_, workDir_;
  bool keep_;
  bool published_ = false;
};

}  // namespace fpdp::app
