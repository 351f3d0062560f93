#pragma once
// Shared by the tests that launch the fpdp executable: shell quoting and a self-removing temporary directory.
#include <cstdlib>  // mkdtemp (POSIX)
#include <filesystem>
#include <stdexcept>
#include <string>

namespace fpdp::app::test {

/// Single-quotes a word for /bin/sh.
inline std::string shellQuote(const std::string& s) {
  std::string quoted = "'";
  for (char c : s) {
    if (c == '\'') quoted += "'\\''";
    else quoted += c;
  }
  return quoted + "'";
}

/// A fresh directory under the system temporary directory, removed at the end of the test.
class TemporaryDirectory {
public:
  explicit TemporaryDirectory(const std::string& prefix = "fpdp-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TemporaryDirectory(const TemporaryDirectory&) = delete;
  TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
};

}  // namespace fpdp::app::test
