#pragma once
// The process heap in transparent huge pages (2 MiB), requested once at start-up (docs/scaling.md §1).
//
// Why: a run touches its vectors, stencil coefficients and work arrays for the first time in its set-up and first
// output step, page by page. The 256^2 benchmark run took about 9,500 page faults of 4 KiB there (some 15 ms of its
// 0.2 s); with huge pages about 2,500. Large runs also gain fewer TLB misses in the stencil kernels.
//
// How: Linux gives huge pages to memory marked MADV_HUGEPAGE (THP mode "madvise", Debian's default; in mode
// "always" every large mapping has them already, in "never" none). glibc's allocator has no hook for that from
// inside the process (its own switch, GLIBC_TUNABLES=glibc.malloc.hugetlb=1, must be set before the process
// starts), so the heap is grown once to the size the run will need, left in place (no trimming) and marked;
// every allocation up to 32 MiB is then carved from it (M_MMAP_THRESHOLD). Only address space is reserved: memory
// is used when it is touched, as before. Allocations above 32 MiB keep glibc's own mmap.
//
// FPDP_HUGE_PAGES=0 in the environment switches it off (`fpdp --help`).
#include <cstddef>

namespace fpdp::app {

/// What reserveHugePageHeap did.
struct HugePageHeap {
  std::size_t reservedBytes = 0;  // heap marked for huge pages (0: nothing done)
  const char* reason = "";        // why nothing was done, if so
};

/// Grows the heap by about `bytes` (at least 64 MiB, at most 8 GiB), marks it for transparent huge pages and
/// keeps it (no trimming). Call once, first thing in main, before anything large is allocated; does nothing if
/// FPDP_HUGE_PAGES=0, on systems without madvise(MADV_HUGEPAGE), or if the heap cannot grow (the run then goes on
/// with ordinary pages).
HugePageHeap reserveHugePageHeap(std::size_t bytes);

}  // namespace fpdp::app
