#pragma once
// Several arrays of one length in one allocation, each starting at a different place in the caches' set index
// (docs/scaling.md §2, "Where the arrays start").
//
// A stencil kernel reads all its coefficient arrays and vectors at the same index v. Allocated one by one, arrays of
// equal size (1 MiB each at 256^2 with two fields) land a whole number of their sizes apart plus a malloc header: they
// start at the same offset modulo 4 KiB and modulo 128 KiB, so at every v their cache lines fall into the same set
// of the 8-way L1 (set index: address bits 6-11) and of the L2 (bits 6-16 for 1 MiB, 8 ways), and the 8 to 13
// streams of a Chebyshev term evict one another. Measured on the 256^2 benchmark: the five coefficient arrays and
// the three vectors all started between 0x820 and 0x920 modulo 128 KiB; with the coefficients in one staggered
// block the Chebyshev expansion took 42 ms instead of 52-55 (1024^2, one rank: 3.5 -> 3.05 s).
//
// Here array a starts at a * pitch doubles from a 64-byte boundary, with pitch = (length rounded up to 4 KiB) + 9
// cache lines: the starts of up to 7 arrays are 9 lines apart modulo 4 KiB (so in distinct L1 sets, and hence in
// distinct L2 sets too), and every start is 64-byte aligned, so an aligned vector load never straddles two lines.
// The values are what the caller writes: the arithmetic, and so every result, is unchanged.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace fpdp::solver {

class StaggeredArrays {
public:
  static constexpr std::size_t kLineDoubles = 8;      // a 64-byte cache line
  static constexpr std::size_t kPageDoubles = 512;    // 4 KiB, the span of the L1 set index
  static constexpr std::size_t kStaggerDoubles = 72;  // 9 lines: an odd number, 7 arrays stay within 4 KiB

  StaggeredArrays() = default;
  /// `arrays` arrays of `length` doubles each, zero.
  StaggeredArrays(std::size_t arrays, std::size_t length)
      : arrays_(arrays),
        length_(length),
        pitch_((length + kPageDoubles - 1) / kPageDoubles * kPageDoubles + kStaggerDoubles),
        storage_(arrays * pitch_ + kLineDoubles, 0.0) {
    // The first 64-byte boundary in the storage (std::vector's is only 16-byte aligned).
    const auto address = reinterpret_cast<std::uintptr_t>(storage_.data());
    first_ = (64 - address % 64) % 64 / sizeof(double);
  }
  // A copy gets its own storage, so the offsets are computed anew; a move keeps the storage and its alignment.
  StaggeredArrays(const StaggeredArrays& other) : StaggeredArrays(other.arrays_, other.length_) {
    for (std::size_t a = 0; a < arrays_; ++a) std::copy(other[a], other[a] + length_, (*this)[a]);
  }
  StaggeredArrays& operator=(const StaggeredArrays& other) {
    if (this != &other) *this = StaggeredArrays(other);
    return *this;
  }
  StaggeredArrays(StaggeredArrays&&) noexcept = default;
  StaggeredArrays& operator=(StaggeredArrays&&) noexcept = default;

  std::size_t arrays() const { return arrays_; }
  std::size_t length() const { return length_; }
  bool empty() const { return arrays_ == 0; }
  double* operator[](std::size_t a) { return storage_.data() + first_ + a * pitch_; }
  const double* operator[](std::size_t a) const { return storage_.data() + first_ + a * pitch_; }
  std::span<const double> span(std::size_t a) const { return {(*this)[a], length_}; }

private:
  std::size_t arrays_ = 0, length_ = 0, pitch_ = 0, first_ = 0;
  std::vector<double> storage_;
};

}  // namespace fpdp::solver
