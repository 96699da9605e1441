"""The target axis on the command line: `--targets`, `--pmem`, `--pmem-dram`, `--ko`, and
`pmemlab sweep` over several targets into one CSV (target_axis.py says what a target is,
sweep/over_targets.py how the sweep goes)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

from pmemlab import exitcodes, ipmctl, machine, target_axis
from pmemlab.backend_user import TARGET_KEYS
from pmemlab.config import SweepConfig, count_points, expand, load_config
from pmemlab.errors import ConfigError, Interrupted, PmemlabError, user_message
from pmemlab.sweep import SweepOptions, sidecar_path, summary_path
from pmemlab.sweep.core import Sweep
from pmemlab.sweep.over_targets import probe_targets
from pmemlab.target_axis import LOADED, Loader, Substitutes, TargetLoad

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
    p.add_argument("--ko", metavar="PATH", help="the pmemlab.ko loaded on each target (default: $PMEMLAB_KO, else "
                   "build/$(uname -r)/pmemlab.ko)")


def chosen_loads(args: argparse.Namespace, cfg: SweepConfig | None) -> list[TargetLoad] | None:
    """The target axis the options and the config ask for; None: the backend as it is."""
    if getattr(args, "targets", None) is None and not (cfg and cfg.targets):
        return None
    subs = Substitutes.probe(args.pmem, args.pmem_dram)
    return target_axis.choose_loads(cfg, args.targets, subs)


def open_loader(args: argparse.Namespace, backend_opts: Mapping[str, str]) -> Loader:
    """The loader of the chosen backend: the module reloaded, or the runner re-pointed."""
    kind = getattr(args, "backend", None) or backend_opts.get("backend", "kernel")
    if kind == "user":
        return target_axis.UserLoader({k: v for k, v in backend_opts.items()
                                       if k in TARGET_KEYS and k not in ("backend", "target")})
    if set(backend_opts) - {"backend"}:
        raise ConfigError(f"{', '.join(sorted(set(backend_opts) - {'backend'}))}: options of backend=user",
                          "on the module, give them in the target's load: --targets 'dram=dram dram_size=1G'")
    return target_axis.kernel_loader(args.ko, Path(args.sysfs) if args.sysfs else None)


def sweep_output(args: argparse.Namespace, cfg: SweepConfig) -> Path:
    """-o, else OUT_DIR/NAME.csv."""
    return Path(args.output) if args.output else Path(args.out_dir) / f"{cfg.name}.csv"


def sweep_each(args: argparse.Namespace, one: Callable[[argparse.Namespace], int]) -> int:
    """`pmemlab sweep A.toml B.toml ...`: every config is read first (a bad one stops all before
    anything runs), then each runs in turn in this process (in an emulated guest a Python start
    and the pandas import take tens of seconds each). A config that ends in an error does not stop
    the next; the exit code is the worst of them."""
    paths = list(args.config)
    if args.output and len(paths) > 1:
        raise ConfigError(f"-o {args.output} with {len(paths)} configs", "give --out-dir DIR: each writes DIR/NAME.csv")
    from pmemlab.backend_user import split_backend_args
    from pmemlab.cli import parse_assignments

    overrides, _ = split_backend_args(parse_assignments(args.set, "--set"))
    for path in paths:
        load_config(path, overrides=overrides, scale=args.scale)
    codes = []
    for path in paths:
        started = time.monotonic()
        try:
            codes.append(one(argparse.Namespace(**{**vars(args), "config": path})))
        except Interrupted:
            raise
        except PmemlabError as exc:
            print(user_message(exc), file=sys.stderr)
            codes.append(exc.exit_code)
        if len(paths) > 1:
            print(f"pmemlab: {path} took {time.monotonic() - started:.0f} s", file=sys.stderr)
    return max(codes)


def online_cpus() -> int:
    return int(machine.cpu_info(machine.HostPaths())["online_cpus"])


def sweep_over_targets(args: argparse.Namespace, cfg: SweepConfig, loads: list[TargetLoad],
                       backend_opts: Mapping[str, str]) -> int:
    """`pmemlab sweep` over a target axis into one CSV."""
    if args.target:
        raise ConfigError(f"--target {args.target} with the targets {', '.join(t.label for t in loads)}",
                          f"name the targets with --targets (or --targets {LOADED} to use --target)")
    output = sweep_output(args, cfg)
    if args.dry_run:
        _print_dry_run(cfg, loads, output)
        return exitcodes.OK
    loader = open_loader(args, backend_opts)
    try:
        targets = probe_targets(cfg, loads, loader, online_cpus())
        skipped = [p for t in targets if t.bench is not None for p in t.points if p.skip_reason]
        if skipped:
            reasons = sorted({p.skip_reason for p in skipped})
            print(f"pmemlab: {len(skipped)} points cannot run on their target and are recorded as skipped: "
                  + "; ".join(reasons[:5]), file=sys.stderr)
        info = next((t.bench.info for t in targets if t.bench and t.bench.info), None) or {}
        media = ipmctl.MediaCounters(runner=machine.run_tool, available=bool(info.get("ipmctl", {}).get("available")))
        opts = SweepOptions(output=output, fail_fast=args.fail_fast, fresh=args.fresh,
                            progress=not args.no_progress, argv=sys.argv[:])
        report = Sweep.over_targets(cfg, targets, loader, opts, media).run()
    finally:
        loader.close()
    print(f"{cfg.name}: {report.runs} runs ({report.ok} ok, {report.failed} failed, {report.skipped} skipped"
          f"{f', {report.resumed} resumed' if report.resumed else ''}) on {', '.join(t.label for t in loads)} "
          f"-> {report.csv} (sidecar {sidecar_path(output)}, summary {summary_path(output)})")
    return exitcodes.for_sweep(report)


def _print_dry_run(cfg: SweepConfig, loads: list[TargetLoad], output: Path) -> None:
    points = expand(cfg)
    runs = len(points) * (cfg.adaptive.min_repeats if cfg.adaptive else cfg.repeats)
    print(f"{cfg.name}: {count_points(cfg)} combinations, {len(points)} points after filters, {runs} runs per target "
          f"(points are checked against each target when it is loaded)")
    for load in loads:
        state = f"not measured: {load.unavailable}" if load.unavailable else f"load {load.text()}"
        print(f"  target {load.label}: {state}")
    varied = [p.varied for p in points]
    if varied and varied[0]:
        print(pd.DataFrame(varied).to_string(max_rows=40))
    print(f"output would go to {output} (one CSV, column target_label)")

