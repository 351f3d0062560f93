#include "app/run/OutputDirectory.hpp"

#include <fcntl.h>
#include <stdio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "app/run/Checkpoint.hpp"
#include "app/run/Collective.hpp"
#include "io/Hdf5Output.hpp"
#include "io/OutputFile.hpp"
#include "models/InputFile.hpp"

namespace fs = std::filesystem;

namespace fpdp::app {

bool hasOwnerMark(const std::filesystem::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kOwnerMark, ec);
}

void writeOwnerMark(const std::filesystem::path& dir) {
  try {
    io::writeWholeFile(dir / kOwnerMark, "This directory was made by fpdp; fpdp may replace it with a new run's output.\n");
  } catch (const std::runtime_error& e) {
    throw OutputDirectoryError(e.what());
  }
}

namespace {

/// Every file below `dir` (not the directories), relative to it, sorted; links are listed, never followed.
std::vector<std::string> filesBelow(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it->is_directory(ec) && !it->is_symlink(ec)) continue;
    out.push_back(it->path().lexically_relative(dir).string());  // a link is named, never followed
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::set<std::string> manifestOf(const fs::path& dir, bool& present) {
  std::set<std::string> names;
  const fs::path file = dir / kManifest;
  std::error_code ec;
  present = fs::is_regular_file(fs::symlink_status(file, ec));
  if (!present) return names;
  std::string text;
  try {
    text = models::readInputFile(file, std::size_t{64} << 20);
  } catch (const models::InputFileError& e) {
    throw OutputDirectoryError("cannot read '" + file.string() + "': " + e.what());
  }
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) names.insert(line);
  return names;
}

}  // namespace

void writeManifest(const fs::path& dir) {
  std::string text;
  for (const std::string& name : filesBelow(dir))
    if (name != kManifest) text += name + "\n";
  text += std::string(kManifest) + "\n";
  try {
    io::writeWholeFile(dir / kManifest, text);
  } catch (const std::runtime_error& e) {
    throw OutputDirectoryError(e.what());
  }
}

void addToManifest(const fs::path& dir, const std::vector<std::string>& names) {
  bool present = false;
  std::set<std::string> listed = manifestOf(dir, present);
  if (!present) return;  // an earlier version's output: every file counts as fpdp's
  for (const auto& n : names) listed.insert(n);
  std::string text;
  for (const auto& n : listed) text += n + "\n";
  try {
    io::writeWholeFile(dir / kManifest, text);
  } catch (const std::runtime_error& e) {
    throw OutputDirectoryError(e.what());
  }
}

std::vector<std::string> filesNotInManifest(const fs::path& dir) {
  bool present = false;
  const std::set<std::string> listed = manifestOf(dir, present);
  std::vector<std::string> others;
  if (!present) return others;
  for (const std::string& name : filesBelow(dir))
    if (!listed.count(name) && name != kManifest) others.push_back(name);
  return others;
}

namespace {

/// `inner` is `outer` or lies inside it (both made absolute and free of links where they exist).
bool contains(const fs::path& outer, const fs::path& inner) {
  std::error_code ec;
  const fs::path o = fs::weakly_canonical(fs::absolute(outer, ec), ec);
  const fs::path i = fs::weakly_canonical(fs::absolute(inner, ec), ec);
  auto oi = o.begin(), ii = i.begin();
  for (; oi != o.end() && ii != i.end(); ++oi, ++ii)
    if (oi->empty()) break;
    else if (*oi != *ii) return false;
  return oi == o.end() || oi->empty();
}

}  // namespace

/// A new run's DIR.partial: absent, or fpdp's own leftovers without a checkpoint (then removed).
void removeStalePartial(const fs::path& work, const std::string& finalDir) {
  std::error_code ec;
  const auto status = fs::symlink_status(work, ec);
  if (!fs::exists(status)) return;
  // A run killed between making DIR.partial and writing its mark left it empty, or holding only the mark's temporary
  // file: nothing of anyone's is in it (a directory with anything else stays, and rmdir removes only an empty one).
  if (fs::is_directory(status)) {
    const std::string markInProgress = std::string(kOwnerMark) + ".tmp";
    bool onlyMarkInProgress = true;
    for (auto it = fs::directory_iterator(work, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
      if (it->path().filename() != markInProgress || !it->is_regular_file(ec) || it->is_symlink(ec))
        onlyMarkInProgress = false;
    if (!ec && onlyMarkInProgress) {
      fs::remove(work / markInProgress, ec);
      if (fs::remove(work, ec)) return;
    }
  }
  if (fs::is_symlink(fs::symlink_status(work, ec)) || !fs::is_directory(work, ec) || !hasOwnerMark(work))
    throw OutputDirectoryError("'" + work.string() + "' exists and was not made by fpdp (no " + kOwnerMark +
                               "); remove or rename it, or choose another --output");
  if (fs::exists(work / kCheckpointName, ec))
    throw OutputDirectoryError("'" + work.string() + "' holds an interrupted run with a checkpoint: continue it with "
                               "'fpdp run --restart " + finalDir + "', or remove '" + work.string() +
                               "' to start again");
  fs::remove_all(work);
}

std::string normaliseOutputDirectory(const std::string& dir) {
  if (dir.empty()) throw OutputDirectoryError("the output directory is empty; give --output DIR");
  fs::path p = fs::path(dir).lexically_normal();
  if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();  // "out/" -> "out"
  const std::string name = p.filename().string();
  if (name.empty() || name == "." || name == ".." || p == p.root_path())
    throw OutputDirectoryError("output directory '" + dir +
                               "' names no directory of its own (it is the current, a parent or the root "
                               "directory); give a new or an earlier fpdp output directory, e.g. --output out");
  std::error_code ec;
  if (contains(p, fs::current_path(ec)))
    throw OutputDirectoryError("output directory '" + dir +
                               "' contains the current directory; replacing it would remove the directory fpdp "
                               "runs in; choose another --output");
  return p.string();
}

void checkOutputDirectory(const std::string& dir) {
  const fs::path p(normaliseOutputDirectory(dir));
  std::error_code ec;
  const auto status = fs::symlink_status(p, ec);
  if (!fs::exists(status)) return;
  if (fs::is_symlink(status))
    throw OutputDirectoryError("output directory '" + dir + "' is a symbolic link; give the directory itself");
  if (!fs::is_directory(status))
    throw OutputDirectoryError("output directory '" + dir + "' exists and is not a directory");
  if (fs::is_empty(p, ec)) return;
  if (hasOwnerMark(p)) {
    const auto others = filesNotInManifest(p);
    if (others.empty()) return;
    std::string list;
    for (std::size_t i = 0; i < others.size() && i < 3; ++i) list += (i ? ", " : "") + others[i];
    if (others.size() > 3) list += " and " + std::to_string(others.size() - 3) + " more";
    throw OutputDirectoryError("output directory '" + dir + "' holds " + std::to_string(others.size()) +
                               " file(s) fpdp did not write (" + list + "; its " + kManifest + " lists what fpdp "
                               "wrote): fpdp replaces only its own files; move them away or choose another --output");
  }
  if (fs::exists(p / kOutputMarker, ec))
    throw OutputDirectoryError("output directory '" + dir + "' exists and is not an fpdp output fpdp may replace (it "
                               "has a " + kOutputMarker + " but not fpdp's mark " + kOwnerMark +
                               ": an earlier version's output or someone else's files); remove it or choose another "
                               "--output");
  throw OutputDirectoryError("output directory '" + dir + "' exists, is not empty and is not an fpdp output (no " +
                             kOwnerMark + "); choose another --output");
}

void putInPlace(const std::string& work, const std::string& finalDir) {
  std::error_code ec;
  writeManifest(work);             // what a later run may remove with it
  checkOutputDirectory(finalDir);  // still absent, empty or fpdp's own
  if (!fs::exists(fs::symlink_status(finalDir, ec))) {
    if (::rename(work.c_str(), finalDir.c_str()) != 0)
      throw OutputDirectoryError("cannot rename '" + work + "' to '" + finalDir + "': " + std::strerror(errno));
    return;
  }
  if (::renameat2(AT_FDCWD, work.c_str(), AT_FDCWD, finalDir.c_str(), RENAME_EXCHANGE) != 0)
    throw OutputDirectoryError("cannot put '" + work + "' in the place of '" + finalDir + "': " + std::strerror(errno));
  // `work` now holds the earlier output, which was empty or fpdp's own.
  if (fs::is_empty(work, ec) || hasOwnerMark(work)) fs::remove_all(work, ec);
}

RunOutputDirectory::RunOutputDirectory(MPI_Comm comm, int rank, const std::string& finalDir,
                                       const std::string& resolvedToml, bool continued)
    : comm_(comm), rank_(rank), keep_(continued) {
  onRankZero<OutputDirectoryError>(comm_, rank_, [&] {
    finalDir_ = normaliseOutputDirectory(finalDir);
    workDir_ = finalDir_ + ".partial";
    if (continued) {  // continue in the interrupted run's directory (app/run/Checkpoint)
      removeTemporaryFiles(workDir_);
      return;
    }
    checkOutputDirectory(finalDir_);
    removeStalePartial(workDir_, finalDir_);
    fs::create_directories(workDir_);
    writeOwnerMark(workDir_);
    io::writeWholeFile(workDir_ + "/" + kOutputMarker, resolvedToml);
  });
  // Every rank writes its part of fpdp.h5 under the same names.
  if (rank_ != 0) {
    finalDir_ = normaliseOutputDirectory(finalDir);
    workDir_ = finalDir_ + ".partial";
  }
}

bool RunOutputDirectory::holdsCheckpoint() const {
  std::error_code ec;
  return rank_ == 0 && fs::is_regular_file(fs::path(workDir_) / kCheckpointName, ec);
}

RunOutputDirectory::~RunOutputDirectory() {
  std::error_code ec;
  if (!published_ && rank_ == 0 && !keep_ && hasOwnerMark(workDir_)) fs::remove_all(workDir_, ec);
}

void RunOutputDirectory::publish() {
  onRankZero<OutputDirectoryError>(comm_, rank_, [&] {
    std::error_code ec;
    // What served only the run goes first: a kill after the exchange leaves a finished-looking DIR without them.
    fs::remove(workDir_ + "/" + kCheckpointName, ec);
    io::Hdf5Output::removeStepFiles(workDir_);
    if (!hasOwnerMark(workDir_)) writeOwnerMark(workDir_);  // a run continued from an older DIR.partial
    putInPlace(workDir_, finalDir_);
  });
  published_ = true;
}

}  // namespace fpdp::app
