"""The write tail: how often and how slow the rare slow writes are, from a latency histogram
(FAST'20 fig 3; docs/card.md).

The slow writes are a separate mode: the threshold is the first gap above the median where
consecutive occupied latencies differ by at least GAP (a factor: an empty stretch of the
histogram), not a fixed multiple of the median. Rate = writes above the threshold / all;
slowness = their median / the overall median. Without a gap: no slow mode, the rate bounded by
the rule of three (3 / n). Confidence: 1 - 1/sqrt(k) for k slow writes (Poisson). Uncertain
below MIN_SAMPLES writes."""

from __future__ import annotations

from typing import Any, Sequence

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


K_MEDIAN = 4.0  # the fraction of writes slower than this many medians
DEPENDS_Z = 3.0  # two hotspot sizes' slow-write rates differ by this many standard errors ...
DEPENDS_RATIO = 2.0  # ... and by this factor: the tail depends on the hotspot size
BY_SIZE_METHOD = ("per hotspot size: the slow mode (" + METHOD + "), p99.9/p50 and the fraction of writes "
                  f"above {K_MEDIAN:g}x the median from the pooled histogram; depends on the hotspot size when "
                  f"two sizes' fractions differ by > {DEPENDS_Z:g} standard errors and > {DEPENDS_RATIO:g}x")


def _quantile(lo: npt.NDArray[np.float64], hi: npt.NDArray[np.float64], w: npt.NDArray[np.int64], q: float) -> float:
    c = np.cumsum(w)
    i = int(np.searchsorted(c, q * c[-1]))
    seen = c[i - 1] if i else 0
    return float(lo[i] + (hi[i] - lo[i]) * (q * c[-1] - seen) / w[i])


def tail_by_size(name: str, hists: dict[int, Sequence[tuple[float, float, int]]]) -> Inference:
    """The write tail of a hotspot per size: `hists` maps the hotspot size (B) to its latency
    histogram buckets (lo_ns, hi_ns, count), repeats pooled. The value: the largest slow-write
    rate, p99.9/p50 and fraction above K_MEDIAN x the median over the sizes, and whether they
    depend on the size; `detail.sizes` holds each size's numbers."""
    per: list[dict[str, Any]] = []
    ev: list[dict[str, Any]] = []
    for size in sorted(hists):
        b = sorted((float(lo), float(hi), int(c)) for lo, hi, c in hists[size] if int(c) > 0)
        ev += [{"hotspot_bytes": int(size), "lo_ns": lo, "hi_ns": hi, "count": c} for lo, hi, c in b]
        n = sum(c for _, _, c in b)
        if n < MIN_SAMPLES:
            continue
        lo = np.array([x[0] for x in b])
        hi = np.array([x[1] for x in b])
        w = np.array([x[2] for x in b])
        one = tail_inference(f"{name}@{size}", list((lo + hi) / 2), list(w))
        p50, p999 = _quantile(lo, hi, w, 0.5), _quantile(lo, hi, w, 0.999)
        above = int(w[lo >= K_MEDIAN * p50].sum())
        per.append({"hotspot_bytes": int(size), "writes": n, "p50_ns": p50, "p999_ns": p999,
                    "p999_over_p50": p999 / p50 if p50 > 0 else float("inf"), "above_k": above,
                    "frac_above_k": above / n, "slow_rate": one.value["rate"], "slowness": one.value["slowness"],
                    "confidence": one.confidence})
    detail: dict[str, Any] = {"k_median": K_MEDIAN, "sizes": per}
    if len(per) < 2:
        return Inference(name, None, "per write", 0.0, BY_SIZE_METHOD, ev, True,
                         f"{len(per)} hotspot size(s) with {MIN_SAMPLES} writes or more: at least 2 are needed", detail)
    lo_s = min(per, key=lambda p: float(p["frac_above_k"]))
    hi_s = max(per, key=lambda p: float(p["frac_above_k"]))
    pool = (lo_s["above_k"] + hi_s["above_k"]) / (lo_s["writes"] + hi_s["writes"])
    se = float(np.sqrt(pool * (1 - pool) * (1 / lo_s["writes"] + 1 / hi_s["writes"])))
    z = (hi_s["frac_above_k"] - lo_s["frac_above_k"]) / se if se > 0 else 0.0
    depends = bool(z > DEPENDS_Z and hi_s["frac_above_k"] > DEPENDS_RATIO * max(lo_s["frac_above_k"], 0.5 / lo_s["writes"]))
    detail.update({"z": z, "most_at": hi_s["hotspot_bytes"], "least_at": lo_s["hotspot_bytes"]})
    value = {"frac_above_k": hi_s["frac_above_k"], "p999_over_p50": max(p["p999_over_p50"] for p in per),
             "slow_rate": max(p["slow_rate"] for p in per), "depends_on_size": depends,
             "worst_hotspot_bytes": hi_s["hotspot_bytes"]}
    reason = (f"slow writes (> {K_MEDIAN:g}x median) {'depend' if depends else 'do not depend'} on the hotspot size: "
              f"{hi_s['frac_above_k']:.2g} at {hi_s['hotspot_bytes']} B vs {lo_s['frac_above_k']:.2g} at "
              f"{lo_s['hotspot_bytes']} B (z {z:.1f})")
    return Inference(name, value, "per write", min(p["confidence"] for p in per), BY_SIZE_METHOD, ev, False,
                     reason, detail)
