"""MLC-style one-liners: measurements that need no config, printed as tables (or --json).

  idle-latency     one access at a time: loads of cold lines (random, sequential), store+clwb
                   and ntstore of warm lines (FAST'20 fig 2; mlc --idle_latency is the random load)
  loaded-latency   thread 0 probes the latency of single loads while the other threads inject
                   loads with a delay between accesses: latency against the bandwidth they reach
                   (mlc --loaded_latency)
  peak-bw          the bandwidth of a node's worth of threads per op and for load:store mixes
                   (mlc --peak_injection_bandwidth)
  latency-matrix   idle latency from a CPU of each NUMA node to the DRAM of each node and to each
                   pmem namespace (mlc --latency_matrix)
  bw-matrix        read bandwidth of each node's CPUs to the same memories (mlc --bandwidth_matrix)
  tier-bw          bandwidth of a node's threads on one DRAM target spread over the DRAM node and a
                   CXL node at a set of DRAM:CXL page weights, for loads and a 2:1 load:store mix:
                   which ratio gives the most, and how much more than DRAM alone

Each writes a sweep config in memory, sized by the facts of its targets (working set, threads
per node), and runs it with the sweep machinery: a Sweep into memory, or with -o into a CSV with
its sidecar and summary as `pmemlab sweep` writes them. The backend is the module (--backend
kernel; the default when it is loaded) or the user backend (--backend user, pmemlab-run; the
default otherwise, on DRAM unless --target says otherwise). --targets measures several targets
into one table with a target column; the matrices have their own: the DRAM of each node with
memory (dram_node=N) and every fsdax namespace (the module only); tier-bw has a target per ratio
(dram_nodes=D,C dram_weights=d,c, pmemlab.analysis.tiers).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from pmemlab import exitcodes
from pmemlab.analysis import tiers
from pmemlab.targets import tiers as tier_sweep

from pmemlab.host import machine, probe
from pmemlab.analysis.advertised import advertised_bandwidth, advertised_latency, advertised_of, ratio
from pmemlab import params as P
from pmemlab.backends.module import Module, sysfs_root
from pmemlab.backends.protocol import Backend, BackendKind
from pmemlab.backends.spec import BackendSpec
from pmemlab.cli.args import positive_seconds
from pmemlab.config import SweepConfig, expand, parse_config
from pmemlab.errors import ConfigError, PmemlabError
from pmemlab.analysis.stats import summarize
from pmemlab.output import add_json, examples, print_json, text_table
from pmemlab.sweep import Bench, Executor, MemoryRecorder, Plan, Progress, Sweep, SweepFiles, SweepOptions, check_output
from pmemlab.sweep import policy_for
from pmemlab.sweep.core import SweepReport
from pmemlab.sweep.execute import PointExecutor
from pmemlab.table import HIST_CSV_COLUMNS, read_rows
from pmemlab.cli import backend
from pmemlab.cli.target_axis import add_target_options
from pmemlab.targets.open import Loader, is_name, open_loader
from pmemlab.targets.spec import Substitutes, TargetLoad, choose_loads, derived_label
from pmemlab.targets.sweep import TargetBench, TargetExecutor, expand_targets, open_targets, targets_sweep

if TYPE_CHECKING:  # pandas is imported by the functions that use it: `pmemlab run` never needs it
    import pandas as pd

DEFAULT_WORKING_SET = 1 * P.GiB  # at most: MLC-sized buffers, well beyond the caches
DEFAULT_COUNT = 100_000  # latency samples per run: 30-50 ms of single accesses on real memory
DEFAULT_DRAM_SIZE = "256M"  # the module's own default DRAM target, on each node of a matrix
LOADED_DELAYS = (0, 250, 500, 1000, 2500, 5000, 10000, 50000)  # TSC ticks between injected accesses
# the ops the latency one-liners issue, from the op table (core/ops.def, in its order): the reads,
# and the durable writes whose flush keeps the line cached (clwb; none for a non-temporal store)
KEEPING_FLUSH = "clwb"
PROBE_OPS: tuple[str, ...] = tuple(op for op in P.OPS if op in P.READ_OPS or
                                   (op in P.DURABLE_WRITES and P.flush_of(op) in ("", KEEPING_FLUSH)))
PATTERN_WORDS = {"rand": "random", "seq": "sequential"}
IDLE_ROWS: tuple[tuple[str, str, int, int], ...] = (  # (op, pattern, cold, warm): the four bars of FAST'20 fig 2
    # the plain load of cold lines, random and sequential; then each durable write of warm lines, flushed first
    *((op, pattern, 1, 0) for op in PROBE_OPS if op in P.READ_OPS and not P.non_temporal(op) for pattern in ("rand", "seq")),
    *((op, "seq", 0, 1) for op in sorted((op for op in PROBE_OPS if op in P.WRITE_OPS), key=P.non_temporal)),
)


def idle_label(op: str, pattern: str, cold: int) -> str:
    """An idle-latency row's name: 'load, random, cold line'; a write's pattern goes unsaid."""
    return ", ".join([op, *([PATTERN_WORDS[pattern]] if op in P.READ_OPS else []), f"{'cold' if cold else 'warm'} line"])


PEAK_ROWS = (  # (label, op, read_pct)
    *((op, op, 0) for op in P.OPS),
    ("3:1 load:store", "store", 75),
    ("2:1 load:store", "store", 67),
    ("1:1 load:store", "store", 50),
)


# --------------------------------------------------------------------------
# where the runs go
# --------------------------------------------------------------------------
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


# --------------------------------------------------------------------------
# the configs
# --------------------------------------------------------------------------
def toml_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return json.dumps(str(value))


def config_text(name: str, description: str, repeats: int, base: dict[str, Any],
                zips: Sequence[dict[str, Sequence[Any]]] = (), axes: dict[str, Sequence[Any]] | None = None) -> str:
    lines = ["[sweep]", f"name = {toml_value(name)}", f"description = {toml_value(description)}",
             f"repeats = {repeats}", "", "[base]"]
    lines += [f"{k} = {toml_value(v)}" for k, v in base.items()]
    if axes:
        lines += ["", "[axes]", *(f"{k} = {toml_value(v)}" for k, v in axes.items())]
    for group in zips:
        lines += ["", "[[zip]]", *(f"{k} = {toml_value(v)}" for k, v in group.items())]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# the tables
# --------------------------------------------------------------------------
@dataclass
class Table:
    """What a command prints: a title, the statistic, columns with units, rows, notes."""

    title: str
    statistic: str
    columns: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # the rows in JSON: tidy, names with units
    extra: dict[str, Any] = field(default_factory=dict)  # more of the JSON document (tier-bw: the best ratios)

    def text(self) -> str:
        cells = [[_cell(v) for v in row] for row in self.rows]
        out = [self.title, self.statistic, "", *text_table(self.columns, cells, left=1)]
        out += [""] + self.notes if self.notes else []
        return "\n".join(out)

    def document(self, command: str) -> dict[str, Any]:
        return {"command": command, "title": self.title, "statistic": self.statistic,
                "rows": self.records, "notes": self.notes, **self.extra}  # output.jsonable makes NaN null


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, float):  # four significant digits, no exponent
        return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.1f}" if abs(v) >= 100 else f"{v:.2f}" if abs(v) >= 10 \
            else f"{v:.3f}"
    return str(v)


def _ok(rows: pd.DataFrame) -> pd.DataFrame:
    if rows.empty:
        return rows
    return rows[(rows["thread"].astype(str) == "all") & (rows["status"] == "ok")]


def latency_of(rows: pd.DataFrame, hist: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Per combination of keys: the median, p5 and p95 of every sample of the runs (repeats
    pooled, from the histograms; the figures' rule) and the exact mean, with the sample count."""
    import pandas as pd

    from pmemlab.analysis.resultset import Results, latency_stats

    runs = _ok(rows).assign(source_csv="")
    results = Results("", rows.assign(source_csv=""), hist.assign(source_csv="") if not hist.empty else None)
    return latency_stats(results, runs, keys)  # its `mean`: the runs' exact means weighted by their samples


def bandwidth_of(rows: pd.DataFrame, keys: Sequence[str]) -> dict[tuple[Any, ...], tuple[float, float, int]]:
    """Per combination of keys: mean GB/s over the runs, its Student-t 95 % CI half-width, runs."""
    import pandas as pd

    out: dict[tuple[Any, ...], tuple[float, float, int]] = {}
    ok = _ok(rows)
    if ok.empty:
        return out
    for key, grp in ok.groupby(list(keys), dropna=False, sort=False):
        s = summarize(pd.to_numeric(grp["bw_gbps"], errors="coerce").dropna().tolist())
        out[key if isinstance(key, tuple) else (key,)] = (s.mean, s.ci95, s.n)
    return out


def not_run(rows: pd.DataFrame, match: dict[str, Any]) -> str:
    """Why the runs of one row of a table gave nothing ('' when one did)."""
    agg = rows[rows["thread"].astype(str) == "all"]
    for k, v in match.items():
        agg = agg[agg[k] == v]
    if agg.empty or (agg["status"] == "ok").any():
        return ""
    errors = agg["error"].dropna().astype(str)
    return f"{agg['status'].iloc[0]}: {errors.iloc[0] if not errors.empty else ''}".strip()


def headline(command: str, rows: pd.DataFrame, bed: Bed) -> str:
    import pandas as pd

    agg = rows[rows["thread"].astype(str) == "all"]
    first = agg.iloc[0] if not agg.empty else pd.Series(dtype=object)
    where = f"{bed.kind} backend" + (f", {first.get('hostname')}" if first.get("hostname") else "")
    return f"pmemlab {command} ({where}; {first.get('cpu_model') or 'unknown CPU'})"


def emulation_note(rows: pd.DataFrame) -> list[str]:
    import pandas as pd

    agg = rows[rows["thread"].astype(str) == "all"]
    hyper = {str(v) for v in agg.get("hypervisor", pd.Series(dtype=str)).dropna() if str(v) not in ("none", "")}
    emulated = {str(v) for v in agg.get("target_emulated", pd.Series(dtype=str)).dropna()
                if str(v) not in ("no", "dram", "")}
    if not hyper and not emulated:
        return []
    what = ", ".join([*(f"under {h}" for h in sorted(hyper)), *(f"on a {e} namespace" for e in sorted(emulated))])
    return [f"EMULATED: measured {what}: these numbers show the tool works, not pmem performance"]


def target_names(rows: pd.DataFrame, bed: Bed) -> dict[str, str]:
    """target_label -> how a column or row names it: the label and what it is."""
    import pandas as pd

    out: dict[str, str] = {}
    agg = rows[rows["thread"].astype(str) == "all"]
    for t in bed.targets or []:
        sub = agg[agg["target_label"] == t.label]
        node = sub["target_node"].dropna() if "target_node" in sub else pd.Series(dtype=float)
        what = t.load.target if t.load.target != "dram" else "DRAM"
        where = f", node {int(node.iloc[0])}" if not node.empty and not t.load.target.startswith("dram") else ""
        out[t.label] = t.label if t.label.startswith(("dram", "pmem")) and not where else f"{t.label} ({what}{where})"
    return out


def advertised_note(rows: pd.DataFrame) -> list[str]:
    import pandas as pd

    agg = rows[rows["thread"].astype(str) == "all"]
    if "adv_node" not in agg or pd.to_numeric(agg.get("adv_read_latency_ns"), errors="coerce").dropna().empty:
        return ["advertised: n/a (the kernel has no access0 values for the target's node: no HMAT)"]
    return ["advertised: the firmware's access0 values of the target's memory node (HMAT; for a CXL node the "
            "kernel's sum of the devices' CDAT, links and host bridge), read as the kernel exposes them; "
            "bandwidth MB/s read as 1e6 B/s"]


def reasons_note(reasons: dict[str, str]) -> list[str]:
    return [f"n/a {key}: {why}" for key, why in reasons.items()]


# --------------------------------------------------------------------------
# the commands
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class OneLiner:
    """A one-liner of the family: its command name is its key in ONELINERS (and its row in
    cli/commands.py)."""

    help: str
    examples: tuple[str, ...]
    config: Callable[[argparse.Namespace, Sizing], str]
    table: Callable[[argparse.Namespace, pd.DataFrame, pd.DataFrame, Bed], Table]
    measures: str  # latency (runs of --count samples) or bandwidth (runs of --duration-ms)
    repeats: int = 1
    duration_ms: int = 500
    matrix: bool = False
    # its own target axis (the matrices: a target per memory; tier-bw: one per ratio), else the
    # backend as it is or --targets
    axis: Callable[[argparse.Namespace, BackendKind], list[TargetLoad]] | None = None


def idle_config(args: argparse.Namespace, size: Sizing) -> str:
    return config_text("idle-latency", "pmemlab idle-latency: one 8 B access at a time", args.repeats,
                       {"mode": "latency", "threads": 1, "access_size": 8, "width": 8,
                        "working_set": size.working_set(args.working_set), "count": args.count},
                       zips=[{"op": [r[0] for r in IDLE_ROWS], "pattern": [r[1] for r in IDLE_ROWS],
                              "cold": [r[2] for r in IDLE_ROWS], "warm": [r[3] for r in IDLE_ROWS]}])


def idle_table(args: argparse.Namespace, rows: pd.DataFrame, hist: pd.DataFrame, bed: Bed) -> Table:
    keys = ["target_label", "op", "pattern", "cold"]
    stats = latency_of(rows, hist, keys)
    names = target_names(rows, bed)
    multi = len(bed.targets or []) > 1
    out, reasons, records = [], {}, []
    for target in ([t.label for t in bed.targets] if bed.targets else [""]):
        for op, pattern, cold, _ in IDLE_ROWS:
            label = idle_label(op, pattern, cold)
            match = {"target_label": target, "op": op, "pattern": pattern, "cold": cold}
            hit = stats
            for k, v in match.items():
                hit = hit[hit[k] == v]
            values: list[Any] = [math.nan] * 5 + [0]
            if hit.empty:
                why = not_run(rows, match)
                if why:
                    reasons[f"{names.get(target, target) + ': ' if multi else ''}{label}"] = why
            else:
                h = hit.iloc[0]
                values = [h["p50"], h["p5"], h["p95"], h["mean"], h["max"], int(h["samples"])]
            adv = advertised_latency(advertised_of(rows, target), op)
            values += [adv, ratio(values[0], adv)]
            out.append([*([names.get(target, target)] if multi else []), label, *values])
            records.append({**({"target": target} if target else {}), "access": label, "op": op, "pattern": pattern,
                            **dict(zip(("median_ns", "p5_ns", "p95_ns", "mean_ns", "max_ns", "samples",
                                        "advertised_ns", "median_over_advertised"), values))})
    first = rows[rows["thread"].astype(str) == "all"].head(1)
    ws = int(first["working_set"].iloc[0]) if not first.empty else 0
    return Table(
        title=headline("idle-latency", rows, bed) + (f" on {_only_target(rows)}" if not multi else ""),
        statistic=(f"latency of one 8 B access at a time, ns: median, p5 and p95 of every sample (repeats pooled), "
                   f"exact mean and max; {args.repeats} run(s) of {args.count} samples per row, 1 thread, "
                   f"{P.fmt_size(ws)} window; cold = the line flushed before each access, warm = loaded first"),
        columns=[*(["target"] if multi else []), "access", "median ns", "p5 ns", "p95 ns", "mean ns", "max ns",
                 "samples", "advertised ns", "median/adv"],
        rows=out, notes=reasons_note(reasons) + advertised_note(rows) + emulation_note(rows), records=records)


def loaded_config(args: argparse.Namespace, size: Sizing) -> str:
    threads = args.threads or max(2, size.node_threads)
    return config_text("loaded-latency", "pmemlab loaded-latency: probe latency under injected load", args.repeats,
                       {"mode": "bandwidth", "probe": 1, "op": args.op, "pattern": args.pattern, "access_size": 64,
                        "placement": "per-thread", "threads": threads,
                        "working_set": size.working_set(args.working_set), "duration_ms": args.duration_ms,
                        **({"load_target": args.load_target} if args.load_target else {})},
                       axes={"delay_ticks": list(args.delays)})


def loaded_table(args: argparse.Namespace, rows: pd.DataFrame, hist: pd.DataFrame, bed: Bed) -> Table:
    keys = ["target_label", "delay_ticks"]
    stats = latency_of(rows, hist, keys)
    bw = bandwidth_of(rows, keys)
    khz = bed.sizing().tsc_khz
    where = {"probe_target": args.target, "load_target": args.load_target} if args.load_target else {}
    names = target_names(rows, bed)
    multi = len(bed.targets or []) > 1
    out, reasons, records = [], {}, []
    for target in ([t.label for t in bed.targets] if bed.targets else [""]):
        for delay in args.delays:
            hit = stats[(stats["target_label"] == target) & (stats["delay_ticks"] == delay)]
            mean, ci, n = bw.get((target, delay), (math.nan, math.nan, 0))
            delay_ns = delay * 1e6 / khz if khz else math.nan
            lat = [math.nan] * 3
            if hit.empty:
                why = not_run(rows, {"target_label": target, "delay_ticks": delay})
                if why:
                    reasons[f"{names.get(target, target) + ' ' if multi else ''}delay {delay}"] = why
            else:
                lat = [hit.iloc[0]["p50"], hit.iloc[0]["p5"], hit.iloc[0]["p95"]]
            out.append([*([names.get(target, target)] if multi else []), delay, delay_ns, *lat, mean, ci])
            records.append({**({"target": target} if target else {}), **where, "delay_ticks": delay, "delay_ns": delay_ns,
                            "latency_median_ns": lat[0], "latency_p5_ns": lat[1], "latency_p95_ns": lat[2],
                            "bw_gbps_mean": mean, "bw_gbps_ci95": ci, "runs": n})
    first = rows[rows["thread"].astype(str) == "all"].head(1)
    threads = int(first["threads"].iloc[0]) if not first.empty else 0
    return Table(
        title=headline("loaded-latency", rows, bed) + (f" on {_only_target(rows)}" if not multi else "")
        + (f", load threads on {args.load_target}" if args.load_target else ""),
        statistic=(f"thread 0 probes the latency of single {args.op}s ({args.pattern}) while {threads - 1} thread(s) "
                   f"inject {args.op}s{' into ' + args.load_target if args.load_target else ''} with the delay "
                   f"between accesses; latency ns: median, p5, p95 of the probe's "
                   f"samples; bandwidth GB/s (1e9 B/s) of all threads: mean over {args.repeats} run(s) of "
                   f"{args.duration_ms} ms and its 95 % CI"),
        columns=[*(["target"] if multi else []), "delay ticks", "delay ns", "latency median ns", "p5 ns", "p95 ns",
                 "bandwidth GB/s", "+-95% CI"],
        rows=out, records=records, notes=reasons_note(reasons) + emulation_note(rows))


def peak_config(args: argparse.Namespace, size: Sizing) -> str:
    threads = args.threads or size.node_threads
    return config_text("peak-bw", "pmemlab peak-bw: bandwidth per op and load:store mix", args.repeats,
                       {"mode": "bandwidth", "pattern": "seq", "access_size": args.access_size,
                        "placement": "per-thread", "threads": threads,
                        "working_set": size.working_set(args.working_set), "duration_ms": args.duration_ms},
                       zips=[{"op": [r[1] for r in PEAK_ROWS], "read_pct": [r[2] for r in PEAK_ROWS]}])


def peak_table(args: argparse.Namespace, rows: pd.DataFrame, hist: pd.DataFrame, bed: Bed) -> Table:
    keys = ["target_label", "op", "read_pct"]
    bw = bandwidth_of(rows, keys)
    names = target_names(rows, bed)
    targets = [t.label for t in bed.targets] if bed.targets else [""]
    multi = len(targets) > 1
    out, reasons, records = [], {}, []
    for label, op, pct in PEAK_ROWS:
        cells: list[Any] = [label]
        for target in targets:
            mean, ci, n = bw.get((target, op, pct), (math.nan, math.nan, 0))
            adv = advertised_bandwidth(advertised_of(rows, target), op, pct)
            cells += [mean, ci, adv, ratio(mean, adv)]
            records.append({**({"target": target} if target else {}), "access": label, "op": op, "read_pct": pct,
                            "bw_gbps_mean": mean, "bw_gbps_ci95": ci, "runs": n, "advertised_gbps": adv,
                            "mean_over_advertised": ratio(mean, adv)})
            why = not_run(rows, {"target_label": target, "op": op, "read_pct": pct})
            if why and n == 0:
                reasons[f"{label}{' on ' + names.get(target, target) if multi else ''}"] = why
        out.append(cells)
    first = rows[rows["thread"].astype(str) == "all"].head(1)
    threads = int(first["threads"].iloc[0]) if not first.empty else 0
    ws = int(first["working_set"].iloc[0]) if not first.empty else 0
    columns = ["op"]
    for target in targets:
        name = names.get(target, target)
        columns += [f"{name} GB/s" if multi else "GB/s", "+-95% CI", "adv GB/s", "GB/s / adv"]
    return Table(
        title=headline("peak-bw", rows, bed) + (f" on {_only_target(rows)}" if not multi else ""),
        statistic=(f"bandwidth GB/s (1e9 B/s), all {threads} threads together: mean over {args.repeats} run(s) of "
                   f"{args.duration_ms} ms and its 95 % CI; sequential {args.access_size} B accesses, each thread "
                   f"in its own part of a {P.fmt_size(ws)} window; a mix issues loads for that share of each "
                   f"thread's accesses and stores for the rest"),
        columns=columns, rows=out, notes=reasons_note(reasons) + advertised_note(rows) + emulation_note(rows),
        records=records)


def _only_target(rows: pd.DataFrame) -> str:
    import pandas as pd

    agg = rows[rows["thread"].astype(str) == "all"]
    if agg.empty:
        return "?"
    first = agg.iloc[0]
    node = first.get("target_node")
    return f"{first.get('target')} ({first.get('target_kind')}" + (
        f", node {int(node)})" if node is not None and not pd.isna(node) else ")")


def cpu_rows(size: Sizing) -> list[tuple[int, tuple[int, ...]]]:
    return sorted(size.node_cpus.items())


def latency_matrix_config(args: argparse.Namespace, size: Sizing) -> str:
    return config_text("latency-matrix", "pmemlab latency-matrix: idle latency, CPUs of each node x memory",
                       args.repeats,
                       {"mode": "latency", "threads": 1, "op": "load", "pattern": "rand", "cold": 1,
                        "access_size": 8, "width": 8, "working_set": size.working_set(args.working_set),
                        "count": args.count},
                       axes={"cpus": [str(cpus[0]) for _, cpus in cpu_rows(size)]})


def bw_matrix_config(args: argparse.Namespace, size: Sizing) -> str:
    rows = cpu_rows(size)
    per_node = [cpus[: args.threads] if args.threads else cpus for _, cpus in rows]
    return config_text("bw-matrix", "pmemlab bw-matrix: read bandwidth, CPUs of each node x memory", args.repeats,
                       {"mode": "bandwidth", "op": "load", "pattern": "seq", "access_size": 256,
                        "placement": "per-thread", "working_set": size.working_set(args.working_set),
                        "duration_ms": args.duration_ms},
                       zips=[{"cpus": [P.fmt_cpulist(c) for c in per_node], "threads": [len(c) for c in per_node]}])


def matrix_table(what: str) -> Callable[[argparse.Namespace, pd.DataFrame, pd.DataFrame, Bed], Table]:
    def table(args: argparse.Namespace, rows: pd.DataFrame, hist: pd.DataFrame, bed: Bed) -> Table:
        size = bed.sizing()
        names = target_names(rows, bed)
        targets = [t.label for t in bed.targets or []]
        value: dict[tuple[Any, ...], float] = {}
        if what == "latency":
            stats = latency_of(rows, hist, ["target_label", "cpus"])
            value = {(r["target_label"], r["cpus"]): float(r["p50"]) for _, r in stats.iterrows()}
        else:
            value = {k: v[0] for k, v in bandwidth_of(rows, ["target_label", "cpus"]).items()}
        out, reasons, records = [], {}, []
        key = "latency_median_ns" if what == "latency" else "bw_gbps_mean"
        for node, cpus in cpu_rows(size):
            picked = str(cpus[0]) if what == "latency" else P.fmt_cpulist(cpus[: args.threads] if args.threads else cpus)
            cells: list[Any] = [f"node {node} (CPU {picked})"]
            for target in targets:
                v = value.get((target, picked), math.nan)
                cells.append(v)
                records.append({"cpu_node": node, "cpus": picked, "memory": target, key: v})
                if isinstance(v, float) and math.isnan(v):
                    why = not_run(rows, {"target_label": target, "cpus": picked})
                    if why:
                        reasons[f"node {node} -> {names.get(target, target)}"] = why
            out.append(cells)
        # the firmware's view of each memory: access0 (from its best initiators), and the
        # measurement from the first of those nodes against it
        adv_cells: list[Any] = ["advertised (access0)"]
        ratio_cells: list[Any] = ["measured / advertised"]
        advertised: list[dict[str, Any]] = []
        for target in targets:
            adv = advertised_of(rows, target)
            a = adv["read_ns"] if what == "latency" else adv["read_gbps"]
            inits = _initiators(rows, target)
            row_of = {node: (str(cpus[0]) if what == "latency" else
                             P.fmt_cpulist(cpus[: args.threads] if args.threads else cpus)) for node, cpus in cpu_rows(size)}
            # a CXL node's access0 names no initiator (the kernel computed it from the CPUs' side of
            # the host bridge's generic port): held against the first node with CPUs then
            from_node = next((n for n in inits if n in row_of), None) if inits else next(iter(row_of), None)
            m = value.get((target, row_of[from_node]), math.nan) if from_node is not None else math.nan
            adv_cells.append(a)
            ratio_cells.append(ratio(m, a))
            advertised.append({"memory": target, "initiators": inits, "from_cpu_node": from_node,
                               ("advertised_ns" if what == "latency" else "advertised_gbps"): a,
                               "measured_over_advertised": ratio(m, a)})
        out += [adv_cells, ratio_cells]
        unit = "median ns" if what == "latency" else "GB/s"
        stat = (f"idle latency, ns: median of {args.count} samples x {args.repeats} run(s) of single 8 B loads of cold "
                f"lines at random in the window, one thread on the row's first CPU" if what == "latency" else
                f"read bandwidth, GB/s (1e9 B/s): mean over {args.repeats} run(s) of {args.duration_ms} ms of "
                f"sequential 256 B loads, a thread on each of the row's CPUs")
        return Table(title=headline(f"{what if what == 'latency' else 'bw'}-matrix", rows, bed),
                     statistic=stat + "; rows: the CPUs of each NUMA node; columns: the memory measured",
                     columns=["CPUs \\ memory", *(f"{names.get(t, t)} {unit}" for t in targets)],
                     rows=out, notes=reasons_note(reasons) + advertised_note(rows) + [
                         "measured / advertised: the measurement from the first node access0 names as the "
                         "memory's best initiator (none named, as for a CXL node: the first node with CPUs)"] + emulation_note(rows), records=records,
                     extra={"advertised": advertised})
    return table


def _initiators(rows: pd.DataFrame, target: str) -> list[int]:
    agg = rows[(rows["thread"].astype(str) == "all") & (rows["target_label"] == target)]
    if "adv_initiators" not in agg:
        return []
    for text in agg["adv_initiators"].dropna().astype(str):
        try:
            return list(P.parse_cpulist(text))
        except ValueError:
            return []
    return []


def matrix_loads(args: argparse.Namespace, kind: BackendKind) -> list[TargetLoad]:
    """The columns of a matrix: the DRAM of each node with memory, and each fsdax namespace (the
    module only: the user backend takes a DAX file, given with --targets)."""
    host = probe.HostPaths()
    nodes = machine.numa_info(host)["nodes"]
    loads = []
    for n in nodes:
        if (n.get("mem_total_kib") or 0) > 0:
            params = (("target", "dram"), ("dram_node", str(n["node"])), ("dram_size", args.dram_size))
            loads.append(TargetLoad(derived_label(params[:2]), params))
    if kind == "kernel":
        loads += [TargetLoad(Path(dev).name, (("target", dev),)) for dev in fsdax_namespaces(host)]
    return loads


def fsdax_namespaces(host: probe.HostPaths) -> list[str]:
    """The block devices of fsdax namespaces (DAX-capable pmem disks), pmem0 first."""
    out = []
    for dev in sorted(host.sys.glob("block/pmem*"), key=lambda p: (len(p.name), p.name)):
        dax = dev / "queue" / "dax"
        if dax.exists() and dax.read_text().strip() == "1":
            out.append(str(host.dev / dev.name))
    return out

def tier_nodes(args: argparse.Namespace) -> tuple[int, int]:
    """--dram-node and --cxl-node, else the first node with CPUs and the first without (tier_sweep.node_pair)."""
    return tier_sweep.node_pair(machine.numa_info(probe.HostPaths())["nodes"], args.dram_node, args.cxl_node)


def tier_loads(args: argparse.Namespace, kind: BackendKind) -> list[TargetLoad]:
    """A DRAM target per ratio of --weights over the DRAM node and the CXL node."""
    dram, cxl = tier_nodes(args)
    return tier_sweep.ratio_loads(args.weights, dram, cxl, args.dram_size, args.dram_pages)


def tier_cpus(args: argparse.Namespace, size: Sizing) -> tuple[int, int, tuple[int, ...]]:
    """The DRAM node, the CXL node and the CPUs of the run: --threads of the DRAM node's (all of them)."""
    dram, cxl = tier_nodes(args)
    cpus = size.node_cpus.get(dram, ())
    if not cpus:
        raise ConfigError(f"node {dram} (the DRAM side) has no online CPU to run on", "give --dram-node N")
    if args.threads and args.threads > len(cpus):
        raise ConfigError(f"--threads {args.threads}: node {dram} has {len(cpus)} CPU(s)",
                          f"give --threads {len(cpus)} or fewer")
    return dram, cxl, cpus[: args.threads] if args.threads else cpus


def tier_config(args: argparse.Namespace, size: Sizing) -> str:
    _, _, cpus = tier_cpus(args, size)
    return config_text("tier-bw", "pmemlab tier-bw: bandwidth per DRAM:CXL page ratio", args.repeats,
                       {"mode": "bandwidth", "pattern": "seq", "access_size": args.access_size,
                        "placement": "per-thread", "threads": len(cpus), "cpus": P.fmt_cpulist(cpus),
                        "working_set": size.working_set(args.working_set), "duration_ms": args.duration_ms},
                       zips=[{"op": [m[1] for m in tiers.MIXES], "read_pct": [m[2] for m in tiers.MIXES]}])


def _gain(v: float) -> str:
    return "n/a" if math.isnan(v) else f"{v:+.1f} %"


def tier_table(args: argparse.Namespace, rows: pd.DataFrame, hist: pd.DataFrame, bed: Bed) -> Table:
    dram, cxl, cpus = tier_cpus(args, bed.sizing())
    stats = tiers.summarize(rows, args.weights)
    cells = {(s.ratio, s.mix): s for s in stats}
    out, reasons = [], {}
    for ratio in args.weights:
        first = cells[(ratio, tiers.MIXES[0][0])]
        row: list[Any] = [ratio.text, first.dram_pct_placed]
        for mix, op, pct in tiers.MIXES:
            s = cells[(ratio, mix)]
            row += [f"{_cell(s.mean)}{' *' if s.best else ''}", s.ci95,
                    "ref" if ratio.cxl == 0 and s.runs else _gain(s.gain_pct)]
            why = not_run(rows, {"target_label": ratio.label, "op": op, "read_pct": pct}) if not rows.empty else ""
            if why and not s.runs:
                reasons[f"{ratio.text} {mix}"] = why
        out.append(row)
    best = tiers.best_text(stats)
    agg = rows[rows["thread"].astype(str) == "all"] if not rows.empty else rows
    ws = int(agg["working_set"].iloc[0]) if not agg.empty else 0
    sizes = sorted({int(float(v)) for v in agg["target_page_size"].dropna()}) if "target_page_size" in agg else []
    page = f"{P.fmt_size(sizes[0])} " if len(sizes) == 1 else ""
    mixed = [] if len(sizes) < 2 else [
        f"MIXED PAGE SIZES: the ratios' targets are mapped with {', '.join(P.fmt_size(v) for v in sizes)} pages "
        f"(target_page_size: the module maps a target over two nodes with 4 KiB entries, a one-node one with "
        f"2 MiB): give --dram-pages 4k to compare like with like"]
    columns = ["DRAM:CXL", "DRAM % placed"]
    for mix, _, _ in tiers.MIXES:
        columns += [f"{mix} GB/s", "+-95% CI", "vs DRAM alone"]
    return Table(
        title=headline("tier-bw", rows, bed) + f": DRAM node {dram}, CXL node {cxl}",
        statistic=(f"bandwidth GB/s (1e9 B/s), all {len(cpus)} thread(s) on node {dram} (CPUs {P.fmt_cpulist(cpus)}) "
                   f"together: mean over {args.repeats} run(s) of {args.duration_ms} ms and its 95 % CI; "
                   f"sequential {args.access_size} B accesses, each thread in its own part of a "
                   f"{P.fmt_size(ws)} window of a {args.dram_size} DRAM target whose {page}pages go to node "
                   f"{dram} and node {cxl} in weighted round robin at the ratio (DRAM % placed: of its bytes, "
                   f"found on node {dram} after placement); 2:1 load:store: two loads for every store in each "
                   f"thread; vs DRAM alone: the gain over 1:0; * the best ratio of the column"),
        columns=columns, rows=out, records=[s.record() for s in stats],
        notes=[f"best for {mix}: {text}" for mix, text in best.items()] + mixed + reasons_note(reasons)
        + emulation_note(rows),
        extra={"dram_node": dram, "cxl_node": cxl,
               "best": {s.mix: s.ratio.text for s in stats if s.best}})


ONELINERS: dict[str, OneLiner] = {
    "idle-latency": OneLiner("idle latency of single accesses (mlc --idle_latency)",
             ("pmemlab idle-latency", "pmemlab idle-latency --targets pmem,dram",
              "pmemlab idle-latency --backend user --target dram --count 20000 --json"), idle_config, idle_table, "latency"),
    "loaded-latency": OneLiner("probe latency vs bandwidth under injected load (mlc --loaded_latency)",
             ("pmemlab loaded-latency", "pmemlab loaded-latency --op ntstore --delays 0,1000,10000",
              "pmemlab loaded-latency --threads 4 --duration-ms 200 -o results/loaded-latency.csv",
              "pmemlab loaded-latency --probe-target cxl --load-target dram"), loaded_config, loaded_table, "bandwidth",
             duration_ms=1000),
    "peak-bw": OneLiner("bandwidth per op and load:store mix, a node's threads (mlc --peak_injection_bandwidth)",
             ("pmemlab peak-bw", "pmemlab peak-bw --targets pmem,dram --duration-ms 200",
              "pmemlab peak-bw --backend user --target dram --json"), peak_config, peak_table, "bandwidth",
             repeats=3),
    "latency-matrix": OneLiner("idle latency: CPUs of each NUMA node x each node's memory and pmem (mlc --latency_matrix)",
             ("pmemlab latency-matrix", "pmemlab latency-matrix --count 100000 --json"), latency_matrix_config, matrix_table("latency"), "latency",
             matrix=True, axis=lambda args, kind: matrix_loads(args, kind)),
    "bw-matrix": OneLiner("read bandwidth: CPUs of each NUMA node x each node's memory and pmem (mlc --bandwidth_matrix)",
             ("pmemlab bw-matrix", "pmemlab bw-matrix --duration-ms 500 --threads 2"), bw_matrix_config, matrix_table("bw"), "bandwidth", repeats=3,
             matrix=True, axis=lambda args, kind: matrix_loads(args, kind)),
    "tier-bw": OneLiner("bandwidth per DRAM:CXL page ratio of one target, loads and a 2:1 load:store mix, a node's threads",
             ("pmemlab tier-bw", "pmemlab tier-bw --weights 1:0,3:1,1:1,0:1 --duration-ms 200 --json",
              "pmemlab tier-bw --backend user --dram-node 0 --cxl-node 1 -o results/tier-bw.csv"), tier_config, tier_table,
             "bandwidth", repeats=3, axis=lambda args, kind: tier_loads(args, kind)),
}


# --------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------
def _size(text: str) -> int:
    try:
        return P.canonical("working_set", text)  # type: ignore[no-any-return]
    except P.ConfigValueError as exc:
        raise argparse.ArgumentTypeError(exc.problem.reason) from None


def _weights(text: str) -> tuple[tiers.Ratio, ...]:
    try:
        return tier_sweep.parse_weights(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.cause) from None


def _delays(text: str) -> tuple[int, ...]:
    try:
        return tuple(P.parse_int(v) for v in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(sub: Any, name: str) -> None:
    """The parser of the one-liner `name`: the options every one-liner takes, and its own."""
    one = ONELINERS[name]
    p = sub.add_parser(name, help=one.help, description=f"{one.help[:1].upper()}{one.help[1:]}.",
                       epilog=examples(*one.examples), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=("kernel", "user"),
                   help="kernel (pmemlab.ko; the default when it is loaded) or user (pmemlab-run)")
    if one.axis is None or one.matrix:
        p.add_argument("--target", help="user backend: the target (dram, dram:NODE, cxl, a DAX file; default dram); "
                                        "kernel: a named target of the module (targets/NAME), else refuse "
                                        "unless the module runs on it")
        add_target_options(p, "the backend as it is" if not one.matrix else
                           "the DRAM of each node with memory and, on the module, each fsdax namespace")
    p.add_argument("--repeats", type=int, default=one.repeats, metavar="N", help=f"runs per row ({one.repeats})")
    p.add_argument("--working-set", type=_size, metavar="SIZE",
                   help="window of the accesses (default: 1 GiB or the smallest target)")
    if one.measures == "latency":
        p.add_argument("--count", type=int, default=DEFAULT_COUNT, metavar="N",
                       help=f"samples per run ({DEFAULT_COUNT})")
    else:
        p.add_argument("--duration-ms", type=int, default=one.duration_ms, metavar="MS",
                       help=f"length of each run ({one.duration_ms})")
        p.add_argument("--threads", type=int, metavar="N",
                       help="threads (default: " + ("every CPU of the DRAM node)" if name == "tier-bw" else
                                                     "the CPUs of the target's node" +
                                                     (", at least 2" if name == "loaded-latency" else "") + ")"))
    if name in ("peak-bw", "tier-bw"):
        p.add_argument("--access-size", type=_size, default=256, metavar="BYTES", help="bytes per access (256)")
    if name == "tier-bw":
        p.add_argument("--weights", type=_weights, default=tier_sweep.parse_weights(tier_sweep.DEFAULT_WEIGHTS),
                       metavar="D:C,...", help=f"DRAM:CXL page weights, one target each ({tier_sweep.DEFAULT_WEIGHTS}; "
                                               f"0..{tier_sweep.WEIGHT_MAX}; 1:0 is DRAM alone, 0:1 CXL alone)")
        p.add_argument("--dram-node", type=int, metavar="N",
                       help="the DRAM node, whose CPUs run the threads (default: the first node with CPUs)")
        p.add_argument("--cxl-node", type=int, metavar="N",
                       help="the CXL node (default: the first node with memory and no CPUs)")
        p.add_argument("--dram-size", default=DEFAULT_DRAM_SIZE, metavar="SIZE",
                       help=f"size of each ratio's DRAM target ({DEFAULT_DRAM_SIZE})")
        p.add_argument("--dram-pages", choices=("4k", "2m"),
                       help="pages placed on the nodes (default: the backend's, 2m: 2 MiB)")
    if name == "loaded-latency":
        p.add_argument("--op", choices=PROBE_OPS, default="load",
                       help="what the probe and the injectors issue (load)")
        p.add_argument("--pattern", choices=("rand", "seq"), default="rand", help="access pattern (rand)")
        p.add_argument("--probe-target", metavar="TARGET",
                       help="the target thread 0 probes, as --target takes it: on the module a named target "
                            "(targets/NAME), on the user backend dram, dram:NODE, cxl or a DAX file")
        p.add_argument("--load-target", metavar="TARGET",
                       help="the target the load threads run on (run parameter load_target): on the module a "
                            "named target, on the user backend dram:NODE, cxl or a DAX file (default: the probe's)")
        p.add_argument("--delays", type=_delays, default=LOADED_DELAYS, metavar="TICKS,...",
                       help="TSC ticks between injected accesses (" + ",".join(map(str, LOADED_DELAYS)) + ")")
    if one.matrix:
        p.add_argument("--dram-size", default=DEFAULT_DRAM_SIZE, metavar="SIZE",
                       help=f"size of each node's DRAM target ({DEFAULT_DRAM_SIZE})")
    p.add_argument("-o", "--output", type=Path, metavar="CSV",
                   help="also write the rows, sidecar and summary as `pmemlab sweep` does")
    add_json(p, "the table")
    p.add_argument("--timeout", type=positive_seconds, default=600.0, metavar="S",
                   help="abort a run after S seconds (600)")


def run(args: argparse.Namespace) -> int:
    """The one-liner the command line names: its config written, run as a sweep, its table printed."""
    name = str(args.command)
    one = ONELINERS[name]
    if getattr(args, "threads", None) is not None and args.threads < 1:
        raise ConfigError(f"--threads {args.threads}: at least 1", "give a positive count")
    if args.output:
        check_output(args.output)  # before anything is opened or run
        SweepFiles(args.output).check_ours()  # -o replaces only what a sweep wrote
    probe_and_load(args)
    kind = pick_backend(args)
    subs = Substitutes.probe(getattr(args, "pmem", None), getattr(args, "pmem_dram", None))
    if getattr(args, "targets", None) is not None:
        loads = choose_loads({}, args.targets, subs)
    elif kind == "kernel" and is_name(getattr(args, "target", None)):  # a named target of the module
        loads = [TargetLoad(args.target, (("target", args.target),))]
    elif one.axis is not None:
        loads = [subs.resolve(t) for t in one.axis(args, kind)]
    else:
        loads = None
    bed = open_bed(args, loads, backend.online_cpus())
    try:
        if not bed.benches:
            raise PmemlabError(f"no target of pmemlab {name} could be opened", "see the reasons above")
        cfg = parse_config(one.config(args, bed.sizing()), source=f"pmemlab {name}")
        report, rows, hist = _run(cfg, bed, args)
    finally:
        bed.close()
    table = one.table(args, rows, hist, bed)
    if args.json:
        print_json(table.document(name))
    else:
        print(table.text())
    return exitcodes.for_sweep(report)


def probe_and_load(args: argparse.Namespace) -> None:
    """loaded-latency's --probe-target (the --target of the run) and --load-target (its run
    parameter load_target), checked before anything is opened."""
    probe, load = getattr(args, "probe_target", None), getattr(args, "load_target", None)
    if probe:
        if args.target and args.target != probe:
            raise ConfigError(f"--probe-target {probe} with --target {args.target}", "give one of them")
        args.target = probe
    if load and args.targets is not None:
        raise ConfigError(f"--load-target {load} with --targets {args.targets}",
                          "probe one target: give it with --probe-target")
    if load and "load_target" not in P.PARAMS:
        raise ConfigError(f"--load-target {load}: this build's parameter table has no load_target",
                          "build the module and pmemlab-run of this tree (make)")


def _run(cfg: SweepConfig, bed: Bed, args: argparse.Namespace) -> tuple[SweepReport, pd.DataFrame, pd.DataFrame]:
    """The sweep of the command's config: into memory, or with -o into its files."""
    import pandas as pd

    progress = not args.json and Progress(0, cfg.name, enabled=False).interactive
    cfg.timeout_s = args.timeout
    if bed.targets is not None and bed.loader is not None:
        expand_targets(cfg, bed.targets)
        points = [p for t in bed.targets for p in t.points]
        executor: PointExecutor = TargetExecutor(bed.targets, args.timeout)
    else:
        bench = bed.benches[0]
        points = expand(cfg, bench.facts, bench.discovered)
        executor = Executor(bench.backend, bench.conditions, bench.facts, args.timeout)
    if args.output:
        opts = SweepOptions(output=args.output, fresh=True, progress=progress, argv=sys.argv[:])
        sweep = (targets_sweep(cfg, bed.targets, opts) if bed.targets is not None
                 else Sweep.for_config(cfg, points, bed.benches[0], opts))  # runs through their own executor
        report = sweep.run()
        from pmemlab.analysis.resultset import histogram_path

        hpath = histogram_path(args.output)
        hist = read_rows(hpath, HIST_CSV_COLUMNS, "histogram CSV") if hpath.exists() else pd.DataFrame()
        return report, *_labelled(read_rows(args.output), hist)
    recorder = MemoryRecorder()
    plan = Plan(points, policy_for(cfg))
    sweep = Sweep(cfg.name, plan, executor, recorder,
                  progress=Progress(plan.planned_runs(), cfg.name, enabled=progress))
    report = sweep.run()
    return report, *_labelled(pd.DataFrame(recorder.rows), pd.DataFrame(recorder.hist))


def _labelled(rows: pd.DataFrame, hist: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows and histograms with target_label '' where a run had no target axis (the tables
    look rows up by it; a CSV gives it as empty, memory not at all)."""
    for frame in (rows, hist):
        if not frame.empty:
            frame["target_label"] = frame["target_label"].fillna("") if "target_label" in frame else ""
    return rows, hist
