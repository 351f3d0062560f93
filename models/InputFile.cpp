#include "models/InputFile.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace fpdp::models {

namespace {

std::string kindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Closes the descriptor on every path out.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string byteLimitText(std::size_t bytes) {
  if (bytes % (std::size_t{1} << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes % (std::size_t{1} << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

std::string readInputFile(const std::filesystem::path& file, std::size_t maxBytes) {
  const std::string allowed = "a regular file of at most " + byteLimitText(maxBytes);
  // stat before open: opening some devices has effects of its own; the descriptor is checked again below.
  struct stat before {};
  if (::stat(file.c_str(), &before) != 0) throw InputFileError(std::strerror(errno));
  if (!S_ISREG(before.st_mode)) throw InputFileError("it is " + kindOf(before.st_mode) + ", not " + allowed);
  Descriptor d;
  d.fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (d.fd < 0) throw InputFileError(std::strerror(errno));
  struct stat st {};
  if (::fstat(d.fd, &st) != 0) throw InputFileError(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw InputFileError("it is " + kindOf(st.st_mode) + ", not " + allowed);
  const auto tooLarge = [&](const std::string& size) {
    return InputFileError("it has " + size + " bytes, more than the limit of " + byteLimitText(maxBytes) +
                          " (allowed: " + allowed + ")");
  };
  if (static_cast<std::size_t>(st.st_size) > maxBytes) throw tooLarge(std::to_string(st.st_size));
  // Files in /proc report size 0 and others may grow: read at most one byte past the limit.
  std::string text;
  text.resize(static_cast<std::size_t>(st.st_size) + 1 <= maxBytes ? static_cast<std::size_t>(st.st_size) + 1
                                                                    : maxBytes + 1);
  std::size_t used = 0;
  for (;;) {
    if (used == text.size()) {
      if (used > maxBytes) throw tooLarge("more than " + std::to_string(maxBytes));
      text.resize(std::min(maxBytes + 1, 2 * text.size() + 4096));
    }
    const ssize_t got = ::read(d.fd, text.data() + used, text.size() - used);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw InputFileError(std::strerror(errno));
    }
    if (got == 0) break;
    used += static_cast<std::size_t>(got);
  }
  if (used > maxBytes) throw tooLarge("more than " + std::to_string(maxBytes));
  text.resize(used);
  return text;
}

}  // namespace fpdp::models
