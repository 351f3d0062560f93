"""fpdp.run end to end: the Result's tables against the run's files, eps(delta) and delta(eps) by the run's root and
its hockey-stick grid, the composition baseline, the progress callback, the summary, PETSc options."""
import json
import time
import math

import numpy as np
import pandas as pd
import pytest

import fpdp


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    from conftest import QUICK_CASE
    out = tmp_path_factory.mktemp("run") / "out"
    return fpdp.run(QUICK_CASE, output=out, quiet=True)


def test_the_result_reads_every_table_of_the_run(quick):
    out = quick.output_directory
    assert out.is_dir() and (out / "fpdp.h5").is_file()
    div = pd.read_csv(out / "divergence.csv")
    assert np.array_equal(quick.steps, div["step"].to_numpy()) and list(quick.steps[:3]) == [0, 5, 10]
    d = quick.divergences
    for q in ("kl", "tv", "renyi_2", "renyi_10"):
        assert np.array_equal(d[q].to_numpy(), div[q].to_numpy())
        for suffix in ("error_estimate", "certified", "conservative"):
            assert f"{q}_{suffix}" in d.columns
        ok = d[q + "_conservative"].notna() & d[q].notna()
        assert (d.loc[ok, q + "_conservative"] >= d.loc[ok, q]).all()
    s = quick.series("renyi_2")
    assert list(s.columns) == ["step", "t", "value", "status", "error_estimate", "certified", "conservative"]
    assert np.array_equal(s["value"].to_numpy(), div["renyi_2"].to_numpy())
    with pytest.raises(KeyError, match="renyi_3"):
        quick.series("renyi_3")
    eps = quick.epsilon
    assert {"eps_exact", "eps_exact_pq", "eps_exact_qp", "eps_exact_certified", "eps_exact_conservative"} <= set(eps)
    hs = quick.hockey_stick
    assert {"delta_pq", "delta_qp", "delta_pq_conservative", "delta_qp_status"} <= set(hs.columns)
    assert quick.exact is not None and "kl_exact" in quick.exact.columns
    assert "quick" in repr(quick) and "eps exact" in quick.summary


@pytest.mark.parametrize("plant", ["fifo", "link", "device"])
def test_a_fifo_a_link_or_a_device_in_a_runs_directory_is_refused_not_read(quick, tmp_path, plant):
    # A shared machine: someone puts a FIFO (which would block the reader until a writer comes), a link (another
    # file read as the run's) or a device (/dev/zero never ends) where the run's table or fpdp.h5 was. Each read is
    # refused at once, naming the file and what it is; read in a child process so that a hang fails the test.
    import os
    import shutil
    import subprocess
    import sys
    copy = tmp_path / "out"
    shutil.copytree(quick.output_directory, copy)
    for name in ("divergence.csv", "fpdp.h5", "parameters.toml"):
        target = copy / name
        target.rename(copy / (name + ".moved"))
        if plant == "fifo":
            os.mkfifo(target)
        elif plant == "link":
            target.symlink_to(copy / (name + ".moved"))
        else:
            target.symlink_to("/dev/zero")
        code = ("import fpdp, sys\n"
                "r = fpdp.Result(sys.argv[1])\n"
                "r.table('divergence'); r.privacy_loss_distribution(int(r.steps[-1]))\n")
        child = subprocess.run([sys.executable, "-c", code, str(copy)], capture_output=True, text=True, timeout=60)
        assert child.returncode != 0, (plant, name)
        what = "a FIFO" if plant == "fifo" else "a symbolic link"
        assert f"{target}: {what}" in child.stderr, (plant, name, child.stderr[-500:])
        target.unlink()
        (copy / (name + ".moved")).rename(target)
    # put back as regular files, the directory reads again
    assert fpdp.Result(copy).table("divergence") is not None


def test_eps_at_a_delta_of_the_grid_is_the_runs_root(quick):
    eps = pd.read_csv(quick.output_directory / "epsilon.csv")
    acc = pd.read_csv(quick.output_directory / "accuracy.csv")
    for step in (quick.steps[-1], quick.steps[3]):
        for delta in sorted(set(eps["delta"])):
            row = eps[(eps["step"] == step) & (eps["delta"] == delta)].iloc[0]
            e = quick.estimate_eps(delta, step=step)
            assert e.source == "root" and e.value == row["eps_exact"] and e.status == row["eps_exact_status"]
            assert quick.eps(delta, step=step, direction="pq") == row["eps_exact_pq"]
            assert quick.get_epsilon_for_delta(delta, step=step, direction="qp") == row["eps_exact_qp"]
            column = [c for c in acc.columns if c.startswith("eps_exact_delta_") and c.endswith("_conservative")
                      and float(c[len("eps_exact_delta_"):-len("_conservative")]) == delta][0]
            assert e.conservative == acc[acc["step"] == step][column].iloc[0]
            assert e.conservative >= e.value
    assert quick.eps() == quick.eps(quick.privacy_delta)
    with pytest.raises(ValueError, match="not an output step"):
        quick.eps(step=7)
    with pytest.raises(ValueError, match="direction"):
        quick.eps(direction="both")


def test_eps_between_the_grids_deltas_is_the_chord_at_or_above_the_runs_root(quick, tmp_path, quick_case):
    # The same run with 3e-4 in its delta grid gives the root there; the first run has only its hockey-stick grid.
    delta = 3e-4
    rooted = fpdp.run(quick_case, output=tmp_path / "rooted", quiet=True,
                      **{"privacy.delta_grid": [1e-2, 1e-3, delta, 1e-4, 1e-5, 1e-6]})
    root = rooted.estimate_eps(delta)
    chord = quick.estimate_eps(delta)
    assert root.source == "root" and chord.source == "chord"
    assert chord.value >= root.value and chord.value <= root.value * 1.02
    assert chord.conservative >= chord.value
    # the conservative eps(delta) of accuracy.csv are points of the conservative curve: eps(3e-4) is bounded by the
    # conservative eps(1e-4), since delta(eps) does not increase
    assert chord.conservative <= quick.estimate_eps(1e-4).conservative
    assert chord.conservative >= root.value * (1 - 1e-3)
    for direction in ("pq", "qp"):
        assert quick.eps(delta, direction=direction) >= rooted.eps(delta, direction=direction)
    assert quick.eps(delta) == max(quick.eps(delta, direction="pq"), quick.eps(delta, direction="qp"))
    # beyond the grid's last eps no finite eps is known, and delta(eps) is bounded by the last grid point's
    short = fpdp.run(quick_case, output=tmp_path / "short", quiet=True,
                     **{"divergence.hockey_stick_eps_max": 0.2, "accuracy.estimate": False})
    beyond = short.estimate_eps(2e-6)
    assert beyond.value == math.inf and beyond.source == "beyond grid" and short.eps(1e-5) < math.inf
    hs = short.hockey_stick
    last = hs[hs["step"] == short.steps[-1]].iloc[-1]
    assert last["eps"] == 0.2
    assert short.estimate_delta(3.0).value == max(last["delta_pq"], last["delta_qp"])
    assert short.estimate_delta(3.0).source == "beyond grid"


def test_delta_of_eps_on_and_between_the_grid(quick):
    hs = pd.read_csv(quick.output_directory / "hockey_stick.csv")
    last = hs[hs["step"] == quick.steps[-1]]
    for _, row in last.iloc[::37].iterrows():
        assert quick.delta(row["eps"], direction="pq") == row["delta_pq"]
        assert quick.get_delta_for_epsilon(row["eps"]) == max(row["delta_pq"], row["delta_qp"])
        d = quick.estimate_delta(row["eps"])
        assert d.source == "grid" and d.conservative >= d.value and d.certified in (0, 1)
    e0, e1 = last["eps"].iloc[4], last["eps"].iloc[5]
    between = quick.estimate_delta((e0 + e1) / 2, direction="qp")
    assert between.source == "chord"
    assert last["delta_qp"].iloc[5] <= between.value <= last["delta_qp"].iloc[4]
    # the chord in e^eps lies at or above the curve: above the geometric interpolation of a log-concave tail
    assert between.value >= math.sqrt(last["delta_qp"].iloc[4] * last["delta_qp"].iloc[5])


def test_the_composition_baseline(quick):
    comp = quick.composition
    assert {"step", "delta", "eps_composition", "composition_mu"} <= set(comp.columns)
    last = comp[comp["step"] == quick.steps[-1]]
    for _, row in last.iterrows():
        assert quick.composition_eps(row["delta"]) == row["eps_composition"]
    mu = last["composition_mu"].iloc[0]
    # between the grid's deltas, the closed form of the same mu-GDP (models/GaussianComposition)
    assert quick.composition_eps(3e-4) == fpdp._core.gdp_epsilon(mu, 3e-4)
    assert quick.composition_eps(1e-3) < quick.composition_eps(3e-4) < quick.composition_eps(1e-4)
    assert fpdp._core.gdp_delta(mu, quick.composition_eps(3e-4)) == pytest.approx(3e-4, rel=1e-9)
    # the last iterate leaks at most what releasing every iterate does
    assert quick.eps() <= quick.composition_eps()


def test_the_progress_callback_sees_the_companions_and_the_run(tmp_path, quick_case):
    seen = []
    fpdp.run(quick_case, output=tmp_path / "out", progress=seen.append, quiet=True)
    phases = [p.phase for p in seen]
    assert phases[0] == "companion_2h" and "companion_4h" in phases and phases[-1] == "run"
    assert phases.index("companion_4h") < phases.index("run")
    run = [p for p in seen if p.phase == "run"]
    assert [p.step for p in run] == list(range(0, 41)) and run[-1].steps == 40
    assert run[-1].t == pytest.approx(4.0) and math.isfinite(run[-1].kl) and run[-1].fraction == 1.0
    assert "coarser mesh" in seen[0].description and "200 cells" in seen[0].description


_COARSE_OU = """[case]
name = "ou-coarse"
[mesh]
lower = [-6.0]
upper = [6.0]
cells = [24]
[loss]
type = "quadratic"
[data]
records = [[0.5]]
[neighbour]
index = 0
record = [0.0]
[noise]
sigma = 0.7
[initial]
mean = [0.0]
covariance = 0.5
[time]
t_end = 2.0
dt = 0.05
[output]
every = 8
plots = false
fields = false
[divergence]
orders = [2, 10]
"""


def test_certify_solves_each_mesh_once_and_publishes_only_the_last_run(tmp_path):
    """--certify: the run is the sequence's finest level. Only the requested mesh's coarser levels are solved for their
    divergences alone; each finer mesh is a run, judged when it has taken its steps, so the mesh that certifies is solved
    once; the runs that did not certify leave nothing behind."""
    finished = []
    result = fpdp.run(_COARSE_OU, output=tmp_path / "out", quiet=True,
                      progress=lambda p: finished.append((p.phase, p.description)) if p.step == p.steps else None,
                      overrides={"accuracy.certify": "headline"})
    outcome = json.loads((result.output_directory / "result.json").read_text())["certify"]["outcome"]
    assert outcome.startswith("certified on "), outcome
    final_cells = int(outcome.split()[2])
    assert final_cells > 48  # the test needs refinement beyond the requested mesh
    divergences_only = [d for phase, d in finished if phase.startswith("certify_")]
    assert divergences_only == ["certify, 12 cells", "certify, 6 cells"], finished
    runs = [d for phase, d in finished if phase == "run"]
    assert len(runs) == int(round(math.log2(final_cells / 24))) + 1, finished
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    parameters = (result.output_directory / "parameters.toml").read_text()
    assert f"cells = [ {final_cells} ]" in parameters


@pytest.mark.parametrize("every", [8, 40])
def test_certify_stops_a_refined_run_at_its_budget_and_publishes_the_run_before_it(tmp_path, every):
    """accuracy.certify_seconds is a limit, not only the prediction that admits the next mesh: a refined run still
    stepping when the budget is spent stops at its next time step (also between output steps: with every = 40 and a
    stepping integrator the run has a single output interval of 40 steps), and the last run that took its steps is the
    output, run again; the outcome says so and the remedy names a budget that lets the stopped run finish, keeping the
    cell limit the case set. The progress hook slows the second run (48 cells) down, as a solver slower than
    predicted would."""
    runs = []

    def slow_second_run(p):
        if p.phase != "run":
            return
        if not runs or p.step < runs[-1]:
            runs.append(p.step)
        runs[-1] = p.step
        if len(runs) == 2:
            time.sleep(1.0)

    result = fpdp.run(_COARSE_OU, output=tmp_path / "out", quiet=True, progress=slow_second_run,
                      overrides={"accuracy.certify": "headline", "accuracy.certify_seconds": 3.0,
                                 "accuracy.certify_max_cells": 1000,
                                 "output.every": every, "solver.ts_type": "bdf" if every == 40 else "auto"})
    report = json.loads((result.output_directory / "result.json").read_text())["certify"]
    assert report["outcome"].startswith("blocked: the run on 48 cells stopped at step "), report
    assert "accuracy.certify_seconds = 3 spent" in report["outcome"], report
    assert report["outcome"].endswith("the output is the run on 24 cells, run again"), report
    # followed as printed, the remedy keeps the cell limit the case raised
    prefix = "--certify --set accuracy.certify_max_cells=1000 --set accuracy.certify_seconds="
    assert report["remedy"].startswith(prefix), report
    assert int(report["remedy"][len(prefix):].split()[0]) > 3, report
    assert len(runs) == 3 and runs[1] < 40 and runs[2] == 40, runs
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert "cells = [ 24 ]" in (result.output_directory / "parameters.toml").read_text()



def test_a_remedy_that_raises_the_cell_limit_raises_the_time_budget_where_the_next_mesh_needs_it(tmp_path):
    """A refinement blocked by accuracy.certify_max_cells names the setting that admits the next mesh, and with it the
    time budget where the next mesh's predicted time would not fit in accuracy.certify_seconds (the remedy must work
    when followed: a remedy naming the cells alone had its next run stopped by the budget), and the memory that mesh
    needs. The progress hook slows the run on the requested mesh down, so that the next mesh's prediction exceeds
    the budget."""
    def slow_run(p):
        if p.phase == "run":
            time.sleep(0.05)

    result = fpdp.run(_COARSE_OU, output=tmp_path / "out", quiet=True, progress=slow_run,
                      overrides={"accuracy.certify": "headline", "accuracy.certify_max_cells": 30,
                                 "accuracy.certify_seconds": 5.0, "solver.ts_type": "bdf"})
    report = json.loads((result.output_directory / "result.json").read_text())["certify"]
    assert "exceeds accuracy.certify_max_cells = 30" in report["outcome"], report
    prefix = "--certify --set accuracy.certify_max_cells=48 --set accuracy.certify_seconds="
    assert report["remedy"].startswith(prefix), report
    assert int(report["remedy"][len(prefix):].split()[0]) > 5, report
    assert "GB of memory" in report["remedy"], report

def test_a_stop_from_the_progress_hook_in_a_stepping_integrator_is_an_interrupt_not_a_petsc_error(tmp_path):
    """A Langevin run by BDF steps inside PETSc's TSSolve, whose monitor calls the run's observers: a stop raised there
    (Ctrl-C, or a --certify budget) must reach the caller as itself. Before, it crossed TSSolve as PETSc's "error in
    external library", and the caller saw a failed run (a bare KeyboardInterrupt here) instead of fpdp.RunInterrupted
    with its restart hint."""
    def ctrl_c_at_step_5(p):
        if p.phase == "run" and p.step == 5:
            raise KeyboardInterrupt

    raised = None
    try:
        fpdp.run(_COARSE_OU, output=tmp_path / "out", quiet=True, progress=ctrl_c_at_step_5,
                 overrides={"solver.ts_type": "bdf", "accuracy.estimate": False})
    except BaseException as e:  # a bare KeyboardInterrupt must not end the test session
        raised = e
    assert isinstance(raised, fpdp.RunInterrupted), repr(raised)
    assert "PETSc" not in str(raised), str(raised)
    assert not (tmp_path / "out").exists()

_BDF_3D = """[case]
name = "bdf-3d"
dynamics = "langevin"
[mesh]
lower = [-8.0, -8.0, -8.0]
upper = [8.0, 8.0, 8.0]
cells = [16, 16, 16]
[loss]
type = "quadratic"
lambda = 1.0
[data]
records = [[0.6, 0.3, -0.2]]
[neighbour]
index = 0
record = [0.0, 0.0, 0.0]
[noise]
sigma = 0.7
[initial]
mean = [0.0, 0.0, 0.0]
covariance = 0.5
[time]
t_end = 0.4
dt = 0.05
[output]
every = 4
plots = false
fields = false
[solver]
ts_type = "bdf"
[divergence]
orders = [2]
"""


def test_certify_solves_refined_3d_implicit_steps_iteratively_unless_the_case_chose_a_solver(tmp_path):
    """In 3-D a direct factorisation's cost grows about as the square of the cells: a refined level of --certify takes
    GMRES with ILU(0) instead of the default LU, and says so; a linear solver the case chose stays."""
    import h5py

    def final_run(overrides, name):
        result = fpdp.run(_BDF_3D, output=tmp_path / name, quiet=True,
                          overrides={"accuracy.certify": "headline", "accuracy.rtol": 1e-9,
                                     "accuracy.certify_max_cells": 32768, **overrides})
        report = json.loads((result.output_directory / "result.json").read_text())["certify"]
        assert report["levels"].endswith("16x16x16, 32x32x32"), report
        parameters = (result.output_directory / "parameters.toml").read_text()
        with h5py.File(result.output_directory / "fpdp.h5") as f:
            solver = f.attrs["solver"]
        return parameters, solver.decode() if isinstance(solver, bytes) else solver

    parameters, solver = final_run({}, "default")
    assert "cells = [ 32, 32, 32 ]" in parameters
    assert "ksp_type = 'gmres'" in parameters and "pc_type = 'ilu'" in parameters, parameters
    assert "ksp_type=gmres pc_type=ilu" in solver, solver
    parameters, solver = final_run({"solver.ksp_type": "gmres", "solver.pc_type": "jacobi"}, "chosen")
    assert "cells = [ 32, 32, 32 ]" in parameters
    assert "pc_type = 'jacobi'" in parameters and "pc_type=jacobi" in solver, (parameters, solver)


_LATTICE_FEW_RECORDS = """[case]
name = "lattice-few-records"
dynamics = "noisy_gd"
[mesh]
lower = [-9.0]
upper = [11.0]
cells = [200]
[loss]
type = "expression"
expression = "-x1*theta1"
gradient = ["-x1"]
[data]
records = [[1.0], [0.0], [0.0]]
[neighbour]
index = 0
record = [0.5]
[noise]
sigma = 0.3
[initial]
mean = [0.0]
covariance = 0.1
[noisy_gd]
eta = 0.5
steps = 4
clip_norm = 2.0
diffusion = "exact_convolution"
[batch]
sampling = "poisson"
rate = 0.3
mixture = "lattice"
mixture_tolerance = 1e-2
[output]
every = 2
plots = false
fields = false
[divergence]
orders = [2]
[privacy]
delta = 1e-3
"""


def test_certify_enumerates_the_batches_where_the_lattice_bound_decides_and_the_enumeration_fits(tmp_path):
    """The displacement lattice bounds TV only: KL and R_alpha on it are never certified (density_bound). Three records
    enumerate in 2^3 batches, within the enumeration's budget: --certify=last_step switches to the exact enumeration,
    which certifies KL, instead of tightening a lattice that can never certify it."""
    result = fpdp.run(_LATTICE_FEW_RECORDS, output=tmp_path / "out", quiet=True,
                      overrides={"accuracy.certify": "last_step"})
    assert "mixture = 'enumerate'" in (result.output_directory / "parameters.toml").read_text()
    numbers = json.loads((result.output_directory / "result.json").read_text())["numbers"]
    assert numbers["kl"]["certified"] is True, numbers["kl"]


def test_quiet_prints_nothing_and_the_default_prints_the_summary(tmp_path, quick_case, capfd):
    fpdp.run(quick_case, output=tmp_path / "a", quiet=True)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    r = fpdp.run(quick_case, output=tmp_path / "b")
    out, _ = capfd.readouterr()
    assert r.summary in out and "step 40/40" in out


def test_each_run_starts_from_its_own_solver_options(tmp_path, source):
    # A case's solver.petsc_options go into PETSc's database; a later run in the same process must not see them (a
    # set option counts as given on the command line and would override the next case's own choice).
    case = fpdp.Case.from_file(source / "cases" / "ou-1d.toml").with_overrides(
        {"output.plots": False, "output.fields": False, "accuracy.estimate": False, "time.t_end": 0.2})
    import h5py

    def solver_of(result):
        with h5py.File(result.output_directory / "fpdp.h5") as f:
            return f.attrs["solver"].decode() if isinstance(f.attrs["solver"], bytes) else f.attrs["solver"]

    cn = fpdp.run(case.with_overrides({"solver.ts_type": "bdf", "solver.petsc_options": "-ts_type cn"}),
                  output=tmp_path / "cn", quiet=True)
    plain = fpdp.run(case.with_overrides({"solver.ts_type": "bdf"}), output=tmp_path / "bdf", quiet=True)
    assert "ts_type=cn" in solver_of(cn) and "ts_type=bdf" in solver_of(plain)
    given = fpdp.run(case.with_overrides({"solver.ts_type": "bdf"}), output=tmp_path / "given", quiet=True,
                     petsc_options=["-ts_type", "cn"])
    assert "ts_type=cn" in solver_of(given)


def test_a_solver_option_petsc_refuses_is_bad_input(tmp_path, source):
    case = fpdp.Case.from_file(source / "cases" / "ou-1d.toml").with_overrides(
        {"output.plots": False, "accuracy.estimate": False, "time.t_end": 0.2, "solver.ts_type": "bdf"})
    with pytest.raises(fpdp.CaseError) as e:
        fpdp.run(case, output=tmp_path / "out", quiet=True, petsc_options=["-ts_type", "nonsense"])
    assert "nonsense" in str(e.value)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.partial").exists()


def test_a_run_of_four_parameters_answers_as_one_of_three(tmp_path, quick_case):
    # Beyond three axes (whole fields, docs/scaling.md §9) the run writes hockey_stick.csv as d <= 3 does, so
    # delta(eps) and eps(delta) come from the same tables; there is no renyi.csv (no I_alpha there) and no privacy-loss
    # histograms, and the result says so instead of failing on a missing file.
    case = quick_case
    for one, four in (("lower = [-6.0]", "lower = [-6.0, -6.0, -6.0, -6.0]"),
                      ("upper = [6.0]", "upper = [6.0, 6.0, 6.0, 6.0]"),
                      ("cells = [400]", "cells = [16, 16, 16, 16]"),
                      ("records = [[0.3]]", "records = [[0.3, 0.1, 0.0, -0.2]]"),
                      ("record = [0.0]", "record = [0.0, 0.0, 0.0, 0.0]"),
                      ("mean = [0.0]", "mean = [0.0, 0.0, 0.0, 0.0]"),
                      ("steps = 40", "steps = 10\ndiffusion = \"exact_convolution\""),
                      ("checkpoint_every = 1\n", "")):  # no checkpoints beyond three axes
        case = case.replace(one, four)
    result = fpdp.run(case, output=tmp_path / "out", quiet=True)
    hs = pd.read_csv(result.output_directory / "hockey_stick.csv")
    last = hs[hs["step"] == result.steps[-1]]
    row = last.iloc[3]
    assert result.get_delta_for_epsilon(row["eps"]) == max(row["delta_pq"], row["delta_qp"])
    d = result.estimate_delta(row["eps"])
    assert d.source == "grid" and d.conservative >= d.value
    assert result.renyi is None and result.eps() == result.get_epsilon_for_delta(1e-5)
    with pytest.raises(ValueError, match="not computed beyond three axes"):
        result.privacy_loss_distribution()
