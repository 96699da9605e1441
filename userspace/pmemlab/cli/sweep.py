"""`pmemlab sweep CONFIG...`: run TOML sweep configs into CSVs, each config in turn in this one
process, over the backend as it is loaded or over a target axis into one CSV."""

from __future__ import annotations

import argparse
import errno
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from pmemlab import exitcodes
from pmemlab.analysis import noise
from pmemlab.cli import backend as backends
from pmemlab.cli.parser import command_parser
from pmemlab.cli.args import parse_assignments, split_backend_args
from pmemlab.config import Point, SweepConfig, count_points, expand, load_config
from pmemlab.errors import ConfigError, Interrupted, PmemlabError, user_message
from pmemlab.host import ipmctl, probe, safety
from pmemlab.output import add_json, print_json
from pmemlab.sweep import Bench, SweepFiles, SweepOptions, SweepReport, check_output, sidecar_path, summary_path
from pmemlab.targets.sweep import TargetBench, target_sweep
from pmemlab.cli.target_axis import add_target_options, check_target_option, chosen_loads, print_targets_dry_run
from pmemlab.cli.target_axis import sweep_over_targets


def add_parser(sub: Any, name: str) -> None:
    p = command_parser(sub, name, "run TOML sweep configs into CSVs",
                       ["pmemlab sweep configs/bw-threads.toml",
                        "pmemlab sweep configs/bw-size.toml --scale quick -o results/bw-size.csv",
                        "pmemlab sweep configs/idle-latency.toml --set count=20000 --dry-run",
                        "pmemlab sweep configs/bw-threads.toml --scale quick --backend user --targets dram:0 --json",
                        "pmemlab sweep configs/idle-latency.toml --targets pmem,dram --pmem /dev/pmem0",
                        "pmemlab sweep configs/bw-threads.toml configs/bw-size.toml --scale quick --out-dir results"],
                       description="Run every point of a TOML sweep config (times its repeats) into a tidy CSV, "
                                   "with a sidecar (NAME.json), a summary (NAME.summary.csv) and latency histograms "
                                   "(NAME.hist.csv) beside it; over a target axis (--targets or the config's "
                                   "[sweep.targets]) every target's rows go into the one CSV, told apart by "
                                   "target_label. Several configs run in turn in this one process. Rerunning "
                                   "resumes; Ctrl-C leaves a valid CSV.")
    p.add_argument("config", type=Path, nargs="+", help="sweep config (TOML); several run in turn in this one process")
    p.add_argument("-o", "--output", type=Path, help="CSV to write (default: OUT_DIR/<sweep name>.csv; one config)")
    p.add_argument("--out-dir", type=Path, default=Path("results"), help="where the CSVs go without -o (results)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="set a parameter for every point, over [base] or an axis (repeatable)")
    p.add_argument("--target", help="refuse to run unless the module's target is this; with backend=user: the target")
    p.add_argument("--backend", choices=("kernel", "user"), help="kernel (default) or user; also --set backend=...")
    p.add_argument("--fail-fast", action="store_true", help="stop at the first failed point")
    p.add_argument("--fresh", action="store_true", help="discard an existing CSV instead of resuming it")
    p.add_argument("--strict", action="store_true",
                   help="points this machine cannot run are errors (default: recorded as skipped)")
    p.add_argument("--dry-run", action="store_true", help="expand and validate, print the points, run nothing")
    p.add_argument("--scale", default=os.environ.get("PMEMLAB_SCALE", "full"), metavar="NAME",
                   help="apply the config's [scale.NAME] overlay, e.g. quick (default: $PMEMLAB_SCALE or full)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (or lines, on a non-terminal)")
    add_target_options(p)
    p.add_argument("--default-targets", metavar="LIST",
                   help="the targets of a config that declares none ([sweep.targets]) when --targets is not "
                        "given, as --targets takes them (e.g. pmem; default: the backend as it is loaded)")
    add_json(p, "the points (--dry-run) or how the sweep went (a list for several configs)")


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


def run(args: argparse.Namespace) -> int:
    """`pmemlab sweep CONFIG...`: each config in turn (sweep_each); the exit code is the
    worst of them; --json prints one document (a list of them for several configs)."""
    outcomes = sweep_each(args, _sweep_config)
    code = max(c for c, _ in outcomes)
    if args.json:
        docs = [doc for _, doc in outcomes]
        print_json(docs[0] if len(docs) == 1 else {"exit_code": code, "sweeps": docs})
    return code


def _sweep_config(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    """One config: the backend as it is loaded, or over the config's target axis into one CSV.
    Returns the exit code and the --json document (the text is printed here)."""
    overrides, backend_opts = split_backend_args(parse_assignments(args.set, "--set"))
    cfg = load_config(args.config, overrides=overrides, scale=args.scale)
    if args.strict:
        cfg.on_unsupported = "error"
    output = sweep_output(args, cfg)
    check_output(output)  # before anything is probed or run, --dry-run too
    SweepFiles(output).check_ours()
    for key, table in cfg.pinned.items():
        print(f"pmemlab: --set {key}={cfg.overrides[key]} replaces the {'[[zip]] key' if table == 'zip' else 'axis'} "
              f"{key}: every point runs with {key}={cfg.base.get(key, cfg.overrides[key])}", file=sys.stderr)
    loads = chosen_loads(args, cfg)
    if loads is not None:
        check_target_option(args, loads)
        if args.dry_run:
            return exitcodes.OK, print_targets_dry_run(cfg, loads, output, args.json)
        report = sweep_over_targets(args, cfg, loads, backend_opts, output)
        return _sweep_end(args, cfg, report, output, [load.label for load in loads])
    backend = backends.backend(args, backend_opts)
    loaded = backend.loaded()
    bench = Bench.probe(backend, backends.online_cpus(), facts=loaded, info=loaded or not args.dry_run)
    points = expand(cfg, bench.facts, bench.discovered)  # every problem is raised here, before any run
    if args.dry_run:
        return exitcodes.OK, _print_dry_run(cfg, points, output, loaded, args.json)
    backend.require_loaded()
    backend.check_target(args.target or cfg.target)
    # the write points the module's verdict skipped for what the target carries count too: the
    # sweep is refused whole, with what blkid and lsblk find named
    safety.check_overwrite(bench.info or {}, any(safety.writes(p.params) for p in points
                                                if not p.skip_reason or p.skip_errno == errno.EPERM))
    skipped = [p for p in points if p.skip_reason]
    if skipped:
        reasons = sorted({p.skip_reason for p in skipped})
        print(f"pmemlab: {len(skipped)} of {len(points)} points cannot run here and are recorded as skipped: "
              + "; ".join(reasons[:5]), file=sys.stderr)
    info = bench.info or {}
    media = ipmctl.MediaCounters(runner=probe.run_tool, available=bool(info.get("ipmctl", {}).get("available")))
    opts = SweepOptions(output=output, fail_fast=args.fail_fast, fresh=args.fresh,
                        progress=not args.no_progress, argv=sys.argv[:])
    sweep, _ = target_sweep(cfg, [TargetBench.as_is(bench, points)], opts=opts, media=media)
    return _sweep_end(args, cfg, sweep.run(), output, [])


def _sweep_end(args: argparse.Namespace, cfg: SweepConfig, report: SweepReport, output: Path,
               targets: Sequence[str]) -> tuple[int, dict[str, Any]]:
    """How a sweep went: the noise warning and the partial-sweep line on stderr, the summary line
    (text) or the document (--json), and the exit code."""
    code = exitcodes.for_sweep(report)
    warning = _noise_warning(report.summary, output)
    if warning:
        print(f"pmemlab: warning: {warning}", file=sys.stderr)
    if code == exitcodes.PARTIAL:
        print(f"pmemlab: {report.failed} of {report.runs} runs failed (status error, timeout or refused); "
              f"the others are in {report.csv}; fix: see their error column, then rerun the same command "
              "to retry only the failed runs", file=sys.stderr)
    if not args.json:
        print(f"{cfg.name}: {report.runs} runs ({report.ok} ok, {report.failed} failed, {report.skipped} skipped"
              f"{f', {report.resumed} resumed' if report.resumed else ''})"
              f"{' on ' + ', '.join(targets) if targets else ''} -> {report.csv} "
              f"(sidecar {sidecar_path(output)}, summary {summary_path(output)})")
    return code, {"sweep": cfg.name, "status": report.status, "exit_code": code, **report.counts(),
                  "resumed": report.resumed, "points": report.points, **({"targets": list(targets)} if targets else {}),
                  "csv": report.csv, "sidecar": sidecar_path(output), "summary": report.summary,
                  "histogram": SweepFiles(output).histogram, "noise_warning": warning or None}


def _noise_warning(summary: Path | None, output: Path) -> str:
    """The end-of-sweep warning about points that should not be trusted (pmemlab.analysis.noise)."""
    if summary is None or not summary.exists() or summary.stat().st_size == 0:
        return ""
    import pandas as pd

    try:
        table = pd.read_csv(summary, usecols=lambda c: c in ("noisy", "cv_pct", "steal_pct_max"))
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return ""
    return noise.sweep_warning(table, summary.name)


def _print_dry_run(cfg: SweepConfig, points: Sequence[Point], output: Path, loaded: bool,
                   as_json: bool) -> dict[str, Any]:
    """The points a sweep would run, as text (not with --json); returns the --json document."""
    runs = len(points) * (cfg.adaptive.min_repeats if cfg.adaptive else cfg.repeats)
    skipped = [p for p in points if p.skip_reason]
    est = _estimate_s(points, cfg)
    doc = {"sweep": cfg.name, "combinations": count_points(cfg), "points": len(points), "runs": runs,
           "adaptive": cfg.adaptive is not None, "skipped": len(skipped), "checked": loaded,
           "estimated_s": est or None, "output": output,
           "point_list": [{"index": p.index, "point_key": p.key, **p.varied,
                           **({"skip": p.skip_reason} if p.skip_reason else {})} for p in points]}
    if as_json:
        return doc
    print(f"{cfg.name}: {count_points(cfg)} combinations, {len(points)} points after filters, "
          f"{runs} runs{' (adaptive, at least)' if cfg.adaptive else ''}; "
          f"{len(skipped)} points skipped on this machine{'' if loaded else ' (module not loaded: not checked)'}")
    if est:
        print(f"estimated run time: at least {est / 60:.1f} min")
    varied = [p.varied | ({"skip": p.skip_reason} if p.skip_reason else {}) for p in points]
    if varied and varied[0]:
        import pandas as pd

        print(pd.DataFrame(varied).to_string(max_rows=40))
    print(f"output would go to {output}")
    return doc


def _estimate_s(points: Sequence[Point], cfg: SweepConfig) -> float:
    reps = cfg.adaptive.min_repeats if cfg.adaptive else cfg.repeats
    total = 0.0
    for p in points:
        if p.skip_reason:
            continue
        if p.params["mode"] == "bandwidth" and not p.params["count"]:
            total += p.params["duration_ms"] / 1000.0 * reps
    return total
