"""The target axis on the command line: `--targets`, `--pmem`, `--pmem-dram`, `--ko`, and
`pmemlab sweep` over several targets into one CSV (target_axis.py says what a target is,
sweep/over_targets.py how the sweep goes)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from pmemlab import exitcodes, target_axis

from pmemlab.host import ipmctl, machine, probe
from pmemlab.backends.user import TARGET_KEYS, split_backend_args
from pmemlab.cliargs import parse_assignments
from pmemlab.config import SweepConfig, count_points, expand, load_config
from pmemlab.errors import ConfigError, Interrupted, PmemlabError, user_message
from pmemlab.sweep.core import Sweep, SweepOptions, SweepReport
from pmemlab.sweep.over_targets import probe_targets
from pmemlab.target_axis import LOADED, Loader, Substitutes, TargetLoad

if TYPE_CHECKING:  # pandas is imported by the functions that use it: `pmemlab run` never needs it
    import pandas as pd

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
    """The target axis the options and the config ask for: --targets, else the config's
    [sweep.targets], else --default-targets; None: the backend as it is."""
    option = getattr(args, "targets", None)
    if option is None and not (cfg and cfg.targets):
        option = getattr(args, "default_targets", None)
        if option is None:
            return None
    subs = Substitutes.probe(args.pmem, args.pmem_dram)
    return target_axis.choose_loads(cfg, option, subs)


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


def sweep_each(args: argparse.Namespace,
               one: Callable[[argparse.Namespace], tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """`pmemlab sweep A.toml B.toml ...`: every config is read first (a bad one stops all before
    anything runs), then each runs in turn in this process (in an emulated guest a Python start
    and the pandas import take tens of seconds each). With several, a config that ends in an
    error does not stop the next: its error line is printed and its outcome is its exit code and
    the error. `one` runs one config: its exit code and its --json document."""
    paths = list(args.config)
    if len(paths) == 1:
        return [one(argparse.Namespace(**{**vars(args), "config": paths[0]}))]
    if args.output:
        raise ConfigError(f"-o {args.output} with {len(paths)} configs", "give --out-dir DIR: each writes DIR/NAME.csv")
    overrides, _ = split_backend_args(parse_assignments(args.set, "--set"))
    for path in paths:
        load_config(path, overrides=overrides, scale=args.scale)
    outcomes: list[tuple[int, dict[str, Any]]] = []
    for path in paths:
        started = time.monotonic()
        try:
            outcomes.append(one(argparse.Namespace(**{**vars(args), "config": path})))
        except Interrupted:
            raise
        except PmemlabError as exc:
            print(user_message(exc), file=sys.stderr)
            outcomes.append((exc.exit_code, {"config": path, "exit_code": exc.exit_code, "error": exc.one_line()}))
        print(f"pmemlab: {path} took {time.monotonic() - started:.0f} s", file=sys.stderr)
    bad = [str(path) for path, (code, _) in zip(paths, outcomes) if code != exitcodes.OK]
    if bad:  # the last line is the verdict, as for one config
        print(f"pmemlab: {MULTI_VERDICT.format(bad=len(bad), all=len(paths))} ({', '.join(bad)}); "
              "fix: see each config's line above", file=sys.stderr)
    return outcomes


MULTI_VERDICT = "{bad} of {all} configs did not end well"  # the last stderr line of several configs


def online_cpus() -> int:
    return int(machine.cpu_info(probe.HostPaths())["online_cpus"])


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
    loader = open_loader(args, backend_opts)
    try:
        targets = probe_targets(cfg, loads, loader, online_cpus())
        skipped = [p for t in targets if t.bench is not None for p in t.points if p.skip_reason]
        if skipped:
            reasons = sorted({p.skip_reason for p in skipped})
            print(f"pmemlab: {len(skipped)} points cannot run on their target and are recorded as skipped: "
                  + "; ".join(reasons[:5]), file=sys.stderr)
        info = next((t.bench.info for t in targets if t.bench and t.bench.info), None) or {}
        media = ipmctl.MediaCounters(runner=probe.run_tool, available=bool(info.get("ipmctl", {}).get("available")))
        opts = SweepOptions(output=output, fail_fast=args.fail_fast, fresh=args.fresh,
                            progress=not args.no_progress, argv=sys.argv[:])
        return Sweep.over_targets(cfg, targets, loader, opts, media).run()
    finally:
        loader.close()


def print_targets_dry_run(cfg: SweepConfig, loads: list[TargetLoad], output: Path, as_json: bool) -> dict[str, Any]:
    """What a sweep over targets would run, as text (not with --json); returns the --json document.
    The points are checked against each target only when it is loaded."""
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
          f"(points are checked against each target when it is loaded)")
    for load in loads:
        state = f"not measured: {load.unavailable}" if load.unavailable else f"load {load.text()}"
        print(f"  target {load.label}: {state}")
    varied = [p.varied for p in points]
    if varied and varied[0]:
        print(pd.DataFrame(varied).to_string(max_rows=40))
    print(f"output would go to {output} (one CSV, column target_label)")
    return doc
