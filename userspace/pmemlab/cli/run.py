"""`pmemlab run KEY=VALUE...`: one point, once: a sweep of one point whose rows are printed, not
written."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any, Sequence

from pmemlab import exitcodes
from pmemlab import params as P
from pmemlab.cli import backend as backends
from pmemlab.cli.parser import command_parser
from pmemlab.cli.args import parse_assignments, positive_seconds, split_backend_args
from pmemlab.config import command_line_problems, one_point
from pmemlab.errors import PmemlabError
from pmemlab.host import safety
from pmemlab.output import print_json, text_table
from pmemlab.sweep import Bench, one_point_sweep
from pmemlab.table import BASE_COLUMNS, csv_text

RUN_TABLE_COLUMNS: tuple[str, ...] = (
    "thread", "cpu", "thread_node", "thread_op", "ops", "bytes", "elapsed_ns", "bw_gbps", "irqoff_pct",
    "lat_ns_min", "lat_ns_mean", "lat_ns_p50", "lat_ns_p99", "lat_ns_p999", "lat_ns_p9999", "lat_ns_max",
)


def add_parser(sub: Any, name: str) -> None:
    p = command_parser(sub, name, "one measurement: pmemlab run op=ntstore access_size=256 threads=2",
                       ["pmemlab run op=ntstore access_size=256 threads=2",
                        "pmemlab run mode=latency op=load pattern=rand count=100000 cold=1 --json",
                        "pmemlab run backend=user target=dram op=load duration_ms=200 --csv"],
                       description="One measurement with the parameters given (the others keep their defaults); "
                                   "prints a row per thread and the aggregate.")
    p.add_argument("assignments", nargs="*", metavar="KEY=VALUE", help="run parameters (others keep their defaults)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true", help="print the rows as CSV (same columns as a sweep)")
    out.add_argument("--json", action="store_true", help="print the rows as one JSON document")
    p.add_argument("--target", help="refuse to run unless the module's target is this (e.g. /dev/pmem0); "
                                    "with backend=user: the target (dram[:NODE], a DAX file, /dev/daxX.Y)")
    p.add_argument("--backend", choices=("kernel", "user"), help="kernel (pmemlab.ko, default) or user "
                   "(userspace/runner/pmemlab-run); also backend=... among the KEY=VALUEs")
    p.add_argument("--timeout", type=positive_seconds, default=600.0, metavar="S",
                   help="abort the run after S seconds (600)")


def run(args: argparse.Namespace) -> int:
    raw, backend_opts = split_backend_args(parse_assignments(args.assignments))
    values, problems = P.normalize(raw)
    backend = backends.backend(args, backend_opts)
    if problems:
        raise command_line_problems(problems)
    backend.require_loaded()
    bench = Bench.probe(backend, backends.online_cpus())
    backend.check_target(args.target)
    # before the module's verdict on the values (which refuses the same run): blkid and lsblk
    # name more of what is on the device, mounts included
    safety.check_overwrite(bench.info or {}, safety.writes(values))
    point = one_point(values, raw, bench.facts, bench.discovered)  # the interleave ndctl found, unless given
    sweep, recorder = one_point_sweep(point, bench, timeout_s=args.timeout)
    report = sweep.run()
    rows = recorder.rows
    status, error = str(rows[-1]["status"]), str(rows[-1].get("error") or "")
    cond = bench.conditions
    if args.csv:
        columns = list(dict.fromkeys(k for row in rows for k in row))
        sys.stdout.write(csv_text([c for c in BASE_COLUMNS if c in columns] +
                                  [c for c in columns if c not in BASE_COLUMNS], rows, header=True))
    elif args.json:
        print_json(rows)
    else:
        changed = " ".join(f"{k}={point.params[k]}" for k in raw)
        print(f"pmemlab run on {cond.get('target')} ({cond.get('target_kind')}): {changed or 'defaults'}")
        if status == "ok":
            print("\n".join(run_table(rows)))
        else:
            print(f"status: {status}: {error}")
    code = exitcodes.for_run(report)
    if code != exitcodes.OK:
        fix = (f"raise --timeout (now {args.timeout:g} s) or shorten the run (duration_ms, count)"
               if status == "timeout" else backend.failure_fix(status))
        print(PmemlabError(f"run {status}: {error}", fix).one_line(), file=sys.stderr)
    return code


def _missing(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def run_table(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The lines `pmemlab run` prints: RUN_TABLE_COLUMNS that hold a value in some row, numbers
    with three decimals, a missing value as NaN."""
    cols = [c for c in RUN_TABLE_COLUMNS if any(not _missing(r.get(c)) for r in rows)]

    def cell(value: Any) -> str:
        if _missing(value):
            return "NaN"
        return f"{value:.3f}" if isinstance(value, float) else str(value)

    return text_table(cols, [[cell(r.get(c)) for c in cols] for r in rows])
