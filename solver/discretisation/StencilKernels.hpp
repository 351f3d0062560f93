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

#include <cmath>
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

/// One term of the forward Chebyshev recurrence on the rows of one run: t <- scale (A x) + 2 x - t, s <- s + weight t;
/// returns the larger of largest and max |t| (docs/scheme.md §3, "Operators without detailed balance").
template <int N, std::size_t... O>
[[gnu::always_inline]] inline double chebyshevRun(const double* const* coefficients, const PetscInt* offsets,
                                                  PetscInt q0, const double* x, double* __restrict t,
                                                  double* __restrict s, PetscInt n, double scale, double weight,
                                                  double largest, std::index_sequence<O...>) {
  const double* const c[N] = {(coefficients[O] + q0)...};
  const PetscInt off[N] = {offsets[O]...};
  for (PetscInt v = 0; v < n; ++v) {
    double acc = c[0][v] * x[v];
    ((O > 0 ? (acc = std::fma(c[O][v], x[v + off[O]], acc), 0) : 0), ...);
    const double next = std::fma(scale, acc, 2.0 * x[v] - t[v]);
    t[v] = next;
    s[v] = std::fma(weight, next, s[v]);
    const double size = std::fabs(next);
    largest = size > largest ? size : largest;
  }
  return largest;
}

}  // namespace fpdp::solver::kernels
