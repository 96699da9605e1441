"""Reading sweep results for figures: the CSVs of one experiment (one per module load, merged),
their histograms and sidecars, the aggregate rows per run, and the caption of a figure."""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd

from pmemlab.analysis.card import is_probe_csv
from pmemlab.errors import PmemlabError
from pmemlab.host.machine import emulation_conditions
from pmemlab.analysis.stats import CI_REPEATS, SPREAD_CI, SPREAD_RANGE, spread_of, summarize
from pmemlab.table import HIST_CSV_COLUMNS, is_pmemlab_csv, read_rows

TARGET_LABEL_SEPARATOR = "@"  # results/NAME@LABEL.csv: the run of NAME with the module load LABEL


@dataclass
class Results:
    """Every row of one experiment's CSVs, its latency histograms and sidecars."""

    name: str
    rows: pd.DataFrame
    hist: pd.DataFrame | None = None
    sidecars: list[dict[str, Any]] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)  # "LABEL: why" of module loads that failed

    def ok(self) -> pd.DataFrame:
        """Aggregate rows (thread = all) of the runs that succeeded."""
        return ok_aggregate(self.rows)

    def threads(self) -> pd.DataFrame:
        """Per-thread rows of the runs that succeeded."""
        rows = self.rows
        return rows[(rows["thread"].astype(str) != "all") & (rows["status"] == "ok")]

    def timer_step(self, label: object = None) -> TimerStep | None:
        """The clock step the latency samples of these results resolve (of target `label`, or of
        every target): timer_step over their histograms. None without latency samples."""
        hist = self.hist
        if hist is None or hist.empty:
            return None
        if label is not None:
            runs = self.rows[self.rows["target_label"] == label][RUN_KEYS].drop_duplicates()
            runs = runs.assign(repeat=pd.to_numeric(runs["repeat"], errors="coerce"))
            hist = hist.assign(repeat=pd.to_numeric(hist["repeat"], errors="coerce"))
            hist = hist.drop(columns=[c for c in ("target_label",) if c in hist]).merge(runs, on=RUN_KEYS)
        return timer_step(hist)


def is_sweep_csv(path: Path) -> bool:
    return path.suffix == ".csv" and not path.name.endswith((".summary.csv", ".hist.csv"))


def histogram_path(csv_path: Path) -> Path:
    return csv_path.with_name(csv_path.stem + ".hist.csv")


def label_from_path(csv_path: Path) -> str:
    """`emulation@dram-remote.csv` -> `dram-remote`; no label -> ''."""
    stem = csv_path.stem
    return stem.split(TARGET_LABEL_SEPARATOR, 1)[1] if TARGET_LABEL_SEPARATOR in stem else ""


def sweep_name(csv_path: Path) -> str:
    """The sweep a CSV holds: its `sweep` column, else the file name before any '@'."""
    try:
        head = pd.read_csv(csv_path, usecols=["sweep"], nrows=1, dtype=str)
        if len(head) and isinstance(head["sweep"].iloc[0], str):
            return head["sweep"].iloc[0]
    except (ValueError, pd.errors.EmptyDataError, pd.errors.ParserError, OSError, UnicodeDecodeError):
        pass
    return csv_path.stem.split(TARGET_LABEL_SEPARATOR, 1)[0]


def find_experiments(results_dir: Path) -> dict[str, list[Path]]:
    """Sweep CSVs under `results_dir` grouped by sweep name (NAME.csv and NAME@LABEL.csv merge); CSVs
    that are not pmemlab's (no sweep, point_key, repeat, thread and status columns) are not results,
    nor is a probe's probe.csv (its rows are a device card's measurements, docs/card.md)."""
    found: dict[str, list[Path]] = {}
    if results_dir.is_dir():
        for path in sorted(results_dir.rglob("*.csv")):
            if (is_sweep_csv(path) and path.is_file() and path.stat().st_size > 0 and not is_probe_csv(path)
                    and is_pmemlab_csv(path)):
                found.setdefault(sweep_name(path), []).append(path)
    return found


def load_results(paths: Sequence[Path]) -> Results:
    """The rows of `paths` (one experiment, maybe one CSV per module load), with a `target_label`."""
    frames, hists, sidecars = [], [], []
    for path in paths:
        frame = read_rows(path)
        frame["source_csv"] = path.name
        hpath = histogram_path(path)
        if hpath.exists() and hpath.stat().st_size > 0:
            hist = read_rows(hpath, HIST_CSV_COLUMNS, "histogram CSV")
            hist["source_csv"] = path.name
            hists.append(hist)
        side = _sidecar(path)
        if side is not None:
            sidecars.append(side)
        frames.append(_with_emulation_columns(frame, side))
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if rows.empty and "sweep" not in rows.columns:
        raise PmemlabError(f"no rows in {', '.join(str(p) for p in paths)}", "run the sweep first")
    rows["target_label"] = _target_labels(rows, {p.name: label_from_path(p) for p in paths})
    hist = pd.concat(hists, ignore_index=True) if hists else None
    name = str(rows["sweep"].dropna().iloc[0]) if "sweep" in rows and rows["sweep"].notna().any() else paths[0].stem
    return Results(name=name, rows=rows, hist=hist, sidecars=sidecars, paths=list(paths),
                   not_run=list(dict.fromkeys([*loads_not_run(paths, name), *targets_not_run(frames)])))


def _sidecar(path: Path) -> dict[str, Any] | None:
    side = path.with_suffix(".json")
    if not side.exists():
        return None
    try:
        doc = json.loads(side.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


EMULATION_COLUMNS = ("hypervisor", "target_emulated")


def _with_emulation_columns(frame: pd.DataFrame, side: dict[str, Any] | None) -> pd.DataFrame:
    """Results recorded before `hypervisor` and `target_emulated` were columns get them from the
    machine facts in their sidecar, by the rule that writes them now (machine.emulation_conditions)."""
    if frame.empty or all(c in frame and frame[c].notna().any() for c in EMULATION_COLUMNS):
        return frame
    derived = emulation_conditions(side.get("machine", {})) if side and isinstance(side.get("machine"), dict) else {}
    for column in EMULATION_COLUMNS:
        if column not in frame or frame[column].isna().all():
            frame[column] = derived.get(column)
    return frame


SKIPPED_FILE = "SKIPPED"  # beside the CSVs: a "NAME@LABEL: reason" line per module load that failed


def loads_not_run(paths: Sequence[Path], name: str) -> list[str]:
    """The `LABEL: reason` of this sweep's loads listed in SKIPPED files beside its CSVs."""
    found: list[str] = []
    for folder in dict.fromkeys(p.parent for p in paths):
        listing = folder / SKIPPED_FILE
        if not listing.exists():
            continue
        for line in listing.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(f"{name}{TARGET_LABEL_SEPARATOR}"):
                found.append(line[len(name) + 1:].strip())
    return list(dict.fromkeys(found))


def targets_not_run(frames: Sequence[pd.DataFrame]) -> list[str]:
    """The `LABEL: reason` of the targets of one-CSV results (a target_label column) none of
    whose runs gave a result: unavailable on the machine (skipped) or not opened (error)."""
    found: list[str] = []
    for frame in frames:
        if frame.empty or "target_label" not in frame or "status" not in frame:
            continue
        labelled = frame[frame["target_label"].fillna("").astype(str) != ""]
        for label, grp in labelled.groupby("target_label", sort=False):
            if (grp["status"] == "ok").any():
                continue
            reasons = grp.get("error", pd.Series(dtype=str)).dropna().astype(str)
            reason = reasons.mode().iloc[0] if not reasons.empty else "no run succeeded"
            found.append(f"{label}: {reason}")
    return found


def ok_aggregate(rows: pd.DataFrame) -> pd.DataFrame:
    if rows.empty:
        return rows
    return rows[(rows["thread"].astype(str) == "all") & (rows["status"] == "ok")].copy()


def _target_labels(rows: pd.DataFrame, file_labels: dict[str, str]) -> pd.Series:
    """A short name per row for the target it ran on: its own target_label (a sweep over several
    targets into one CSV), else the file's @LABEL (one CSV per module load, as results were
    written before), else the target kind (pmem / DRAM) plus whatever tells same-kind targets
    apart (device, node, page size)."""
    kind = rows.get("target_kind", pd.Series("", index=rows.index)).fillna("").astype(str)
    base = kind.map({"fsdax": "pmem", "dram": "DRAM"}).fillna(kind).replace("", "target")
    labels = base.copy()
    for k in base.unique():
        same = base == k
        shown: tuple[tuple[str, Callable[[Any], str]], ...] = (
            ("target", str), ("target_node", lambda v: f"node {int(v)}"),
            ("target_page_size", lambda v: f"{size_label(int(v))} pages"))
        for column, show in shown:
            if column in rows and rows.loc[same, column].dropna().nunique() > 1:
                labels[same] = labels[same] + " " + rows.loc[same, column].map(
                    lambda v: show(v) if pd.notna(v) else "?")
    from_file = rows["source_csv"].map(file_labels).fillna("")
    own = rows["target_label"].fillna("").astype(str) if "target_label" in rows else pd.Series("", index=rows.index)
    return own.where(own != "", from_file.where(from_file != "", labels))


# --------------------------------------------------------------------------
# statistics over repeats
# --------------------------------------------------------------------------
def groups(df: pd.DataFrame, keys: Sequence[str]) -> Iterable[tuple[tuple[Any, ...], pd.DataFrame]]:
    """(key tuple, rows) per combination of `keys` (one group of everything when there are none)."""
    if not keys:
        yield (), df
        return
    by = keys[0] if len(keys) == 1 else list(keys)
    for key, grp in df.groupby(by, sort=True, dropna=False):
        yield (key if isinstance(key, tuple) else (key,)), grp


def mean_over_repeats(df: pd.DataFrame, keys: Sequence[str], y: str) -> pd.DataFrame:
    """One row per combination of `keys`: mean, sample standard deviation, n and the half-width of
    the Student-t 95 % confidence interval of the mean of `y` over the repeats (pmemlab.analysis.stats, the
    rule of the sweep's summary CSV; ci95 is NaN for a single repeat), the smallest and largest
    repeat, and the spread a figure draws (`lo`, `hi`, `spread`: spread_of's rule). `loop_bound`
    is True where any repeat was loop-bound (the engine's ceiling column; False where there is none)."""
    keys = [k for k in dict.fromkeys(keys) if k in df.columns]
    columns = [*keys, "mean", "std", "n", "ci95", "min", "max", "lo", "hi", "spread", "loop_bound"]
    data = df[[*keys, y]].copy()
    data["loop_bound"] = loop_bound_rows(df)
    data[y] = pd.to_numeric(data[y], errors="coerce")
    data = data.dropna(subset=[y])
    if data.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    for key, grp in groups(data, keys):
        values = grp[y].tolist()
        s = summarize(values)
        lo, hi, kind = spread_of(values)
        rows.append([*key, s.mean, s.stddev if s.n > 1 else 0.0, s.n, s.ci95, min(values), max(values), lo, hi, kind,
                     bool(grp["loop_bound"].any())])
    return pd.DataFrame(rows, columns=columns)


def spread_text(kinds: Iterable[str], repeats: Iterable[int]) -> str:
    """What the error bars of a figure are: 'error bars: min-max of 2 repeats', 'error bars: 95 %
    CI over 3 repeats', both where both occur, '1 repeat: no error bars' where there are none."""
    kinds = {k for k in kinds if k}
    counts = [int(n) for n in repeats if pd.notna(n)]
    if not kinds or not counts:
        return "1 repeat: no error bars"
    parts = []
    if SPREAD_CI in kinds:
        parts.append(f"95 % CI of the mean ({CI_REPEATS}+ repeats)" if SPREAD_RANGE in kinds
                     else f"95 % CI over {repeats_text(counts)}")
    if SPREAD_RANGE in kinds:
        parts.append(f"min-max of the repeats ({repeats_text(c for c in counts if c > 1)}"
                     + ("; or where a CI would cross 0)" if SPREAD_CI in kinds or max(counts) >= CI_REPEATS else ")"))
    return "error bars: " + "; ".join(parts)


def loop_bound_rows(df: pd.DataFrame) -> pd.Series:
    """Per row: the engine's `loop_bound` flag (1/True: the bandwidth is within 2x of what the
    measuring loop reaches on cache-resident data); False where the column is absent or empty."""
    if "loop_bound" not in df:
        return pd.Series(False, index=df.index)
    text = df["loop_bound"].astype(str).str.strip().str.lower()
    return text.isin(("1", "1.0", "true", "yes"))


# --------------------------------------------------------------------------
# latency distributions from the histograms (NAME.hist.csv)
# --------------------------------------------------------------------------
SPREAD = (0.05, 0.95)  # the whiskers of every latency figure: p5 .. p95 of the samples
SPREAD_TEXT = "p5-p95"
RUN_KEYS = ["source_csv", "point_key", "repeat"]


def pooled_buckets(results: Results, runs: pd.DataFrame, keys: Sequence[str]) -> dict[tuple[Any, ...], pd.DataFrame]:
    """Per combination of `keys` among the aggregate rows `runs`: the histogram of every sample of
    those runs (all repeats pooled), one row per bucket in ascending order with lo_ns, hi_ns,
    mid_ns (the module's midpoint: lo + (hi - lo) / 2 in whole TSC ticks) and count. The runs'
    `thread = all` histogram (every latency-sampling thread: the probe under loaded latency),
    else the sum of their threads'. Groups without a histogram are absent."""
    hist = results.hist
    if hist is None or hist.empty or runs.empty:
        return {}
    keys = list(keys)
    # the runs' rows say which group a run is in (a histogram's own target_label is the same)
    hist = hist.drop(columns=[k for k in keys if k in hist.columns and k not in RUN_KEYS])
    hist["repeat"] = pd.to_numeric(hist["repeat"], errors="coerce")
    hist["thread"] = hist["thread"].astype(str)
    wanted = runs[list(dict.fromkeys([*RUN_KEYS, *keys]))].drop_duplicates(RUN_KEYS).copy()
    wanted["repeat"] = pd.to_numeric(wanted["repeat"], errors="coerce")
    merged = hist.merge(wanted, on=RUN_KEYS, how="inner")
    if merged.empty:
        return {}
    is_all = merged["thread"] == "all"
    has_all = is_all.groupby([merged[k] for k in RUN_KEYS]).transform("any")
    merged = merged[is_all | ~has_all]
    ticks = {"lo_ticks", "hi_ticks"} <= set(merged.columns)
    bounds = ["lo_ns", "hi_ns", *(["lo_ticks", "hi_ticks"] if ticks else [])]
    out: dict[tuple[Any, ...], pd.DataFrame] = {}
    for key, grp in groups(merged, keys):
        b = grp.groupby(bounds, sort=True)["count"].sum().reset_index()
        b = b[b["count"] > 0].sort_values("lo_ns", kind="stable").reset_index(drop=True)
        if ticks:
            width = (b["hi_ticks"] - b["lo_ticks"]).astype("int64")
            per_tick = (b["hi_ns"] - b["lo_ns"]) / width.where(width > 0, 1)
            b["mid_ns"] = b["lo_ns"] + (width // 2) * per_tick
        else:
            b["mid_ns"] = (b["lo_ns"] + b["hi_ns"]) / 2
        out[key] = b[["lo_ns", "hi_ns", "mid_ns", "count"]]
    return out


def bucket_quantiles(buckets: pd.DataFrame, qs: Sequence[float], lo: float = -math.inf,
                     hi: float = math.inf) -> list[float]:
    """The module's percentile rule (core/hist.c, docs/method.md) on a histogram: the
    midpoint of the bucket that holds rank ceil(n*q) (q in parts per million, as the module
    counts), clamped to the exact minimum and maximum."""
    n = int(buckets["count"].sum())
    if n == 0:
        return [math.nan for _ in qs]
    cum = np.cumsum(buckets["count"].to_numpy(dtype=np.int64))
    mids = buckets["mid_ns"].to_numpy(dtype=float)
    out = []
    for q in qs:
        rank = max(1, (n * round(q * 1_000_000) + 999_999) // 1_000_000)
        value = float(mids[min(int(np.searchsorted(cum, rank)), len(mids) - 1)])
        out.append(min(max(value, lo), hi))
    return out


def pooled_mean(runs: pd.DataFrame) -> float:
    """The mean of every sample of `runs` (the module's exact per-run means, weighted by their
    sample counts); NaN without them."""
    if not {"lat_ns_mean", "lat_n"} <= set(runs.columns):
        return math.nan
    mean = pd.to_numeric(runs["lat_ns_mean"], errors="coerce")
    n = pd.to_numeric(runs["lat_n"], errors="coerce")
    ok = mean.notna() & (n > 0)
    return float((mean[ok] * n[ok]).sum() / n[ok].sum()) if ok.any() else math.nan


def latency_stats(results: Results, runs: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Per combination of `keys`: the median and the p5 / p25 / p75 / p95 of every latency sample of
    the runs (repeats pooled, from the histogram), the sample count, the repeats, the exact max and
    the exact mean of the samples (pooled_mean).
    Without a histogram: the mean over repeats of each run's median (lat_ns_p50) and no spread."""
    keys = [k for k in dict.fromkeys(keys) if k in runs.columns]
    columns = [*keys, "p50", "p5", "p25", "p75", "p95", "samples", "repeats", "max", "from_histogram", "mean"]
    if runs.empty:
        return pd.DataFrame(columns=columns)
    buckets = pooled_buckets(results, runs, keys)
    rows = []
    for key, grp in groups(runs, keys):
        lo = pd.to_numeric(grp.get("lat_ns_min"), errors="coerce").min() if "lat_ns_min" in grp else math.nan
        hi = pd.to_numeric(grp.get("lat_ns_max"), errors="coerce").max() if "lat_ns_max" in grp else math.nan
        repeats = len(grp.drop_duplicates(RUN_KEYS))
        mean = pooled_mean(grp)
        b = buckets.get(key)
        if b is not None and b["count"].sum() > 0:
            p50, p5, p25, p75, p95 = bucket_quantiles(b, (0.5, SPREAD[0], 0.25, 0.75, SPREAD[1]),
                                                      lo if np.isfinite(lo) else -math.inf,
                                                      hi if np.isfinite(hi) else math.inf)
            rows.append([*key, p50, p5, p25, p75, p95, int(b["count"].sum()), repeats, hi, True, mean])
        else:
            median = pd.to_numeric(grp.get("lat_ns_p50"), errors="coerce").mean() if "lat_ns_p50" in grp else math.nan
            samples = pd.to_numeric(grp.get("lat_n"), errors="coerce").sum() if "lat_n" in grp else 0
            rows.append([*key, median, math.nan, math.nan, math.nan, math.nan, int(samples or 0), repeats, hi, False,
                         mean])
    return pd.DataFrame(rows, columns=columns)


# --------------------------------------------------------------------------
# the timer's step, measured from the samples
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class TimerStep:
    """The smallest time step the latency samples resolve.

    `resolved`: the samples sit on a lattice `ticks` apart (a clock that advances in steps, as
    QEMU's TCG TSC, 10 ns at a time); a value below one step is then not measured, only bounded.
    Otherwise `ticks` is an upper bound: the samples fill neighbouring histogram buckets, so the
    clock steps by at most that much (a bare-metal TSC: one tick)."""

    ticks: float
    ns: float
    resolved: bool
    samples: int
    values_ns: tuple[float, ...] = ()  # the smallest values the samples take (resolved steps)

    def text(self) -> str:
        """'10 ns (26 TSC ticks): every sample a multiple' or 'at most 1.5 ns'."""
        if self.resolved:
            return f"{self.ns:.3g} ns ({self.ticks:.0f} TSC ticks): every sample is a multiple"
        return f"at most {self.ns:.2g} ns (the samples fill neighbouring histogram buckets)"


STEP_MIN_TICKS = 4  # a lattice of 1-3 ticks is indistinguishable from a dense TSC within +-1 tick
STEP_ON_LATTICE = 0.99  # share of the samples within 1 tick of the lattice
STEP_CLUSTER_SHARE = 0.01  # values holding less than this share of a run are not lattice points
STEP_MIN_SAMPLES = 50  # exact samples a run needs to show its lattice
STEP_MIN_POINTS = 3  # lattice points with samples (0 included) before a step is called one


def timer_step(hist: pd.DataFrame | None) -> TimerStep | None:
    """The clock step of the samples in a histogram table (NAME.hist.csv rows: lo_ticks, hi_ticks,
    lo_ns, hi_ns, count, and the run columns; the `thread = all` rows of a run are used where it
    has them). None without samples.

    Measured run by run, because each run subtracts its own overhead and so puts its samples on
    its own offset of the lattice. The module's histogram is exact below 256 ticks: there the
    sample values are counted one tick apart. In a run, values within 1 tick of each other (the
    overhead subtraction rounds) form one cluster; the clusters holding at least 1 % of the run's
    exact samples are the candidates: none may be wider than 3 ticks (samples on neighbouring
    ticks: the clock resolves them), and the smallest gap between neighbouring ones (the median of
    the gaps near the smallest) is the run's step when there are at least 3 of them, at least 99 %
    of its exact non-zero samples lie within 1 tick of that lattice (at its best offset) and the
    step is 4 ticks or more (zeros are clamped negatives: sample = max(0, t1 - t0 - overhead)).
    A run of fewer than 3 clusters tells nothing (a bare-metal TSC's latencies may fall into two
    modes). The step is the one most runs with 50 exact samples or more give, when no fewer runs
    give one than tell against one (where no run tells either way, the runs' samples together,
    clusters from 0.1 % of them).
    Otherwise, and where the samples never fall in the exact range
    (every latency above 256 ticks), the step is bounded by twice the width of the narrowest pair
    of neighbouring occupied buckets of all the samples."""
    if hist is None or hist.empty or not {"lo_ticks", "hi_ticks", "count"} <= set(hist.columns):
        return None
    rows = hist
    run_keys = [k for k in ("source_csv", "point_key", "repeat") if k in rows.columns]
    if "thread" in rows.columns and run_keys:
        is_all = rows["thread"].astype(str) == "all"
        has_all = is_all.groupby([rows[k] for k in run_keys]).transform("any")
        rows = rows[is_all | ~has_all]
    rows = rows[pd.to_numeric(rows["count"], errors="coerce") > 0]
    if rows.empty:
        return None
    total = int(rows["count"].sum())
    per_tick = _ns_per_tick(rows)
    steps: list[tuple[int, list[float]]] = []
    against = 0
    for _, run in groups(rows, run_keys):
        exact = run[run["lo_ticks"] == run["hi_ticks"]].groupby("lo_ticks")["count"].sum()
        if exact.sum() >= STEP_MIN_SAMPLES:
            verdict = _lattice_step(exact.index.to_numpy(dtype=np.int64), exact.to_numpy(dtype=np.int64),
                                    share=STEP_CLUSTER_SHARE)
            if isinstance(verdict, tuple):
                steps.append(verdict)
            elif verdict == AGAINST:
                against += 1
    if not steps and not against:  # no run tells alone (each on one or two values): all of them together
        exact = rows[rows["lo_ticks"] == rows["hi_ticks"]].groupby("lo_ticks")["count"].sum()
        if exact.sum() >= STEP_MIN_SAMPLES:
            verdict = _lattice_step(exact.index.to_numpy(dtype=np.int64), exact.to_numpy(dtype=np.int64),
                                    share=STEP_CLUSTER_SHARE / 10)  # many samples: rarer values count
            steps = [verdict] if isinstance(verdict, tuple) else []
    if steps and len(steps) >= against:
        ticks = Counter(step for step, _ in steps).most_common(1)[0][0]
        points = next(p for step, p in steps if step == ticks)
        return TimerStep(float(ticks), ticks * per_tick, True, total, tuple(float(f"{p * per_tick:.3g}") for p in points))
    # dense: the narrowest neighbouring pair of occupied buckets bounds the step
    buckets = rows.groupby(["lo_ticks", "hi_ticks"], sort=True)["count"].sum()
    lo_ticks = buckets.index.get_level_values(0).to_numpy(dtype=np.int64)
    hi_ticks = buckets.index.get_level_values(1).to_numpy(dtype=np.int64)
    widths = hi_ticks - lo_ticks + 1
    neighbours = [max(widths[i], widths[i + 1]) for i in range(len(lo_ticks) - 1) if lo_ticks[i + 1] == hi_ticks[i] + 1]
    if not neighbours:
        return None
    bound = 2 * min(neighbours) if min(neighbours) > 1 else 1
    return TimerStep(float(bound), bound * per_tick, False, total)


UNDECIDED = "undecided"  # a run too narrow to tell (all its samples on one or two values)
AGAINST = "against"  # a run whose samples are no lattice


def _lattice_step(values: np.ndarray[Any, Any], counts: np.ndarray[Any, Any], share: float = 0.01) -> tuple[int, list[float]] | str:
    """One run's exact sample values: (step in ticks, the first lattice values in ticks), or
    AGAINST (its values are no lattice of 4 ticks or more), or UNDECIDED (fewer than 3 narrow
    clusters: nothing to tell a lattice by; a bare-metal TSC's two modes are no evidence of one)."""
    nonzero = values > 0
    mass = int(counts[nonzero].sum())
    clusters: list[list[tuple[int, int]]] = []
    for v, c in sorted(zip(values.tolist(), counts.tolist())):
        if clusters and v - clusters[-1][-1][0] <= 1:
            clusters[-1].append((v, c))
        else:
            clusters.append([(v, c)])
    exact_total = int(counts.sum())
    kept = [cl for cl in clusters if sum(c for _, c in cl) >= share * exact_total]
    if any(cl[-1][0] - cl[0][0] > 2 for cl in kept):
        return AGAINST  # samples on neighbouring ticks: a clock that resolves them
    if len(kept) < STEP_MIN_POINTS or mass == 0:
        return UNDECIDED
    centres = [sum(v * c for v, c in cl) / sum(c for _, c in cl) for cl in kept]
    gaps = np.diff(centres)
    step = int(round(float(np.median(gaps[gaps <= 1.5 * gaps.min()]))))  # clusters' centres wander by a tick
    if step < STEP_MIN_TICKS:
        return AGAINST
    residues, weights = values[nonzero] % step, counts[nonzero]
    on_lattice = max(int(weights[np.abs((residues - offset + step / 2) % step - step / 2) <= 1.0].sum())
                     for offset in range(step))  # the lattice's offset: the one that holds the most samples
    if on_lattice < STEP_ON_LATTICE * mass:
        return AGAINST
    return step, [round(c, 1) for c in centres[:4]]


def _ns_per_tick(rows: pd.DataFrame) -> float:
    """ns per TSC tick from the histogram's own bounds (ns and ticks of the same buckets)."""
    if {"lo_ns", "lo_ticks"} <= set(rows.columns):
        ticks = pd.to_numeric(rows["lo_ticks"], errors="coerce")
        ns = pd.to_numeric(rows["lo_ns"], errors="coerce")
        ok = ticks > 0
        if ok.any():
            return float((ns[ok] / ticks[ok]).median())
    return math.nan


def count_text(n: float) -> str:
    """20000 -> '20 k', 1500000 -> '1.5 M'."""
    if not np.isfinite(n):
        return "?"
    for div, unit in ((1e6, " M"), (1e3, " k")):
        if n >= div:
            return f"{n / div:.3g}{unit}"
    return f"{int(n)}"


def repeats_text(counts: Iterable[int]) -> str:
    """'2 repeats', '2-3 repeats', '1 repeat'."""
    values = sorted({int(c) for c in counts if pd.notna(c)})
    if not values:
        return "no repeats"
    span = str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"
    return f"{span} repeat{'s' if values[-1] != 1 else ''}"


# --------------------------------------------------------------------------
# labels
# --------------------------------------------------------------------------
def size_label(n: float) -> str:
    """Bytes with binary units: 64 -> '64 B', 4096 -> '4 KiB', 3 << 20 -> '3 MiB'."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:g} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def _unique(values: Iterable[Any]) -> list[str]:
    return [str(v) for v in dict.fromkeys(v for v in values if pd.notna(v) and str(v) != "")]


def caption(results: Results, extra: Sequence[str] = ()) -> str:
    """'target ... · machine ... · date ...': the run conditions the figure came from, then what
    the recipe adds (statistic, samples, what is missing, the papers' values drawn)."""
    rows = results.rows
    parts = [results.name]
    targets = []
    for label, grp in rows.groupby("target_label", sort=False):
        dev = _unique(grp.get("target", []))
        kind = _unique(grp.get("target_kind", []))
        targets.append(f"{label} ({', '.join(dev + kind) or 'unknown'})")
    parts.append("target: " + "; ".join(targets))
    host = ", ".join(_unique(rows.get("hostname", []))) or "unknown host"
    cpu = ", ".join(_unique(rows.get("cpu_model", [])))
    kernel = ", ".join(_unique(rows.get("kernel", [])))
    parts.append(f"machine: {host}" + (f" ({cpu}" + (f", kernel {kernel}" if kernel else "") + ")" if cpu else ""))
    parts.append(f"date: {_date_range(rows)}")
    versions = _unique(rows.get("toolkit_version", []))
    if versions:
        parts.append(f"pmemlab {', '.join(versions)}")
    for entry in results.not_run:
        label, _, why = entry.partition(":")
        parts.append(f"not run: {label} ({why.rsplit(': ', 1)[-1].strip()})")
    not_run = {entry.partition(":")[0] for entry in results.not_run}
    skipped = skipped_points(rows[~rows["target_label"].isin(not_run)] if not_run else rows)
    if skipped:
        parts.append(skipped)
    scale = scale_of(results.sidecars)
    if scale:
        parts.append(f"scale: {scale}")
    repeats = results.ok().groupby(["source_csv", "point_key"])["repeat"].nunique() if not results.ok().empty else []
    if len(repeats):
        parts.append(f"repeats: {repeats_text(repeats)} per point")
    parts.extend(e for e in extra if e)
    return " · ".join(parts)


def skipped_points(rows: pd.DataFrame, limit: int = 2) -> str:
    """'skipped: N points (reason; reason)': the points this machine could not run, or ''."""
    if rows.empty or "status" not in rows:
        return ""
    skipped = rows[rows["status"] == "skipped"]
    if skipped.empty:
        return ""
    keys = skipped.get("source_csv", pd.Series("", index=skipped.index)).astype(str) + skipped["point_key"].astype(str)
    reasons = _unique(skipped.get("error", []))
    shown = "; ".join(reasons[:limit]) + (f"; +{len(reasons) - limit} more" if len(reasons) > limit else "")
    count = keys.nunique()
    return f"skipped: {count} point{'s' if count != 1 else ''}" + (f" ({shown})" if shown else "")


def _date_range(rows: pd.DataFrame) -> str:
    if "started_at" not in rows:
        return "unknown"
    days = sorted({str(v)[:10] for v in rows["started_at"].dropna()})
    if not days:
        return "unknown"
    return days[0] if len(days) == 1 else f"{days[0]} .. {days[-1]}"


def scale_of(sidecars: Sequence[dict[str, Any]]) -> str:
    """The scale the sweep ran at (its sidecar's description ends in '[scale: NAME]'), '' when none says."""
    for side in sidecars:
        text = str(side.get("description", ""))
        if "[scale: " in text:
            return text.rsplit("[scale: ", 1)[1].rstrip("]")
    return ""
