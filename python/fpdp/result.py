"""A run's results, read from its output directory (docs/output.md) as NumPy arrays and pandas DataFrames, with the
error estimate, certification and conservative value of accuracy.csv beside every number that has one."""
import math
import os
import re
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd

from . import _core
from .files import open_regular, read_regular_text

_ACCURACY_SUFFIXES = ("error_estimate", "certified", "conservative")
_EPS_ACCURACY = re.compile(r"^eps_exact_delta_(.+)_(error_estimate|certified|conservative)$")
DIRECTIONS = ("max", "pq", "qp")


class Estimate(dict):
    """One number with what is known of it: `value`; `conservative` (an upper bound to use where the value is not
    certified; None where the run has none); `certified` (1, 0, or None where the run says nothing);
    `status` (the code of docs/output.md, None where there is none); `source`, how it was obtained:
    "root" (the run's own root of delta(eps) = delta, epsilon.csv), "grid" (a value of the run's hockey-stick grid),
    "chord" (between two grid points: the chord in e^eps of the grid values, an upper bound of a curve convex in e^eps,
    as every hockey-stick curve is), "beyond grid" (past the grid's last eps: no finite eps known, or delta bounded by
    its value at the last grid point), "gdp" (the closed form of the composition's mu-GDP). Keys are also
    attributes."""

    __getattr__ = dict.__getitem__


def _read_csv(path):
    """The CSV file as a DataFrame, None where the run did not write it (a dangling link is refused like a live one:
    files.open_regular)."""
    if not os.path.lexists(path):
        return None
    with open_regular(path) as f:
        return pd.read_csv(f, keep_default_na=True)


class Result:
    """What a run wrote into its output directory (docs/output.md). Tables are read when first used.

    Tables (pandas DataFrames, one row per output step unless said otherwise): `divergences` (divergence.csv with the
    `_error_estimate`, `_certified` and `_conservative` of accuracy.csv beside kl, tv and every renyi_<alpha>),
    `renyi` (renyi.csv: one row per step and order), `hockey_stick` (hockey_stick.csv with hockey_stick_accuracy.csv:
    one row per step and eps), `epsilon` (epsilon.csv with `eps_exact_error_estimate`, `_certified`, `_conservative`:
    one row per step and delta), `composition` (the accountants' baseline of epsilon.csv), `bounds`, `accuracy`,
    `exact` (None without a closed form), and `table(name)` for any CSV file of the run.
    Numbers: `eps`, `delta` (dp_accounting's names `get_epsilon_for_delta`, `get_delta_for_epsilon`), `estimate_eps`,
    `estimate_delta` (with their accuracy), `series(quantity)`, `composition_eps`, `privacy_loss_distribution`."""

    def __init__(self, output_directory, summary=""):
        self.output_directory = Path(output_directory)
        self.summary = summary
        if not os.path.lexists(self.output_directory / "parameters.toml"):
            raise FileNotFoundError(f"{self.output_directory}: not an fpdp output directory (no parameters.toml)")
        self.parameters = tomllib.loads(read_regular_text(self.output_directory / "parameters.toml"))
        self._tables = {}

    def __repr__(self):
        return f"Result({str(self.output_directory)!r}, case {self.parameters.get('case', {}).get('name')!r})"

    # ---- tables -----------------------------------------------------------------------------------------------------
    def table(self, name):
        """A CSV file of the run as written (name with or without .csv), or None where the run did not write it."""
        name = name if name.endswith(".csv") else name + ".csv"
        if name not in self._tables:
            self._tables[name] = _read_csv(self.output_directory / name)
        return None if self._tables[name] is None else self._tables[name].copy()

    @property
    def steps(self):
        """The output steps (NumPy int64)."""
        return self.table("divergence")["step"].to_numpy(dtype=np.int64)

    @property
    def t(self):
        return self.table("divergence")["t"].to_numpy()

    @property
    def divergences(self):
        div = self.table("divergence")
        acc = self.table("accuracy")
        if acc is None:
            return div
        keep = [c for c in acc.columns if any(c.endswith("_" + s) for s in _ACCURACY_SUFFIXES)
                and not c.startswith("eps_exact_delta_") and c not in div.columns]
        return div.merge(acc[["step"] + keep], on="step", how="left")

    @property
    def renyi(self):
        return self.table("renyi")

    @property
    def hockey_stick(self):
        hs = self.table("hockey_stick")
        acc = self.table("hockey_stick_accuracy")
        if hs is None or acc is None:
            return hs
        keep = [c for c in acc.columns if c not in hs.columns]
        merged = hs.merge(acc[["step", "eps"] + keep], on=["step", "eps"], how="left")
        return merged

    @property
    def epsilon(self):
        """epsilon.csv with accuracy.csv's eps_exact estimate of the row's delta beside eps_exact."""
        eps = self.table("epsilon")
        acc = self.table("accuracy")
        if eps is None or acc is None:
            return eps
        columns = {}  # delta -> {suffix: accuracy column}
        for c in acc.columns:
            m = _EPS_ACCURACY.match(c)
            if m:
                columns.setdefault(float(m.group(1)), {})[m.group(2)] = c
        by_step = acc.set_index("step")
        for suffix in _ACCURACY_SUFFIXES:
            eps["eps_exact_" + suffix] = [
                by_step.at[s, columns[d][suffix]] if d in columns and suffix in columns[d] else np.nan
                for s, d in zip(eps["step"], eps["delta"])]
        return eps

    @property
    def composition(self):
        """The accountants' baseline (every iterate released; docs/dpsgd.md §3): step, t, delta, eps_composition,
        composition_mu (NaN where the mechanism is not GDP), eps_composition_accuracy (minibatch cases)."""
        eps = self.table("epsilon")
        keep = [c for c in ("step", "t", "delta", "eps_composition", "composition_mu", "eps_composition_accuracy")
                if c in eps.columns]
        return eps[keep]

    @property
    def bounds(self):
        return self.table("bounds")

    @property
    def accuracy(self):
        return self.table("accuracy")

    @property
    def exact(self):
        return self.table("exact")

    @property
    def plots(self):
        """The PNG figures of the run."""
        return sorted(self.output_directory.glob("*.png"))

    def series(self, quantity):
        """One quantity over the output steps: step, t, value, status, error_estimate, certified, conservative.
        quantity: "kl", "tv", "renyi_<alpha>" (as divergence.csv names it) or "eps_exact_delta_<delta>" (as
        accuracy.csv does); columns the run does not have for it are NaN."""
        div = self.table("divergence")
        acc = self.table("accuracy")
        frame = pd.DataFrame({"step": div["step"], "t": div["t"]})
        if quantity in div.columns:
            frame["value"] = div[quantity].to_numpy()
        elif acc is not None and quantity in acc.columns:
            frame["value"] = acc.set_index("step").loc[frame["step"], quantity].to_numpy()
        else:
            names = [c for c in div.columns if c in ("kl", "tv") or c.startswith("renyi_")]
            if acc is not None:
                names += [c for c in acc.columns if c.startswith("eps_exact_delta_") and
                          not any(c.endswith("_" + s) for s in _ACCURACY_SUFFIXES)]
            raise KeyError(f"{quantity!r}: not a quantity of this run; allowed: {', '.join(names)}")
        status = {"kl": None, "tv": None}.get(quantity, "status_" + quantity)
        frame["status"] = div[status].to_numpy() if status in div.columns else np.nan
        for suffix in _ACCURACY_SUFFIXES:
            column = f"{quantity}_{suffix}"
            frame[suffix] = (acc.set_index("step").loc[frame["step"], column].to_numpy()
                             if acc is not None and column in acc.columns else np.nan)
        return frame

    # ---- steps, deltas ------------------------------------------------------------------------------------------------
    def output_step(self, step=None):
        """The output step `step` (default: the last); ValueError naming the allowed ones."""
        steps = self.steps
        if step is None:
            return int(steps[-1])
        if int(step) not in set(steps.tolist()):
            raise ValueError(f"step = {step}: not an output step of this run; allowed: {steps[0]} .. {steps[-1]} "
                             f"every {self.parameters['output']['every']} (and the last)")
        return int(step)

    @property
    def privacy_delta(self):
        return float(self.parameters["privacy"]["delta"])

    @staticmethod
    def _direction(direction):
        if direction not in DIRECTIONS:
            raise ValueError(f"direction = {direction!r}; allowed: 'max' (the larger of both, the pair's guarantee), "
                             f"'pq' (p from q: trained on D against D'), 'qp' (the reverse)")
        return direction

    # ---- eps(delta), delta(eps) --------------------------------------------------------------------------------------
    def _profile(self, step, direction, conservative):
        """The run's hockey-stick grid at `step`: eps and delta (the larger direction for "max"); conservative: the
        conservative values made non-increasing, with the conservative eps(delta) of accuracy.csv as points."""
        hs = self.hockey_stick
        if hs is None:
            raise ValueError("this run wrote no hockey_stick.csv (divergence.hockey_stick_eps_max = 0?): delta(eps) "
                             "is known only at the deltas of privacy.delta_grid (epsilon.csv)")
        rows = hs[hs["step"] == step].sort_values("eps")
        names = ("delta_pq", "delta_qp") if direction == "max" else ("delta_" + direction,)
        if conservative:
            missing = [n + "_conservative" for n in names if n + "_conservative" not in rows.columns]
            if missing:
                raise ValueError("this run has no conservative hockey-stick values (hockey_stick_accuracy.csv; "
                                 "accuracy.estimate = false?)")
            names = tuple(n + "_conservative" for n in names)
        delta = np.max(np.vstack([rows[n].to_numpy(dtype=float) for n in names]), axis=0)
        if conservative:
            # the run's conservative eps(delta) are points of the bound too, where its roots put them (fpdp.pld)
            from . import pld
            return pld.curve_with_epsilon_bounds(rows["eps"].to_numpy(dtype=float), np.minimum.accumulate(delta),
                                                 pld.epsilon_bounds(self.table("accuracy"), step), "monotone")
        return rows["eps"].to_numpy(dtype=float), delta

    def estimate_eps(self, delta=None, step=None, direction="max"):
        """eps(delta) at an output step (default: the last) in one direction or the larger of both, with what is
        known of it (an Estimate). At a delta of privacy.delta_grid: the run's own root (epsilon.csv, to 1e-10
        relative of the computed curve) with its status and, for "max", accuracy.csv's certification and
        conservative value. At any other delta: from the run's hockey-stick grid (hockey_stick.csv,
        divergence.hockey_stick_eps_step apart), the root of the chord in e^eps between the grid points around it,
        which is at or above the root of the computed curve; its conservative value is the same with
        hockey_stick_accuracy.csv's conservative values and accuracy.csv's conservative eps(delta) as points. Beyond the grid's last eps no finite eps is known (+inf)."""
        delta = self.privacy_delta if delta is None else float(delta)
        step = self.output_step(step)
        direction = self._direction(direction)
        if not 0 < delta < 1:
            raise ValueError(f"delta = {delta}; allowed: 0 < delta < 1")
        eps_table = self.epsilon
        rows = eps_table[(eps_table["step"] == step) & (eps_table["delta"] == delta)]
        if len(rows):
            row = rows.iloc[0]
            column = "eps_exact" if direction == "max" else "eps_exact_" + direction
            certified = conservative = None
            if direction == "max" and "eps_exact_certified" in row and not math.isnan(row["eps_exact_certified"]):
                certified = int(row["eps_exact_certified"])
                conservative = float(row["eps_exact_conservative"])
            elif self.hockey_stick is not None and "delta_pq_conservative" in self.hockey_stick.columns:
                conservative = self._grid_eps(step, delta, direction, True)[0]
            return Estimate(value=float(row[column]), conservative=conservative, certified=certified,
                            status=int(row["eps_exact_status"]), source="root", step=step, delta=delta,
                            direction=direction)
        value, source = self._grid_eps(step, delta, direction, False)
        try:
            conservative = self._grid_eps(step, delta, direction, True)[0]
        except ValueError:
            conservative = None
        return Estimate(value=value, conservative=conservative, certified=None, status=None, source=source,
                        step=step, delta=delta, direction=direction)

    def _grid_eps(self, step, delta, direction, conservative):
        eps, curve = self._profile(step, direction, conservative)
        below = np.nonzero(curve <= delta)[0]
        if len(below) == 0:
            return math.inf, "beyond grid"
        k = int(below[0])
        if k == 0:
            return 0.0, "grid"
        if curve[k] == delta:
            return float(eps[k]), "grid"
        # The chord of delta against gamma = e^eps between the grid points k-1 and k (convex: at or above the curve).
        g0, g1 = math.exp(eps[k - 1]), math.exp(eps[k])
        gamma = g0 + (delta - curve[k - 1]) * (g1 - g0) / (curve[k] - curve[k - 1])
        return math.log(gamma), "chord"

    def estimate_delta(self, eps, step=None, direction="max"):
        """delta(eps) at an output step in one direction or the larger of both, with what is known of it. At a point
        of the hockey-stick grid: the run's value with hockey_stick_accuracy.csv's status, certification and
        conservative value (the larger direction's for "max"); between grid points: the chord in e^eps of the grid
        values (at or above the curve); beyond the grid: its value at the last grid point (delta(eps) decreases)."""
        eps = float(eps)
        step = self.output_step(step)
        direction = self._direction(direction)
        if not eps >= 0:
            raise ValueError(f"eps = {eps}; allowed: eps >= 0")
        grid, curve = self._profile(step, direction, False)
        value, source = self._grid_delta(grid, curve, eps)
        certified = status = conservative = None
        hs = self.hockey_stick
        if "delta_pq_conservative" in hs.columns:
            conservative = self._grid_delta(*self._profile(step, direction, True), eps)[0]
            if source == "grid":
                row = hs[(hs["step"] == step) & (hs["eps"] == eps)].iloc[0]
                names = ("pq", "qp") if direction == "max" else (direction,)
                worst = max(names, key=lambda n: row["delta_" + n])
                certified = int(min(row[f"delta_{n}_certified"] for n in names))
                status = int(row[f"delta_{worst}_status"])
        return Estimate(value=value, conservative=conservative, certified=certified, status=status, source=source,
                        step=step, eps=eps, direction=direction)

    @staticmethod
    def _grid_delta(grid, curve, eps):
        k = int(np.searchsorted(grid, eps))
        if k < len(grid) and grid[k] == eps:
            return float(curve[k]), "grid"
        if k >= len(grid):
            return float(curve[-1]), "beyond grid"
        g0, g1, g = math.exp(grid[k - 1]), math.exp(grid[k]), math.exp(eps)
        return float(curve[k - 1] + (g - g0) * (curve[k] - curve[k - 1]) / (g1 - g0)), "chord"

    def eps(self, delta=None, step=None, direction="max", conservative=False):
        """eps(delta) at an output step (default: the last), "max" the larger of both directions (the pair's
        guarantee), as a float; `conservative=True` gives the conservative value (use it where the value is not
        certified). How it is obtained: estimate_eps."""
        e = self.estimate_eps(delta, step, direction)
        if conservative:
            if e.conservative is None:
                raise ValueError("this run has no conservative value for it (accuracy.estimate = false?)")
            return e.conservative
        return e.value

    def delta(self, eps, step=None, direction="max", conservative=False):
        """delta(eps) at an output step, as a float (estimate_delta says how it is obtained)."""
        d = self.estimate_delta(eps, step, direction)
        if conservative:
            if d.conservative is None:
                raise ValueError("this run has no conservative value for it (accuracy.estimate = false?)")
            return d.conservative
        return d.value

    get_epsilon_for_delta = eps
    get_delta_for_epsilon = delta

    # ---- the composition baseline ------------------------------------------------------------------------------------
    def composition_eps(self, delta=None, step=None):
        """The accountants' eps at `delta` for the mechanism that releases every iterate up to `step` (epsilon.csv's
        eps_composition at a delta of privacy.delta_grid; elsewhere the closed form of its mu-GDP, where the
        mechanism is GDP: full and cyclic batches)."""
        delta = self.privacy_delta if delta is None else float(delta)
        step = self.output_step(step)
        c = self.composition
        rows = c[(c["step"] == step) & (c["delta"] == delta)]
        if len(rows):
            return float(rows.iloc[0]["eps_composition"])
        mu = float(c[c["step"] == step].iloc[0]["composition_mu"])
        if math.isnan(mu):
            raise ValueError(f"delta = {delta}: the composition baseline of this case is not GDP (Poisson "
                             f"sampling); it is known only at privacy.delta_grid = "
                             f"{sorted(set(c['delta']))}")
        return _core.gdp_epsilon(mu, delta)

    # ---- the privacy loss distribution for dp_accounting --------------------------------------------------------------
    def privacy_loss_distribution(self, step=None, value_discretization_interval=None, discretisation=True,
                                  cover="monotone", margins="next_eps"):
        """The last iterate's privacy loss distribution at an output step (default: the last) for dp_accounting
        (fpdp.pld): a dp_accounting PrivacyLossDistribution (both directions on one grid, symmetric=False,
        pessimistic) where dp_accounting is importable, else the keyword arguments of its
        create_from_rounded_probability. Its delta(eps) lies at or above the run's conservative curve in both
        directions, made non-increasing (cover="monotone": a bound, since delta(eps) decreases) or as written
        ("pointwise"); discretisation=False leaves out that cover (the PLD of the computed densities, not of the
        true ones: for runs without the error estimate). margins: where the cover moves the mass it needs, "next_eps"
        (up to the next eps of the curve: the larger eps keep their deltas) or "infinity" (every margin the run does
        not certify at +infinity, which lifts every delta; fpdp.pld.cover_curve)."""
        from . import pld
        return pld.privacy_loss_distribution(self, self.output_step(step), value_discretization_interval,
                                             discretisation, cover, margins)
