#!/usr/bin/python3
"""SciPy peer of the 2-D OU benchmark: what a user would otherwise run.

The problem is stated independently of fpdp: d_t u = div(u grad Phi) + D lap u on [-6, 6]^2 with
no-flux walls, Phi = |theta - m|^2 / 2 (drift toward m = (1, 0.5)), D = sigma^2 = 0.5 (MATH.md §2.3),
u(0) = N(0, 0.5 I). Since the start covariance equals the stationary one, u(t) = N(m + e^{-t}(0 - m), 0.5 I)
(MATH.md §6); the error is L1 against its exact cell averages. Scharfetter–Gummel 5-point operator (Phi separable,
so A = I (x) Ax + Ay (x) I), sparse LU factored once (splu) and reused, backward Euler and Crank–Nicolson.
   ou_scipy_peer.py N STEPS [METHOD ...]     (METHOD: be, cn; prints one CSV row per method)
"""
import sys
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.special import ndtr

LO, HI, D, T_END, VAR0 = -6.0, 6.0, 0.5, 2.0, 0.5
M = (1.0, 0.5)


def bernoulli(x):  # B(x) = x / (e^x - 1), B(0) = 1
    x = np.asarray(x, dtype=float)
    small = np.abs(x) < 1e-8
    return np.where(small, 1.0 - x / 2, x / np.expm1(np.where(small, 1.0, x)))


def sg_1d(n, centre):
    """1-D SG operator on n cells: (A u)_i = -(J_{i+1/2} - J_{i-1/2}) / h, J = D/h (B(P) u_i - B(-P) u_{i+1})."""
    h = (HI - LO) / n
    x = LO + h * (np.arange(n) + 0.5)
    phi = 0.5 * (x - centre) ** 2
    P = (phi[1:] - phi[:-1]) / D
    out, into = D / h**2 * bernoulli(P), D / h**2 * bernoulli(-P)  # i -> i+1 and i+1 -> i face rates
    diag = np.zeros(n)
    diag[:-1] -= out
    diag[1:] -= into
    return sp.diags([diag, into, out], [0, 1, -1], format="csr")


def cell_averages(n, mean):
    edges = np.linspace(LO, HI, n + 1)
    h = (HI - LO) / n
    w = [np.diff(ndtr((edges - mu) / np.sqrt(VAR0))) / h for mu in mean]
    return np.outer(w[1], w[0]).ravel()  # y slow, x fast


def run(n, steps, method):
    t0 = time.perf_counter()
    I = sp.identity(n, format="csr")
    A = (sp.kron(I, sg_1d(n, M[0])) + sp.kron(sg_1d(n, M[1]), I)).tocsc()
    dt = T_END / steps
    Id = sp.identity(n * n, format="csc")
    theta = 1.0 if method == "be" else 0.5
    lu = spla.splu((Id - theta * dt * A).tocsc())
    explicit = (Id + (1 - theta) * dt * A).tocsr() if theta < 1 else None
    u = cell_averages(n, (0.0, 0.0))
    t1 = time.perf_counter()
    for _ in range(steps):
        u = lu.solve(explicit @ u if explicit is not None else u)
    t2 = time.perf_counter()
    mean = [mu * (1 - np.exp(-T_END)) for mu in M]
    l1 = np.abs(u - cell_averages(n, mean)).sum() * ((HI - LO) / n) ** 2
    return l1, t1 - t0, t2 - t1


if __name__ == "__main__":
    n, steps = int(sys.argv[1]), int(sys.argv[2])
    print("method,cells,steps,l1,setup_s,steps_s,total_s")
    for method in sys.argv[3:] or ["be", "cn"]:
        l1, setup, stepping = run(n, steps, method)
        print(f"{method},{n}x{n},{steps},{l1:.4e},{setup:.4f},{stepping:.4f},{setup + stepping:.4f}")
