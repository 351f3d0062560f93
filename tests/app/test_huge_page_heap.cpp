// app/platform/HugePageHeap: FPDP_HUGE_PAGES=0 does nothing; otherwise the heap is grown and marked, and memory allocated
// from it afterwards is backed by transparent huge pages (AnonHugePages in /proc/self/smaps_rollup grows when a
// 16 MiB block is touched) wherever the kernel's THP mode is not "never".
#define BOOST_TEST_MODULE app_huge_page_heap
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "app/platform/HugePageHeap.hpp"

namespace {
/// AnonHugePages of this process in KiB (-1 if the kernel does not report it).
long anonHugePagesKiB() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("AnonHugePages:", 0) == 0) return std::atol(line.c_str() + std::strlen("AnonHugePages:"));
  return -1;
}
/// The kernel's THP mode: "always", "madvise", "never", or "" if unknown.
std::string thpMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(in, text);
  const auto open = text.find('['), close = text.find(']');
  return open == std::string::npos || close == std::string::npos ? "" : text.substr(open + 1, close - open - 1);
}
}  // namespace

// First, before anything is reserved: the switch.
BOOST_AUTO_TEST_CASE(fpdp_huge_pages_0_does_nothing) {
  setenv("FPDP_HUGE_PAGES", "0", 1);
  const auto r = fpdp::app::reserveHugePageHeap(std::size_t{100} << 20);
  unsetenv("FPDP_HUGE_PAGES");
  BOOST_TEST(r.reservedBytes == 0u);
  BOOST_TEST(std::string(r.reason) == "FPDP_HUGE_PAGES=0");
}

BOOST_AUTO_TEST_CASE(the_heap_is_reserved_and_later_allocations_get_huge_pages) {
  const auto r = fpdp::app::reserveHugePageHeap(std::size_t{100} << 20);
  BOOST_TEST_MESSAGE("reserved " << r.reservedBytes << " B (" << r.reason << "), THP mode '" << thpMode() << "'");
  // About the request (16 MiB steps), less the alignment to 2 MiB.
  BOOST_TEST(r.reservedBytes >= (std::size_t{100} << 20) - (std::size_t{2} << 20), r.reason);
  BOOST_TEST(r.reservedBytes <= (std::size_t{140} << 20));
  const std::string mode = thpMode();
  if (mode == "never" || mode.empty() || anonHugePagesKiB() < 0) {
    BOOST_TEST_MESSAGE("transparent huge pages unavailable (mode '" << mode << "'): only the reservation is checked");
    return;
  }
  const long before = anonHugePagesKiB();
  constexpr std::size_t kBlock = std::size_t{16} << 20;
  auto* block = static_cast<volatile char*>(std::malloc(kBlock));
  BOOST_REQUIRE(block != nullptr);
  for (std::size_t i = 0; i < kBlock; i += 4096) block[i] = 1;  // first touch
  const long after = anonHugePagesKiB();
  std::free(const_cast<char*>(block));
  // At least 12 MiB of the 16 in huge pages (the block need not start on a 2 MiB boundary).
  BOOST_TEST(after - before >= 12 * 1024, "AnonHugePages " << before << " -> " << after << " KiB");
}
