#pragma once
// The fpdp command line: sub-commands, fpdp's own --options, and PETSc options passed through.
//
//   fpdp run CASE.toml [--output DIR] [--quiet] [-petsc_option value ...]
//   fpdp run --restart DIR [CASE.toml] [--quiet] [-petsc_option value ...]   (continue an interrupted run)
//   fpdp sample CASE.toml [--particles N] [--seed S] [--threads T] [--output DIR] [--quiet]
//   fpdp check CASE.toml
//   (run and check also take --set KEY=VALUE, overriding a key of the case file)
//   fpdp sweep ..., fpdp worst-case ..., fpdp validate ...: parsed by their own commands
//   fpdp plot [--describe] DIR   (app/plots/RunFigures: parsed there, no PETSc)
//   fpdp schema            (prints docs/parameters.md, generated from the schema)
//   fpdp --help | --version
// Tokens that start with a single '-' (and the value after each) are PETSc options; they override the case.
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/case/CaseOverrides.hpp"

namespace fpdp::app {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct CommandLine {
  std::string command;                 // run | check | schema | help | version
  std::string casePath;                // empty for run --restart without a case (the checkpoint's case is used)
  std::optional<std::string> output;   // --output DIR
  std::optional<std::string> restart;  // run --restart DIR: continue the interrupted run in DIR(.partial)
  bool quiet = false;                  // --quiet: no progress line
  bool allowOutside = false;           // --allow-outside: the case's output.directory may leave the folder it names
  std::optional<long> particles;       // sample: --particles N (overrides sampler.particles)
  std::optional<long long> seed;       // sample: --seed S
  std::optional<int> threads;          // sample: --threads T
  std::vector<std::string> petscArgs;  // passed to PetscInitialize
  std::vector<CaseOverride> overrides; // run, check: --set KEY=VALUE (app/case/CaseOverrides)
};

CommandLine parseCommandLine(int argc, const char* const* argv);
/// The integer value of option `name`, in [lo, hi]; throws UsageError naming the option, the value and the range.
long long integerOption(const std::string& name, const std::string& text, long long lo, long long hi);
std::string helpText();

}  // namespace fpdp::app
