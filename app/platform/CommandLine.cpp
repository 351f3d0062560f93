#include "app/platform/CommandLine.hpp"

#include <sys/stat.h>

#include <limits>
#include <optional>

#include "app/platform/PetscOptionPolicy.hpp"

namespace fpdp::app {

long long integerOption(const std::string& name, const std::string& text, long long lo, long long hi) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < lo || v > hi)
    throw UsageError(name + " " + text + ": not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

namespace {
bool isPetscOptionName(const std::string& t) {
  return t.size() >= 2 && t[0] == '-' && t[1] != '-' && !(t[1] >= '0' && t[1] <= '9') && t[1] != '.';
}
}  // namespace

namespace {
/// A viewer value ([TYPE]:FILE[:FORMAT[:MODE]], e.g. -log_view :log.txt) whose FILE exists and is not a regular file:
/// PETSc would write it at the end (PetscFinalize) and ignore a failure (-log_view :/dev/full ended with status 0),
/// or block on a FIFO. What is wrong with it, or nothing.
std::optional<std::string> viewerTargetProblem(const std::string& value) {
  const auto colon = value.find(':');
  if (colon == std::string::npos) return std::nullopt;
  const std::string file = value.substr(colon + 1, value.find(':', colon + 1) - colon - 1);
  struct stat st {};
  if (file.empty() || ::stat(file.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return std::nullopt;
  return "'" + file + "' is not a regular file; allowed: a regular file or a new one";
}
}  // namespace

CommandLine parseCommandLine(int argc, const char* const* argv) {
  CommandLine cl;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string t = argv[i];
    if (t == "--help" || t == "-h") {
      cl.command = "help";
      return cl;
    }
    if (t == "--version") {
      cl.command = "version";
      return cl;
    }
    if (t == "--output") {
      if (i + 1 >= argc) throw UsageError("--output needs a directory: --output DIR");
      cl.output = argv[++i];
      if (cl.output->empty()) throw UsageError("--output needs a non-empty directory name");
    } else if (t.rfind("--output=", 0) == 0) {
      cl.output = t.substr(9);
      if (cl.output->empty()) throw UsageError("--output needs a non-empty directory name");
    } else if (t == "--restart" || t.rfind("--restart=", 0) == 0) {
      if (t == "--restart" && i + 1 >= argc) throw UsageError("--restart needs a directory: --restart DIR");
      cl.restart = t == "--restart" ? std::string(argv[++i]) : t.substr(10);
      if (cl.restart->empty()) throw UsageError("--restart needs a non-empty directory name");
    } else if (t == "--particles" || t == "--seed" || t == "--threads") {
      if (i + 1 >= argc) throw UsageError(t + " needs a value");
      const std::string v = argv[++i];
      if (t == "--particles") cl.particles = static_cast<long>(integerOption(t, v, 100, 10'000'000'000));
      if (t == "--seed") cl.seed = integerOption(t, v, 0, std::numeric_limits<long long>::max());
      if (t == "--threads") cl.threads = static_cast<int>(integerOption(t, v, 1, 1024));
    } else if (t == "--set" || t.rfind("--set=", 0) == 0) {
      if (t == "--set" && i + 1 >= argc) throw UsageError("--set needs KEY=VALUE, e.g. --set noise.sigma=0.5");
      const OverrideAxis axis = parseOverrideOption(t == "--set" ? std::string(argv[++i]) : t.substr(6), false);
      cl.overrides.push_back({axis.key, axis.literals.front()});
    } else if (t == "--certify" || t.rfind("--certify=", 0) == 0) {
      // accuracy.certify (docs/scheme.md §8, "Certified on request"): headline unless said.
      const std::string what = t == "--certify" ? "headline" : t.substr(10);
      if (what != "headline" && what != "last_step")
        throw UsageError("--certify=" + what + ": allowed: --certify (the headline eps), --certify=headline, "
                         "--certify=last_step");
      cl.overrides.push_back({"accuracy.certify", "\"" + what + "\""});
    } else if (t == "--quiet") {
      cl.quiet = true;
    } else if (t == "--allow-outside") {
      cl.allowOutside = true;
    } else if (t.rfind("--", 0) == 0) {
      throw UsageError("unknown option '" + t + "'; fpdp's options are --output DIR, --restart DIR, --set KEY=VALUE, --certify, --quiet, --allow-outside, --particles N, --seed S, "
                       "--threads T, --help, --version "
                       "(PETSc options take a single dash, e.g. -ts_type cn)");
    } else if (isPetscOptionName(t)) {
      if (const auto problem = forbiddenPetscOption(t)) throw UsageError("PETSc option '" + t + "' " + *problem);
      cl.petscArgs.push_back(t);
      if (i + 1 < argc && !isPetscOptionName(argv[i + 1]) && std::string(argv[i + 1]).rfind("--", 0) != 0) {
        cl.petscArgs.push_back(argv[++i]);
        if (const auto problem = viewerTargetProblem(cl.petscArgs.back()))
          throw UsageError("PETSc option '" + t + " " + cl.petscArgs.back() + "': " + *problem);
      }
    } else {
      positional.push_back(t);
    }
  }
  if (positional.empty()) throw UsageError("no command given; try 'fpdp --help'");
  cl.command = positional[0];
  if ((cl.particles || cl.seed || cl.threads) && (positional.empty() || positional[0] != "sample"))
    throw UsageError("--particles, --seed and --threads are options of 'fpdp sample'");
  if (cl.restart && cl.command != "run") throw UsageError("--restart is an option of 'fpdp run'");
  if (!cl.overrides.empty() && cl.command != "run" && cl.command != "check")
    throw UsageError("--set KEY=VALUE is an option of 'fpdp run' and 'fpdp check' (and, with several values, of "
                     "'fpdp sweep')");
  if (!cl.overrides.empty() && cl.restart)
    throw UsageError("--restart DIR continues the run with the case it started with; --set cannot be combined with it");
  if (cl.restart) {
    // fpdp run --restart DIR [CASE]: the case is the checkpoint's unless given (then it must be the same).
    if (positional.size() > 2)
      throw UsageError("'fpdp run --restart DIR' takes at most one case file, got " +
                       std::to_string(positional.size() - 1));
    if (positional.size() == 2) cl.casePath = positional[1];
    if (cl.output) throw UsageError("--restart DIR continues the run in DIR; --output cannot be combined with it");
  } else if (cl.command == "run" || cl.command == "check" || cl.command == "noise-study" || cl.command == "sample") {
    if (positional.size() != 2)
      throw UsageError("'fpdp " + cl.command + "' takes exactly one case file, got " +
                       std::to_string(positional.size() - 1));
    cl.casePath = positional[1];
    if (cl.command == "check" && cl.output) throw UsageError("--output is only meaningful with 'fpdp run'");
  } else if (cl.command == "validate") {
    throw UsageError("'validate' must be the first word: fpdp validate [--quick] [CASE ...] (see 'fpdp --help')");
  } else if (cl.command == "sweep" || cl.command == "worst-case") {
    throw UsageError("'" + cl.command + "' must be the first word: fpdp " + cl.command + " CASE.toml ... (see 'fpdp --help')");
  } else if (cl.command == "schema") {
    if (positional.size() != 1) throw UsageError("'fpdp schema' takes no arguments");
  } else {
    throw UsageError("unknown command '" + cl.command + "'; allowed: run, sample, check, noise-study, sweep, worst-case, validate, plot, schema (see 'fpdp --help')");
  }
  return cl;
}

std::string helpText() {
  return R"(fpdp — the exact privacy loss of Langevin diffusion / noisy gradient descent, by solving the
Fokker–Planck equations of the two parameter densities (trained on D and on its neighbour D').

Usage:
  fpdp run CASE.toml [--output DIR] [--set KEY=VALUE ...] [--certify] [--quiet] [PETSc options]
  fpdp run --restart DIR [CASE.toml] [--quiet] [PETSc options]
  fpdp sample CASE.toml [--particles N] [--seed S] [--threads T] [--output DIR] [--quiet]
  fpdp check CASE.toml [--set KEY=VALUE ...] [PETSc options]
  fpdp sweep CASE.toml --set KEY=V1,V2,... [--set KEY2=...] [--output DIR] [--jobs N] [--quiet]
  fpdp sweep --restart DIR [--jobs N] [--quiet]
  fpdp worst-case CASE.toml [--objective eps|renyi] [--delta D] [--order A] [--output DIR] [--jobs N] [--quiet]
  fpdp worst-case --restart DIR [--jobs N] [--quiet]
  fpdp noise-study CASE.toml [--output DIR] [--quiet] [PETSc options]
  fpdp validate [--quick] [--update-references] [--no-plots] [--cases DIR] [--references DIR]
                [-o REPORT_DIR] [--schema] [CASE ...]
  fpdp plot [--describe] DIR
  fpdp schema
  fpdp --help | --version

Commands:
  run      solve the case; write DIR/ (default: the case's output.directory) with fpdp.h5 (+ fpdp.xmf),
           divergence.csv, renyi.csv, hockey_stick.csv, bounds.csv, epsilon.csv, exact.csv (when a closed form
           exists), PNG plots, fpdp.pvd (ParaView) and parameters.toml (docs/output.md), and print a summary table;
           while running, DIR.partial/ holds the files written so far (each readable) and checkpoint.h5
  sample   run the algorithm itself (noisy GD, or Langevin by Euler–Maruyama) for N particles on D and on D' with
           a counter-based generator (results depend on the seed only); write DIR/sample.h5 and sample_*.csv with
           histograms on the mesh and moments; if DIR holds the solver's fpdp.h5 of the same case, also the
           agreement with it (L1/TV, chi-square, divergences from samples, membership-inference audit)
  check    validate the case file (keys, types, ranges, data files, solver names) without running it
  noise-study  (Langevin cases) does anisotropic noise buy privacy at equal accuracy? Runs the case with isotropic
           noise of the same trace, then with the diagonal Sigma that minimises the BKPP KL bound, and reports the
           bound and the true KL, R_alpha and TV of both (DIR/isotropic, DIR/anisotropic, DIR/noise-study.csv)
  sweep    solve the case for every combination of the values given to its keys (--set, one or more; the
           cartesian product), each member validated before any runs, then run as `fpdp run` child processes N at a
           time (plots off); write DIR/ (default <case name>-sweep) with members/<index>-<slug>/ (case.toml, logs,
           output/), sweep.csv (one row per member: the swept values, status, eps at every delta of
           privacy.delta_grid with status, certified flag and conservative value, epsilon.csv's row at
           privacy.delta with the bounds' eps and the composition baseline, KL, TV, R_alpha, bounds.csv, all at the
           last output step) and sweep.png (eps against the swept parameter; docs/sweeps.md). Exit status 1 when a
           member failed (reported with its exit status and last stderr lines; the others are in the table)
  worst-case  maximise eps(delta) or R_alpha at the last step over the neighbour: the replaced (or added)
           record x' in the case's [worst_case] box or ball, its label (logistic) and which record is replaced or
           removed (worst_case.indices); a grid, then refinement rounds around the best point, every evaluation a
           `fpdp run` child process; print the maximiser, its value (certified flag, conservative value), the
           runner-up and how sure the search is; write DIR/ (default <case name>-worst-case) with worst-case.csv
           (every evaluation) and worst-case.png (docs/sweeps.md)
  validate run the validation suite (validation/cases: CASE.toml with its CASE.checks.toml), check every run
           (bounds above the truth, the lower-bound construction, exact solutions, Lemma 4, mass, Monte Carlo,
           rate identity / Lemma 2 / LSI, regression against validation/references) and print one row per check:
           case, check, measured, tolerance, PASS/FAIL/SKIPPED (INFO: findings beyond the papers' assumptions);
           write REPORT_DIR/report.md (default validation-report) with the plots; exit status 1 on any FAIL.
           --quick: the CI suite; --update-references: rewrite the references and show old vs new
           (docs/validation.md)
  plot     draw the PNG plots of the run output directory DIR again from its files (renyi_bounds.png,
           epsilon_delta.png, step_contributions.png, divergences.png, densities.png; docs/output.md, "Plots");
           --describe: also print, as JSON, what each figure holds (the roles of its elements, their counts, the
           legend and whether it covers data). Exit status 1 with the reason when a plot cannot be drawn
  schema   print the case-file reference (docs/parameters.md) generated from the schema

Options:
  --output DIR   output directory (overrides output.directory); replaced only if it is an earlier fpdp output
                 holding no file fpdp did not write (its manifest .fpdp-manifest)
  --allow-outside  run, sample, noise-study: let the case file's output.directory be an absolute path or leave, by
                 "..", the directory it is resolved in (refused otherwise, exit 2: a shared case file must not
                 choose where its output lands outside your working directory)
  --restart DIR  run: continue the interrupted run whose output directory is DIR (it left DIR.partial) from its
                 last checkpoint (DIR.partial/checkpoint.h5, every output.checkpoint_every-th output step); the
                 outputs equal an uninterrupted run's bit for bit on the same number of ranks. The case is the
                 checkpoint's; a CASE.toml given must resolve to the same case. Same PETSc options as the first run.
                 sweep, worst-case: continue the interrupted study in DIR.partial with its own case and values (or
                 objective): the members whose output was published are kept, the others run
  --set KEY=VALUE  run, check: override a key of the case file (repeatable); KEY is a key path table.key
                 (noise.sigma, noisy_gd.steps, batch.rate), VALUE a TOML literal (0.5, 20, true, "poisson", [1.0, 2.0])
                 or a bare word taken as a string (poisson); the result is validated like the file itself. Setting
                 one of noise.sigma/multiplier/covariance (or data.records/file/generator) drops the others
  --set KEY=V1,V2,...  sweep: the values of KEY, separated by the commas outside brackets and quotes (quote the
                 whole argument for the shell: --set 'neighbour.record=[0.5],[1.0]' has two values)
  --jobs N       sweep, worst-case: child runs at a time, 1 to 1024 (default: the cores this process may use)
  --ranks-per-member M  sweep, worst-case under mpiexec -n R: the members run on R / M groups of M ranks at once
                 instead of child processes (M divides R; default 1; docs/scaling.md §7)
  --objective eps|renyi  worst-case: maximise eps_exact at delta (the larger of both directions; default) or
                 the larger of R_alpha(p || q) and R_alpha(q || p)
  --delta D      worst-case: the delta of the eps objective, in (0, 1) (default privacy.delta)
  --order A      worst-case: the order of the renyi objective (default: the first of divergence.orders; an order
                 not among them is added)
  --certify[=headline|last_step]  run, check: refine the mesh (and the time step, and the box where the walls
                 decide) before the run until eps at privacy.delta (headline) or every number of the last output step
                 (last_step) is certified at accuracy.rtol, within accuracy.certify_seconds and
                 accuracy.certify_max_cells; the run then takes the finest mesh (= --set accuracy.certify=...;
                 docs/scheme.md §8)
  --quiet        no progress line (sweep, worst-case: no line per finished member)
  --particles N  sample: particles per dataset (overrides sampler.particles; 100 to 10^10)
  --seed S       sample: generator seed (overrides sampler.seed; 0 to 2^63 - 1)
  --threads T    sample: threads per MPI rank (overrides sampler.threads; 1 to 1024)
  --help, -h     this text
  --version      the version

PETSc options (single dash) override the case file's [solver] keys, e.g.
  -ts_type cn|bdf|beuler|arkimex|rosw   a PETSc time integrator (bdf: order 2 unless -ts_bdf_order)
  -ts_type exponential                  exp(T A) between output steps, Chebyshev expansion (Langevin, Sigma = D I)
                                        default (solver.ts_type = "auto"): exponential where it applies and no
                                        -ts_*/-ksp_*/-pc_* option (other than a _view, _monitor or
                                        _converged_reason diagnostic) is given, else bdf
  -fpdp_exponential_aij                 with it: PETSc's AIJ product instead of the star-stencil kernel (comparison)
  -fpdp_clenshaw_depth N                with it: Chebyshev terms per pass over memory, 1 to 64 (default 8;
                                        1: one term at a time; the results are the same bits for every N)
  -fpdp_aij_function                    with a PETSc integrator: PETSc's AIJ product in the implicit function instead
                                        of the star-stencil kernel (comparison)
  -fpdp_mg_aij_smoother                 with -pc_type mg: PETSc's SOR on every level instead of the star-stencil
                                        Gauss-Seidel sweep of the fine level (comparison)
  -fpdp_mg_aij_transfers                with -pc_type mg: PETSc's AIJ products for the restriction and prolongation
                                        instead of the matrix-free ones (comparison)
  -fpdp_mg_skip_presmooth true|false    with -pc_type mg: levels whose couplings are >= 3 times the shift do no
                                        smoothing sweep from a zero iterate (default: true with -ksp_type richardson
                                        or preonly, false with a Krylov method)
  -fpdp_mg_midsweep_exchange true|false with -pc_type mg on several ranks: each Gauss-Seidel sweep exchanges the
                                        ghosts between its forward and backward half (default: true with
                                        -ksp_type richardson or preonly, false with a Krylov method)
  -ts_bdf_order N                       BDF order
  -ksp_type gmres -pc_type gamg         iterative linear solver instead of the default direct LU
  -log_view, -ts_view, -ksp_view        PETSc diagnostics
An option that no solver component uses is an error (exit 2), so a misspelt option cannot be ignored.
Options that set the horizon or the steps, or let a failed step pass (-ts_max_steps, -ts_max_time, -ts_dt,
-ts_adapt_type, -ts_max_snes_failures, -ts_max_reject, -ts_error_if_step_fails, -ts_exact_final_time,
-ts_init_time, -ts_run_steps; also after noisy GD's -diffusion_ prefix) are refused (exit 2): set time.t_end,
time.dt or noisy_gd.steps in the case. So is -options_file (and -options_string), which would bypass that check.
A case file's solver.petsc_options may hold only solver options: -ts_*, -ksp_*, -pc_*, -snes_*, -mg_*, -sub_*,
-fpdp_* with plain values, and diagnostics ending in _view, _monitor or _converged_reason without a value; options
that write, read or draw (-log_view, viewers such as -ksp_view ascii:FILE, -history, -malloc_dump, ...) only on
the command line (docs/parameters.md, solver.petsc_options). PETSc reads no .petscrc or petscrc file
(-skip_petscrc): options come from the command line, the case and PETSC_OPTIONS.

Environment:
  FPDP_HUGE_PAGES=0    the heap in ordinary 4 KiB pages (default: reserved for transparent huge pages at start-up,
                       about 1.5 KiB of address space per cell; docs/scaling.md §1)
  OMPI_MCA_pml=NAME    Open MPI's point-to-point layer (default: ob1, self and shared memory, for a serial run and
                       for a job whose ranks are all on one node; Open MPI's own choice for a job across nodes)

Exit status: 0 success; 1 run-time failure (solver, I/O); 2 bad input (case file, data file, command line).
Run under MPI with: mpiexec -n 2 fpdp run CASE.toml
)";
}

}  // namespace fpdp::app
