#pragma once
// Which PETSc options fpdp accepts, and from where (docs/parameters.md, solver.petsc_options; `fpdp --help`).
//
// A case file is untrusted input (cases are shared), so its solver.petsc_options may only tune the solver: options
// under the prefixes -ts_, -ksp_, -pc_, -snes_, -mg_, -sub_ and fpdp's own -fpdp_, with values that are words or
// numbers. PETSc options that write or read files (-log_view :FILE, -x_view ascii:FILE, -options_file, -history,
// -malloc_dump, trajectories, ...) or that reach beyond the solver are refused there: the person running a case
// never asked for them. The options that set the time horizon or let a failed step pass (-ts_max_steps, -ts_dt,
// ...) are refused everywhere, on the command line too: the run would stop early or step past a failure and still
// report the case's horizon. The command line may carry every other PETSc option (it is the user's own).
#include <optional>
#include <string>
#include <string_view>

namespace fpdp::app {

/// Why `name` (with its leading '-') may not appear anywhere, or nothing: the options that change the horizon of
/// the run or whether a failed step stops it, and the options that read further options from elsewhere
/// (-options_file), which would bypass these checks.
std::optional<std::string> forbiddenPetscOption(std::string_view name);

/// Why the option `name` with `value` (empty: none) may not appear in a case file's solver.petsc_options, or
/// nothing if it may (the allow-list above; forbiddenPetscOption included).
std::optional<std::string> caseFilePetscOptionProblem(std::string_view name, std::string_view value);

/// What solver.petsc_options may hold: the "allowed" text of its errors and of docs/parameters.md.
inline constexpr std::string_view kCasePetscOptionsAllowed =
    "whitespace-separated PETSc options, each an option name (starting with '-') or the value of the option before "
    "it: solver options -ts_*, -ksp_*, -pc_*, -snes_*, -mg_*, -sub_* (also under noisy GD's prefix -diffusion_) and "
    "-fpdp_*, with values made of letters, digits and _ . , + -; diagnostics ending in _view, _monitor, "
    "_monitor_true_residual or _converged_reason only without a value; no option that sets the horizon or the steps "
    "(-ts_max_steps, -ts_max_time, -ts_dt, -ts_adapt_type, ...: use time.t_end, time.dt, noisy_gd.steps) and "
    "none that writes, reads or draws (viewers with a value, -log_view, -options_file, ...: give those on the "
    "command line)";

}  // namespace fpdp::app
