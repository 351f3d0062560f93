"""fpdp from Python: the true last-iterate privacy loss of noisy gradient descent and Langevin diffusion, computed by
fpdp's C++ solver in this process (docs/python.md).

    import fpdp
    r = fpdp.run("cases/dpsgd-poisson-1d.toml", output="out", noise_multiplier=1.5)
    r.eps(1e-5)                      # eps(delta) of the last iterate, the larger of both directions
    r.divergences                    # pandas: KL, TV, R_alpha with status, certified, conservative
    r.privacy_loss_distribution()    # for dp_accounting

A case is a TOML file, TOML text, a dict of tables or a fpdp.Case; overrides are dotted keys as `fpdp run --set`
takes them (`**{"noise.sigma": 0.5}`, or `noise__sigma=0.5`) and the DP-SGD names of ALIASES. Bad input raises
fpdp.CaseError (a ValueError) with the command line's one-line message; Ctrl-C stops a run and raises
fpdp.RunInterrupted (a KeyboardInterrupt), keeping the run's directory for fpdp.resume.
"""
import os
import tempfile
import warnings
from pathlib import Path

from . import _core
from .case import ALIASES, Case, load_case, toml_literal
from .errors import CaseError, FpdpError, RunError, RunInterrupted
from .progress import Progress, ProgressLine
from .result import Estimate, Result

_core.set_errors(CaseError, RunError, RunInterrupted)

__version__ = _core.version
# The source tree this package was built from: its cases/ and docs/.
SOURCE_TREE = Path(_core.source_tree)
__all__ = ["ALIASES", "SOURCE_TREE", "Case", "CaseError", "Estimate", "FpdpError", "Progress", "Result", "RunError",
           "RunInterrupted", "load_case", "resume", "resume_sweep", "run", "schema", "sweep", "toml_literal",
           "worst_case"]


def _progress_callback(progress, quiet):
    """The callback the run calls with each step's figures, and the display to close afterwards (if fpdp's own)."""
    if progress is None:
        if quiet:
            return None, None
        display = ProgressLine()
        return (lambda d: display(Progress(**d))), display
    if progress is False:
        return None, None
    if not callable(progress):
        raise TypeError("progress: a callable taking a fpdp.Progress, None (fpdp's progress line unless quiet) or "
                        "False")
    return (lambda d: progress(Progress(**d))), None


def _run(text, path, overrides, output, petsc_options, restart, progress, quiet):
    callback, display = _progress_callback(progress, quiet)
    try:
        out = _core.run(text, path, overrides, None if output is None else os.fspath(output),
                        [str(o) for o in petsc_options], restart, callback)
    finally:
        if display:
            display.close()
    if not quiet:
        print(out["summary"], end="")
    return Result(Path(out["output_directory"]).resolve(), out["summary"])


def run(case, output=None, *, progress=None, quiet=False, petsc_options=(), overrides=None, **keywords):
    """Runs a case as `fpdp run` does and returns its Result.

    case: a TOML file's path, TOML text, a dict of tables or a fpdp.Case. output: the output directory (default the
    case's output.directory); as with `fpdp run`, an existing directory is replaced only if it is empty or an
    earlier fpdp output. overrides / keywords: keys of the case to change (dotted keys, `table__key`, or the names of
    fpdp.ALIASES: noise_multiplier, max_grad_norm, sample_rate). progress: None prints fpdp's progress line (unless
    quiet), False nothing, a callable receives a fpdp.Progress at every step of the error estimate's companion solves
    and of the run. quiet: print neither the progress line nor the run's summary (Result.summary has it).
    petsc_options: PETSc options as on fpdp's command line (["-ts_type", "cn"]).

    Raises CaseError (bad input, with the command line's message), RunError (the run failed) or RunInterrupted
    (Ctrl-C: the run's directory DIR.partial is kept; fpdp.resume(output) continues from its last checkpoint)."""
    case = load_case(case).with_overrides(overrides, **keywords)
    return _run(case.text, case.path, case.overrides, output, petsc_options, False, progress, quiet)


def resume(output, case=None, *, progress=None, quiet=False, petsc_options=()):
    """Continues an interrupted run in output.partial from its last checkpoint (`fpdp run --restart DIR`); case: the
    case it ran (default: the one stored in output.partial), which must resolve to the same."""
    if case is None:
        return _run("", "", [], output, petsc_options, True, progress, quiet)
    case = load_case(case)
    return _run(case.text, case.path, case.overrides, output, petsc_options, True, progress, quiet)


def schema():
    """The case-file reference (docs/parameters.md) as Markdown: every key, its type, unit, default and range."""
    return _core.schema_markdown()


def _executable():
    return os.environ.get("FPDP_EXECUTABLE", _core.executable)


def _study(kind, case, extra, output, jobs, quiet):
    """`fpdp sweep` / `fpdp worst-case` on the case (written to a temporary file with its overrides applied and its
    data files made absolute); returns the study's table as a DataFrame (attrs: output_directory, exit_status)."""
    with tempfile.TemporaryDirectory(prefix="fpdp-study-") as tmp:
        original = Path(case.path)
        if not case.overrides and original.is_file() and original.read_text(encoding="utf-8") == case.text:
            case_file = original  # messages name the user's file
        else:
            case_file = Path(tmp) / original.name
            case_file.write_text(case.toml(), encoding="utf-8")
        args = [kind, str(case_file)] + extra
        if output is not None:
            args += ["--output", os.fspath(output)]
        directory = Path(output if output is not None else f"{case.name}-{kind}").resolve()
        status = _run_study(kind, args, jobs, quiet, directory)
    return _study_table(kind, directory, status)


def _run_study(kind, args, jobs, quiet, directory):
    """The study's command; Ctrl-C raises RunInterrupted saying where the finished members are kept."""
    if jobs is not None:
        args += ["--jobs", str(int(jobs))]
    if quiet:
        args.append("--quiet")
    try:
        return _core.study(args, _executable())
    except RunInterrupted:
        partial = Path(str(directory) + ".partial")
        if not partial.is_dir():
            raise
        how = (f"continue with fpdp.resume_sweep({str(directory)!r}) or `fpdp sweep --restart {directory}`"
               if kind == "sweep" else f"continue with `fpdp worst-case --restart {directory}`")
        stopped = RunInterrupted(f"interrupted: the members were stopped; the finished members are kept in {partial}: "
                                 + how)
        stopped.output_directory = str(directory)
        raise stopped from None


def resume_sweep(output, *, jobs=None, quiet=False):
    """Continues a sweep that Ctrl-C (or a killed process) stopped, as `fpdp sweep --restart DIR` does: the
    finished members in DIR.partial are kept, the others run, with the sweep's own case and values; returns
    sweep.csv as sweep() does."""
    directory = Path(output).resolve()
    status = _run_study("sweep", ["sweep", "--restart", os.fspath(output)], jobs, quiet, directory)
    return _study_table("sweep", directory, status)


def _study_table(kind, directory, status):
    import pandas as pd

    from .files import open_regular

    with open_regular(directory / f"{kind}.csv") as f:
        table = pd.read_csv(f)
    table.attrs["output_directory"] = directory
    table.attrs["exit_status"] = status
    if status != 0:
        warnings.warn(f"fpdp {kind}: a member failed (exit status {status}); its row says why "
                      f"({directory / (kind + '.csv')})", RuntimeWarning, stacklevel=3)
    return table


def sweep(case, values, output=None, *, jobs=None, quiet=False, overrides=None, **keywords):
    """`fpdp sweep`: the case solved for every combination of `values` ({key: [v1, v2, ...]}, keys as for run,
    the last fastest), jobs runs at a time; returns sweep.csv as a DataFrame, one row per member with eps, its
    certification and conservative value, the divergences and the composition baseline at the last step
    (docs/output.md, "sweep.csv"). The study's directory is in `table.attrs["output_directory"]`."""
    case = load_case(case).with_overrides(overrides, **keywords)
    extra = []
    for key, vals in values.items():
        vals = list(vals) if not isinstance(vals, (str, bytes)) and hasattr(vals, "__iter__") else [vals]
        if not vals:
            raise CaseError(f"values[{key!r}] is empty; allowed: one or more values")
        if key in ALIASES:  # fixed parts (batch.sampling = "poisson") are overrides, the rest the swept key
            fixed = [(t, v) for t, v in ALIASES[key] if v is not None]
            case = case.with_overrides({t: v for t, v in fixed})
            key = next(t for t, v in ALIASES[key] if v is None)
        extra += ["--set", key.replace("__", ".") + "=" + ",".join(toml_literal(v) for v in vals)]
    return _study("sweep", case, extra, output, jobs, quiet)


def worst_case(case, output=None, *, objective="eps", delta=None, order=None, jobs=None, quiet=False,
               overrides=None, **keywords):
    """`fpdp worst-case`: the neighbour that maximises eps at delta (objective "eps") or R_alpha at `order`
    ("renyi") over the case's [worst_case] domain; returns worst-case.csv as a DataFrame, one row per evaluation,
    the maximiser's `maximiser` = 1 (docs/output.md, "worst-case.csv")."""
    case = load_case(case).with_overrides(overrides, **keywords)
    extra = ["--objective", str(objective)]
    if delta is not None:
        extra += ["--delta", repr(float(delta))]
    if order is not None:
        extra += ["--order", repr(float(order))]
    return _study("worst-case", case, extra, output, jobs, quiet)
