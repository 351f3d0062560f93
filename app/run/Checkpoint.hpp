#pragma once
// Checkpoint and restart of `fpdp run` (docs/output.md, "Checkpoint and restart"). io/CheckpointFile stores named
// arrays and texts in a sealed HDF5 file; this file gives the run-level ones their meaning and finds a run to
// continue. What each output class accumulates it saves itself (saveState/restoreState of Hdf5Output,
// PrivacyOutput, FunctionalsOutput); RunCase saves its own running figures.
//
// A run writes DIR.partial/checkpoint.h5 at every `output.checkpoint_every`-th output step (after that step's
// rows and fields are on disk). `fpdp run --restart DIR` reads it, checks it against the case (the resolved TOML,
// byte for byte), the rank count, the data file's and every carried-over file's content hash (CarriedFiles),
// truncates every CSV file to its size at the checkpoint, and continues: the outputs equal an uninterrupted run's bit
// for bit on the same number of ranks.
#include <petscvec.h>

#include <map>
#include <string>
#include <vector>

#include "io/CheckpointFile.hpp"
#include "io/ContentHash.hpp"
#include "meshes/DistributedBoxMesh.hpp"

namespace fpdp::app {

/// A checkpoint that cannot be used, or a run that cannot be continued: exit status 2.
using CheckpointError = io::CheckpointFileError;

constexpr const char* kCheckpointName = "checkpoint.h5";
constexpr int kCheckpointFormat = 4;  // /format/version: the meaning of the names (docs/output.md); 2: /exact/rows,
                                      // /tracing/rows, units and descriptions in /hdf5/replicated; 3: /files/* and
                                      // /inputs/data_file_sha256 (the content hashes a restart checks); 4:
                                      // /integrator/state_error_bound

/// The run an `fpdp run --restart DIR` continues: DIR (where the finished run goes) and DIR.partial.
struct RestartTarget {
  std::string finalDir, workDir, checkpoint;
};
/// DIR or DIR.partial; throws CheckpointError naming what is missing (no such run, a finished run, no checkpoint).
RestartTarget locateRestart(const std::string& dir);

/// Reads the checkpoint and checks its header: format version, step, time, rank count, case TOML present.
io::CheckpointData loadCheckpoint(const std::string& path);

/// The case of the checkpoint must be this run's: the resolved TOML (every default written out) byte for byte;
/// otherwise names the first line that differs.
void requireSameCase(const io::CheckpointData& ck, const std::string& resolvedToml, const std::string& caseSource);
/// The checkpoint's rank count must be this run's (the parallel LU and the reductions depend on it).
void requireSameRanks(const io::CheckpointData& ck, int ranks);

/// A distributed vector of `mesh` (global, `dof` components) gathered to rank 0 in natural (x fastest) order;
/// empty on the other ranks. Collective.
std::vector<double> gatherNatural(const meshes::DistributedBoxMesh& mesh, Vec v);
/// The inverse of gatherNatural: rank 0's values (in natural order) into the distributed vector v. Collective.
void scatterNatural(const meshes::DistributedBoxMesh& mesh, const std::vector<double>& values, Vec v);

/// The sizes of the CSV files in `workDir` (what was flushed at the checkpoint).
void saveCsvSizes(io::CheckpointData& ck, const std::string& workDir);

/// What a continued run carries over from DIR.partial, with SHA-256 content hashes, so that a restart proves it
/// unchanged: every regular file the run has written, but the checkpoint itself, temporary files and the files
/// rewritten whole at every output step (fpdp.pvd, fpdp.xmf). A table (*.csv) only grows: its size and the hash of
/// its bytes up to that size are recorded (the restart cuts it back there); any other file's size and hash. The
/// hashes are kept per file between checkpoints and continued, so a growing table is read once in all, a field file
/// once.
class CarriedFiles {
public:
  /// Records the files of `workDir` in `ck` (/files/names, /files/sizes, /files/sha256) and the CSV sizes
  /// (saveCsvSizes). Rank 0.
  void save(io::CheckpointData& ck, const std::string& workDir);

private:
  struct Entry {
    unsigned long long device = 0, inode = 0, size = 0;
    long long modified = 0;  // nanoseconds
    io::Sha256 hash;
  };
  std::map<std::string, Entry> known_;
};

/// Before a continued run writes anything: every file the checkpoint recorded (CarriedFiles) must be a regular file
/// (not a link), a table at least as long as recorded whose first bytes hash as recorded, any other file exactly as
/// recorded. Throws CheckpointError naming the file and what changed.
void requireCarriedFilesUnchanged(const io::CheckpointData& ck, const std::string& workDir);
/// The data file (data.file) must hash as it did when the checkpoint was written: a restart never mixes two datasets.
/// Throws CheckpointError naming the file.
void requireSameData(const io::CheckpointData& ck, const std::string& dataFile, const std::string& dataSha256);
/// The CSV paths a continued run appends to (io::CsvTable::setContinuedPaths); checks they exist and are at least
/// as long as at the checkpoint.
std::vector<std::string> continuedCsvPaths(const io::CheckpointData& ck, const std::string& workDir);
/// Truncates the CSV files to their sizes at the checkpoint (rows written after it are written again).
void truncateCsvFiles(const io::CheckpointData& ck, const std::string& workDir);
/// Fault injection for the tests (tests/app/test_restart.cpp): with FPDP_TEST_KILL_AFTER_CHECKPOINT=K in the
/// environment, every rank kills itself with SIGKILL right after the checkpoint of step K is written: a run
/// interrupted at a known step. Returns K or -1.
long killAfterCheckpointStep();
/// Fault injection for the tests (tests/app/test_output_directories.cpp): with FPDP_TEST_FAIL_AFTER_CHECKPOINT=K, the
/// run fails right after the checkpoint of step K as a full disk would (a write error). Returns K or -1.
long failAfterCheckpointStep();

/// Removes the temporary files (*.tmp) a killed process left in `workDir` (and in its fields/ and vtk/ folders).
void removeTemporaryFiles(const std::string& workDir);

}  // namespace fpdp::app
