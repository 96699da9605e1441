"""Summaries across repeats: the t quantile and 95 % CI against scipy."""

from __future__ import annotations

import math
import random

import pytest

from pmemlab.analysis.stats import betainc, summarize, t_cdf, t_ppf

scipy_stats = pytest.importorskip("scipy.stats")
scipy_special = pytest.importorskip("scipy.special")


@pytest.mark.parametrize("df", [1, 2, 3, 4, 5, 7, 10, 19, 30, 59, 120, 1000])
@pytest.mark.parametrize("p", [0.5, 0.6, 0.9, 0.95, 0.975, 0.995, 0.9995, 0.025])
def test_t_ppf_matches_scipy(df, p):
    # scipy 1.10's t.ppf itself is good to ~1e-9 relative; its cdf is exact to rounding
    assert t_ppf(p, df) == pytest.approx(scipy_stats.t.ppf(p, df), rel=1e-8, abs=1e-9)
    assert scipy_stats.t.cdf(t_ppf(p, df), df) == pytest.approx(p, rel=1e-13)


@pytest.mark.parametrize("df", [1, 3, 12, 80])
@pytest.mark.parametrize("t", [-5.0, -1.2, 0.0, 0.3, 2.0, 9.0])
def test_t_cdf_matches_scipy(df, t):
    assert t_cdf(t, df) == pytest.approx(scipy_stats.t.cdf(t, df), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("a,b,x", [(0.5, 0.5, 0.3), (2.0, 3.0, 0.7), (10.0, 0.5, 0.95), (50.0, 0.5, 0.99)])
def test_betainc_matches_scipy(a, b, x):
    assert betainc(a, b, x) == pytest.approx(scipy_special.betainc(a, b, x), rel=1e-10)


@pytest.mark.parametrize("n", [2, 3, 5, 10, 40])
def test_summary_ci_matches_scipy(n):
    rng = random.Random(n)
    xs = [rng.gauss(10.0, 2.0) for _ in range(n)]
    s = summarize(xs)
    mean = sum(xs) / n
    sd = scipy_stats.tstd(xs)
    lo, hi = scipy_stats.t.interval(0.95, n - 1, loc=mean, scale=scipy_stats.sem(xs))
    assert s.n == n
    assert s.mean == pytest.approx(mean, rel=1e-12)
    assert s.stddev == pytest.approx(sd, rel=1e-12)
    assert s.ci95_lo == pytest.approx(lo, rel=1e-8)
    assert s.ci95_hi == pytest.approx(hi, rel=1e-8)
    assert s.ci95_rel == pytest.approx((hi - lo) / 2 / abs(mean), rel=1e-8)


def test_summary_edge_cases():
    s0 = summarize([])
    assert s0.n == 0 and math.isnan(s0.mean)
    s1 = summarize([3.0, float("nan")])
    assert s1.n == 1 and s1.mean == 3.0 and math.isnan(s1.ci95) and math.isnan(s1.ci95_rel)
    s2 = summarize([2.0, 2.0, 2.0])
    assert s2.stddev == 0.0 and s2.ci95 == 0.0
    with pytest.raises(ValueError):
        t_ppf(1.0, 3)
