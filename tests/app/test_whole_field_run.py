#!/usr/bin/python3
"""`fpdp run` on cases of four parameters (noisy GD on whole fields, docs/scaling.md §9), against the closed forms of
the quadratic loss, whose iterates are Gaussian (MATH.md §6): p_K = N(m_K, v_K I), q_K = N(m'_K, v_K I) with
m_(k+1) = (1 - eta lambda) m_k + eta lambda xbar, v_(k+1) = (1 - eta lambda)^2 v_k + 2 eta sigma^2. Checked:
  - KL, R_alpha, TV and eps(delta) (both directions) at every output step within 1 % of the closed forms;
  - every conservative value of accuracy.csv and hockey_stick_accuracy.csv at least the truth, every certified value
    within accuracy.rtol of it (the accuracy contract, with the composition cap);
  - cyclic batches (two batches of one record each) against the closed form of the cyclic recursion;
  - a full Sigma (run in y = L^-1 theta, Sigma = L D L^T): the same checks against the closed forms with covariances
    C_(k+1) = (1 - eta lambda)^2 C_k + 2 eta Sigma; fpdp.h5's axes y_a and its L; fpdp sample's Monte Carlo of theta
    against the solver's means mapped back by L;
  - Poisson batches (enumerated) on a linear loss whose records differ along axis 0 only, against the 1-D closed form
    of the lattice mixture (a 1-D run's exact.csv);
  - fpdp.h5 holds the 4-D densities (chunked, compressed) whose masses are divergence.csv's, bitwise the same on two
    ranks as on one; the 2-D and 3-D marginals' and slices' ParaView files, the slices through the mode of p equal to
    the 4-D field there;
  - --certify: the mesh doubles per axis until a budget stops it; the last run published with its outcome;
  - refusals by key of what the whole-field route does not compute, with no output directory left.

    test_whole_field_run.py SOURCE_DIR FPDP
"""
import csv
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile

import h5py
import numpy

source, fpdp = sys.argv[1], sys.argv[2]
failures = []


def check(ok, message):
    if not ok:
        failures.append(message)


def phi(x):
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def gaussian_delta(mu, eps):
    """delta(eps) of N(mu, 1) against N(0, 1) (either direction)."""
    if mu == 0.0:
        return 0.0
    return phi(-eps / mu + mu / 2.0) - math.exp(eps) * phi(-eps / mu - mu / 2.0)


def gaussian_eps(mu, delta):
    if gaussian_delta(mu, 0.0) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gaussian_delta(mu, hi) > delta:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(mu, mid) > delta:
            lo = mid
        else:
            hi = mid
    return hi


RECORDS = [[0.4, 0.2, -0.3, 0.1], [-0.2, 0.1, 0.0, 0.3]]
REPLACEMENT = [-0.2, 0.3, 0.1, -0.2]
ETA, LAMBDA, SIGMA, V0 = 0.1, 1.0, 1.0, 0.5


def case_text(name, cells, steps, every, half_width=6.0, extra="", batch=""):
    lower = ", ".join([str(-half_width)] * 4)
    upper = ", ".join([str(half_width)] * 4)
    return f"""[case]
name = "{name}"
dynamics = "noisy_gd"
[mesh]
lower = [{lower}]
upper = [{upper}]
cells = [{", ".join([str(cells)] * 4)}]
[loss]
type = "quadratic"
lambda = {LAMBDA}
[data]
records = {RECORDS}
[neighbour]
index = 0
record = {REPLACEMENT}
[noise]
sigma = {SIGMA}
[initial]
mean = [0.0, 0.0, 0.0, 0.0]
covariance = {V0}
[noisy_gd]
eta = {ETA}
steps = {steps}
diffusion = "exact_convolution"
{extra}
{batch}
[output]
every = {every}
plots = false
[divergence]
orders = [2, 5]
"""


def exact_mu(step, cyclic, sigma=None):
    """The pair's Mahalanobis distance sqrt(gap^T C_K^-1 gap) (equal covariances C_K; sigma: the noise covariance,
    None for SIGMA^2 I)."""
    contraction = 1.0 - ETA * LAMBDA
    noise = SIGMA ** 2 * numpy.eye(4) if sigma is None else numpy.array(sigma)
    v = V0 * numpy.eye(4)
    gap = numpy.zeros(4)
    for k in range(step):
        if cyclic:
            # batch k mod 2: record k mod 2 alone (b = 1); only batch 0 differs between D and D'.
            g = numpy.array(RECORDS[0]) - numpy.array(REPLACEMENT) if k % 2 == 0 else numpy.zeros(4)
        else:
            g = (numpy.array(RECORDS[0]) - numpy.array(REPLACEMENT)) / 2.0
        gap = contraction * gap + ETA * LAMBDA * g
        v = contraction ** 2 * v + 2.0 * ETA * noise
    return math.sqrt(float(gap @ numpy.linalg.solve(v, gap)))


def truth(name, mu, alpha_of):
    """The closed form of accuracy.csv's number `name` (None where it has none here)."""
    if name in ("kl", "kl_qp"):
        return mu * mu / 2.0
    if name == "tv":
        return 2.0 * phi(mu / 2.0) - 1.0
    for prefix in ("renyi_qp_", "renyi_"):
        if name.startswith(prefix):
            return alpha_of[name[len(prefix):]] * mu * mu / 2.0
    if name.startswith("eps_exact_delta_"):
        return gaussian_eps(mu, float(name[len("eps_exact_delta_"):]))
    return None


def vti_array(path, name):
    """A Float64 array of a VTK ImageData file with raw appended data (io/VtkOutput: UInt64 byte counts)."""
    data = open(path, "rb").read()
    head = data[: data.index(b"<AppendedData")].decode()
    at = head.index(f'Name="{name}"')
    offset = int(head[at:].split('offset="')[1].split('"')[0])
    base = data.index(b"_", data.index(b"<AppendedData")) + 1
    size = int(numpy.frombuffer(data[base + offset: base + offset + 8], dtype="<u8")[0])
    return numpy.frombuffer(data[base + offset + 8: base + offset + 8 + size], dtype="<f8")


def run(case, out, ranks=1, extra=()):
    command = [fpdp, "run", case, "--output", out, "--quiet"] + list(extra)
    if ranks > 1:
        command = ["mpiexec", "-n", str(ranks)] + command
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)


def check_run(out, cyclic, label, close=True, sigma=None):
    """close: the values within 1 % (2 % for eps) of the closed forms too, not only the accuracy contract; sigma: a
    full noise covariance (exact_mu)."""

    rows = list(csv.DictReader(open(os.path.join(out, "divergence.csv"))))
    check(len(rows) > 1, f"{label}: divergence.csv has {len(rows)} rows")
    for row in rows if close else []:
        step = int(row["step"])
        mu = exact_mu(step, cyclic, sigma)
        for column, exact in (("kl", mu * mu / 2), ("renyi_2", mu * mu), ("renyi_5", 2.5 * mu * mu),
                              ("tv", 2 * phi(mu / 2) - 1)):
            value = float(row[column])
            check(abs(value - exact) <= 0.01 * exact + 1e-14,
                  f"{label}: step {step} {column} = {value} against the closed form {exact}")
    alpha_of = {"2": 2.0, "5": 5.0}
    accuracy = list(csv.DictReader(open(os.path.join(out, "accuracy.csv"))))
    checked = certified = 0
    for row in accuracy:
        step = int(row["step"])
        mu = exact_mu(step, cyclic, sigma)
        for column in row:
            if not column.endswith("_conservative"):
                continue
            name = column[: -len("_conservative")]
            exact = truth(name, mu, alpha_of)
            if exact is None:
                continue
            value, conservative = float(row[name]), float(row[column])
            checked += 1
            check(conservative >= exact * (1 - 1e-12),
                  f"{label}: step {step} {name}: conservative value {conservative} below the truth {exact}")
            # eps at the deltas whose tail the cells resolve (deeper ones are judged by their conservative values).
            if close and name.startswith("eps_exact_delta_") and float(name[len("eps_exact_delta_"):]) >= 1e-5:
                check(abs(value - exact) <= 0.02 * exact + 1e-9,
                      f"{label}: step {step} {name} = {value} against the closed form {exact}")
            if float(row[name + "_certified"]) == 1.0:
                certified += 1
                rtol = 1e-3
                check(abs(value - exact) <= rtol * abs(exact) + 1e-14,
                      f"{label}: step {step} {name} certified at {value}, truth {exact}")
    check(checked > 20, f"{label}: only {checked} numbers of accuracy.csv compared")
    profile = list(csv.DictReader(open(os.path.join(out, "hockey_stick_accuracy.csv"))))
    # hockey_stick.csv: the same delta(eps) values, as d <= 3 writes them (no renyi.csv beyond three axes).
    curve = list(csv.DictReader(open(os.path.join(out, "hockey_stick.csv"))))
    check(len(curve) == len(profile) and all(a[k] == b[k] for a, b in zip(curve, profile)
                                             for k in ("step", "eps", "delta_pq", "delta_qp")),
          f"{label}: hockey_stick.csv is not hockey_stick_accuracy.csv's delta(eps)")
    check(not os.path.exists(os.path.join(out, "renyi.csv")), f"{label}: a renyi.csv beyond three axes")
    for row in profile:
        step, eps = int(row["step"]), float(row["eps"])
        exact = gaussian_delta(exact_mu(step, cyclic, sigma), eps)
        for direction in ("pq", "qp"):
            conservative = float(row[f"delta_{direction}_conservative"])
            check(conservative >= exact * (1 - 1e-12) - 1e-300,
                  f"{label}: step {step} delta_{direction}({eps}) conservative {conservative} below {exact}")
    # exact.csv: the run's closed forms (ExactReferenceOutput) against this test's own, and the L1 errors of the
    # exact cell averages small at every step after the start.
    exact_rows = list(csv.DictReader(open(os.path.join(out, "exact.csv"))))
    check(len(exact_rows) == len(rows), f"{label}: exact.csv has {len(exact_rows)} rows, divergence.csv {len(rows)}")
    for row in exact_rows:
        step = int(row["step"])
        mu = exact_mu(step, cyclic, sigma)
        for column, exact in (("kl_exact", mu * mu / 2), ("renyi_2_exact", mu * mu), ("renyi_5_exact", 2.5 * mu * mu),
                              ("tv_exact", 2 * phi(mu / 2) - 1),
                              ("eps_exact_delta_0.001_exact", gaussian_eps(mu, 1e-3))):
            value = float(row[column])
            check(abs(value - exact) <= 1e-9 * abs(exact) + 1e-13,
                  f"{label}: exact.csv step {step} {column} = {value}, this test's closed form {exact}")
        for column in ("l1_error_p", "l1_error_q"):
            check(0.0 <= float(row[column]) <= 0.02, f"{label}: exact.csv step {step} {column} = {row[column]}")
    result = json.load(open(os.path.join(out, "result.json")))
    true_eps = gaussian_eps(exact_mu(int(result["step"]), cyclic, sigma), result["delta"])
    check(result["epsilon"]["conservative"] >= true_eps,
          f"{label}: result.json's conservative eps below the truth")
    return rows


with tempfile.TemporaryDirectory() as tmp:
    # Full batch on one rank and on two.
    case = os.path.join(tmp, "full.toml")
    open(case, "w").write(case_text("full", 24, 6, 3))
    one, two = os.path.join(tmp, "one"), os.path.join(tmp, "two")
    r = run(case, one)
    check(r.returncode == 0, f"full batch: exit {r.returncode}: {r.stderr}")
    if r.returncode == 0:
        rows = check_run(one, False, "full batch")
        r2 = run(case, two, ranks=2)
        check(r2.returncode == 0, f"full batch on 2 ranks: exit {r2.returncode}: {r2.stderr}")
        with h5py.File(os.path.join(one, "fpdp.h5"), "r") as f:
            check(f.attrs["dim"] == 4, "fpdp.h5: dim attribute")
            steps = sorted(f["fields"].keys())
            check(len(steps) == len(rows), f"fpdp.h5: {len(steps)} field steps, {len(rows)} rows")
            p = f["fields"][steps[-1]]["p"]
            check(p.shape == (24, 24, 24, 24), f"fpdp.h5: p has shape {p.shape}")
            check(p.compression == "gzip" and p.chunks is not None, "fpdp.h5: p is not chunked and compressed")
            faces = f["mesh"]["theta_0_faces"][:]
            volume = float(numpy.diff(faces)[0]) ** 4
            mass = float(numpy.sum(p[:]) * volume)
            check(abs(mass - float(rows[-1]["mass_p"])) <= 1e-12,
                  f"fpdp.h5: the last step's p has mass {mass}, divergence.csv {rows[-1]['mass_p']}")
            if r2.returncode == 0:
                with h5py.File(os.path.join(two, "fpdp.h5"), "r") as g:
                    for s in steps:
                        for field in ("p", "q"):
                            check(numpy.array_equal(f["fields"][s][field][:], g["fields"][s][field][:]),
                                  f"fpdp.h5: {s}/{field} differs between one and two ranks")
                rows2 = list(csv.DictReader(open(os.path.join(two, "divergence.csv"))))
                for a, b in zip(rows, rows2):
                    for column in a:
                        x, y = float(a[column]), float(b[column])
                        check(abs(x - y) <= 1e-12 * max(1.0, abs(x)),
                              f"divergence.csv: {column} at step {a['step']}: {x} on one rank, {y} on two")
        # No privacy-loss histograms beyond three axes: the PLD export (the Python package's, where it is built)
        # refuses, and says why.
        if importlib.util.find_spec("fpdp") is not None:
            r = subprocess.run(["/usr/bin/python3", os.path.join(source, "scripts", "pld-for-dp-accounting"), one],
                               capture_output=True, text=True, timeout=120)
            check(r.returncode != 0 and "not computed beyond three axes" in r.stderr,
                  f"pld-for-dp-accounting on a 4-D run: exit {r.returncode}: {r.stderr}")
        for kind in ("marginals", "slices"):
            for kept in ("theta_0_theta_1", "theta_0_theta_1_theta_2"):
                pvd = os.path.join(one, kind, kept, "fpdp.pvd")
                check(os.path.isfile(pvd), f"missing {pvd}")
                if os.path.isfile(pvd):
                    check(open(pvd).read().count("<DataSet") == len(rows), f"{pvd}: not every output step listed")
        # The last step's slices through the mode of p: the 4-D field's values there, bitwise; and the marginal over
        # axes (0, 1): the field summed over axes 2 and 3 times their cell widths.
        with h5py.File(os.path.join(one, "fpdp.h5"), "r") as f:
            last = sorted(f["fields"].keys())[-1]
            p4 = f["fields"][last]["p"][:]  # shape (n3, n2, n1, n0)
            h = float(numpy.diff(f["mesh"]["theta_2_faces"][:])[0])
        mode = numpy.unravel_index(numpy.argmax(p4), p4.shape)  # (i3, i2, i1, i0)
        step = int(last.split("_")[-1])
        for kind, kept, expected in (("slices", "theta_0_theta_1", p4[mode[0], mode[1], :, :]),
                                     ("slices", "theta_0_theta_1_theta_2", p4[mode[0], :, :, :]),
                                     ("marginals", "theta_0_theta_1", p4.sum(axis=(0, 1)) * h * h)):
            values = vti_array(os.path.join(one, kind, kept, "vtk", f"fpdp_{step:08d}.vti"), "p")
            ok = values.size == expected.size and (numpy.array_equal(values, expected.ravel()) if kind == "slices" else
                                                   numpy.allclose(values, expected.ravel(), rtol=1e-12, atol=1e-300))
            check(ok, f"{kind}/{kept}: p at step {step} is not the 4-D field's")

    # Cyclic batches of one record each.
    case = os.path.join(tmp, "cyclic.toml")
    open(case, "w").write(case_text("cyclic", 24, 5, 5, batch='[batch]\nsampling = "cyclic"\nsize = 1'))
    out = os.path.join(tmp, "cyclic")
    r = run(case, out)
    check(r.returncode == 0, f"cyclic: exit {r.returncode}: {r.stderr}")
    if r.returncode == 0:
        check_run(out, True, "cyclic")

    # A full Sigma: the state y = L^-1 theta on the box holding L^-1 of the case's box, the same checks against the
    # closed forms of the full covariances; fpdp.h5 names the axes y_a and holds L; fpdp sample's Monte Carlo of
    # theta itself against the solver's moments mapped back by L. The state box is wider than the case's (up to
    # 9.0 against 6.0 per half-axis here), its cells too: 32^4 keeps eps within check_run's 2 % (28^4: 2.03 %). The
    # sample's intervals are 99.99 % ones: eight means are compared, so that a correct solver fails by chance less
    # than once in a thousand runs, while a mean not mapped back by L (theta_1 = y_1 + 0.3 y_0) is off by more than
    # ten of their half-widths (0.09 against 0.006).
    sigma = [[1.0, 0.3, 0.1, 0.0], [0.3, 0.8, 0.2, 0.1], [0.1, 0.2, 0.9, -0.2], [0.0, 0.1, -0.2, 0.7]]
    case = os.path.join(tmp, "full-sigma.toml")
    open(case, "w").write(case_text("full-sigma", 32, 6, 3).replace(
        f"sigma = {SIGMA}", "covariance = " + str(sigma)).replace(
        "mean = [0.0, 0.0, 0.0, 0.0]", "mean = [0.5, -0.5, 0.4, 0.3]").replace(
        "[output]", "[sampler]\nconfidence = 0.9999\n[output]"))
    out = os.path.join(tmp, "full-sigma")
    r = run(case, out)
    check(r.returncode == 0, f"full Sigma: exit {r.returncode}: {r.stderr}")
    if r.returncode == 0:
        rows = check_run(out, False, "full Sigma", sigma=sigma)
        with h5py.File(os.path.join(out, "fpdp.h5"), "r") as f:
            check("theta_0_faces" not in f["mesh"] and "y_3_faces" in f["mesh"],
                  "full Sigma: fpdp.h5's axes are not y_a")
            L = f["mesh"]["parameters_from_state"][:]
            check(L.shape == (4, 4) and numpy.array_equal(numpy.tril(L), L) and numpy.all(numpy.diag(L) == 1.0),
                  f"full Sigma: L is not unit lower triangular: {L}")
            state_noise = numpy.linalg.solve(L, numpy.linalg.solve(L, numpy.array(sigma)).T)
            check(numpy.abs(state_noise - numpy.diag(numpy.diag(state_noise))).max() < 1e-14,
                  f"full Sigma: L^-1 Sigma L^-T is not diagonal: {state_noise}")
            # The state box holds L^-1 of the case's box: every corner's image inside it.
            lower = numpy.array([f["mesh"][f"y_{a}_faces"][0] for a in range(4)])
            upper = numpy.array([f["mesh"][f"y_{a}_faces"][-1] for a in range(4)])
            for corner in numpy.array(numpy.meshgrid(*[[-6.0, 6.0]] * 4)).reshape(4, -1).T:
                y = numpy.linalg.solve(L, corner)
                check(numpy.all(y >= lower - 1e-12) and numpy.all(y <= upper + 1e-12),
                      f"full Sigma: L^-1 {corner} = {y} outside the state box")
            last = sorted(f["fields"].keys())[-1]
            volume = numpy.prod([float(numpy.diff(f["mesh"][f"y_{a}_faces"][:])[0]) for a in range(4)])
            mass = float(numpy.sum(f["fields"][last]["p"][:]) * volume)
            check(abs(mass - float(rows[-1]["mass_p"])) <= 1e-12,
                  f"full Sigma: fpdp.h5 mass {mass}, divergence.csv {rows[-1]['mass_p']}")
        check(os.path.isfile(os.path.join(out, "slices", "y_0_y_1", "fpdp.pvd")), "full Sigma: no slices/y_0_y_1")
        r = subprocess.run([fpdp, "sample", case, "--output", out, "--particles", "400000", "--threads", "2",
                            "--quiet"], capture_output=True, text=True, timeout=300)
        check(r.returncode == 0, f"fpdp sample, full Sigma: exit {r.returncode}: {r.stderr}")
        moments = os.path.join(out, "sample_moments.csv")
        if os.path.isfile(moments):
            for row in csv.DictReader(open(moments)):
                for a in range(4):
                    lower, upper, solver = (float(row[f"mean_theta_{a}{x}"]) for x in ("_lower", "_upper", "_solver"))
                    check(lower <= solver <= upper, f"full Sigma: step {row['step']} density {row['density']} "
                          f"mean_theta_{a}: the solver's {solver} outside the sample's interval [{lower}, {upper}]")

    # Poisson sampling (4 records, gamma = 0.5: 16 batch maps per dataset and step) on a linear loss whose records
    # differ along axis 0 only: the batch maps are translations along axis 0, so p and q are products of their axis-0
    # laws with one Gaussian on the other axes, and every divergence is that of the axis-0 laws, the lattice mixtures
    # of Gaussians a 1-D run takes in closed form (exact.csv, models::PoissonShiftReference).
    poisson = {"4d": ("[-5.0, -4.5, -4.5, -4.5]", "[6.0, 4.5, 4.5, 4.5]", "[88, 8, 8, 8]", 4),
               "1d": ("[-5.0]", "[6.0]", "[2200]", 1)}
    outs = {}
    for label, (lower, upper, cells, dim) in poisson.items():
        def vec(x0):
            return "[" + ", ".join([x0] + ["0.0"] * (dim - 1)) + "]"
        text = f"""[case]
name = "poisson-{label}"
dynamics = "noisy_gd"
[mesh]
lower = {lower}
upper = {upper}
cells = {cells}
[loss]
type = "expression"
expression = "{' - '.join(f'x{a + 1}*theta{a + 1}' for a in range(dim)).join(['-', ''])}"
gradient = [{', '.join(f'"-x{a + 1}"' for a in range(dim))}]
[data]
records = [{vec("1.0")}, {vec("0.5")}, {vec("-0.5")}, {vec("0.8")}]
[neighbour]
index = 0
record = {vec("-1.0")}
[noise]
sigma = 0.5
[initial]
mean = {vec("0.0")}
covariance = 0.25
[batch]
sampling = "poisson"
rate = 0.5
[noisy_gd]
diffusion = "exact_convolution"
eta = 0.2
steps = 3
[output]
every = 1
plots = false
[divergence]
orders = [2, 5]
[privacy]
delta_grid = [1e-2, 1e-3]
"""
        path = os.path.join(tmp, f"poisson-{label}.toml")
        open(path, "w").write(text)
        outs[label] = os.path.join(tmp, f"poisson-{label}")
        r = run(path, outs[label])
        check(r.returncode == 0, f"poisson {label}: exit {r.returncode}: {r.stderr}")
    if all(os.path.isfile(os.path.join(o, "divergence.csv")) for o in outs.values()):
        exact = {row["step"]: row for row in csv.DictReader(open(os.path.join(outs["1d"], "exact.csv")))}
        # Measured (88 cells along axis 0): KL, R_2, R_5 within 9.2e-5, TV 1.1e-3, eps 2.2e-3; the tolerances triple.
        for row in csv.DictReader(open(os.path.join(outs["4d"], "divergence.csv"))):
            for column, tolerance in (("kl", 3e-4), ("renyi_2", 3e-4), ("renyi_5", 3e-4), ("tv", 3.5e-3)):
                expected = float(exact[row["step"]][column + "_exact"])
                check(abs(float(row[column]) - expected) <= tolerance * expected + 1e-14,
                      f"poisson 4-D: step {row['step']} {column} = {row[column]} against the 1-D closed form {expected}")
        for row in csv.DictReader(open(os.path.join(outs["4d"], "epsilon.csv"))):
            if row["delta"] not in ("0.01", "0.001"):
                continue
            expected = float(exact[row["step"]][f"eps_exact_delta_{row['delta']}_exact"])
            check(abs(float(row["eps_exact"]) - expected) <= 6.5e-3 * expected + 1e-12,
                  f"poisson 4-D: step {row['step']} eps({row['delta']}) = {row['eps_exact']} against {expected}")
        # The accuracy contract: every conservative value at least the truth (R_alpha: +inf, no proof of finiteness).
        for row in csv.DictReader(open(os.path.join(outs["4d"], "accuracy.csv"))):
            for name in ("kl", "tv", "renyi_2", "renyi_5", "eps_exact_delta_0.01", "eps_exact_delta_0.001"):
                expected = float(exact[row["step"]][name + "_exact"])
                check(float(row[name + "_conservative"]) >= expected * (1 - 1e-12),
                      f"poisson 4-D: step {row['step']} {name} conservative {row[name + '_conservative']} below {expected}")

    # --certify beyond three axes: from 12^4 (too coarse for companions) the mesh doubles to 24^4, whose eps(0.01) is
    # under_resolved, and 48^4 exceeds accuracy.certify_max_cells: the 24^4 run is published, with the outcome, the
    # meshes and a remedy that names the budget; every conservative value still at least the truth.
    case = os.path.join(tmp, "certify.toml")
    open(case, "w").write(case_text("certify", 12, 4, 2).replace("[output]", "[privacy]\ndelta = 0.01\n[output]"))
    out = os.path.join(tmp, "certify")
    r = run(case, out, extra=["--certify"])
    check(r.returncode == 0, f"--certify: exit {r.returncode}: {r.stderr}")
    if r.returncode == 0:
        result = json.load(open(os.path.join(out, "result.json")))
        certify = result.get("certify", {})
        check(certify.get("levels") == "12x12x12x12, 24x24x24x24", f"--certify: levels {certify.get('levels')}")
        check("accuracy.certify_max_cells" in certify.get("outcome", "") and "48x48x48x48" in certify["outcome"],
              f"--certify: outcome {certify.get('outcome')}")
        check("accuracy.certify_max_cells=5308416" in certify.get("remedy", ""), f"--certify: remedy {certify.get('remedy')}")
        check("cells = [ 24, 24, 24, 24 ]" in open(os.path.join(out, "parameters.toml")).read(),
              "--certify: parameters.toml is not the published 24^4 run's")
        with h5py.File(os.path.join(out, "fpdp.h5"), "r") as f:
            last = sorted(f["fields"].keys())[-1]
            check(f["fields"][last]["p"].shape == (24, 24, 24, 24), "--certify: fpdp.h5 holds another mesh's fields")
        check_run(out, False, "--certify", close=False)
        check(not os.path.exists(out + ".partial"), "--certify: a partial directory left behind")
    # --certify=last_step: the numbers no finer mesh certifies (KL and R_alpha, which the walls' absorbed mass leaves
    # box_truncation) are set aside by name, the others drive the refinement; the remedy repeats the flag.
    out = os.path.join(tmp, "certify-last-step")
    r = run(case, out, extra=["--certify=last_step"])
    check(r.returncode == 0, f"--certify=last_step: exit {r.returncode}: {r.stderr}")
    if r.returncode == 0:
        certify = json.load(open(os.path.join(out, "result.json"))).get("certify", {})
        check("kl (box_truncation)" in certify.get("outcome", "") and "which no finer mesh certifies" in certify["outcome"]
              and certify.get("remedy", "").startswith("--certify=last_step --set accuracy.certify_max_cells="),
              f"--certify=last_step: {certify}")
    # Without the error estimate there is nothing to judge a mesh by: one run, and the outcome says why.
    out = os.path.join(tmp, "certify-no-estimate")
    r = run(case, out, extra=["--certify", "--set", "accuracy.estimate=false"])
    check(r.returncode == 0, f"--certify without estimate: exit {r.returncode}: {r.stderr}")
    if r.returncode == 0:
        certify = json.load(open(os.path.join(out, "result.json"))).get("certify", {})
        check(certify.get("outcome", "").startswith("not refined: accuracy.estimate = false") and
              certify.get("levels") == "12x12x12x12", f"--certify without estimate: {certify}")

    # Studies of a 4-D case: fpdp sweep reads each member's tables (no renyi.csv beyond three axes: R_alpha(q || p)
    # from accuracy.csv), on one rank and split over two; fpdp worst-case searches records in R^4.
    case = os.path.join(tmp, "study.toml")
    open(case, "w").write(case_text("study", 12, 4, 4))
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    tables = {}
    for ranks in (1, 2):
        out = os.path.join(tmp, f"sweep-{ranks}")
        command = [fpdp, "sweep", case, "--set", "noise.sigma=0.8,1.2", "--output", out, "--quiet"]
        r = subprocess.run((["mpiexec", "-n", "2"] if ranks == 2 else []) + command, capture_output=True, text=True,
                           env=env, timeout=600)
        check(r.returncode == 0, f"sweep of a 4-D case on {ranks} rank(s): exit {r.returncode}: {r.stderr}")
        if r.returncode == 0:
            tables[ranks] = list(csv.DictReader(open(os.path.join(out, "sweep.csv"))))
            for row in tables[ranks]:
                check(row["status"] == "ok", f"sweep member {row['member']}: status {row['status']}")
                member = list(csv.DictReader(open(os.path.join(out, row["directory"], "accuracy.csv"))))
                check(row["renyi_reverse_2"] == member[-1]["renyi_qp_2"],
                      f"sweep member {row['member']}: renyi_reverse_2 {row['renyi_reverse_2']}, accuracy.csv "
                      f"{member[-1]['renyi_qp_2']}")
    if len(tables) == 2:
        for a, b in zip(tables[1], tables[2]):
            for column in ("eps_exact", "kl", "renyi_2", "renyi_reverse_2"):
                check(a[column] == b[column], f"sweep: {column} of {a['member']} {a[column]} on one rank, {b[column]} "
                      f"split over two")
    open(case, "a").write("[worst_case]\nrecord_lower = [-0.5, -0.5, -0.5, -0.5]\nrecord_upper = [0.5, 0.5, 0.5, 0.5]\n"
                          "grid_points = 2\nrefinement_rounds = 1\nrefinement_points = 3\n")
    out = os.path.join(tmp, "worst-case")
    r = subprocess.run([fpdp, "worst-case", case, "--output", out, "--jobs", "2", "--quiet"], capture_output=True,
                       text=True, timeout=600)
    check(r.returncode == 0, f"worst-case of a 4-D case: exit {r.returncode}: {r.stderr}")
    if r.returncode == 0:
        rows = list(csv.DictReader(open(os.path.join(out, "worst-case.csv"))))
        check(len(rows) >= 16 and all(row["exit_status"] == "0" for row in rows),
              f"worst-case: {len(rows)} evaluations")
        best = max(rows, key=lambda row: float(row["value"]))
        check(best["maximiser"] == "1", f"worst-case: the largest value {best['value']} is not the maximiser")

    # Refusals: the key, its value and what is allowed; nothing left behind.
    refusals = [
        ("langevin", case_text("l", 20, 5, 5).replace('dynamics = "noisy_gd"', 'dynamics = "langevin"')
         .replace("[noisy_gd]\neta = 0.1\nsteps = 5\ndiffusion = \"exact_convolution\"", "[time]\nt_end = 1.0\ndt = 0.1"),
         "case.dynamics"),
        ("fokker_planck", case_text("f", 20, 5, 5).replace('diffusion = "exact_convolution"', ""), "noisy_gd.diffusion"),
        ("lattice", case_text("p", 20, 5, 5, batch='[batch]\nsampling = "poisson"\nrate = 0.5\nmixture = "lattice"'),
         "batch.mixture"),
    ]
    for label, text, key in refusals:
        path = os.path.join(tmp, label + ".toml")
        open(path, "w").write(text)
        out = os.path.join(tmp, label + "-out")
        r = run(path, out)
        check(r.returncode != 0, f"{label}: accepted")
        check(key in r.stderr and "allowed" in r.stderr, f"{label}: the error does not name {key}: {r.stderr}")
        check(not os.path.exists(out) and not os.path.exists(out + ".partial"), f"{label}: output left behind")
    r = subprocess.run([fpdp, "noise-study", case, "--output", os.path.join(tmp, "noise-study-out")],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode != 0 and "mesh.lower" in r.stderr, f"fpdp noise-study on a 4-D case: {r.returncode} {r.stderr}")

    # A 4-D logistic regression (6 records, D' with record 0 replaced) against fpdp sample's Monte Carlo of the
    # algorithm itself: the solver's means of p and q (the moments of its cell averages, sample_moments.csv's _solver
    # columns) within the sample's 99 % intervals; the variances carry the scheme's O(h^2) and are not judged here.
    logistic = os.path.join(tmp, "logistic.toml")
    open(logistic, "w").write("""[case]
name = "logistic-4d"
dynamics = "noisy_gd"
[mesh]
lower = [-3.0, -3.0, -3.0, -3.0]
upper = [3.0, 3.0, 3.0, 3.0]
cells = [24, 24, 24, 24]
[loss]
type = "logistic"
regularization = 0.5
[data]
records = [[1.0, 0.5, -0.3, 0.2], [-0.8, 0.4, 0.6, -0.5], [0.3, -1.0, 0.2, 0.7], [0.6, 0.6, -0.9, -0.2],
           [-0.4, -0.3, 0.8, 0.9], [0.9, -0.6, -0.4, 0.1]]
labels = [1, -1, 1, 1, -1, 1]
[neighbour]
index = 0
record = [-1.0, -0.5, 0.3, -0.2]
label = 1
[noise]
sigma = 0.5
[initial]
mean = [0.0, 0.0, 0.0, 0.0]
covariance = 0.3
[noisy_gd]
eta = 0.2
steps = 4
diffusion = "exact_convolution"
[output]
every = 2
plots = false
[accuracy]
estimate = false
[divergence]
orders = [2]
""")
    out = os.path.join(tmp, "logistic")
    r = run(logistic, out)
    check(r.returncode == 0, f"logistic 4-D: exit {r.returncode}: {r.stderr}")
    r = subprocess.run([fpdp, "sample", logistic, "--output", out, "--particles", "400000", "--threads", "2",
                        "--quiet"], capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"fpdp sample on the 4-D case: exit {r.returncode}: {r.stderr}")
    moments = os.path.join(out, "sample_moments.csv")
    if os.path.isfile(moments):
        rows = list(csv.DictReader(open(moments)))
        check(len(rows) == 2, f"sample_moments.csv: {len(rows)} rows")
        solver_means = {}
        for row in rows:
            for a in range(4):
                value, lower, upper, solver = (float(row[f"mean_theta_{a}{x}"]) for x in ("", "_lower", "_upper", "_solver"))
                check(lower <= solver <= upper, f"logistic 4-D: density {row['density']} mean_theta_{a}: the solver's "
                      f"{solver} outside the sample's interval [{lower}, {upper}]")
                solver_means[(row["density"], a)] = solver
        check(abs(solver_means[("0", 0)] - solver_means[("1", 0)]) > 0.05, "logistic 4-D: p and q have one mean")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("whole-field runs: every check passed")
