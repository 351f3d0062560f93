#pragma once
// How every writer of fpdp opens its files (docs/faults.md §5, "Writes"): an output directory may be shared with
// other people, who can put a symbolic link, a FIFO or a hard link to their own file under a name fpdp writes.
// Each file is opened relative to its directory (openat), which is itself opened without following a link in its own
// name; the file's name is opened with O_NOFOLLOW and O_NONBLOCK, and only a regular file with one link is written:
//   - a symbolic link is refused (a dangling one would create a file elsewhere, a live one overwrite its target);
//   - a FIFO, a device, a socket or a directory is refused at once (never waited on);
//   - a regular file with further hard links is refused (the other name may be someone else's file).
// Whole files are written under a temporary name created fresh (O_EXCL) and renamed over the final name, so that a
// reader (and a killed run) sees the old file or the new one.
#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>

namespace fpdp::io {

/// A file fpdp will not write: a link, a special file, a file with other hard links, or an open that failed.
struct OutputFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// How OutputFile::open treats what is there.
enum class OutputMode {
  Replace,  // absent (created) or a regular file (emptied)
  Append,   // absent (created) or a regular file, written at its end (continued runs' tables, logs)
  Create,   // must be absent: created fresh (O_EXCL)
};

/// A file open for writing, refused if it is not a regular file of one link (see above). Writes are unbuffered:
/// write() hands its bytes to the kernel at once, so a killed run keeps every completed write.
class OutputFile {
public:
  OutputFile() = default;
  /// Throws OutputFileError naming the path and what it is.
  static OutputFile open(const std::filesystem::path& path, OutputMode mode);
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&& other) noexcept;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  ~OutputFile();

  /// Writes all of `bytes`; throws std::runtime_error "cannot write '<path>': <errno text>".
  void write(std::string_view bytes);
  /// fsync; throws like write.
  void sync();
  /// Closes; throws like write when the close reports an error (a delayed write failure).
  void close();
  bool isOpen() const { return fd_ >= 0; }
  int descriptor() const { return fd_; }
  const std::string& path() const { return path_; }

private:
  int fd_ = -1;
  std::string path_;
};

/// A whole file written piecewise: under `path`.tmp (created fresh, no link followed), renamed over `path` (which
/// must be absent or a regular file, see above) by commit(); a replacement never committed is removed.
class ReplacementFile {
public:
  explicit ReplacementFile(const std::filesystem::path& path);
  ~ReplacementFile();
  ReplacementFile(const ReplacementFile&) = delete;
  ReplacementFile& operator=(const ReplacementFile&) = delete;
  OutputFile& file() { return file_; }
  /// Closes the temporary file (with `sync`, after fsync) and renames it over the final name.
  void commit(bool sync = false);

private:
  std::filesystem::path path_, tmp_;
  OutputFile file_;
  bool committed_ = false;
};

/// Writes `bytes` as the whole content of `path`: through `path`.tmp (created fresh, no link followed) and a rename
/// over `path`, which must be absent or a regular file (see above). With `sync`, the data reach the disk before the
/// rename. Throws OutputFileError or std::runtime_error naming the path.
void writeWholeFile(const std::filesystem::path& path, std::string_view bytes, bool sync = false);

/// For files another library opens by name (HDF5): removes a stale `path` of fpdp's (a regular file or a link,
/// never followed) and creates it fresh and empty, so that the library then opens the regular file just made, not
/// whatever another user put under that name. Refuses a directory or a special file there.
void createFreshFile(const std::filesystem::path& path);

/// Renames `from` over `to` in the same directory without following links: the name `to` must be absent or a regular
/// file (a link or a special file there is refused, and never replaced).
void renameOver(const std::filesystem::path& from, const std::filesystem::path& to);

/// What the file at `path` is (for messages): "a symbolic link", "a FIFO (named pipe)", "a directory", ...; "" if it
/// does not exist. Does not follow a link.
std::string fileKind(const std::filesystem::path& path);

}  // namespace fpdp::io
