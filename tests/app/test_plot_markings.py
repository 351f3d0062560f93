#!/usr/bin/python3
"""The markings of the run's plots (docs/output.md, "Plots"), checked on what the figures contain.

    test_plot_markings.py SOURCE_DIR FPDP_EXECUTABLE

1. A synthetic noisy-GD output directory whose numbers have every case the plots must show: R_10 +inf from step 3 on,
   R_2 truncated_suspect and noise_suspect at some steps, a bound equal to the computed R_2, exact.csv (closed forms),
   accuracy.csv (error estimates, uncertified values), epsilon.csv with eps_exact of every status (root, zero,
   unreachable, truncated_suspect, noise_limited), an order that is +inf at every step, 1-D fields in fpdp.h5.
   `fpdp plot --describe` reports what each figure holds, element by element; the test checks the counts
   against the CSV files (e.g. as many +inf markers as +inf values), the axis labels, that every legend lies outside
   the data panels, and the pixels of the PNG files (the hollow grey suspect markers and the magenta closed form are
   drawn in the image; each PNG has the size of its figure).
2. A small run announces "fpdp: drawing plots ..." and its summary has the plots' seconds.
3. fpdp plot's exit status: 2 for a wrong command line, 1 with a reason for a directory without the run's files.
4. A synthetic output with dp_accounting's dense orders and steps over three decades: six representative orders
   drawn, figures of a readable size, a log step axis for eps against the steps. In every figure the legend takes at
   most a quarter of the width and "not certified" has a colour of its own.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("FAIL:", what)


def write_csv(path, header, rows):
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for r in rows:
            f.write(",".join("" if v is None else ("inf" if v == math.inf else repr(float(v))) for v in r) + "\n")


def make_output(d):
    steps = list(range(8))
    r2 = [0.0] + [0.01 * k for k in steps[1:]]
    r10 = [0.0, 0.05, 0.1] + [math.inf] * 5
    r30 = [math.inf] * 8  # +inf at every step: a panel with no finite value
    st2 = [0, 0, 2, 2, 0, 3, 0, 0]  # truncated_suspect at steps 2, 3; noise_suspect at step 5
    st10 = [0, 0, 0, 1, 1, 1, 1, 1]
    st30 = [1] * 8
    kl = [0.0] + [0.004 * k for k in steps[1:]]
    tv = [0.0] + [0.03 * k for k in steps[1:]]
    write_csv(os.path.join(d, "divergence.csv"),
              ["step", "t", "mass_p", "mass_q", "kl", "tv", "renyi_2", "renyi_10", "renyi_30", "status_renyi_2",
               "status_renyi_10", "status_renyi_30", "min_p", "min_q", "negative_cells_p", "negative_cells_q"],
              [[k, 0.5 * k, 1, 1, kl[k], tv[k], r2[k], r10[k], r30[k], st2[k], st10[k], st30[k], 0, 0, 0, 0]
               for k in steps])
    # bound 1 equals the computed R_2 (it must stay visible on top); bound 3 lies above.
    write_csv(os.path.join(d, "bounds.csv"),
              ["step", "t", "bound1_renyi_2", "bound1_renyi_10", "bound1_renyi_30", "bound3_renyi_2",
               "bound3_renyi_10", "bound3_renyi_30"],
              [[k, 0.5 * k, r2[k], 0.2 * k, None, 0.03 * k, 0.3 * k, None] for k in steps])
    with open(os.path.join(d, "bound_applicability.csv"), "w") as f:
        f.write("item,label,name,gap,applies,reason_or_qualification,source,assumptions\n"
                "1,bound1,composition,S_g/n,yes,,x,y\n3,bound3,CYS Cor 1,S_g/n,yes,,x,y\n")
    write_csv(os.path.join(d, "exact.csv"),
              ["step", "t", "kl_exact", "tv_exact", "renyi_2_exact", "renyi_10_exact", "renyi_30_exact",
               "eps_exact_delta_0.1_exact", "eps_exact_delta_1e-05_exact"],
              [[k, 0.5 * k, kl[k] * 1.01, tv[k], r2[k] * 1.02, 0.012 * k, math.inf, 0.1 * k, 0.5 * k] for k in steps])
    uncertified_r2 = {4, 6}
    write_csv(os.path.join(d, "accuracy.csv"),
              ["step", "t", "renyi_2", "renyi_2_error_estimate", "renyi_2_certified", "renyi_2_conservative",
               "eps_exact_delta_0.1", "eps_exact_delta_0.1_error_estimate", "eps_exact_delta_0.1_certified",
               "eps_exact_delta_1e-05", "eps_exact_delta_1e-05_error_estimate", "eps_exact_delta_1e-05_certified"],
              [[k, 0.5 * k, r2[k], 0.001 * k, 0 if k in uncertified_r2 else 1, r2[k] * 1.1, 0.1 * k, 0.002, 1,
                0.5 * k, 0.05, 0] for k in steps])
    # epsilon.csv: at the last step, one delta per status 0 root, 1 zero, 2 unreachable, 4 truncated, 5 noise_limited
    deltas = [0.5, 0.1, 1e-3, 1e-5, 1e-7, 1e-9]
    last_eps = {0.5: (0.0, 1), 0.1: (0.7, 0), 1e-3: (1.4, 4), 1e-5: (3.5, 0), 1e-7: (4.8, 5), 1e-9: (math.inf, 2)}
    rows = []
    for k in steps:
        for dl in deltas:
            e, s = last_eps[dl] if k == 7 else (0.1 * k, 0)
            rows.append([k, 0.5 * k, dl, e, e, e, s, 2 * e + 0.1, 2, 1.5 * e + 0.1, 2, 3 * e + 0.2, math.inf,
                         0.3 * math.sqrt(k)])
    write_csv(os.path.join(d, "epsilon.csv"),
              ["step", "t", "delta", "eps_exact", "eps_exact_pq", "eps_exact_qp", "eps_exact_status",
               "eps_rdp_mironov", "eps_rdp_mironov_order", "eps_rdp_cks", "eps_rdp_cks_order", "eps_bound1_cks",
               "eps_bound3_cks", "eps_composition"], rows)
    with open(os.path.join(d, "parameters.toml"), "w") as f:
        f.write('[case]\nname = "synthetic"\ndynamics = "noisy_gd"\n[privacy]\ndelta = 1e-05\n')
    import h5py
    with h5py.File(os.path.join(d, "fpdp.h5"), "w") as f:
        f.attrs["dim"] = 1
        faces = np.linspace(-3, 3, 61)
        f["mesh/x_faces"] = faces
        c = 0.5 * (faces[1:] + faces[:-1])
        for k in (0, 7):
            g = f.create_group(f"fields/step_{k:08d}")
            g.attrs["step"] = k
            g.attrs["time"] = 0.5 * k
            g["p"] = np.exp(-0.5 * (c - 0.1 * k) ** 2) / math.sqrt(2 * math.pi)
            g["q"] = np.exp(-0.5 * c ** 2) / math.sqrt(2 * math.pi)
    return {"inf_r10": sum(1 for v in r10 if v == math.inf), "truncated_r2": st2.count(2), "noise_r2": st2.count(3),
            "uncertified_r2": len(uncertified_r2), "steps": len(steps)}


def make_dense_output(d):
    """A noisy-GD output with dp_accounting's 156 orders, steps over three decades: what the plots draw of it."""
    orders = [f"{1 + x / 10:g}" for x in range(1, 100)] + [str(a) for a in range(12, 64)] + ["128", "256", "512",
                                                                                            "1024", "2048"]
    steps = [0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]
    header = ["step", "t", "mass_p", "mass_q", "kl", "tv"] + [f"renyi_{a}" for a in orders] + \
        [f"status_renyi_{a}" for a in orders]
    write_csv(os.path.join(d, "divergence.csv"), header,
              [[k, 0.1 * k, 1, 1, 0.01 * k, 0.02 * k] + [0.001 * k * float(a) for a in orders] + [0] * len(orders)
               for k in steps])
    write_csv(os.path.join(d, "epsilon.csv"), ["step", "t", "delta", "eps_exact", "eps_exact_status", "eps_composition"],
              [[k, 0.1 * k, 1e-5, 0.1 * math.sqrt(k), 0, 0.2 * math.sqrt(k)] for k in steps])
    with open(os.path.join(d, "parameters.toml"), "w") as f:
        f.write('[case]\nname = "dense"\ndynamics = "noisy_gd"\n[privacy]\ndelta = 1e-05\n')
    return orders


def check_every_figure(desc):
    """Labels, legends beside the data and at most a quarter of the width, and "not certified" in a colour that no
    other element of its figure has."""
    for fig in desc:
        legend = fig.get("legend_panel")
        if legend:
            check(legend[2] - legend[0] <= 0.25 * fig["width"] + 1,
                  f"{fig['file']}: the legend takes {legend[2] - legend[0]} of {fig['width']} pixels")
        uncertified = {c for p in fig["panels"] for c in role(p, "uncertified").get("colours", [])}
        others = {c for p in fig["panels"] for name, r in p["roles"].items() if name != "uncertified"
                  for c in r.get("colours", [])}
        check(not (uncertified & others), f"{fig['file']}: 'not certified' shares its colour {uncertified & others}")
        for p in fig["panels"]:
            where = f"{fig['file']} panel '{p['title']}'"
            check(p["xlabel"].strip() != "", where + ": no x label")
            check(p["ylabel"].strip() != "", where + ": no y label")
            check(not p["legend_overlaps_data"], where + ": the legend covers the data")


def panel(desc, file, title_part):
    for fig in desc:
        if fig["file"] == file:
            for p in fig["panels"]:
                if title_part in p["title"]:
                    return p
    return None


def role(p, name):
    return (p or {}).get("roles", {}).get(name, {"count": 0, "points": 0, "labels": [], "linestyles": []})


def main():
    fpdp = os.path.abspath(sys.argv[2])
    with tempfile.TemporaryDirectory(prefix="fpdp-plot-markings") as tmp:
        out = os.path.join(tmp, "run")
        os.makedirs(out)
        n = make_output(out)
        res = subprocess.run([fpdp, "plot", "--describe", out], capture_output=True, text=True)
        check(res.returncode == 0, f"fpdp plot --describe exit status {res.returncode}: {res.stdout[-500:]} {res.stderr}")
        if res.returncode != 0:
            return
        text = res.stdout
        desc = json.loads(text[:text.rindex("]") + 1])
        files = sorted(f["file"] for f in desc)
        check(files == ["densities.png", "divergences.png", "epsilon_delta.png", "epsilon_steps.png",
                        "renyi_bounds.png", "step_contributions.png"], f"figures {files}")
        check_every_figure(desc)

        # renyi_bounds.png
        r2, r10, r30 = (panel(desc, "renyi_bounds.png", f"order {a} ") for a in ("2", "10", "30"))
        check(r2 is not None and r10 is not None and r30 is not None, "renyi_bounds.png: one panel per order")
        check(role(r10, "inf")["points"] == n["inf_r10"],
              f"R_10: {role(r10, 'inf')['points']} +inf markers, expected {n['inf_r10']}")
        check(role(r10, "inf_text")["count"] >= 1, "R_10: no '+inf' text at the top edge")
        susp_t = role(r2, "suspect:truncated_suspect")
        susp_n = role(r2, "suspect:noise_suspect")
        check(susp_t["points"] == n["truncated_r2"] and susp_t.get("hollow"),
              f"R_2: truncated_suspect markers {susp_t}")
        check(susp_n["points"] == n["noise_r2"] and susp_n.get("hollow"), f"R_2: noise_suspect markers {susp_n}")
        check(role(r2, "exact")["count"] == 1 and role(r2, "exact")["linestyles"][0].startswith("--"),
              "R_2: closed form not dashed")
        check(role(r2, "error_band")["count"] >= 1, "R_2: no error band from accuracy.csv")
        check(role(r2, "uncertified")["points"] == n["uncertified_r2"],
              f"R_2: uncertified markers {role(r2, 'uncertified')['points']}, expected {n['uncertified_r2']}")
        b = role(r2, "bound")
        check(b["count"] == 2 and b.get("zorder", 0) > role(r2, "computed").get("zorder", 0),
              f"R_2: the bounds are not drawn above the computed curve ({b}, {role(r2, 'computed')})")
        check(all(ls[-1] not in ("e", "") for ls in b["linestyles"]),
              f"R_2: the bounds carry no markers ({b['linestyles']})")
        check(role(r30, "no_data_text")["count"] == 1 and role(r30, "inf")["points"] == n["steps"],
              "R_30 (+inf everywhere): the panel neither says so nor marks every +inf")
        check(r30 is not None and r30["yticks"] == 0, "R_30 (+inf everywhere): y ticks without meaning")
        check(r2 is not None and r2["yticks"] >= 2, "R_2: fewer than two y ticks")
        check(role(r2, "nonpositive")["points"] == 1, "R_2: the 0 at step 0 is not marked at the bottom edge")

        # epsilon_delta.png
        e = panel(desc, "epsilon_delta.png", "eps, delta")
        check(role(e, "inf")["points"] >= 1, "eps: the unreachable delta (+inf) is not marked")
        check(role(e, "nonpositive")["points"] >= 1, "eps: eps = 0 (status zero) is not marked")
        check(role(e, "suspect:truncated_suspect")["points"] == 1, "eps: truncated_suspect not marked")
        check(role(e, "suspect:noise_limited")["points"] == 1, "eps: noise_limited not marked")
        check(role(e, "exact")["points"] == 2, f"eps: closed form points {role(e, 'exact')['points']}, expected 2")
        check(role(e, "error_band")["count"] >= 1, "eps: no error bars from accuracy.csv")
        check(role(e, "uncertified")["points"] == 1, "eps: the uncertified eps is not marked")

        # divergences.png
        dv = panel(desc, "divergences.png", "divergences")
        check(role(dv, "exact")["count"] >= 3, "divergences: closed forms of KL, TV, R_alpha missing")
        check(role(dv, "inf")["points"] == n["inf_r10"] + n["steps"], "divergences: +inf markers")
        check(role(dv, "suspect:truncated_suspect")["points"] == n["truncated_r2"], "divergences: suspect markers")
        check(any("+inf" in t for fig in desc if fig["file"] == "divergences.png" for t in fig["legend_entries"]),
              "divergences: no legend entry for +inf")

        # epsilon_steps.png: eps at privacy.delta against the step, the composition baseline, the error band
        es = panel(desc, "epsilon_steps.png", "last iterate")
        check(role(es, "computed")["points"] == n["steps"] - 1, f"eps against steps: {role(es, 'computed')}")
        check(role(es, "composition")["points"] == n["steps"] - 1 and
              role(es, "composition")["linestyles"][0].startswith("--"), f"no dashed composition: {es}")
        check(role(es, "error_band")["count"] == 1, "eps against steps: no error band")
        check(role(es, "uncertified")["points"] == n["steps"] - 1, "eps against steps: uncertified values not marked")
        check(es is not None and es["xscale"] == "linear" and "1e-05" in es["ylabel"],
              f"eps against steps: 8 steps on a linear axis, delta named: {es}")
        # the statuses at a glance: the box's truncation a diamond, the noise floor a circle
        check(susp_t["linestyles"] and susp_t["linestyles"][0][-1] == "D", f"truncated_suspect: {susp_t}")
        check(susp_n["linestyles"] and susp_n["linestyles"][0][-1] == "o", f"noise_suspect: {susp_n}")

        # step_contributions.png: the step to +inf is marked
        sc = panel(desc, "step_contributions.png", "per-step")
        check(role(sc, "inf")["points"] >= 1, "step contributions: the change to +inf is not marked")

        # densities.png: p, q, log(p/q), p - q
        dens = [f for f in desc if f["file"] == "densities.png"][0]
        roles = set().union(*(p["roles"].keys() for p in dens["panels"]))
        for r in ("density_p", "density_q", "log_ratio", "difference"):
            check(r in roles, f"densities.png: no {r}")

        # Pixels: the figures hold what the description says (hollow grey markers, the magenta closed form).
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.image as mimg
        img = mimg.imread(os.path.join(out, "renyi_bounds.png"))[..., :3]
        check(img.shape[0] == 360 and img.shape[1] == 3 * 420 + 240, f"renyi_bounds.png: size {img.shape}")
        magenta = np.sum((img[..., 0] > 0.6) & (img[..., 1] < 0.35) & (img[..., 2] > 0.6))
        check(magenta > 30, f"renyi_bounds.png: {magenta} magenta pixels (the closed form)")
        grey = np.sum((np.abs(img[..., 0] - 0.45) < 0.06) & (np.abs(img[..., 1] - 0.45) < 0.06) &
                      (np.abs(img[..., 2] - 0.45) < 0.06))
        check(grey > 20, f"renyi_bounds.png: {grey} grey pixels (the suspect markers)")

        # 4. dense orders (dp_accounting's 156): a representative six drawn, the figures of a readable size
        dense = os.path.join(tmp, "dense")
        os.makedirs(dense)
        orders = make_dense_output(dense)
        res = subprocess.run([fpdp, "plot", "--describe", dense], capture_output=True, text=True)
        check(res.returncode == 0, f"dense orders: fpdp plot exit status {res.returncode}: {res.stderr}")
        if res.returncode == 0:
            desc = json.loads(res.stdout[:res.stdout.rindex("]") + 1])
            check_every_figure(desc)
            rb = [f for f in desc if f["file"] == "renyi_bounds.png"][0]
            titles = [p["title"] for p in rb["panels"]]
            check(len(titles) == 6, f"dense orders: {len(titles)} R_alpha panels, expected 6")
            drawn = [t.split("order ")[1].split(" ")[0] for t in titles]
            check(drawn[0] == orders[0] and drawn[-1] == orders[-1], f"dense orders: drawn {drawn}")
            check(rb["width"] <= 1600 and rb["height"] <= 800, f"dense orders: renyi_bounds {rb['width']}x{rb['height']}")
            dv = panel(desc, "divergences.png", "divergences")
            check(role(dv, "computed")["count"] == 2 + 6, f"dense orders: {role(dv, 'computed')['count']} curves")
            es = panel(desc, "epsilon_steps.png", "last iterate")
            check(es is not None and es["xscale"] == "log", "steps over three decades: no log step axis")

        # 3. exit statuses
        r = subprocess.run([fpdp, "plot"], capture_output=True, text=True)
        check(r.returncode == 2 and "fpdp plot" in r.stderr, f"no argument: exit status {r.returncode} {r.stderr}")
        r = subprocess.run([fpdp, "plot", "--bogus", out], capture_output=True, text=True)
        check(r.returncode == 2 and "--bogus" in r.stderr, f"unknown option: exit status {r.returncode} {r.stderr}")
        os.makedirs(os.path.join(tmp, "empty"))
        r = subprocess.run([fpdp, "plot", os.path.join(tmp, "empty")], capture_output=True, text=True)
        lines = r.stderr.strip().splitlines()
        check(r.returncode == 1 and len(lines) == 1 and "divergence.csv" in lines[0],
              f"empty directory: {r.returncode} {r.stdout} {r.stderr}")
        check(not os.listdir(os.path.join(tmp, "empty")), "fpdp plot wrote into a directory without a run")

        # 2. the run announces the plots and accounts for them
        case = os.path.join(tmp, "ou.toml")
        with open(case, "w") as f:
            f.write('[case]\nname = "ou"\ndynamics = "langevin"\n[mesh]\nlower = [-4.0]\nupper = [4.0]\n'
                    'cells = [64]\n[loss]\ntype = "quadratic"\nlambda = 1.0\n[data]\nrecords = [[0.0], [1.0]]\n'
                    '[neighbour]\nindex = 0\nrecord = [2.0]\n[noise]\nsigma = 1.0\n[initial]\nmean = [0.0]\n'
                    'covariance = 0.25\n[time]\nt_end = 0.5\ndt = 0.05\n[output]\nevery = 2\n')
        r = subprocess.run([fpdp, "run", case, "--output", os.path.join(tmp, "ou")], capture_output=True,
                           text=True, cwd=tmp, env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                                                        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
        check(r.returncode == 0, f"fpdp run: {r.returncode} {r.stdout[-1500:]} {r.stderr[-500:]}")
        check("fpdp: drawing plots ..." in r.stdout, "the run does not announce the plots")
        wall = [l for l in r.stdout.splitlines() if "wall time" in l]
        check(bool(wall) and "; plots " in wall[0], f"the wall-time line has no plots entry: {wall}")
        check(os.path.exists(os.path.join(tmp, "ou", "densities.png")), "the run drew no densities.png")
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed")
        sys.exit(1)
    print("all plot markings present")


if __name__ == "__main__":
    main()
