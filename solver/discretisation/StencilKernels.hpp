#pragma once
// The inner loops of the star-stencil kernels (StencilOperator, ClenshawWavefront): one home for the arithmetic of a
// row, so that every caller gives the same bits. Internal to solver/: include it only from files compiled with
// -ffp-contract=off (solver/CMakeLists.txt).
//
// The loops run over the rows v = 0 .. n-1 of one run, with (A x)_v summed as the diagonal's term first, then points
// 1..N-1 in order (point 0 has offset 0). The points' pointers and offsets are local arrays read at constant indices
// (the fold), the written arrays __restrict parameters, and the caller loops over the runs itself: so the loop
// vectorises. Through a struct's members the pointers were loaded anew for every row, and inside a lambda the
// compiler lost track of them: neither vectorised (GCC 12: "no vectype"). The 256^2 benchmark's Chebyshev terms:
// 80 ms, now 42 (docs/scaling.md §2). One x pointer with integer offsets, not one pointer per point: that spilled
// registers (10 % of a term).
//
// Every multiply-add is an explicit fused one (std::fma), and the including files are compiled with
// -ffp-contract=off, so that the arithmetic is the same wherever the kernels run: as vector FMA instructions in the
// copies compiled for AVX2 + FMA (chosen at run time when the processor has them), as libm's correctly rounded fma
// elsewhere (slow, but the same bits). Fused, the 256^2 benchmark's Chebyshev expansion takes 25 % less time than
// with a separate multiply and add (bench/README.md; 2026-11-22, commit 221a139); the x86-64 baseline the build
// targets has no FMA instruction.
#include <petscsys.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <utility>

#if defined(__x86_64__) && defined(__GNUC__)
#define FPDP_FMA_KERNELS 1
/// Marks a function as the copy compiled for AVX2 + FMA.
#define FPDP_FMA_TARGET __attribute__((target("avx2,fma")))
#else
#define FPDP_FMA_KERNELS 0
#define FPDP_FMA_TARGET
#endif

namespace fpdp::solver::kernels {

/// Whether the AVX2 + FMA copies are to run: the processor has them and StencilOperator::useVectorKernels has not
/// switched them off (solver/discretisation/StencilOperator.cpp).
bool fmaKernels();

/// r = b - A x on the rows of one run.
template <int N, std::size_t... O>
[[gnu::always_inline]] inline void residualRun(const double* const* coefficients, const PetscInt* offsets, PetscInt q0,
                                               const double* x, const double* __restrict b, double* __restrict r,
                                               PetscInt n, std::index_sequence<O...>) {
  const double* const c[N] = {(coefficients[O] + q0)...};
  const PetscInt off[N] = {offsets[O]...};
  for (PetscInt v = 0; v < n; ++v) {
    double acc = c[0][v] * x[v];
    ((O > 0 ? (acc = std::fma(c[O][v], x[v + off[O]], acc), 0) : 0), ...);
    r[v] = b[v] - acc;
  }
}

/// One step of the Clenshaw recurrence on the rows of one run: t <- scale (A x) + 2 x - t + weight u
/// (docs/scheme.md §3).
template <int N, std::size_t... O>
[[gnu::always_inline]] inline void clenshawRun(const double* const* coefficients, const PetscInt* offsets,
                                               PetscInt q0, const double* x, double* __restrict t,
                                               const double* __restrict u, PetscInt n, double scale, double weight,
                                               std::index_sequence<O...>) {
  const double* const c[N] = {(coefficients[O] + q0)...};
  const PetscInt off[N] = {offsets[O]...};
  for (PetscInt v = 0; v < n; ++v) {
    double acc = c[0][v] * x[v];
    ((O > 0 ? (acc = std::fma(c[O][v], x[v + off[O]], acc), 0) : 0), ...);
    t[v] = std::fma(scale, acc, std::fma(weight, u[v], 2.0 * x[v] - t[v]));
  }
}

/// The larger of m and |x| as the bits of a non-negative double: their order is that of the doubles (NaN above
/// +inf), and an integer maximum vectorises where a floating-point one does not (GCC 12 keeps a double max reduction
/// scalar without -ffast-math: the Chebyshev term ran 0 vector instructions).
[[gnu::always_inline]] inline std::int64_t largerMagnitude(std::int64_t m, double x) {
  const std::int64_t bits = std::bit_cast<std::int64_t>(x) & INT64_MAX;
  return bits > m ? bits : m;
}

/// The forward Chebyshev term's update of one row from its row sum acc = (A x)_v: t <- scale acc + 2 x - t,
/// s <- s + weight t, largest <- max(largest, |t|).
[[gnu::always_inline]] inline void chebyshevUpdate(double acc, double x, double& t, double& s, double scale,
                                                   double weight, std::int64_t& largest) {
  const double next = std::fma(scale, acc, 2.0 * x - t);
  t = next;
  s = std::fma(weight, next, s);
  largest = largerMagnitude(largest, next);
}

/// One term of the forward Chebyshev recurrence on the rows of one run: t <- scale (A x) + 2 x - t, s <- s + weight t;
/// returns the larger of largest (the bits of a non-negative double) and max |t| (docs/scheme.md §3, "Operators
/// without detailed balance").
template <int N, std::size_t... O>
[[gnu::always_inline]] inline double chebyshevRun(const double* const* coefficients, const PetscInt* offsets,
                                                  PetscInt q0, const double* x, double* __restrict t,
                                                  double* __restrict s, PetscInt n, double scale, double weight,
                                                  std::int64_t largest, std::index_sequence<O...>) {
  const double* const c[N] = {(coefficients[O] + q0)...};
  const PetscInt off[N] = {offsets[O]...};
  for (PetscInt v = 0; v < n; ++v) {
    double acc = c[0][v] * x[v];
    ((O > 0 ? (acc = std::fma(c[O][v], x[v + off[O]], acc), 0) : 0), ...);
    chebyshevUpdate(acc, x[v], t[v], s[v], scale, weight, largest);
  }
  return std::bit_cast<double>(largest);
}

/// A box stencil stored compressed (StencilOperator: uniform meshes, two interlaced fields): the star points'
/// arrays, then the off-axis points, whose coefficients are constant along a run, one value per field
/// (k[2 m + v % 2]). Row sum (A x)_v in that order.
template <int NS, int NC>
[[gnu::always_inline]] inline double compressedRowSum(const double* const (&c)[NS], const PetscInt (&off)[NS],
                                                      const double* k, const PetscInt (&koff)[NC], const double* x,
                                                      PetscInt v) {
  double acc = c[0][v] * x[v];
#pragma GCC unroll 8
  for (int o = 1; o < NS; ++o) acc = std::fma(c[o][v], x[v + off[o]], acc);
  const PetscInt f = v & 1;
#pragma GCC unroll 20
  for (int m = 0; m < NC; ++m) acc = std::fma(k[2 * m + f], x[v + koff[m]], acc);
  return acc;
}

/// chebyshevRun for a compressed box stencil; k: the run's constants, koffsets: the off-axis points' offsets.
template <int NS, int NC>
[[gnu::always_inline]] inline double compressedChebyshevRun(const double* const* coefficients, const PetscInt* offsets,
                                                            const double* k, PetscInt q0, const double* x,
                                                            double* __restrict t, double* __restrict s, PetscInt n,
                                                            double scale, double weight, std::int64_t largest) {
  const double* c[NS];
  PetscInt off[NS], koff[NC];
  for (int o = 0; o < NS; ++o) c[o] = coefficients[o] + q0, off[o] = offsets[o];
  for (int m = 0; m < NC; ++m) koff[m] = offsets[NS + m];
  for (PetscInt v = 0; v < n; ++v) {
    const double acc = compressedRowSum<NS, NC>(c, off, k, koff, x, v);
    chebyshevUpdate(acc, x[v], t[v], s[v], scale, weight, largest);
  }
  return std::bit_cast<double>(largest);
}

/// residualRun for a compressed box stencil.
template <int NS, int NC>
[[gnu::always_inline]] inline void compressedResidualRun(const double* const* coefficients, const PetscInt* offsets,
                                                         const double* k, PetscInt q0, const double* x,
                                                         const double* __restrict b, double* __restrict r, PetscInt n) {
  const double* c[NS];
  PetscInt off[NS], koff[NC];
  for (int o = 0; o < NS; ++o) c[o] = coefficients[o] + q0, off[o] = offsets[o];
  for (int m = 0; m < NC; ++m) koff[m] = offsets[NS + m];
  for (PetscInt v = 0; v < n; ++v) r[v] = b[v] - compressedRowSum<NS, NC>(c, off, k, koff, x, v);
}

}  // namespace fpdp::solver::kernels
