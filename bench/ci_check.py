#!/usr/bin/python3
"""Quick benchmark subset for CI: fails on a slowdown beyond 2x of the implicit step.

The step is judged against one SpMV measured in the same process (bench_step_cost): the ratio
(fastest step) / (fastest SpMV) is compared with the ratio in bench/ci-reference.json, so that a slower or busier
machine, which slows both alike, does not fail the check, while a change that makes the step cost more SpMVs does.
The fastest of many single steps and of many SpMVs are used (a loaded machine inflates minima least); a
configuration that exceeds the limit is re-measured up to three times before the check fails.
   ci_check.py --exe BENCH_STEP_COST [--reference FILE] [--write-reference]
--write-reference measures and writes the reference (the ratios of this machine, with the date and load).
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# 128^2, 40 BDF2 steps of dt = 0.01: LU (one triangular solve pair per step), GMRES + ILU(0), GMRES + multigrid.
CONFIGS = {
    "lu": "-ksp_type preonly -pc_type lu",
    "gmres_ilu": "-ksp_type gmres -pc_type ilu -ksp_rtol 1e-6",
    "gmres_mg": "-ksp_type gmres -pc_type mg -ksp_rtol 1e-6",
}
LIMIT = 2.0  # fail on a slowdown beyond 2x


def measure(exe, options):
    cmd = [exe, "--cells", "128", "--steps", "40", "--repeats", "3", "--no-stream"] + options.split()
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"ci_check: {' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    d = json.loads(out.stdout.strip().splitlines()[-1])
    return d["step_min_s"] / d["spmv_s"], d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--reference", default=os.path.join(HERE, "ci-reference.json"))
    ap.add_argument("--write-reference", action="store_true")
    args = ap.parse_args()
    load = open("/proc/loadavg").read().split()[0]
    if args.write_reference:
        ref = {"measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load_average": float(load),
               "command": "bench/ci_check.py --write-reference (best of 3 measurements per configuration)",
               "step_over_spmv": {}}
        for name, opts in CONFIGS.items():
            ref["step_over_spmv"][name] = round(min(measure(args.exe, opts)[0] for _ in range(3)), 2)
        with open(args.reference, "w") as f:
            json.dump(ref, f, indent=2)
            f.write("\n")
        print(json.dumps(ref, indent=2))
        return
    ref = json.load(open(args.reference))
    failed = []
    print(f"load average {load}; reference measured {ref['measured']} (load {ref['load_average']})")
    for name, opts in CONFIGS.items():
        base = ref["step_over_spmv"][name]
        for attempt in range(4):
            ratio, d = measure(args.exe, opts)
            if ratio <= LIMIT * base:
                break
        verdict = "ok" if ratio <= LIMIT * base else "SLOWER"
        print(f"{name:10s} step/SpMV {ratio:7.2f}  reference {base:7.2f}  limit {LIMIT * base:7.2f}  {verdict}  "
              f"(step {1e3 * d['step_min_s']:.3f} ms, SpMV {1e3 * d['spmv_s']:.4f} ms, {d['ksp_iterations_last_step']} "
              f"KSP its, attempt {attempt + 1})")
        if verdict != "ok":
            failed.append(name)
    if failed:
        sys.exit(f"ci_check: the implicit step got more than {LIMIT}x slower relative to one SpMV: {', '.join(failed)}")


if __name__ == "__main__":
    main()
