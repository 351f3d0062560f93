#pragma once
// One form for a file that cannot be written: "cannot <what> '<path>': <errno text>" (a full disk says "No space
// left on device"), the one line a failed run ends with (docs/faults.md §4).
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace fpdp::io {

/// Call right after the failed operation, before anything else can change errno, or pass the saved errno.
inline std::runtime_error writeFailure(const std::string& what, const std::string& path, int error = errno) {
  return std::runtime_error("cannot " + what + " '" + path + "'" +
                            (error != 0 ? ": " + std::string(std::strerror(error)) : std::string()));
}

}  // namespace fpdp::io
