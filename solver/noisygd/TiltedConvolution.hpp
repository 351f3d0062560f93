#pragma once
// The three deposit sums of the exact Gaussian convolution on a uniform line (GaussianConvolution),
//
//     y_j = sum_{k=0..2} sum_{o=-R..R} W_k(o) c_k(j - o),    j = 0..n-1,   c_k(i) = 0 outside 0..n-1,
//
// by FFTs, with every y_j accurate relative to ITSELF (kRelativeTolerance), as the direct sum's far-tail deposits
// are (docs/noisy-gd.md §3, §5), not only relative to the largest value.
//
// Why tilts. An FFT convolution errs by about u |c|_2 |W|_2 at every output: relative to the peak, so a tail value
// 1e-30 of the peak would be rounding noise. Exponential tilts commute with convolution,
//     sum_o W(o) e^{l o} c(j - o) e^{l (j - o)} = e^{l j} y_j,
// so convolving the tilted sequences and untilting gives each y_j with an error relative to the largest TILTED
// value; the tilt l brings the cells where log y has slope -l to the top. A first pass (l = 0) settles the cells
// near the peak; further passes march into each tail, their tilts chosen from the slope and curvature of log y at
// the frontier of the settled cells (log y of a convolution with N(0, s^2) has curvature >= -1/s^2). A pass settles
// a cell only if its tilted value exceeds the pass's error bound over the tolerance; the bound,
//     sqrt(log2 N) u sum_k |c~_k|_2 |W~_k|_2  +  the kernel's truncation,
// lies two orders of magnitude above the errors measured (tests/solver/test_tilted_convolution.cpp checks every cell
// against the direct sum). Cells no pass settles, or where one more pass would cost more than summing them, are
// summed directly (the same sum, term by term). Tilts are powers of 2^(1/M) per cell, so every tilt factor is a power
// of two (exact) times one tabulated, correctly rounded factor, and the sequences are scaled by powers of two to
// the range of doubles: no overflow, whatever the tilt.
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "solver/numerics/RealFft.hpp"

namespace fpdp::solver {

class TiltedConvolution {
public:
  /// Relative error allowed for every output value.
  static constexpr double kRelativeTolerance = 1e-13;
  /// cells: n. kernels[k][o + R], o = -R..R (odd size 2R + 1, the same for the three; W_0 >= 0 carries the scale).
  /// kernelWidth: the kernel's standard deviation in cells (s/h): it bounds the curvature of log y and the tilts.
  TiltedConvolution(int cells, std::array<std::vector<double>, 3> kernels, double kernelWidth);
  ~TiltedConvolution();

  struct Work {
    int passes = 0;        // FFT passes
    long summed = 0;       // cells summed directly
  };
  /// y[j] for j = 0..n-1 from c[k][i], i = 0..n-1. weight[i] >= 0: the magnitude of cell i's coefficients (a cell
  /// with weight 0 has c_k(i) = 0; a cell whose window holds only such cells gets y_j = 0 exactly).
  Work apply(const std::array<const double*, 3>& c, const double* weight, double* y) const;
  /// The work of every apply() so far.
  Work total() const;

  /// Estimated cost of apply() relative to the direct sum's (n (2R + 1) deposits): below 1 the transform is cheaper.
  double costRelativeToDirect() const;
  int reach() const { return reach_; }

private:
  struct Tilt;   // one tilt's kernel, its window and spectra
  struct Line;   // one apply()'s inputs and settled cells
  struct Workspace;  // a pass's buffers, kept between passes
  struct Pass {  // what a pass settled
    int settled = 0;
    double logRange = 0;  // log(largest tilted value / threshold)
    int peak = -1;        // where the tilted values are largest
  };
  Pass pass(int tilt, int first, int last, Line& line) const;
  void march(int direction, Line& line, Work& work) const;
  const Tilt& tiltFor(int tilt) const;
  const RealFft& fftOf(int n) const;
  double directValue(const Line& line, int j) const;
  double passCost(int targets) const;

  int n_, reach_;
  std::array<std::vector<double>, 3> kernels_;
  double width_;
  mutable std::mutex mutex_;  // the caches below; apply() holds it
  mutable std::map<int, std::unique_ptr<Tilt>> tilts_;
  mutable std::map<int, std::unique_ptr<RealFft>> ffts_;
  mutable Work total_;
  std::unique_ptr<Workspace> workspace_;  // used under mutex_
};

}  // namespace fpdp::solver
