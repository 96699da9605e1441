"""`pmemlab loaded-latency`: thread 0 probes the latency of single loads while the other threads
inject loads with a delay between accesses: latency against the bandwidth they reach (mlc
--loaded_latency); --probe-target and --load-target put the probe and the load on two targets."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING

from pmemlab import params as P
from pmemlab.cli.oneliners.bed import Bed, Sizing
from pmemlab.cli.oneliners.spec import PROBE_OPS, OneLiner
from pmemlab.cli.oneliners.tables import (
    Table, bandwidth_of, emulation_note, headline, latency_of, not_run, only_target, reasons_note, target_names,
)
from pmemlab.config import SweepConfig, sweep_config
from pmemlab.errors import ConfigError

if TYPE_CHECKING:  # pandas is imported by the functions that use it: `pmemlab run` never needs it
    import pandas as pd

LOADED_DELAYS = (0, 250, 500, 1000, 2500, 5000, 10000, 50000)  # TSC ticks between injected accesses


def loaded_config(args: argparse.Namespace, size: Sizing) -> SweepConfig:
    threads = args.threads or max(2, size.node_threads)
    return sweep_config("loaded-latency", "pmemlab loaded-latency: probe latency under injected load",
                        source="pmemlab loaded-latency", repeats=args.repeats,
                        base={"mode": "bandwidth", "probe": 1, "op": args.op, "pattern": args.pattern, "access_size": 64,
                              "placement": "per-thread", "threads": threads,
                              "working_set": size.working_set(args.working_set), "duration_ms": args.duration_ms,
                              **({"load_target": args.load_target} if args.load_target else {})},
                        axes={"delay_ticks": list(args.delays)})


def loaded_table(args: argparse.Namespace, rows: pd.DataFrame, hist: pd.DataFrame, bed: Bed) -> Table:
    keys = ["target_label", "delay_ticks"]
    stats = latency_of(rows, hist, keys)
    bw = bandwidth_of(rows, keys)
    khz = bed.sizing().tsc_khz
    where = {"probe_target": args.target, "load_target": args.load_target} if args.load_target else {}
    names = target_names(rows, bed)
    multi = len(bed.targets or []) > 1
    out, reasons, records = [], {}, []
    for target in ([t.label for t in bed.targets] if bed.targets else [""]):
        for delay in args.delays:
            hit = stats[(stats["target_label"] == target) & (stats["delay_ticks"] == delay)]
            mean, ci, n = bw.get((target, delay), (math.nan, math.nan, 0))
            delay_ns = delay * 1e6 / khz if khz else math.nan
            lat = [math.nan] * 3
            if hit.empty:
                why = not_run(rows, {"target_label": target, "delay_ticks": delay})
                if why:
                    reasons[f"{names.get(target, target) + ' ' if multi else ''}delay {delay}"] = why
            else:
                lat = [hit.iloc[0]["p50"], hit.iloc[0]["p5"], hit.iloc[0]["p95"]]
            out.append([*([names.get(target, target)] if multi else []), delay, delay_ns, *lat, mean, ci])
            records.append({**({"target": target} if target else {}), **where, "delay_ticks": delay, "delay_ns": delay_ns,
                            "latency_median_ns": lat[0], "latency_p5_ns": lat[1], "latency_p95_ns": lat[2],
                            "bw_gbps_mean": mean, "bw_gbps_ci95": ci, "runs": n})
    first = rows[rows["thread"].astype(str) == "all"].head(1)
    threads = int(first["threads"].iloc[0]) if not first.empty else 0
    return Table(
        title=headline("loaded-latency", rows, bed) + (f" on {only_target(rows)}" if not multi else "")
        + (f", load threads on {args.load_target}" if args.load_target else ""),
        statistic=(f"thread 0 probes the latency of single {args.op}s ({args.pattern}) while {threads - 1} thread(s) "
                   f"inject {args.op}s{' into ' + args.load_target if args.load_target else ''} with the delay "
                   f"between accesses; latency ns: median, p5, p95 of the probe's "
                   f"samples; bandwidth GB/s (1e9 B/s) of all threads: mean over {args.repeats} run(s) of "
                   f"{args.duration_ms} ms and its 95 % CI"),
        columns=[*(["target"] if multi else []), "delay ticks", "delay ns", "latency median ns", "p5 ns", "p95 ns",
                 "bandwidth GB/s", "+-95% CI"],
        rows=out, records=records, notes=reasons_note(reasons) + emulation_note(rows))


def _delays(text: str) -> tuple[int, ...]:
    try:
        return tuple(P.parse_int(v) for v in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def loaded_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--op", choices=PROBE_OPS, default="load",
                   help="what the probe and the injectors issue (load)")
    p.add_argument("--pattern", choices=("rand", "seq"), default="rand", help="access pattern (rand)")
    p.add_argument("--probe-target", metavar="TARGET",
                   help="the target thread 0 probes, as --target takes it: on the module a named target "
                        "(targets/NAME), on the user backend dram, dram:NODE, cxl or a DAX file")
    p.add_argument("--load-target", metavar="TARGET",
                   help="the target the load threads run on (run parameter load_target): on the module a "
                        "named target, on the user backend dram:NODE, cxl or a DAX file (default: the probe's)")
    p.add_argument("--delays", type=_delays, default=LOADED_DELAYS, metavar="TICKS,...",
                   help="TSC ticks between injected accesses (" + ",".join(map(str, LOADED_DELAYS)) + ")")


def probe_and_load(args: argparse.Namespace) -> None:
    """loaded-latency's --probe-target (the --target of the run) and --load-target (its run
    parameter load_target), checked before anything is opened."""
    probe, load = getattr(args, "probe_target", None), getattr(args, "load_target", None)
    if probe:
        if args.target and args.target != probe:
            raise ConfigError(f"--probe-target {probe} with --target {args.target}", "give one of them")
        args.target = probe
    if load and args.targets is not None:
        raise ConfigError(f"--load-target {load} with --targets {args.targets}",
                          "probe one target: give it with --probe-target")
    if load and "load_target" not in P.PARAMS:
        raise ConfigError(f"--load-target {load}: this build's parameter table has no load_target",
                          "build the module and pmemlab-run of this tree (make)")


ONE = OneLiner("probe latency vs bandwidth under injected load (mlc --loaded_latency)",
               ("pmemlab loaded-latency", "pmemlab loaded-latency --op ntstore --delays 0,1000,10000",
                "pmemlab loaded-latency --threads 4 --duration-ms 200 -o results/loaded-latency.csv",
                "pmemlab loaded-latency --probe-target cxl --load-target dram"),
               loaded_config, loaded_table, "bandwidth", duration_ms=1000, options=loaded_options,
               threads_default="the CPUs of the target's node, at least 2")
