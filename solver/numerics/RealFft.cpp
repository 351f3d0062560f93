#include "solver/numerics/RealFft.hpp"

#include <fftw3.h>

#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

namespace fpdp::solver {

namespace {
std::mutex& plannerMutex() {
  static std::mutex m;
  return m;
}
}  // namespace

template <class T>
FftBuffer<T>::FftBuffer(std::size_t n) : data_(static_cast<T*>(fftw_malloc(sizeof(T) * (n > 0 ? n : 1)))), size_(n) {
  if (!data_) throw std::bad_alloc();
  for (std::size_t i = 0; i < n; ++i) data_[i] = T{};
}

template <class T>
void FftBuffer<T>::Free::operator()(T* p) const {
  fftw_free(p);
}

template class FftBuffer<double>;
template class FftBuffer<std::complex<double>>;

RealFft::RealFft(int n) : n_(n) {
  if (n < 1) throw std::invalid_argument("RealFft: the length must be at least 1, got " + std::to_string(n));
  FftBuffer<double> values(static_cast<std::size_t>(n));
  FftBuffer<std::complex<double>> spectrum(static_cast<std::size_t>(spectrumSize()));
  auto* s = reinterpret_cast<fftw_complex*>(spectrum.data());
  const std::lock_guard<std::mutex> lock(plannerMutex());
  forward_ = fftw_plan_dft_r2c_1d(n, values.data(), s, FFTW_ESTIMATE);
  inverse_ = fftw_plan_dft_c2r_1d(n, s, values.data(), FFTW_ESTIMATE);
  if (!forward_ || !inverse_) throw std::runtime_error("RealFft: FFTW made no plan for length " + std::to_string(n));
}

RealFft::~RealFft() {
  const std::lock_guard<std::mutex> lock(plannerMutex());
  if (forward_) fftw_destroy_plan(static_cast<fftw_plan>(forward_));
  if (inverse_) fftw_destroy_plan(static_cast<fftw_plan>(inverse_));
}

void RealFft::forward(const FftBuffer<double>& values, FftBuffer<std::complex<double>>& spectrum) const {
  // The r2c transform does not write its input (FFTW_PRESERVE_INPUT is its default); the cast only meets the API.
  fftw_execute_dft_r2c(static_cast<fftw_plan>(forward_), const_cast<double*>(values.data()),
                       reinterpret_cast<fftw_complex*>(spectrum.data()));
}

void RealFft::inverse(FftBuffer<std::complex<double>>& spectrum, FftBuffer<double>& values) const {
  fftw_execute_dft_c2r(static_cast<fftw_plan>(inverse_), reinterpret_cast<fftw_complex*>(spectrum.data()),
                       values.data());
}

int RealFft::goodSize(int n) {
  int best = 1;
  while (best < n) best *= 2;
  for (long p5 = 1; p5 < best; p5 *= 5)
    for (long p35 = p5; p35 < best; p35 *= 3) {
      long m = p35;
      while (m < n) m *= 2;
      if (m < best) best = static_cast<int>(m);
    }
  return best;
}

}  // namespace fpdp::solver
