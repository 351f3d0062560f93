#!/usr/bin/python3
"""scripts/pld-for-dp-accounting on the default case: both directions on one grid; the rounded privacy loss
distributions give a privacy profile at or above the run's hockey-stick curve and its conservative curve (made
non-increasing), and, for the computed densities alone (--computed-densities), at most the curve two grid widths
earlier (delta_pld(eps) <= delta(eps - 2w): the rounding moves a loss up by less than two bins); the cover of the
conservative curve adds no more than the mass it reports moving to infinity; the masses sum to 1; bad input ends with
exit status 1 and a reason. A rounding down anywhere, a lost bin, or a direction mixed up fails here.

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


def profile_of(p, w):
    def profile(e):
        return p["infinity_mass"] + sum(v * -math.expm1(e - int(i) * w) for i, v in p["pmf"].items() if int(i) * w > e)
    return profile


with tempfile.TemporaryDirectory() as tmp:
    text = open(os.path.join(source, "cases", "default.toml")).read()
    text = text.replace("[output]", "[output]\nplots = false\nfields = false", 1)
    case = os.path.join(tmp, "default.toml")
    open(case, "w").write(text)
    out = os.path.join(tmp, "out")
    run = subprocess.run([fpdp, "run", case, "--output", out, "--quiet"], capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout, run.stderr)
        sys.exit(1)
    exports = {}
    for name, extra in (("covered", []), ("computed", ["--computed-densities"])):
        pld = os.path.join(tmp, name + ".json")
        r = subprocess.run([script, out, "--json", pld] + extra, capture_output=True, text=True)
        check(r.returncode == 0, f"{name}: exit status {r.returncode}: {r.stdout}")
        exports[name] = json.load(open(pld))
    d = exports["covered"]
    w = d["interval"]
    check(exports["computed"]["interval"] == w, "the two exports have different grids")
    kwargs = d["create_from_rounded_probability"]
    check(kwargs["symmetric"] is False and kwargs["value_discretization_interval"] == w, f"arguments: {kwargs}")
    step = d["step"]
    rows = [row for row in csv.DictReader(open(os.path.join(out, "hockey_stick.csv"))) if int(row["step"]) == step]
    acc = [row for row in csv.DictReader(open(os.path.join(out, "hockey_stick_accuracy.csv")))
           if int(row["step"]) == step]
    eps = [float(row["eps"]) for row in rows]
    for direction, column in (("pq", "delta_pq"), ("qp", "delta_qp")):
        curve = [float(row[column]) for row in rows]
        conservative = [float(row[column + "_conservative"]) for row in acc]
        envelope = [min(conservative[: k + 1]) for k in range(len(conservative))]
        covered, computed = d[direction], exports["computed"][direction]
        for p in (covered, computed):
            total = sum(p["pmf"].values()) + p["infinity_mass"]
            check(abs(total - 1.0) <= 1e-12, f"{direction}: masses sum to {total}")
        moved = covered["moved_for_the_conservative_curve"]

        def curve_at(e):  # the run's curve between grid points, linear in log delta (it is log-concave-like)
            k = max(j for j in range(len(eps)) if eps[j] <= e)
            if k + 1 >= len(eps) or curve[k] <= 0 or curve[k + 1] <= 0:
                return curve[k]
            s = (e - eps[k]) / (eps[k + 1] - eps[k])
            return math.exp(math.log(curve[k]) + s * (math.log(curve[k + 1]) - math.log(curve[k])))

        checked = 0
        for e, c, bound in zip(eps, curve, envelope):
            x, y = profile_of(covered, w)(e), profile_of(computed, w)(e)
            check(x >= bound, f"{direction}: delta_pld({e}) = {x} below the run's conservative {bound}")
            if c < 1e-10:
                continue
            check(y >= c * (1 - 1e-9), f"{direction}: computed delta_pld({e}) = {y} below the run's {c}")
            if e >= 2 * w:
                upper = curve_at(e - 2 * w)
                check(y <= upper * (1 + 1e-3), f"{direction}: delta_pld({e}) = {y} above the run's at eps - 2w, {upper}")
                check(x <= y + moved * (1 + 1e-9) + 1e-15, f"{direction}: the cover added more than it moved at {e}")
            checked += 1
        check(checked > 20, f"{direction}: only {checked} eps compared")
    r = subprocess.run([script, tmp], capture_output=True, text=True)
    check(r.returncode == 1 and "not an fpdp output directory" in r.stderr, f"no run: exit {r.returncode}, {r.stderr!r}")
    r = subprocess.run([script, out, "--step", "7"], capture_output=True, text=True)
    check(r.returncode == 1 and "not an output step" in r.stderr, f"--step 7: exit {r.returncode}, {r.stderr!r}")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
