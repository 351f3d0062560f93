#pragma once
// The random numbers of the Monte Carlo sampler (validation/MonteCarloSampler.hpp), generated for W particles at
// once as plain loops over the lanes (structure of arrays) that the compiler vectorises.
//
// Generator: Philox4x32-10 (Salmon, Moraes, Dror and Shaw 2011; Random123's r123::Philox4x32 bit for bit,
// tests/validation/test_lane_random.cpp). Key: the seed's two 32-bit halves. Counter: (block, particle's low 32 bits,
// particle's high 32 bits, 4 process + stream), process 0 for D and 1 for D'; stream 0 holds the initial draw, 1 the
// noise, 2 the Poisson batches, 3 the ziggurat's rare extra words. Block b of a stream holds its 64-bit words 2b and
// 2b + 1, word 2b + h = (x[2h + 1] << 32) | x[2h]. Every counter is distinct, so every word of every stream of every
// particle is an independent output of one keyed bijection.
//
// Normals: N(0, 1) variate j of streams 0 and 1 is decided by word j of that stream through Doornik's 256-layer
// ziggurat (bits 12..63 the uniform u in [-1, 1), bits 0..7 the layer): inside the layer's rectangle (98.5 %) it is
// u x_i, computed for all lanes at once; otherwise the wedge test or the exact tail beyond R take their uniforms,
// and a rejection its fresh word, from the particle's stream 3, read in order (the variates of a particle are
// decided in increasing j, the initial draw before the noise). The law is exactly the ziggurat's (every word used is
// a fresh independent one), and variate j is a function of (seed, particle, process, j) and the particle's own
// earlier rejections only: the same whatever the lanes, threads or ranks.
#include <Random123/philox.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace fpdp::validation::lanes {

/// Philox4x32-10 of the W counters (c0, c1, c2, c3)[p] under the key (k0, k1), in place. The 32-bit words are held
/// in 64-bit lanes (upper halves zero): the products then need no unpacking, 25 % faster than 32-bit storage.
template <int W>
[[gnu::always_inline]] inline void philoxRounds(std::uint64_t* __restrict c0, std::uint64_t* __restrict c1,
                                                std::uint64_t* __restrict c2, std::uint64_t* __restrict c3,
                                                std::uint32_t k0, std::uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    for (int p = 0; p < W; ++p) {
      const std::uint64_t product0 = std::uint64_t{0xD2511F53u} * (c0[p] & 0xFFFFFFFFu);
      const std::uint64_t product1 = std::uint64_t{0xCD9E8D57u} * (c2[p] & 0xFFFFFFFFu);
      const std::uint64_t n0 = (product1 >> 32) ^ c1[p] ^ k0;
      const std::uint64_t n2 = (product0 >> 32) ^ c3[p] ^ k1;
      c1[p] = product1 & 0xFFFFFFFFu;
      c3[p] = product0 & 0xFFFFFFFFu;
      c0[p] = n0;
      c2[p] = n2;
    }
    k0 += 0x9E3779B9u;  // the Weyl key schedule
    k1 += 0xBB67AE85u;
  }
}

enum Stream : std::uint32_t { kInitialStream = 0, kNoiseStream = 1, kPoissonStream = 2, kSpillStream = 3 };

/// The key of a seed.
struct StreamKey {
  std::uint32_t k0, k1;
  explicit StreamKey(std::uint64_t seed)
      : k0(static_cast<std::uint32_t>(seed)), k1(static_cast<std::uint32_t>(seed >> 32)) {}
};

/// One Philox block for each of W particles: words[0..3][p] (32-bit values in 64-bit lanes).
template <int W>
struct LaneBlock {
  alignas(64) std::uint64_t words[4][W];
  /// Block `block` of stream `stream` of process `process` for the particles whose indices' halves are lo[p], hi[p].
  [[gnu::always_inline]] void generate(StreamKey key, std::uint32_t block, const std::uint32_t* lo,
                                       const std::uint32_t* hi, std::uint32_t process, std::uint32_t stream) {
    for (int p = 0; p < W; ++p) {
      words[0][p] = block;
      words[1][p] = lo[p];
      words[2][p] = hi[p];
      words[3][p] = 4 * process + stream;
    }
    philoxRounds<W>(words[0], words[1], words[2], words[3], key.k0, key.k1);
  }
  /// The 64-bit word h (0 or 1) of lane p.
  [[gnu::always_inline]] std::uint64_t word(int h, int p) const { return (words[2 * h + 1][p] << 32) | words[2 * h][p]; }
};

/// Doornik's ziggurat ("An improved ziggurat method to generate normal random samples", 2005; Marsaglia and Tsang's
/// with the layer index and the uniform from independent bits) on 256 layers (Marsaglia and Tsang's R and V for 256;
/// 1.49 % of the words miss their rectangle, 2.76 % with 128 layers): x[0] = V / f(R) (the base layer with
/// the tail), x[1] = R, x[i] = sqrt(-2 log(V / x[i-1] + f(x[i-1]))), x[256] = 0, ratio[i] = x[i+1] / x[i],
/// f[i] = f(x[i]) = exp(-x[i]^2 / 2) (the wedge test's ends).
struct ZigguratTables {
  static constexpr int kLayers = 256;
  static constexpr double kR = 3.6541528853610088, kV = 4.92867323399e-3;
  double x[kLayers + 1], ratio[kLayers], f[kLayers + 1];
  ZigguratTables() {
    double fPrevious = std::exp(-0.5 * kR * kR);
    x[0] = kV / fPrevious;
    x[1] = kR;
    x[kLayers] = 0.0;
    for (int i = 2; i < kLayers; ++i) {
      x[i] = std::sqrt(-2.0 * std::log(kV / x[i - 1] + fPrevious));
      fPrevious = std::exp(-0.5 * x[i] * x[i]);
    }
    for (int i = 0; i < kLayers; ++i) ratio[i] = x[i + 1] / x[i];
    for (int i = 0; i <= kLayers; ++i) f[i] = std::exp(-0.5 * x[i] * x[i]);
  }
};

inline const ZigguratTables kZiggurat;  // built at start-up: no initialisation guard in the inner loop

/// The ziggurat's uniform u in [-1, 1) from bits 12..63 of a word (52 bits: [2, 4) built in the mantissa, minus 3).
[[gnu::always_inline]] inline double zigguratUniform(std::uint64_t w) {
  return std::bit_cast<double>(0x4000000000000000ull | (w >> 12)) - 3.0;
}

/// Fast path of the ziggurat for the two variates of each lane's block: z[h * W + p] = u x_i inside the layer's
/// rectangle, NaN otherwise (the caller then calls zigguratEdge with the same word, kept in w[h * W + p]).
template <int W>
[[gnu::always_inline]] inline void zigguratRectangles(const LaneBlock<W>& block, double* __restrict z,
                                                      std::uint64_t* __restrict w) {
  // Two passes: 32-bit lanes to 64-bit words, then 64-bit words to doubles (one element width per loop, so that
  // the table reads become vector gathers).
  for (int h = 0; h < 2; ++h)
    for (int p = 0; p < W; ++p) w[h * W + p] = block.word(h, p);
  for (int j = 0; j < 2 * W; ++j) {
    const std::uint64_t word = w[j];
    const double u = zigguratUniform(word);
    const std::uint64_t i = word & (ZigguratTables::kLayers - 1);
    const double x = kZiggurat.x[i], ratio = kZiggurat.ratio[i];  // read unconditionally: no branch in the loop
    z[j] = std::fabs(u) < ratio ? u * x : std::numeric_limits<double>::quiet_NaN();
  }
}

/// The 64-bit words of one particle's stream 3, in order (scalar: 1.2 % of the variates need them).
class SpillWords {
public:
  SpillWords() = default;
  SpillWords(StreamKey key, std::uint64_t particle, std::uint32_t process)
      : key_{{key.k0, key.k1}},
        lo_(static_cast<std::uint32_t>(particle)),
        hi_(static_cast<std::uint32_t>(particle >> 32)),
        tag_(4 * process + kSpillStream) {}
  std::uint64_t next() {
    if (used_ == 2) {
      words_ = r123::Philox4x32()(r123::Philox4x32::ctr_type{{block_++, lo_, hi_, tag_}}, key_);
      used_ = 0;
    }
    const int h = used_++;
    return (std::uint64_t{words_[2 * h + 1]} << 32) | words_[2 * h];
  }
  /// A uniform in (0, 1) from one word: (53 top bits + 1/2) 2^-53, never 0 (the tail takes its log).
  double open01() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1p-53; }

private:
  r123::Philox4x32::key_type key_{};
  std::uint32_t lo_ = 0, hi_ = 0, tag_ = 0, block_ = 0;
  r123::Philox4x32::ctr_type words_{};
  int used_ = 2;
};

/// The variate of a word that missed its rectangle: the base layer's exact tail beyond R (Marsaglia), the wedge test
/// otherwise, and after a rejection the ziggurat again on fresh words of stream 3.
double zigguratEdge(std::uint64_t word, SpillWords& spill);

}  // namespace fpdp::validation::lanes
