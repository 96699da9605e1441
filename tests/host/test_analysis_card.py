"""The card's inference library on synthetic curves whose answer is known (issue 35): knees,
plateaus, noise and outliers put in, found again within a stated tolerance; "uncertain" for a
curve without structure or too few points; and each property fails on a broken detector."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from pmemlab.analysis import granularity, interleave, knees, tail

EXAMPLES = 60
SETTINGS = dict(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])
TOL = 1.5  # a capacity found within a factor 1.5 (the grid is 4 points per octave)


@st.composite
def stepped_curves(draw):
    """A latency curve 4 KiB..: 1-4 knees at least 1.5 octaves apart, each level >= 1.5x the one
    below, 4 points per octave, lognormal noise up to 3 %, and up to one outlier (2-5x) per 8 points
    (none two apart)."""
    nknees = draw(st.integers(1, 4))
    caps, x = [], 12.0 + draw(st.floats(1.5, 3.0))
    for _ in range(nknees):
        caps.append(x)
        x += draw(st.floats(1.5, 4.0))
    top = x + draw(st.floats(1.5, 3.0))
    lat = [draw(st.floats(0.5, 100.0))]
    for _ in range(nknees):
        lat.append(lat[-1] * draw(st.floats(1.5, 8.0)))
    grid = np.arange(12.0, top, 0.25)
    level = np.searchsorted(np.array(caps), grid, side="left")  # size <= cap: the level below
    y = np.array(lat)[level]
    seed = draw(st.integers(0, 2 ** 31))
    rng = np.random.default_rng(seed)
    y = y * np.exp(rng.normal(0, draw(st.floats(0.0, 0.03)), len(y)))
    nout = draw(st.integers(0, len(grid) // 8))
    spots = rng.choice(np.arange(0, len(grid), 3), size=min(nout, len(range(0, len(grid), 3))), replace=False)
    for i in spots:
        y[i] *= rng.uniform(2.0, 5.0)
    return 2.0 ** grid, y, [2.0 ** c for c in caps], lat


def check_finds(sizes, lat, caps, levels):
    fit = knees.fit_levels(sizes, lat)
    assert not fit.uncertain, fit.reason
    assert len(fit.knees) == len(caps), ([k.capacity_bytes for k in fit.knees], caps)
    for k, cap in zip(fit.knees, caps):
        assert cap / TOL <= k.capacity_bytes <= cap * TOL, (k.capacity_bytes, cap)
        assert k.confidence > 0.9
    for lv, want in zip(fit.levels, levels):
        assert want / 1.1 <= lv.latency_ns <= want * 1.1


@settings(**SETTINGS)
@given(stepped_curves())
def test_knees_found_within_tolerance(curve):
    check_finds(*curve)


@st.composite
def flat_curves(draw):
    n = draw(st.integers(knees.MIN_POINTS, 60))
    sizes = 2.0 ** (12 + 0.25 * np.arange(n))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 31)))
    return sizes, draw(st.floats(0.5, 500.0)) * np.exp(rng.normal(0, draw(st.floats(0, 0.03)), n))


@settings(**SETTINGS)
@given(flat_curves())
def test_structureless_curve_is_uncertain(curve):
    fit = knees.fit_levels(*curve)
    assert fit.uncertain and not fit.knees


@given(st.integers(0, knees.MIN_POINTS - 1))
def test_too_short_curve_is_uncertain(n):
    sizes = 2.0 ** (12 + np.arange(n))
    lat = np.where(np.arange(n) < n // 2, 1.0, 100.0)
    inf = knees.levels_inference("levels", sizes, lat)
    assert inf.uncertain and inf.value is None and "points" in inf.reason


def _fixed_ratio_detector(sizes, lat):
    """LENS's way: a knee wherever the latency doubles between neighbours on a fixed grid,
    placed at the sizes decided beforehand (here: the nearest power of 4 of the sizes)."""
    fit = knees.KneeFit()
    for i in range(1, len(sizes)):
        if lat[i] / lat[i - 1] > 2.0:
            cap = 4.0 ** round(math.log(sizes[i - 1], 4))
            fit.knees.append(knees.Knee(cap, lat[i - 1], lat[i], 1.0, 0.0, int(sizes[i - 1]), int(sizes[i])))
    return fit


def _shifted_detector(sizes, lat):
    fit = ORIGINAL(sizes, lat)
    for k in fit.knees:
        k.capacity_bytes *= 2
    return fit


ORIGINAL = knees.fit_levels


def _noise_chaser(sizes, lat):
    """Splits wherever neighbours differ by 5 %: it reads noise as levels."""
    fit = knees.KneeFit()
    for i in range(1, len(sizes)):
        if abs(math.log(lat[i] / lat[i - 1])) > math.log(1.05):
            fit.knees.append(knees.Knee(sizes[i - 1], lat[i - 1], lat[i], 1.0, 0.0, int(sizes[i - 1]), int(sizes[i])))
    fit.uncertain = not fit.knees
    return fit


NO_SHRINK = dict(SETTINGS, phases=[Phase.generate])


@settings(**NO_SHRINK)
@given(stepped_curves())
def _finds(curve):
    check_finds(*curve)


@settings(**NO_SHRINK)
@given(flat_curves())
def _flat_uncertain(curve):
    test_structureless_curve_is_uncertain.hypothesis.inner_test(curve)


@pytest.mark.parametrize("broken,prop", [(_fixed_ratio_detector, _finds), (_shifted_detector, _finds),
                                         (_noise_chaser, _flat_uncertain)])
def test_broken_detector_fails_the_properties(monkeypatch, broken, prop):
    monkeypatch.setattr(knees, "fit_levels", broken)
    with pytest.raises(AssertionError):
        prop()


def _ops_curve(gran, sizes, noise, rng):
    # ops/s flat to the granularity, then falling as 1/a (a device working in gran-byte units)
    ops = np.where(sizes <= gran, 1e7, 1e7 * gran / sizes)
    return ops * sizes / 1e9 * np.exp(rng.normal(0, noise, len(sizes)))


@settings(**SETTINGS)
@given(st.sampled_from([32, 64, 128, 256, 512]), st.floats(0, 0.05), st.integers(0, 2 ** 31))
def test_granularity_found(gran, noise, seed):
    sizes = 2.0 ** np.arange(3, 13)
    inf = granularity.granularity_inference("g", sizes, _ops_curve(gran, sizes, noise, np.random.default_rng(seed)))
    assert not inf.uncertain, inf.reason
    assert inf.value == gran
    assert inf.confidence > 0.9


def test_granularity_uncertain_without_a_fall_or_points():
    sizes = 2.0 ** np.arange(3, 13)
    flat_ops = 1e7 * sizes / 1e9  # the rate never falls
    assert granularity.granularity_inference("g", sizes, flat_ops).uncertain
    assert granularity.granularity_inference("g", sizes[:4], _ops_curve(64, sizes[:4], 0, np.random.default_rng(0))).uncertain


def test_broken_granularity_fails(monkeypatch):
    real = granularity.fit_hinge  # the break found one octave too high
    monkeypatch.setattr(granularity, "fit_hinge", lambda x, y, fixed_below=None: real(x + 1, y, fixed_below))
    with pytest.raises(AssertionError):
        test_granularity_found()


@pytest.mark.parametrize("gran,ways,declared_ways,verdict", [(256, 4, 4, "agree"), (256, 4, 16, "disagree")])
def test_interleave_held_against_declared(gran, ways, declared_ways, verdict):
    sizes = 2.0 ** np.arange(6, 18)
    bw = np.minimum(sizes, gran * ways) / 64.0
    inf = interleave.interleave_inference("i", sizes, bw, gran, declared_ways)
    assert inf.detail["verdict"] == verdict
    assert gran * ways / 1.5 <= inf.detail["saturation_bytes"] <= gran * ways * 1.5
    undeclared = interleave.interleave_inference("i", sizes, bw)
    assert undeclared.uncertain and "declared" in undeclared.reason


@settings(**SETTINGS)
@given(st.integers(2000, 10 ** 6), st.floats(1e-4, 0.05), st.floats(5.0, 200.0))
def test_write_tail_rate_and_slowness(n, rate, slow):
    k = max(1, int(n * rate))
    inf = tail.tail_inference("t", [100, 110, 120, 100 * slow, 110 * slow], [n // 2, n - n // 2 - k, 0, k // 2, k - k // 2])
    assert not inf.uncertain
    assert inf.value["rate"] == pytest.approx(k / n)
    assert 100 * slow / 120 <= inf.value["slowness"] * 100 <= 110 * slow * 1.01 / 1.0


def test_write_tail_without_slow_mode_and_too_few():
    inf = tail.tail_inference("t", [100, 110, 130], [5000, 4000, 1000])
    assert inf.value["rate"] == 0.0 and inf.value["rate_below"] == pytest.approx(3e-4)
    assert tail.tail_inference("t", [100, 5000], [500, 3]).uncertain
