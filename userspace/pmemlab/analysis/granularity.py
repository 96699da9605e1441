"""Access granularity from random-access bandwidth vs access size (docs/card.md).

A device that works in G-byte units serves an access of a <= G bytes at the cost of G: its
operation rate (bandwidth / a) is flat up to G and falls above it. The unit: the largest size
whose rate is within RUN_TOL of the highest rate. The first fall is the unit, not a later shape:
on this project's EPYC test host (DRAM, 64 B lines) random reads fall from 64 to 128 B and are
flat again from 128 to 256 B (the prefetchers fetch the next lines), and a single hinge fit put
the break at 181 B (read as 256 B).
Sizes below the peak (partial-line writes, slower than whole lines) do not count.

Confidence: the share of resamples that find the same unit; each resample takes, per size, one
of its repeats at random plus noise of FLOOR (ln units), so a size measured once still varies.
Uncertain with fewer than MIN_POINTS sizes, a unit at the largest size (the rate never falls),
or a rate that does not keep falling above the unit (slope of ln rate over log2 size above
-MIN_FALL).

The same shape is also drawn by a CPU that cannot keep enough accesses in flight: one thread's
random accesses are bound by latency and parallelism, not by the memory's unit. Held against
the curve with more threads (`held_against_threads`): a memory working in G-byte units keeps its
unit as threads are added; a unit that moves is the CPU's, and the line is uncertain."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

import numpy as np

from pmemlab.analysis.inference import Inference

MIN_POINTS = 5
MIN_FALL = 0.3  # the rate must fall at least as a^-0.3 above the unit
RUN_TOL = 0.2  # the flat run: rates within 20 % of the peak's
FLOOR = 0.03  # ln units of noise every resample adds (a size's repeats add their own spread)
RESAMPLES = 200
AGREE = 1.5  # units with 1 and with N threads within this factor: the same unit
METHOD = ("the unit: the largest access size whose operation rate (bandwidth / access size) is within "
          f"{RUN_TOL:.0%} of the highest; confidence: the share of "
          f"{RESAMPLES} resamples of the repeats (with {FLOOR} ln-unit noise) that find the same unit")
HELD = "; held against the same sizes with more threads: a unit that moves with them is the CPU's"


def unit_of(sizes: Sequence[float], log_rates: Sequence[float]) -> int:
    """Index of the unit in sizes (ascending): the largest size whose rate is within RUN_TOL of
    the peak's (a lone noisy dip inside the flat run does not end it)."""
    floor = float(np.max(log_rates)) + np.log(1 - RUN_TOL)
    return max(i for i, y in enumerate(log_rates) if y >= floor)


def granularity_inference(name: str, access_sizes: Sequence[float], bw_gbps: Sequence[float]) -> Inference:
    """`access_sizes` may repeat (every repeat of a size): the evidence and the unit use each
    size's median, the confidence its repeats."""
    by: dict[float, list[float]] = defaultdict(list)
    for a, b in zip(access_sizes, bw_gbps):
        if a > 0 and b > 0:
            by[float(a)].append(float(np.log(b * 1e9 / a)))
    sizes = sorted(by)
    ev = [{"access_size": int(a), "bw_gbps": float(np.exp(np.median(by[a]))) * a / 1e9,
           "ops_per_s": float(np.exp(np.median(by[a])))} for a in sizes]
    if len(sizes) < MIN_POINTS:
        return Inference(name, None, "B", 0.0, METHOD, ev, True,
                         f"{len(sizes)} access sizes: at least {MIN_POINTS} are needed")
    y = np.array([np.median(by[a]) for a in sizes])
    u = unit_of(sizes, y.tolist())
    unit = int(sizes[u])
    above = np.array(sizes[u:])
    slope = float(np.polyfit(np.log2(above), y[u:], 1)[0]) if len(above) >= 2 else 0.0
    detail: dict[str, Any] = {"break_bytes": unit, "peak_bytes": int(sizes[int(np.argmax(y))]),
                              "slope_above": slope}
    if u == len(sizes) - 1:
        return Inference(name, None, "B", 0.0, METHOD, ev, True,
                         f"the operation rate does not fall within the sizes measured (up to {unit} B)", detail)
    detail["fall_to_next"] = float(np.exp(y[u] - y[u + 1]))
    if slope > -MIN_FALL:
        return Inference(name, None, "B", 0.0, METHOD, ev, True,
                         f"the operation rate does not keep falling above {unit} B (slope {slope:.2f})", detail)
    rng = np.random.default_rng(0)
    same = 0
    for _ in range(RESAMPLES):
        ys = [by[a][rng.integers(len(by[a]))] + rng.normal(0, FLOOR) for a in sizes]
        same += unit_of(sizes, ys) == u
    detail["resamples_agreeing"] = same / RESAMPLES
    return Inference(name, unit, "B", same / RESAMPLES, METHOD, ev, detail=detail)


def held_against_threads(one: Inference, par: Inference, threads: int) -> Inference:
    """`one` (the fit of one thread's curve) held against `par` (the same sizes with `threads`
    threads): both decided and their units within AGREE keep one's value (confidence the lower
    of the two); a unit that moves with the threads, or one the parallel curve does not show,
    leaves the line uncertain with both in `detail.breaks_by_threads`."""
    out = Inference(one.name, one.value, one.unit, one.confidence, METHOD + HELD,
                    [{**e, "threads": 1} for e in one.evidence] + [{**e, "threads": threads} for e in par.evidence],
                    one.uncertain, one.reason, dict(one.detail))
    breaks = {"1": one.detail.get("break_bytes"), str(threads): par.detail.get("break_bytes")}
    out.detail["breaks_by_threads"] = breaks
    if one.uncertain:
        return out
    if par.uncertain:
        return _undecided(out, f"not confirmed with {threads} threads: {par.reason}")
    b1, bn = float(one.detail["break_bytes"]), float(par.detail["break_bytes"])
    if max(b1, bn) / min(b1, bn) > AGREE:
        return _undecided(out, f"the unit moves with the threads ({b1:.0f} B with 1, {bn:.0f} B with {threads}): "
                               "the operation rate is the CPU's parallelism, not the memory's unit (a memory "
                               "working in G-byte units keeps its unit as threads are added)")
    out.confidence = min(one.confidence, par.confidence)
    return out


def _undecided(inf: Inference, reason: str) -> Inference:
    inf.value, inf.uncertain, inf.confidence, inf.reason = None, True, 0.0, reason
    return inf
