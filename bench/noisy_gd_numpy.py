#!/usr/bin/python3
"""The NumPy peer of fpdp's Monte Carlo sampler (validation/MonteCarloSampler): the same noisy-GD update
    theta <- Pi_C(theta - eta g(theta) + sqrt(2 eta) L z),   L L^T = Sigma,   theta_0 = m_0 + L_0 z_0,
vectorised over the particles of a chunk at once (all of them by default), for the quadratic and logistic losses of a
case file (no clipping or constraint: the benchmark cases have none), N particles on D and N on D', and the final
histogram on the mesh. Chunks of a few thousand particles keep NumPy's temporaries (N x n for the logistic loss) in
the cache: bench/run-sampler runs several chunk sizes and keeps the fastest.
Prints particle-steps per second of wall time and per second of processor time (2 N K over the time of the updates
and the histogram).
    /usr/bin/python3 bench/noisy_gd_numpy.py CASE.toml PARTICLES [CHUNK]
"""
import sys
import time
import tomllib
from pathlib import Path

import numpy as np


def load(case_path):
    case = tomllib.loads(Path(case_path).read_text())
    d = len(case["mesh"]["lower"])
    data = case["data"]
    if "file" in data:
        lines = [l for l in (Path(case_path).parent / data["file"]).read_text().splitlines()
                 if l.strip() and not l.startswith("#")]
        if not lines[0].replace(",", "").replace(".", "").replace("-", "").replace(" ", "").isdigit():
            lines = lines[1:]  # a header line, as the C++ reader allows
        rows = np.array([[float(v) for v in l.split(",")] for l in lines])
        X, y = rows[:, :d], (rows[:, d] if rows.shape[1] > d else np.ones(len(rows)))
    else:
        X = np.array(data["records"], dtype=float).reshape(-1, d)
        y = np.array(data.get("labels", [1] * len(X)), dtype=float)
    nb = case["neighbour"]
    Xp, yp = X.copy(), y.copy()
    Xp[nb.get("index", 0)] = nb["record"]
    yp[nb.get("index", 0)] = nb.get("label", 1)
    noise = case["noise"]
    Sigma = np.array(noise["covariance"], dtype=float) if "covariance" in noise else noise.get("sigma", 1.0) ** 2 * np.eye(d)
    init = case["initial"]
    V0 = np.array(init["covariance"], dtype=float)
    V0 = V0 * np.eye(d) if V0.ndim == 0 else V0
    return case, d, (X, y), (Xp, yp), Sigma, np.array(init["mean"], dtype=float), V0


def gradient(loss, theta, X, y):
    if loss["type"] == "quadratic":  # (1/n) sum lambda (theta - x_i) = lambda (theta - xbar)
        return loss.get("lambda", 1.0) * (theta - X.mean(axis=0))
    if loss["type"] == "logistic":  # (1/n) sum -y_i sigmoid(-y_i <theta, x_i>) x_i + mu theta
        margin = (theta @ X.T) * y
        weight = -y * 0.5 * (1.0 - np.tanh(0.5 * margin))  # sigmoid(-m), overflow-free
        return weight @ X / len(X) + loss.get("regularization", 0.0) * theta
    raise SystemExit(f"loss {loss['type']} is not in the NumPy peer")


def main():
    case, d, D, Dp, Sigma, m0, V0 = load(sys.argv[1])
    N = int(sys.argv[2])
    eta, K = case["noisy_gd"]["eta"], case["noisy_gd"]["steps"]
    L, L0 = np.linalg.cholesky(Sigma) * np.sqrt(2 * eta), np.linalg.cholesky(V0)
    edges = [np.linspace(lo, hi, n + 1) for lo, hi, n in zip(case["mesh"]["lower"], case["mesh"]["upper"], case["mesh"]["cells"])]
    rng = np.random.Generator(np.random.Philox(1))
    chunk = int(sys.argv[3]) if len(sys.argv) > 3 else N
    start, cpuStart = time.perf_counter(), time.process_time()
    for X, y in (D, Dp):
        counts = 0
        for first in range(0, N, chunk):
            n = min(chunk, N - first)
            theta = m0 + rng.standard_normal((n, d)) @ L0.T
            for _ in range(K):
                theta = theta - eta * gradient(case["loss"], theta, X, y) + rng.standard_normal((n, d)) @ L.T
            counts = counts + np.histogramdd(theta, bins=edges)[0]
    wall, cpu = time.perf_counter() - start, time.process_time() - cpuStart
    print(f"{2 * N * K / wall:.4e} {2 * N * K / cpu:.4e} particle-steps per second and per processor second "
          f"({wall:.2f} s, {cpu:.2f} s processor, chunk {chunk}, last chunk's mean {theta.mean(axis=0)}, "
          f"on mesh {counts.sum():.0f})")


if __name__ == "__main__":
    main()
