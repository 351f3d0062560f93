"""Cases from a file, a string and a dict; overrides and the DP-SGD aliases; bad input raised as fpdp.CaseError with
the command line's own one-line message."""
import math
import tomllib

import pytest

import fpdp
from conftest import command_line


def test_a_case_from_a_file_a_string_and_a_dict_resolves_the_same(source):
    path = source / "cases" / "ou-1d.toml"
    text = path.read_text()
    from_file = fpdp.Case.from_file(path).resolved
    assert from_file == fpdp.Case.from_string(text, path=path).resolved
    assert from_file == fpdp.Case.from_dict(tomllib.loads(text), path=path).resolved
    assert from_file == fpdp.load_case(str(path)).resolved == fpdp.load_case(text).resolved
    assert from_file["noise"]["sigma"] == 0.7


def test_a_relative_data_file_is_read_from_the_case_folder(source):
    case = fpdp.Case.from_file(source / "cases" / "figure1-lambda1.toml")
    assert case.name == "figure1-lambda1"
    # the case file made absolute: readable from any folder
    text = case.toml()
    assert str(source / "cases" / "data" / "figure1-records.csv") in text


def test_overrides_as_dotted_keys_double_underscores_and_keywords(source):
    case = fpdp.Case.from_file(source / "cases" / "ou-1d.toml")
    assert case.with_overrides({"noise.sigma": 0.5}).resolved["noise"]["sigma"] == 0.5
    assert case.with_overrides(noise__sigma=0.25).resolved["noise"]["sigma"] == 0.25
    assert case.with_overrides({"divergence.orders": [2, 3.5]}).resolved["divergence"]["orders"] == [2, 3.5]
    # a key set twice takes the last value, as --set does
    assert case.with_overrides({"noise.sigma": 0.5}, noise__sigma=0.3).resolved["noise"]["sigma"] == 0.3


def test_the_dp_sgd_names_are_aliases_of_the_keys_that_mean_the_same(source):
    case = fpdp.Case.from_file(source / "cases" / "dpsgd-poisson-1d.toml")
    r = case.with_overrides(noise_multiplier=1.5, max_grad_norm=0.5, sample_rate=0.2).resolved
    assert r["noise"]["multiplier"] == 1.5
    assert r["noisy_gd"]["clip_norm"] == 0.5
    assert r["batch"]["rate"] == 0.2 and r["batch"]["sampling"] == "poisson"
    # Opacus' sample_rate is a Poisson rate: it makes a full-batch case Poisson-sampled, and a cyclic case's batch.size
    # is then refused by the reader
    full = fpdp.Case.from_file(source / "cases" / "noisy-gd-quadratic-1d.toml").with_overrides(sample_rate=0.3)
    assert full.resolved["batch"]["sampling"] == "poisson" and full.resolved["batch"]["rate"] == 0.3
    with pytest.raises(fpdp.CaseError, match="batch.size = 3: applies only to cyclic batches"):
        fpdp.Case.from_file(source / "cases" / "dpsgd-cyclic-1d.toml").with_overrides(sample_rate=0.3).validate()
    # names whose nearest key means something else are not aliases (Opacus' batch_size is an expected Poisson batch)
    with pytest.raises(fpdp.CaseError, match="batch_size"):
        case.with_overrides(batch_size=3).validate()


def bad_input_message(*args):
    status, _, err = command_line(*args)
    assert status == 2, err
    assert err.startswith("fpdp: error: ") and err.count("\n") == 1, err
    return err[len("fpdp: error: "):].rstrip("\n")


def test_bad_overrides_raise_the_command_lines_message(source, tmp_path):
    path = source / "cases" / "ou-1d.toml"
    for key, value in (("noise.sigma", "-1"), ("mesh.cells", "[0]"), ("divergence.orders", "[0.5]")):
        expected = bad_input_message("check", path, "--set", f"{key}={value}")
        with pytest.raises(fpdp.CaseError) as e:
            fpdp.Case.from_file(path).with_overrides({key: tomllib.loads(f"x = {value}")["x"]}).validate()
        assert str(e.value) == expected
        assert isinstance(e.value, ValueError) and e.value.exit_status == 2
        assert e.value.key.startswith(key.split("[")[0])
    expected = bad_input_message("check", path, "--set", "noise.sigmaa=1")
    with pytest.raises(fpdp.CaseError) as e:
        fpdp.Case.from_file(path).with_overrides({"noise.sigmaa": 1}).validate()
    assert str(e.value) == expected


def test_a_missing_case_file_is_the_command_lines_message(tmp_path):
    missing = tmp_path / "missing.toml"
    expected = bad_input_message("check", missing)
    with pytest.raises(fpdp.CaseError) as e:
        fpdp.Case.from_file(missing)
    assert str(e.value) == expected


def test_a_broken_case_text_names_its_file_line_and_column(source, tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("[case]\nname = \n")
    expected = bad_input_message("check", broken)
    with pytest.raises(fpdp.CaseError) as e:
        fpdp.Case.from_string(broken.read_text(), path=broken).validate()
    assert str(e.value) == expected


def test_an_output_directory_fpdp_may_not_replace_is_refused_as_the_command_line_refuses_it(tmp_path, quick_case):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    case_file = tmp_path / "quick.toml"
    case_file.write_text(quick_case)
    expected = bad_input_message("run", case_file, "--output", foreign)
    with pytest.raises(fpdp.CaseError) as e:
        fpdp.run(case_file, output=foreign, quiet=True)
    assert str(e.value) == expected
    assert (foreign / "notes.txt").read_text() == "mine" and sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]


def test_a_run_into_a_directory_another_process_writes_is_refused_at_once(tmp_path, quick_case):
    """The module takes the command line's lock (DIR.fpdp-lock): a second writer is refused, naming the holder."""
    import subprocess
    import sys
    output = tmp_path / "shared"
    lock = tmp_path / "shared.fpdp-lock"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT, 0o644)\n"
         "fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
         "print('locked', flush=True)\n"
         "time.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        case_file = tmp_path / "quick.toml"
        case_file.write_text(quick_case)
        with pytest.raises(fpdp.CaseError) as e:
            fpdp.run(case_file, output=output, quiet=True)
        assert "in use by another fpdp process" in str(e.value) and f"pid {holder.pid}" in str(e.value)
        assert not output.exists() and not (tmp_path / "shared.partial").exists()
    finally:
        holder.kill()
        holder.wait()


def test_toml_literals_read_back_to_the_same_values():
    for value in (0.1, 1e-05, 1e300, -2.5e-310, 3, True, "poisson", 'a "quoted" \\ word', [1, [2.5, "x"]]):
        assert tomllib.loads("x = " + fpdp.toml_literal(value))["x"] == value
    assert math.isinf(tomllib.loads("x = " + fpdp.toml_literal(float("inf")))["x"])
    with pytest.raises(fpdp.CaseError):
        fpdp.toml_literal(object())
