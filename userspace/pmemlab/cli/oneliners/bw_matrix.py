"""`pmemlab bw-matrix`: read bandwidth of each NUMA node's CPUs to the DRAM of each node and to each
pmem namespace (mlc --bandwidth_matrix)."""

from __future__ import annotations

import argparse

from pmemlab import params as P
from pmemlab.cli.oneliners.bed import Sizing
from pmemlab.cli.oneliners.matrix import cpu_rows, dram_size_option, matrix_loads, matrix_table
from pmemlab.cli.oneliners.spec import OneLiner
from pmemlab.config import SweepConfig, sweep_config


def bw_matrix_config(args: argparse.Namespace, size: Sizing) -> SweepConfig:
    per_node = [cpus[: args.threads] if args.threads else cpus for _, cpus in cpu_rows(size)]
    return sweep_config("bw-matrix", "pmemlab bw-matrix: read bandwidth, CPUs of each node x memory",
                        source="pmemlab bw-matrix", repeats=args.repeats,
                        base={"mode": "bandwidth", "op": "load", "pattern": "seq", "access_size": 256,
                              "placement": "per-thread", "working_set": size.working_set(args.working_set),
                              "duration_ms": args.duration_ms},
                        zips=[{"cpus": [P.fmt_cpulist(c) for c in per_node], "threads": [len(c) for c in per_node]}])


ONE = OneLiner("read bandwidth: CPUs of each NUMA node x each node's memory and pmem (mlc --bandwidth_matrix)",
               ("pmemlab bw-matrix", "pmemlab bw-matrix --duration-ms 500 --threads 2"),
               bw_matrix_config, matrix_table("bw"), "bandwidth", repeats=3, matrix=True, axis=matrix_loads,
               options=dram_size_option)
