"""The card's bandwidth and loaded-latency lines, read/write asymmetry and prefetch (docs/card.md).

- loaded_latency: from a short family of `pmemlab curves` (analysis/curves.py: its points and
  summaries), the peak read bandwidth (the 100 % read curve), the peak write bandwidth (the 0 %
  read curve), the unloaded latency (the probe op alone), and the probe's median latency at
  50/80/95 % of the peak read bandwidth (curves.latency_at, interpolated on the curve up to its
  peak). Confidence: the share of those three loads the curve reaches, times 1 - the peak's
  relative spread over the repeats (capped to 0..1). Uncertain without a read curve of 3 points.
- rw_asymmetry: peak read bandwidth / peak write bandwidth (from the same curves). Uncertain where
  a curve did not load the memory: the probe's median at the curve's peak less than LOADED_RISE x
  its median at the lightest load. Such a peak is what the load threads can issue (a core's
  outstanding misses for loads; ntstores need no read for ownership), not the memory's, and a
  ratio of two such limits says nothing about the device. loaded_latency keeps its numbers and
  says the same in its reason.
- prefetch: the median latency of 64 B loads in sequence over the median of random ones, at a
  region past the last cache: well below 1 when the prefetchers bring the next lines ahead of the
  loads. Confidence from the repeats: 1 - the larger relative spread of the two medians."""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from pmemlab.analysis import curves as CV
from pmemlab.analysis.inference import Inference

LOADS = (0.5, 0.8, 0.95)
MIN_CURVE = 3
LOADED_RISE = 1.2  # the probe's median at a curve's peak over its lightest load's: below, the memory was not loaded
PREFETCH_BELOW = 0.8  # sequential at most this share of random: the prefetchers hide latency
LOADED_METHOD = ("a short `pmemlab curves` family (100 % and 0 % reads, throttled load threads, probe latency "
                 "beside them): peaks, the unloaded latency alone, p50 at 50/80/95 % of the read peak "
                 "(analysis/curves.latency_at)")
ASYM_METHOD = "peak read bandwidth / peak write bandwidth of the curves family"
PREFETCH_METHOD = ("median latency of timed 64 B loads, sequential over random, at a region past the last "
                   "cache (latency mode); below 0.8: the prefetchers hide latency")


def _center(values: Sequence[float]) -> float:
    """The repeats' median: a burst of noise in one repeat does not move it."""
    return float(np.median(values))


def _spread(values: Sequence[float]) -> float:
    v = [x for x in values if x is not None and math.isfinite(x)]
    if len(v) < 2 or not np.median(v):
        return 0.0
    return float((max(v) - min(v)) / np.median(v))


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    """NaN (a curve that does not reach a knee) as None: the card is JSON."""
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()}


def _ev(points: Sequence[CV.CurvePoint]) -> list[dict[str, Any]]:
    return [_clean({"mix_pct": p.mix, "delay_ticks": p.delay_ticks, "bw_gbps": p.bw_gbps, "bw_std": p.bw_std,
                    "p50_ns": p.p50_ns, "p999_ns": p.p999_ns}) for p in CV.by_load(points)]


def rise(curve: Sequence[CV.CurvePoint]) -> float:
    """The probe's median at the curve's peak bandwidth over its median at the lightest load (the
    curve from the lightest load on, as CV.family gives it); NaN without both medians."""
    top = max(curve, key=lambda p: p.bw_gbps)
    base = next((p.p50_ns for p in curve if math.isfinite(p.p50_ns) and p.p50_ns > 0), math.nan)
    return top.p50_ns / base if math.isfinite(base) and math.isfinite(top.p50_ns) else math.nan


def unloaded_curves(fam: dict[int, list[CV.CurvePoint]]) -> list[str]:
    """What the read (100 %) and write (0 %) curves of the family say of not having loaded the memory."""
    out = []
    for mix, what in ((100, "read"), (0, "write")):
        curve = fam.get(mix, [])
        r = rise(curve) if curve else math.nan
        if math.isfinite(r) and r < LOADED_RISE:
            peak = max(p.bw_gbps for p in curve)
            out.append(f"the {what} curve did not load the memory (p50 x{r:.2f} at its peak of {peak:.3g} GB/s): "
                       f"that peak is what the load threads can issue, not the memory's")
    return out


def loaded_inference(name: str, points: Sequence[CV.CurvePoint], unloaded_ns: float | None) -> Inference:
    fam = CV.family(points)
    read = fam.get(100, [])
    ev = _ev(points)
    if len(read) < MIN_CURVE:
        return Inference(name, None, "ns", 0.0, LOADED_METHOD, ev, True,
                         f"the read curve has {len(read)} point(s): at least {MIN_CURVE} are needed")
    rs = CV.summarize_curve(read, unloaded_ns)
    ws = CV.summarize_curve(fam[0], None) if len(fam.get(0, [])) else None
    at = {f"p50_at_{round(f * 100)}pct_ns": CV.latency_at(read, f * rs.peak_gbps) for f in LOADS}
    value: dict[str, Any] = {"peak_read_gbps": rs.peak_gbps, "peak_write_gbps": ws.peak_gbps if ws else None,
                             "unloaded_ns": rs.unloaded_ns,
                             **{k: (None if math.isnan(v) else v) for k, v in at.items()}}
    reached = sum(1 for v in at.values() if not math.isnan(v)) / len(LOADS)
    top = max(read, key=lambda p: p.bw_gbps)
    rel = top.bw_std / top.bw_gbps if top.bw_gbps > 0 else 1.0
    conf = max(0.0, min(1.0, reached * (1 - rel)))
    missing = [k for k, v in at.items() if math.isnan(v)]
    notes = ([f"the read curve does not reach {', '.join(missing)}"] if missing else []) + unloaded_curves(fam)
    reason = "; ".join(notes)
    return Inference(name, value, "ns", conf, LOADED_METHOD, ev, False, reason,
                     {"read": _clean(rs.record()), "write": _clean(ws.record()) if ws else None})


def asymmetry_inference(name: str, points: Sequence[CV.CurvePoint]) -> Inference:
    fam = CV.family(points)
    ev = _ev(points)
    read, write = fam.get(100, []), fam.get(0, [])
    if len(read) < MIN_CURVE or len(write) < MIN_CURVE:
        return Inference(name, None, "x", 0.0, ASYM_METHOD, ev, True,
                         f"read curve {len(read)}, write curve {len(write)} point(s): {MIN_CURVE} each are needed")
    r, w = max(p.bw_gbps for p in read), max(p.bw_gbps for p in write)
    if w <= 0:
        return Inference(name, None, "x", 0.0, ASYM_METHOD, ev, True, "the write curve moved no bytes")
    tr, tw = max(read, key=lambda p: p.bw_gbps), max(write, key=lambda p: p.bw_gbps)
    rel = math.hypot(tr.bw_std / r if r else 1.0, tw.bw_std / w)
    detail = {"peak_read_gbps": r, "peak_write_gbps": w, "read_rise": _finite(rise(read)),
              "write_rise": _finite(rise(write))}
    idle = unloaded_curves(fam)
    if idle:
        return Inference(name, r / w, "x", 0.0, ASYM_METHOD, ev, True,
                         f"read {r:.3g} GB/s, write {w:.3g} GB/s; " + "; ".join(idle), detail)
    return Inference(name, r / w, "x", max(0.0, min(1.0, 1 - rel)), ASYM_METHOD, ev, False,
                     f"read {r:.3g} GB/s, write {w:.3g} GB/s", detail)


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def prefetch_inference(name: str, seq_ns: Sequence[float], rand_ns: Sequence[float], region: int | None) -> Inference:
    ev = ([{"pattern": "seq", "latency_ns": float(v), "size_bytes": region} for v in seq_ns]
          + [{"pattern": "rand", "latency_ns": float(v), "size_bytes": region} for v in rand_ns])
    # a sequential median of 0 ns is a measurement, not a missing one: every load cost no more than
    # the empty bracket subtracted from it (the prefetcher had the line in L1 first); a fast host's
    # seq runs read 0 and the line went "uncertain" with three runs in hand
    s = [float(v) for v in seq_ns if v is not None and math.isfinite(v) and v >= 0]
    r = [float(v) for v in rand_ns if v is not None and math.isfinite(v) and v > 0]
    if not s or not r:
        return Inference(name, None, "x", 0.0, PREFETCH_METHOD, ev, True,
                         f"{len(s)} sequential, {len(r)} random runs: one of each is needed")
    ratio = _center(s) / _center(r)
    conf = max(0.0, min(1.0, 1 - max(_spread(s), _spread(r))))
    verdict = "the prefetchers hide latency" if ratio < PREFETCH_BELOW else "no prefetch benefit seen"
    return Inference(name, ratio, "x", conf, PREFETCH_METHOD, ev, False,
                     f"{verdict}: sequential {_center(s):.3g} ns vs random {_center(r):.3g} ns",
                     {"seq_ns": _center(s), "rand_ns": _center(r), "region_bytes": region})
