#pragma once
// `fpdp noise-study CASE.toml`: does anisotropic noise buy privacy at equal accuracy? (BKPP §4, §6.1; MATH.md §4.)
//
// The budget is the trace of the case's noise covariance (for the quadratic loss, twice the stationary excess loss
// (1/2) tr Sigma). With Sigma = Sigma' the BKPP bound is KL_t <= (1/4) int_0^t E_{p_s} (b - b')^T Sigma^{-1} (b - b') ds;
// for diagonal Sigma = diag(s_a) it is (1/4) sum_a A_a / s_a with A_a = int_0^t E_{p_s}[(b - b')_a^2] ds, minimised under
// sum_a s_a = budget by s_a = budget sqrt(A_a) / sum_b sqrt(A_b) (Lagrange). The study
//   1. runs the case with isotropic noise (budget/d) I and measures A_a (kl_rate.csv),
//   2. runs it again with the bound-optimal diagonal Sigma,
//   3. reports, for both, the bound and the TRUE KL, R_alpha and TV at the final time,
// so the answer rests on the computed divergences, not on the bound alone. (A_a is taken from the isotropic run: one
// step of the fixed point, since A_a depends on p and hence on Sigma; the anisotropic run's own bound is reported too.)
#include "app/case/Case.hpp"
#include "app/commands/RunCase.hpp"

namespace fpdp::app {

/// Collective. Writes DIR/isotropic/, DIR/anisotropic/ and DIR/noise-study.csv; returns the exit status.
int runNoiseStudy(const Case& c, const RunOptions& options);

}  // namespace fpdp::app
