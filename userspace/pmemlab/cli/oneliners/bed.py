"""Where a one-liner's runs go: the backend as it is or every target of its axis (Bed), what
its defaults are sized by (Sizing), and its sweep run into memory or, with -o, into files."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from pmemlab import params as P
from pmemlab.backends.module import Module, sysfs_root
from pmemlab.backends.protocol import Backend, BackendKind
from pmemlab.backends.spec import BackendSpec
from pmemlab.config import SweepConfig
from pmemlab.sweep import Bench, Progress, SweepOptions, SweepReport
from pmemlab.table import HIST_CSV_COLUMNS, read_rows
from pmemlab.targets.open import Loader, open_loader
from pmemlab.targets.spec import TargetLoad
from pmemlab.targets.sweep import TargetBench, expand_targets, open_targets, target_sweep

if TYPE_CHECKING:  # pandas is imported by the functions that use it: `pmemlab run` never needs it
    import pandas as pd

DEFAULT_WORKING_SET = 1 * P.GiB  # at most: MLC-sized buffers, well beyond the caches


@dataclass
class Bed:
    """The benches of one command: the backend as it is (no axis), or every target of the axis."""

    kind: BackendKind
    benches: list[Bench]
    targets: list[TargetBench] | None = None
    loader: Loader | None = None
    notes: list[str] = field(default_factory=list)

    def close(self) -> None:
        if self.loader is not None:
            self.loader.close()

    def sizing(self) -> Sizing:
        return Sizing.of(self.benches)

    def axis(self) -> list[TargetBench]:
        """The targets its sweep runs on: the axis, or the backend as it is as an axis of one."""
        return self.targets if self.targets is not None else [TargetBench.as_is(self.benches[0])]


@dataclass(frozen=True)
class Sizing:
    """What the defaults are sized by: the smallest target, the CPUs of the targets' nodes, and the
    machine's nodes with CPUs."""

    target_size: int | None
    node_threads: int
    node_cpus: dict[int, tuple[int, ...]]
    tsc_khz: float | None

    @classmethod
    def of(cls, benches: Sequence[Bench]) -> Sizing:
        sizes = [b.facts.target_size for b in benches if b.facts and b.facts.target_size]
        nodes: dict[int, tuple[int, ...]] = {}
        counts: list[int] = []
        online = 1
        for b in benches:
            f = b.facts
            if f is None:
                continue
            online = max(online, f.online_cpus or 1)
            nodes.update({n: c for n, c in (f.node_cpus or {}).items() if c})
            if f.target_node is not None and f.node_cpus and f.node_cpus.get(f.target_node):
                counts.append(len(f.node_cpus[f.target_node]))
        if not counts:
            counts = [min((len(c) for c in nodes.values()), default=online)]
        khz = next((b.conditions.get("tsc_khz") for b in benches if b.conditions.get("tsc_khz")), None)
        return cls(target_size=min(sizes) if sizes else None, node_threads=max(1, min(counts)),
                   node_cpus=nodes or {0: tuple(range(online))}, tsc_khz=khz)

    def working_set(self, asked: int | None) -> int:
        """--working-set, else 1 GiB or the smallest target, whole MiB."""
        if asked:
            return asked
        limit = self.target_size or DEFAULT_WORKING_SET
        return max(P.MiB, min(DEFAULT_WORKING_SET, limit) // P.MiB * P.MiB)


def pick_backend(args: argparse.Namespace) -> BackendKind:
    """--backend, else the module when it is loaded, else the user backend."""
    if args.backend:
        return "kernel" if args.backend == "kernel" else "user"
    return "kernel" if Module(sysfs_root(args.sysfs)).loaded() else "user"


def open_backend(kind: BackendKind, args: argparse.Namespace) -> Backend:
    """The backend as it is: the loaded module, or the user backend on --target (dram)."""
    if kind == "user":
        return BackendSpec("user", target=args.target or "dram").open()
    return BackendSpec("kernel", sysfs=Path(args.sysfs) if args.sysfs else None).open()


def open_bed(args: argparse.Namespace, loads: list[TargetLoad] | None, online: int) -> Bed:
    kind = pick_backend(args)
    if loads is None:
        backend = open_backend(kind, args)
        backend.require_loaded()
        if kind == "kernel":
            backend.check_target(args.target)
        return Bed(kind, [Bench.probe(backend, online)])
    loader = open_loader(kind, args.sysfs)
    try:
        targets = open_targets(loads, loader, online)
    except BaseException:
        loader.close()
        raise
    return Bed(kind, [t.bench for t in targets if t.bench is not None], targets, loader)



def run_sweep(cfg: SweepConfig, bed: Bed, args: argparse.Namespace) -> tuple[SweepReport, pd.DataFrame, pd.DataFrame]:
    """The sweep of the command's config over the bed's targets: into memory, or with -o into its
    files."""
    import pandas as pd

    progress = not args.json and Progress(0, cfg.name, enabled=False).interactive
    cfg.timeout_s = args.timeout
    targets = bed.axis()
    expand_targets(cfg, targets)
    opts = SweepOptions(output=args.output, fresh=True, progress=progress, argv=sys.argv[:]) if args.output else None
    sweep, recorder = target_sweep(cfg, targets, opts=opts, progress=progress)
    report = sweep.run()
    if recorder is not None:
        return report, *_labelled(pd.DataFrame(recorder.rows), pd.DataFrame(recorder.hist))
    from pmemlab.analysis.resultset import histogram_path

    hpath = histogram_path(args.output)
    hist = read_rows(hpath, HIST_CSV_COLUMNS, "histogram CSV") if hpath.exists() else pd.DataFrame()
    return report, *_labelled(read_rows(args.output), hist)


def _labelled(rows: pd.DataFrame, hist: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows and histograms with target_label '' where a run had no target axis (the tables
    look rows up by it; a CSV gives it as empty, memory not at all)."""
    for frame in (rows, hist):
        if not frame.empty:
            frame["target_label"] = frame["target_label"].fillna("") if "target_label" in frame else ""
    return rows, hist
