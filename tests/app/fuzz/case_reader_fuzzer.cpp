// libFuzzer target for the case-file reader (docs/faults.md §2): any bytes must give a valid Case or an InputError,
// never a crash, a sanitizer report, another exception or a hang. Built with clang only (CMake option
// FPDP_LIBFUZZER=ON, which also turns on ASan and UBSan):
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DFPDP_LIBFUZZER=ON && ninja -C build-fuzz fuzz_case_reader
//   build-fuzz/tests/app/fuzz_case_reader -max_total_time=300 -timeout=10 CORPUS_DIR tests/app/fuzz_cases cases
// (CORPUS_DIR: an empty scratch folder for the inputs it finds; the committed corpus is only read).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "app/case/CaseReader.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const fpdp::app::Case c = fpdp::app::readCaseString(text, "fuzz/case.toml");
    // A valid case resolves to a fixed point.
    const fpdp::app::Case again = fpdp::app::readCaseString(c.resolvedToml, "fuzz/case.toml");
    if (again.resolvedToml != c.resolvedToml) __builtin_trap();
  } catch (const fpdp::app::InputError&) {
    // the expected outcome for most inputs
  }
  return 0;
}
