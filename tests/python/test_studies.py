"""fpdp.sweep and fpdp.worst_case: the command line's studies, their tables as DataFrames."""
import pandas as pd
import pytest

import fpdp
from conftest import QUICK_CASE, command_line


def test_a_sweep_returns_sweep_csv_with_one_row_per_member(tmp_path):
    table = fpdp.sweep(QUICK_CASE, {"noisy_gd.steps": [10, 20], "noise.sigma": [1.0]}, output=tmp_path / "sweep",
                       jobs=2, quiet=True, **{"accuracy.estimate": False})
    assert len(table) == 2 and list(table["status"]) == ["ok", "ok"]
    assert table.attrs["exit_status"] == 0 and table.attrs["output_directory"] == (tmp_path / "sweep").resolve()
    assert table.equals(pd.read_csv(tmp_path / "sweep" / "sweep.csv"))
    assert list(table["noisy_gd.steps"]) == [10, 20] and list(table["step"]) == [10, 20]
    # each member's eps is its own run's
    for _, row in table.iterrows():
        member = fpdp.Result(tmp_path / "sweep" / row["directory"])
        assert member.eps() == row["eps_exact"]
    # more steps, more privacy loss
    assert table["eps_exact"].iloc[1] > table["eps_exact"].iloc[0]


def test_a_sweep_over_an_alias_sweeps_its_key(tmp_path, source):
    table = fpdp.sweep(source / "cases" / "dpsgd-poisson-1d.toml", {"noise_multiplier": [2.0, 4.0]},
                       output=tmp_path / "sweep", quiet=True,
                       **{"accuracy.estimate": False, "noisy_gd.steps": 2, "output.every": 1})
    assert list(table["noise.multiplier"]) == [2.0, 4.0]
    assert table["eps_exact"].iloc[1] < table["eps_exact"].iloc[0]


def test_bad_sweep_input_is_the_command_lines_message(tmp_path):
    case = tmp_path / "quick.toml"
    case.write_text(QUICK_CASE)
    status, _, err = command_line("sweep", case, "--set", "noise.sigma=1,-1", "--output", tmp_path / "cli")
    assert status == 2
    with pytest.raises(fpdp.CaseError) as e:
        fpdp.sweep(case, {"noise.sigma": [1, -1]}, output=tmp_path / "py", quiet=True)
    assert "fpdp: error: " + str(e.value) + "\n" == err.replace(str(tmp_path / "cli"), str(tmp_path / "py"))
    assert not (tmp_path / "py").exists()


def test_a_worst_case_search_returns_its_evaluations(tmp_path):
    case = fpdp.Case.from_string(QUICK_CASE).with_overrides(
        {"accuracy.estimate": False, "noisy_gd.steps": 5, "worst_case.record_lower": [-1.0],
         "worst_case.record_upper": [1.0], "worst_case.grid_points": 3, "worst_case.refinement_rounds": 0})
    table = fpdp.worst_case(case, output=tmp_path / "wc", quiet=True)
    assert len(table) == 3 and table["maximiser"].sum() == 1
    best = table[table["maximiser"] == 1].iloc[0]
    assert best["value"] == table["value"].max()
    # the quadratic's worst replacement lies at the domain's end farthest from the replaced record's 0.3
    assert best["x_1"] == -1.0


def test_sweep_png_has_log_axes_over_decades_and_names_each_bound(tmp_path, source):
    import json
    import math
    import subprocess
    import sys
    table = fpdp.sweep(QUICK_CASE, {"noisy_gd.steps": [1, 10, 100]}, output=tmp_path / "sweep", quiet=True,
                       **{"accuracy.estimate": False, "output.every": 1})
    r = subprocess.run([sys.executable, str(source / "scripts" / "plot-sweep"), "--describe", "sweep",
                        str(tmp_path / "sweep")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    drawn = json.loads(r.stdout.strip().splitlines()[-1])
    assert drawn["xscale"] == "log"  # 1 .. 100
    values = [v for c in table.columns if c == "eps_exact" or c == "eps_composition" or
              (c.startswith("eps_bound") and c.endswith("_cks") and "measured_gap" not in c)
              for v in table[c] if isinstance(v, float) and math.isfinite(v) and v > 0]
    assert drawn["yscale"] == ("log" if max(values) >= 100 * min(values) else "linear")
    bounds = [label for label in drawn["legend"] if "(bound " in label]
    assert bounds and any(label.startswith("composition (bound 1, CKS conversion") for label in bounds), drawn
    assert all(not label.startswith("bound ") for label in bounds), drawn


def test_a_sweep_after_a_run_in_the_same_process(tmp_path):
    # MPI is running in this process once a run has been made: the members, child processes, start their own
    fpdp.run(QUICK_CASE, output=tmp_path / "run", quiet=True, **{"accuracy.estimate": False})
    table = fpdp.sweep(QUICK_CASE, {"noisy_gd.steps": [10, 20]}, output=tmp_path / "sweep", quiet=True,
                       **{"accuracy.estimate": False})
    assert list(table["status"]) == ["ok", "ok"]
