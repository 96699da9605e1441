"""`pmemlab idle-latency`: one access at a time: loads of cold lines (random, sequential),
store+clwb and ntstore of warm lines (FAST'20 fig 2; mlc --idle_latency is the random load)."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from pmemlab import params as P
from pmemlab.analysis.advertised import advertised_latency, advertised_of, ratio
from pmemlab.cli.oneliners.bed import Bed, Sizing
from pmemlab.cli.oneliners.spec import PROBE_OPS, OneLiner
from pmemlab.cli.oneliners.tables import (
    Table, advertised_note, emulation_note, headline, latency_of, not_run, only_target, reasons_note, target_names,
)
from pmemlab.config import SweepConfig, sweep_config

if TYPE_CHECKING:  # pandas is imported by the functions that use it: `pmemlab run` never needs it
    import pandas as pd

PATTERN_WORDS = {"rand": "random", "seq": "sequential"}
IDLE_ROWS: tuple[tuple[str, str, int, int], ...] = (  # (op, pattern, cold, warm): the four bars of FAST'20 fig 2
    # the plain load of cold lines, random and sequential; then each durable write of warm lines, flushed first
    *((op, pattern, 1, 0) for op in PROBE_OPS if op in P.READ_OPS and not P.non_temporal(op) for pattern in ("rand", "seq")),
    *((op, "seq", 0, 1) for op in sorted((op for op in PROBE_OPS if op in P.WRITE_OPS), key=P.non_temporal)),
)


def idle_label(op: str, pattern: str, cold: int) -> str:
    """An idle-latency row's name: 'load, random, cold line'; a write's pattern goes unsaid."""
    return ", ".join([op, *([PATTERN_WORDS[pattern]] if op in P.READ_OPS else []), f"{'cold' if cold else 'warm'} line"])


def idle_config(args: argparse.Namespace, size: Sizing) -> SweepConfig:
    return sweep_config("idle-latency", "pmemlab idle-latency: one 8 B access at a time", source="pmemlab idle-latency",
                        repeats=args.repeats,
                        base={"mode": "latency", "threads": 1, "access_size": 8, "width": 8,
                              "working_set": size.working_set(args.working_set), "count": args.count},
                        zips=[{"op": [r[0] for r in IDLE_ROWS], "pattern": [r[1] for r in IDLE_ROWS],
                               "cold": [r[2] for r in IDLE_ROWS], "warm": [r[3] for r in IDLE_ROWS]}])


def idle_table(args: argparse.Namespace, rows: pd.DataFrame, hist: pd.DataFrame, bed: Bed) -> Table:
    keys = ["target_label", "op", "pattern", "cold"]
    stats = latency_of(rows, hist, keys)
    names = target_names(rows, bed)
    multi = len(bed.targets or []) > 1
    out, reasons, records = [], {}, []
    for target in ([t.label for t in bed.targets] if bed.targets else [""]):
        for op, pattern, cold, _ in IDLE_ROWS:
            label = idle_label(op, pattern, cold)
            match = {"target_label": target, "op": op, "pattern": pattern, "cold": cold}
            hit = stats
            for k, v in match.items():
                hit = hit[hit[k] == v]
            values: list[Any] = [math.nan] * 5 + [0]
            if hit.empty:
                why = not_run(rows, match)
                if why:
                    reasons[f"{names.get(target, target) + ': ' if multi else ''}{label}"] = why
            else:
                h = hit.iloc[0]
                values = [h["p50"], h["p5"], h["p95"], h["mean"], h["max"], int(h["samples"])]
            adv = advertised_latency(advertised_of(rows, target), op)
            values += [adv, ratio(values[0], adv)]
            out.append([*([names.get(target, target)] if multi else []), label, *values])
            records.append({**({"target": target} if target else {}), "access": label, "op": op, "pattern": pattern,
                            **dict(zip(("median_ns", "p5_ns", "p95_ns", "mean_ns", "max_ns", "samples",
                                        "advertised_ns", "median_over_advertised"), values))})
    first = rows[rows["thread"].astype(str) == "all"].head(1)
    ws = int(first["working_set"].iloc[0]) if not first.empty else 0
    return Table(
        title=headline("idle-latency", rows, bed) + (f" on {only_target(rows)}" if not multi else ""),
        statistic=(f"latency of one 8 B access at a time, ns: median, p5 and p95 of every sample (repeats pooled), "
                   f"exact mean and max; {args.repeats} run(s) of {args.count} samples per row, 1 thread, "
                   f"{P.fmt_size(ws)} window; cold = the line flushed before each access, warm = loaded first"),
        columns=[*(["target"] if multi else []), "access", "median ns", "p5 ns", "p95 ns", "mean ns", "max ns",
                 "samples", "advertised ns", "median/adv"],
        rows=out, notes=reasons_note(reasons) + advertised_note(rows) + emulation_note(rows), records=records)



ONE = OneLiner("idle latency of single accesses (mlc --idle_latency)",
               ("pmemlab idle-latency", "pmemlab idle-latency --targets pmem,dram",
                "pmemlab idle-latency --backend user --target dram --count 20000 --json"),
               idle_config, idle_table, "latency")
