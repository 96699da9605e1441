"""Levels in a latency-vs-region-size curve: a piecewise-constant fit of log latency over log
size, the number of levels chosen by BIC (docs/card.md, docs/method.md 'Device card').

- Points sorted by size; y = ln(latency). For every k = 1..MAX_LEVELS the segmentation into k
  contiguous runs of at least MIN_SEG points (and half an octave) with the least total absolute
  deviation from each run's median (exact dynamic programming, O(k n^2)) is found.
- Each k is scored by BIC under Laplace noise, scale b = max(mean deviation, NOISE_FLOOR):
  -2 ln L = 2 n ln(2 b) + 2 cost / b, 2k parameters (k medians, k-1 change points, the scale);
  the least BIC wins. Medians and absolute deviations make single outliers harmless.
- Adjacent levels closer than MIN_STEP (a ratio of latencies, not of sizes) are merged.
- A knee's capacity: the size where the curve, walking up from the lower level, first crosses a
  quarter of the step (interpolated in log size); for a cache whose misses grow as 1 - C/S this
  lands at 4/3 C. Its confidence: the BIC posterior of the fit with the knee against the fit
  with its two levels merged (inference.bic_confidence).
- Uncertain: fewer than MIN_POINTS points, or no knee (one level: a curve without structure).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import numpy.typing as npt

Arr = npt.NDArray[np.float64]

from pmemlab.analysis.inference import Inference, bic_confidence

MIN_POINTS = 8
MIN_SEG = 3
MIN_SEG_OCTAVES = 0.5
MAX_LEVELS = 8
NOISE_FLOOR = 0.02  # ln units: 2 % (a timer's grain and run-to-run drift are not levels)
MIN_STEP = math.log(1.15)
ONSET = 0.25

METHOD = ("piecewise-constant fit of ln(latency) over log2(size), exact DP over segmentations, "
          "number of levels by BIC (Laplace noise); capacity where the curve crosses 1/4 of the step")


@dataclass
class Level:
    latency_ns: float
    from_bytes: int
    to_bytes: int
    points: int
    spread: float  # median absolute deviation of ln(latency) in the level

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Knee:
    capacity_bytes: float
    below_ns: float
    above_ns: float
    confidence: float
    delta_bic: float
    last_below: int  # the sizes either side of the change point
    first_above: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class KneeFit:
    levels: list[Level] = field(default_factory=list)
    knees: list[Knee] = field(default_factory=list)
    uncertain: bool = False
    reason: str = ""
    bic: float = math.nan


def _costs(y: Arr, x: Arr) -> Arr:
    n = len(y)
    cost = np.full((n + 1, n + 1), np.inf)
    for i in range(n):
        for j in range(i + MIN_SEG, n + 1):
            if x[j - 1] - x[i] + 1e-9 < MIN_SEG_OCTAVES and not (i == 0 and j == n):
                continue
            seg = y[i:j]
            cost[i, j] = float(np.abs(seg - np.median(seg)).sum())
    return cost


def _segmentations(cost: Arr, n: int, kmax: int) -> dict[int, tuple[float, list[int]]]:
    """k -> (least cost, the run starts) for every feasible k."""
    best = np.full((kmax + 1, n + 1), np.inf)
    back = np.zeros((kmax + 1, n + 1), dtype=int)
    best[0, 0] = 0.0
    for k in range(1, kmax + 1):
        for j in range(1, n + 1):
            cand = best[k - 1, :j] + cost[:j, j]
            i = int(np.argmin(cand))
            best[k, j], back[k, j] = cand[i], i
    out: dict[int, tuple[float, list[int]]] = {}
    for k in range(1, kmax + 1):
        if not np.isfinite(best[k, n]):
            continue
        starts, j = [], n
        for kk in range(k, 0, -1):
            i = int(back[kk, j])
            starts.append(i)
            j = i
        out[k] = (float(best[k, n]), sorted(starts))
    return out


def _bic(total: float, n: int, k: int) -> float:
    b = max(total / n, NOISE_FLOOR)
    return 2 * n * math.log(2 * b) + 2 * total / b + 2 * k * math.log(n)


def _seg_cost(y: Arr, i: int, j: int) -> float:
    seg = y[i:j]
    return float(np.abs(seg - np.median(seg)).sum())


def fit_levels(sizes: Sequence[float], latencies: Sequence[float]) -> KneeFit:
    """The levels and knees of a latency-vs-size curve (see the module docstring)."""
    pts = sorted((float(s), float(v)) for s, v in zip(sizes, latencies)
                 if s > 0 and v > 0 and math.isfinite(v))
    n = len(pts)
    if n < MIN_POINTS:
        return KneeFit(uncertain=True, reason=f"{n} points: at least {MIN_POINTS} are needed")
    x = np.log2([p[0] for p in pts])
    y = np.log([p[1] for p in pts])
    cost = _costs(y, x)
    segs = _segmentations(cost, n, min(MAX_LEVELS, n // MIN_SEG))
    scored = {k: (_bic(c, n, k), starts) for k, (c, starts) in segs.items()}
    k = min(scored, key=lambda kk: scored[kk][0])
    starts = scored[k][1]
    # merge neighbours closer than MIN_STEP, the smallest step first
    while len(starts) > 1:
        bounds = starts + [n]
        meds = [float(np.median(y[bounds[i]:bounds[i + 1]])) for i in range(len(starts))]
        steps = [abs(meds[i + 1] - meds[i]) for i in range(len(meds) - 1)]
        i = int(np.argmin(steps))
        if steps[i] >= MIN_STEP:
            break
        del starts[i + 1]
    bounds = starts + [n]
    total = sum(_seg_cost(y, bounds[i], bounds[i + 1]) for i in range(len(starts)))
    bic = _bic(total, n, len(starts))
    levels = []
    for i in range(len(starts)):
        seg = y[bounds[i]:bounds[i + 1]]
        med = float(np.median(seg))
        levels.append(Level(math.exp(med), int(pts[bounds[i]][0]), int(pts[bounds[i + 1] - 1][0]),
                            len(seg), float(np.median(np.abs(seg - med)))))
    knees = []
    for i in range(1, len(starts)):
        a, b, c = bounds[i - 1], bounds[i], bounds[i + 1]
        merged = total - _seg_cost(y, a, b) - _seg_cost(y, b, c) + _seg_cost(y, a, c)
        dbic = _bic(merged, n, len(starts) - 1) - bic
        lo, hi = math.log(levels[i - 1].latency_ns), math.log(levels[i].latency_ns)
        cap = _onset(x[a:c], y[a:c], lo, hi)
        knees.append(Knee(2.0 ** cap, levels[i - 1].latency_ns, levels[i].latency_ns,
                          bic_confidence(dbic), dbic, int(pts[b - 1][0]), int(pts[b][0])))
    fit = KneeFit(levels, knees, bic=bic)
    if not knees:
        fit.uncertain, fit.reason = True, "one level: the curve shows no knee"
    return fit


def _onset(x: Arr, y: Arr, lo: float, hi: float) -> float:
    """log2 size where y, walking up in size from the lower level, first crosses lo + ONSET (hi - lo)."""
    t = lo + ONSET * (hi - lo)
    sign = 1.0 if hi >= lo else -1.0
    # smooth by a running median of three so a lone outlier does not start the knee
    ys = np.array([np.median(y[max(0, i - 1):i + 2]) for i in range(len(y))])
    for i in range(1, len(ys)):
        if (ys[i] - t) * sign >= 0 and (ys[i - 1] - t) * sign < 0:
            f = (t - ys[i - 1]) / (ys[i] - ys[i - 1])
            return float(x[i - 1] + f * (x[i] - x[i - 1]))
    return float(x[0])


def levels_inference(name: str, sizes: Sequence[float], latencies: Sequence[float],
                     evidence: list[dict[str, Any]] | None = None) -> Inference:
    """The card's line for one latency-vs-size curve."""
    fit = fit_levels(sizes, latencies)
    ev = evidence if evidence is not None else [
        {"size_bytes": int(s), "latency_ns": float(v)} for s, v in sorted(zip(sizes, latencies))]
    if fit.uncertain:
        return Inference(name, None, "bytes", 0.0, METHOD, ev, True, fit.reason,
                         {"levels": [lv.as_dict() for lv in fit.levels]})
    return Inference(name, [round(k.capacity_bytes) for k in fit.knees], "bytes",
                     min(k.confidence for k in fit.knees), METHOD, ev, False, "",
                     {"levels": [lv.as_dict() for lv in fit.levels],
                      "knees": [k.as_dict() for k in fit.knees], "bic": fit.bic})
