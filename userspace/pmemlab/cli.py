"""Command line: `pmemlab info | params | run | sweep | targets | summarize | plot | plot-all |
report | compare | abort`. Every command prints one line on stderr for an error (what, where, what
to do) and exits with a code from exitcodes.py; every command takes --json."""

from __future__ import annotations

import argparse
import errno
import math
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Sequence

from pmemlab import __version__, exitcodes, noise, oneliners
from pmemlab.host import guard, ipmctl, machine, probe
from pmemlab import params as P
from pmemlab.backends.protocol import Backend
from pmemlab.backends.spec import BackendSpec
from pmemlab.backends.user import split_backend_args
from pmemlab.cliargs import parse_assignments, positive_seconds
from pmemlab.config import Point, SweepConfig, command_line_problems, count_points, expand, load_config, one_point
from pmemlab.errors import ConfigError, Interrupted, PmemlabError, UsageError, user_message
from pmemlab.output import add_json, examples, print_json, text_table
from pmemlab.sweep import Bench, Sweep, SweepFiles, SweepOptions, SweepReport, check_output, sidecar_path, summary_path
from pmemlab.sweep import summarize_csv, write_summary
from pmemlab.table import BASE_COLUMNS, csv_text
from pmemlab.targets.cli import add_target_options, check_target_option, chosen_loads, print_targets_dry_run
from pmemlab.targets.cli import sweep_over_targets
from pmemlab.targets.spec import target_loads
from pmemlab.errors import BadInput

if TYPE_CHECKING:  # pandas is imported where tables are read or summarized: run, info, params never need it
    import pandas as pd

RUN_TABLE_COLUMNS: tuple[str, ...] = (
    "thread", "cpu", "thread_node", "thread_op", "ops", "bytes", "elapsed_ns", "bw_gbps", "irqoff_pct",
    "lat_ns_min", "lat_ns_mean", "lat_ns_p50", "lat_ns_p99", "lat_ns_p999", "lat_ns_p9999", "lat_ns_max",
)


class Parser(argparse.ArgumentParser):
    """argparse with pmemlab's manners: a usage error is one line (what, and where the help is)
    through the command's one error path (exit code 2), not a usage block."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]
        raise UsageError(f"{command + ': ' if command else ''}{message}",
                         f"`{self.prog} --help` lists the arguments, with examples")


def _command_parser(sub: Any, name: str, help: str, example_lines: Sequence[str], **kw: Any) -> Parser:
    text = help.replace("%%", "%")
    p: Parser = sub.add_parser(name, help=help, description=kw.pop("description", text[:1].upper() + text[1:] + "."),
                               epilog=examples(*example_lines), formatter_class=argparse.RawDescriptionHelpFormatter,
                               **kw)
    return p


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(
        prog="pmemlab",
        description="Drive the pmemlab.ko persistent-memory microbenchmark module (or its userspace runner): "
                    "machine facts, single runs, and config-driven sweeps into tidy CSV; summaries, figures, "
                    "reports and comparisons of the results.",
        epilog=examples("pmemlab info", "pmemlab run mode=latency op=load pattern=rand count=100000",
                        "pmemlab sweep configs/bw-threads.toml --scale quick",
                        "pmemlab summarize results/bw-threads.csv",
                        "pmemlab report results -o report")
        + "\n\n" + exitcodes.help_text() + "\n\nEvery command takes --json (one JSON document on stdout) "
        "and --help (its options and examples).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="version", version=f"pmemlab {__version__}")
    ap.add_argument("--sysfs", metavar="DIR", help="module sysfs directory (default: $PMEMLAB_SYSFS or /sys/kernel/pmemlab)")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = _command_parser(sub, "info", "target, module, CPU, NUMA and NVDIMM facts",
                        ["pmemlab info", "pmemlab info --json", "pmemlab --sysfs /tmp/fake-sysfs info"])
    add_json(p, "the facts")

    p = _command_parser(sub, "params", "list the run parameters, defaults and allowed values",
                        ["pmemlab params", "pmemlab params --json"])
    add_json(p, "the parameters")
    p.add_argument("--markdown", action="store_true", help="the table of docs/interface.md")

    p = _command_parser(sub, "run", "one measurement: pmemlab run op=ntstore access_size=256 threads=2",
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

    p = _command_parser(sub, "sweep", "run TOML sweep configs into CSVs",
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

    p = _command_parser(sub, "targets", "the targets a config compares: one 'LABEL LOAD-PARAMETERS' line each",
                        ["pmemlab targets configs/emulation.toml --pmem /dev/pmem0",
                         "pmemlab targets configs/bw-threads.toml --scale quick --json"])
    p.add_argument("config", type=Path)
    p.add_argument("--pmem", default=os.environ.get("PMEMLAB_PMEM", "/dev/pmem0").split(" ")[0], metavar="DEV",
                   help="fsdax device for @PMEM@ (default: first of $PMEMLAB_PMEM, else /dev/pmem0)")
    p.add_argument("--pmem-dram", metavar="DEV",
                   help="fsdax device on DRAM (memmap=) for @PMEM_DRAM@ (default: left as @PMEM_DRAM@)")
    p.add_argument("--scale", default=os.environ.get("PMEMLAB_SCALE", "full"), metavar="NAME")
    add_json(p, "the loads")

    from pmemlab.plots.command import add_plot_parsers

    add_plot_parsers(sub)
    _add_result_parsers(sub)
    oneliners.add_parsers(sub)

    p = _command_parser(sub, "summarize", "per point: mean, stddev, 95%% CI across repeats and a noise flag; "
                                          "prints the table and (re)writes NAME.summary.csv",
                        ["pmemlab summarize results/bw-threads.csv",
                         "pmemlab summarize results/idle-latency.csv --json"])
    p.add_argument("csv", type=Path, help="a sweep CSV (NAME.csv)")
    p.add_argument("--no-write", action="store_true", help="print only; leave NAME.summary.csv as it is")
    add_json(p, "the summary rows")

    p = _command_parser(sub, "abort", "stop the module's active run", ["pmemlab abort"])
    add_json(p, "what was done")
    return ap


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
    return int(machine.cpu_info(probe.HostPaths())["online_cpus"])



# --------------------------------------------------------------------------
def cmd_info(args: argparse.Namespace) -> int:
    info = machine.gather_info(_module(args))
    if args.json:
        print_json(info)
    else:
        print(machine.format_info(info))
    return 0


def cmd_params(args: argparse.Namespace) -> int:
    """The module's parameter table (core/params.def, through libplcore.so)."""
    if args.json:
        print_json([{"name": p.name, "kind": p.kind, "default": p.default, "allowed": p.allowed(),
                     "unit": p.unit, "doc": p.doc} for p in P.PARAMS.values()])
        return 0
    if args.markdown:
        print(P.doc_table(), end="")
        return 0
    w = max(len(n) for n in P.PARAMS)
    for p in P.PARAMS.values():
        print(f"{p.name:<{w}}  default {str(p.default) or '(empty)':<10} {p.doc}\n{'':<{w}}  allowed: {p.allowed()}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """One point, once: a sweep of one point whose rows are printed, not written."""
    raw, backend_opts = split_backend_args(parse_assignments(args.assignments))
    values, problems = P.normalize(raw)
    backend = _backend(args, backend_opts)
    if problems:
        raise command_line_problems(problems)
    backend.require_loaded()
    bench = Bench.probe(backend, _online_cpus())
    backend.check_target(args.target)
    # before the module's verdict on the values (which refuses the same run): blkid and lsblk
    # name more of what is on the device, mounts included
    guard.check_overwrite(bench.info or {}, guard.writes(values))
    point = one_point(values, raw, bench.facts, bench.discovered)  # the interleave ndctl found, unless given
    sweep, recorder = Sweep.one_point(point, bench, timeout_s=args.timeout)
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


def cmd_sweep(args: argparse.Namespace) -> int:
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
    backend = _backend(args, backend_opts)
    loaded = backend.loaded()
    bench = Bench.probe(backend, _online_cpus(), facts=loaded, info=loaded or not args.dry_run)
    points = expand(cfg, bench.facts, bench.discovered)  # every problem is raised here, before any run
    if args.dry_run:
        return exitcodes.OK, _print_dry_run(cfg, points, output, loaded, args.json)
    backend.require_loaded()
    backend.check_target(args.target or cfg.target)
    # the write points the module's verdict skipped for what the target carries count too: the
    # sweep is refused whole, with what blkid and lsblk find named
    guard.check_overwrite(bench.info or {}, any(guard.writes(p.params) for p in points
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
    report = Sweep.for_config(cfg, points, bench, opts, media).run()
    return _sweep_end(args, cfg, report, output, [])


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
    """The end-of-sweep warning about points that should not be trusted (pmemlab.noise)."""
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


def cmd_targets(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, scale=args.scale)
    loads = target_loads(cfg, args.pmem, args.pmem_dram)
    if args.json:
        print_json([{"label": label, "insmod_args": insmod_args} for label, insmod_args in loads])
        return 0
    for label, insmod_args in loads:
        print(f"{label} {insmod_args}")
    return 0


SUMMARY_TABLE_LIMIT = 60  # rows printed (the CSV and --json have all)


def cmd_summarize(args: argparse.Namespace) -> int:
    from pmemlab.plots.data import is_sweep_csv

    if not args.csv.exists():
        raise BadInput(f"{args.csv} does not exist", "give the NAME.csv a sweep wrote")
    if not is_sweep_csv(args.csv):
        raise BadInput(f"{args.csv} is not a sweep CSV (a .summary.csv or .hist.csv rides along with NAME.csv)",
                       "give NAME.csv")
    table = summarize_csv(args.csv)  # refuses a CSV that is not pmemlab's before anything is written
    path = None if args.no_write else write_summary(args.csv)
    warning = noise.sweep_warning(table, path.name if path else "")
    if args.json:
        print_json({"csv": args.csv, "summary": path, "points": table, "noise_warning": warning or None})
        return 0
    print(format_summary(table))
    if path is not None:
        print(f"summary -> {path}")
    if warning:
        print(f"pmemlab: warning: {warning}", file=sys.stderr)
    return 0


def format_summary(table: pd.DataFrame) -> str:
    """The summary as a table: per point what varies (and the target, where several), repeats, the
    point's metric as mean ± 95 % CI, its CV and the noise judgement."""
    import pandas as pd

    if table.empty:
        return "no ok runs to summarize"
    varies = [c for c in ("target", *P.PARAM_NAMES) if c in table and table[c].nunique(dropna=False) > 1]
    rows = []
    for _, r in table.iterrows():
        metric = str(r["metric"])
        mean, ci = r.get(f"{metric}_mean"), r.get(f"{metric}_ci95")
        rows.append({**{c: r[c] for c in varies}, "n": int(r["n"]), "metric": metric,
                     "mean": _num(mean), "± 95% CI": _num(ci), "CV %": _num(r.get("cv_pct"), 2),
                     "steal % max": _num(r.get("steal_pct_max"), 2), "noise": r.get("noise") or ""})
    df = pd.DataFrame(rows)
    if df["steal % max"].eq("-").all():
        df = df.drop(columns=["steal % max"])
    if not df["noise"].astype(bool).any():
        df = df.drop(columns=["noise"])
    shown = str(df.head(SUMMARY_TABLE_LIMIT).to_string(index=False))
    more = f"\n({len(df) - SUMMARY_TABLE_LIMIT} more points in the CSV)" if len(df) > SUMMARY_TABLE_LIMIT else ""
    return shown + more


def _num(value: Any, digits: int = 4) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "-"
    return "-" if math.isnan(v) else f"{v:.{digits}g}"


def cmd_abort(args: argparse.Namespace) -> int:
    mod = _module(args)
    mod.require_loaded()
    state = mod.state()
    if state != "running":
        if args.json:
            print_json({"state": state, "abort_requested": False})
        else:
            print(f"no active run (state: {state})")
        return 0
    mod.abort()
    if args.json:
        print_json({"state": state, "abort_requested": True})
    else:
        print("abort requested")
    return 0


COMMANDS = {"info": cmd_info, "params": cmd_params, "run": cmd_run, "sweep": cmd_sweep,
            "summarize": cmd_summarize, "abort": cmd_abort, "targets": cmd_targets}


def _plot_commands() -> dict[str, Callable[[argparse.Namespace], int]]:
    from pmemlab.plots.command import cmd_plot, cmd_plot_all

    return {"plot": cmd_plot, "plot-all": cmd_plot_all}


def _add_result_parsers(sub: Any) -> None:
    """`pmemlab report` and `pmemlab compare`: their parsers and commands live in their modules."""
    from pmemlab import compare, report

    compare.add_parser(sub)
    report.add_parser(sub)


def _result_commands() -> dict[str, Callable[[argparse.Namespace], int]]:
    from pmemlab.compare import cmd_compare
    from pmemlab.report import cmd_report

    return {"compare": cmd_compare, "report": cmd_report}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args, extra = build_parser().parse_known_args(argv)
        if extra:
            raise UsageError(f"{args.command}: unrecognized arguments: {' '.join(extra)}",
                             f"`pmemlab {args.command} --help` lists the arguments, with examples")
        command = (COMMANDS.get(args.command) or
                   {**_plot_commands(), **_result_commands(), **oneliners.commands()}[args.command])
        return command(args)
    except (PmemlabError, KeyboardInterrupt, OSError) as exc:
        message = user_message(exc)
        if message:
            print(message, file=sys.stderr)
        return exitcodes.for_error(exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
