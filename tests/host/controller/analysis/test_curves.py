"""The curve logic of `pmemlab curves` (pmemlab.analysis.curves) on synthetic families whose
knee, tail rise and best mix are known, and on a recorded family (tests/host/fixtures)."""

from __future__ import annotations

import csv
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pmemlab.analysis import curves as C

from testlib import HOST_FIXTURES

FIXTURE = HOST_FIXTURES / "curves_dram.csv"


class Model:
    """A queue-like memory: bandwidth P*s/(s+d) at delay d, median L0*(1 + c*u/(1 - 0.95 u)) at
    utilisation u, p99.9 the median x (1 + t*u)."""

    def __init__(self, peak: float = 20.0, service: float = 200.0, c: float = 0.5, l0: float = 100.0,
                 t: float = 3.0, mix: int = 100) -> None:
        self.peak, self.service, self.c, self.l0, self.t, self.mix = peak, service, c, l0, t, mix

    def bw(self, d: int) -> float:
        return self.peak * self.service / (self.service + d)

    def lat(self, d: int) -> float:
        u = self.bw(d) / self.peak
        return self.l0 * (1 + self.c * u / (1 - 0.95 * u))

    def point(self, d: int) -> C.CurvePoint:
        u = self.bw(d) / self.peak
        m = self.lat(d)
        return C.CurvePoint(mix=self.mix, delay_ticks=d, bw_gbps=self.bw(d), bw_std=0.0, read_share=float(self.mix),
                            p50_ns=m, p90_ns=m * 1.2, p99_ns=m * (1 + self.t * u / 2), p999_ns=m * (1 + self.t * u),
                            max_ns=m * 10)

    def triple(self, d: int) -> tuple[int, float, float]:
        return d, self.bw(d), self.lat(d)

    @property
    def knee(self) -> float:
        """Bandwidth where the median is twice the unloaded one (u -> 0 at infinite delay)."""
        return self.peak / (self.c + 0.95)


def fill(model: Model, start: int, total: int) -> list[int]:
    delays = C.initial_delays(start)
    while len(delays) < total:
        new = C.next_delays([model.triple(d) for d in delays], 1)
        if not new:
            break
        delays = sorted({*delays, *new})
    return delays


def longest(model: Model, delays: list[int]) -> float:
    return C.stretches([model.triple(d) for d in delays])[0][0]


# --------------------------------------------------------------------------
# the grid
# --------------------------------------------------------------------------
@given(st.integers(2, 40), st.integers(1, 1000), st.integers(2, 1000))
def test_initial_delays_start_flat_out_and_end_near_idle(n: int, lo: int, span: int) -> None:
    hi = lo * span
    d = C.initial_delays(n, lo, hi)
    assert d[0] == 0 and d[-1] == hi
    assert d == sorted(set(d))
    assert len(d) <= n and (len(d) == n or hi - lo < n)


def test_initial_delays_refuse_a_grid_without_both_ends() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        C.initial_delays(1)
    with pytest.raises(ValueError, match="0 < lo < hi"):
        C.initial_delays(5, 100, 10)


@settings(max_examples=60, deadline=None)
@given(st.floats(1.0, 100.0), st.floats(20.0, 2000.0), st.floats(0.1, 3.0), st.integers(4, 8), st.integers(10, 30))
def test_adaptive_grid_is_new_distinct_delays_inside_the_range(peak: float, service: float, c: float,
                                                               start: int, total: int) -> None:
    m = Model(peak, service, c)
    first = C.initial_delays(start)
    delays = fill(m, start, total)
    assert delays == sorted(set(delays)) and set(first) <= set(delays)
    assert delays[0] == 0 and delays[-1] == first[-1]
    assert len(delays) == total


@settings(max_examples=40, deadline=None)
@given(st.floats(1.0, 100.0), st.floats(20.0, 2000.0), st.floats(0.1, 3.0))
def test_adaptive_grid_spreads_points_evenly_along_the_curve(peak: float, service: float, c: float) -> None:
    """No piece of the adaptive curve is longer than the longest of a geometric grid of as many
    points, and none is more than 3x the mean piece: the points follow the curve's length."""
    m = Model(peak, service, c)
    total = 16
    adaptive = fill(m, 5, total)
    geometric = C.initial_delays(total)
    assert longest(m, adaptive) <= longest(m, geometric) + 1e-12
    pieces = C.stretches([m.triple(d) for d in adaptive])
    open_ = [length for length, lo, hi in pieces if hi - lo >= 2]  # two neighbouring delays: nothing between
    assert max(open_) <= 3 * sum(length for length, _, _ in pieces) / len(pieces)


def test_adaptive_grid_puts_more_points_where_latency_rises_fast() -> None:
    """A steep queue (c = 3): the adaptive grid has more points above 60 % utilisation than a
    geometric ladder of as many points, and more than a grid spread by bandwidth alone would."""
    m = Model(c=3.0)
    adaptive = fill(m, 5, 16)
    geometric = C.initial_delays(16)
    busy = lambda ds: sum(1 for d in ds if m.bw(d) / m.peak > 0.6)  # noqa: E731
    assert busy(adaptive) > busy(geometric)
    assert busy(adaptive) >= 6
    # latency is followed, not bandwidth alone: no latency step between neighbours that could be
    # split is more than a fifth of the curve's latency span (spread by bandwidth: 0.6 of it)
    steps = [abs(m.lat(a) - m.lat(b)) for a, b in zip(adaptive, adaptive[1:]) if b - a >= 2]
    assert max(steps) <= 0.2 * (m.lat(0) - m.lat(adaptive[-1]))


def test_a_piece_is_split_at_the_geometric_mean_of_its_delays() -> None:
    """Bandwidth falls as s/(s + d): the geometric mean splits the ladder's pieces evenly."""
    assert C.next_delays([(16, 10.0, 200.0), (16384, 1.0, 100.0)], 1) == [512]


def test_next_delays_stops_where_no_delay_fits() -> None:
    pts = [(0, 10.0, 100.0), (1, 9.0, 90.0), (2, 8.0, 80.0)]
    assert C.next_delays(pts, 5) == []
    assert C.next_delays([(0, 10.0, 300.0), (8, 5.0, 100.0)], 2) == [2, 4]


# --------------------------------------------------------------------------
# a curve's summary
# --------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.floats(1.0, 100.0), st.floats(20.0, 2000.0), st.floats(0.1, 1.0), st.floats(50.0, 400.0),
       st.floats(0.5, 10.0))
def test_summary_finds_the_known_knee_and_tail_rise(peak: float, service: float, c: float, l0: float,
                                                   t: float) -> None:
    m = Model(peak, service, c, l0, t)
    delays = fill(m, 6, 40)
    s = C.summarize_curve([m.point(d) for d in delays], unloaded_ns=l0)
    assert s.peak_gbps == pytest.approx(peak)
    assert s.unloaded_ns == l0
    assert s.knee_gbps == pytest.approx(m.knee, rel=0.03)
    assert s.knee_ns == pytest.approx(2 * l0)
    assert s.tail_rise == pytest.approx(1 + 0.8 * t, rel=0.03)
    assert s.tail_at_gbps == pytest.approx(0.8 * peak)


def test_summary_without_an_unloaded_latency_takes_the_lightest_load() -> None:
    m = Model()
    pts = [m.point(d) for d in C.initial_delays(12)]
    s = C.summarize_curve(list(reversed(pts)))
    assert s.unloaded_ns == pytest.approx(m.lat(C.MAX_DELAY_TICKS))
    assert s.points == 12


def test_a_curve_that_never_doubles_has_no_knee() -> None:
    m = Model(c=0.05)  # at most 1 + 0.05/0.05 = 2x at u = 1: the median never reaches it below the peak
    s = C.summarize_curve([m.point(d) for d in C.initial_delays(12, hi=1 << 14)], unloaded_ns=m.l0 * 1.01)
    assert math.isnan(s.knee_gbps) and math.isnan(s.knee_ns)
    assert not math.isnan(s.tail_rise)


def test_a_point_without_probe_samples_is_not_the_unloaded_latency() -> None:
    m = Model()
    pts = [m.point(d) for d in C.initial_delays(8)]
    light = max(pts, key=lambda p: p.delay_ticks)
    pts = [p if p is not light else C.CurvePoint(p.mix, p.delay_ticks, p.bw_gbps, 0.0, p.read_share, *[math.nan] * 5)
           for p in pts]
    s = C.summarize_curve(pts)
    assert s.unloaded_ns == pytest.approx(m.lat(sorted(p.delay_ticks for p in pts)[-2]))
    assert not math.isnan(s.knee_gbps)


def test_summary_refuses_mixed_or_empty_curves() -> None:
    with pytest.raises(ValueError, match="no point"):
        C.summarize_curve([])
    with pytest.raises(ValueError, match="one mix"):
        C.summarize_curve([Model(mix=100).point(0), Model(mix=50).point(10)])


def test_the_best_mix_has_the_highest_peak() -> None:
    peaks = {100: 20.0, 70: 23.0, 50: 18.0, 0: 9.0}
    sums = [C.summarize_curve([Model(peak=p, mix=m).point(d) for d in C.initial_delays(8)]) for m, p in peaks.items()]
    assert C.best_mix(sums).mix == 70
    with pytest.raises(ValueError):
        C.best_mix([])


def test_memory_sees_cached_stores_twice() -> None:
    assert C.memory_factor("store", non_temporal=False) == 2.0
    assert C.memory_factor("ntstore", non_temporal=True) == 1.0
    assert C.memory_gbps(10.0, 100.0, 2.0) == 10.0
    assert C.memory_gbps(10.0, 50.0, 2.0) == pytest.approx(15.0)
    assert C.memory_gbps(10.0, 0.0, 2.0) == pytest.approx(20.0)
    assert "read for ownership" in C.memory_note("store", 2.0, [100, 50])
    assert C.memory_note("store", 2.0, [100]) == "" and C.memory_note("ntstore", 1.0, [0]) == ""
    s = C.summarize_curve([Model(mix=50).point(d) for d in C.initial_delays(6)], factor=2.0)
    assert s.memory_factor == pytest.approx(1.5)


def test_monotone_violations_respect_the_spread() -> None:
    pts = [C.CurvePoint(100, d, bw, std, 100.0, 100, 110, 120, 130, 140) for d, bw, std in
           ((1000, 1.0, 0.1), (100, 5.0, 0.1), (10, 4.8, 0.1), (0, 3.0, 0.1))]
    assert C.monotone_violations(pts) == [(10, 0)]


def test_pooled_quantile_reads_the_repeats_histograms_together() -> None:
    one = [(100.0, 110.0, 50), (110.0, 120.0, 40), (200.0, 300.0, 10)]
    two = [(100.0, 110.0, 50), (110.0, 120.0, 40), (1000.0, 1100.0, 10)]
    assert C.pooled_quantile(one + two, 0.5) == pytest.approx(110.0)  # 100 of 200 samples below 110
    assert C.pooled_quantile(one + two, 0.95) == pytest.approx(300.0)  # the 190th sample: the top of 200-300
    assert C.pooled_quantile(one + two, 0.999) > 1000.0
    assert C.pooled_quantile(one, 1.0) == pytest.approx(300.0)
    assert math.isnan(C.pooled_quantile([], 0.5))
    with pytest.raises(ValueError):
        C.pooled_quantile(one, 0)


def test_compare_families_on_matched_mixes() -> None:
    """B: the same memory twice as slow unloaded with 80 % of the bandwidth (a CXL expander
    against DRAM): the ratios say so, at matched mixes only."""
    a = [Model(peak=20.0, l0=100.0, mix=m).point(d) for m in (100, 50) for d in C.initial_delays(16)]
    b = [Model(peak=16.0, l0=200.0, mix=m).point(d) for m in (100, 0) for d in C.initial_delays(16)]
    summary, points = C.compare_families(a, b)
    assert [s["mix"] for s in summary] == [100]
    (s,) = summary
    assert s["peak_gbps_b_over_a"] == pytest.approx(0.8)
    assert s["unloaded_ns_b_over_a"] == pytest.approx(2.0, rel=0.01)
    assert s["knee_gbps_b_over_a"] == pytest.approx(0.8, rel=0.03)
    assert {p["mix"] for p in points} == {100}
    light = [p for p in points if p["bw_gbps"] < 0.05 * 16.0 and not math.isnan(p["p50_b_over_a"])]
    assert light and all(p["p50_b_over_a"] == pytest.approx(2.0, rel=0.05) for p in light)
    assert any(math.isnan(p["p50_ns_b"]) for p in points)  # beyond B's peak: no value, not an extrapolation
    curve = [Model().point(d) for d in C.initial_delays(8)]
    lightest = min(p.bw_gbps for p in curve)
    assert math.isnan(C.latency_at(curve, lightest / 2)) and math.isnan(C.latency_at(curve, 21.0))
    assert C.latency_at(curve, lightest) == pytest.approx(Model().lat(C.MAX_DELAY_TICKS))
    with pytest.raises(ValueError, match="no read share in both"):
        C.compare_families(a, [Model(mix=0).point(d) for d in C.initial_delays(4)])


# --------------------------------------------------------------------------
# a recorded family
# --------------------------------------------------------------------------
def recorded() -> list[C.CurvePoint]:
    from pmemlab.cli.curves import read_curves_csv

    return read_curves_csv(FIXTURE)


def test_recorded_family_summaries() -> None:
    """A DRAM family recorded with `pmemlab curves --backend user --mixes 100,50,0 --points 12` in a
    KVM guest on a loaded 2-core host: 3 curves of 12 points, each summary consistent with its
    points (on this host the probe's median falls as load grows: no knee, docs/curves.md)."""
    pts = recorded()
    fam = C.family(pts)
    assert list(fam) == [100, 50, 0]
    sums = {}
    for mix, curve in fam.items():
        s = sums[mix] = C.summarize_curve(curve, factor=2.0)
        assert s.mix == mix and s.points == len(curve) == 12
        assert s.peak_gbps == max(p.bw_gbps for p in curve) and curve[-1].delay_ticks == 0
        assert s.unloaded_ns == curve[0].p50_ns and curve[0].delay_ticks == max(p.delay_ticks for p in curve)
        assert math.isnan(s.knee_gbps)  # never twice the lightest load's median
        assert 1.0 <= s.tail_rise < 10.0
        assert s.memory_factor == pytest.approx(1 + (100 - mix) / 100)  # the read share achieved is the one asked
        for p in curve:
            assert p.p50_ns <= p.p90_ns <= p.p99_ns <= p.p999_ns <= p.max_ns
            assert 2 <= p.repeats <= 5
    assert C.best_mix(list(sums.values())).mix == 0  # stores: the highest issued bandwidth on this host
    assert [v for m in fam for v in C.monotone_violations(fam[m])] == [(16, 11)]


def test_the_default_window_gives_the_probe_a_region_of_several_times_the_largest_cache() -> None:
    """The probe chases its per-thread slice of the window: on a machine with many threads a fixed
    256 MiB window left it a few MiB, inside the last-level cache (64 threads: 4 MiB), measuring the
    cache. The default window grows so the slice is PROBE_CACHE_MULTIPLE x the largest cache,
    capped at the target (then a note says so)."""
    MiB, K = C.MiB, C.PROBE_CACHE_MULTIPLE
    assert C.working_set_for(2, 32 * MiB) == 256 * MiB  # 2 x 4 x 32 MiB: the default suffices
    ws = C.working_set_for(64, 32 * MiB)
    assert ws % MiB == 0 and C.probe_region(ws, 64) >= K * 32 * MiB and ws < 64 * K * 32 * MiB + 64 * MiB
    assert C.working_set_for(64, 0) == 256 * MiB  # no cache reported: the default
    assert C.working_set_for(64, 32 * MiB, target_size=1 << 30) == 1 << 30  # at most the target
    assert C.working_set_for(4, 1 * MiB, target_size=(100 << 20) + 5) == 100 * MiB
    assert C.cache_note(C.probe_region(256 * MiB, 64), 32 * MiB).startswith("the probe's region (4 MiB")
    assert C.cache_note(C.probe_region(ws, 64), 32 * MiB) == "" and C.cache_note(4 * MiB, 0) == ""
