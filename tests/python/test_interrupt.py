"""Ctrl-C in Python: a SIGINT while the C++ run steps (as a notebook's interrupt sends it) stops the run at its next
step with fpdp.RunInterrupted (a KeyboardInterrupt) carrying the command line's restart hint; DIR.partial keeps the
files and the last checkpoint, and fpdp.resume continues to the same numbers as an uninterrupted run. Each scenario
runs in a process of its own (a real signal, and MPI started once per process)."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import pandas as pd

from conftest import QUICK_CASE

# A run long enough to be interrupted: the quick case with 4000 steps and a checkpoint at every output step.
SCRIPT = textwrap.dedent("""
    import json, os, signal, sys, threading, time
    import fpdp
    case = fpdp.Case.from_string(sys.argv[1]).with_overrides({"noisy_gd.steps": 4000, "output.every": 100,
                                                                 "accuracy.estimate": sys.argv[3] == "estimate"})
    out = sys.argv[2]
    mode = sys.argv[4]
    report = {}
    def interrupt_after_checkpoint():
        while not os.path.exists(out + ".partial/checkpoint.h5"):
            time.sleep(0.005)
        os.kill(os.getpid(), signal.SIGINT)
    companions = threading.Event()
    def interrupt_in_companions():
        companions.wait()
        os.kill(os.getpid(), signal.SIGINT)
    def watch(p):
        if p.phase.startswith("companion"):
            companions.set()
    threading.Thread(target=interrupt_after_checkpoint if mode == "run" else interrupt_in_companions,
                     daemon=True).start()
    try:
        fpdp.run(case, output=out, quiet=True, progress=watch if mode == "companions" else False)
        report["interrupted"] = False
    except fpdp.RunInterrupted as e:
        report.update(interrupted=True, keyboard=isinstance(e, KeyboardInterrupt), message=str(e),
                      output=e.output_directory, partial=os.path.isdir(out + ".partial"),
                      checkpoint=os.path.exists(out + ".partial/checkpoint.h5"))
    if report.get("checkpoint"):
        r = fpdp.resume(out, quiet=True)
        report["resumed"] = str(r.output_directory)
    print(json.dumps(report))
""")


def interrupted_run(tmp_path, estimate, mode):
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-c", SCRIPT, QUICK_CASE, str(out), estimate, mode], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out, json.loads(r.stdout.strip().splitlines()[-1])


def test_ctrl_c_keeps_the_run_and_resume_continues_it_to_the_same_numbers(tmp_path):
    out, report = interrupted_run(tmp_path, "no-estimate", "run")
    assert report["interrupted"] and report["keyboard"], report
    assert report["partial"] and report["checkpoint"], report
    assert f"fpdp run --restart {out}" in report["message"], report
    assert report["resumed"] == str(out)
    # an uninterrupted run of the same case in a process of its own
    whole = tmp_path / "whole"
    r = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import sys, fpdp
        fpdp.run(fpdp.Case.from_string(sys.argv[1]).with_overrides(
            {"noisy_gd.steps": 4000, "output.every": 100, "accuracy.estimate": False}), output=sys.argv[2], quiet=True)
    """), QUICK_CASE, str(whole)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    for name in ("divergence.csv", "epsilon.csv", "hockey_stick.csv"):
        assert pd.read_csv(out / name).equals(pd.read_csv(whole / name)), name


def test_ctrl_c_during_the_companion_solves_stops_before_any_output(tmp_path):
    out, report = interrupted_run(tmp_path, "estimate", "companions")
    assert report["interrupted"] and report["keyboard"], report
    assert not report["checkpoint"]
    assert not out.exists()


def test_a_callback_that_raises_stops_the_run_with_its_own_exception(tmp_path):
    import fpdp

    class Enough(Exception):
        pass

    def stop_at_step_12(p):
        if p.phase == "run" and p.step == 12:
            raise Enough("enough")

    try:
        fpdp.run(QUICK_CASE, output=tmp_path / "out", progress=stop_at_step_12, quiet=True,
                 **{"accuracy.estimate": False})
    except Enough:
        pass
    else:
        raise AssertionError("the callback's exception was not raised")
    # the run stopped after the checkpoint of step 10: DIR.partial is kept for a restart
    assert (tmp_path / "out.partial" / "checkpoint.h5").is_file()
    assert not (tmp_path / "out").exists()
    r = fpdp.resume(tmp_path / "out", quiet=True)
    assert int(r.steps[-1]) == 40


STUDY_SCRIPT = textwrap.dedent("""
    import glob, json, os, signal, sys, threading, time
    import fpdp
    out = sys.argv[2]
    def interrupt_once_members_run():
        while not glob.glob(out + ".partial/members/*/output.partial/divergence.csv"):
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)
    threading.Thread(target=interrupt_once_members_run, daemon=True).start()
    start = time.monotonic()
    report = {}
    try:
        fpdp.sweep(sys.argv[1], {"noise.sigma": [1.0, 1.1]}, output=out, quiet=True, jobs=2,
                   **{"noisy_gd.steps": 1000000, "output.every": 10000, "accuracy.estimate": False})
        report["interrupted"] = False
    except fpdp.RunInterrupted as e:
        report.update(interrupted=True, message=str(e))
    report["seconds"] = time.monotonic() - start
    report["left"] = sorted(os.listdir(os.path.dirname(out)))
    print(json.dumps(report))
""")


def test_ctrl_c_stops_a_sweeps_members(tmp_path):
    # the members would run for many minutes: a sweep that does not stop them fails here, and they are killed
    r = subprocess.Popen([sys.executable, "-c", STUDY_SCRIPT, QUICK_CASE, str(tmp_path / "sweep")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = r.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(r.pid, signal.SIGKILL)
        r.communicate()
        raise AssertionError("the sweep was not stopped by Ctrl-C")
    r.stdout, r.stderr = stdout, stderr
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout.strip().splitlines()[-1])
    assert report["interrupted"], report
    # the members were stopped, not waited for (each runs for minutes); the study's DIR.partial is kept for
    # fpdp.resume_sweep (`fpdp sweep --restart DIR`), and nothing else was written
    assert report["seconds"] < 60, report
    assert report["left"] == ["sweep.partial"], report
    assert "resume_sweep(" in report["message"] and "--restart" in report["message"], report
