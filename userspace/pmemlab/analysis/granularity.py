"""Access granularity from random-access bandwidth vs access size (docs/card.md).

A device that works in G-byte units serves an access of a <= G bytes at the cost of G: its
operation rate (bandwidth / a) is flat below G and falls above it. The fit: ln(ops/s) over
log2(a) as a hinge flat below the break (hinge.fit_hinge, fixed_below=0), the break rounded to
a power of two. Confidence: the BIC posterior of the hinge against a straight line. Uncertain
with fewer than MIN_POINTS sizes, a break at the first or last size (not inside the range
measured), or a rate that does not fall above it (slope above > -MIN_FALL)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from pmemlab.analysis.hinge import fit_hinge
from pmemlab.analysis.inference import Inference, bic_confidence

MIN_POINTS = 5
MIN_FALL = 0.3  # the rate must fall at least as a^-0.3 above the break
METHOD = ("hinge fit of ln(operations/s) over log2(access size), flat below the break, break by least "
          "squares on a 1/16-octave grid, rounded to a power of two; confidence: BIC posterior vs a line")


def granularity_inference(name: str, access_sizes: Sequence[float], bw_gbps: Sequence[float]) -> Inference:
    pts = sorted((float(a), float(b)) for a, b in zip(access_sizes, bw_gbps) if a > 0 and b > 0)
    ev = [{"access_size": int(a), "bw_gbps": b, "ops_per_s": b * 1e9 / a} for a, b in pts]
    if len({a for a, _ in pts}) < MIN_POINTS:
        return Inference(name, None, "B", 0.0, METHOD, ev, True,
                         f"{len({a for a, _ in pts})} access sizes: at least {MIN_POINTS} are needed")
    x = np.log2([a for a, _ in pts])
    y = np.log([b * 1e9 / a for a, b in pts])
    h = fit_hinge(x, y, fixed_below=0.0)
    step = np.diff(np.unique(x)).min()
    detail: dict[str, Any] = {"break_bytes": 2 ** h.g, "slope_above": h.slope_above, "delta_bic": h.delta_bic}
    if h.slope_above > -MIN_FALL:
        return Inference(name, None, "B", 0.0, METHOD, ev, True,
                         "the operation rate does not fall with the access size: no granularity in range", detail)
    if h.g <= x.min() + step / 2 or h.g >= x.max() - step / 2:
        return Inference(name, None, "B", 0.0, METHOD, ev, True,
                         f"the break lies at the edge of the sizes measured ({2 ** h.g:.0f} B)", detail)
    return Inference(name, int(2 ** round(h.g)), "B", bic_confidence(h.delta_bic), METHOD, ev, detail=detail)
