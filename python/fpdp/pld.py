"""The last iterate's privacy loss distribution (PLD) for Google's dp_accounting, pessimistic with respect to the true
densities (docs/output.md, "The privacy loss distribution for dp_accounting").

From fpdp.h5's privacy-loss histograms (/privacy_loss: L = log(p/q) under p, and log(q/p) under q) at an output step,
both directions go onto ONE grid i w, as dp_accounting's
PrivacyLossDistribution.create_from_rounded_probability(..., symmetric=False) takes them:

1. every bin's mass to the grid point at or above its upper edge (rounding up raises delta(eps));
2. to +infinity: the histogram's own infinite loss, the mass it clamped into its end bins, and the mass it does not
   hold: the cells it left out (negative or underflowed values) and the mass the absorbing walls removed, 1 - mass_p
   (divergence.csv; docs/noisy-gd.md §4.1), whichever is larger;
3. the discretisation error: the profile is checked against the run's conservative delta(eps) curve
   (hockey_stick_accuracy.csv's delta_pq_conservative, delta_qp_conservative: value + error estimate, 1 where a
   value has no bound), and where the rounded PLD lies below it, mass is moved from the lowest losses up until it does
   not: to the next eps of the curve, to +infinity past its last (cover_curve). By default the curve is first made
   non-increasing ("monotone": at each eps the smallest conservative value at or below it, a bound because the true
   delta(eps) decreases with eps), so that a point without a bound of its own (conservative 1) takes its bound from
   the eps before it; "pointwise" covers the values as written.

So the PLD's delta(eps) is at or above the run's conservative curve at every eps of its grid, in both directions, and
at or above what that curve allows between its eps (the chord in e^eps) and beyond its last eps (its last bound, or the
conservative R_alpha's CKS bound where accuracy.csv is given): coverage_requirements.
"""
import math

import numpy as np

DIRECTIONS = (("pq", "_p"), ("qp", "_q"))
# dp_accounting's slots: "remove" holds the PLD of M(D) against M(D') with D' = D minus one record, "add" the one
# with D' = D plus one record. fpdp's pq is p = M(D) against q = M(D'); for replace-one pairs pq takes the remove slot
# by convention (eps of the pair is the larger of the two either way).
SLOTS = {"remove": ("pq", "qp"), "replace": ("pq", "qp"), "add": ("qp", "pq")}


def rounded_pmf(lower, upper, masses, infinity, clamped, interval, missing=0.0):
    """One histogram rounded up onto the grid i * interval: ({index: probability}, infinity mass).
    masses: the bins of [lower, upper]; infinity: its mass at +inf; clamped: the part of the end bins that lay beyond
    [lower, upper] (taken from the top bins down, to +inf); missing: mass known to lie outside the histogram."""
    masses = np.asarray(masses, dtype=float)
    bins = len(masses)
    width = (upper - lower) / bins
    remaining = masses.copy()
    moved = min(clamped, float(masses.sum()))
    for b in range(bins - 1, -1, -1):
        if moved <= 0:
            break
        take = min(remaining[b], moved)
        remaining[b] -= take
        moved -= take
    pmf = {}
    for b in np.nonzero(remaining > 0)[0]:
        index = math.ceil((lower + (b + 1) * width) / interval)  # at or above the bin's upper edge
        pmf[index] = pmf.get(index, 0.0) + float(remaining[b])
    total = float(masses.sum()) + infinity
    inf_mass = infinity + min(clamped, float(masses.sum())) + max(0.0, 1.0 - total, missing)
    # The histogram is of the computed density normalised to 1; where `missing` (the walls' removed mass) is more than
    # it lacks, its finite part is scaled to what is left beside the mass at +inf: each point's share of delta(eps)
    # falls by at most what +inf adds, so delta(eps) does not fall
    finite = sum(pmf.values())
    if finite > 0 and finite + inf_mass > 1.0:
        scale = max(0.0, 1.0 - inf_mass) / finite
        pmf = {i: p * scale for i, p in pmf.items() if p * scale > 0}
    return pmf, inf_mass


def take_lowest(pmf, amount, below=None):
    """Takes up to `amount` of mass from the lowest losses of `pmf` (in place), only from loss indices below `below`
    where given; returns how much it took. The caller puts it at a higher loss or at +infinity: a point at loss L adds
    p (1 - e^(eps - L))_+ to delta(eps), which grows with L, so delta(eps) can only rise, at every eps; and
    E[e^(-L)] <= 1 still holds (the PLD of a pair)."""
    taken = 0.0
    for index in sorted(pmf):
        if (below is not None and index >= below) or taken >= amount:
            break
        take = min(pmf[index], amount - taken)
        pmf[index] -= take
        taken += take
        if pmf[index] <= 0:
            del pmf[index]
    return taken


def profile_delta(pmf, inf_mass, interval, eps):
    """delta(eps) of a rounded PLD: mass at +inf plus sum_i p_i (1 - e^(eps - i w))_+ (dp_accounting's formula)."""
    if not pmf:
        return inf_mass
    index = np.fromiter(pmf.keys(), dtype=float)
    mass = np.fromiter(pmf.values(), dtype=float)
    losses = index * interval
    above = losses > eps
    return inf_mass + float(np.sum(mass[above] * -np.expm1(eps - losses[above])))


def profile_epsilon(pmf, inf_mass, interval, delta):
    """The smallest eps >= 0 with profile_delta <= delta (+inf where the mass at infinity exceeds delta): the PLD's
    eps(delta), by bisection to 1e-12 of the largest loss (profile_delta does not increase in eps)."""
    if inf_mass > delta:
        return math.inf
    if profile_delta(pmf, inf_mass, interval, 0.0) <= delta:
        return 0.0
    hi = max(pmf) * interval if pmf else 0.0  # at the largest loss only the mass at infinity is left
    lo = 0.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if profile_delta(pmf, inf_mass, interval, mid) > delta else (lo, mid)
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return hi


def rdp_tail(orders, renyi):
    """An upper bound of delta(eps) from upper bounds of R_alpha (MATH.md §7, the CKS conversion: models::cksDelta,
    the bound the run's own conservative delta(eps) take), as a function of eps; None where no order alpha > 1 has a
    finite R."""
    terms = [(a, r) for a, r in zip(orders, renyi) if a > 1 and np.isfinite(r)]
    if not terms:
        return None
    from . import _core
    alphas, values = [a for a, _ in terms], [r for _, r in terms]

    def bound(eps):
        return min(1.0, _core.cks_delta(alphas, values, float(eps)))
    return bound


MARGINS = ("next_eps", "infinity")


def coverage_requirements(pmf, interval, eps_grid, curve, tail=None, margins="next_eps"):
    """The points (eps, value) at which a PLD's delta(eps) must reach `value` so that it lies at or above every
    delta(eps) that the curve (upper bounds of delta at the eps of eps_grid) and `tail` (an upper bound beyond the grid,
    or None) allow, at EVERY eps >= 0, not only at the grid's:
      * between two grid points, the chord in e^eps of their bounds: a true delta(eps) = sup_A P(A) - e^eps Q(A) is
        convex in e^eps, so it lies below that chord; the PLD's delta is affine in e^eps between its losses i w, so the
        chord is checked there and at the grid points;
      * beyond the last grid point e_m, the bound U(eps) = min(curve(e_m), tail(eps)) does not increase, so for
        consecutive points b_k < b_(k+1) (spaced by w) from e_m to the largest loss the PLD's delta(b_(k+1)) (at most
        its delta on [b_k, b_(k+1)]) must reach U(b_k); past the largest loss the PLD's delta is its mass at
        +infinity, which must reach U there.
    Returns (points, values, targets): targets[i] is the loss to which mass moves to lift delta at points[i]: the next
    eps of the grid (which lifts delta below that eps only), +inf from the grid's last eps on; with margins =
    "infinity", +inf everywhere (every margin the run does not certify, and every chord's, is mass at infinity: it
    lifts every delta, and the largest margin bounds the export's delta at every eps from below). Before, the curve
    was checked at the grid's eps only: past the grid the export's eps(1e-8) = 14.348 of a Poisson case lay below the
    true 14.356."""
    grid = np.asarray(eps_grid, dtype=float)
    values = np.asarray(curve, dtype=float)
    keep = (grid >= 0) & np.isfinite(values)
    grid, values = grid[keep], values[keep]
    if grid.size == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    order = np.argsort(grid)
    grid, values = grid[order], values[order]
    losses = np.sort(np.fromiter(pmf.keys(), dtype=float)) * interval if pmf else np.zeros(0)
    # By default a shortfall at or after an eps of the grid moves mass up to the next eps of the grid (+infinity after
    # the last): it lifts delta below that eps only. To +infinity, it would lift every delta: the margin the companions
    # leave at delta(0.5) (7e-3 in cases/dpsgd-poisson-1d.toml) would decide the export's eps(1e-5)
    if margins not in MARGINS:
        raise ValueError(f"margins = {margins!r}; allowed: {', '.join(map(repr, MARGINS))}")
    at_grid = np.append(grid[1:], np.inf) if margins == "next_eps" else np.full(grid.size, np.inf)
    points, needs, targets = [grid], [values], [at_grid]
    inside = losses[(losses > grid[0]) & (losses < grid[-1])]
    if inside.size:
        j = np.searchsorted(grid, inside, side="right") - 1  # grid[j] < loss < grid[j + 1]
        share = np.expm1(inside - grid[j]) / np.expm1(grid[j + 1] - grid[j])
        points.append(inside)
        needs.append(values[j] + (values[j + 1] - values[j]) * share)
        targets.append(grid[j + 1] if margins == "next_eps" else np.full(inside.size, np.inf))
    last_eps, last = grid[-1], values[-1]

    def bound(eps):
        return min(last, tail(eps)) if tail is not None else last
    # every multiple of w from the last eps to the largest loss (at most 20,000 points): the bound is then at most one
    # spacing late, as the PLD's own losses lie on that grid
    top = losses[-1] if losses.size else last_eps
    spacing = max(interval, (top - last_eps) / 20000.0)
    beyond = np.arange(last_eps, top + 0.5 * spacing, spacing) if top > last_eps else np.array([last_eps])
    if beyond.size > 1:
        points.append(beyond[1:])
        needs.append(np.array([bound(e) for e in beyond[:-1]]))
        targets.append(np.full(beyond.size - 1, np.inf))
    points.append(np.array([beyond[-1] + 1.0]))  # past the largest loss: the mass at +infinity
    needs.append(np.array([bound(beyond[-1])]))
    targets.append(np.array([np.inf]))
    return np.concatenate(points), np.concatenate(needs), np.concatenate(targets)


def cover_curve(pmf, inf_mass, interval, eps_grid, curve, tail=None, margins="next_eps"):
    """Lifts the PLD's delta(eps) to every bound the curve (and `tail` beyond it) allows at every eps >= 0
    (coverage_requirements), from the largest eps down. A shortfall at or between eps of the grid moves mass from the
    lowest losses up to the next eps of the grid, which lifts delta(eps) by (1 - e^(eps - next)) per unit of mass and
    leaves delta from that eps on as it was: the larger eps, where small deltas are read, do not pay for a margin at
    small eps. Past the grid's last eps (and everywhere with margins="infinity") the mass goes to +infinity (a unit
    there lifts every delta(eps) by one).
    Returns (pmf, inf_mass, moved): moved is the mass moved, at most what delta(eps) rose at any eps."""
    pmf = dict(pmf)
    moved_total = 0.0
    points, needs, targets = coverage_requirements(pmf, interval, eps_grid, curve, tail, margins)
    for k in np.argsort(-points, kind="stable"):
        x, need, target = float(points[k]), float(needs[k]), float(targets[k])
        for _ in range(50):
            deficit = need - profile_delta(pmf, inf_mass, interval, x)
            if deficit <= 0:
                break
            # a relative and an absolute margin, so that round-off in the sums cannot leave the PLD short
            deficit = deficit * (1 + 1e-9) + 1e-15
            index = math.ceil(target / interval - 1e-9) if np.isfinite(target) else None
            gain = -math.expm1(x - index * interval) if index is not None else 1.0
            if index is not None and gain > 0 and any(i < index for i in pmf):
                taken = take_lowest(pmf, deficit / gain, below=index)
                if taken > 0:
                    pmf[index] = pmf.get(index, 0.0) + taken
            else:
                taken = take_lowest(pmf, deficit)
                inf_mass += taken
            moved_total += taken
            if not pmf:
                inf_mass = 1.0  # every finite point is at +inf: the whole mass, without the sums' round-off
                break
        else:
            # still short after 50 moves: nothing finite is kept (delta = 1 bounds every delta)
            moved_total += sum(pmf.values())
            pmf, inf_mass = {}, 1.0
        if not pmf:
            break
    return pmf, inf_mass, moved_total


def conservative_curve(rows, column, cover):
    """The conservative curve of one direction at one step, as `cover` says: "monotone" (its running minimum over
    eps) or "pointwise"."""
    values = rows[column].to_numpy(dtype=float)
    if cover == "monotone":
        return np.minimum.accumulate(values)
    if cover == "pointwise":
        return values
    raise ValueError(f"cover = {cover!r}; allowed: 'monotone', 'pointwise'")


def renyi_bounds(accuracy, step, direction):
    """(orders, conservative R_alpha) of one direction ("pq" or "qp") at an output step, from accuracy.csv as a
    DataFrame (renyi_<alpha>_conservative, renyi_qp_<alpha>_conservative); empty lists without it."""
    if accuracy is None:
        return [], []
    rows = accuracy[accuracy["step"] == step]
    if rows.empty:
        return [], []
    prefix = "renyi_" if direction == "pq" else "renyi_qp_"
    orders, values = [], []
    for column in rows.columns:
        if not (column.startswith(prefix) and column.endswith("_conservative")):
            continue
        label = column[len(prefix):-len("_conservative")]
        try:
            alpha = float(label)
        except ValueError:  # renyi_qp_... seen from the "renyi_" prefix
            continue
        orders.append(alpha)
        values.append(float(rows[column].iloc[0]))
    return orders, values


def epsilon_bounds(accuracy, step):
    """(eps, delta) pairs from accuracy.csv at an output step: the conservative eps(delta) of the pair at each delta of
    privacy.delta_grid where it is finite. At that eps each direction's true delta(eps) is at most delta (delta(eps)
    does not increase, and the conservative eps is at least either direction's true one): points of the curve off
    the hockey-stick grid, where the run's roots put them."""
    if accuracy is None:
        return []
    rows = accuracy[accuracy["step"] == step]
    if rows.empty:
        return []
    out = []
    prefix, suffix = "eps_exact_delta_", "_conservative"
    for column in rows.columns:
        if column.startswith(prefix) and column.endswith(suffix):
            bound = float(rows[column].iloc[0])
            if math.isfinite(bound) and bound >= 0:
                out.append((bound, float(column[len(prefix):-len(suffix)])))
    return sorted(out)


def curve_with_epsilon_bounds(eps_grid, curve, bounds, cover):
    """The curve (upper bounds of delta at eps_grid) with the points of epsilon_bounds added, sorted by eps; "monotone"
    takes the running minimum again, so that every eps after such a point is bounded by its delta too."""
    if not bounds:
        return np.asarray(eps_grid, dtype=float), np.asarray(curve, dtype=float)
    eps = np.concatenate([np.asarray(eps_grid, dtype=float), [e for e, _ in bounds]])
    values = np.concatenate([np.asarray(curve, dtype=float), [d for _, d in bounds]])
    order = np.argsort(eps, kind="stable")
    eps, values = eps[order], values[order]
    if cover == "monotone":
        values = np.minimum.accumulate(values)
    return eps, values


def export(h5_path, hockey_stick_accuracy, masses, step, neighbour_kind, interval=None, discretisation=True,
           cover="monotone", accuracy=None, margins="next_eps"):
    """The arguments of dp_accounting's create_from_rounded_probability for the run's PLD at output step `step`
    (both directions on one grid), with a report of what went to +infinity.

    h5_path: the run's fpdp.h5; hockey_stick_accuracy: its hockey_stick_accuracy.csv as a DataFrame (None without the
    error estimate); masses: {"pq": mass_p, "qp": mass_q} at the step (divergence.csv); neighbour_kind: the case's
    neighbour.kind; interval: the grid width (default: the finer of the two histograms' bin widths);
    discretisation: cover the run's conservative curve (step 3 of the module's description), made non-increasing
    (cover = "monotone") or as written ("pointwise"), at every eps >= 0 (coverage_requirements); accuracy: the run's
    accuracy.csv as a DataFrame, whose conservative eps(delta) add points to the curve (epsilon_bounds) and whose
    conservative R_alpha bound delta(eps) beyond the curve's last eps (rdp_tail; without it the curve's last value
    bounds it there); margins: where a shortfall's mass goes, "next_eps" (default) or "infinity" (cover_curve). Raises
    ValueError naming what is missing."""
    import h5py

    from .files import open_regular

    with open_regular(h5_path) as raw, h5py.File(raw, "r") as f:
        if "privacy_loss" not in f:
            why = ("the privacy-loss histograms are not computed beyond three axes (docs/scaling.md §9); quote the "
                   "run's eps(delta) and hockey-stick curve (epsilon.csv, hockey_stick_accuracy.csv)"
                   if int(f.attrs.get("dim", 0)) > 3 else "divergence.privacy_loss_bins = 0")
            raise ValueError(f"{h5_path} has no /privacy_loss ({why}): no privacy loss distribution to export")
        g = f["privacy_loss"]
        steps = [int(s) for s in g["step"][:]]
        if step not in steps:
            raise ValueError(f"step = {step}: not an output step; allowed: {steps[0]} .. {steps[-1]} (the output "
                             f"steps)")
        k = steps.index(step)
        hist = {d: {name: g[name + suffix][k] for name in ("lower", "upper", "mass", "mass_infinity", "clamped_mass")}
                for d, suffix in DIRECTIONS}
    widths = {d: (float(h["upper"]) - float(h["lower"])) / len(h["mass"]) for d, h in hist.items()}
    w = float(interval) if interval else min(widths.values())
    if not w > 0:
        raise ValueError(f"value_discretization_interval = {w}; allowed: > 0")
    out = {"step": step, "interval": w}
    for d, _ in DIRECTIONS:
        h = hist[d]
        pmf, inf_mass = rounded_pmf(float(h["lower"]), float(h["upper"]), h["mass"], float(h["mass_infinity"]),
                                    float(h["clamped_mass"]), w, missing=1.0 - float(masses[d]))
        moved = 0.0
        if discretisation:
            if hockey_stick_accuracy is None or f"delta_{d}_conservative" not in hockey_stick_accuracy.columns:
                raise ValueError("the run has no conservative hockey-stick curve (hockey_stick_accuracy.csv; "
                                 "accuracy.estimate = false): the discretisation error cannot be covered; run with "
                                 "the error estimate, or export with discretisation=False (the PLD of the computed "
                                 "densities, not of the true ones)")
            rows = hockey_stick_accuracy[hockey_stick_accuracy["step"] == step].sort_values("eps")
            eps_grid, curve = curve_with_epsilon_bounds(rows["eps"].to_numpy(dtype=float),
                                                        conservative_curve(rows, f"delta_{d}_conservative", cover),
                                                        epsilon_bounds(accuracy, step), cover)
            pmf, inf_mass, moved = cover_curve(pmf, inf_mass, w, eps_grid, curve,
                                               rdp_tail(*renyi_bounds(accuracy, step, d)), margins)
        out[d] = {"pmf": dict(sorted(pmf.items())), "infinity_mass": min(1.0, inf_mass),
                  "moved_for_the_conservative_curve": moved}
    first, second = SLOTS[neighbour_kind]
    out["create_from_rounded_probability"] = {
        "rounded_probability_mass_function": out[first]["pmf"],
        "infinity_mass": out[first]["infinity_mass"],
        "value_discretization_interval": w,
        "pessimistic_estimate": True,
        "rounded_probability_mass_function_add": out[second]["pmf"],
        "infinity_mass_add": out[second]["infinity_mass"],
        "symmetric": False,
    }
    return out


def privacy_loss_distribution(result, step, interval=None, discretisation=True, cover="monotone",
                              margins="next_eps"):
    """A dp_accounting PrivacyLossDistribution of the run's last iterate at `step` where dp_accounting is importable,
    else the keyword arguments of PrivacyLossDistribution.create_from_rounded_probability."""
    div = result.table("divergence")
    row = div[div["step"] == step].iloc[0]
    exported = export(result.output_directory / "fpdp.h5", result.table("hockey_stick_accuracy"),
                      {"pq": float(row["mass_p"]), "qp": float(row["mass_q"])}, step,
                      result.parameters["neighbour"]["kind"], interval, discretisation, cover,
                      result.table("accuracy") if discretisation else None, margins)
    kwargs = exported["create_from_rounded_probability"]
    try:
        from dp_accounting.pld import privacy_loss_distribution as pld_module
    except ImportError:
        return kwargs
    return pld_module.PrivacyLossDistribution.create_from_rounded_probability(**kwargs)
