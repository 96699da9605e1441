"""Command line: `pmemlab info | params | run | sweep | summarize | abort`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from pmemlab import __version__, exitcodes, ipmctl, machine, oneliners
from pmemlab import params as P
from pmemlab.backend import Backend, BackendSpec
from pmemlab.config import Point, SweepConfig, command_line_problems, count_points, expand, load_config, one_point
from pmemlab.config import target_loads
from pmemlab.errors import ConfigError, PmemlabError, user_message
from pmemlab.sweep import Bench, Sweep, SweepOptions, sidecar_path, summary_path, write_summary
from pmemlab.table import BASE_COLUMNS
from pmemlab.targets_cli import add_target_options, chosen_loads, sweep_each, sweep_output, sweep_over_targets

RUN_TABLE_COLUMNS: tuple[str, ...] = (
    "thread", "cpu", "thread_node", "thread_op", "ops", "bytes", "elapsed_ns", "bw_gbps", "irqoff_pct",
    "lat_ns_min", "lat_ns_mean", "lat_ns_p50", "lat_ns_p99", "lat_ns_p999", "lat_ns_p9999", "lat_ns_max",
)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="pmemlab",
        description="Drive the pmemlab.ko persistent-memory microbenchmark module: "
                    "machine facts, single runs, and config-driven sweeps into tidy CSV.",
    )
    ap.add_argument("--version", action="version", version=f"pmemlab {__version__}")
    ap.add_argument("--sysfs", metavar="DIR", help="module sysfs directory (default: $PMEMLAB_SYSFS or /sys/kernel/pmemlab)")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("info", help="target, module, CPU, NUMA and NVDIMM facts")
    p.add_argument("--json", action="store_true", help="machine-readable JSON")

    p = sub.add_parser("params", help="list the run parameters, defaults and allowed values")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("run", help="one measurement: pmemlab run op=ntstore access_size=256 threads=2")
    p.add_argument("assignments", nargs="*", metavar="KEY=VALUE", help="run parameters (others keep their defaults)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--csv", action="store_true", help="print the rows as CSV (same columns as a sweep)")
    out.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--target", help="refuse to run unless the module's target is this (e.g. /dev/pmem0); "
                                    "with backend=user: the target (dram[:NODE], a DAX file, /dev/daxX.Y)")
    p.add_argument("--backend", choices=("kernel", "user"), help="kernel (pmemlab.ko, default) or user "
                   "(userspace/runner/pmemlab-run); also backend=... among the KEY=VALUEs")
    p.add_argument("--timeout", type=float, default=600.0, metavar="S", help="abort the run after S seconds (600)")

    p = sub.add_parser("sweep", help="run a TOML sweep config into a CSV")
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
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_target_options(p)

    p = sub.add_parser("targets", help="the targets a config compares: one 'LABEL LOAD-PARAMETERS' line each")
    p.add_argument("config", type=Path)
    p.add_argument("--pmem", default=os.environ.get("PMEMLAB_PMEM", "/dev/pmem0").split(" ")[0], metavar="DEV",
                   help="fsdax device for @PMEM@ (default: first of $PMEMLAB_PMEM, else /dev/pmem0)")
    p.add_argument("--pmem-dram", metavar="DEV",
                   help="fsdax device on DRAM (memmap=) for @PMEM_DRAM@ (default: left as @PMEM_DRAM@)")
    p.add_argument("--scale", default=os.environ.get("PMEMLAB_SCALE", "full"), metavar="NAME")

    from pmemlab.plots.command import add_plot_parsers

    add_plot_parsers(sub)
    _add_result_parsers(sub)
    oneliners.add_parsers(sub)

    p = sub.add_parser("summarize", help="(re)write NAME.summary.csv: mean, stddev, 95%% CI across repeats")
    p.add_argument("csv", type=Path)

    sub.add_parser("abort", help="stop the module's active run")
    return ap


def parse_assignments(items: Sequence[str], what: str = "argument") -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"{what} {item!r} is not KEY=VALUE", "write e.g. access_size=256")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _module(args: argparse.Namespace) -> Backend:
    return BackendSpec("kernel", sysfs=Path(args.sysfs) if args.sysfs else None).open()


def _backend(args: argparse.Namespace, opts: dict[str, str]) -> Backend:
    """The module, or the user backend (backend=user: pmemlab-run on --target / target=)."""
    backend = getattr(args, "backend", None) or opts.get("backend", "kernel")
    if backend != "user":
        if set(opts) - {"backend"}:
            raise ConfigError(f"{', '.join(sorted(set(opts) - {'backend'}))}: target options of backend=user",
                              "the module's target is chosen at insmod; add backend=user or drop them")
        return _module(args)
    spec = BackendSpec("user", target=opts.get("target") or args.target or "",
                       options={k: v for k, v in opts.items() if k not in ("backend", "target")})
    return spec.open()


def _online_cpus() -> int:
    return int(machine.cpu_info(machine.HostPaths())["online_cpus"])


# --------------------------------------------------------------------------
def cmd_info(args: argparse.Namespace) -> int:
    info = machine.gather_info(_module(args))
    if args.json:
        print(json.dumps(info, indent=2, default=str))
    else:
        print(machine.format_info(info))
    return 0


def cmd_params(args: argparse.Namespace) -> int:
    if args.json:
        print(json.dumps([{"name": p.name, "default": p.default, "allowed": p.allowed(), "unit": p.unit,
                           "doc": p.doc} for p in P.PARAMS.values()], indent=2))
        return 0
    w = max(len(n) for n in P.PARAMS)
    for p in P.PARAMS.values():
        print(f"{p.name:<{w}}  default {str(p.default) or '(empty)':<10} {p.doc}\n{'':<{w}}  allowed: {p.allowed()}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """One point, once: a sweep of one point whose rows are printed, not written."""
    from pmemlab.backend_user import split_backend_args

    raw, backend_opts = split_backend_args(parse_assignments(args.assignments))
    values, problems = P.normalize(raw)
    backend = _backend(args, backend_opts)
    if problems:
        raise command_line_problems(problems)
    backend.require_loaded()
    bench = Bench.probe(backend, _online_cpus())
    point = one_point(values, raw, bench.facts, bench.discovered)  # the interleave ndctl found, unless given
    backend.check_target(args.target)
    sweep, recorder = Sweep.one_point(point, bench, timeout_s=args.timeout)
    report = sweep.run()
    rows = recorder.rows
    status, error = str(rows[-1]["status"]), str(rows[-1].get("error") or "")
    cond = bench.conditions
    df = pd.DataFrame(rows)
    if args.csv:
        cols = [c for c in BASE_COLUMNS if c in df.columns] + [c for c in df.columns if c not in BASE_COLUMNS]
        df[cols].to_csv(sys.stdout, index=False)
    elif args.json:
        print(json.dumps(rows, indent=2, default=str))
    else:
        changed = " ".join(f"{k}={point.params[k]}" for k in raw)
        print(f"pmemlab run on {cond.get('target')} ({cond.get('target_kind')}): {changed or 'defaults'}")
        if status == "ok":
            cols = [c for c in RUN_TABLE_COLUMNS if c in df.columns and df[c].notna().any()]
            print(df[cols].to_string(index=False, float_format=lambda x: f"{x:.3f}"))
        else:
            print(f"status: {status}: {error}")
    code = exitcodes.for_run(report)
    if code != exitcodes.OK:
        fix = (f"raise --timeout (now {args.timeout:g} s) or shorten the run (duration_ms, count)"
               if status == "timeout" else backend.failure_fix(status))
        print(PmemlabError(f"run {status}: {error}", fix).one_line(), file=sys.stderr)
    return code


def cmd_sweep(args: argparse.Namespace) -> int:
    from pmemlab.backend_user import split_backend_args

    if isinstance(args.config, list):
        return sweep_each(args, cmd_sweep)
    overrides, backend_opts = split_backend_args(parse_assignments(args.set, "--set"))
    cfg = load_config(args.config, overrides=overrides, scale=args.scale)
    if args.strict:
        cfg.on_unsupported = "error"
    for key, table in cfg.pinned.items():
        print(f"pmemlab: --set {key}={cfg.overrides[key]} replaces the {'[[zip]] key' if table == 'zip' else 'axis'} "
              f"{key}: every point runs with {key}={cfg.base.get(key, cfg.overrides[key])}", file=sys.stderr)
    loads = chosen_loads(args, cfg)
    if loads is not None:
        return sweep_over_targets(args, cfg, loads, backend_opts)
    backend = _backend(args, backend_opts)
    loaded = backend.loaded()
    bench = Bench.probe(backend, _online_cpus(), facts=loaded, info=loaded or not args.dry_run)
    points = expand(cfg, bench.facts, bench.discovered)  # every problem is raised here, before any run
    output = sweep_output(args, cfg)
    if args.dry_run:
        _print_dry_run(cfg, points, output, loaded)
        return exitcodes.OK
    backend.require_loaded()
    backend.check_target(args.target or cfg.target)
    skipped = [p for p in points if p.skip_reason]
    if skipped:
        reasons = sorted({p.skip_reason for p in skipped})
        print(f"pmemlab: {len(skipped)} of {len(points)} points cannot run here and are recorded as skipped: "
              + "; ".join(reasons[:5]), file=sys.stderr)
    info = bench.info or {}
    media = ipmctl.MediaCounters(runner=machine.run_tool, available=bool(info.get("ipmctl", {}).get("available")))
    opts = SweepOptions(output=output, fail_fast=args.fail_fast, fresh=args.fresh,
                        progress=not args.no_progress, argv=sys.argv[:])
    report = Sweep.for_config(cfg, points, bench, opts, media).run()
    print(f"{cfg.name}: {report.runs} runs ({report.ok} ok, {report.failed} failed, {report.skipped} skipped"
          f"{f', {report.resumed} resumed' if report.resumed else ''}) -> {report.csv} "
          f"(sidecar {sidecar_path(output)}, summary {summary_path(output)})")
    return exitcodes.for_sweep(report)


def _print_dry_run(cfg: SweepConfig, points: Sequence[Point], output: Path, loaded: bool) -> None:
    runs = len(points) * (cfg.adaptive.min_repeats if cfg.adaptive else cfg.repeats)
    skipped = [p for p in points if p.skip_reason]
    print(f"{cfg.name}: {count_points(cfg)} combinations, {len(points)} points after filters, "
          f"{runs} runs{' (adaptive, at least)' if cfg.adaptive else ''}; "
          f"{len(skipped)} points skipped on this machine{'' if loaded else ' (module not loaded: not checked)'}")
    est = _estimate_s(points, cfg)
    if est:
        print(f"estimated run time: at least {est / 60:.1f} min")
    varied = [p.varied | ({"skip": p.skip_reason} if p.skip_reason else {}) for p in points]
    if varied and varied[0]:
        print(pd.DataFrame(varied).to_string(max_rows=40))
    print(f"output would go to {output}")


def _estimate_s(points: Sequence[Point], cfg: SweepConfig) -> float:
    reps = cfg.adaptive.min_repeats if cfg.adaptive else cfg.repeats
    total = 0.0
    for p in points:
        if p.skip_reason:
            continue
        if p.params["mode"] == "bandwidth" and not p.params["count"]:
            total += p.params["duration_ms"] / 1000.0 * reps
    return total


def cmd_targets(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, scale=args.scale)
    for label, insmod_args in target_loads(cfg, args.pmem, args.pmem_dram):
        print(f"{label} {insmod_args}")
    return 0


def cmd_summarize(args: argparse.Namespace) -> int:
    if not args.csv.exists():
        raise PmemlabError(f"{args.csv} does not exist", "give the CSV a sweep wrote")
    path = write_summary(args.csv)
    print(f"summary -> {path}")
    return 0


def cmd_abort(args: argparse.Namespace) -> int:
    mod = _module(args)
    mod.require_loaded()
    state = mod.state()
    if state != "running":
        print(f"no active run (state: {state})")
        return 0
    mod.abort()
    print("abort requested")
    return 0


COMMANDS = {"info": cmd_info, "params": cmd_params, "run": cmd_run, "sweep": cmd_sweep,
            "summarize": cmd_summarize, "abort": cmd_abort, "targets": cmd_targets}


def _plot_commands() -> dict[str, Callable[[argparse.Namespace], int]]:
    from pmemlab.plots.command import cmd_plot, cmd_plot_all

    return {"plot": cmd_plot, "plot-all": cmd_plot_all}


def _add_result_parsers(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """`pmemlab report` and `pmemlab compare`: their parsers and commands live in their modules."""
    from pmemlab import compare, report

    compare.add_parser(sub)
    report.add_parser(sub)


def _result_commands() -> dict[str, Callable[[argparse.Namespace], int]]:
    from pmemlab.compare import cmd_compare
    from pmemlab.report import cmd_report

    return {"compare": cmd_compare, "report": cmd_report}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        command = (COMMANDS.get(args.command) or
                   {**_plot_commands(), **_result_commands(), **oneliners.commands()}[args.command])
        return command(args)
    except (PmemlabError, KeyboardInterrupt, BrokenPipeError) as exc:
        message = user_message(exc)
        if message:
            print(message, file=sys.stderr)
        return exitcodes.for_error(exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
