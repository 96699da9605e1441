"""Interleave from bandwidth vs random access size, held against what ndctl or the CXL region
declares (docs/card.md).

With W devices interleaved every g bytes, a random access of a bytes engages min(a/g, W)
devices: bandwidth rises with a and saturates near a = g W. The fit: ln(bandwidth) over
log2(a) as a hinge flat above the break (hinge.fit_hinge on the mirrored curve); the break is
the bytes that engage every device. A declared (gran, ways) is compared: agree when g W lies
within AGREE of the break, disagree otherwise (the declared value is never silently used in
place of the measured one). Without a declaration the line is uncertain: one device whose
parallelism runs out saturates alike, so the break alone does not name an interleave."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from pmemlab.analysis.hinge import fit_hinge
from pmemlab.analysis.inference import Inference, bic_confidence

MIN_POINTS = 5
AGREE = 1.5
METHOD = ("hinge fit of ln(bandwidth) over log2(access size), flat above the break (gran x ways); "
          "held against the declared interleave: agree within a factor 1.5")


def interleave_inference(name: str, access_sizes: Sequence[float], bw_gbps: Sequence[float],
                         declared_gran: int | None = None, declared_ways: int | None = None) -> Inference:
    pts = sorted((float(a), float(b)) for a, b in zip(access_sizes, bw_gbps) if a > 0 and b > 0)
    ev = [{"access_size": int(a), "bw_gbps": b} for a, b in pts]
    declared = {"gran": declared_gran, "ways": declared_ways}
    if len({a for a, _ in pts}) < MIN_POINTS:
        return Inference(name, None, "B", 0.0, METHOD, ev, True,
                         f"{len({a for a, _ in pts})} access sizes: at least {MIN_POINTS} are needed",
                         {"declared": declared})
    x = np.log2([a for a, _ in pts])
    y = np.log([b for _, b in pts])
    # flat above the break: fit the mirrored curve (-x) flat below
    h = fit_hinge(-x[::-1], y[::-1], fixed_below=0.0)
    brk = 2 ** (-h.g)
    step = np.diff(np.unique(x)).min()
    detail = {"saturation_bytes": brk, "slope_below": -h.slope_above, "delta_bic": h.delta_bic,
              "declared": declared}
    edge = -h.g <= x.min() + step / 2 or -h.g >= x.max() - step / 2
    if edge or -h.slope_above < 0.3:
        return Inference(name, None, "B", 0.0, METHOD, ev, True,
                         "bandwidth does not saturate inside the sizes measured", detail)
    conf = bic_confidence(h.delta_bic)
    if not (declared_gran and declared_ways):
        return Inference(name, {"saturation_bytes": round(brk)}, "B", 0.0, METHOD, ev, True,
                         "no interleave declared (ndctl, CXL region) to hold the saturation against; "
                         "one device saturates alike", detail)
    want = declared_gran * declared_ways
    agree = 1 / AGREE <= brk / want <= AGREE
    detail["verdict"] = "agree" if agree else "disagree"
    return Inference(name, {"gran": declared_gran, "ways": round(brk / declared_gran) or 1,
                            "saturation_bytes": round(brk)}, "B", conf, METHOD, ev, False,
                     f"{'agrees' if agree else 'disagrees'} with the declared {declared_ways} x {declared_gran} B "
                     f"({want} B against {brk:.0f} B measured)", detail)
