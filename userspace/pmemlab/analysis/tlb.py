"""TLB reach from a pointer chase with one line per page (docs/card.md).

The chase over a region of R bytes with one line in each 4 KiB page touches R/4096 pages but
only R/64 bytes of lines (with one line in each 2 MiB page, on a target of 2 MiB pages: R/2 MiB
pages, R/32768 bytes of lines; `slot`): the page walk shows where the pages outgrow a TLB level (at R =
entries x 4 KiB), the caches where the lines' footprint R/64 outgrows a capacity level. The fit
is the levels fit (knees.fit_levels) of that curve; each knee at R is held against the capacity
levels of the one-line-per-line chase: where R x 64 / 4096 lies within AGREE of a capacity the
knee is that cache's, seen through the footprint; every other knee is the TLB's (a knee seen
only with one line per page). The value: the reach of each TLB level in bytes, the last one the
knee beyond which the page walk adds latency; entries = reach / page size. A knee of the line
chase at the same region as a TLB knee (within AGREE) whose step (ns) is at most STEP_FACTOR x the
TLB knee's is named in `detail.line_knees_tlb`: that capacity level is the TLB seen through the
line chase (on pages the TLB maps in 4 KiB, e.g. under a hypervisor), not a cache. Uncertain: the levels fit is
(too few points, no knee), or every knee is a cache's."""

from __future__ import annotations

from typing import Any, Sequence

from pmemlab.analysis.inference import Inference
from pmemlab.analysis.knees import fit_levels
from pmemlab.params import fmt_size

LINE = 64
SLOT = 4096  # the chase's one line per slot of this many bytes (chase_page=1, access_size=4096)
SLOT_2M = 2 << 20  # the same over 2 MiB pages (chase_page=1, access_size=2M): tlb_reach_2m
AGREE = 1.5
STEP_FACTOR = 2.0  # a line-chase knee at a TLB knee whose step is at most this many times the TLB's is the TLB's


def method(slot: int = SLOT) -> str:
    return ("levels fit of the one-line-per-page chase (latency vs region); a knee whose lines' footprint "
            f"(region x 64 / {slot}) matches a capacity level within 1.5x is that cache's, the others are the TLB's: "
            "reach = region at the knee, entries = reach / page")


METHOD = method()


def _near(a: float, b: float) -> bool:
    return a > 0 and b > 0 and 1 / AGREE <= a / b <= AGREE


def _step(k: Any) -> float:
    return abs(float(k["above_ns"]) - float(k["below_ns"]))


def tlb_inference(name: str, sizes: Sequence[float], latencies: Sequence[float],
                  capacities: Sequence[float], page_bytes: int = 4096,
                  line_knees: Sequence[dict[str, Any]] = (), slot: int | None = None) -> Inference:
    """`sizes`: the regions of the one-line-per-page chase (a line per 4 KiB slot); `capacities`:
    the knees of the one-line-per-line chase (the levels inference's value, [] where it is
    uncertain); `page_bytes`: the target's page size (a TLB entry's reach); `line_knees`: the
    line chase's knees (capacity_bytes, below_ns, above_ns): one at a TLB knee's region is the
    TLB's when its step in ns is at most STEP_FACTOR x the TLB knee's (the page walk adds a fixed
    cost; a larger step holds a cache level as well). `slot`: the chase's slot, one line in each
    (SLOT: 4 KiB; SLOT_2M: 2 MiB, on 2 MiB pages). Uncertain without a knee: the reason names the
    largest region chased (the reach lies beyond it, or the curve is too flat to tell)."""
    slot = slot or SLOT
    how = method(slot)
    pts = sorted(zip(sizes, latencies))
    ev = [{"size_bytes": int(s), "latency_ns": float(v), "lines": int(s) // slot} for s, v in pts]
    fit = fit_levels([s for s, _ in pts], [v for _, v in pts])
    if fit.uncertain:
        why = fit.reason
        if fit.levels and pts:  # enough points, no knee: say where the regions stopped
            why = f"no knee up to {fmt_size(int(pts[-1][0]))} ({why})"
        return Inference(name, None, "bytes", 0.0, how, ev, True, why,
                         {"page_bytes": page_bytes, "slot_bytes": slot, "capacities": list(capacities),
                          "largest_bytes": int(pts[-1][0]) if pts else 0})
    tlb: list[dict[str, Any]] = []
    cache: list[dict[str, Any]] = []
    for k in fit.knees:
        footprint = k.capacity_bytes * LINE / slot
        owner = next((c for c in capacities if _near(footprint, c)), None)
        entry = {**k.as_dict(), "footprint_bytes": footprint}
        if owner is not None:
            cache.append({**entry, "cache_bytes": owner})
        else:
            tlb.append(entry)
    detail: dict[str, Any] = {
        "page_bytes": page_bytes, "slot_bytes": slot, "capacities": list(capacities), "tlb_knees": tlb,
        "cache_knees": cache, "largest_bytes": int(pts[-1][0]),
        "levels": [lv.as_dict() for lv in fit.levels],
        "line_knees_tlb": [float(k["capacity_bytes"]) for k in line_knees
                           if any(_near(float(k["capacity_bytes"]), t["capacity_bytes"])
                                  and _step(k) <= STEP_FACTOR * _step(t) for t in tlb)],
    }
    if not tlb:
        return Inference(name, None, "bytes", 0.0, how, ev, True,
                         "every knee of the one-line-per-page chase is a cache's (its lines' footprint "
                         f"matches a capacity level): no TLB knee in the regions measured (up to {fmt_size(int(pts[-1][0]))})",
                         detail)
    reach = [round(t["capacity_bytes"]) for t in tlb]
    detail["entries"] = [max(1, round(r / page_bytes)) for r in reach]
    note = f"{len(cache)} knee(s) of the page chase are caches' (footprint)" if cache else ""
    if detail["line_knees_tlb"]:
        note += ("; " if note else "") + "the capacity level(s) " + ", ".join(
            f"{c / 1024:.0f} KiB" for c in detail["line_knees_tlb"]) + " of the line chase sit at a TLB knee"
    return Inference(name, reach, "bytes", min(float(t["confidence"]) for t in tlb), how, ev, False, note, detail)

