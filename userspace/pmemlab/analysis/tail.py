"""The write tail: how often and how slow the rare slow writes are, from a latency histogram
(FAST'20 fig 3; docs/card.md).

The slow writes are a separate mode: the threshold is the first gap above the median where
consecutive occupied latencies differ by at least GAP (a factor: an empty stretch of the
histogram), not a fixed multiple of the median. Rate = writes above the threshold / all;
slowness = their median / the overall median. Without a gap: no slow mode, the rate bounded by
the rule of three (3 / n). Confidence: 1 - 1/sqrt(k) for k slow writes (Poisson). Uncertain
below MIN_SAMPLES writes."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import numpy.typing as npt

from pmemlab.analysis.inference import Inference

GAP = 2.0
MIN_SAMPLES = 1000
METHOD = ("slow mode above the first empty gap of a factor 2 over the median of the write-latency "
          "histogram; rate = slow/all, slowness = median(slow)/median(all)")


def _weighted_median(v: npt.NDArray[np.float64], w: npt.NDArray[np.int64]) -> float:
    c = np.cumsum(w)
    return float(v[np.searchsorted(c, c[-1] / 2)])


def tail_inference(name: str, latency_ns: Sequence[float], counts: Sequence[int]) -> Inference:
    pairs = sorted((float(v), int(c)) for v, c in zip(latency_ns, counts) if c > 0)
    n = sum(c for _, c in pairs)
    ev = [{"latency_ns": v, "count": c} for v, c in pairs]
    if n < MIN_SAMPLES:
        return Inference(name, None, "per write", 0.0, METHOD, ev, True,
                         f"{n} writes: at least {MIN_SAMPLES} are needed")
    v = np.array([p[0] for p in pairs])
    w = np.array([p[1] for p in pairs])
    med = _weighted_median(v, w)
    thr = None
    for i in range(1, len(v)):
        if v[i - 1] >= med and v[i - 1] > 0 and v[i] / v[i - 1] >= GAP:
            thr = v[i]
            break
    if thr is None:
        return Inference(name, {"rate": 0.0, "rate_below": 3.0 / n, "slowness": None}, "per write",
                         1.0, METHOD, ev, False, f"no slow mode in {n} writes (rate < {3.0 / n:.2g})",
                         {"median_ns": med, "writes": n})
    slow = v >= thr
    k = int(w[slow].sum())
    rate = k / n
    slowness = _weighted_median(v[slow], w[slow]) / med if med > 0 else float("inf")
    return Inference(name, {"rate": rate, "slowness": slowness}, "per write", 1 - 1 / np.sqrt(k),
                     METHOD, ev, False, "",
                     {"median_ns": med, "threshold_ns": float(thr), "slow_writes": k, "writes": n})
