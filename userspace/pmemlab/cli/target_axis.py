"""The target axis on the command line: `--targets`, `--pmem`, `--pmem-dram` (the options of
`pmemlab sweep` and the one-liners), and `pmemlab sweep` over several targets into one CSV
(targets/: spec.py says what a target is, open.py how it is opened, sweep.py how the sweep goes)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from pmemlab.cli import backend
from pmemlab.host import ipmctl, probe
from pmemlab.config import SweepConfig, count_points, expand
from pmemlab.errors import ConfigError
from pmemlab.sweep import SweepOptions, SweepReport
from pmemlab.targets.open import open_loader
from pmemlab.targets.spec import LOADED, Substitutes, TargetLoad, choose_loads
from pmemlab.targets.sweep import probe_targets, target_sweep

TARGETS_HELP = ("the targets to measure, into one CSV with a target_label column: comma-separated LABEL=LOAD "
                "(pmem=/dev/pmem0, dram-2m=dram dram_pages=2m, dram1=dram:1), labels of the config's "
                "[sweep.targets], pmem (@PMEM@), emulated (@PMEM_DRAM@) or bare targets (dram, /dev/pmem1); "
                "'loaded': the module as it is loaded now")


def add_target_options(p: argparse.ArgumentParser,
                       default: str = "the config's [sweep.targets], else 'loaded'") -> None:
    """The options that choose and fill a target axis."""
    p.add_argument("--targets", metavar="LIST", help=f"{TARGETS_HELP} (default: {default})")
    p.add_argument("--pmem", metavar="DEV", help="the fsdax namespace @PMEM@ stands for (default: the first of "
                   "$PMEMLAB_PMEM, else /dev/pmem0 if it exists)")
    p.add_argument("--pmem-dram", metavar="DEV", help="the fsdax namespace on DRAM (memmap=) @PMEM_DRAM@ stands "
                   "for (default: the first of $PMEMLAB_PMEM_DRAM)")


def chosen_loads(args: argparse.Namespace, cfg: SweepConfig | None) -> list[TargetLoad] | None:
    """The target axis the options and the config ask for: --targets, else the config's
    [sweep.targets], else --default-targets; None: the backend as it is."""
    option = getattr(args, "targets", None)
    if option is None and not (cfg and cfg.targets):
        option = getattr(args, "default_targets", None)
        if option is None:
            return None
    subs = Substitutes.probe(args.pmem, args.pmem_dram)
    return choose_loads(cfg.targets if cfg else {}, option, subs)


def check_target_option(args: argparse.Namespace, loads: Sequence[TargetLoad]) -> None:
    """--target names the one target of a sweep of the module as it is; with a target axis the
    axis names them."""
    if args.target:
        raise ConfigError(f"--target {args.target} with the targets {', '.join(t.label for t in loads)}",
                          f"name the targets with --targets (or --targets {LOADED} to use --target)")


def sweep_over_targets(args: argparse.Namespace, cfg: SweepConfig, loads: list[TargetLoad],
                       backend_opts: Mapping[str, str], output: Path) -> SweepReport:
    """`pmemlab sweep` over a target axis into one CSV: each target opened and probed, then the
    points run target by target."""
    kind = str(getattr(args, "backend", None) or backend_opts.get("backend", "kernel"))
    loader = open_loader(kind, args.sysfs, backend_opts)
    try:
        targets = probe_targets(cfg, loads, loader, backend.online_cpus())
        skipped = [p for t in targets if t.bench is not None for p in t.points if p.skip_reason]
        if skipped:
            reasons = sorted({p.skip_reason for p in skipped})
            print(f"pmemlab: {len(skipped)} points cannot run on their target and are recorded as skipped: "
                  + "; ".join(reasons[:5]), file=sys.stderr)
        info = next((t.bench.info for t in targets if t.bench and t.bench.info), None) or {}
        media = ipmctl.MediaCounters(runner=probe.run_tool, available=bool(info.get("ipmctl", {}).get("available")))
        opts = SweepOptions(output=output, fail_fast=args.fail_fast, fresh=args.fresh,
                            progress=not args.no_progress, argv=sys.argv[:])
        sweep, _ = target_sweep(cfg, targets, opts=opts, media=media)
        return sweep.run()
    finally:
        loader.close()


def print_targets_dry_run(cfg: SweepConfig, loads: list[TargetLoad], output: Path, as_json: bool) -> dict[str, Any]:
    """What a sweep over targets would run, as text (not with --json); returns the --json document.
    The points are checked against each target only when it is opened."""
    import pandas as pd

    points = expand(cfg)
    runs = len(points) * (cfg.adaptive.min_repeats if cfg.adaptive else cfg.repeats)
    doc = {"sweep": cfg.name, "combinations": count_points(cfg), "points": len(points), "runs_per_target": runs,
           "adaptive": cfg.adaptive is not None, "checked": False, "output": output,
           "targets": [{"label": load.label, "load": load.text(), "not_measured": load.unavailable or None}
                       for load in loads],
           "point_list": [{"index": p.index, **p.varied} for p in points]}
    if as_json:
        return doc
    print(f"{cfg.name}: {count_points(cfg)} combinations, {len(points)} points after filters, {runs} runs per target "
          f"(points are checked against each target when it is opened)")
    for load in loads:
        state = f"not measured: {load.unavailable}" if load.unavailable else f"load {load.text()}"
        print(f"  target {load.label}: {state}")
    varied = [p.varied for p in points]
    if varied and varied[0]:
        print(pd.DataFrame(varied).to_string(max_rows=40))
    print(f"output would go to {output} (one CSV, column target_label)")
    return doc
