"""The device card: the inferences drawn from a probe's measurements, as one JSON document
(schema in docs/card.md) and a terminal table. Pure: the measurements come in as points, the
run conditions as a mapping; `pmemlab probe` measures, `--from` re-derives from the saved CSV."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from pmemlab.analysis.granularity import granularity_inference
from pmemlab.analysis.inference import Inference
from pmemlab.analysis.interleave import interleave_inference
from pmemlab.analysis.knees import levels_inference

SCHEMA = "pmemlab-card/1"
from pmemlab.analysis import CARD_NAME as CARD_NAME, PROBE_CSV as PROBE_CSV  # their one place, light to import
PROBE_COLUMNS = ("curve", "round", "size", "value")  # its first columns
GRANULARITY_MAX = 4096  # the granularity fit looks at access sizes up to this


def medians(points: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """(x, y) repeats -> (x, median y), sorted by x."""
    by: dict[float, list[float]] = defaultdict(list)
    for x, y in points:
        if y is not None and math.isfinite(y):
            by[float(x)].append(float(y))
    return [(x, float(np.median(v))) for x, v in sorted(by.items())]


def infer(chase: Sequence[tuple[float, float]], randread: Sequence[tuple[float, float]],
          declared_gran: int | None = None, declared_ways: int | None = None,
          emulated: bool = False) -> list[Inference]:
    """The card's inferences: levels (chase latency vs region size), read access granularity and
    interleave (random-read bandwidth vs access size). Points may repeat (medians are taken)."""
    ch = medians(chase)
    rr = medians(randread)
    out = [
        levels_inference("levels", [s for s, _ in ch], [v for _, v in ch]),
        granularity_inference("read_granularity", [a for a, _ in rr if a <= GRANULARITY_MAX],
                              [b for a, b in rr if a <= GRANULARITY_MAX]),
        interleave_inference("interleave", [a for a, _ in rr], [b for _, b in rr], declared_gran, declared_ways),
    ]
    for inf in out:
        inf.emulated = emulated
    return out


def card_doc(inferences: Sequence[Inference], conditions: Mapping[str, Any], *, target: str, backend: str,
             emulated: bool, cpu_caches: Sequence[Mapping[str, Any]], budget_s: float | None,
             wall_s: float | None, stopped: str, not_measured: Sequence[str] = ()) -> dict[str, Any]:
    undecided = [{"name": i.name, "reason": i.reason} for i in inferences if i.uncertain]
    undecided += [{"name": n, "reason": "not measured by this probe"} for n in not_measured]
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


def value_text(inf: Mapping[str, Any]) -> str:
    v = inf.get("value")
    if inf.get("uncertain"):
        return "uncertain"
    if inf["name"] == "levels":
        lv = inf["detail"]["levels"]
        caps: list[float] = list(v or [])
        parts = [f"{_size(k)} ({lv[i]['latency_ns']:.3g} ns)" for i, k in enumerate(caps)]
        return ", ".join(parts) + f"; then {lv[-1]['latency_ns']:.3g} ns"
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
                same = va.keys() == vb.keys() and all(_ratio_same(float(va[k]), float(vb[k])) for k in va)
            elif isinstance(va, (int, float)) and isinstance(vb, (int, float)):
                same = _ratio_same(float(va), float(vb))
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
