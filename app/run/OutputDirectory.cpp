#include "app/run/OutputDirectory.hpp"

#include <filesystem>
#include <fstream>

#include "app/Checkpoint.hpp"
#include "app/run/Collective.hpp"
#include "io/Hdf5Output.hpp"

namespace fs = std::filesystem;

namespace fpdp::app {

void checkOutputDirectory(const std::string& dir) {
  const fs::path p(dir);
  std::error_code ec;
  if (!fs::exists(p, ec)) return;
  if (!fs::is_directory(p, ec))
    throw OutputDirectoryError("output directory '" + dir + "' exists and is not a directory");
  if (fs::is_empty(p, ec) || fs::exists(p / kOutputMarker, ec)) return;
  throw OutputDirectoryError("output directory '" + dir +
                             "' exists, is not empty and is not an fpdp output (no " + kOutputMarker +
                             "); choose another --output");
}

RunOutputDirectory::RunOutputDirectory(MPI_Comm comm, int rank, std::string finalDir, const std::string& resolvedToml,
                                       bool continued)
    : comm_(comm), rank_(rank), finalDir_(std::move(finalDir)), workDir_(finalDir_ + ".partial"), continued_(continued) {
  onRankZero<OutputDirectoryError>(comm_, rank_, [&] {
    if (continued_) {  // continue in the interrupted run's directory (app/Checkpoint)
      removeTemporaryFiles(workDir_);
      return;
    }
    checkOutputDirectory(finalDir_);
    fs::remove_all(workDir_);
    fs::create_directories(workDir_);
    std::ofstream(workDir_ + "/" + kOutputMarker) << resolvedToml;
  });
}

RunOutputDirectory::~RunOutputDirectory() {
  std::error_code ec;
  if (!published_ && rank_ == 0 && !continued_) fs::remove_all(workDir_, ec);
}

void RunOutputDirectory::publish() {
  onRankZero<OutputDirectoryError>(comm_, rank_, [&] {
    std::error_code ec;
    fs::remove_all(finalDir_, ec);  // checked above to be absent, empty or an earlier fpdp output
    fs::rename(workDir_, finalDir_);
    // The checkpoint and the per-step field files served the run; a finished run is fpdp.h5 and the rest.
    fs::remove(finalDir_ + "/" + kCheckpointName, ec);
    io::Hdf5Output::removeStepFiles(finalDir_);
  });
  published_ = true;
}

}  // namespace fpdp::app
