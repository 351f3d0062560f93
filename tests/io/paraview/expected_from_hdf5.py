#!/usr/bin/python3
"""Stage 1 of the ParaView output check (run-paraview-check): what ParaView must show, computed independently of
fpdp's VTK/XDMF writers from fpdp.h5 (h5py), divergence.csv and parameters.toml.

For every output directory given: the expected array names, cell count, output times, and per output step the
value ranges of p and q (the HDF5 data themselves), of log(p/q) and p^alpha q^(1-alpha) (recomputed here with numpy
from the HDF5 p and q), of the drifts -grad L_D, -grad L_D' (quadratic loss: -lambda (theta - mean of the records),
MATH.md §2.3, at the HDF5 cell centres), and the divergence.csv row. Written as JSON for the pvpython stage.

The cell values themselves (every cell of every array, same names) go to OUT.npz, keyed "<case>/<step>/<array>".

usage: expected_from_hdf5.py OUT.json RANKS:DIR [RANKS:DIR ...]
"""
import csv
import json
import math
import sys
import tomllib

import h5py
import numpy as np


def finite_range(a):
    a = a[np.isfinite(a)]
    return [float(a.min()), float(a.max())] if a.size else None


def expected(directory, ranks, arrays, case_index):
    with h5py.File(f"{directory}/fpdp.h5", "r") as f:
        dim = int(f.attrs["dim"])
        params = tomllib.loads(f["parameters"][()].decode())
        axes = "xyz"[:dim]
        faces = [f[f"mesh/{a}_faces"][:] for a in axes]
        centres = [f[f"mesh/{a}_centres"][:] for a in axes]
        groups = sorted(f["fields"])
        steps = []
        for g in groups:
            p = f[f"fields/{g}/p"][:].ravel()
            q = f[f"fields/{g}/q"][:].ravel()
            steps.append({"group": g, "step": int(f[f"fields/{g}"].attrs["step"]),
                          "time": float(f[f"fields/{g}"].attrs["time"]), "p": p, "q": q})
    cells = int(np.prod([len(c) for c in centres]))
    alpha_label = params["divergence"]["orders"][0]
    alpha = float(alpha_label)
    label = str(alpha_label) if isinstance(alpha_label, int) else repr(alpha_label)
    if isinstance(alpha_label, float) and alpha_label.is_integer():
        label = str(int(alpha_label))

    # Cell centres in x-fastest order (C order of (nz, ny, nx)).
    mesh = np.meshgrid(*centres[::-1], indexing="ij")
    centre = [m.ravel() for m in mesh[::-1]]
    drifts, drift_cells = {}, {}
    if params["loss"]["type"] == "quadratic":
        lam = params["loss"]["lambda"]
        records = np.array(params["data"]["records"], dtype=float).reshape(-1, dim)
        neighbour = records.copy()
        neighbour[params["neighbour"]["index"]] = params["neighbour"]["record"]
        for name, data in (("drift_p", records), ("drift_q", neighbour)):
            mean = data.mean(axis=0)
            drifts[name] = [[float(np.min(-lam * (centre[a] - mean[a]))), float(np.max(-lam * (centre[a] - mean[a])))]
                            for a in range(dim)]
            drift_cells[name] = np.stack([-lam * (centre[a] - mean[a]) if a < dim else np.zeros(cells)
                                          for a in range(3)], axis=1)

    with open(f"{directory}/divergence.csv") as fh:
        rows = list(csv.DictReader(fh))
    by_step = {int(float(r["step"])): {k: float(v) for k, v in r.items()} for r in rows}

    out_steps = []
    for s in steps:
        p, q = s["p"], s["q"]
        # docs/output.md: each density raised to its noise floor (10 x its most negative value, 0 without one);
        # NaN only where a density is <= 0 with no floor; log_ratio_resolved = 1 above both floors.
        floor_p, floor_q = 10 * max(-float(p.min()), 0.0), 10 * max(-float(q.min()), 0.0)
        pf, qf = np.maximum(p, floor_p), np.maximum(q, floor_q)
        both = (pf > 0) & (qf > 0)
        resolved = ((p > floor_p) & (q > floor_q)).astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            log_ratio = np.where(both, np.log(pf) - np.log(qf), np.nan)
            integrand = np.where(p <= 0, 0.0,
                                 np.where(q <= 0, np.inf, np.exp(alpha * np.log(p) + (1 - alpha) * np.log(q))))
        key = f"{case_index}/{s['step']}/"
        arrays.update({key + "p": p, key + "q": q, key + "log_ratio": log_ratio, key + "log_ratio_resolved": resolved,
                       key + f"renyi_integrand_{label}": integrand})
        arrays.update({key + name: v for name, v in drift_cells.items()})
        out_steps.append({
            "step": s["step"], "time": s["time"], "group": s["group"],
            "ranges": {"p": [float(p.min()), float(p.max())], "q": [float(q.min()), float(q.max())],
                       "log_ratio": finite_range(log_ratio), f"renyi_integrand_{label}": finite_range(integrand)},
            "undefined_log_ratio_cells": int((~both).sum()),
            "scalars": by_step[s["step"]],
        })
    return {"directory": directory, "ranks": ranks, "dim": dim, "cells": cells,
            "cells_per_axis": [len(c) for c in centres],
            "graded": any(not np.allclose(np.diff(fc), np.diff(fc)[0], rtol=1e-12, atol=0) for fc in faces),
            "integrand": f"renyi_integrand_{label}", "drifts": drifts, "steps": out_steps,
            "csv_columns": list(rows[0].keys())}


def main():
    out = sys.argv[1]
    cases, arrays = [], {}
    for index, arg in enumerate(sys.argv[2:]):
        ranks, directory = arg.split(":", 1)
        cases.append(expected(directory, int(ranks), arrays, index))
    with open(out, "w") as fh:
        json.dump(cases, fh, indent=1)
    np.savez(out.rsplit(".", 1)[0] + ".npz", **arrays)


if __name__ == "__main__":
    main()
