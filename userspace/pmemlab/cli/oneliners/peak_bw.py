"""`pmemlab peak-bw`: the bandwidth of a node's worth of threads per op and for load:store mixes
(mlc --peak_injection_bandwidth)."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from pmemlab import params as P
from pmemlab.analysis.advertised import advertised_bandwidth, advertised_of, ratio
from pmemlab.cli.oneliners.bed import Bed, Sizing
from pmemlab.cli.oneliners.spec import OneLiner, size_arg
from pmemlab.cli.oneliners.tables import (
    Table, advertised_note, bandwidth_of, emulation_note, headline, not_run, only_target, reasons_note, target_names,
)
from pmemlab.config import SweepConfig, sweep_config

if TYPE_CHECKING:  # pandas is imported by the functions that use it: `pmemlab run` never needs it
    import pandas as pd

PEAK_ROWS = (  # (label, op, read_pct)
    *((op, op, 0) for op in P.OPS),
    ("3:1 load:store", "store", 75),
    ("2:1 load:store", "store", 67),
    ("1:1 load:store", "store", 50),
)


def peak_config(args: argparse.Namespace, size: Sizing) -> SweepConfig:
    threads = args.threads or size.node_threads
    return sweep_config("peak-bw", "pmemlab peak-bw: bandwidth per op and load:store mix", source="pmemlab peak-bw",
                        repeats=args.repeats,
                        base={"mode": "bandwidth", "pattern": "seq", "access_size": args.access_size,
                              "placement": "per-thread", "threads": threads,
                              "working_set": size.working_set(args.working_set), "duration_ms": args.duration_ms},
                        zips=[{"op": [r[1] for r in PEAK_ROWS], "read_pct": [r[2] for r in PEAK_ROWS]}])


def peak_table(args: argparse.Namespace, rows: pd.DataFrame, hist: pd.DataFrame, bed: Bed) -> Table:
    keys = ["target_label", "op", "read_pct"]
    bw = bandwidth_of(rows, keys)
    names = target_names(rows, bed)
    targets = [t.label for t in bed.targets] if bed.targets else [""]
    multi = len(targets) > 1
    out, reasons, records = [], {}, []
    for label, op, pct in PEAK_ROWS:
        cells: list[Any] = [label]
        for target in targets:
            mean, ci, n = bw.get((target, op, pct), (math.nan, math.nan, 0))
            adv = advertised_bandwidth(advertised_of(rows, target), op, pct)
            cells += [mean, ci, adv, ratio(mean, adv)]
            records.append({**({"target": target} if target else {}), "access": label, "op": op, "read_pct": pct,
                            "bw_gbps_mean": mean, "bw_gbps_ci95": ci, "runs": n, "advertised_gbps": adv,
                            "mean_over_advertised": ratio(mean, adv)})
            why = not_run(rows, {"target_label": target, "op": op, "read_pct": pct})
            if why and n == 0:
                reasons[f"{label}{' on ' + names.get(target, target) if multi else ''}"] = why
        out.append(cells)
    first = rows[rows["thread"].astype(str) == "all"].head(1)
    threads = int(first["threads"].iloc[0]) if not first.empty else 0
    ws = int(first["working_set"].iloc[0]) if not first.empty else 0
    columns = ["op"]
    for target in targets:
        name = names.get(target, target)
        columns += [f"{name} GB/s" if multi else "GB/s", "+-95% CI", "adv GB/s", "GB/s / adv"]
    return Table(
        title=headline("peak-bw", rows, bed) + (f" on {only_target(rows)}" if not multi else ""),
        statistic=(f"bandwidth GB/s (1e9 B/s), all {threads} threads together: mean over {args.repeats} run(s) of "
                   f"{args.duration_ms} ms and its 95 % CI; sequential {args.access_size} B accesses, each thread "
                   f"in its own part of a {P.fmt_size(ws)} window; a mix issues loads for that share of each "
                   f"thread's accesses and stores for the rest"),
        columns=columns, rows=out, notes=reasons_note(reasons) + advertised_note(rows) + emulation_note(rows),
        records=records)


def access_size_option(p: argparse.ArgumentParser) -> None:
    """--access-size (peak-bw's and tier-bw's)."""
    p.add_argument("--access-size", type=size_arg, default=256, metavar="BYTES", help="bytes per access (256)")


ONE = OneLiner("bandwidth per op and load:store mix, a node's threads (mlc --peak_injection_bandwidth)",
               ("pmemlab peak-bw", "pmemlab peak-bw --targets pmem,dram --duration-ms 200",
                "pmemlab peak-bw --backend user --target dram --json"),
               peak_config, peak_table, "bandwidth", repeats=3, options=access_size_option)
