#include "app/run/Checkpoint.hpp"

#include <petscdmda.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;

namespace fpdp::app {

namespace {
std::string stripSlash(std::string d) {
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d;
}
constexpr const char* kPartial = ".partial";
}  // namespace

RestartTarget locateRestart(const std::string& dirIn) {
  const std::string dir = stripSlash(dirIn);
  RestartTarget t;
  const std::string suffix = kPartial;
  if (dir.size() > suffix.size() && dir.compare(dir.size() - suffix.size(), suffix.size(), suffix) == 0) {
    t.workDir = dir;
    t.finalDir = dir.substr(0, dir.size() - suffix.size());
  } else {
    t.finalDir = dir;
    t.workDir = dir + suffix;
  }
  t.checkpoint = t.workDir + "/" + kCheckpointName;
  std::error_code ec;
  if (!fs::is_directory(t.workDir, ec)) {
    if (fs::exists(fs::path(t.finalDir) / "parameters.toml", ec))
      throw CheckpointError("--restart " + dirIn + ": the run in '" + t.finalDir + "' is finished (there is no '" +
                            t.workDir + "'); nothing to continue");
    throw CheckpointError("--restart " + dirIn + ": no interrupted run there (neither '" + t.workDir +
                          "' nor a finished '" + t.finalDir + "' exists)");
  }
  if (!fs::is_regular_file(t.checkpoint, ec))
    throw CheckpointError("--restart " + dirIn + ": '" + t.workDir + "' has no " + kCheckpointName +
                          " (the run stopped before its first checkpoint, or output.checkpoint_every = 0); run "
                          "the case again without --restart");
  return t;
}

io::CheckpointData loadCheckpoint(const std::string& path) {
  io::CheckpointData ck = io::readCheckpointFile(path);
  const long version = ck.integer("/format/version", 0, 1000000);
  if (version != kCheckpointFormat)
    ck.fail("/format/version", "format " + std::to_string(version) + ", this fpdp reads format " +
                                   std::to_string(kCheckpointFormat));
  ck.integer("/run/ranks", 1, 1 << 24);
  ck.integer("/run/step", 0, 1L << 52);
  ck.scalar("/run/time");
  ck.text("/case/toml");
  ck.text("/files/names");
  ck.text("/inputs/data_file_sha256");
  return ck;
}

void requireSameCase(const io::CheckpointData& ck, const std::string& resolvedToml, const std::string& caseSource) {
  const std::string& saved = ck.text("/case/toml");
  if (saved == resolvedToml) return;
  std::istringstream a(saved), b(resolvedToml);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ha = static_cast<bool>(std::getline(a, la)), hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) break;
    if (!ha || !hb || la != lb)
      throw CheckpointError("--restart: the case " + caseSource + " differs from the checkpoint's ('" + ck.source +
                            "', dataset /case/toml) at line " + std::to_string(line) + " of the resolved case: '" +
                            (hb ? lb : "<end>") + "' here, '" + (ha ? la : "<end>") +
                            "' in the checkpoint; a run continues only with its own case");
  }
  throw CheckpointError("--restart: the case " + caseSource + " differs from the checkpoint's ('" + ck.source +
                        "') in its line endings");
}

void requireSameRanks(const io::CheckpointData& ck, int ranks) {
  const long saved = ck.integer("/run/ranks", 1, 1 << 24);
  if (saved != ranks)
    throw CheckpointError("--restart: the checkpoint '" + ck.source + "' was written by a run on " +
                          std::to_string(saved) + " rank(s), this one has " + std::to_string(ranks) +
                          "; continue it on " + std::to_string(saved) +
                          " (the results are bit-identical only on the same number of ranks)");
}

namespace {
/// On one rank a DMDA numbers its cells in the natural order already: the array is the natural vector (building
/// the natural-order scatter cost 8 ms of a 256^2 run's step-0 checkpoint).
bool oneRank(const meshes::DistributedBoxMesh& mesh) {
  PetscMPIInt size;
  FPDP_PETSC(MPI_Comm_size(mesh.comm(), &size));
  return size == 1;
}
}  // namespace

std::vector<double> gatherNatural(const meshes::DistributedBoxMesh& mesh, Vec v) {
  if (oneRank(mesh)) return meshes::localValues(v);
  DM dm;
  FPDP_PETSC(VecGetDM(v, &dm));
  if (!dm) dm = mesh.dm();
  Vec natural, all;
  VecScatter toZero;
  FPDP_PETSC(DMDACreateNaturalVector(dm, &natural));
  FPDP_PETSC(DMDAGlobalToNaturalBegin(dm, v, INSERT_VALUES, natural));
  FPDP_PETSC(DMDAGlobalToNaturalEnd(dm, v, INSERT_VALUES, natural));
  FPDP_PETSC(VecScatterCreateToZero(natural, &toZero, &all));
  FPDP_PETSC(VecScatterBegin(toZero, natural, all, INSERT_VALUES, SCATTER_FORWARD));
  FPDP_PETSC(VecScatterEnd(toZero, natural, all, INSERT_VALUES, SCATTER_FORWARD));
  std::vector<double> out = meshes::localValues(all);
  FPDP_PETSC(VecScatterDestroy(&toZero));
  FPDP_PETSC(VecDestroy(&all));
  FPDP_PETSC(VecDestroy(&natural));
  return out;
}

void scatterNatural(const meshes::DistributedBoxMesh& mesh, const std::vector<double>& values, Vec v) {
  if (oneRank(mesh)) {
    PetscInt n;
    FPDP_PETSC(VecGetLocalSize(v, &n));
    if (static_cast<std::size_t>(n) != values.size()) throw std::logic_error("scatterNatural: wrong number of values");
    PetscScalar* a;
    FPDP_PETSC(VecGetArray(v, &a));
    std::copy(values.begin(), values.end(), a);
    FPDP_PETSC(VecRestoreArray(v, &a));
    return;
  }
  DM dm;
  FPDP_PETSC(VecGetDM(v, &dm));
  if (!dm) dm = mesh.dm();
  Vec natural, all;
  VecScatter toZero;
  FPDP_PETSC(DMDACreateNaturalVector(dm, &natural));
  FPDP_PETSC(VecScatterCreateToZero(natural, &toZero, &all));
  PetscInt n;
  FPDP_PETSC(VecGetLocalSize(all, &n));
  int ok = static_cast<std::size_t>(n) == values.size() ? 1 : 0;
  FPDP_PETSC(MPI_Bcast(&ok, 1, MPI_INT, 0, mesh.comm()));
  if (!ok) {
    FPDP_PETSC(VecScatterDestroy(&toZero));
    FPDP_PETSC(VecDestroy(&all));
    FPDP_PETSC(VecDestroy(&natural));
    throw std::logic_error("scatterNatural: wrong number of values");
  }
  PetscScalar* a;
  FPDP_PETSC(VecGetArray(all, &a));
  std::copy(values.begin(), values.begin() + n, a);
  FPDP_PETSC(VecRestoreArray(all, &a));
  FPDP_PETSC(VecScatterBegin(toZero, all, natural, INSERT_VALUES, SCATTER_REVERSE));
  FPDP_PETSC(VecScatterEnd(toZero, all, natural, INSERT_VALUES, SCATTER_REVERSE));
  FPDP_PETSC(DMDANaturalToGlobalBegin(dm, natural, INSERT_VALUES, v));
  FPDP_PETSC(DMDANaturalToGlobalEnd(dm, natural, INSERT_VALUES, v));
  FPDP_PETSC(VecScatterDestroy(&toZero));
  FPDP_PETSC(VecDestroy(&all));
  FPDP_PETSC(VecDestroy(&natural));
}

void saveCsvSizes(io::CheckpointData& ck, const std::string& workDir) {
  std::string names;
  std::vector<double> sizes;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(workDir))
    if (e.is_regular_file() && e.path().extension() == ".csv") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    names += f.filename().string() + "\n";
    sizes.push_back(static_cast<double>(fs::file_size(f)));
  }
  ck.putText("/csv/names", names);
  ck.put("/csv/sizes", sizes);
}

namespace {

/// Rewritten whole at every output step from the checkpoint's state: a later copy differs from the checkpoint's
/// legitimately, and the continued run replaces it.
bool rewrittenEveryStep(const std::string& name) { return name == "fpdp.pvd" || name == "fpdp.xmf"; }

bool isTable(const std::string& name) { return name.size() > 4 && name.compare(name.size() - 4, 4, ".csv") == 0; }

/// The files CarriedFiles records, relative to workDir, sorted.
std::vector<std::string> carriedNames(const std::string& workDir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(workDir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec) || it->is_symlink(ec)) continue;
    const std::string rel = it->path().lexically_relative(workDir).string();
    const std::string name = it->path().filename().string();
    if (name == kCheckpointName || it->path().extension() == ".tmp" || rewrittenEveryStep(rel)) continue;
    names.push_back(rel);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

void CarriedFiles::save(io::CheckpointData& ck, const std::string& workDir) {
  saveCsvSizes(ck, workDir);
  std::string names;
  std::vector<double> sizes;
  std::string hashes;
  std::map<std::string, Entry> now;
  for (const std::string& rel : carriedNames(workDir)) {
    const fs::path path = fs::path(workDir) / rel;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    Entry e;
    e.device = st.st_dev;
    e.inode = st.st_ino;
    e.size = static_cast<unsigned long long>(st.st_size);
    e.modified = static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
    const auto it = known_.find(rel);
    const bool same = it != known_.end() && it->second.device == e.device && it->second.inode == e.inode;
    if (same && it->second.size == e.size && it->second.modified == e.modified) {
      e.hash = it->second.hash;  // unchanged since the last checkpoint
    } else if (same && isTable(rel) && it->second.size <= e.size) {
      e.hash = it->second.hash;  // a table this run only appended to: hash what was appended
      io::hashFilePrefix(path, e.size, e.hash);
    } else {
      io::hashFilePrefix(path, e.size, e.hash);
    }
    names += rel + "\n";
    sizes.push_back(static_cast<double>(e.size));
    hashes += e.hash.hex() + "\n";
    now.emplace(rel, std::move(e));
  }
  known_ = std::move(now);
  ck.putText("/files/names", names);
  ck.put("/files/sizes", sizes);
  ck.putText("/files/sha256", hashes);
}

void requireCarriedFilesUnchanged(const io::CheckpointData& ck, const std::string& workDir) {
  std::vector<std::string> names, hashes;
  std::istringstream n(ck.text("/files/names")), h(ck.text("/files/sha256"));
  for (std::string line; std::getline(n, line);) names.push_back(line);
  for (std::string line; std::getline(h, line);) hashes.push_back(line);
  const auto& sizes = ck.array("/files/sizes", names.size());
  if (hashes.size() != names.size()) ck.fail("/files/sha256", "not one hash per file of /files/names");
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& rel = names[i];
    const fs::path relative(rel);
    if (rel.empty() || relative.is_absolute() || rel.find("..") != std::string::npos)
      ck.fail("/files/names", "'" + rel + "' is not a file of the output directory");
    const double s = sizes[i];
    if (!(s >= 0 && s < 1e15 && s == std::floor(s))) ck.fail("/files/sizes", "not a file size: " + std::to_string(s));
    const auto size = static_cast<std::uint64_t>(s);
    const fs::path path = fs::path(workDir) / relative;
    const auto changed = [&](const std::string& what) {
      throw CheckpointError("--restart: '" + path.string() + "' " + what + " since the checkpoint ('" + ck.source +
                            "'); a run continues only with the files it wrote itself: remove " + workDir +
                            " and run the case again");
    };
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) changed("is missing (it existed");
    if (S_ISLNK(st.st_mode)) changed("has been replaced by a symbolic link");
    if (!S_ISREG(st.st_mode)) changed("has been replaced by a file that is not a regular file");
    if (st.st_nlink > 1) changed("has been given another name (a hard link)");
    const auto actual = static_cast<std::uint64_t>(st.st_size);
    if (isTable(rel) ? actual < size : actual != size)
      changed("has " + std::to_string(actual) + " bytes, " + std::to_string(size) + " at the checkpoint: it changed");
    io::Sha256 hash;
    try {
      io::hashFilePrefix(path, size, hash);
    } catch (const std::exception& e) {
      changed(std::string("cannot be read (") + e.what() + ")");
    }
    if (hash.hex() != hashes[i])
      changed(std::string("has changed") + (isTable(rel) ? " in its first " + std::to_string(size) + " bytes" : "") +
              " (SHA-256 " + hash.hex().substr(0, 16) + "..., " + hashes[i].substr(0, 16) + "... at the checkpoint)");
  }
}

void requireSameData(const io::CheckpointData& ck, const std::string& dataFile, const std::string& dataSha256) {
  const std::string& saved = ck.text("/inputs/data_file_sha256");
  if (saved == dataSha256) return;
  throw CheckpointError("--restart: the data file '" + dataFile + "' has changed since the checkpoint ('" + ck.source +
                        "'; SHA-256 " + dataSha256.substr(0, 16) + "... now, " + saved.substr(0, 16) +
                        "... then); a run continues only with the data it started with: restore the file, or run the "
                        "case again without --restart");
}

namespace {
std::vector<std::pair<std::string, std::uintmax_t>> csvFiles(const io::CheckpointData& ck, const std::string& workDir) {
  std::vector<std::string> names;
  std::istringstream in(ck.text("/csv/names"));
  for (std::string n; std::getline(in, n);) {
    if (n.empty() || n.find('/') != std::string::npos || n.size() < 5 || n.substr(n.size() - 4) != ".csv")
      ck.fail("/csv/names", "'" + n + "' is not the name of a CSV file in the output directory");
    names.push_back(n);
  }
  const auto& sizes = ck.array("/csv/sizes", names.size());
  std::vector<std::pair<std::string, std::uintmax_t>> out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const double s = sizes[i];
    if (!(s >= 0 && s < 1e15 && s == std::floor(s))) ck.fail("/csv/sizes", "not a file size: " + std::to_string(s));
    const std::string path = workDir + "/" + names[i];
    std::error_code ec;
    const auto actual = fs::file_size(path, ec);
    if (ec) ck.fail("/csv/names", "the output file '" + path + "' of the checkpoint is missing");
    if (actual < static_cast<std::uintmax_t>(s))
      ck.fail("/csv/sizes", "'" + path + "' has " + std::to_string(actual) + " bytes, fewer than the " +
                                std::to_string(static_cast<std::uintmax_t>(s)) + " it had at the checkpoint");
    out.emplace_back(path, static_cast<std::uintmax_t>(s));
  }
  return out;
}
}  // namespace

std::vector<std::string> continuedCsvPaths(const io::CheckpointData& ck, const std::string& workDir) {
  std::vector<std::string> out;
  for (const auto& [path, size] : csvFiles(ck, workDir)) out.push_back(path);
  return out;
}

void truncateCsvFiles(const io::CheckpointData& ck, const std::string& workDir) {
  for (const auto& [path, size] : csvFiles(ck, workDir)) fs::resize_file(path, size);
}

namespace {
long stepFromEnvironment(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return -1L;
  char* end = nullptr;
  const long k = std::strtol(v, &end, 10);
  return (*end == '\0' && k >= 0) ? k : -1L;
}
}  // namespace

long killAfterCheckpointStep() {
  static const long step = stepFromEnvironment("FPDP_TEST_KILL_AFTER_CHECKPOINT");
  return step;
}

long failAfterCheckpointStep() {
  static const long step = stepFromEnvironment("FPDP_TEST_FAIL_AFTER_CHECKPOINT");
  return step;
}

void removeTemporaryFiles(const std::string& workDir) {
  std::error_code ec;
  for (const auto& sub : {std::string(), std::string("/fields"), std::string("/vtk")}) {
    if (!fs::is_directory(workDir + sub, ec)) continue;
    for (const auto& e : fs::directory_iterator(workDir + sub, ec))
      if (e.path().extension() == ".tmp") fs::remove(e.path(), ec);
  }
}

}  // namespace fpdp::app
