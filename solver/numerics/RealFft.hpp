#pragma once
// Real-to-complex and complex-to-real discrete Fourier transforms of one length, through FFTW.
//
// Plans are made with FFTW_ESTIMATE, never FFTW_MEASURE: MEASURE times candidate algorithms and may choose another one
// in another run, whose rounding differs, so a run's numbers would not repeat bit for bit. Every buffer a plan is
// executed on comes from fftw_malloc (FftBuffer), so the plan's SIMD alignment assumption holds for all of them. Making
// a plan is serialised (FFTW's planner is not thread-safe); executing one is safe from several threads.
#include <complex>
#include <cstddef>
#include <memory>

namespace fpdp::solver {

/// Storage aligned as FFTW's SIMD code expects (fftw_malloc), zero-initialised.
template <class T>
class FftBuffer {
public:
  FftBuffer() = default;
  explicit FftBuffer(std::size_t n);
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  std::size_t size() const { return size_; }

private:
  struct Free {
    void operator()(T* p) const;
  };
  std::unique_ptr<T[], Free> data_;
  std::size_t size_ = 0;
};

class RealFft {
public:
  /// n >= 1 points.
  explicit RealFft(int n);
  ~RealFft();
  RealFft(const RealFft&) = delete;
  RealFft& operator=(const RealFft&) = delete;

  int size() const { return n_; }
  /// n/2 + 1: the non-redundant half of a real sequence's spectrum.
  int spectrumSize() const { return n_ / 2 + 1; }
  /// spectrum = DFT(values): values n reals (kept), spectrum n/2 + 1 complex.
  void forward(const FftBuffer<double>& values, FftBuffer<std::complex<double>>& spectrum) const;
  /// values = n * IDFT(spectrum) (unnormalised, as FFTW): spectrum n/2 + 1 complex (overwritten), values n reals.
  void inverse(FftBuffer<std::complex<double>>& spectrum, FftBuffer<double>& values) const;

  /// The smallest 2^a 3^b 5^c >= n (lengths FFTW transforms fastest).
  static int goodSize(int n);

private:
  int n_;
  void* forward_ = nullptr;  // fftw_plan
  void* inverse_ = nullptr;
};

}  // namespace fpdp::solver
