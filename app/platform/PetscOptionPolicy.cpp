#include "app/platform/PetscOptionPolicy.hpp"

#include <algorithm>
#include <array>

namespace fpdp::app {

namespace {

bool startsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// The option prefixes of fpdp's own TS objects: the Langevin run's (none) and noisy GD's diffusion ("diffusion_",
// solver/noisygd/NoisyGradientDescent.cpp).
constexpr std::array<std::string_view, 2> kTsPrefixes = {"-", "-diffusion_"};

// Options that end the run before the case's horizon (time.t_end, noisy_gd.steps), change its steps (time.dt), or
// let it go on past a failed step: the summary would report the case's horizon for a run that did not reach it.
// PETSc 3.18 names; -ts_time_step and -ts_final_time are the newer and the older name of -ts_dt and -ts_max_time.
constexpr std::array<std::string_view, 11> kHorizonOptions = {
    "ts_max_steps", "ts_max_time", "ts_final_time", "ts_dt", "ts_time_step", "ts_init_time",
    "ts_exact_final_time", "ts_max_snes_failures", "ts_max_reject", "ts_error_if_step_fails", "ts_run_steps"};

// Options that read further options from somewhere else, past these checks.
constexpr std::array<std::string_view, 4> kOptionSources = {"-options_file", "-options_file_yaml",
                                                            "-options_string_yaml", "-options_string"};

// Prefixes a case file's options may have: the solver's objects (and fpdp's own switches).
constexpr std::array<std::string_view, 7> kCasePrefixes = {"ts_", "ksp_", "pc_", "snes_", "mg_", "sub_", "fpdp_"};

// Diagnostics a case file may switch on: they print to standard output when given without a value (a value is a
// PETSc viewer, which may name a file).
constexpr std::array<std::string_view, 4> kDiagnosticEndings = {"_view", "_monitor", "_monitor_true_residual",
                                                                "_converged_reason"};

// Words in option names that write, read or draw: viewers, monitors with files or windows, logs, trajectories.
constexpr std::array<std::string_view, 18> kOutputWords = {"view",   "monitor", "draw",  "log",    "trajectory",
                                                           "save",   "dump",    "history", "file", "dir",
                                                           "python", "vtk",     "binary", "hdf5",  "socket",
                                                           "matlab", "_lg",     "converged_reason"};

}  // namespace

std::optional<std::string> forbiddenPetscOption(std::string_view name) {
  for (std::string_view source : kOptionSources)
    if (name == source)
      return "reads options from elsewhere, past fpdp's checks; give the options on the command line or in "
             "solver.petsc_options";
  for (std::string_view prefix : kTsPrefixes) {
    if (!startsWith(name, prefix)) continue;
    const std::string_view rest = name.substr(prefix.size());
    // The run's output steps are fixed steps of time.dt (TSSetMaxSteps): with adaptive steps TSSolve ended after the
    // first output step, and the summary reported t_end with divergences of 0.
    if (rest == "ts_adapt_type")
      return std::string("makes the steps adaptive, but fpdp's output steps are fixed steps of time.dt (the run would "
                         "end early); choose time.dt in the case instead");
    if (std::find(kHorizonOptions.begin(), kHorizonOptions.end(), rest) != kHorizonOptions.end())
      return "sets the horizon or the steps of the run, or lets it go on past a failed step, while the summary "
             "would report the case's; set time.t_end and time.dt (Langevin) or noisy_gd.steps (noisy GD) in the "
             "case instead";
  }
  return std::nullopt;
}

std::optional<std::string> caseFilePetscOptionProblem(std::string_view name, std::string_view value) {
  if (auto forbidden = forbiddenPetscOption(name)) return forbidden;
  const bool wellFormed = name.size() >= 2 && name[0] == '-' && std::all_of(name.begin() + 1, name.end(), [](char c) {
                            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
                          });
  if (!wellFormed) return std::string("is not a PETSc option name made of [a-z0-9_]");
  std::string_view bare = name.substr(1);
  if (startsWith(bare, "diffusion_")) bare.remove_prefix(std::string_view("diffusion_").size());
  if (std::none_of(kCasePrefixes.begin(), kCasePrefixes.end(), [&](std::string_view p) { return startsWith(bare, p); }))
    return std::string("is not a solver option a case file may set (PETSc options beyond the solver, which may read "
                       "or write files, belong on the command line)");
  const bool diagnostic = std::any_of(kDiagnosticEndings.begin(), kDiagnosticEndings.end(),
                                      [&](std::string_view e) { return endsWith(bare, e); });
  if (diagnostic) {
    if (!value.empty())
      return "takes no value in a case file (a PETSc viewer such as '" + std::string(value) +
             "' may name a file); without a value it prints to standard output";
    return std::nullopt;
  }
  for (std::string_view word : kOutputWords)
    if (contains(bare, word))
      return std::string("writes, reads or draws output (a viewer, monitor, log or file); such options belong on the "
                         "command line");
  const bool plainValue = std::all_of(value.begin(), value.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == ',' || c == '+' || c == '-';
  });
  if (!plainValue) return "has the value '" + std::string(value) + "', which is not a word or a number (no paths)";
  return std::nullopt;
}

}  // namespace fpdp::app
