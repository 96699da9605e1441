"""`pmemlab latency-matrix`: idle latency from a CPU of each NUMA node to the DRAM of each node and
to each pmem namespace (mlc --latency_matrix)."""

from __future__ import annotations

import argparse

from pmemlab.cli.oneliners.bed import Sizing
from pmemlab.cli.oneliners.matrix import cpu_rows, dram_size_option, matrix_loads, matrix_table
from pmemlab.cli.oneliners.spec import OneLiner
from pmemlab.config import SweepConfig, sweep_config


def latency_matrix_config(args: argparse.Namespace, size: Sizing) -> SweepConfig:
    return sweep_config("latency-matrix", "pmemlab latency-matrix: idle latency, CPUs of each node x memory",
                        source="pmemlab latency-matrix", repeats=args.repeats,
                        base={"mode": "latency", "threads": 1, "op": "load", "pattern": "rand", "cold": 1,
                              "access_size": 8, "width": 8, "working_set": size.working_set(args.working_set),
                              "count": args.count},
                        axes={"cpus": [str(cpus[0]) for _, cpus in cpu_rows(size)]})


ONE = OneLiner("idle latency: CPUs of each NUMA node x each node's memory and pmem (mlc --latency_matrix)",
               ("pmemlab latency-matrix", "pmemlab latency-matrix --count 100000 --json"),
               latency_matrix_config, matrix_table("latency"), "latency", matrix=True, axis=matrix_loads,
               options=dram_size_option)
