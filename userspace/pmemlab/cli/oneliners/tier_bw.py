"""`pmemlab tier-bw`: bandwidth of a node's threads on one DRAM target spread over the DRAM node
and a CXL node at a set of DRAM:CXL page weights, for loads and a 2:1 load:store mix: which ratio
gives the most, and how much more than DRAM alone (a target per ratio: dram_nodes=D,C
dram_weights=d,c; pmemlab.analysis.tiers, pmemlab.targets.tiers)."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from pmemlab import params as P
from pmemlab.analysis import tiers
from pmemlab.backends.protocol import BackendKind
from pmemlab.cli.oneliners.bed import Bed, Sizing
from pmemlab.cli.oneliners.peak_bw import access_size_option
from pmemlab.cli.oneliners.spec import DEFAULT_DRAM_SIZE, OneLiner
from pmemlab.cli.oneliners.tables import Table, cell, emulation_note, headline, not_run, reasons_note
from pmemlab.config import SweepConfig, sweep_config
from pmemlab.errors import ConfigError
from pmemlab.host import machine, probe
from pmemlab.targets import tiers as tier_sweep
from pmemlab.targets.spec import TargetLoad

if TYPE_CHECKING:  # pandas is imported by the functions that use it: `pmemlab run` never needs it
    import pandas as pd


def tier_nodes(args: argparse.Namespace) -> tuple[int, int]:
    """--dram-node and --cxl-node, else the first node with CPUs and the first without (tier_sweep.node_pair)."""
    return tier_sweep.node_pair(machine.numa_info(probe.HostPaths())["nodes"], args.dram_node, args.cxl_node)


def tier_loads(args: argparse.Namespace, kind: BackendKind) -> list[TargetLoad]:
    """A DRAM target per ratio of --weights over the DRAM node and the CXL node."""
    dram, cxl = tier_nodes(args)
    return tier_sweep.ratio_loads(args.weights, dram, cxl, args.dram_size, args.dram_pages)


def tier_cpus(args: argparse.Namespace, size: Sizing) -> tuple[int, int, tuple[int, ...]]:
    """The DRAM node, the CXL node and the CPUs of the run: --threads of the DRAM node's (all of them)."""
    dram, cxl = tier_nodes(args)
    cpus = size.node_cpus.get(dram, ())
    if not cpus:
        raise ConfigError(f"node {dram} (the DRAM side) has no online CPU to run on", "give --dram-node N")
    if args.threads and args.threads > len(cpus):
        raise ConfigError(f"--threads {args.threads}: node {dram} has {len(cpus)} CPU(s)",
                          f"give --threads {len(cpus)} or fewer")
    return dram, cxl, cpus[: args.threads] if args.threads else cpus


def tier_config(args: argparse.Namespace, size: Sizing) -> SweepConfig:
    _, _, cpus = tier_cpus(args, size)
    return sweep_config("tier-bw", "pmemlab tier-bw: bandwidth per DRAM:CXL page ratio", source="pmemlab tier-bw",
                        repeats=args.repeats,
                        base={"mode": "bandwidth", "pattern": "seq", "access_size": args.access_size,
                              "placement": "per-thread", "threads": len(cpus), "cpus": P.fmt_cpulist(cpus),
                              "working_set": size.working_set(args.working_set), "duration_ms": args.duration_ms},
                        zips=[{"op": [m[1] for m in tiers.MIXES], "read_pct": [m[2] for m in tiers.MIXES]}])


def _gain(v: float) -> str:
    return "n/a" if math.isnan(v) else f"{v:+.1f} %"


def tier_table(args: argparse.Namespace, rows: pd.DataFrame, hist: pd.DataFrame, bed: Bed) -> Table:
    dram, cxl, cpus = tier_cpus(args, bed.sizing())
    stats = tiers.summarize(rows, args.weights)
    cells = {(s.ratio, s.mix): s for s in stats}
    out, reasons = [], {}
    for ratio in args.weights:
        first = cells[(ratio, tiers.MIXES[0][0])]
        row: list[Any] = [ratio.text, first.dram_pct_placed]
        for mix, op, pct in tiers.MIXES:
            s = cells[(ratio, mix)]
            row += [f"{cell(s.mean)}{' *' if s.best else ''}", s.ci95,
                    "ref" if ratio.cxl == 0 and s.runs else _gain(s.gain_pct)]
            why = not_run(rows, {"target_label": ratio.label, "op": op, "read_pct": pct}) if not rows.empty else ""
            if why and not s.runs:
                reasons[f"{ratio.text} {mix}"] = why
        out.append(row)
    best = tiers.best_text(stats)
    agg = rows[rows["thread"].astype(str) == "all"] if not rows.empty else rows
    ws = int(agg["working_set"].iloc[0]) if not agg.empty else 0
    sizes = sorted({int(float(v)) for v in agg["target_page_size"].dropna()}) if "target_page_size" in agg else []
    page = f"{P.fmt_size(sizes[0])} " if len(sizes) == 1 else ""
    mixed = [] if len(sizes) < 2 else [
        f"MIXED PAGE SIZES: the ratios' targets are mapped with {', '.join(P.fmt_size(v) for v in sizes)} pages "
        f"(target_page_size: the module maps a target over two nodes with 4 KiB entries, a one-node one with "
        f"2 MiB): give --dram-pages 4k to compare like with like"]
    columns = ["DRAM:CXL", "DRAM % placed"]
    for mix, _, _ in tiers.MIXES:
        columns += [f"{mix} GB/s", "+-95% CI", "vs DRAM alone"]
    return Table(
        title=headline("tier-bw", rows, bed) + f": DRAM node {dram}, CXL node {cxl}",
        statistic=(f"bandwidth GB/s (1e9 B/s), all {len(cpus)} thread(s) on node {dram} (CPUs {P.fmt_cpulist(cpus)}) "
                   f"together: mean over {args.repeats} run(s) of {args.duration_ms} ms and its 95 % CI; "
                   f"sequential {args.access_size} B accesses, each thread in its own part of a "
                   f"{P.fmt_size(ws)} window of a {args.dram_size} DRAM target whose {page}pages go to node "
                   f"{dram} and node {cxl} in weighted round robin at the ratio (DRAM % placed: of its bytes, "
                   f"found on node {dram} after placement); 2:1 load:store: two loads for every store in each "
                   f"thread; vs DRAM alone: the gain over 1:0; * the best ratio of the column"),
        columns=columns, rows=out, records=[s.record() for s in stats],
        notes=[f"best for {mix}: {text}" for mix, text in best.items()] + mixed + reasons_note(reasons)
        + emulation_note(rows),
        extra={"dram_node": dram, "cxl_node": cxl,
               "best": {s.mix: s.ratio.text for s in stats if s.best}})


def _weights(text: str) -> tuple[tiers.Ratio, ...]:
    try:
        return tier_sweep.parse_weights(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.cause) from None


def tier_options(p: argparse.ArgumentParser) -> None:
    access_size_option(p)
    p.add_argument("--weights", type=_weights, default=tier_sweep.parse_weights(tier_sweep.DEFAULT_WEIGHTS),
                   metavar="D:C,...", help=f"DRAM:CXL page weights, one target each ({tier_sweep.DEFAULT_WEIGHTS}; "
                                           f"0..{tier_sweep.WEIGHT_MAX}; 1:0 is DRAM alone, 0:1 CXL alone)")
    p.add_argument("--dram-node", type=int, metavar="N",
                   help="the DRAM node, whose CPUs run the threads (default: the first node with CPUs)")
    p.add_argument("--cxl-node", type=int, metavar="N",
                   help="the CXL node (default: the first node with memory and no CPUs)")
    p.add_argument("--dram-size", default=DEFAULT_DRAM_SIZE, metavar="SIZE",
                   help=f"size of each ratio's DRAM target ({DEFAULT_DRAM_SIZE})")
    p.add_argument("--dram-pages", choices=("4k", "2m"),
                   help="pages placed on the nodes (default: the backend's, 2m: 2 MiB)")


ONE = OneLiner("bandwidth per DRAM:CXL page ratio of one target, loads and a 2:1 load:store mix, a node's threads",
               ("pmemlab tier-bw", "pmemlab tier-bw --weights 1:0,3:1,1:1,0:1 --duration-ms 200 --json",
                "pmemlab tier-bw --backend user --dram-node 0 --cxl-node 1 -o results/tier-bw.csv"),
               tier_config, tier_table, "bandwidth", repeats=3, axis=tier_loads, options=tier_options,
               threads_default="every CPU of the DRAM node")
