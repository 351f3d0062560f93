"""The privacy loss distribution for dp_accounting (fpdp.pld, Result.privacy_loss_distribution,
scripts/pld-for-dp-accounting): both directions on one grid for create_from_rounded_probability(..., symmetric=False)
as dp_accounting documents it, and a profile at or above the run's conservative delta(eps) curve in both
directions, whatever the walls removed and the companions could not certify. dp_accounting is not in Debian: a fake
module with the documented signature of create_from_rounded_probability stands in for it."""
import inspect
import json
import math
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

import fpdp
from fpdp import pld
from conftest import QUICK_CASE

# The signature dp_accounting documents (dp_accounting/pld/privacy_loss_distribution.py, version 0.4), and the
# hockey-stick divergence of a rounded PLD by its definition (the sum of the points' (1 - e^(eps - L))_+ and the mass
# at infinity; the larger of the two directions when not symmetric).
FAKE = textwrap.dedent("""
    import math
    from typing import Mapping, Optional

    class PrivacyLossDistribution:
        calls = []

        def __init__(self, pmfs, interval):
            self.pmfs, self.interval = pmfs, interval

        @classmethod
        def create_from_rounded_probability(
                cls,
                rounded_probability_mass_function: Mapping[int, float],
                infinity_mass: float,
                value_discretization_interval: float,
                pessimistic_estimate: bool = True,
                rounded_probability_mass_function_add: Optional[Mapping[int, float]] = None,
                infinity_mass_add: Optional[float] = None,
                symmetric: bool = True) -> 'PrivacyLossDistribution':
            cls.calls.append(dict(rounded_probability_mass_function=rounded_probability_mass_function,
                                  infinity_mass=infinity_mass, symmetric=symmetric,
                                  pessimistic_estimate=pessimistic_estimate))
            if symmetric:
                if rounded_probability_mass_function_add is not None or infinity_mass_add is not None:
                    raise ValueError("add given although symmetric")
                pmfs = [(rounded_probability_mass_function, infinity_mass)]
            else:
                if rounded_probability_mass_function_add is None or infinity_mass_add is None:
                    raise ValueError("add missing although not symmetric")
                pmfs = [(rounded_probability_mass_function, infinity_mass),
                        (rounded_probability_mass_function_add, infinity_mass_add)]
            return cls(pmfs, value_discretization_interval)

        def get_delta_for_epsilon(self, epsilon):
            return max(inf + sum(p * -math.expm1(epsilon - i * self.interval)
                                 for i, p in pmf.items() if i * self.interval > epsilon)
                       for pmf, inf in self.pmfs)
""")


# The quick case with the exact convolution: its walls absorb, so that the hockey-stick values resting on them keep a
# finite conservative value (docs/noisy-gd.md §4.1); with no-flux walls they have none (1), and where that begins at
# small eps the export is the trivial PLD, delta = 1 (test_a_run_without_a_bound_at_small_eps_exports_the_trivial_pld).
ABSORBING = {"noisy_gd.diffusion": "exact_convolution"}


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    return fpdp.run(QUICK_CASE, output=tmp_path_factory.mktemp("pld") / "out", quiet=True, **ABSORBING)


@pytest.fixture
def fake_dp_accounting(tmp_path, monkeypatch):
    package = tmp_path / "fake" / "dp_accounting" / "pld"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "privacy_loss_distribution.py").write_text(FAKE)
    monkeypatch.syspath_prepend(str(tmp_path / "fake"))
    for name in [m for m in sys.modules if m.startswith("dp_accounting")]:
        monkeypatch.delitem(sys.modules, name)
    from dp_accounting.pld import privacy_loss_distribution
    yield privacy_loss_distribution.PrivacyLossDistribution
    for name in [m for m in sys.modules if m.startswith("dp_accounting")]:
        del sys.modules[name]  # the tests after this one see no dp_accounting


def test_without_dp_accounting_the_constructors_arguments_come_back(quick):
    kwargs = quick.privacy_loss_distribution()
    assert kwargs["symmetric"] is False and kwargs["pessimistic_estimate"] is True
    w = kwargs["value_discretization_interval"]
    assert w > 0
    for pmf, inf in ((kwargs["rounded_probability_mass_function"], kwargs["infinity_mass"]),
                     (kwargs["rounded_probability_mass_function_add"], kwargs["infinity_mass_add"])):
        assert all(isinstance(i, int) for i in pmf) and all(p > 0 for p in pmf.values())
        assert abs(sum(pmf.values()) + inf - 1.0) <= 1e-9
    # the documented signature takes them as they are
    namespace = {}
    exec(FAKE, namespace)
    inspect.signature(namespace["PrivacyLossDistribution"].create_from_rounded_probability).bind(**kwargs)


def test_dp_accounting_gets_both_directions_on_one_grid(quick, fake_dp_accounting):
    made = quick.privacy_loss_distribution()
    assert isinstance(made, fake_dp_accounting)
    call = fake_dp_accounting.calls[-1]
    assert call["symmetric"] is False and call["pessimistic_estimate"] is True
    assert len(made.pmfs) == 2
    # its delta(eps) is the larger of the two directions', and its eps at or above the run's root
    for eps in (0.0, 0.5, 1.0):
        assert made.get_delta_for_epsilon(eps) >= max(quick.delta(eps, direction="pq"), quick.delta(eps, direction="qp"))
    for delta in (1e-3, 1e-5):
        assert brentq_eps(made.get_delta_for_epsilon, delta) >= quick.eps(delta)


def brentq_eps(delta_of, delta):
    lo, hi = 0.0, 50.0
    if delta_of(lo) <= delta:
        return 0.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if delta_of(mid) > delta else (lo, mid)
    return hi


def test_the_profile_lies_at_or_above_the_conservative_curve_in_both_directions(quick):
    acc = quick.table("hockey_stick_accuracy")
    for step in (quick.steps[2], quick.steps[-1]):
        for cover in ("monotone", "pointwise"):
            kwargs = quick.privacy_loss_distribution(step=step, cover=cover)
            w = kwargs["value_discretization_interval"]
            rows = acc[acc["step"] == step].sort_values("eps")
            for pmf, inf, column in ((kwargs["rounded_probability_mass_function"], kwargs["infinity_mass"],
                                      "delta_pq"),
                                     (kwargs["rounded_probability_mass_function_add"], kwargs["infinity_mass_add"],
                                      "delta_qp")):
                conservative = rows[column + "_conservative"].to_numpy()
                # "monotone": at each eps the smallest conservative value at or below it (delta(eps) decreases)
                bound = np.minimum.accumulate(conservative) if cover == "monotone" else conservative
                for eps, value, c in zip(rows["eps"], rows[column], bound):
                    x = pld.profile_delta(pmf, inf, w, eps)
                    assert x >= c, (step, cover, column, eps, x, c)
                    assert x >= value
    # hockey_stick_accuracy.csv's conservative curve is itself non-increasing in eps (a value without a bound of its
    # own takes the one at the largest smaller eps; docs/output.md): the two covers export the same infinity mass, and
    # it is small
    for _, rows in acc.groupby("step"):
        for column in ("delta_pq", "delta_qp"):
            c = rows.sort_values("eps")[column + "_conservative"].to_numpy()
            assert (np.diff(c) <= 0).all(), (column, c)
    pointwise = quick.privacy_loss_distribution(cover="pointwise")["infinity_mass"]
    assert pointwise == pytest.approx(quick.privacy_loss_distribution()["infinity_mass"])
    # The box cuts the tail from eps = 0.6 on (box_truncation), where the conservative curve stays at its last bound
    # far above the value: the cover lifts the profile to it (asserted above at every eps of the grid) by moving mass
    # up to the next grid eps, and past the grid's last eps the smaller of its last bound and the CKS bound of the
    # conservative R_alpha holds: the mass at infinity is at most that excess
    last = acc[acc["step"] == quick.steps[-1]]
    excess = (last["delta_pq_conservative"] - last["delta_pq"]).max()
    assert excess > 1e-4  # 6.1e-4 with the bounds from eps(delta) and convexity (5.4e-3 without)
    assert pointwise <= excess + 1e-3, (excess, pointwise)
    exported = quick.privacy_loss_distribution()
    w = exported["value_discretization_interval"]
    # The meshes leave R_alpha unbounded here (the absorbing walls); the accountants' composition caps its conservative
    # values (full batch, S_g in closed form), so the CKS conversion of those caps bounds delta(eps) past the grid too:
    # the export lies at or above the smaller of the two bounds there.
    tail = pld.rdp_tail(*pld.renyi_bounds(quick.table("accuracy"), quick.steps[-1], "pq"))
    assert tail is not None
    top_bound = float(last["delta_pq_conservative"].min())
    assert top_bound > 0
    for eps in (float(last["eps"].max()) + w, 20.0, 100.0):
        assert pld.profile_delta(exported["rounded_probability_mass_function"], exported["infinity_mass"], w, eps) \
            >= min(top_bound, tail(eps)) * (1 - 1e-12)


def test_margins_at_infinity_hold_every_margin_of_the_curve_at_infinity(quick):
    # margins="infinity" (scripts/pld-for-dp-accounting --margins-at-infinity): every shortfall of the computed
    # densities' PLD below the conservative curve is mass at +infinity, so the mass there is at least the largest one;
    # the default moves it up to the next eps of the curve and holds no more at infinity than that
    step = int(quick.steps[-1])
    at_infinity = quick.privacy_loss_distribution(step=step, margins="infinity")
    default = quick.privacy_loss_distribution(step=step)
    computed = quick.privacy_loss_distribution(step=step, discretisation=False)
    w = computed["value_discretization_interval"]
    acc = quick.table("hockey_stick_accuracy")
    rows = acc[acc["step"] == step].sort_values("eps")
    curve = pld.conservative_curve(rows, "delta_pq_conservative", "monotone")
    shortfall = max(c - pld.profile_delta(computed["rounded_probability_mass_function"], computed["infinity_mass"], w, e)
                    for e, c in zip(rows["eps"], curve))
    assert shortfall > 0
    assert at_infinity["infinity_mass"] >= computed["infinity_mass"] + shortfall * (1 - 1e-9) - 1e-15
    assert default["infinity_mass"] <= at_infinity["infinity_mass"]
    for eps, c in zip(rows["eps"], curve):
        assert pld.profile_delta(at_infinity["rounded_probability_mass_function"], at_infinity["infinity_mass"], w,
                                 eps) >= c * (1 - 1e-12)
    with pytest.raises(ValueError, match="margins = 'nowhere'"):
        quick.privacy_loss_distribution(step=step, margins="nowhere")


def test_the_conservative_curve_is_covered_by_moving_mass_to_infinity():
    # a PLD at 1, 2 (w = 1) against a curve above it at eps = 0.5: mass moves from the lowest loss
    pmf, inf = {1: 0.5, 2: 0.5}, 0.0
    curve_eps, curve = np.array([0.0, 0.5, 1.5]), np.array([0.2, 0.6, 0.1])
    assert pld.profile_delta(pmf, inf, 1.0, 0.5) < 0.6
    covered, inf2, moved = pld.cover_curve(pmf, inf, 1.0, curve_eps, curve)
    for e, c in zip(curve_eps, curve):
        assert pld.profile_delta(covered, inf2, 1.0, e) >= c
    assert moved > 0 and abs(sum(covered.values()) + inf2 - 1.0) < 1e-12
    # a curve of 1 (a value that is not certified for its status) leaves nothing finite
    covered, inf3, _ = pld.cover_curve(pmf, inf, 1.0, curve_eps, np.array([1.0, 1.0, 1.0]))
    assert not covered and inf3 == pytest.approx(1.0)


def test_the_cover_holds_between_the_curves_eps_by_the_chord_in_e_to_the_eps():
    # losses 0.5 and 1 (w = 0.5): the PLD's delta is convex in e^eps with a kink at 0.5, so a curve met exactly at
    # eps = 0 and 1 leaves it below the chord between them at 0.5, where a true delta (convex in e^eps, e.g. the
    # chord itself: one loss at 1 and mass at infinity) may lie
    pmf, inf, w = {1: 0.5, 2: 0.5}, 0.0, 0.5
    grid = np.array([0.0, 1.0])
    curve = np.array([pld.profile_delta(pmf, inf, w, e) for e in grid])
    share = math.expm1(0.5) / math.expm1(1.0)
    chord = curve[0] + (curve[1] - curve[0]) * share
    assert pld.profile_delta(pmf, inf, w, 0.5) < chord * (1 - 1e-3)
    covered, inf2, moved = pld.cover_curve(pmf, inf, w, grid, curve)
    assert moved > 0
    for e in np.linspace(0.0, 1.0, 101):
        bound = curve[0] + (curve[1] - curve[0]) * math.expm1(e) / math.expm1(1.0)
        assert pld.profile_delta(covered, inf2, w, e) >= bound * (1 - 1e-12)


def test_beyond_the_curves_last_eps_the_cover_holds_its_last_bound_or_the_renyi_tail():
    # the curve ends at eps = 2 with the bound 0.3 while the PLD's losses reach 6: nothing of the curve bounds
    # delta(5), so past eps = 2 the PLD must keep 0.3 (at +infinity), unless conservative R_alpha bound the tail
    w = 0.05
    pmf, inf = {0: 0.5, 80: 0.4995, 120: 0.0005}, 0.0  # losses 0, 4, 6
    grid, curve = np.array([0.0, 1.0, 2.0]), np.array([0.45, 0.4, 0.3])
    assert all(pld.profile_delta(pmf, inf, w, e) >= c for e, c in zip(grid, curve))
    assert pld.profile_delta(pmf, inf, w, 5.0) < 0.3
    covered, inf2, _ = pld.cover_curve(pmf, inf, w, grid, curve)
    for e in (2.0, 3.0, 5.0, 6.0, 50.0):
        assert pld.profile_delta(covered, inf2, w, e) >= 0.3 * (1 - 1e-12), e
    assert inf2 >= 0.3
    # an R_2 of at most 0.01 bounds delta(eps) by exp(0.01 - eps + log(1/2)) / 2 (CKS): far less at infinity
    tail = pld.rdp_tail([2.0, 10.0], [0.01, math.inf])
    assert tail(3.0) == pytest.approx(math.exp(0.01 - 3.0 + math.log(0.5)) / 2)
    covered, inf3, _ = pld.cover_curve(pmf, inf, w, grid, curve, tail)
    # (past the loss at 4 only the point at 6 is left: the tail's bound at 4, 4.6e-3, is what +infinity must make up)
    assert inf3 <= tail(4.0) * (1 + 1e-6) + 1e-15 and inf3 < 0.02 * inf2
    for e in np.linspace(2.0, 12.0, 201):
        previous = max(2.0, e - w)  # checked at the multiples of w: one interval late at most
        assert pld.profile_delta(covered, inf3, w, e) >= min(0.3, tail(previous)) * (1 - 1e-12), e
    assert pld.rdp_tail([2.0], [math.inf]) is None


def test_the_runs_conservative_eps_of_delta_are_points_of_the_curve():
    # the conservative eps(1e-3) = 0.7 of accuracy.csv: delta(0.7) <= 1e-3 in both directions, and every later eps
    # with it ("monotone"), while the grid's own bounds stay where they are smaller
    accuracy = pd.DataFrame({"step": [5, 10], "eps_exact_delta_0.001_conservative": [0.2, 0.7],
                             "eps_exact_delta_1e-06_conservative": [np.inf, np.inf]})
    bounds = pld.epsilon_bounds(accuracy, 10)
    assert bounds == [(0.7, 0.001)]
    eps, curve = pld.curve_with_epsilon_bounds(np.array([0.0, 0.5, 1.0]), np.array([0.3, 0.01, 0.004]), bounds,
                                               "monotone")
    assert list(eps) == [0.0, 0.5, 0.7, 1.0] and list(curve) == [0.3, 0.01, 0.001, 0.001]
    eps, curve = pld.curve_with_epsilon_bounds(np.array([0.0, 0.5, 1.0]), np.array([0.3, 0.01, 0.004]), bounds,
                                               "pointwise")
    assert list(curve) == [0.3, 0.01, 0.001, 0.004]
    assert pld.epsilon_bounds(None, 10) == [] and pld.epsilon_bounds(accuracy, 7) == []


def test_the_exports_eps_of_delta_is_the_root_of_its_profile():
    # one loss at 1 with mass 0.5: delta(eps) = 0.5 (1 - e^(eps - 1)), eps(0.1) = 1 + log(0.8)
    assert pld.profile_epsilon({1: 0.5}, 0.0, 1.0, 0.1) == pytest.approx(1.0 + math.log(0.8), abs=1e-11)
    assert pld.profile_epsilon({1: 0.5}, 0.0, 1.0, 0.6) == 0.0  # delta(0) = 0.316 is within 0.6
    assert pld.profile_epsilon({1: 0.5}, 0.2, 1.0, 0.1) == math.inf  # the mass at infinity exceeds delta
    assert pld.profile_epsilon({}, 0.0, 1.0, 1e-5) == 0.0


def test_mass_the_histogram_does_not_hold_goes_to_infinity():
    # the walls removed 0.1 of the density: the histogram holds 0.9
    pmf, inf = pld.rounded_pmf(-1.0, 1.0, [0.3, 0.3, 0.3, 0.0], 0.0, 0.0, 0.5, missing=0.1)
    assert inf == pytest.approx(0.1) and sum(pmf.values()) == pytest.approx(0.9)
    # rounding is up: bin [-1, -0.5) goes to index -1 (loss -0.5), [0, 0.5) to index 1
    assert set(pmf) == {-1, 0, 1}
    # the clamped mass leaves the top bins for +inf
    pmf, inf = pld.rounded_pmf(0.0, 1.0, [0.5, 0.5], 0.0, 0.2, 0.5)
    assert inf == pytest.approx(0.2) and pmf == {1: 0.5, 2: pytest.approx(0.3)}


def test_absorbing_walls_removed_mass_is_at_infinity(tmp_path):
    # a box too narrow for the noise: the walls absorb (docs/noisy-gd.md §4.1) and mass_p falls below 1
    r = fpdp.run(QUICK_CASE, output=tmp_path / "out", quiet=True,
                 **ABSORBING, **{"mesh.lower": [-2.5], "mesh.upper": [2.5], "mesh.cells": [200],
                                 "faults.stop_on": ["non_finite", "negative_mass"]})
    div = r.table("divergence")
    removed = 1.0 - float(div["mass_p"].iloc[-1])
    assert removed > 1e-4
    kwargs = r.privacy_loss_distribution(discretisation=False)
    assert kwargs["infinity_mass"] >= removed


def test_a_run_without_a_bound_at_small_eps_exports_the_trivial_pld(tmp_path):
    # no-flux walls on a narrow box: delta(eps) rests on the walls from small eps on (truncated_suspect, conservative
    # value 1): nothing bounds it there, and the export says so. An added record: the accountants' composition, which
    # would cap the conservative values of a replaced one, is not used for add/remove neighbours.
    added = QUICK_CASE.replace("[neighbour]\nindex = 0\nrecord = [0.0]", "[neighbour]\nkind = \"add\"\nrecord = [0.0]")
    assert added != QUICK_CASE
    r = fpdp.run(added, output=tmp_path / "out", quiet=True,
                 **{"mesh.lower": [-3.5], "mesh.upper": [3.5], "mesh.cells": [280],
                    "faults.stop_on": ["non_finite", "negative_mass"]})
    acc = r.table("hockey_stick_accuracy")
    last = acc[acc["step"] == r.steps[-1]].sort_values("eps")
    assert last["delta_pq_conservative"].iloc[1] == 1.0
    kwargs = r.privacy_loss_distribution()
    assert kwargs["infinity_mass"] == pytest.approx(1.0)
    # the computed densities' own PLD is not trivial
    assert r.privacy_loss_distribution(discretisation=False)["infinity_mass"] < 1e-3


def test_the_script_writes_the_same_export(quick, tmp_path, source):
    out = tmp_path / "pld.json"
    r = subprocess.run([sys.executable, str(source / "scripts" / "pld-for-dp-accounting"), str(quick.output_directory),
                        "--json", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    exported = json.loads(out.read_text())
    kwargs = quick.privacy_loss_distribution()
    args = exported["create_from_rounded_probability"]
    assert args["value_discretization_interval"] == kwargs["value_discretization_interval"]
    assert {int(i): p for i, p in args["rounded_probability_mass_function"].items()} == \
        kwargs["rounded_probability_mass_function"]
    assert args["infinity_mass_add"] == kwargs["infinity_mass_add"] and args["symmetric"] is False
    # the export's eps at the case's delta, beside the run's
    w = kwargs["value_discretization_interval"]
    pair = max(pld.profile_epsilon(kwargs["rounded_probability_mass_function"], kwargs["infinity_mass"], w, 1e-5),
               pld.profile_epsilon(kwargs["rounded_probability_mass_function_add"], kwargs["infinity_mass_add"], w,
                                   1e-5))
    assert f"the pair's {pair:.6g}; the run's {quick.eps(1e-5):.6g}" in r.stdout, r.stdout
    r = subprocess.run([sys.executable, str(source / "scripts" / "pld-for-dp-accounting"), str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "not an fpdp output directory" in r.stdout + r.stderr
