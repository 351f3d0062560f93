#include "app/run/OutputLock.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "app/run/OutputDirectory.hpp"
#include "io/OutputFile.hpp"

namespace fpdp::app {

namespace {

constexpr const char* kLockSuffix = ".fpdp-lock";
constexpr const char* kLockText = "fpdp output lock";  // the first words of every lock file fpdp writes
constexpr int kAttempts = 16;  // the holder removed the file between our open and our lock this many times: give up

struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
  int release() {
    const int f = fd;
    fd = -1;
    return f;
  }
};

/// A file that already has content must be one of fpdp's lock files: never lock, empty and remove another file.
bool holdsOtherContent(int fd) {
  char head[32] = {};
  const ssize_t n = ::pread(fd, head, sizeof head - 1, 0);
  return n > 0 && std::strncmp(head, kLockText, std::strlen(kLockText)) != 0;
}

}  // namespace

std::string OutputLock::lockFile(const std::string& dir) { return dir + kLockSuffix; }

OutputLock::OutputLock(const std::string& dir) : path_(lockFile(dir)) {
  // An output directory may be given below folders that do not exist yet (--output results/a/out): they are made, as
  // the run would make them, so that the lock file has a place.
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  std::error_code ec;
  if (!parent.empty() && !std::filesystem::exists(parent, ec)) std::filesystem::create_directories(parent, ec);
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    Descriptor d;
    d.fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
    if (d.fd < 0) {
      const int error = errno;
      const std::string kind = io::fileKind(path_);
      if (!kind.empty() && kind != "a regular file")
        throw OutputDirectoryError("the lock file '" + path_ + "' of output directory '" + dir + "' is " + kind +
                                   ", not fpdp's lock file; remove it or choose another output directory");
      throw OutputDirectoryError("cannot create the lock file '" + path_ + "' of output directory '" + dir +
                                 "': " + std::strerror(error));
    }
    struct stat opened {};
    if (::fstat(d.fd, &opened) != 0 || !S_ISREG(opened.st_mode))
      throw OutputDirectoryError("the lock file '" + path_ + "' of output directory '" + dir +
                                 "' is not a regular file; remove it or choose another output directory");
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    if (::fcntl(d.fd, F_SETLK, &lock) != 0) {
      if (errno != EACCES && errno != EAGAIN)
        throw OutputDirectoryError("cannot lock '" + path_ + "': " + std::strerror(errno));
      struct flock holder {};
      holder.l_type = F_WRLCK;
      holder.l_whence = SEEK_SET;
      const bool known = ::fcntl(d.fd, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK && holder.l_pid > 0;
      throw OutputDirectoryError("output directory '" + dir + "' is in use by another fpdp process (" +
                                 (known ? "pid " + std::to_string(holder.l_pid) : std::string("pid unknown")) +
                                 ", lock file '" + path_ + "'); wait until it ends, or choose another output "
                                 "directory");
    }
    // Locked; but is it still the file at that name? The previous holder may have removed it after our open.
    struct stat named {};
    if (::lstat(path_.c_str(), &named) != 0 || named.st_ino != opened.st_ino || named.st_dev != opened.st_dev)
      continue;
    if (holdsOtherContent(d.fd))
      throw OutputDirectoryError("'" + path_ + "' exists and is not fpdp's lock file of output directory '" + dir +
                                 "'; remove or rename it, or choose another output directory");
    const std::string text = std::string(kLockText) + " of '" + dir + "': pid " + std::to_string(::getpid()) + "\n";
    if (::ftruncate(d.fd, 0) != 0 || ::pwrite(d.fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()))
      throw OutputDirectoryError("cannot write the lock file '" + path_ + "': " + std::strerror(errno));
    fd_ = d.release();
    return;
  }
  throw OutputDirectoryError("cannot lock output directory '" + dir + "': its lock file '" + path_ +
                             "' keeps being replaced; is another program removing it?");
}

OutputLock::~OutputLock() {
  if (fd_ < 0) return;
  // Removed while the lock is held (a process that opened this file then retries on the next one), and only if the
  // name is still this file.
  struct stat held {}, named {};
  if (::fstat(fd_, &held) == 0 && ::lstat(path_.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
      held.st_dev == named.st_dev)
    ::unlink(path_.c_str());
  ::close(fd_);
}

}  // namespace fpdp::app
