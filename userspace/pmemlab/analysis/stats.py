"""Summaries across repeats: mean, sample standard deviation, Student-t 95 % CI.

No scipy at run time: the t quantile is computed from the regularised incomplete
beta function (continued fraction, as in Numerical Recipes 6.4) and inverted by
bisection. The tests compare it with scipy.stats.t.ppf.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence


_FPMIN = 1e-300  # what a denominator near zero is replaced by (Lentz's method)


def _nonzero(x: float) -> float:
    return _FPMIN if abs(x) < _FPMIN else x


def _lentz(aa: float, c: float, d: float) -> tuple[float, float]:
    """One term of the continued fraction by Lentz's method: the next C and 1/D."""
    return _nonzero(1.0 + aa / c), 1.0 / _nonzero(1.0 + aa * d)


def _betacf(a: float, b: float, x: float) -> float:
    max_iter, eps = 300, 3e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 / _nonzero(1.0 - qab * x / qap)
    h = d
    for m in range(1, max_iter + 1):
        m2 = 2 * m
        c, d = _lentz(m * (b - m) * x / ((qam + m2) * (a + m2)), c, d)  # the even term
        h *= d * c
        c, d = _lentz(-(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)), c, d)  # the odd term
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    bt = math.exp(lbt)
    if x < (a + 1.0) / (a + b + 2.0):
        return bt * _betacf(a, b, x) / a
    return 1.0 - bt * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    x = df / (df + t * t)
    tail = 0.5 * betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def t_ppf(p: float, df: float) -> float:
    """Quantile of Student's t: the t with t_cdf(t, df) = p."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if df <= 0:
        raise ValueError("df must be positive")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_ppf(1.0 - p, df)
    q = 1.0 - p  # invert the upper tail directly: no cancellation in 1 - cdf
    lo, hi = 0.0, 1.0
    while _t_tail(hi, df) > q:
        hi *= 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(300):
        mid = 0.5 * (lo + hi)
        if _t_tail(mid, df) > q:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 4e-16 * hi:
            break
    return 0.5 * (lo + hi)


def _t_tail(t: float, df: float) -> float:
    """P(T > t) for t >= 0."""
    return 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    stddev: float  # sample standard deviation (n - 1)
    ci95: float  # half-width of the 95 % confidence interval of the mean

    @property
    def ci95_lo(self) -> float:
        return self.mean - self.ci95

    @property
    def ci95_hi(self) -> float:
        return self.mean + self.ci95

    @property
    def ci95_rel(self) -> float:
        """Half-width relative to the mean (nan when undefined)."""
        if self.n < 2 or self.mean == 0 or math.isnan(self.ci95):
            return math.nan
        return abs(self.ci95 / self.mean)


def summarize(values: Iterable[float], confidence: float = 0.95) -> Summary:
    xs: Sequence[float] = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    n = len(xs)
    if n == 0:
        return Summary(0, math.nan, math.nan, math.nan)
    mean = math.fsum(xs) / n
    if n == 1:
        return Summary(1, mean, math.nan, math.nan)
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    sd = math.sqrt(var)
    half = t_ppf(0.5 + confidence / 2.0, n - 1) * sd / math.sqrt(n)
    return Summary(n, mean, sd, half)


CI_REPEATS = 3  # from this many repeats a figure draws the 95 % CI of the mean; below, the repeats' range
SPREAD_CI, SPREAD_RANGE, SPREAD_NONE = "ci95", "min-max", ""


def spread_of(values: Sequence[float], non_negative: bool = True) -> tuple[float, float, str]:
    """The spread a figure draws around the mean of repeats `values`: (low end, high end, kind).

    The rule of every figure (docs/method.md, "Figures"): with fewer than 3 repeats a Student-t
    interval is 4.3 (2 repeats: 12.7) standard errors wide and says more about t than about the
    runs, so the figure shows the repeats' range (min-max) instead; from 3 repeats the 95 %
    confidence interval of the mean, unless it would reach below 0 for a quantity that cannot
    (bandwidth, latency), where the range is drawn again. One repeat: no spread."""
    clean = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not clean:
        return math.nan, math.nan, SPREAD_NONE
    mean = sum(clean) / len(clean)
    if len(clean) == 1:
        return mean, mean, SPREAD_NONE
    if len(clean) >= CI_REPEATS:
        half = summarize(clean).ci95
        if math.isfinite(half) and not (non_negative and mean - half < 0):
            return mean - half, mean + half, SPREAD_CI
    return min(clean), max(clean), SPREAD_RANGE
