"""What a one-liner is (OneLiner: its help, its sweep built as data, its table, its own options
and target axis), and what more than one of them shares: the ops the latency ones issue, the
defaults, the size option."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from pmemlab import params as P
from pmemlab.backends.protocol import BackendKind
from pmemlab.cli.oneliners.bed import Bed, Sizing
from pmemlab.cli.oneliners.tables import Table
from pmemlab.config import SweepConfig
from pmemlab.targets.spec import TargetLoad

if TYPE_CHECKING:  # pandas is imported by the functions that use it: `pmemlab run` never needs it
    import pandas as pd

DEFAULT_COUNT = 100_000  # latency samples per run: 30-50 ms of single accesses on real memory
DEFAULT_DRAM_SIZE = "256M"  # the module's own default DRAM target, on each node of a matrix
# the ops the latency one-liners issue, from the op table (core/ops.def, in its order): the reads,
# and the durable writes whose flush keeps the line cached (clwb; none for a non-temporal store)
KEEPING_FLUSH = "clwb"
PROBE_OPS: tuple[str, ...] = tuple(op for op in P.OPS if op in P.READ_OPS or
                                   (op in P.DURABLE_WRITES and P.flush_of(op) in ("", KEEPING_FLUSH)))


@dataclass(frozen=True)
class OneLiner:
    """A one-liner of the family: its command name is its key in ONELINERS (and its row in
    cli/commands.py). `config` builds its sweep as data (config.sweep_config), sized by its
    targets; `options` adds the options it alone takes."""

    help: str
    examples: tuple[str, ...]
    config: Callable[[argparse.Namespace, Sizing], SweepConfig]
    table: Callable[[argparse.Namespace, pd.DataFrame, pd.DataFrame, Bed], Table]
    measures: str  # latency (runs of --count samples) or bandwidth (runs of --duration-ms)
    repeats: int = 1
    duration_ms: int = 500
    matrix: bool = False
    # its own target axis (the matrices: a target per memory; tier-bw: one per ratio), else the
    # backend as it is or --targets
    axis: Callable[[argparse.Namespace, BackendKind], list[TargetLoad]] | None = None
    options: Callable[[argparse.ArgumentParser], None] | None = None
    threads_default: str = "the CPUs of the target's node"  # --threads' default, said in its help


def size_arg(text: str) -> int:
    """A size option's value (--working-set, --access-size) in bytes."""
    try:
        return P.canonical("working_set", text)  # type: ignore[no-any-return]
    except P.ConfigValueError as exc:
        raise argparse.ArgumentTypeError(exc.problem.reason) from None
