#pragma once
// Shared by the tests that launch the fpdp executable: shell quoting, a self-removing temporary directory,
// whole-file text reading and writing, and one `fpdp run` of a case file.
#include <sys/wait.h>

#include <cstdlib>  // mkdtemp (POSIX), std::system
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fpdp::app::test {

/// The whole file as bytes; throws if it cannot be opened.
inline std::string readText(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Writes (replaces) the file; throws if it cannot be written.
inline void writeText(const std::filesystem::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The numbers of a CSV file, row by row, its header line dropped (a cell that is no number reads as 0).
inline std::vector<std::vector<double>> csvNumbers(const std::filesystem::path& csv) {
  std::istringstream in(readText(csv));
  std::string line;
  std::getline(in, line);
  std::vector<std::vector<double>> out;
  while (std::getline(in, line)) {
    std::vector<double> r;
    std::istringstream cells(line);
    for (std::string c; std::getline(cells, c, ',');) r.push_back(std::strtod(c.c_str(), nullptr));
    out.push_back(r);
  }
  return out;
}

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

/// What `fpdp run CASE --output OUT --quiet` ended with: its exit status (-1 if a signal ended it) and its output.
struct RunOutcome {
  int status = -1;
  std::string log;
};

/// Runs the case with `launcher` before the executable (e.g. mpiexec and its arguments; empty: serial); the output
/// goes to OUT.log beside OUT.
inline RunOutcome runCaseFile(const std::filesystem::path& caseFile, const std::filesystem::path& out,
                              const std::string& launcher = "") {
  const std::filesystem::path log = out.string() + ".log";
  const std::string command = launcher + shellQuote(FPDP_EXECUTABLE) + " run " + shellQuote(caseFile.string()) +
                              " --output " + shellQuote(out.string()) + " --quiet > " + shellQuote(log.string()) +
                              " 2>&1";
  const int raw = std::system(command.c_str());
  RunOutcome o;
  if (raw != -1 && WIFEXITED(raw)) o.status = WEXITSTATUS(raw);
  o.log = readText(log);
  return o;
}

}  // namespace fpdp::app::test
