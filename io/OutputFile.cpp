#include "io/OutputFile.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "io/WriteFailure.hpp"

namespace fpdp::io {

namespace fs = std::filesystem;

namespace {

std::string kindOfMode(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a regular file";
}

[[noreturn]] void refuse(const fs::path& path, const std::string& what) {
  throw OutputFileError("refusing to write '" + path.string() + "': " + what +
                        " (fpdp writes only regular files of its own in an output directory)");
}

/// The directory that holds `path`, opened without following a link in its own name.
struct Directory {
  int fd = -1;
  std::string name;  // the file's name in it
  explicit Directory(const fs::path& path) {
    const fs::path parent = path.parent_path();
    name = path.filename().string();
    if (name.empty() || name == "." || name == "..") refuse(path, "not a file name");
    const std::string dir = parent.empty() ? "." : parent.string();
    fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      if (error == ELOOP || error == ENOTDIR) {
        struct stat st {};
        if (::lstat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
          refuse(path, "its directory '" + dir + "' is " + kindOfMode(st.st_mode));
      }
      throw writeFailure("open the directory of", path.string(), error);
    }
  }
  ~Directory() {
    if (fd >= 0) ::close(fd);
  }
  Directory(const Directory&) = delete;
  Directory& operator=(const Directory&) = delete;
};

/// What is at `name` in `dir` (without following a link); nullopt-like: returns false when absent.
bool statAt(const Directory& dir, const std::string& name, struct stat& st) {
  if (::fstatat(dir.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) return true;
  return false;
}

/// A name that may be replaced: absent, or a regular file of one link.
void requireReplaceable(const Directory& dir, const fs::path& path) {
  struct stat st {};
  if (!statAt(dir, dir.name, st)) return;
  if (!S_ISREG(st.st_mode)) refuse(path, "it is " + kindOfMode(st.st_mode));
  if (st.st_nlink > 1) refuse(path, "it has " + std::to_string(st.st_nlink) + " hard links (another name for the same file)");
}

/// Opens `name` in `dir` with `flags` (plus no link, no blocking) and checks what was opened.
int openChecked(const Directory& dir, const fs::path& path, int flags) {
  const int fd = ::openat(dir.fd, dir.name.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    struct stat st {};
    if (statAt(dir, dir.name, st) && !S_ISREG(st.st_mode)) refuse(path, "it is " + kindOfMode(st.st_mode));
    if (error == ELOOP) refuse(path, "it is a symbolic link");
    if (error == EEXIST) refuse(path, "it already exists (a new file was to be made)");
    throw writeFailure(flags & O_CREAT ? "create" : "open", path.string(), error);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    throw writeFailure("open", path.string(), error);
  }
  if (!S_ISREG(st.st_mode) || st.st_nlink > 1) {
    ::close(fd);
    if (!S_ISREG(st.st_mode)) refuse(path, "it is " + kindOfMode(st.st_mode));
    refuse(path, "it has " + std::to_string(st.st_nlink) + " hard links (another name for the same file)");
  }
  // Writes block as usual from here on: O_NONBLOCK served only to refuse a FIFO instead of waiting for a reader.
  (void)::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

/// Removes `name` in `dir` if it is a regular file or a link (never followed); a directory or special file is refused.
void removeStale(const Directory& dir, const fs::path& path) {
  struct stat st {};
  if (!statAt(dir, dir.name, st)) return;
  if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) refuse(path, "it is " + kindOfMode(st.st_mode));
  if (::unlinkat(dir.fd, dir.name.c_str(), 0) != 0 && errno != ENOENT) throw writeFailure("remove", path.string());
}

}  // namespace

OutputFile OutputFile::open(const fs::path& path, OutputMode mode) {
  const Directory dir(path);
  OutputFile f;
  f.path_ = path.string();
  switch (mode) {
    case OutputMode::Replace:
      f.fd_ = openChecked(dir, path, O_WRONLY | O_CREAT);
      if (::ftruncate(f.fd_, 0) != 0) throw writeFailure("truncate", f.path_);
      break;
    case OutputMode::Append:
      f.fd_ = openChecked(dir, path, O_WRONLY | O_APPEND | O_CREAT);
      break;
    case OutputMode::Create:
      f.fd_ = openChecked(dir, path, O_WRONLY | O_CREAT | O_EXCL);
      break;
  }
  return f;
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

OutputFile& OutputFile::operator=(OutputFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void OutputFile::write(std::string_view bytes) {
  if (fd_ < 0) throw std::logic_error("OutputFile::write on a closed file");
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw writeFailure("write", path_, n < 0 ? errno : ENOSPC);
    done += static_cast<std::size_t>(n);
  }
}

void OutputFile::sync() {
  if (fd_ >= 0 && ::fsync(fd_) != 0) throw writeFailure("write", path_);
}

void OutputFile::close() {
  if (fd_ < 0) return;
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0 && errno != EINTR) throw writeFailure("write", path_);
}

ReplacementFile::ReplacementFile(const fs::path& path) : path_(path), tmp_(path.string() + ".tmp") {
  {
    const Directory dir(path_);
    requireReplaceable(dir, path_);
  }
  {
    const Directory dir(tmp_);
    removeStale(dir, tmp_);
  }
  file_ = OutputFile::open(tmp_, OutputMode::Create);
}

ReplacementFile::~ReplacementFile() {
  if (committed_) return;
  file_ = OutputFile();
  try {
    const Directory dir(tmp_);
    (void)::unlinkat(dir.fd, dir.name.c_str(), 0);
  } catch (...) {
  }
}

void ReplacementFile::commit(bool sync) {
  if (sync) file_.sync();
  file_.close();
  renameOver(tmp_, path_);
  committed_ = true;
}

void writeWholeFile(const fs::path& path, std::string_view bytes, bool sync) {
  ReplacementFile f(path);
  f.file().write(bytes);
  f.commit(sync);
}

void createFreshFile(const fs::path& path) {
  {
    const Directory dir(path);
    removeStale(dir, path);
  }
  OutputFile::open(path, OutputMode::Create).close();
}

void renameOver(const fs::path& from, const fs::path& to) {
  const Directory source(from), target(to);
  requireReplaceable(target, to);
  if (::renameat(source.fd, source.name.c_str(), target.fd, target.name.c_str()) != 0)
    throw std::runtime_error("cannot rename '" + from.string() + "' to '" + to.string() + "': " + std::strerror(errno));
}

std::string fileKind(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return "";
  return kindOfMode(st.st_mode);
}

}  // namespace fpdp::io
