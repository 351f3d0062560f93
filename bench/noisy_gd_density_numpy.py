#!/usr/bin/python3
"""The NumPy peer of fpdp's noisy-GD density recursion (docs/noisy-gd.md): the same recursion on the same grid,
    p_{k+1} = (T_D # p_k) * N(0, 2 eta sigma^2),   T_D(theta) = theta - eta g_D(theta),
for p (D) and q (D'), written as NumPy users would: the push-forward by interpolation (the pushed density at the
cell centres, p(T^-1(y)) / T'(T^-1(y)), from np.interp on the images of the centres), then the noise by one FFT
convolution (np.fft.rfft) with the Gaussian's cell-integrated kernel, renormalised to the mass the kernel keeps on
the mesh. 1-D cases with the quadratic or logistic loss, full batches, no constraint (the Figure 1 cases).
It prints the time per step (both densities) and R_alpha of the last iterate by the plain sum over the cells, so
that the two programs can be seen to compute the same thing (the peer's interpolation is second order, its FFT
convolution accurate only relative to the peak: its far tails are rounding noise, which large orders see).
    /usr/bin/python3 bench/noisy_gd_density_numpy.py CASE.toml [STEPS]
"""
import math
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
from scipy.special import ndtr


def records(case, case_path):
    data = case["data"]
    if "file" in data:
        lines = [l for l in (Path(case_path).parent / data["file"]).read_text().splitlines()
                 if l.strip() and not l.startswith("#")]
        rows = np.array([[float(v) for v in l.split(",")] for l in lines])
        return rows[:, 0], (rows[:, 1] if rows.shape[1] > 1 else np.ones(len(rows)))
    X = np.array(data["records"], dtype=float).reshape(-1)
    return X, np.array(data.get("labels", [1] * len(X)), dtype=float)


def gradient(loss, theta, X, y):
    """(1/n) sum_i grad l(theta; x_i) at the points theta (a vector)."""
    if loss["type"] == "quadratic":
        return loss.get("lambda", 1.0) * (theta - X.mean())
    if loss["type"] == "logistic":
        margin = np.outer(theta, X * y)
        weight = -0.5 * (1.0 - np.tanh(0.5 * margin)) * (X * y)
        return weight.mean(axis=1) + loss.get("regularization", 0.0) * theta
    raise SystemExit(f"loss {loss['type']} is not in the NumPy peer")


def main():
    case_path = sys.argv[1]
    case = tomllib.loads(Path(case_path).read_text())
    if len(case["mesh"]["cells"]) != 1:
        raise SystemExit("the NumPy peer is 1-D")
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else case["noisy_gd"]["steps"]
    lo, hi, n = case["mesh"]["lower"][0], case["mesh"]["upper"][0], case["mesh"]["cells"][0]
    faces = np.linspace(lo, hi, n + 1)
    x, h = 0.5 * (faces[1:] + faces[:-1]), (hi - lo) / n
    eta, sigma = case["noisy_gd"]["eta"], case["noise"]["sigma"]
    s = math.sqrt(2 * eta) * sigma
    X, y = records(case, case_path)
    nb = case["neighbour"]
    Xp, yp = X.copy(), y.copy()
    Xp[nb.get("index", 0)] = nb["record"][0]
    yp[nb.get("index", 0)] = nb.get("label", 1)
    # The start: cell averages of N(m0, V0).
    m0, v0 = case["initial"]["mean"][0], case["initial"]["covariance"]
    start = np.diff(ndtr((faces - m0) / math.sqrt(v0))) / h
    # The noise kernel: the Gaussian's mass in each cell offset (cell-integrated), to 40 sd; its spectrum once.
    reach = int(math.ceil(40 * s / h))
    offsets = np.arange(-reach, reach + 1)
    kernel = ndtr((offsets + 0.5) * h / s) - ndtr((offsets - 0.5) * h / s)
    size = 1 << int(math.ceil(math.log2(n + 2 * reach + 1)))
    spectrum = np.fft.rfft(kernel, size)
    # The maps at the cell centres, once (the mesh does not move): images and their derivatives.
    maps = []
    for XX, yy in ((X, y), (Xp, yp)):
        image = x - eta * gradient(case["loss"], x, XX, yy)
        slope = np.gradient(image, h)
        maps.append((image, slope))

    def step(p, image, slope):
        pushed = np.interp(x, image, p / slope, left=0.0, right=0.0)   # the pushed density at the centres
        mass = pushed.sum()
        smoothed = np.fft.irfft(np.fft.rfft(pushed, size) * spectrum, size)[reach:reach + n]
        smoothed = np.maximum(smoothed, 0.0)
        return smoothed * (mass / max(smoothed.sum(), 1e-300))

    p, q = start.copy(), start.copy()
    step(p, *maps[0])  # warm up
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        p = step(p, *maps[0])
        q = step(q, *maps[1])
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    p, q = p / (p.sum() * h), q / (q.sum() * h)
    renyi = []
    for alpha in case.get("divergence", {}).get("orders", [2]):
        keep = (p > 0) & (q > 0)
        with np.errstate(over="ignore", invalid="ignore"):  # the peer's tails are rounding noise: inf or nan
            e = np.sum(h * p[keep] ** alpha * q[keep] ** (1 - alpha))
        renyi.append(f"R_{alpha} = {math.log(e) / (alpha - 1):.6e}")
    print(f"numpy peer: {steps} steps of {n} cells, {1e6 * wall / steps:.1f} us per step (wall), "
          f"{1e6 * cpu / steps:.1f} us (processor); {', '.join(renyi)}")


if __name__ == "__main__":
    main()
