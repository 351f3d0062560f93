// Hostile case files (docs/faults.md §2): the corpus tests/app/fuzz_cases/ (at least 200 files, written
// deterministically by scripts/generate-fuzz-cases from the shipped and good cases: byte flips, truncation, type swaps,
// hostile numbers, unknown keys, duplicates, deep nesting, long strings, invalid UTF-8, control bytes, hostile paths,
// huge sizes, shuffled and spliced lines). Every file must give
//   - in process (readCase): no crash and no hang (a watchdog ends the test after kPerFileSeconds on one file), and
//     either a valid case, whose resolved TOML reads back to itself, or an InputError whose one-line message starts
//     with the file's name and quotes the key path it names (syntax errors: "<file>:<line>:<column>: ...");
//   - through the executable (`fpdp check FILE`, under `timeout -s KILL`): exit status 0 or 2, and for 2 one line
//     "fpdp: error: ..." on stderr. Every file the reader accepts (they go on to PETSc's option parsing of
//     solver.petsc_options) and every kCheckStride-th rejected one: a process start costs ~0.2 s, the whole corpus
//     would take a minute of the suite, and the reader's messages are already checked in process.
#define BOOST_TEST_MODULE app_case_fuzz
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ProcessSupport.hpp"
#include "app/case/CaseReader.hpp"

namespace fs = std::filesystem;
using fpdp::app::InputError;
using fpdp::app::test::shellQuote;
using fpdp::app::test::TemporaryDirectory;
using fpdp::app::test::readText;

namespace {

constexpr std::size_t kMinimumCorpus = 200;
// The slowest file reads in well under 0.1 s in a Release build; ASan/UBSan make it ~10x slower. 20 s is a hang.
constexpr int kPerFileSeconds = 20;
constexpr std::size_t kCheckStride = 20;

std::vector<fs::path> corpus() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(FPDP_SOURCE_DIR) / "tests" / "app" / "fuzz_cases"))
    if (e.path().extension() == ".toml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

/// Ends the process if one file takes longer than kPerFileSeconds (a hang cannot be interrupted in process).
class Watchdog {
public:
  Watchdog() : thread_([this] { watch(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void start(const fs::path& file) {
    std::lock_guard<std::mutex> lock(mutex_);
    file_ = file;
    deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(kPerFileSeconds);
    armed_ = true;
    cv_.notify_all();
  }
  void stop() {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
  }

private:
  void watch() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_) {
      if (!armed_) {
        cv_.wait(lock);
        continue;
      }
      if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ && !done_ &&
          std::chrono::steady_clock::now() >= deadline_) {
        std::fprintf(stderr, "HANG: reading %s took more than %d s\n", file_.c_str(), kPerFileSeconds);
        std::fflush(stderr);
        std::_Exit(3);
      }
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  fs::path file_;
  std::chrono::steady_clock::time_point deadline_;
  bool armed_ = false, done_ = false;
  std::thread thread_;
};

}  // namespace

BOOST_AUTO_TEST_CASE(reader_survives_the_corpus) {
  const auto files = corpus();
  BOOST_TEST_REQUIRE(files.size() >= kMinimumCorpus);
  Watchdog watchdog;
  std::size_t valid = 0, rejected = 0;
  const auto start = std::chrono::steady_clock::now();
  for (const fs::path& file : files) {
    BOOST_TEST_CONTEXT(file.filename()) {
      watchdog.start(file);
      try {
        const fpdp::app::Case c = fpdp::app::readCase(file);
        ++valid;
        // A valid case resolves to a fixed point: its resolved TOML reads back to the same resolved TOML.
        const fpdp::app::Case again = fpdp::app::readCaseString(c.resolvedToml, file);
        BOOST_TEST((again.resolvedToml == c.resolvedToml));
      } catch (const InputError& e) {
        ++rejected;
        const std::string what = e.what();
        BOOST_TEST(what.find('\n') == std::string::npos, "not one line: " << what);
        BOOST_TEST(what.rfind(file.string(), 0) == 0u, "does not start with the file name: " << what);
        if (!e.keyPath.empty()) BOOST_TEST(what.find(e.keyPath) != std::string::npos, "key not named: " << what);
        else BOOST_TEST(what.size() > file.string().size() + 2, "no reason given: " << what);
      } catch (const std::exception& e) {
        BOOST_ERROR("an exception other than InputError: " << e.what());
      } catch (...) {
        BOOST_ERROR("a non-standard exception");
      }
      watchdog.stop();
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  BOOST_TEST_MESSAGE(files.size() << " files read in " << seconds << " s: " << valid << " valid, " << rejected
                                  << " rejected");
  // A corpus whose files are all rejected (or all accepted) tests one path only.
  BOOST_TEST(valid > 0u);
  BOOST_TEST(rejected > 0u);
}

BOOST_AUTO_TEST_CASE(fpdp_check_exits_cleanly_on_the_corpus) {
  TemporaryDirectory tmp("fpdp-fuzz");
  const fs::path err = tmp.path() / "stderr";
  std::size_t rejected = 0, checked = 0;
  for (const fs::path& file : corpus()) {
    bool valid = true;
    try {
      (void)fpdp::app::readCase(file);
    } catch (const InputError&) {
      valid = false;
    }
    if (!valid && rejected++ % kCheckStride != 0) continue;
    ++checked;
    BOOST_TEST_CONTEXT(file.filename()) {
      const std::string command = "cd " + shellQuote(tmp.path().string()) + " && timeout -s KILL " +
                                  std::to_string(kPerFileSeconds) + " " + shellQuote(FPDP_EXECUTABLE) + " check " +
                                  shellQuote(file.string()) + " > /dev/null 2> " + shellQuote(err.string()) +
                                  " < /dev/null";
      const int status = std::system(command.c_str());
      BOOST_TEST_REQUIRE((status != -1 && WIFEXITED(status)), "fpdp check did not exit normally");
      const int code = WEXITSTATUS(status);
      const std::string text = readText(err);
      BOOST_TEST((code == 0 || code == 2), "exit status " << code << " (137: killed by the timeout); " << text);
      if (code == 2) {
        BOOST_TEST(text.rfind("fpdp: error: ", 0) == 0u, text);
        BOOST_TEST(std::count(text.begin(), text.end(), '\n') == 1, "not one line: " << text);
      }
      // Nothing is created by `check` (the output directory of a hostile case above all).
      BOOST_TEST(std::distance(fs::directory_iterator(tmp.path()), fs::directory_iterator()) == 1);
    }
  }
  BOOST_TEST_MESSAGE(checked << " files through fpdp check");
}
