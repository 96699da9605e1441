"""MLC-style one-liners: measurements that need no config, printed as tables (or --json).

  idle-latency     one access at a time: loads of cold lines (random, sequential), store+clwb
                   and ntstore of warm lines (FAST'20 fig 2; mlc --idle_latency is the random load)
  loaded-latency   thread 0 probes the latency of single loads while the other threads inject
                   loads with a delay between accesses: latency against the bandwidth they reach
                   (mlc --loaded_latency)
  peak-bw          the bandwidth of a node's worth of threads per op and for load:store mixes
                   (mlc --peak_injection_bandwidth)
  latency-matrix   idle latency from a CPU of each NUMA node to the DRAM of each node and to each
                   pmem namespace (mlc --latency_matrix)
  bw-matrix        read bandwidth of each node's CPUs to the same memories (mlc --bandwidth_matrix)
  tier-bw          bandwidth of a node's threads on one DRAM target spread over the DRAM node and a
                   CXL node at a set of DRAM:CXL page weights, for loads and a 2:1 load:store mix:
                   which ratio gives the most, and how much more than DRAM alone

Each builds its sweep as data (config.sweep_config), sized by the facts of its targets (working
set, threads per node), and runs it with the sweep machinery: into memory, or with -o into a CSV
with its sidecar and summary as `pmemlab sweep` writes them. The backend is the module (--backend
kernel; the default when it is loaded) or the user backend (--backend user, pmemlab-run; the
default otherwise, on DRAM unless --target says otherwise). --targets measures several targets
into one table with a target column; the matrices have their own: the DRAM of each node with
memory (dram_node=N) and every fsdax namespace (the module only); tier-bw has a target per ratio
(dram_nodes=D,C dram_weights=d,c, pmemlab.analysis.tiers).

A file per command (idle_latency, loaded_latency, peak_bw, latency_matrix, bw_matrix, tier_bw:
its sweep, its table, its own options, its ONE), and what they share: spec (OneLiner, the
defaults), bed (where the runs go, what the defaults are sized by, the sweep run), tables (the
Table printed and the readings of the rows), matrix (the two matrices' rows, columns and table).
Here: the family (ONELINERS), the options every one-liner takes, and the command's run.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pmemlab import exitcodes
from pmemlab.analysis.advertised import advertised_bandwidth, advertised_latency, advertised_of, ratio
from pmemlab.cli import backend
from pmemlab.cli.args import positive_seconds
from pmemlab.cli.oneliners import bw_matrix, idle_latency, latency_matrix, loaded_latency, peak_bw, tier_bw
from pmemlab.cli.oneliners.bed import Bed, open_bed, pick_backend, run_sweep
from pmemlab.cli.oneliners.idle_latency import IDLE_ROWS, idle_label
from pmemlab.cli.oneliners.loaded_latency import probe_and_load
from pmemlab.cli.oneliners.spec import DEFAULT_COUNT, PROBE_OPS, OneLiner, size_arg
from pmemlab.cli.oneliners.tables import advertised_note, emulation_note, headline
from pmemlab.cli.target_axis import add_target_options
from pmemlab.errors import ConfigError, PmemlabError
from pmemlab.output import add_json, examples, print_json
from pmemlab.sweep import SweepFiles, check_output
from pmemlab.targets.open import is_name
from pmemlab.targets.spec import Substitutes, TargetLoad, choose_loads

ONELINERS: dict[str, OneLiner] = {
    "idle-latency": idle_latency.ONE,
    "loaded-latency": loaded_latency.ONE,
    "peak-bw": peak_bw.ONE,
    "latency-matrix": latency_matrix.ONE,
    "bw-matrix": bw_matrix.ONE,
    "tier-bw": tier_bw.ONE,
}

__all__ = [  # what other modules and the tests take from the family
    "IDLE_ROWS", "ONELINERS", "PROBE_OPS", "Bed", "OneLiner", "add_parser", "advertised_bandwidth", "advertised_latency",
    "advertised_note", "advertised_of", "emulation_note", "headline", "idle_label", "open_bed", "ratio", "run",
]


def add_parser(sub: Any, name: str) -> None:
    """The parser of the one-liner `name`: the options every one-liner takes, and its own."""
    one = ONELINERS[name]
    p = sub.add_parser(name, help=one.help, description=f"{one.help[:1].upper()}{one.help[1:]}.",
                       epilog=examples(*one.examples), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=("kernel", "user"),
                   help="kernel (pmemlab.ko; the default when it is loaded) or user (pmemlab-run)")
    if one.axis is None or one.matrix:
        p.add_argument("--target", help="user backend: the target (dram, dram:NODE, cxl, a DAX file; default dram); "
                                        "kernel: a named target of the module (targets/NAME), else refuse "
                                        "unless the module runs on it")
        add_target_options(p, "the backend as it is" if not one.matrix else
                           "the DRAM of each node with memory and, on the module, each fsdax namespace")
    p.add_argument("--repeats", type=int, default=one.repeats, metavar="N", help=f"runs per row ({one.repeats})")
    p.add_argument("--working-set", type=size_arg, metavar="SIZE",
                   help="window of the accesses (default: 1 GiB or the smallest target)")
    if one.measures == "latency":
        p.add_argument("--count", type=int, default=DEFAULT_COUNT, metavar="N",
                       help=f"samples per run ({DEFAULT_COUNT})")
    else:
        p.add_argument("--duration-ms", type=int, default=one.duration_ms, metavar="MS",
                       help=f"length of each run ({one.duration_ms})")
        p.add_argument("--threads", type=int, metavar="N", help=f"threads (default: {one.threads_default})")
    if one.options is not None:
        one.options(p)
    p.add_argument("-o", "--output", type=Path, metavar="CSV",
                   help="also write the rows, sidecar and summary as `pmemlab sweep` does")
    add_json(p, "the table")
    p.add_argument("--timeout", type=positive_seconds, default=600.0, metavar="S",
                   help="abort a run after S seconds (600)")


def run(args: argparse.Namespace) -> int:
    """The one-liner the command line names: its sweep built, run, its table printed."""
    name = str(args.command)
    one = ONELINERS[name]
    if getattr(args, "threads", None) is not None and args.threads < 1:
        raise ConfigError(f"--threads {args.threads}: at least 1", "give a positive count")
    if args.output:
        check_output(args.output)  # before anything is opened or run
        SweepFiles(args.output).check_ours()  # -o replaces only what a sweep wrote
    probe_and_load(args)
    kind = pick_backend(args)
    subs = Substitutes.probe(getattr(args, "pmem", None), getattr(args, "pmem_dram", None))
    if getattr(args, "targets", None) is not None:
        loads = choose_loads({}, args.targets, subs)
    elif kind == "kernel" and is_name(getattr(args, "target", None)):  # a named target of the module
        loads = [TargetLoad(args.target, (("target", args.target),))]
    elif one.axis is not None:
        loads = [subs.resolve(t) for t in one.axis(args, kind)]
    else:
        loads = None
    bed = open_bed(args, loads, backend.online_cpus())
    try:
        if not bed.benches:
            raise PmemlabError(f"no target of pmemlab {name} could be opened", "see the reasons above")
        report, rows, hist = run_sweep(one.config(args, bed.sizing()), bed, args)
    finally:
        bed.close()
    table = one.table(args, rows, hist, bed)
    if args.json:
        print_json(table.document(name))
    else:
        print(table.text())
    return exitcodes.for_sweep(report)
