"""The device card: the inferences drawn from a probe's measurements, as one JSON document
(schema in docs/card.md) and a terminal table. Pure: the measurements come in as points, the
run conditions as a mapping; `pmemlab probe` measures, `--from` re-derives from the saved CSV."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import numpy as np

from pmemlab.analysis.granularity import granularity_inference, held_against_threads
from pmemlab.analysis.inference import Inference
from pmemlab.analysis.interleave import interleave_inference
from pmemlab.analysis.knees import levels_inference
from pmemlab.analysis.loaded import asymmetry_inference, loaded_inference, prefetch_inference
from pmemlab.analysis.tail import tail_by_size
from pmemlab.analysis.tlb import SLOT_2M, tlb_inference
from pmemlab.analysis.writelevels import write_levels_inference

if TYPE_CHECKING:
    from pmemlab.analysis.curves import CurvePoint

SCHEMA = "pmemlab-card/1"
from pmemlab.analysis import CARD_NAME as CARD_NAME, PROBE_CSV as PROBE_CSV  # their one place, light to import
PROBE_COLUMNS = ("curve", "round", "size", "value")  # its first columns
GRANULARITY_MAX = 4096
SAME_SIZE = 1.01  # region sizes closer than 1 % are the same point  # the granularity fit looks at access sizes up to this


def medians(points: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """(x, y) repeats -> (x, median y), sorted by x."""
    by: dict[float, list[float]] = defaultdict(list)
    for x, y in points:
        if y is not None and math.isfinite(y):
            by[float(x)].append(float(y))
    return [(x, float(np.median(v))) for x, v in sorted(by.items())]


def lows(points: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """(x, latency) repeats -> (x, least latency), sorted by x. A chase's latency is only ever
    raised by what runs beside it (a neighbour evicting the cache, an interrupt): the least of a
    size's repeats is the one the memory gave undisturbed (the median of a size measured now in a
    quiet moment, now while a neighbour thrashes the last cache, is a coin toss)."""
    pts = sorted((float(x), float(y)) for x, y in points if y is not None and math.isfinite(y) and y > 0)
    out: list[tuple[float, float]] = []
    for x, y in pts:  # sizes within SAME_SIZE of a group's first are one size (64 B roundings of one point)
        if out and x <= out[-1][0] * SAME_SIZE:
            out[-1] = (out[-1][0], min(out[-1][1], y))
        else:
            out.append((x, y))
    return out


def infer(chase: Sequence[tuple[float, float]], randread: Sequence[tuple[float, float]],
          declared_gran: int | None = None, declared_ways: int | None = None,
          emulated: bool = False, *, randwrite: Sequence[tuple[float, float]] | None = None,
          chase_page: Sequence[tuple[float, float]] | None = None,
          chase_page_2m: Sequence[tuple[float, float]] | None = None,
          chase_raw: Sequence[tuple[float, float]] | None = None,
          tail_hists: Mapping[int, Sequence[tuple[float, float, int]]] | None = None,
          loaded: Sequence[CurvePoint] | None = None, unloaded_ns: float | None = None,
          prefetch: tuple[Sequence[float], Sequence[float], int | None] | None = None,
          page_bytes: int = 4096,
          parallel: Mapping[str, Sequence[tuple[float, float]]] | None = None,
          par_threads: int = 0) -> list[Inference]:
    """The card's inferences: levels (chase latency vs region size), read access granularity and
    interleave (random-read bandwidth vs access size); where their measurements are given (None:
    not measured, no line): write granularity (random-write bandwidth vs access size), TLB reach
    (the one-line-per-page chase, held against the levels; `chase_page_2m`: one line per 2 MiB
    page on a target of 2 MiB pages, the line tlb_reach_2m), write levels (the read-after-write
    chase, held against the levels), the write tail (hotspot histograms by
    size), loaded latency and read/write asymmetry (a curves family), prefetch (sequential and
    random load latencies). Points may repeat: a chase's repeats enter as their least latency
    (`lows`), bandwidths as their median. `parallel`: the random-read/-write curves again with
    `par_threads` threads ("randread", "randwrite"), against which each granularity is held."""
    ch = lows(chase)
    rr = medians(randread)
    levels = levels_inference("levels", [s for s, _ in ch], [v for _, v in ch])
    out = [
        levels,
        _granularity("read_granularity", randread, parallel.get("randread") if parallel else None, par_threads),
        interleave_inference("interleave", [a for a, _ in rr], [b for _, b in rr], declared_gran, declared_ways),
    ]
    if randwrite is not None:
        out.append(_granularity("write_granularity", randwrite, parallel.get("randwrite") if parallel else None,
                                par_threads))
    if chase_page is not None:
        cp = lows(chase_page)
        caps = [] if levels.uncertain else [float(c) for c in levels.value]
        tlb = tlb_inference("tlb_reach", [s for s, _ in cp], [v for _, v in cp], caps, page_bytes,
                            line_knees=levels.detail.get("knees", []) if not levels.uncertain else [])
        out.append(tlb)
        hold_levels_against_tlb(levels, tlb)
    if chase_page_2m is not None:
        c2 = lows(chase_page_2m)
        out.append(tlb_inference("tlb_reach_2m", [s for s, _ in c2], [v for _, v in c2],
                                 [] if levels.uncertain else [float(c) for c in levels.value], SLOT_2M,
                                 slot=SLOT_2M))
    if chase_raw is not None:
        cr = lows(chase_raw)
        out.append(write_levels_inference("write_levels", [s for s, _ in cr], [v for _, v in cr],
                                          [] if levels.uncertain else levels.detail.get("knees", []), ch))
    if tail_hists is not None:
        out.append(tail_by_size("write_tail", dict(tail_hists)))
    if loaded is not None:
        out.append(loaded_inference("loaded_latency", loaded, unloaded_ns))
        out.append(asymmetry_inference("rw_asymmetry", loaded))
    if prefetch is not None:
        out.append(prefetch_inference("prefetch", prefetch[0], prefetch[1], prefetch[2]))
    for inf in out:
        inf.emulated = emulated
    return out


def _granularity(name: str, one: Sequence[tuple[float, float]], par: Sequence[tuple[float, float]] | None,
                 threads: int) -> Inference:
    """One thread's granularity fit, held against `threads` threads' where they were measured."""
    def fit(points: Sequence[tuple[float, float]]) -> Inference:  # every repeat: the confidence resamples them
        m = [(float(a), float(b)) for a, b in points if a <= GRANULARITY_MAX and b is not None and math.isfinite(b)]
        return granularity_inference(name, [a for a, _ in m], [b for _, b in m])
    return fit(one) if par is None else held_against_threads(fit(one), fit(par), threads)


REPORTED_MATCH = 1.5  # a capacity level within this factor of a cache the CPU reports is that cache


def hold_levels_against_cpu(levels: Inference, caches: Sequence[Mapping[str, Any]], hypervisor: str = "") -> None:
    """Each data or unified cache the CPU reports, held against the capacity levels found: the
    level within REPORTED_MATCH of it, or none (`detail.cpu_caches`: per cache its level, size,
    the level found and agree|not seen). Where a reported cache was not seen the reason says so;
    under a hypervisor a last-level cache may be shared with the host's other guests (or
    partitioned), and the chase finds what this guest gets of it, not the size the CPU reports."""
    found = [] if levels.uncertain else [float(c) for c in levels.value]
    held: list[dict[str, Any]] = []
    for c in caches:
        if str(c.get("type", "")).lower() == "instruction":
            continue
        size = float(c["size_bytes"])
        near = [f for f in found if 1 / REPORTED_MATCH <= f / size <= REPORTED_MATCH]
        held.append({"level": c.get("level"), "size_bytes": int(size),
                     "found_bytes": min(near, key=lambda f: abs(math.log(f / size))) if near else None,
                     "verdict": "agree" if near else "not seen"})
    levels.detail["cpu_caches"] = held
    missed = [h for h in held if h["verdict"] == "not seen"]
    if not missed or levels.uncertain:
        return
    why = "; ".join(f"L{h['level']} {_size(h['size_bytes'])} the CPU reports not seen within {REPORTED_MATCH}x"
                    for h in missed)
    if hypervisor and any(h is held[-1] for h in missed):
        why += (f" (under {hypervisor} the last-level cache may be shared with the host's other guests or "
                "partitioned: the chase finds what this guest gets of it)")
    levels.reason = f"{levels.reason}; {why}" if levels.reason else why


def hold_levels_against_tlb(levels: Inference, tlb: Inference) -> None:
    """A capacity level of the line chase that sits at a TLB knee of the page chase (the same
    region within a factor 1.5: the pages outgrow a TLB level there, not the lines a cache) is the
    TLB's: it leaves the levels' value, named in `detail.tlb_knees` and the reason. Where a cache
    and a TLB level share a size the line chase cannot tell them apart: the reason says so."""
    gone = [float(c) for c in (tlb.detail.get("line_knees_tlb") or [])]
    if levels.uncertain or tlb.uncertain or not gone:
        return
    keep = [c for c in levels.value if round(float(c)) not in {round(g) for g in gone}]  # the value is rounded
    levels.detail["tlb_knees"] = gone
    levels.reason = ("not cache levels, at a TLB knee of the one-line-per-page chase: "
                     + ", ".join(f"{_size(c)}" for c in gone))
    if not keep:
        levels.value, levels.uncertain, levels.confidence = None, True, 0.0
        levels.reason = "every knee is a TLB knee: " + levels.reason
        return
    kept = [k for k in levels.detail.get("knees", []) if round(k["capacity_bytes"]) in keep]
    levels.value = keep
    levels.confidence = min(float(k["confidence"]) for k in kept) if kept else levels.confidence


def card_doc(inferences: Sequence[Inference], conditions: Mapping[str, Any], *, target: str, backend: str,
             emulated: bool, cpu_caches: Sequence[Mapping[str, Any]], budget_s: float | None,
             wall_s: float | None, stopped: str,
             not_measured: Sequence[str | tuple[str, str]] = ()) -> dict[str, Any]:
    """`not_measured`: names (reason: not measured by this probe) or (name, reason) pairs."""
    undecided = [{"name": i.name, "reason": i.reason} for i in inferences if i.uncertain]
    undecided += [{"name": n, "reason": "not measured by this probe"} if isinstance(n, str)
                  else {"name": n[0], "reason": "not measured: " + n[1]} for n in not_measured]
    return {
        "schema": SCHEMA, "target": target, "backend": backend, "emulated": emulated,
        "budget_s": budget_s, "wall_s": wall_s, "stopped": stopped,
        "cpu_caches": [dict(c) for c in cpu_caches],
        "conditions": {k: v for k, v in conditions.items() if _plain(v)},
        "inferences": [i.as_dict() for i in inferences],
        "undecided": undecided,
    }


def _plain(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


REQUIRED: dict[str, type | tuple[type, ...]] = {
    "schema": str, "target": str, "backend": str, "emulated": bool, "stopped": str,
    "cpu_caches": list, "conditions": dict, "inferences": list, "undecided": list,
}
INFERENCE_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "name": str, "unit": str, "confidence": (int, float), "method": str, "evidence": list,
    "uncertain": bool, "reason": str, "emulated": bool,
}


def validate(doc: Any) -> list[str]:
    """What in `doc` breaks the card schema (docs/card.md); [] when it is a card."""
    errs: list[str] = []
    if not isinstance(doc, dict):
        return ["the card is not a JSON object"]
    if doc.get("schema") != SCHEMA:
        errs.append(f"schema: {doc.get('schema')!r}, want {SCHEMA!r}")
    for key, typ in REQUIRED.items():
        if not isinstance(doc.get(key), typ):
            errs.append(f"{key}: missing or not {typ}")
    for i, inf in enumerate(doc.get("inferences") or []):
        if not isinstance(inf, dict):
            errs.append(f"inferences[{i}]: not an object")
            continue
        for key, typ in INFERENCE_REQUIRED.items():
            if not isinstance(inf.get(key), typ):
                errs.append(f"inferences[{i}].{key}: missing or not {typ}")
        if "value" not in inf:
            errs.append(f"inferences[{i}].value: missing")
        elif inf.get("uncertain") is False and inf.get("value") is None:
            errs.append(f"inferences[{i}]: a value is needed unless uncertain")
        conf = inf.get("confidence")
        if isinstance(conf, (int, float)) and not 0 <= conf <= 1:
            errs.append(f"inferences[{i}].confidence: {conf} outside [0, 1]")
        if doc.get("emulated") and inf.get("emulated") is not True:
            errs.append(f"inferences[{i}]: the card is emulated but this inference is not marked")
    return errs


def _size(b: float) -> str:
    for unit, f in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if b >= f:
            return f"{b / f:.3g} {unit}"
    return f"{b:.0f} B"


def size_text(b: float) -> str:
    """Bytes in binary units, three digits: the card's text and figures."""
    return _size(b)


def value_text(inf: Mapping[str, Any]) -> str:
    v = inf.get("value")
    if inf.get("uncertain"):
        return "uncertain"
    if inf["name"] in ("levels", "write_levels"):
        lv = inf["detail"]["levels"]
        caps: list[float] = list(v or [])
        below = {round(k["capacity_bytes"]): k["below_ns"] for k in inf["detail"].get("knees", [])}
        only = set(inf["detail"].get("write_only", []))
        parts = [f"{_size(k)} ({below.get(round(k), lv[i]['latency_ns']):.3g} ns)"
                 + (", after writes only" if round(k) in only else "") for i, k in enumerate(caps)]
        return ", ".join(parts) + f"; then {lv[-1]['latency_ns']:.3g} ns"
    if inf["name"] in ("tlb_reach", "tlb_reach_2m") and isinstance(v, list):
        ent = inf["detail"].get("entries", [])
        return ", ".join(f"{_size(r)} ({e} x {_size(inf['detail']['page_bytes'])} pages)" for r, e in zip(v, ent))
    if inf["name"] == "write_tail" and isinstance(v, dict):
        return (f"p99.9/p50 {v['p999_over_p50']:.3g}, {v['frac_above_k']:.2g} of writes > "
                f"{inf['detail']['k_median']:g}x median (at {_size(v['worst_hotspot_bytes'])}), "
                f"{'depends' if v['depends_on_size'] else 'not dependent'} on hotspot size")
    if inf["name"] == "loaded_latency" and isinstance(v, dict):
        def ns(x: Any) -> str:
            return "-" if x is None else f"{x:.3g}"
        w = v.get("peak_write_gbps")
        return (f"read {v['peak_read_gbps']:.3g} GB/s, write {'-' if w is None else f'{w:.3g}'} GB/s; "
                f"p50 {ns(v['unloaded_ns'])} ns unloaded, {ns(v['p50_at_50pct_ns'])}/{ns(v['p50_at_80pct_ns'])}/"
                f"{ns(v['p50_at_95pct_ns'])} ns at 50/80/95 %")
    if inf.get("unit") == "x" and isinstance(v, (int, float)):
        return f"{v:.3g}x"
    if inf["name"] == "interleave" and isinstance(v, dict):
        return f"{v['ways']} x {v['gran']} B"
    if isinstance(v, (int, float)) and inf.get("unit") == "B":
        return _size(v)
    return str(v)


def table_rows(doc: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for inf in doc["inferences"]:
        note = inf["reason"] + (" [EMULATED: timing means nothing]" if inf.get("emulated") else "")
        rows.append([inf["name"], value_text(inf), f"{inf['confidence']:.2f}", str(len(inf["evidence"])), note])
    return rows


TABLE_COLUMNS = ["inference", "value", "confidence", "points", "note"]


SAME = 1.5  # two cards' values within this factor say the same


def _ratio_same(a: float, b: float) -> bool:
    return a > 0 and b > 0 and 1 / SAME <= b / a <= SAME


def _scalar_same(a: Any, b: Any) -> bool:
    """Numbers within SAME; anything else (flags, names, None) equal."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        return _ratio_same(float(a), float(b)) or a == b
    return bool(a == b)


def compare_cards(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Two cards side by side, a row per inference either holds: A's and B's value and
    confidence, and a verdict: same (every number within a factor 1.5; levels: as many knees,
    each within it), differs, or uncertain in A / B / both."""
    ia = {i["name"]: i for i in a["inferences"]}
    ib = {i["name"]: i for i in b["inferences"]}
    rows = []
    for name in list(dict.fromkeys([*ia, *ib])):
        x, y = ia.get(name), ib.get(name)
        if x is None or y is None:
            verdict = "only in A" if y is None else "only in B"
        elif x["uncertain"] or y["uncertain"]:
            verdict = ("uncertain in both" if x["uncertain"] and y["uncertain"]
                       else "uncertain in A" if x["uncertain"] else "uncertain in B")
        else:
            va, vb = x["value"], y["value"]
            if isinstance(va, list) and isinstance(vb, list):
                same = len(va) == len(vb) and all(_ratio_same(p, q) for p, q in zip(va, vb))
            elif isinstance(va, dict) and isinstance(vb, dict):
                same = va.keys() == vb.keys() and all(_scalar_same(va[k], vb[k]) for k in va)
            elif isinstance(va, (int, float)) and isinstance(vb, (int, float)):
                same = _scalar_same(va, vb)  # equal counts too: a 0x prefetch line on both cards
            else:
                same = va == vb
            verdict = "same" if same else "differs"
        rows.append({"inference": name,
                     "a": value_text(x) if x else "", "a_confidence": x["confidence"] if x else None,
                     "b": value_text(y) if y else "", "b_confidence": y["confidence"] if y else None,
                     "verdict": verdict})
    return rows


def is_card(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("schema") == SCHEMA


def is_probe_csv(path: Path) -> bool:
    """A `pmemlab probe` measurements file: named probe.csv, its header starting with the probe's
    columns (curve, round, size, value). Its rows carry a run's full result row, so it would pass
    for a sweep's CSV: the places that gather results skip it."""
    if path.name != PROBE_CSV:
        return False
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            head = f.readline().strip().split(",")
    except OSError:
        return False
    return tuple(head[:len(PROBE_COLUMNS)]) == PROBE_COLUMNS
