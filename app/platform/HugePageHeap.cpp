#include "app/platform/HugePageHeap.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__linux__) && defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace fpdp::app {

HugePageHeap reserveHugePageHeap(std::size_t bytes) {
  HugePageHeap out;
  if (const char* v = std::getenv("FPDP_HUGE_PAGES"); v && std::strcmp(v, "0") == 0) {
    out.reason = "FPDP_HUGE_PAGES=0";
    return out;
  }
#if defined(__linux__) && defined(__GLIBC__) && defined(MADV_HUGEPAGE)
  constexpr std::size_t kChunk = 16u << 20;       // below the mmap threshold set here: carved from the heap
  constexpr std::size_t kHugePage = 2u << 20;
  bytes = std::clamp(bytes, std::size_t{64} << 20, std::size_t{8} << 30);
  // Allocations up to 32 MiB from the heap (glibc's largest threshold), the heap never trimmed, grown 16 MiB at a
  // time beyond the reservation.
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 || mallopt(M_TRIM_THRESHOLD, 1 << 30) != 1 ||
      mallopt(M_TOP_PAD, 16 << 20) != 1) {
    out.reason = "mallopt refused";
    return out;
  }
  char* const start = static_cast<char*>(sbrk(0));
  std::vector<void*> chunks;
  chunks.reserve(bytes / kChunk + 1);
  for (std::size_t got = 0; got < bytes; got += kChunk) {
    void* p = std::malloc(kChunk);  // address space only: nothing is touched but malloc's chunk header
    if (!p) break;
    chunks.push_back(p);
  }
  for (void* p : chunks) std::free(p);  // back into the top chunk, which stays (no trimming)
  char* const end = static_cast<char*>(sbrk(0));
  const auto first = (reinterpret_cast<std::uintptr_t>(start) + kHugePage - 1) & ~std::uintptr_t{kHugePage - 1};
  if (end <= reinterpret_cast<char*>(first)) {
    out.reason = "the heap did not grow";
    return out;
  }
  const std::size_t length = static_cast<std::size_t>(end - reinterpret_cast<char*>(first));
  if (madvise(reinterpret_cast<void*>(first), length, MADV_HUGEPAGE) != 0) {
    out.reason = "madvise(MADV_HUGEPAGE) refused";
    return out;
  }
  out.reservedBytes = length;
#else
  (void)bytes;
  out.reason = "not Linux with glibc";
#endif
  return out;
}

}  // namespace fpdp::app
