#pragma once
// The malformed-case corpus tests/app/bad_cases/NN_description.toml. Each file differs from a valid case
// (tests/app/good_cases/) in one way and starts with "# expect: <text>", a substring of the one-line error message
// it must produce; "{dir}" in <text> stands for the absolute folder of the case file, for messages that quote a
// resolved data-file path. Shared by the reader test and the command-line test so that both check the same text.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "ProcessSupport.hpp"  // readText

namespace fpdp::app::test {

inline constexpr std::size_t kMinimumBadCases = 20;

struct BadCase {
  std::filesystem::path file;
  std::string expected;  // substring of InputError::what(), "{dir}" already replaced
};

inline std::filesystem::path sourceDir() { return FPDP_SOURCE_DIR; }
inline std::filesystem::path badCaseDir() { return sourceDir() / "tests" / "app" / "bad_cases"; }
inline std::filesystem::path goodCaseDir() { return sourceDir() / "tests" / "app" / "good_cases"; }

/// Every *.toml directly in bad_cases/, sorted by name. A file without a non-empty "# expect: " first line is a
/// broken corpus, not a passing case: it throws.
inline std::vector<BadCase> loadBadCases() {
  std::vector<BadCase> cases;
  for (const auto& entry : std::filesystem::directory_iterator(badCaseDir())) {
    if (!entry.is_regular_file() || entry.path().extension() != ".toml") continue;
    std::ifstream in(entry.path());
    std::string firstLine;
    std::getline(in, firstLine);
    const std::string prefix = "# expect: ";
    if (firstLine.rfind(prefix, 0) != 0 || firstLine.size() == prefix.size()) {
      throw std::runtime_error(entry.path().string() + ": the first line must be '# expect: <message substring>'");
    }
    std::string expected = firstLine.substr(prefix.size());
    const std::string marker = "{dir}";
    const std::string dir = std::filesystem::absolute(entry.path()).parent_path().lexically_normal().string();
    for (auto at = expected.find(marker); at != std::string::npos; at = expected.find(marker, at + dir.size())) {
      expected.replace(at, marker.size(), dir);
    }
    cases.push_back({entry.path(), std::move(expected)});
  }
  std::sort(cases.begin(), cases.end(), [](const BadCase& a, const BadCase& b) { return a.file < b.file; });
  return cases;
}

}  // namespace fpdp::app::test
