"""`pmemlab curves`: the bandwidth-latency family per read/write mix, with its tails (issue 36).

For each read share (mix) the load threads (threads 1..N-1) issue 64 B random accesses of the
write op, read_pct of them loads, throttled by a delay between accesses from none (flat out) to
near idle; thread 0 probes latency beside them (the pointer chase where the backend offers it as a
probe, else the latency op `load`: the output says which). The delays are chosen round by round
(pmemlab.analysis.curves: spread along the curve, more where latency rises fast); each round is a
sweep built as data (SweepConfig with a zip axis of read_pct and delay_ticks) and run by the sweep
machinery, each point repeated by the sweep's adaptive rule on bw_gbps until its CI is tight.

Output: a table per mix (or --json), with -o a tidy CSV (docs/curves.md names its columns and
their mapping to Mess's memory_curves.csv) and two figures beside it: the family (latency vs
bandwidth, a colour per mix, median solid, p99.9 dashed, knees marked) and the tails (p99.9 over
the median against bandwidth).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from pmemlab import exitcodes
from pmemlab import params as P
from pmemlab.analysis import curves as C
from pmemlab.cli import backend
from pmemlab.backends.spec import BackendSpec
from pmemlab.cli.oneliners.bed import Bed, open_bed
from pmemlab.cli.oneliners.tables import emulation_note, headline
from pmemlab.cli.args import positive_seconds
from pmemlab.config import SweepConfig
from pmemlab.config.model import Adaptive, Axis
from pmemlab.host.caches import largest_cache
from pmemlab.errors import ConfigError, OutputError, PmemlabError
from pmemlab.output import add_json, examples, print_json
from pmemlab.sweep import Bench, Progress
from pmemlab.sweep.execute import close_backend
from pmemlab.targets.sweep import expand_targets, target_sweep

if TYPE_CHECKING:
    import pandas as pd


WRITE_OPS = ("store", "ntstore", "store+clwb")
DEFAULT_MIXES = tuple(range(100, -1, -10))
DEFAULT_POINTS = 12
FIRST_ROUND = 6  # delays of the first round per mix; the rest are added where the curve is longest
PER_ROUND = 4  # at most this many delays added per mix in a round
CHASE = "chase"
LATENCY_OP = "load"
DRIFT = 0.10  # the probe alone after the family off its value before by more than this: a note
CSV_COLUMNS = C.CSV_COLUMNS


def _mixes(text: str) -> tuple[int, ...]:
    try:
        vals = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: read shares are whole percentages, e.g. 100,50,0") from None
    bad = [v for v in vals if not 0 <= v <= 100]
    if not vals or bad:
        raise argparse.ArgumentTypeError(f"{text!r}: each read share 0..100 (%), e.g. 100,50,0")
    return tuple(sorted(set(vals), reverse=True))


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(
        name, help="bandwidth-latency curves per read/write mix with their tails (Mess; mlc --loaded_latency)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=examples("pmemlab curves --backend user --mixes 100,50,0 -o results/curves.csv",
                        "pmemlab curves --write-op ntstore --points 16 --json",
                        "pmemlab curves --target cxl --load-target dram:0 -o results/cxl-under-dram.csv"))
    p.add_argument("--backend", choices=("kernel", "user"),
                   help="kernel (pmemlab.ko; the default when it is loaded) or user (pmemlab-run)")
    p.add_argument("--target", help="the probe's target: user backend dram, dram:NODE, cxl or a DAX file "
                                    "(default dram); kernel: the module's target")
    p.add_argument("--load-target", metavar="T2", help="the load threads' target (run parameter load_target; "
                                                       "default: the probe's)")
    p.add_argument("--mixes", type=_mixes, default=DEFAULT_MIXES, metavar="R,...",
                   help="read shares of the load threads, %% (100,90,...,0)")
    p.add_argument("--write-op", choices=WRITE_OPS, default="store",
                   help="the load threads' write (store); its read share are loads")
    p.add_argument("--points", type=int, default=DEFAULT_POINTS, metavar="N",
                   help=f"points per curve ({DEFAULT_POINTS}; at least 3)")
    p.add_argument("--threads", type=int, metavar="N", help="threads, the probe included (default: the CPUs "
                                                             "of the target's node, at least 2)")
    p.add_argument("--working-set", type=lambda t: P.canonical("working_set", t), metavar="SIZE",
                   help="window of the accesses (default 256M, or more: the probe's region, the window over "
                        f"--threads, at least {C.PROBE_CACHE_MULTIPLE}x the largest cache; a DRAM target grows to it)")
    p.add_argument("--duration-ms", type=int, default=200, metavar="MS", help="length of each run (200)")
    p.add_argument("--repeats", type=int, default=2, metavar="N", help="least runs per point (2)")
    p.add_argument("--max-repeats", type=int, default=5, metavar="N",
                   help="most runs per point while the bandwidth's 95 %% CI is above --ci-target (5)")
    p.add_argument("--ci-target", type=float, default=0.05, metavar="X",
                   help="relative CI half-width of bw_gbps that ends a point's repeats (0.05)")
    p.add_argument("--max-delay", type=int, default=1 << 18, metavar="TICKS",
                   help="the lightest load: TSC ticks between a load thread's accesses (262144)")
    p.add_argument("-o", "--output", type=Path, metavar="CSV",
                   help="write the tidy CSV here and the figures (PNG) beside it")
    add_json(p, "the points and the summaries")
    p.add_argument("--timeout", type=positive_seconds, default=600.0, metavar="S",
                   help="abort a run after S seconds (600)")


# --------------------------------------------------------------------------
# the sweep of a round, as data
# --------------------------------------------------------------------------
@dataclass
class Setup:
    """What every run of the command shares."""

    threads: int
    working_set: int
    probe_op: str
    write_op: str
    base: dict[str, Any] = field(default_factory=dict)
    largest_cache: int = 0  # bytes of the largest cache the CPU reports (0: none reported)

    def ops(self) -> str:
        return ",".join([self.probe_op] + [self.write_op] * (self.threads - 1))


def round_config(setup: Setup, args: argparse.Namespace, grid: Sequence[tuple[int, int]]) -> SweepConfig:
    """The sweep of one round: a zip axis of (read_pct, delay_ticks), the rest in base; repeats
    by the sweep's adaptive rule on the load threads' bandwidth."""
    cfg = SweepConfig(path=None, text="", data={}, name="curves", source="pmemlab curves",
                      description="pmemlab curves: probe latency beside throttled load threads per read share",
                      repeats=args.repeats, timeout_s=args.timeout, on_unsupported="skip")
    cfg.base = {k: P.canonical(k, v) for k, v in {**setup.base, "op": setup.ops()}.items()}
    cfg.axes = [Axis(keys=("read_pct", "delay_ticks"), values=[(m, d) for m, d in grid], table="zip#1")]
    cfg.adaptive = Adaptive(metric="bw_gbps", ci_target=args.ci_target, max_repeats=max(args.max_repeats, args.repeats, 2),
                            min_repeats=max(args.repeats, 2))
    return cfg


def run_config(cfg: SweepConfig, bed: Bed, args: argparse.Namespace) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """One sweep of the command (the unloaded runs, a round). The backend stays open after it:
    the user backend's one served runner per target serves every sweep of the command (its
    target mapped and faulted once, the probe's chase chain kept across the rounds); run()
    closes it at the end."""
    import pandas as pd

    targets = bed.axis()
    expand_targets(cfg, targets)
    progress = not args.json and Progress(0, cfg.name, enabled=False).interactive
    sweep, recorder = target_sweep(cfg, targets, progress=progress, keep_open=True)
    report = sweep.run()
    assert recorder is not None
    return pd.DataFrame(recorder.rows), pd.DataFrame(recorder.hist), exitcodes.for_sweep(report)


def choose_probe(setup: Setup, bed: Bed) -> str:
    """chase where the backend takes it as the probe's op (its parameter checks say so), else load."""
    facts = bed.benches[0].facts
    trial = {**P.defaults(), **{k: P.canonical(k, v) for k, v in setup.base.items()},
             "op": P.canonical("op", ",".join([CHASE] + [setup.write_op] * (setup.threads - 1))), "read_pct": 50}
    return CHASE if CHASE in P.CHASE_OPS and not P.check_point(trial, facts) else LATENCY_OP


def unloaded(setup: Setup, bed: Bed, args: argparse.Namespace) -> dict[str, float]:
    """The median latency of the probe op alone, and of the chase where the backend has it in
    latency mode: op -> ns (one thread, nothing else running). Each runs as long as a point of the
    curves (--duration-ms), not a fixed count: a run of a few ms right after the runner sat idle
    is measured on a CPU whose clock may still be ramping up, and was then held against the
    loaded points' 200 ms (the lightest load read 0.8x 'unloaded' on one host)."""
    facts = bed.benches[0].facts
    ops = [setup.probe_op]
    # the probe's own region: per-thread placement gives thread 0 the first 1/threads of the window
    # (rounded down to 64 B), so alone it runs over that, not the whole window (twice the lines)
    region = C.probe_region(setup.working_set, setup.threads)
    chase = {**P.defaults(), "mode": "latency", "op": P.canonical("op", CHASE), "threads": 1, "pattern": "rand",
             "count": 0, "duration_ms": args.duration_ms, "working_set": region}
    if setup.probe_op != CHASE and CHASE in P.CHASE_OPS and not P.check_point(chase, facts):
        ops.append(CHASE)
    cfg = SweepConfig(path=None, text="", data={}, name="curves-unloaded", source="pmemlab curves", repeats=1,
                      timeout_s=args.timeout)
    cfg.base = {k: P.canonical(k, v) for k, v in {"mode": "latency", "threads": 1, "pattern": "rand",
                                                   "access_size": 64, "count": 0,
                                                   "duration_ms": args.duration_ms,
                                                   "working_set": region}.items()}
    cfg.axes = [Axis(keys=("op",), values=[(P.canonical("op", o),) for o in ops], table="axes")]
    rows, hist, _ = run_config(cfg, bed, args)
    out: dict[str, float] = {}
    for op in ops:
        key = _ok(rows)
        key = key[key["op"].astype(str) == op]
        if not key.empty:
            buckets = _buckets(hist, set(key["point_key"]))
            out[op] = C.pooled_quantile(buckets, 0.5) if buckets else float(key["lat_ns_p50"].median())
    return out


# --------------------------------------------------------------------------
# the points from the rows
# --------------------------------------------------------------------------
def _ok(rows: pd.DataFrame) -> pd.DataFrame:
    if rows.empty:
        return rows
    return rows[(rows["thread"].astype(str) == "all") & (rows["status"] == "ok")]


def _buckets(hist: pd.DataFrame, keys: set[str]) -> list[tuple[float, float, int]]:
    """The probe's (thread 0) histogram buckets of the runs of these points, repeats pooled."""
    if hist.empty:
        return []
    h = hist[hist["point_key"].isin(keys) & (hist["thread"].astype(str) == "0")]
    return [(float(a), float(b), int(n)) for a, b, n in zip(h["lo_ns"], h["hi_ns"], h["count"])]


def points_of(rows: pd.DataFrame, hist: pd.DataFrame) -> list[C.CurvePoint]:
    """A point per (read_pct, delay_ticks): the load threads' bandwidth (mean and std over the
    repeats) and achieved read share (their reads over reads + writes), the probe's percentiles
    from its histograms pooled over the repeats, its max over them."""
    import pandas as pd

    ok = _ok(rows)
    out = []
    for (mix, delay), grp in ok.groupby(["read_pct", "delay_ticks"], sort=False):
        bw = pd.to_numeric(grp["bw_gbps"], errors="coerce").dropna()
        reads = float(pd.to_numeric(grp["reads"], errors="coerce").sum())
        writes = float(pd.to_numeric(grp["writes"], errors="coerce").sum())
        buckets = _buckets(hist, set(grp["point_key"]))
        top = float(pd.to_numeric(grp["lat_ns_max"], errors="coerce").max())
        # a percentile read inside its bucket stays at or below the largest sample
        q = {p: min(C.pooled_quantile(buckets, p), top) for p in (0.5, 0.9, 0.99, 0.999)}
        p50s = pd.to_numeric(grp["lat_ns_p50"], errors="coerce").dropna()
        out.append(C.CurvePoint(
            mix=int(mix), delay_ticks=int(delay), bw_gbps=float(bw.mean()),
            bw_std=float(bw.std(ddof=1)) if len(bw) > 1 else 0.0,
            read_share=100.0 * reads / (reads + writes) if reads + writes else math.nan,
            p50_ns=q[0.5], p90_ns=q[0.9], p99_ns=q[0.99], p999_ns=q[0.999],
            max_ns=top,
            p50_std=float(p50s.std(ddof=1)) if len(p50s) > 1 else 0.0, repeats=len(grp)))
    return out


# --------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------
def check(args: argparse.Namespace) -> None:
    """Everything the command line can get wrong, before anything is opened or run."""
    if args.points < 3:
        raise ConfigError(f"--points {args.points}: a curve needs at least 3", "give --points 3 or more")
    if args.threads is not None and args.threads < 2:
        raise ConfigError(f"--threads {args.threads}: the probe and at least one load thread", "give --threads 2 or more")
    if args.repeats < 1 or args.max_repeats < 1:
        raise ConfigError(f"--repeats {args.repeats} --max-repeats {args.max_repeats}: at least 1", "give positive counts")
    if not 0 < args.ci_target < 1:
        raise ConfigError(f"--ci-target {args.ci_target}: a relative half-width, 0 < x < 1", "e.g. --ci-target 0.05")
    if args.max_delay < 2 * C.MIN_DELAY_TICKS:
        raise ConfigError(f"--max-delay {args.max_delay}: at least {2 * C.MIN_DELAY_TICKS} ticks",
                          "give the lightest load's delay in TSC ticks")
    if args.duration_ms < 1:
        raise ConfigError(f"--duration-ms {args.duration_ms}: at least 1", "give a positive length")
    if args.output is not None:
        if args.output.suffix != ".csv":
            raise OutputError(f"-o {args.output}: the tidy CSV's name ends in .csv", "e.g. -o results/curves.csv")
        if args.output.is_dir():
            raise OutputError(f"-o {args.output}: a directory", "give the CSV's path; the figures go beside it")


def run(args: argparse.Namespace) -> int:
    check(args)
    if args.load_target and "load_target" not in P.PARAMS:
        raise ConfigError(f"--load-target {args.load_target}: this build's parameter table has no load_target",
                          "build the module and pmemlab-run of this tree (make)")
    start = time.monotonic()
    bed = open_bed(args, None, backend.online_cpus())
    try:
        size = bed.sizing()
        threads = args.threads or max(2, size.node_threads)
        llc = largest_cache()
        bed, ws = size_window(args, bed, threads, llc)
        setup = Setup(threads=threads, working_set=ws, probe_op=LATENCY_OP, write_op=args.write_op, largest_cache=llc,
                      base={"mode": "bandwidth", "probe": 1, "threads": threads, "pattern": "rand",
                            "access_size": 64, "placement": "per-thread", "working_set": ws,
                            "duration_ms": args.duration_ms,
                            **({"load_target": args.load_target} if args.load_target else {})})
        setup.probe_op = choose_probe(setup, bed)
        alone = unloaded(setup, bed, args)
        rows, hist, code = _measure(setup, bed, args)
        after = unloaded(setup, bed, args)  # again: did the machine's state move under the family?
    finally:
        for bench in bed.benches:  # the served runner the sweeps kept open (run_config)
            close_backend(bench.backend)
        bed.close()
    pts = points_of(rows, hist)
    if not pts:
        raise PmemlabError("no point of the curves ran", "see the errors of the runs above")
    wall = time.monotonic() - start
    doc = document(args, setup, bed, rows, pts, alone, wall, after)
    if args.output:
        write_csv(args.output, doc["points"])
        doc["figures"] = [str(p) for p in draw(args.output, rows, hist, pts, doc)]
        doc["csv"] = str(args.output)
    if args.json:
        print_json(doc)
    else:
        print(text(doc))
    return code


def size_window(args: argparse.Namespace, bed: Bed, threads: int, llc: int) -> tuple[Bed, int]:
    """The window: --working-set, else 256 MiB or more, so that the probe's per-thread region is
    PROBE_CACHE_MULTIPLE x the largest cache (analysis.curves.working_set_for). A user backend's
    DRAM target is opened again as the window in whole 2 MiB pages where it is smaller than that,
    or larger than a given --working-set (no page the runs never touch is faulted: on emulated
    CXL memory 256 MiB take a minute); any other target caps the window at its size (the output's
    note then says the probe may measure cache)."""
    size = bed.sizing().target_size
    want = args.working_set or C.working_set_for(threads, llc)
    facts = bed.benches[0].facts
    if size and bed.kind == "user" and facts and facts.extra.get("target_kind") == "user-dram":
        fit = -(-want // (2 * C.MiB)) * 2 * C.MiB
        if fit > size or (args.working_set and fit < size):
            bed.close()
            user = BackendSpec("user", target=args.target or "dram", options={"dram_size": str(fit)}).open()
            bed = Bed("user", [Bench.probe(user, backend.online_cpus())])
            size = bed.sizing().target_size
    return bed, args.working_set or C.working_set_for(threads, llc, size)


def _measure(setup: Setup, bed: Bed, args: argparse.Namespace) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """Round by round: the first ladder of delays for every mix, then new delays where each curve
    is longest until it has --points."""
    import pandas as pd

    grid = {m: C.initial_delays(min(FIRST_ROUND, args.points), hi=args.max_delay) for m in args.mixes}
    todo = [(m, d) for m in args.mixes for d in grid[m]]
    all_rows, all_hist, codes = [], [], []
    while todo:
        rows, hist, code = run_config(round_config(setup, args, todo), bed, args)
        all_rows.append(rows)
        all_hist.append(hist)
        codes.append(code)
        pts = points_of(pd.concat(all_rows, ignore_index=True), pd.concat(all_hist, ignore_index=True))
        todo = []
        for m in args.mixes:
            mine = [(p.delay_ticks, p.bw_gbps, p.p50_ns) for p in pts if p.mix == m and not math.isnan(p.p50_ns)]
            want = args.points - len(grid[m])
            if want <= 0 or len(mine) < 2:
                continue
            new = [d for d in C.next_delays(mine, min(want, PER_ROUND)) if d not in grid[m]]
            grid[m] = sorted({*grid[m], *new})
            todo += [(m, d) for d in new]
    rows = pd.concat(all_rows, ignore_index=True)
    hist = pd.concat(all_hist, ignore_index=True)
    worst = max(codes)
    return rows, hist, exitcodes.PARTIAL if worst != exitcodes.OK and exitcodes.OK in codes else worst


def document(args: argparse.Namespace, setup: Setup, bed: Bed, rows: pd.DataFrame, pts: list[C.CurvePoint],
             alone: dict[str, float], wall: float, after: dict[str, float] | None = None) -> dict[str, Any]:
    factor = C.memory_factor(args.write_op, P.non_temporal(args.write_op))
    fam = C.family(pts)
    sums = [C.summarize_curve(curve, factor=factor) for curve in fam.values()]
    best = C.best_mix(sums)
    khz = bed.sizing().tsc_khz
    emulated = bool(emulation_note(rows))
    # the probe's target as the runs name it (the module's own when --target was not given)
    ran_on = sorted({str(t) for t in rows.get("target", []) if str(t) not in ("", "nan")})
    target = args.target or ",".join(ran_on)
    records = []
    for mix, curve in fam.items():
        for p in curve:
            records.append({
                "mix_pct": mix, "write_op": args.write_op, "probe_op": setup.probe_op, "delay_ticks": p.delay_ticks,
                "delay_ns": p.delay_ticks * 1e6 / khz if khz else math.nan, "repeats": p.repeats,
                "bw_gbps": p.bw_gbps, "bw_gbps_std": p.bw_std,
                "bw_memory_gbps": C.memory_gbps(p.bw_gbps, p.read_share, factor) if not math.isnan(p.read_share) else math.nan,
                "read_pct_actual": p.read_share, "lat_p50_ns": p.p50_ns, "lat_p50_std_ns": p.p50_std,
                "lat_p90_ns": p.p90_ns, "lat_p99_ns": p.p99_ns, "lat_p999_ns": p.p999_ns, "lat_max_ns": p.max_ns,
                "lat_mean_ns": _mean(rows, mix, p.delay_ticks), "lat_samples": _samples(rows, mix, p.delay_ticks),
                "threads": setup.threads, "target": target, "load_target": args.load_target or "",
                "backend": bed.kind, "emulated": int(emulated)})
    checks = {str(s.mix): {"monotone_violations": C.monotone_violations(fam[s.mix]),
                           "lightest_over_unloaded": (fam[s.mix][0].p50_ns / alone[setup.probe_op]
                                                      if alone.get(setup.probe_op) else math.nan),
                           "lightest_over_chase": (fam[s.mix][0].p50_ns / alone[CHASE]
                                                   if alone.get(CHASE) else math.nan)} for s in sums}
    notes = [n for n in (C.memory_note(args.write_op, factor, list(fam)),
                         C.cache_note(C.probe_region(setup.working_set, setup.threads), setup.largest_cache)) if n]
    if setup.probe_op != CHASE:
        notes.append(f"probe: {setup.probe_op} (this backend takes no chase as a probe's op: each sample is one "
                     f"random load with a fence, not a chain of dependent loads)")
    after = after or {}
    # a ratio where both medians are positive; null where one is 0 ns (a median can be: TCG's 10 ns
    # clock, a starved probe's clamped samples) or missing, with a note: never a key left out
    drift: dict[str, float | None] = {op: (after[op] / alone[op] if _positive(alone[op]) and _positive(after.get(op))
                                           else None) for op in alone}
    notes += [drift_note(op, alone[op], after[op]) for op, r in drift.items() if r is not None and abs(r - 1) > DRIFT]
    notes += [f"the probe alone ({op}) read {_fmt(alone[op])} ns before the curves and {_fmt(after.get(op))} ns "
              f"after: no ratio of the two (unloaded_drift null)" for op, r in drift.items() if r is None]
    notes += emulation_note(rows)
    return {"command": "curves", "title": headline("curves", rows, bed), "probe_op": setup.probe_op,
            "write_op": args.write_op, "threads": setup.threads, "working_set": setup.working_set,
            "probe_region": C.probe_region(setup.working_set, setup.threads), "largest_cache": setup.largest_cache,
            "unloaded_ns": alone, "unloaded_after_ns": after, "unloaded_drift": drift,
            "summaries": [s.record() for s in sums], "best_mix": best.mix,
            "checks": checks, "points": records, "notes": notes, "emulated": emulated, "wall_s": wall}


def _positive(v: float | None) -> bool:
    return v is not None and math.isfinite(v) and v > 0


def drift_note(op: str, before: float, after: float) -> str:
    """Why the curves' latencies may carry a change of the machine, not of the load."""
    return (f"the probe alone ({op}) read {_fmt(before)} ns before the curves and {_fmt(after)} ns after "
            f"(x{_fmt(after / before)}): the machine's state moved during the family (clock, other load, "
            f"page placement), and its latencies carry that as well as the load")


def _mean(rows: pd.DataFrame, mix: int, delay: int) -> float:
    import pandas as pd

    ok = _ok(rows)
    g = ok[(ok["read_pct"] == mix) & (ok["delay_ticks"] == delay)]
    n = pd.to_numeric(g["lat_n"], errors="coerce")
    m = pd.to_numeric(g["lat_ns_mean"], errors="coerce")
    return float((n * m).sum() / n.sum()) if n.sum() else math.nan


def _samples(rows: pd.DataFrame, mix: int, delay: int) -> int:
    import pandas as pd

    ok = _ok(rows)
    g = ok[(ok["read_pct"] == mix) & (ok["delay_ticks"] == delay)]
    return int(pd.to_numeric(g["lat_n"], errors="coerce").fillna(0).sum())


def write_csv(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
        w.writeheader()
        for r in records:
            w.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()})
    tmp.replace(path)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "n/a" if math.isnan(v) else f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"
    return str(v)


def text(doc: dict[str, Any]) -> str:
    out = [doc["title"], f"probe {doc['probe_op']}, load threads {doc['threads'] - 1} x {doc['write_op']} "
                         f"(read share of loads as given); latency ns of the probe, bandwidth GB/s of the load threads", ""]
    for s in doc["summaries"]:
        out.append(f"{s['mix']:>3} % reads: unloaded {_fmt(s['unloaded_ns'])} ns, peak {_fmt(s['peak_gbps'])} GB/s, "
                   f"knee (median x2) {_fmt(s['knee_gbps'])} GB/s, p99.9/median at 80 % of peak {_fmt(s['tail_rise'])}")
    out.append(f"highest peak: {doc['best_mix']} % reads")
    after = doc.get("unloaded_after_ns") or {}
    out.append("unloaded alone: " + ", ".join(f"{op} {_fmt(v)} ns" + (f" (after the curves {_fmt(after[op])} ns)"
                                                                      if op in after else "")
                                              for op, v in doc["unloaded_ns"].items()))
    out.append("")
    out.append("mix  delay_ticks  GB/s  +-std  read%  p50  p90  p99  p99.9  max  repeats")
    for r in doc["points"]:
        out.append("  ".join(_fmt(r[k]) for k in ("mix_pct", "delay_ticks", "bw_gbps", "bw_gbps_std", "read_pct_actual",
                                                  "lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_p999_ns", "lat_max_ns",
                                                  "repeats")))
    out += [""] + doc["notes"] if doc["notes"] else []
    if doc.get("figures"):
        out.append("figures: " + ", ".join(doc["figures"]))
    out.append(f"took {doc['wall_s']:.0f} s")
    return "\n".join(out)


# --------------------------------------------------------------------------
# the figures
# --------------------------------------------------------------------------
def probe_labelled(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows with the probe's target labelled `probe` where the sweep left it unnamed: the
    captions say 'target: probe (dram, user-dram)', not 'target:  (dram, user-dram)'."""
    label = rows["target_label"].fillna("").astype(str) if "target_label" in rows else ""
    return rows.assign(target_label=label).replace({"target_label": {"": "probe"}})


def draw(csv_path: Path, rows: pd.DataFrame, hist: pd.DataFrame, pts: list[C.CurvePoint],
         doc: dict[str, Any]) -> list[Path]:
    from pmemlab.analysis.resultset import Results
    from pmemlab.plots.style import BW_LABEL, LAT_LABEL, finish, new_figure

    results = Results("curves", probe_labelled(rows).assign(source_csv=str(csv_path)),
                      hist.assign(source_csv=str(csv_path)) if not hist.empty else None)
    fam = C.family(pts)
    sums = {s["mix"]: s for s in doc["summaries"]}
    import matplotlib

    cmap = matplotlib.colormaps["viridis"]
    colour = {m: cmap(i / max(1, len(fam) - 1)) for i, m in enumerate(fam)}
    paths = []

    fig, (ax,) = new_figure(1, width_per_panel=6.4, height=4.2)
    for mix, curve in fam.items():
        c = sorted(curve, key=lambda p: p.bw_gbps)
        ax.plot([p.bw_gbps for p in c], [p.p50_ns for p in c], "-o", ms=3, color=colour[mix],
                label=f"{mix} % reads")
        ax.plot([p.bw_gbps for p in c], [p.p999_ns for p in c], "--", color=colour[mix], lw=1)
        s = sums[mix]
        if not math.isnan(s["knee_gbps"]):
            ax.plot([s["knee_gbps"]], [s["knee_ns"]], marker="D", ms=7, mfc="none", color=colour[mix])
    ax.set_xlabel(BW_LABEL + " of the load threads")
    ax.set_ylabel(LAT_LABEL + " of the probe")
    ax.set_yscale("log")
    ax.legend(title="median solid, p99.9 dashed; \u25c7 knee (median x2)", fontsize=7, title_fontsize=7)
    finish(fig, results, f"Bandwidth-latency curves per read share ({doc['write_op']} load, {doc['probe_op']} probe)",
           extra=[f"{doc['threads'] - 1} load thread(s); each point: repeats until the bandwidth's CI is tight; "
                  f"latency percentiles from the probe's histograms, repeats pooled"])
    paths.append(_save(fig, csv_path, "family"))

    fig, (ax,) = new_figure(1, width_per_panel=6.4, height=4.2)
    for mix, curve in fam.items():
        c = sorted(curve, key=lambda p: p.bw_gbps)
        ax.plot([p.bw_gbps for p in c], [p.p999_ns / p.p50_ns if p.p50_ns else math.nan for p in c], "-o", ms=3,
                color=colour[mix], label=f"{mix} % reads")
        ax.plot([p.bw_gbps for p in c], [p.p99_ns / p.p50_ns if p.p50_ns else math.nan for p in c], ":",
                color=colour[mix], lw=1)
    ax.set_xlabel(BW_LABEL + " of the load threads")
    ax.set_ylabel("Tail over median (x)")
    ax.legend(title="p99.9/median solid, p99/median dotted", fontsize=7, title_fontsize=7)
    finish(fig, results, f"Latency tails under load per read share ({doc['write_op']} load)",
           extra=["the probe's percentiles over its median at each point"])
    paths.append(_save(fig, csv_path, "tails"))
    return paths


def _save(fig: Any, csv_path: Path, what: str) -> Path:
    path = csv_path.with_name(f"{csv_path.stem}.{what}.png")
    fig.savefig(path, dpi=150)
    return path



# --------------------------------------------------------------------------
# a family read back, and two compared (`pmemlab compare A.csv B.csv` of two curves CSVs)
# --------------------------------------------------------------------------
is_curves_csv = C.is_curves_csv
read_curves_csv = C.read_curves_csv


def compare_command(args: argparse.Namespace) -> int:
    """Two families point by point on the mixes both have (analysis.curves.compare_families)."""
    try:
        summary, points = C.compare_families(read_curves_csv(args.a), read_curves_csv(args.b))
    except ValueError as exc:
        raise ConfigError(f"compare {args.a} {args.b}: {exc}", "compare two families measured at the same read shares "
                                                               "(pmemlab curves --mixes)") from None
    if args.output:
        write_rows(args.output, points)
    if args.json:
        print_json({"command": "compare", "kind": "curves", "a": str(args.a), "b": str(args.b), "mixes": summary,
                    "points": points})
    elif args.csv:
        write_rows(None, points)
    else:
        out = [f"bandwidth-latency families: A {args.a}, B {args.b}; B/A per read share both have", ""]
        for s in summary:
            out.append(f"{s['mix']:>3} % reads: unloaded {_fmt(s['unloaded_ns_a'])} -> {_fmt(s['unloaded_ns_b'])} ns "
                       f"(x{_fmt(s['unloaded_ns_b_over_a'])}), peak {_fmt(s['peak_gbps_a'])} -> "
                       f"{_fmt(s['peak_gbps_b'])} GB/s (x{_fmt(s['peak_gbps_b_over_a'])}), knee "
                       f"{_fmt(s['knee_gbps_a'])} -> {_fmt(s['knee_gbps_b'])} GB/s, p99.9/median at 80 % of peak "
                       f"{_fmt(s['tail_rise_a'])} -> {_fmt(s['tail_rise_b'])}")
        out += ["", "at A's points: B's median and p99.9 at the same bandwidth (n/a: beyond B's curve)",
                "mix  GB/s  p50 A  p50 B  B/A  p99.9 A  p99.9 B  B/A"]
        out += ["  ".join(_fmt(p[k]) for k in ("mix", "bw_gbps", "p50_ns_a", "p50_ns_b", "p50_b_over_a", "p999_ns_a",
                                               "p999_ns_b", "p999_b_over_a")) for p in points]
        print("\n".join(out))
    return exitcodes.OK


def write_rows(path: Path | None, rows: list[dict[str, Any]]) -> None:
    f = sys.stdout if path is None else open(path, "w", newline="")
    try:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else [], lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()})
    finally:
        if path is not None:
            f.close()
