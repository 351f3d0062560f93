"""Stage 2 of the ParaView output check (run-paraview-check), run by Debian's pvpython under xvfb-run.

Loads every run's fpdp.pvd (VTK XML: .vti/.vtr, or .pvti/.pvtr with one piece per rank) and fpdp.xmf (XDMF over
fpdp.h5, Xdmf3ReaderS) in ParaView and compares with the JSON written by expected_from_hdf5.py:
  - the time values, the cell count and the cell array names at every output step;
  - every cell value of every array, in order, against the HDF5 data (the .npz of stage 1);
  - the value ranges of p and q (the same doubles as the HDF5 data: equal), of log(p/q) and the Rényi integrand
    (recomputed by numpy from the HDF5 data: equal to a few rounding errors of log/exp, tolerances below), of the
    drifts (quadratic loss: -lambda (theta - mean));
  - the per-step scalars (FieldData; the divergence.csv row, written with 17 digits: equal), and that ParaView's
    "Plot Global Variables Over Time" gives the KL time series of divergence.csv;
  - a PNG rendered with the Surface representation coloured by p exists and is not blank.

usage: pvpython check_in_paraview.py EXPECTED.json PNG_DIR
"""
import json
import math
import os
import sys

from paraview.simple import (ColorBy, CreateRenderView, Delete, GetColorTransferFunction, Hide,
                             IntegrateVariables, OpenDataFile, PlotGlobalVariablesOverTime, SaveScreenshot, Show, Xdmf3ReaderS)
from paraview import servermanager
from vtkmodules.vtkIOImage import vtkPNGReader
from vtkmodules.util.numpy_support import vtk_to_numpy
import numpy as np

# log/exp of glibc (fpdp) and numpy agree to about one ulp each. log(p/q) = log p - log q: absolute error up to
# ~4 ulp of |log p| + |log q| <= 2 * 745 (the smallest positive double), i.e. 4 * 2.2e-16 * 1490 = 1.3e-12.
LOG_RATIO_ABS_TOL = 2e-12
# exp(alpha log p + (1 - alpha) log q): the exponent carries the error above times alpha (<= 10 in these cases),
# which exp turns into a relative error: 10 * 1.3e-12.
INTEGRAND_REL_TOL = 2e-11
# -lambda (theta - mean): the mean of a few records summed in a different order differs by an ulp or two of theta.
DRIFT_ABS_TOL = 1e-13

failures = []
cell_values = None  # expected_from_hdf5.py's .npz: "<case>/<step>/<array>" -> values of every cell


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def close(a, b, abs_tol=0.0, rel_tol=0.0):
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= max(abs_tol, rel_tol * max(abs(a), abs(b)))


def array_range(proxy, association, name, component=-1):
    arrays = proxy.CellData if association == "cells" else proxy.FieldData
    if name not in arrays.keys():
        return None
    return arrays[name].GetRange(component)


def png_is_not_blank(path, label):
    check(os.path.exists(path) and os.path.getsize(path) > 0, f"{label}: no PNG at {path}")
    if not os.path.exists(path):
        return
    reader = vtkPNGReader()
    reader.SetFileName(path)
    reader.Update()
    image = reader.GetOutput()
    w, h, _ = image.GetDimensions()
    pixels = np.array(vtk_to_numpy(image.GetPointData().GetScalars())).reshape(h * w, -1)[:, :3]
    background = pixels[0]  # a corner pixel: the camera is reset to fit the data, so corners show background
    drawn = np.any(pixels != background, axis=1)
    colours = len(np.unique(pixels[drawn], axis=0)) if drawn.any() else 0
    # A blank render is one colour; the coloured data cover a visible share of the image with several colours
    # of the colour map (thresholds far below what a correct render gives: 1-D lines cover about 0.3 %).
    print(f"  {label}: {w}x{h} PNG, {drawn.mean() * 100:.2f} % of pixels drawn, {colours} colours")
    check(drawn.mean() > 1e-3, f"{label}: the PNG is blank ({drawn.sum()} pixels differ from the background)")
    check(colours >= 5, f"{label}: the PNG shows only {colours} colours besides the background")


def check_dataset(case, kind, reader, view, png_dir):
    label = f"{os.path.basename(case['directory'])} ({case['ranks']} rank(s)) {kind}"
    steps = case["steps"]
    times = list(reader.TimestepValues) if len(steps) > 1 else [steps[0]["time"]]
    expected_times = [s["time"] for s in steps]
    check(len(times) == len(expected_times) and all(a == b for a, b in zip(times, expected_times)),
          f"{label}: time values {times} != {expected_times}")
    vtk_names = {"p", "q", "log_ratio", "log_ratio_resolved", case["integrand"], "drift_p", "drift_q"}
    names = vtk_names if kind == "pvd" else {"p", "q"}
    negatives = False
    for s in steps:
        reader.UpdatePipeline(s["time"])
        info = reader.GetDataInformation()
        check(info.GetNumberOfCells() == case["cells"],
              f"{label} t={s['time']}: {info.GetNumberOfCells()} cells, expected {case['cells']}")
        got = set(reader.CellData.keys())
        check(got == names, f"{label} t={s['time']}: cell arrays {sorted(got)}, expected {sorted(names)}")
        for name in ("p", "q"):
            r = array_range(reader, "cells", name)
            check(r is not None and list(r) == s["ranges"][name],
                  f"{label} t={s['time']}: range of {name} {r} != HDF5 {s['ranges'][name]}")
        if kind == "pvd":
            r, e = array_range(reader, "cells", "log_ratio"), s["ranges"]["log_ratio"]
            check(r is not None and all(close(a, b, abs_tol=LOG_RATIO_ABS_TOL) for a, b in zip(r, e)),
                  f"{label} t={s['time']}: range of log_ratio {r} != numpy {e}")
            # The documented treatment of undefined cells: NaN exactly where a density is <= 0 with no noise floor.
            fetched = servermanager.Fetch(reader, 0).GetCellData().GetArray("log_ratio")
            nan_cells = sum(1 for i in range(fetched.GetNumberOfTuples()) if math.isnan(fetched.GetValue(i)))
            check(nan_cells == s["undefined_log_ratio_cells"],
                  f"{label} t={s['time']}: {nan_cells} NaN cells in log_ratio, expected {s['undefined_log_ratio_cells']}")
            if "anisotropic" in case["directory"]:  # round-off negatives: log_ratio is a number in every cell
                check(nan_cells == 0, f"{label} t={s['time']}: {nan_cells} NaN cells in log_ratio, expected none")
                negatives = negatives or min(s["ranges"]["p"][0], s["ranges"]["q"][0]) < 0
            r, e = array_range(reader, "cells", case["integrand"]), s["ranges"][case["integrand"]]
            check(r is not None and all(close(a, b, rel_tol=INTEGRAND_REL_TOL) for a, b in zip(r, e)),
                  f"{label} t={s['time']}: range of {case['integrand']} {r} != numpy {e}")
            for name, per_axis in case["drifts"].items():
                for a, e in enumerate(per_axis):
                    r = array_range(reader, "cells", name, a)
                    check(r is not None and all(close(x, y, abs_tol=DRIFT_ABS_TOL) for x, y in zip(r, e)),
                          f"{label} t={s['time']}: range of {name}[{a}] {r} != {e}")
                for a in range(case["dim"], 3):
                    r = array_range(reader, "cells", name, a)
                    check(r is not None and list(r) == [0.0, 0.0], f"{label}: {name}[{a}] beyond d is {r}, not 0")
        # Every cell of every array, in order (x fastest), against the HDF5 data (p, q: equal) and numpy's values
        # computed from them (tolerances above). Fetch(reader, 0): the data of process 0 (the only one), as read;
        # the default Fetch gathers a vtkRectilinearGrid through vtkAppendRectilinearGrid, whose cell data differed
        # from the file from some cell on in ParaView 5.11 (garbage; the readers' own output is right).
        data = servermanager.Fetch(reader, 0).GetCellData()
        for name in sorted(names):
            got, key = data.GetArray(name), f"{case['index']}/{s['step']}/{name}"
            want = cell_values[key] if key in cell_values.files else None
            if got is None or want is None:
                check(False, f"{label} t={s['time']}: array {name} missing")
                continue
            got = np.array(vtk_to_numpy(got)).reshape(want.shape)
            if name in ("p", "q"):
                ok = np.array_equal(got, want)
            elif name == "log_ratio":
                ok = np.allclose(got, want, rtol=0, atol=LOG_RATIO_ABS_TOL, equal_nan=True)
            elif name.startswith("drift"):
                ok = np.allclose(got, want, rtol=0, atol=DRIFT_ABS_TOL)
            else:
                ok = np.allclose(got, want, rtol=INTEGRAND_REL_TOL, atol=0, equal_nan=True)
            check(ok, f"{label} t={s['time']}: cell values of {name} differ from the HDF5 data "
                      f"(largest difference {np.nanmax(np.abs(got - want)) if got.shape == want.shape else 'shape'})")
        # Per-step scalars as FieldData: every column of divergence.csv, equal to the CSV value.
        field = servermanager.Fetch(reader, 0).GetFieldData()
        for column, value in s["scalars"].items():
            if not math.isfinite(value):  # ParaView's ranges clamp +inf to (1e+299, inf): the stored value itself
                a = field.GetArray(column)
                got = a.GetValue(0) if a is not None and a.GetNumberOfTuples() == 1 else None
                check(got is not None and (got == value or (math.isnan(got) and math.isnan(value))),
                      f"{label} t={s['time']}: FieldData {column} = {got}, divergence.csv has {value}")
                continue
            r = array_range(reader, "field", column)
            check(r is not None and close(r[0], value) and close(r[1], value),
                  f"{label} t={s['time']}: FieldData {column} = {r}, divergence.csv has {value}")

    if kind == "pvd" and "anisotropic" in case["directory"]:
        check(negatives, f"{label}: no negative cell value at any step, so the noise floor of log_ratio was not tested")

    # IntegrateVariables over fpdp.xmf gives the masses of p and q at every step (the slab axes have unit extent).
    if kind == "xmf":
        for s in steps:
            integral = IntegrateVariables(Input=reader)
            integral.UpdatePipeline(s["time"])
            data = servermanager.Fetch(integral).GetCellData()
            for name in ("p", "q"):
                got = data.GetArray(name).GetValue(0) if data.GetArray(name) else None
                want = s["scalars"]["mass_" + name]
                check(got is not None and close(got, want, rel_tol=1e-9),
                      f"{label} t={s['time']}: IntegrateVariables of {name} = {got}, divergence.csv mass_{name} {want}")
            Delete(integral)

    # "Plot Global Variables Over Time": the KL series over all output steps.
    if len(steps) > 1:
        plot = PlotGlobalVariablesOverTime(Input=reader)
        plot.UpdatePipeline()
        table = servermanager.Fetch(plot, 0)
        names = [table.GetColumnName(i) for i in range(table.GetNumberOfColumns())]
        kl_name = next((n for n in names if n == "kl" or n.startswith("kl ")), None)
        check(kl_name is not None, f"{label}: Plot Global Variables Over Time has no kl column ({names})")
        if kl_name is not None:
            column = table.GetColumnByName(kl_name)
            series = [column.GetValue(i) for i in range(column.GetNumberOfTuples())]
            expected = [s["scalars"]["kl"] for s in steps]
            check(len(series) == len(expected) and all(close(a, b) for a, b in zip(series, expected)),
                  f"{label}: Plot Global Variables Over Time kl {series} != divergence.csv {expected}")
        Delete(plot)

    # A render of p at the last step, Surface representation (cell data on a 2-D image renders blank as a Slice).
    view.ViewTime = steps[-1]["time"]
    display = Show(reader, view)
    display.SetRepresentationType("Surface")
    ColorBy(display, ("CELLS", "p"))
    display.RescaleTransferFunctionToDataRange(True, False)
    view.ResetCamera()
    if case["dim"] == 3:
        view.CameraPosition = [20, -25, 18]
        view.CameraViewUp = [0, 0, 1]
        view.ResetCamera()
    png = os.path.join(png_dir, f"{os.path.basename(case['directory'])}-{case['ranks']}-{kind}.png")
    SaveScreenshot(png, view, ImageResolution=[320, 240])
    Hide(reader, view)
    png_is_not_blank(png, label)


def main():
    global cell_values
    with open(sys.argv[1]) as fh:
        cases = json.load(fh)
    cell_values = np.load(sys.argv[1].rsplit(".", 1)[0] + ".npz")
    for index, case in enumerate(cases):
        case["index"] = index
    png_dir = sys.argv[2]
    os.makedirs(png_dir, exist_ok=True)
    view = CreateRenderView()
    view.OrientationAxesVisibility = 0
    for case in cases:
        d = case["directory"]
        # The .pvd lists one dataset per output step: .vti/.vtr with one rank, .pvti/.pvtr (one piece each) else.
        ext = ("vtr" if case["graded"] else "vti")
        ext = ext if case["ranks"] == 1 else "p" + ext
        with open(os.path.join(d, "fpdp.pvd")) as fh:
            pvd = fh.read()
        check(pvd.count(f".{ext}\"") == len(case["steps"]), f"{d}: fpdp.pvd does not list {len(case['steps'])} .{ext}")
        if case["ranks"] > 1:
            first = os.path.join(d, "vtk", f"fpdp_{case['steps'][0]['step']:08d}.{ext}")
            with open(first) as fh:
                check(fh.read().count("<Piece ") == case["ranks"], f"{first}: not one piece per rank")
        reader = OpenDataFile(os.path.join(d, "fpdp.pvd"))
        check_dataset(case, "pvd", reader, view, png_dir)
        Delete(reader)
        reader = Xdmf3ReaderS(FileName=[os.path.join(d, "fpdp.xmf")])
        check_dataset(case, "xmf", reader, view, png_dir)
        Delete(reader)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print(f"ParaView check: {len(cases)} runs, .pvd and .xmf each: all checks passed")
    return 0


status = main()
sys.stdout.flush()
# Leave without ParaView's interpreter teardown, which can crash after a failed check (seen: SIGSEGV after
# sys.exit(1)); the status is what the test reports.
os._exit(status)
