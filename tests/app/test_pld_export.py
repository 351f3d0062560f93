#!/usr/bin/python3
"""scripts/pld-for-dp-accounting on the default case: the rounded privacy loss distributions (both directions) give a
privacy profile at or above the run's hockey-stick curve (pessimistic: delta_pld(eps) >= delta(eps)) and at most the
curve two grid widths earlier (delta_pld(eps) <= delta(eps - 2w): the rounding moves a loss up by less than two bins),
their masses sum to 1, and bad input ends with exit status 1 and a reason. A rounding down anywhere, a lost bin, or a
direction mixed up fails here.

    test_pld_export.py SOURCE_DIR FPDP
"""
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

source, fpdp = sys.argv[1], sys.argv[2]
script = os.path.join(source, "scripts", "pld-for-dp-accounting")
failures = []


def check(ok, message):
    if not ok:
        failures.append(message)


with tempfile.TemporaryDirectory() as tmp:
    text = open(os.path.join(source, "cases", "default.toml")).read()
    text = text.replace("[output]", "[output]\nplots = false\nfields = false", 1) + "\n[accuracy]\nestimate = false\n"
    case = os.path.join(tmp, "default.toml")
    open(case, "w").write(text)
    out = os.path.join(tmp, "out")
    run = subprocess.run([fpdp, "run", case, "--output", out, "--quiet"], capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout, run.stderr)
        sys.exit(1)
    pld = os.path.join(tmp, "pld.json")
    r = subprocess.run([script, out, "--json", pld], capture_output=True, text=True)
    check(r.returncode == 0, f"exit status {r.returncode}: {r.stdout}")
    d = json.load(open(pld))
    rows = [row for row in csv.DictReader(open(os.path.join(out, "hockey_stick.csv"))) if int(row["step"]) == d["step"]]
    eps = [float(row["eps"]) for row in rows]
    for direction, column in (("pq", "delta_pq"), ("qp", "delta_qp")):
        p = d[direction]
        w = p["interval"]
        total = sum(p["pmf"].values()) + p["infinity_mass"]
        check(abs(total - 1.0) <= 1e-12, f"{direction}: masses sum to {total}")
        curve = [float(row[column]) for row in rows]

        def profile(e):
            return p["infinity_mass"] + sum(v * -math.expm1(e - int(i) * w) for i, v in p["pmf"].items() if int(i) * w > e)

        def curve_at(e):  # the run's curve between grid points, linear in log delta (it is log-concave-like)
            k = max(j for j in range(len(eps)) if eps[j] <= e)
            if k + 1 >= len(eps) or curve[k] <= 0 or curve[k + 1] <= 0:
                return curve[k]
            s = (e - eps[k]) / (eps[k + 1] - eps[k])
            return math.exp(math.log(curve[k]) + s * (math.log(curve[k + 1]) - math.log(curve[k])))

        checked = 0
        for e, c in zip(eps, curve):
            if c < 1e-10:
                continue
            x = profile(e)
            check(x >= c * (1 - 1e-9), f"{direction}: delta_pld({e}) = {x} below the run's {c}")
            if e >= 2 * w:
                upper = curve_at(e - 2 * w)
                check(x <= upper * (1 + 1e-3), f"{direction}: delta_pld({e}) = {x} above the run's at eps - 2w, {upper}")
            checked += 1
        check(checked > 20, f"{direction}: only {checked} eps compared")
    r = subprocess.run([script, tmp], capture_output=True, text=True)
    check(r.returncode == 1 and "does not exist" in r.stdout, f"no fpdp.h5: exit {r.returncode}, {r.stdout!r}")
    r = subprocess.run([script, out, "--step", "7"], capture_output=True, text=True)
    check(r.returncode == 1 and "not an output step" in r.stdout, f"--step 7: exit {r.returncode}, {r.stdout!r}")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
