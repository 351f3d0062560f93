#pragma once
// Reading an input file that may come from anyone (a case file, a data file): only a regular file, only up to a
// size limit. A path may name a FIFO (whose reader blocks until a writer comes), a device (/dev/zero never ends), a
// directory or a file that grows while it is read; each of those would hang the program or grow it without bound.
#include <cstddef>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace fpdp::models {

/// The largest case file fpdp reads: the largest shipped case is a few KiB, inline data of 10^4 records a few
/// hundred KiB.
inline constexpr std::size_t kMaxCaseFileBytes = std::size_t{1} << 20;  // 1 MiB
/// The largest data file (data.file): 10^7 records of 3 coordinates and a label as CSV are about 400 MB, more than
/// the reader's run-time use of the records allows on an ordinary machine anyway.
inline constexpr std::size_t kMaxDataFileBytes = std::size_t{512} << 20;  // 512 MiB

/// Why a file cannot be read; what() is "cannot read ...: reason" without the path (the caller names the path).
struct InputFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The whole file, if it is a regular file (after symbolic links) of at most maxBytes bytes. Opens without
/// blocking (a FIFO is refused, not waited on) and reads at most maxBytes + 1 bytes, so a file that grows while it
/// is read is refused too. Throws InputFileError.
std::string readInputFile(const std::filesystem::path& file, std::size_t maxBytes);

/// The limit as text for messages, e.g. "1 MiB".
std::string byteLimitText(std::size_t bytes);

}  // namespace fpdp::models
