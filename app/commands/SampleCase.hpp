#pragma once
// `fpdp sample`: the Monte Carlo check of a case (validation/MonteCarloSampler, validation/SampleAgreement).
//
// The story of a sample run (SampleCase.cpp):
//   1. models and mesh exactly as `fpdp run` builds them (app/run/ModelBuilding);
//   2. N particles on D and N on D', noisy GD (or Euler–Maruyama for Langevin), counted on the mesh at the output
//      steps of [sampler];
//   3. if DIR already holds `fpdp run`'s output of the same case (parameters.toml equal but for [sampler], fpdp.h5
//      with fields at those steps): the agreement with the solver (histograms at N/16, N/4 and N, divergences from
//      samples, plug-in estimates, the membership-inference audit);
//   4. files sample.h5, sample_moments.csv (and with the solver's output sample_agreement.csv, sample_divergence.csv,
//      sample_audit.csv) written beside the solver's (docs/output.md). They are written into DIR.sample-partial/ and
//      moved into DIR only when everything succeeded; a new DIR also gets parameters.toml.
#include <cstdint>
#include <optional>
#include <string>

#include "app/case/Case.hpp"

namespace fpdp::app {

struct SampleOptions {
  std::string outputDirectory;
  bool quiet = false;
  std::optional<long> particles;
  std::optional<std::uint64_t> seed;
  std::optional<int> threads;
};

/// Collective over PETSC_COMM_WORLD. Returns the exit status (0 on success); throws OutputDirectoryError for an
/// output directory that may not be written.
int sampleCase(const Case& c, const SampleOptions& options);

}  // namespace fpdp::app
