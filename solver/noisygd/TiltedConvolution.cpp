#include "solver/noisygd/TiltedConvolution.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace fpdp::solver {

namespace {
// Tilts are multiples of ln(2) / kSteps per cell: the factor of cell i under tilt t is 2^(t i / kSteps).
constexpr int kSteps = 1024;
constexpr double kUnitRoundoff = std::numeric_limits<double>::epsilon() / 2;
// A kernel entry below 2^-80 of the tilted kernel's largest is left out of the transform (and its sum is in the bound).
constexpr double kKernelWindow = 0x1p-80;
// A cell whose tilted weight is below 2^-1000 of the pass's largest contributes below any value a pass can settle.
constexpr int kNegligibleExponent = -1000;
// Largest tilt, in units of 1/s per cell: the tilted kernel's peak stays within 30 standard deviations (its reach
// is 37.5) and e^(l^2 s^2 / 2) inside the range of doubles.
constexpr double kLargestTilt = 30.0;
// Measured costs (bench/README.md, "Exact convolution"): ns per N log2 N of one real FFT, per cell and transform of
// the tilting and untilting, and per multiply-add of the direct sum. The direct sum's 0.7 is measured in the whole
// step (its loops over the sources' reach, not the bare multiply-add: 0.35 chose it on the Figure 1 case's 250-cell
// companion, which then took 1.88 s against 0.94 s by transforms; at 125 cells 0.89 s against 0.68 s, at 100 and 64
// cells the same either way).
constexpr double kFftCost = 0.45, kTiltCost = 2.0, kSumCost = 0.7;
constexpr int kMaxPassesPerRun = 32;

struct PowerTable {
  double up[kSteps], down[kSteps];  // 2^(r / kSteps), 2^(-r / kSteps)
  PowerTable() {
    for (int r = 0; r < kSteps; ++r) {
      up[r] = std::exp2(static_cast<double>(r) / kSteps);
      down[r] = std::exp2(-static_cast<double>(r) / kSteps);
    }
  }
};
const PowerTable& powers() {
  static const PowerTable table;
  return table;
}

// a = q kSteps + r, 0 <= r < kSteps.
struct Split {
  int q, r;
};
Split split(long a) {
  long q = a / kSteps, r = a % kSteps;
  if (r < 0) {
    r += kSteps;
    --q;
  }
  return {static_cast<int>(q), static_cast<int>(r)};
}

// The binary exponent of x > 0 (ilogb without the call, for normal numbers).
int binaryExponent(double x) {
  const int biased = static_cast<int>((std::bit_cast<std::uint64_t>(x) >> 52) & 0x7ff);
  return biased != 0 ? biased - 1023 : std::ilogb(x);
}

// 2^e for normal exponents (a bit pattern, exact); ldexp outside.
double pow2(int e) {
  if (e < -1022 || e > 1023) return std::ldexp(1.0, e);
  return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52);
}
}  // namespace

struct TiltedConvolution::Tilt {
  int lo = 0, hi = -1;  // the window: offsets lo..hi
  int shift = 0;        // the tilted kernel is scaled by 2^-shift (its largest entry in [1, 2))
  std::array<std::vector<double>, 3> values;  // W~_k(o), o = lo..hi
  std::array<double, 3> norm{}, dropped{};   // |W~_k|_2 in the window, sum |W~_k| outside it
  std::map<int, std::array<FftBuffer<std::complex<double>>, 3>> spectra;  // by transform length
};

struct TiltedConvolution::Workspace {
  FftBuffer<double> values;
  FftBuffer<std::complex<double>> sum, term;
  std::vector<double> factor;
  void reserve(std::size_t n) {
    if (values.size() >= n) return;
    values = FftBuffer<double>(n);
    sum = FftBuffer<std::complex<double>>(n / 2 + 1);
    term = FftBuffer<std::complex<double>>(n / 2 + 1);
    factor.resize(n);
  }
};

struct TiltedConvolution::Line {
  std::array<const double*, 3> c;
  const double* weight;
  double* y;
  std::vector<char> done;
  std::vector<int> live;  // live[i]: cells of weight > 0 before cell i
  double logRange = 0;    // the last pass's log(largest tilted value / threshold)
  double logY(int j) const { return std::log(y[j]); }
};

TiltedConvolution::TiltedConvolution(int cells, std::array<std::vector<double>, 3> kernels, double kernelWidth)
    : n_(cells), kernels_(std::move(kernels)), width_(kernelWidth), workspace_(std::make_unique<Workspace>()) {
  const std::size_t size = kernels_[0].size();
  if (cells < 1 || size % 2 == 0 || kernels_[1].size() != size || kernels_[2].size() != size)
    throw std::invalid_argument("TiltedConvolution: n >= 1 cells and three kernels of one odd size");
  if (!(kernelWidth > 0)) throw std::invalid_argument("TiltedConvolution: the kernel width must be > 0");
  reach_ = static_cast<int>(size / 2);
}

TiltedConvolution::~TiltedConvolution() = default;

const RealFft& TiltedConvolution::fftOf(int n) const {
  auto& slot = ffts_[n];
  if (!slot) slot = std::make_unique<RealFft>(n);
  return *slot;
}

const TiltedConvolution::Tilt& TiltedConvolution::tiltFor(int t) const {
  if (const auto it = tilts_.find(t); it != tilts_.end()) return *it->second;
  if (tilts_.size() >= 64) tilts_.clear();  // a run's tilts recur; bound what a long run keeps
  auto tilt = std::make_unique<Tilt>();
  const int R = reach_;
  const auto& P = powers();
  int top = INT_MIN;
  for (int o = -R; o <= R; ++o)
    if (kernels_[0][static_cast<std::size_t>(o + R)] > 0)
      top = std::max(top, std::ilogb(kernels_[0][static_cast<std::size_t>(o + R)]) + split(long(t) * o).q);
  if (top == INT_MIN) throw std::logic_error("TiltedConvolution: the kernel W_0 has no positive entry");
  tilt->shift = top;
  std::array<std::vector<double>, 3> scaled;
  for (int k = 0; k < 3; ++k) {
    scaled[k].resize(kernels_[0].size());
    for (int o = -R; o <= R; ++o) {
      const Split s = split(long(t) * o);
      const std::size_t at = static_cast<std::size_t>(o + R);
      scaled[k][at] = std::ldexp(kernels_[k][at] * P.up[s.r], s.q - tilt->shift);
    }
  }
  int lo = R, hi = -R;
  for (int o = -R; o <= R; ++o)
    if (std::abs(scaled[0][static_cast<std::size_t>(o + R)]) >= kKernelWindow) {
      lo = std::min(lo, o);
      hi = std::max(hi, o);
    }
  tilt->lo = lo;
  tilt->hi = hi;
  for (int k = 0; k < 3; ++k) {
    double norm2 = 0, dropped = 0;
    for (int o = -R; o <= R; ++o) {
      const double w = scaled[k][static_cast<std::size_t>(o + R)];
      if (o < lo || o > hi) {
        dropped += std::abs(w);
      } else {
        tilt->values[k].push_back(w);
        norm2 += w * w;
      }
    }
    tilt->norm[k] = std::sqrt(norm2);
    tilt->dropped[k] = dropped;
  }
  return *(tilts_[t] = std::move(tilt));
}

double TiltedConvolution::passCost(int targets) const {
  const double window = std::min(2.0 * reach_ + 1, 20.0 * width_ + 1);
  const double N = RealFft::goodSize(static_cast<int>(targets + 2 * window));
  return 4 * kFftCost * N * std::log2(N) + 4 * kTiltCost * N;
}

double TiltedConvolution::costRelativeToDirect() const {
  // About five passes settle a smooth density's line (one for the bulk, two per tail); the direct sum costs three
  // multiply-adds per source and target in its reach.
  const double transform = 5 * passCost(n_) + kTiltCost * n_;
  const double direct = kSumCost * 3.0 * n_ * (2.0 * reach_ + 1);
  return transform / direct;
}

double TiltedConvolution::directValue(const Line& line, int j) const {
  const int R = reach_;
  const int from = std::max(0, j - R), to = std::min(n_ - 1, j + R);
  double sum = 0;
  for (int k = 0; k < 3; ++k) {
    const double* w = kernels_[k].data();
    const double* c = line.c[k];
    double part = 0;
    for (int i = from; i <= to; ++i) part += w[j - i + R] * c[i];
    sum += part;
  }
  return sum;
}

TiltedConvolution::Pass TiltedConvolution::pass(int t, int first, int last, Line& line) const {
  const Tilt& tilt = tiltFor(t);
  const int sa = std::max(0, first - tilt.hi), sb = std::min(n_, last - tilt.lo);
  Pass result;
  if (sa >= sb) return result;
  const int width = tilt.hi - tilt.lo + 1;
  const int N = RealFft::goodSize(sb - sa + width - 1);
  const RealFft& fft = fftOf(N);
  const std::size_t half = static_cast<std::size_t>(fft.spectrumSize());
  auto spectrum = tilt.spectra.find(N);
  if (spectrum == tilt.spectra.end()) {
    std::array<FftBuffer<std::complex<double>>, 3> s;
    FftBuffer<double> kernel(static_cast<std::size_t>(N));
    for (int k = 0; k < 3; ++k) {
      std::copy(tilt.values[k].begin(), tilt.values[k].end(), kernel.data());
      s[k] = FftBuffer<std::complex<double>>(half);
      fft.forward(kernel, s[k]);
    }
    spectrum = const_cast<Tilt&>(tilt).spectra.emplace(N, std::move(s)).first;
  }
  // Scale the sources: cell i by 2^(t (i - first) / kSteps - shift), shift making the largest tilted weight ~1.
  const auto& P = powers();
  Workspace& ws = *workspace_;
  ws.reserve(static_cast<std::size_t>(N));
  int shift = INT_MIN;
  for (int i = sa; i < sb; ++i)
    if (line.weight[i] > 0) shift = std::max(shift, binaryExponent(line.weight[i]) + split(long(t) * (i - first)).q);
  if (shift == INT_MIN) return result;
  double* factor = ws.factor.data();
  for (int i = sa; i < sb; ++i) {
    double f = 0.0;
    if (line.weight[i] > 0) {
      const Split s = split(long(t) * (i - first));
      if (binaryExponent(line.weight[i]) + s.q - shift >= kNegligibleExponent) f = P.up[s.r] * pow2(s.q - shift);
    }
    factor[i - sa] = f;
  }
  double* values = ws.values.data();
  std::complex<double>* sum = ws.sum.data();
  std::fill(sum, sum + half, std::complex<double>(0.0, 0.0));
  std::fill(values + (sb - sa), values + N, 0.0);
  double bound = 0;
  for (int k = 0; k < 3; ++k) {
    const double* ck = line.c[k] + sa;
    double norm2[4] = {0, 0, 0, 0};  // four partial sums: the loop is not one chain of additions
    int i = 0;
    for (; i + 4 <= sb - sa; i += 4)
      for (int l = 0; l < 4; ++l) {
        const double v = ck[i + l] * factor[i + l];
        values[i + l] = v;
        norm2[l] += v * v;
      }
    for (; i < sb - sa; ++i) {
      values[i] = ck[i] * factor[i];
      norm2[0] += values[i] * values[i];
    }
    const double norm = std::sqrt((norm2[0] + norm2[1]) + (norm2[2] + norm2[3]));
    fft.forward(ws.values, ws.term);
    const std::complex<double>* w = spectrum->second[static_cast<std::size_t>(k)].data();
    const std::complex<double>* term = ws.term.data();
    for (std::size_t f = 0; f < half; ++f) {  // sum += term * w, written out (no NaN/inf branch of operator*)
      const double re = term[f].real() * w[f].real() - term[f].imag() * w[f].imag();
      const double im = term[f].real() * w[f].imag() + term[f].imag() * w[f].real();
      sum[f] = {sum[f].real() + re, sum[f].imag() + im};
    }
    // FFT rounding, the kernel's truncation (|c~_k|_inf <= |c~_k|_2), the neglected cells (below 2^-1000 each).
    bound += std::sqrt(std::log2(static_cast<double>(N))) * kUnitRoundoff * norm * tilt.norm[k] +
             norm * tilt.dropped[k] + 0x1p-990 * norm * tilt.norm[k] * std::sqrt(double(width));
  }
  fft.inverse(ws.sum, ws.values);
  const double threshold = bound / kRelativeTolerance;
  double top = 0;
  for (int j = first; j < last; ++j) {
    const double z = values[j - sa - tilt.lo] / N;
    if (z > top) {
      top = z;
      result.peak = j;
    }
    if (line.done[static_cast<std::size_t>(j)] || !(z >= threshold) || !(z > 0)) continue;
    const Split s = split(long(t) * (j - first));
    line.y[j] = std::ldexp(z * P.down[s.r], shift + tilt.shift - s.q);
    line.done[static_cast<std::size_t>(j)] = 1;
    ++result.settled;
  }
  result.logRange = top > threshold && threshold > 0 ? std::log(top / threshold) : 0.0;
  return result;
}

// March from the settled cells into every unsettled run on one side of them: direction +1 takes the runs whose left
// neighbour is settled, moving right; -1 the mirror.
void TiltedConvolution::march(int direction, Line& line, Work& work) const {
  const double ln2 = std::log(2.0);
  const double steepest = -1.0 / (width_ * width_);
  const int largest = static_cast<int>(kLargestTilt / width_ * kSteps / ln2);
  auto done = [&](int j) { return j >= 0 && j < n_ && line.done[static_cast<std::size_t>(j)]; };
  int from = direction > 0 ? 1 : n_ - 2;
  for (;;) {
    // The next frontier: an unsettled cell whose inner neighbour (left for +1) is settled.
    int f = -1;
    for (int j = from; j >= 0 && j < n_; j += direction)
      if (!done(j) && done(j - direction)) {
        f = j;
        break;
      }
    if (f < 0) return;
    int runEnd = f;  // exclusive, in the direction of the march
    while (runEnd >= 0 && runEnd < n_ && !done(runEnd)) runEnd += direction;
    int good = 0;  // the last tilt that moved the frontier
    for (int passes = 0; passes < kMaxPassesPerRun && f != runEnd; ++passes) {
      const int length = std::abs(runEnd - f);
      long live = 0;
      for (int j = f; j != runEnd; j += direction)
        if (!done(j)) ++live;
      if (passCost(length) >= kSumCost * 3.0 * (2.0 * reach_ + 1) * live) break;
      // log y's slope and curvature at the settled cell f - direction, along the march.
      const int a = f - direction, b = a - direction, c = b - direction;
      if (!done(b) || !(line.y[a] > 0) || !(line.y[b] > 0)) break;
      double curvature = steepest;
      if (done(c) && line.y[c] > 0) curvature = std::clamp(line.logY(a) - 2 * line.logY(b) + line.logY(c), steepest, 0.0);
      const double slope = line.logY(a) - line.logY(b) + 0.5 * curvature;
      // Put the tilted peak 0.8 of the settled half-width beyond the frontier (at most the run's middle); where log y
      // is straight, the tilt that flattens it.
      double ahead = 0;
      if (curvature < 0) ahead = 1 + std::min(0.8 * std::sqrt(2 * std::max(line.logRange, 1.0) / -curvature), 0.5 * length);
      const double lambda = -(slope + curvature * ahead);  // along the march, per cell
      int t = direction * static_cast<int>(std::lround(lambda * kSteps / ln2));
      if ((t - good) * direction <= 0) t = good + direction;
      // A tilt that overshoots (its tilted peak beyond the frontier, the frontier itself too low) is halved toward the
      // last good one.
      bool moved = false;
      for (int attempt = 0; attempt < 6 && std::abs(t) <= largest; ++attempt) {
        const int first = direction > 0 ? f : runEnd + 1, last = direction > 0 ? runEnd : f + 1;
        const Pass p = pass(t, first, last, line);
        ++work.passes;
        if (p.logRange > 0) line.logRange = p.logRange;
        const int before = f;
        while (f != runEnd && done(f)) f += direction;
        if (f != before) {
          moved = true;
          good = t;
          break;
        }
        if ((p.peak - f) * direction <= 0 || std::abs(t - good) <= 1) break;
        t = good + (t - good) / 2;
      }
      if (!moved) break;
    }
    from = runEnd;
    if (from < 0 || from >= n_) return;
  }
}

TiltedConvolution::Work TiltedConvolution::apply(const std::array<const double*, 3>& c, const double* weight,
                                                 double* y) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  Work work;
  Line line{c, weight, y, std::vector<char>(static_cast<std::size_t>(n_), 0), std::vector<int>(n_ + 1, 0)};
  for (int i = 0; i < n_; ++i) line.live[i + 1] = line.live[i] + (weight[i] > 0 ? 1 : 0);
  for (int j = 0; j < n_; ++j) {
    const int lo = std::max(0, j - reach_), hi = std::min(n_, j + reach_ + 1);
    if (line.live[hi] == line.live[lo]) {
      y[j] = 0.0;  // nothing within the kernel's reach: the direct sum deposits nothing either
      line.done[static_cast<std::size_t>(j)] = 1;
    }
  }
  const Pass first = pass(0, 0, n_, line);
  ++work.passes;
  line.logRange = first.logRange;
  march(+1, line, work);
  march(-1, line, work);
  for (int j = 0; j < n_; ++j)
    if (!line.done[static_cast<std::size_t>(j)]) {
      y[j] = std::max(directValue(line, j), 0.0);
      ++work.summed;
    }
  total_.passes += work.passes;
  total_.summed += work.summed;
  return work;
}

TiltedConvolution::Work TiltedConvolution::total() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return total_;
}

}  // namespace fpdp::solver
