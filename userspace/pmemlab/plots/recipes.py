"""One recipe per experiment of configs/ (the sweep name picks it): the paper's figure from the
sweep's rows; and the figures of one-liners without a config (COMMAND_RECIPES: tier-bw). Every recipe takes the experiment's Results and returns a matplotlib Figure whose
caption line names the run conditions, the statistic drawn, the samples and repeats, what is
missing and the papers' values drawn; a figure of emulated runs carries the mark (marks.py).

The rules every recipe follows (docs/method.md, "Figures"): bandwidth is the mean over repeats
with 95 % confidence-interval error bars on an axis from 0; latency is the median of the pooled
samples with p5-p95 whiskers, on a linear axis unless the label says "log scale"; tails are a
CCDF on a log axis; ticks sit at the swept values; heatmaps of one figure share one colour scale."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pmemlab.analysis import tiers
from pmemlab.params import DURABLE_WRITES, OPS, READ_OPS, WRITE_OPS, flush_of, non_temporal
from pmemlab.analysis.resultset import (
    Results, bucket_quantiles, count_text, latency_stats, loop_bound_rows, mean_over_repeats, pooled_buckets,
    repeats_text, size_label,
)
from pmemlab.plots.references import Reference, references, sources, withheld
from pmemlab.plots.style import (
    BW_LABEL, LAT_LABEL, MEDIAN_LABEL, add_note, bar_candidates, bytes_axis, cap_whiskers, ci_note, data_ticks,
    draw_references, finish, heatmap, hollow, integer_x, latency_bars, latency_series, legend, log_y,
    mark_loop_bound, mark_timer_step, new_figure, note, series, series_conditions, series_on, shared_colorbar,
    shared_norm, spread_note, zero_based,
)

Recipe = Callable[[Results], Figure]


def instruction(op: str) -> str:
    """What an op is named by in a figure: its instruction, the flush of a store+flush."""
    return flush_of(op) or op


# REPORT fig 8's letter for each flush instruction (Size_Type names: 64_SW is a store+clwb)
FLUSH_LETTER = {"clwb": "W", "clflushopt": "O", "clflush": "F"}
# each op of the module (the parameter table's, in its order): Read (load), Write (clwb), ...
OP_LABEL = {op: f"{'Write' if op in WRITE_OPS else 'Read'} ({instruction(op)})" for op in OPS}
# and REPORT fig 8's short name: L load, S store, N non-temporal, then the flush's letter
OP_SHORT = {op: ("S" if op in WRITE_OPS else "L") + ("N" if non_temporal(op) else "")
            + FLUSH_LETTER.get(flush_of(op), "") for op in OPS}
NO_DATA = "no successful runs in this CSV\n(see its status and error columns)"
# what a recipe draws where that is another statistic than its paper figure's (references.FIGURES)
STATISTIC = {"idle-latency": "median of the samples, whiskers p5-p95, the mean marked"}
WIDE = 50.0  # medians spanning more than this factor get a log axis (said in the label)


def op_label(op: object) -> str:
    return OP_LABEL.get(str(op), str(op))


class Notes:
    """What a recipe adds to the caption: the statistic, the papers' values drawn and withheld,
    the panels that are missing and why."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.drawn: list[Reference] = []
        self.withheld: dict[str, str] = {}

    def add(self, text: str) -> None:
        if text and text not in self.lines:
            self.lines.append(text)

    def refs(self, experiment: str, kind: str, dimms: int | None, target: str) -> list[Reference]:
        """The paper values for one target; the ones withheld (another DIMM count) are named."""
        refs = references(experiment, kind, dimms)
        self.drawn.extend(r for r in refs if r not in self.drawn)
        for ref in withheld(experiment, kind, dimms):
            have = "unknown" if dimms is None else f"{dimms}"
            self.withheld.setdefault(ref.source, f"{ref.dimms}-DIMM values of {ref.source} not drawn "
                                                 f"({target} has {have} DIMM{'s' if dimms != 1 else ''})")
        return refs

    def caption(self) -> list[str]:
        out = list(self.lines)
        if self.drawn:
            out.append("paper values (dashed lines, black bars): " + "; ".join(sources(self.drawn))
                       + " (another machine: six 256 GB Optane DIMMs per socket)")
        out.extend(self.withheld.values())
        return out


def _finish(fig: Figure, results: Results, title: str, notes: Notes | None = None) -> Figure:
    return finish(fig, results, title, notes.caption() if notes else ())


def _targets(df: pd.DataFrame) -> list[str]:
    """Target labels, DRAM first (the papers draw DRAM on the left)."""
    labels = list(dict.fromkeys(df["target_label"])) if "target_label" in df else ["target"]
    return sorted(labels, key=lambda t: (not str(t).startswith(("DRAM", "dram")), str(t)))


def target_kind(df: pd.DataFrame, label: object) -> str:
    """'dram' for a DRAM target (module or user backend), 'pmem' for any other."""
    rows = df[df["target_label"] == label] if "target_label" in df else df
    kinds = set(rows.get("target_kind", pd.Series(dtype=str)).dropna().astype(str))
    return "dram" if kinds and kinds <= {"dram", "user-dram"} else "pmem"


def target_dimms(df: pd.DataFrame, label: object) -> int | None:
    """The interleave ways of the target's region (ndctl), None when unknown or mixed."""
    rows = df[df["target_label"] == label] if "target_label" in df else df
    ways = pd.to_numeric(rows.get("target_interleave_ways", pd.Series(dtype=float)), errors="coerce").dropna()
    return int(ways.iloc[0]) if len(ways) and ways.nunique() == 1 else None


def dimm_text(df: pd.DataFrame, label: object) -> str:
    if target_kind(df, label) == "dram":
        return "DRAM"
    ways = target_dimms(df, label)
    if ways is None:
        return "DIMMs unknown"
    return "1 DIMM, non-interleaved" if ways == 1 else f"{ways} DIMMs interleaved"


def series_colors(ax: Axes) -> dict[str, str]:
    """Legend label -> colour of each error-bar series drawn on `ax`."""
    return {c.get_label(): c.lines[0].get_color() for c in ax.containers if hasattr(c, "has_yerr")}


def _wide(values: pd.Series) -> bool:
    values = pd.to_numeric(values, errors="coerce").dropna()
    values = values[values > 0]
    return bool(len(values)) and values.max() / values.min() > WIDE


# --------------------------------------------------------------------------
# latency
# --------------------------------------------------------------------------
def _prefetch_state(df: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The rows measured with prefetchers off where there are any (LATTester's setting), else
    those with them on; and which, for the title."""
    if "prefetch" in df and (df["prefetch"].astype(str) == "off").any():
        return df[df["prefetch"].astype(str) == "off"].copy(), "prefetchers off"
    return df, "prefetchers on"


def idle_latency(results: Results) -> Figure:
    """FAST'20 fig 2: median latency (whiskers p5-p95 of the samples) of seq and rand reads and of
    clwb and ntstore writes, one bar per target, with the mean of the samples (the papers'
    statistic) as a diamond on each bar; the REPORT's values (means, prefetchers off) as black
    bars, on the mean when ours was measured as theirs, else labelled with their conditions.
    Medians below the measured timer step are hatched, the band under the step shaded. One access
    per line, with the prefetchers off where the sweep could switch them (the title says which)."""
    df, prefetchers = _prefetch_state(results.ok())
    notes = Notes()
    fig, (ax,) = new_figure(1, width_per_panel=10.0, height=4.0)  # the legend goes beside the bars
    ax.set_ylabel(MEDIAN_LABEL)
    if df.empty:
        note(ax, NO_DATA)
    else:
        df["access"] = [access_name(op, pat) for op, pat in zip(df["op"], df["pattern"])]
        stats = latency_stats(results, df, ["access", "target_label"])
        targets = _targets(df)
        step = results.timer_step()

        def measured(access: object, target: object) -> dict[str, object]:
            rows = df[(df["access"] == access) & (df["target_label"] == target)]
            return series_conditions(rows, access, "median", "access")

        where = latency_bars(ax, stats, "access", "target_label", list(dict.fromkeys(df["access"])), targets,
                             step=step, conditions=measured, means=True)
        for target in targets:
            refs = [r for r in notes.refs("idle-latency", target_kind(df, target), target_dimms(df, target), target)
                    if (r.series, target) in where]
            # called while drawing, in this iteration: `target` is this target's
            draw_references(ax, refs, at=lambda r: where[(r.series, target)],
                            candidates=lambda r: bar_candidates(ax, r.series, target))
        cap_whiskers(ax, stats, where, "access", "target_label")
        zero_based(ax)
        mark_timer_step(ax, step)
        add_note(ax, spread_note(stats))
        notes.add(spread_note(stats) + "; diamond: the mean of the samples")
        if step is not None and step.resolved:
            notes.add(f"timer step {step.text()} (measured from the samples)")
        legend(ax, "target")
    ax.set_xlabel("Access")
    size = _one_value(df, "access_size", lambda v: size_label(v))
    return _finish(fig, results, f"Idle latency of {size or 'single'} accesses, one per line, {prefetchers} "
                   "(median, whiskers p5-p95)", notes)


def _one_value(df: pd.DataFrame, column: str, fmt: Callable[[Any], str] = str) -> str:
    """The value every row has in `column`, formatted ('' when they differ or there is none)."""
    if df.empty or column not in df:
        return ""
    values = df[column].dropna().unique()
    return fmt(values[0]) if len(values) == 1 else ""


def access_name(op: str, pattern: str) -> str:
    """The bar's name in idle-latency: 'Read (seq)', 'Write (clwb)'."""
    return f"{'Read' if op in READ_OPS else 'Write'} ({_access_kind(op, pattern)})"


def _access_kind(op: str, pattern: str) -> str:
    """Bar names: a 64 B stride of 8 B loads is the paper's sequential read."""
    if op in READ_OPS:
        return "seq" if pattern == "stride" else pattern
    return instruction(op)


# REPORT fig 8's bars: the reads and the durable writes, in the order of their short names (L LN SF SN SO SW)
INSTR_ORDER: tuple[str, ...] = tuple(sorted((op for op in OPS if op in READ_OPS or op in DURABLE_WRITES),
                                            key=lambda op: OP_SHORT[op]))


def instr_category(access_size: Any, op: Any) -> str:
    """REPORT fig 8's Size_Type names: 64_L, 128_SW, ..."""
    return f"{int(access_size)}_{OP_SHORT.get(str(op), str(op))}"


def instr_latency(results: Results) -> Figure:
    """REPORT fig 8: median latency per Size_Type (access size x L LN SF SN SO SW), whiskers
    p5-p95, a bar per target (DRAM, the DRAM-emulated namespace, pmem), one panel per pattern;
    a log axis (said in the label) when the medians span more than 50x."""
    df = results.ok()
    notes = Notes()
    patterns = [p for p in ("seq", "rand") if not df.empty and (df["pattern"] == p).any()]
    fig, axes = new_figure(1, rows=max(len(patterns), 1), width_per_panel=10.0, height=3.2, sharey=True)
    if not patterns:
        note(axes[0], NO_DATA)
    targets = _targets(df) if not df.empty else []
    every = []
    for ax, pattern in zip(axes, patterns):
        sub = df[df["pattern"] == pattern]
        sub = sub.assign(size_type=[instr_category(a, o) for a, o in zip(sub["access_size"], sub["op"])])
        stats = latency_stats(results, sub, ["size_type", "target_label"])
        ops = [op for op in INSTR_ORDER if op in set(sub["op"])]
        categories = [instr_category(a, op) for a in sorted(set(sub["access_size"])) for op in ops]
        categories = [c for c in categories if c in set(sub["size_type"])]
        where = latency_bars(ax, stats, "size_type", "target_label", categories,
                             [t for t in targets if t in set(sub["target_label"])], step=results.timer_step())
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
        ax.set_title(pattern, fontsize=9)
        ax.set_xlabel(f"Size_Type ({', '.join(f'{OP_SHORT[op]} {op}' for op in INSTR_ORDER)})")
        ax.set_ylabel(MEDIAN_LABEL)
        every.append((ax, stats, where))
    if every:
        stats = pd.concat([e[1] for e in every], ignore_index=True)
        for ax, own, where in every:
            if _wide(stats["p50"]):
                log_y(ax)
            else:
                zero_based(ax)
                cap_whiskers(ax, own, where, "size_type", "target_label", scope=stats)
            add_note(ax, spread_note(stats))
            legend(ax, "target", outside=True)
        notes.add(spread_note(stats))
    return _finish(fig, results, "Memory instruction latency (median, whiskers p5-p95)", notes)


TAIL_QUANTILES = ((0.999, "99.9th"), (0.9999, "99.99th"))
FEW_ABOVE = 10  # a percentile with fewer samples above it than this is drawn hollow
THIN_GID = "pmemlab-few-samples"
FLOOR_GID = "pmemlab-ccdf-floor"  # the CCDF's 1/n: one sample in n
PAPER_TAIL_SAMPLES = 20_000_000  # FAST'20 §3.3: "use a single thread to issue 20 million 64-byte writes"


TAIL_COLORS = {"99.9th": "C0", "99.99th": "C1", "max": "C2"}
TARGET_STYLES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"))  # line and marker per target


def tail_latency(results: Results) -> Figure:
    """FAST'20 fig 3: 99.9th, 99.99th percentile (of every sample at a hotspot size, repeats
    pooled) and the exact max vs hotspot size, log-log, every target in one panel (colour: the
    statistic, line and marker: the target), so that DRAM's tail and pmem's share one axis; below
    it the CCDF per hotspot size, a panel per target on shared axes, down to the 1/n floor (drawn:
    one sample in n). Percentiles with fewer than 10 samples above them are hollow; FAST'20's
    outliers (0.006 % of accesses at about 50 µs) are a point on the CCDF."""
    df = results.ok()
    notes = Notes()
    targets = _targets(df) if not df.empty else ["target"]
    columns = max(len(targets), 2)
    fig = Figure(figsize=(4.6 * columns + 0.6, 8.6))
    grid = fig.add_gridspec(2, columns)
    left = fig.add_subplot(grid[0, :])  # the percentiles over the whole width, the CCDFs below
    if df.empty:
        note(left, NO_DATA)
    ccdf_axes: list[Axes] = []
    sizes = sorted(set(df["hotspot_size"])) if not df.empty else []
    # the scales before any series or paper value: draw_references widens the limits it reads, and
    # limits read on a linear axis (a margin below 0) would stay on the log one
    left.set_yscale("log")
    bytes_axis(left, sizes)
    for i, target in enumerate(targets):
        sub = df[df["target_label"] == target] if len(targets) > 1 else df
        name = f" · {target}" if len(targets) > 1 else ""
        ax = fig.add_subplot(grid[1, i], sharex=ccdf_axes[0] if ccdf_axes else None,
                             sharey=ccdf_axes[0] if ccdf_axes else None)
        ccdf_axes.append(ax)
        buckets = pooled_buckets(results, sub, ["hotspot_size"]) if not sub.empty else {}
        kind = target_kind(df, target) if not df.empty else "pmem"
        refs = notes.refs("tail-latency", kind, None, str(target))
        _tail_percentiles(left, sub, buckets, notes, name, TARGET_STYLES[i % len(TARGET_STYLES)])
        draw_references(left, [r for r in refs if r.series == "max"],
                        candidates=lambda r: [c for c in series_on(left) if c[0].endswith(name) or not name])
        _latency_ccdf(ax, results, sub, buckets, notes, [r for r in refs if r.series == "ccdf"])
        ax.set_title(f"{target}: latency CCDF per hotspot size" if len(targets) > 1 else "Latency CCDF per hotspot size",
                     fontsize=9)
        legend(ax, "hotspot")
    left.set_xlabel("Hotspot size")
    left.set_ylabel(f"{LAT_LABEL[:-1]}, log scale)")
    left.set_title("Tail latency vs hotspot size" + (": " + ", ".join(map(str, targets)) if len(targets) > 1 else ""),
                   fontsize=9)
    legend(left, "percentile")
    op = _one_value(df, "op")
    size = _one_value(df, "access_size", lambda v: size_label(v))
    threads = _one_value(df, "threads")
    what = " ".join(w for w in (size, op) if w) or "single"
    return _finish(fig, results, f"Tail latency of {what} writes into a hotspot"
                   + (f" ({threads} thread{'s' if threads != '1' else ''})" if threads else ""), notes)


def _tail_percentiles(ax: Axes, df: pd.DataFrame, buckets: dict[Any, Any], notes: Notes, name: str,
                      style: tuple[str, str]) -> None:
    """One target's p99.9, p99.99 and max per hotspot size on `ax` (`name` ends each label)."""
    linestyle, marker = style
    sizes = sorted(set(df["hotspot_size"])) if not df.empty else []
    threads = {"threads": int(df["threads"].iloc[0])} if not df.empty and df["threads"].nunique() == 1 else {}
    for q, label in TAIL_QUANTILES:
        xs, ys, thin = [], [], []
        for size in sizes:
            b = buckets.get((size,))
            if b is None:
                continue
            rows = df[df["hotspot_size"] == size]
            lo, hi = rows["lat_ns_min"].min(), rows["lat_ns_max"].max()
            xs.append(size)
            ys.append(bucket_quantiles(b, [q], lo, hi)[0])
            thin.append(b["count"].sum() * (1 - q) < FEW_ABOVE)
        if xs:
            line = ax.errorbar(xs, ys, marker=marker, markersize=4, capsize=0, linestyle=linestyle,
                               color=TAIL_COLORS[label], label=label + name)
            line._pmemlab_conditions = {"series": label, "statistic": label, **threads}
            hollow(ax, xs, ys, thin, TAIL_COLORS[label], f"hollow: fewer than {FEW_ABOVE} samples above the percentile",
                   THIN_GID, marker)
    if sizes:
        peak = df.groupby("hotspot_size")["lat_ns_max"].max()
        line = ax.errorbar(list(peak.index), list(peak.values), marker=marker, markersize=4, linestyle=linestyle,
                           color=TAIL_COLORS["max"], label="max" + name)
        line._pmemlab_conditions = {"series": "max", "statistic": "max", **threads}
        samples = [int(buckets[(s,)]["count"].sum()) for s in sizes if (s,) in buckets]
        if samples:
            few = round(min(samples) * (1 - TAIL_QUANTILES[1][0]))
            notes.add(f"percentiles from {count_text(min(samples))}"
                      + (f"-{count_text(max(samples))}" if max(samples) != min(samples) else "")
                      + f" samples per hotspot size ({repeats_text(df.groupby('hotspot_size')['repeat'].nunique())}"
                      f" pooled): p99.99 rests on {few} sample{'s' if few != 1 else ''} above it; FAST'20 issued "
                      f"{count_text(PAPER_TAIL_SAMPLES)} writes per size ({count_text(PAPER_TAIL_SAMPLES * 1e-4)} above)")
        notes.add("max: exact, the largest over repeats")


def _latency_ccdf(ax: Axes, results: Results, df: pd.DataFrame, buckets: dict[Any, Any], notes: Notes,
                  refs: Sequence[Reference] = ()) -> None:
    """P(latency > x) per hotspot size from the pooled histogram: a step per bucket, down to one
    sample in n, the floor the data can show (drawn, with n); the log axis cannot show the zero
    past the maximum. A paper's outlier share is a point at its latency, and the caption says
    when it lies below what n samples can resolve."""
    ax.set_xlabel(f"{LAT_LABEL[:-1]}, log scale)")
    ax.set_ylabel("P(latency > x), log scale")
    ax.set_xscale("log")
    ax.set_yscale("log")
    if not buckets:
        note(ax, "no latency histogram (NAME.hist.csv) next to the CSV")
        return
    counts = []
    for (size,), b in sorted(buckets.items()):
        n = int(b["count"].sum())
        ccdf = (n - np.cumsum(b["count"].to_numpy(dtype=np.int64))) / n  # exact zero past the maximum
        xs = [float(b["lo_ns"].iloc[0]), *b["hi_ns"]]
        ys = [1.0, *ccdf]
        keep = [i for i, y in enumerate(ys) if y > 0]
        # the last step (one sample above) runs on to the maximum, where the CCDF falls to 0
        ax.step([*(xs[i] for i in keep), xs[-1]], [*(ys[i] for i in keep), ys[keep[-1]]], where="post",
                label=size_label(size))
        counts.append(n)
    low, high = min(counts), max(counts)
    span = count_text(low) if low == high else f"{count_text(low)}-{count_text(high)}"
    ax.axhline(1.0 / low, color="0.45", linestyle=":", linewidth=1.0, gid=FLOOR_GID,
               label=f"1/n: one sample in n = {span} per size")
    ax.set_ylim(min(ax.get_ylim()[0], 0.5 / high), 1.5)
    for ref in refs:
        resolvable = ref.value * low
        if resolvable < FEW_ABOVE:
            notes.add(f"{ref.source}'s {ref.value * 100:g} % is {resolvable:.2g} of {count_text(low)} samples per "
                      f"hotspot size here: below what the data resolves ({FEW_ABOVE} samples would need "
                      f"{count_text(FEW_ABOVE / ref.value)})")
    draw_references(ax, refs, color_of=lambda r: "#b00020")


# --------------------------------------------------------------------------
# bandwidth
# --------------------------------------------------------------------------
def _bandwidth_refs(ax: Axes, notes: Notes, experiment: str, df: pd.DataFrame, target: object) -> None:
    """The paper values of `experiment` for `target`, each on the series of its op measured as it
    was (threads, statistic), in that series' colour; elsewhere labelled with its own conditions."""
    draw_references(ax, notes.refs(experiment, target_kind(df, target), target_dimms(df, target), str(target)))


def bw_threads(results: Results) -> Figure:
    """FAST'20 fig 4: bandwidth vs threads per op, one panel per target (DRAM, a single DIMM,
    interleaved DIMMs; each its own vertical scale); the caption names the panels not run."""
    df = results.ok()
    notes = Notes()
    targets = _targets(df) if not df.empty else ["target"]
    fig, axes = new_figure(len(targets))
    for ax, target in zip(axes, targets):
        sub = df[df["target_label"] == target] if not df.empty else df
        if sub.empty:
            note(ax, NO_DATA)
        else:
            series(ax, sub, "threads", "bw_gbps", "op", label_of=op_label, log_x=False)
            _bandwidth_refs(ax, notes, "bw-threads", df, target)
            zero_based(ax)
        ax.set_title(f"{target} · {dimm_text(df, target)}" if not df.empty else str(target), fontsize=9)
        integer_x(ax, sub["threads"] if not sub.empty else None)
        ax.set_xlabel("Threads")
        ax.set_ylabel(BW_LABEL)
        legend(ax)
    if not df.empty:
        notes.add(_missing_panels(df, targets))
    return _finish(fig, results, "Bandwidth vs thread count (sequential 256 B)", notes)


def _missing_panels(df: pd.DataFrame, targets: list[str]) -> str:
    """FAST'20 fig 4 has three panels (DRAM, one DIMM, six interleaved DIMMs): which are not here."""
    kinds = {t: (target_kind(df, t), target_dimms(df, t)) for t in targets}
    have_dram = any(k == "dram" for k, _ in kinds.values())
    pmem_ways = [w for k, w in kinds.values() if k == "pmem"]
    missing = []
    if not have_dram:
        missing.append("DRAM (no DRAM target)")
    if 1 not in pmem_ways:
        missing.append("single-DIMM pmem (no non-interleaved namespace among the targets)")
    if not any(w is not None and w > 1 for w in pmem_ways):
        have = ", ".join(f"{t}: {'unknown' if w is None else w} DIMM{'s' if w != 1 else ''}"
                         for t, (k, w) in kinds.items() if k == "pmem")
        missing.append("interleaved pmem (no interleaved namespace among the targets"
                       + (f"; {have}" if have else "") + "; add one under [sweep.targets])")
    return ("missing panels of FAST'20 fig 4: " + "; ".join(missing)) if missing else ""


def _best_threads(df: pd.DataFrame) -> dict[str, int]:
    """Per op, the thread count with the highest mean bandwidth over all sizes."""
    stats = mean_over_repeats(df, ["op", "threads"], "bw_gbps")
    best = stats.loc[stats.groupby("op")["mean"].idxmax()]
    return {row.op: int(row.threads) for row in best.itertuples()}


HEATMAP_MIN_THREADS = 3  # fewer thread counts make a heatmap of two stripes: the curves say it all


def bw_size(results: Results) -> Figure:
    """FAST'20 fig 5: random-access bandwidth vs access size, each op at its best thread count
    (the legend gives it), one panel per target (top row); where a paper value was measured at
    another thread count, that count's curve is drawn too (dashed) and the value sits on it.
    Below, with at least 3 thread counts, per target a row of heatmaps threads x access size, one
    per op, all on one colour scale (one colour bar), loop-bound cells hatched."""
    df = results.ok()
    notes = Notes()
    targets = _targets(df) if not df.empty else ["target"]
    ops = [op for op in OP_LABEL if not df.empty and op in set(df["op"])]
    thread_counts = sorted(set(df["threads"])) if not df.empty else []
    heat = len(thread_counts) >= HEATMAP_MIN_THREADS
    heat_cols = max(len(ops), 1) if heat else 1
    cols = math.lcm(len(targets), heat_cols)
    rows = 1 + (len(targets) if heat else 0)
    fig = Figure(figsize=(max(5.2 * max(len(targets), heat_cols if heat else 1), 5.0) + 0.6, 3.6 * rows + 0.7))
    grid = fig.add_gridspec(rows, cols + 1, width_ratios=[1] * cols + [0.05 * cols])
    span, hspan = cols // len(targets), cols // heat_cols
    sizes = sorted(set(df["access_size"])) if not df.empty else []
    norm = shared_norm([df[(df["target_label"] == t) & (df["op"] == op)] for t in targets for op in ops],
                       ["threads", "access_size"], "bw_gbps") if heat else None
    heat_axes = []
    for i, target in enumerate(targets):
        ax = fig.add_subplot(grid[0, i * span:(i + 1) * span])
        sub = df[df["target_label"] == target] if not df.empty else df
        ax.set_xlabel("Access size")
        ax.set_ylabel(BW_LABEL)
        if sub.empty:
            note(ax, NO_DATA)
            continue
        best = _best_threads(sub)
        chosen = sub[[best.get(op) == t for op, t in zip(sub["op"], sub["threads"])]]
        series(ax, chosen, "access_size", "bw_gbps", "op", label_of=lambda op: f"{op_label(op)} ({best[op]} thr)",
               order=ops, log_x=True)
        refs = notes.refs("bw-size", target_kind(df, target), target_dimms(df, target), str(target))
        for threads, op in sorted({(r.threads, r.series) for r in refs if r.threads is not None}):
            own = sub[(sub["op"] == op) & (sub["threads"] == threads)]
            if best.get(op) != threads and not own.empty:  # the paper's thread count: its own curve
                series(ax, own, "access_size", "bw_gbps", "op", label_of=lambda o: f"{op_label(o)} ({threads} thr)",
                       linestyle="--", marker=".", log_x=True, linewidth=1.0)
        bytes_axis(ax, sizes)
        draw_references(ax, refs)
        zero_based(ax)
        ax.set_title(f"{target} · threads " + "/".join(str(best[o]) for o in ops if o in best), fontsize=9)
        legend(ax)
        for j, op in enumerate(ops if heat else []):
            heat_ax = fig.add_subplot(grid[1 + i, j * hspan:(j + 1) * hspan])
            cell = sub[sub["op"] == op]
            if cell.empty:
                note(heat_ax, f"{op_label(op)}: not run on {target}")
                heat_ax.set_xticks([])
                heat_ax.set_yticks([])
                continue
            heatmap(heat_ax, cell, "access_size", "threads", "bw_gbps", norm, x_label=size_label)
            heat_ax.set_title(f"{target} · {op_label(op)}: threads x access size", fontsize=9)
            heat_ax.set_xlabel("Access size")
            heat_ax.set_ylabel("Threads")
            heat_axes.append(heat_ax)
    if heat_axes and norm is not None:
        shared_colorbar(fig, fig.add_subplot(grid[1:, cols]), norm, f"{BW_LABEL}, mean over repeats")
        notes.add("heatmaps: one colour scale for every target and op; hatched: loop-bound")
    elif thread_counts:
        notes.add(f"no threads x access size heatmaps: {len(thread_counts)} thread count"
                  f"{'s' if len(thread_counts) != 1 else ''} ({'/'.join(map(str, thread_counts))}); "
                  f"they need {HEATMAP_MIN_THREADS}")
    return _finish(fig, results, "Bandwidth vs access size (random)", notes)


def _latency_vs_bandwidth(ax: Axes, results: Results, df: pd.DataFrame, hue: str,
                          label_of: Callable[[object], str] = str,
                          name_of: Callable[[object], str] = str) -> pd.DataFrame:
    """One curve per `hue`: the probe's median latency (whiskers p5-p95; under load the runs'
    histogram holds the probe's samples only) against the achieved bandwidth (mean; error bars by
    stats.spread_of: the 95 % CI from 3 repeats, the repeats' range below), ordered by injected
    delay. A curve's conditions say that its right end is the highest bandwidth the sweep reached
    (`name_of(value)` names it, for the papers' values)."""
    every = []
    for value, grp in df.groupby(hue, sort=True):
        bw = mean_over_repeats(grp, ["delay_ticks"], "bw_gbps")
        lat = latency_stats(results, grp, ["delay_ticks"]).drop(columns=["mean"])
        curve = bw.merge(lat, on="delay_ticks").sort_values("delay_ticks", ascending=False)
        xerr = [curve["mean"] - curve["lo"], curve["hi"] - curve["mean"]] if (curve["spread"] != "").any() else None
        yerr = [np.clip(curve["p50"] - curve["p5"], 0, None), np.clip(curve["p95"] - curve["p50"], 0, None)] \
            if curve["from_histogram"].any() else None
        line = ax.errorbar(curve["mean"], curve["p50"], xerr=xerr, yerr=yerr,
                           marker="o", markersize=4, capsize=2.5, label=label_of(value))
        line._pmemlab_conditions = {"series": name_of(value), "statistic": "max"}
        mark_loop_bound(ax, curve["mean"], curve["p50"], curve["loop_bound"], line.lines[0].get_color())
        every.append(curve)
    ax.set_xlabel(BW_LABEL)
    ax.set_ylabel(f"Probe {MEDIAN_LABEL.lower()}")
    log_y(ax)
    ax.set_xlim(left=0)
    stats = pd.concat(every, ignore_index=True) if every else pd.DataFrame()
    if not stats.empty:
        add_note(ax, "x: mean bandwidth, " + ci_note(stats["n"], stats["spread"]).replace("error bars: ", ""))
        add_note(ax, "y: " + spread_note(stats))
    return stats


def _delay_range(df: pd.DataFrame) -> str:
    """'delay 0-80 µs': the injected delays in time, from delay_ticks and the TSC rate."""
    if df.empty or "delay_ticks" not in df or "tsc_khz" not in df:
        return ""
    khz = pd.to_numeric(df["tsc_khz"], errors="coerce")
    us = pd.to_numeric(df["delay_ticks"], errors="coerce") / khz * 1000.0
    if us.dropna().empty:
        return ""
    return f"delay {us.min():.3g}-{us.max():.3g} µs"


def _where(results: Results, df: pd.DataFrame) -> dict[str, str]:
    """Per target label, ' (threads on node a, target on node b)' where they differ, else ''."""
    threads = results.threads()
    out: dict[str, str] = {}
    if not {"thread_node", "target_node"} <= set(threads.columns):
        return out
    for label, grp in threads.groupby("target_label"):
        t_nodes = sorted({int(n) for n in pd.to_numeric(grp["thread_node"], errors="coerce").dropna() if n >= 0})
        m_nodes = sorted({int(n) for n in pd.to_numeric(grp["target_node"], errors="coerce").dropna() if n >= 0})
        if t_nodes and m_nodes and t_nodes != m_nodes:
            out[str(label)] = (f" (threads on node {'/'.join(map(str, t_nodes))}, "
                               f"target on node {'/'.join(map(str, m_nodes))})")
    return out


def emulation(results: Results) -> Figure:
    """FAST'20 fig 6 (left): loaded write latency vs bandwidth, one curve per target (the legend
    adds the measured nodes where threads and target sit on different nodes)."""
    df = results.ok()
    notes = Notes()
    fig, (ax,) = new_figure(1, width_per_panel=9.0, height=4.2)  # the legend goes beside the panel
    if df.empty:
        note(ax, NO_DATA)
        ax.set_xlabel(BW_LABEL)
        ax.set_ylabel(f"Probe {MEDIAN_LABEL.lower()}")
    else:
        where = _where(results, df)
        stats = _latency_vs_bandwidth(ax, results, df, "target_label", label_of=lambda t: f"{t}{where.get(str(t), '')}")
        ax.set_title(_delay_range(df), fontsize=9)
        notes.add("probe latency: " + spread_note(stats))
    legend(ax, "target", outside=True)  # five targets with their nodes: no free corner on one panel
    return _finish(fig, results, "Write latency vs bandwidth: pmem, DRAM and emulation", notes)


def _workload(op: object, pattern: object) -> str:
    return f"{op_label(op)} {pattern}"


def loaded_latency(results: Results) -> Figure:
    """REPORT fig 14: probe latency (median, whiskers p5-p95) vs achieved bandwidth under injected
    load, a curve per op and pattern, one panel per target; where the REPORT's bandwidth tops
    out, as dashed lines."""
    df = results.ok()
    notes = Notes()
    targets = _targets(df) if not df.empty else ["target"]
    fig, axes = new_figure(len(targets))
    every = []
    for ax, target in zip(axes, targets):
        sub = df[df["target_label"] == target] if not df.empty else df
        if sub.empty:
            note(ax, NO_DATA)
            ax.set_xlabel(BW_LABEL)
            ax.set_ylabel(f"Probe {MEDIAN_LABEL.lower()}")
        else:
            # an op list is the probe's load, then the loaders' op: the curve is named by the load
            sub = sub.assign(workload=[_workload(str(o).split(",")[-1], p) for o, p in zip(sub["op"], sub["pattern"])],
                             load=[f"{str(o).split(',')[-1]} {p}" for o, p in zip(sub["op"], sub["pattern"])])
            names = dict(zip(sub["workload"], sub["load"]))
            every.append(_latency_vs_bandwidth(ax, results, sub, "workload", name_of=lambda w: str(names[str(w)])))
            draw_references(ax, notes.refs("loaded-latency", target_kind(df, target), target_dimms(df, target),
                                           str(target)))
        delays = _delay_range(sub)
        ax.set_title(f"{target} · {delays}" if delays else str(target), fontsize=9)
        legend(ax)
    if every:
        notes.add("probe latency: " + spread_note(pd.concat(every, ignore_index=True)))
    return _finish(fig, results, "Performance under load: latency vs bandwidth", notes)


def ewr(results: Results) -> Figure:
    """FAST'20 fig 8: EWR against bandwidth over every run of the sweep."""
    df = results.ok()
    fig, (ax,) = new_figure(1, width_per_panel=5.5)
    has_ewr = "ewr" in df and pd.to_numeric(df["ewr"], errors="coerce").notna().any()
    if has_ewr:
        df["loop_bound_run"] = loop_bound_rows(df)
        for op, grp in df.groupby("op"):
            points = ax.scatter(pd.to_numeric(grp["ewr"], errors="coerce"), grp["bw_gbps"], s=12, label=op_label(op))
            mark_loop_bound(ax, pd.to_numeric(grp["ewr"], errors="coerce"), grp["bw_gbps"], grp["loop_bound_run"],
                            points.get_facecolor()[0])
        zero_based(ax)
        add_note(ax, "one point per run")
    else:
        note(ax, "EWR unavailable: no Optane media counters (ipmctl) on this machine;\n"
                 "the ewr column is empty (see the sidecar's notes)")
    ax.set_xlabel("Effective write ratio (iMC bytes / media bytes)")
    ax.set_ylabel(BW_LABEL)
    legend(ax)
    return _finish(fig, results, "EWR vs bandwidth")


def xpbuffer(results: Results) -> Figure:
    """FAST'20 fig 9: EWR (bandwidth where the media counters are absent) vs N 256 B lines."""
    df = results.ok()
    fig, (ax,) = new_figure(1, width_per_panel=5.5)
    if df.empty:
        note(ax, NO_DATA)
        ax.set_ylabel("Effective write ratio")
    else:
        df["xplines"] = df["working_set"] // 256
        has_ewr = "ewr" in df and pd.to_numeric(df["ewr"], errors="coerce").notna().any()
        y = "ewr" if has_ewr else "bw_gbps"
        series(ax, df, "xplines", y, "op", label_of=op_label, log_x=True)
        ax.set_ylabel("Effective write ratio" if has_ewr else f"{BW_LABEL}\n(EWR proxy: no media counters)")
    ax.set_xscale("log", base=2)
    if not df.empty:
        data_ticks(ax, df["xplines"], lambda v: f"{v:g}")
        zero_based(ax)
    ax.set_xlabel("Region size N (256 B XPLines)")
    legend(ax)
    return _finish(fig, results, "Inferring the XPBuffer capacity (half-line writes)")


def flush_instr(results: Results) -> Figure:
    """FAST'20 fig 12: bandwidth (left, mean with 95 % CI) and latency (right, median with
    whiskers p5-p95) vs access size per instruction sequence. Several targets: a row each."""
    df = results.ok()
    notes = Notes()
    targets = _targets(df) if not df.empty else ["target"]
    fig, axes = new_figure(2, rows=len(targets))
    for i, target in enumerate(targets):
        sub = df[df["target_label"] == target] if len(targets) > 1 else df
        _flush_panels(axes[2 * i], axes[2 * i + 1], results, sub, notes, f"{target}: " if len(targets) > 1 else "")
    return _finish(fig, results, "Performance of persistence instructions", notes)


def _flush_panels(bw_ax: Axes, lat_ax: Axes, results: Results, df: pd.DataFrame, notes: Notes, prefix: str) -> None:
    kind = target_kind(df, _targets(df)[0]) if not df.empty else "pmem"
    refs = notes.refs("flush-instr", kind, None, "the target")
    for ax, mode in ((bw_ax, "bandwidth"), (lat_ax, "latency")):
        sub = df[df["mode"] == mode] if not df.empty else df
        bytes_axis(ax, sorted(set(sub["access_size"])) if not sub.empty else None)
        ax.set_xlabel("Access size")
        if sub.empty:
            note(ax, NO_DATA)
            continue
        threads = ", ".join(str(t) for t in sorted(set(sub["threads"])))
        ax.set_title(f"{prefix}{mode} ({threads} thread{'s' if threads != '1' else ''})", fontsize=9)
        if mode == "bandwidth":
            series(ax, sub, "access_size", "bw_gbps", "op", label_of=lambda op: f"{op_label(op)} + sfence", log_x=True)
        else:
            stats = latency_stats(results, sub, ["op", "access_size"])
            step = results.timer_step(_targets(df)[0]) if len(set(df["target_label"])) else results.timer_step()
            ops = list(stats.groupby("op", sort=True))
            for i, (op, grp) in enumerate(ops):
                latency_series(ax, grp, "access_size", f"{op_label(op)} + sfence", step=step, log_x=True, index=i,
                               count=len(ops), conditions={"series": str(op), "statistic": "median",
                                                           **series_conditions(sub, op, "median", "access_size")})
            add_note(ax, spread_note(stats))
            notes.add("latency: " + spread_note(stats))
            ax.set_ylabel(MEDIAN_LABEL)
            log_y(ax)
        draw_references(ax, [r for r in refs if r.series == mode])
    bw_ax.set_ylabel(BW_LABEL)
    zero_based(bw_ax)
    lat_ax.set_ylabel(lat_ax.get_ylabel() or MEDIAN_LABEL)
    for ax in (bw_ax, lat_ax):
        legend(ax)


def sfence_interval(results: Results) -> Figure:
    """FAST'20 fig 13: bandwidth vs write size, clwb per line vs after the whole write."""
    df = results.ok()
    notes = Notes()
    fig, (ax,) = new_figure(1, width_per_panel=6.0)
    names = {"line": "clwb every 64 B line", "access": "clwb after the write"}
    bytes_axis(ax, sorted(set(df["access_size"])) if not df.empty else None)
    if df.empty:
        note(ax, NO_DATA)
    else:
        series(ax, df, "access_size", "bw_gbps", "flush", label_of=lambda f: names.get(str(f), str(f)), log_x=True)
        draw_references(ax, notes.refs("sfence-interval", target_kind(df, _targets(df)[0]), None, "the target"))
        zero_based(ax)
    ax.set_xlabel("Write size between sfences")
    ax.set_ylabel(BW_LABEL)
    legend(ax, "flush")
    return _finish(fig, results, "Bandwidth vs sfence interval (1 thread, sequential)", notes)


def imc_contention(results: Results) -> Figure:
    """FAST'20 fig 15: per-DIMM bandwidth vs DIMMs per thread; and bandwidth vs random access size
    around the interleave size over the whole interleave set."""
    df = results.ok()
    notes = Notes()
    fig, (left, right) = new_figure(2)
    per_dimm = df[df["placement"] == "per-dimm"].copy() if not df.empty else df
    if per_dimm.empty:
        note(left, NO_DATA)
    else:
        per_dimm["bw_per_dimm"] = per_dimm["bw_gbps"] / per_dimm["interleave_ways"]
        series(left, per_dimm, "dimms_per_thread", "bw_per_dimm", "op",
               label_of=lambda op: f"{op_label(op)} ({_threads_of(per_dimm, op)} thr)", log_x=False)
        zero_based(left)
    integer_x(left, per_dimm["dimms_per_thread"] if not per_dimm.empty else None)
    left.set_xlabel("DIMMs per thread (N)")
    left.set_ylabel("Bandwidth per DIMM (GB/s)")
    legend(left)
    spread = df[df["placement"] == "global"] if not df.empty else df
    bytes_axis(right, sorted(set(spread["access_size"])) if not spread.empty else None)
    if spread.empty:
        note(right, NO_DATA)
    else:
        series(right, spread, "access_size", "bw_gbps", "op", label_of=op_label, log_x=True)
        grans = sorted(set(spread["interleave_gran"].dropna()))
        for gran in grans:
            right.axvline(gran, color="0.6", linestyle=":", linewidth=1)
        ways = sorted(set(spread["interleave_ways"].dropna()))
        geometry = int(ways[0]) if len(ways) == 1 and grans == [4096] else None
        draw_references(right, notes.refs("imc-contention", "pmem", geometry, "this geometry"))
        zero_based(right)
        add_note(right, "dotted: interleave granularity")
    right.set_xlabel("Access size (random, all DIMMs)")
    right.set_ylabel(BW_LABEL)
    legend(right)
    return _finish(fig, results, "iMC contention on interleaved DIMMs", notes)


def _threads_of(df: pd.DataFrame, op: str) -> str:
    return "/".join(str(t) for t in sorted(set(df.loc[df["op"] == op, "threads"])))


def numa_mix(results: Results) -> Figure:
    """FAST'20 fig 17: bandwidth vs share of loads within each thread, for 1 and N threads on the
    target's node (local) and on another node (remote, from the measured thread nodes)."""
    df = results.ok()
    fig, (ax,) = new_figure(1, width_per_panel=6.0)
    if df.empty:
        note(ax, "no successful runs")
    else:
        df["read_share"] = [100 if op in READ_OPS else int(rp) for op, rp in zip(df["op"], df["read_pct"])]
        df["curve"] = numa_curves(results, df)
        series(ax, df, "read_share", "bw_gbps", "curve", log_x=False)
        data_ticks(ax, df["read_share"], lambda v: f"{v:g}")
        zero_based(ax)
    skipped = results.rows[results.rows["status"] == "skipped"]
    if not skipped.empty:
        ax.annotate(f"{skipped['point_key'].nunique()} points skipped (e.g. {skipped['error'].iloc[0]})",
                    (0.01, 0.01), xycoords="axes fraction", fontsize=6, color="0.4")
    ax.set_xlabel("Loads within each thread (%)")
    ax.set_ylabel(BW_LABEL)
    legend(ax)
    return _finish(fig, results, "Bandwidth vs read/write mix, local and remote")


def numa_curves(results: Results, agg: pd.DataFrame) -> list[str]:
    """A curve name per aggregate row: thread count, local or remote from the measured nodes of the
    threads against the target's node, and the CPU list when one was given. Runs on the CPUs the
    config meant for the other node stay a curve of their own even where those CPUs turned out to
    sit on the target's node (one-node machine): they never average into the default-CPU curve.
    With more than one module load (pmem and a CPU-less node's DRAM) each curve starts with the
    load's label."""
    where = _locality(results, agg)
    labels = agg.get("target_label", pd.Series("", index=agg.index)).fillna("").astype(str)
    several = labels.nunique() > 1
    names = []
    for t, w, cpus, label in zip(agg["threads"], where, agg.get("cpus", pd.Series(np.nan, index=agg.index)), labels):
        # "remote" is resolved to another node's CPUs: the measured nodes already say it
        given = "" if pd.isna(cpus) or str(cpus).strip() in ("", "remote") else f" (CPUs {cpus})"
        names.append(f"{label + ': ' if several else ''}{int(t)} thread{'s' if int(t) > 1 else ''}, {w}{given}")
    return names


def _locality(results: Results, agg: pd.DataFrame) -> list[str]:
    threads = results.threads()
    remote_runs: set[tuple[str, int, str]] = set()
    if {"thread_node", "target_node"} <= set(threads.columns):
        far = threads[pd.to_numeric(threads["thread_node"], errors="coerce") != pd.to_numeric(threads["target_node"], errors="coerce")]
        remote_runs = set(zip(far["point_key"], far["repeat"], far["source_csv"]))
    return ["remote" if (k, r, s) in remote_runs else "local"
            for k, r, s in zip(agg["point_key"], agg["repeat"], agg["source_csv"])]


def _mixed_family(ops: str) -> tuple[str, int, int, str]:
    """(part, readers, threads, writer op) of an op list of mixed-threads.toml."""
    items = ops.split(",")
    readers = sum(op in READ_OPS for op in items)
    writers = [op for op in items if op in WRITE_OPS]
    writer = writers[0] if writers else ""
    part = "ratio" if items[0] in READ_OPS and writers else "split"
    return part, readers, len(items), writer


def mixed_threads(results: Results) -> Figure:
    """REPORT figs 12-13: left, bandwidth vs threads for fixed reader:writer ratios; right,
    bandwidth of N threads vs k readers (the rest writing with store W or ntstore NT)."""
    df = results.ok()
    fig, (left, right) = new_figure(2)
    if df.empty:
        note(left, NO_DATA)
        note(right, NO_DATA)
    else:
        fams = [_mixed_family(str(op)) for op in df["op"]]
        df["part"] = [f[0] for f in fams]
        df["readers"] = [f[1] for f in fams]
        ratio = df[df["part"] == "ratio"].copy()
        ratio["curve"] = [f"{_ratio_name(op)} {p}" for op, p in zip(ratio["op"], ratio["pattern"])]
        series(left, ratio, "threads", "bw_gbps", "curve", log_x=False)
        split = _split_curves(df[df["part"] == "split"])
        series(right, split, "readers", "bw_gbps", "curve", log_x=False)
        total = sorted(set(split["threads"]))
        right.set_title(f"{'/'.join(map(str, total))} threads: k readers", fontsize=9)
        integer_x(left, ratio["threads"])
        integer_x(right, split["readers"])
        zero_based(left)
        zero_based(right)
    missing = _ratios_not_run(results)
    notes = Notes()
    if missing:
        note_lines = [f"not run: {name} ({why})" for name, why in missing.items()]
        left.annotate("\n".join(note_lines), (0.01, 0.01), xycoords="axes fraction", fontsize=6, color="0.4",
                      va="bottom")
        notes.add("missing curves of REPORT fig 12: " + "; ".join(f"{n} ({w})" for n, w in missing.items()))
    left.set_title("fixed reader:writer ratios", fontsize=9)
    left.set_xlabel("Threads")
    right.set_xlabel("Reader threads k (the others write)")
    for ax in (left, right):
        ax.set_ylabel(BW_LABEL)
        legend(ax)
    return _finish(fig, results, "Bandwidth with mixed reader and writer threads", notes)


def _ratios_not_run(results: Results) -> dict[str, str]:
    """Ratio families (1r:1w, 2r:1w, 2r:1nt) without a single successful run: name -> why."""
    rows = results.rows
    if rows.empty or "op" not in rows:
        return {}
    agg = rows[rows["thread"].astype(str) == "all"]
    ratio = agg[[_mixed_family(str(op))[0] == "ratio" for op in agg["op"]]]
    out: dict[str, str] = {}
    for name, grp in ratio.groupby([_ratio_name(str(op)) for op in ratio["op"]]):
        if not (grp["status"] == "ok").any():
            errors = grp["error"].dropna().astype(str)
            out[str(name)] = errors.iloc[0] if not errors.empty else "no successful run"
    return out


def _split_curves(split: pd.DataFrame) -> pd.DataFrame:
    """Rows labelled W (store writers) or NT (ntstore writers); all-reader runs belong to both."""
    writer = ["NT" if "ntstore" in op else "W" if "store" in op else "" for op in split["op"]]
    labelled = split.assign(writer=writer)
    readers_only = labelled[labelled["writer"] == ""]
    both = pd.concat([labelled[labelled["writer"] != ""], readers_only.assign(writer="W"),
                      readers_only.assign(writer="NT")], ignore_index=True)
    return both.assign(curve=[f"{w} {p}" for w, p in zip(both["writer"], both["pattern"])])


def _ratio_name(ops: str) -> str:
    items = ops.split(",")
    period = 2 if len(items) > 1 and items[1] in WRITE_OPS else 3
    cycle = items[:period]
    readers = sum(op in READ_OPS for op in cycle)
    writer = "nt" if "ntstore" in cycle else "w"
    return f"{readers}r:{len(cycle) - readers}{writer}"


def page_size(results: Results) -> Figure:
    """seeds/001: latency (median, whiskers p5-p95) and bandwidth (mean, 95 % CI) of random loads
    vs working set, per page size of the mapping (target_page_size) and target."""
    df = results.ok()
    notes = Notes()
    fig, (lat_ax, bw_ax) = new_figure(2)
    if not df.empty:
        df["mapping"] = [f"{t} · {size_label(p)} pages" if pd.notna(p) else str(t)
                         for t, p in zip(df["target_label"], df.get("target_page_size", [np.nan] * len(df)))]
    for ax, mode in ((lat_ax, "latency"), (bw_ax, "bandwidth")):
        sub = df[df["mode"] == mode] if not df.empty else df
        bytes_axis(ax, sorted(set(sub["working_set"])) if not sub.empty else None)
        ax.set_xlabel("Working set")
        ax.set_title(mode, fontsize=9)
        if sub.empty:
            note(ax, NO_DATA)
            continue
        if mode == "latency":
            stats = latency_stats(results, sub, ["mapping", "working_set"])
            mappings = list(stats.groupby("mapping", sort=True))
            for i, (mapping, grp) in enumerate(mappings):
                latency_series(ax, grp, "working_set", str(mapping), step=results.timer_step(), log_x=True, index=i,
                               count=len(mappings))
            add_note(ax, spread_note(stats))
            notes.add("latency: " + spread_note(stats))
            ax.set_ylabel(MEDIAN_LABEL)
            log_y(ax)
        else:
            series(ax, sub, "working_set", "bw_gbps", "mapping", log_x=True)
    lat_ax.set_ylabel(lat_ax.get_ylabel() or MEDIAN_LABEL)
    bw_ax.set_ylabel(BW_LABEL)
    zero_based(bw_ax)
    for ax in (lat_ax, bw_ax):
        legend(ax, "mapping")
    return _finish(fig, results, "Page size of the mapping: random 64 B loads", notes)


def tier_bw(results: Results) -> Figure:
    """`pmemlab tier-bw`: bandwidth against the share of the target's pages on DRAM (one point per
    DRAM:CXL ratio, from the weights each row was loaded with), a line per mix; the best ratio of
    each mix is starred and labelled with its gain over DRAM alone (pmemlab.analysis.tiers.summarize: the
    table's numbers)."""
    df = results.ok()
    notes = Notes()
    fig, (ax,) = new_figure(1, width_per_panel=6.4)
    ratios = {}
    if not df.empty:
        found = [tiers.placed(n, w, b) for n, w, b in zip(df.get("target_nodes", pd.Series(np.nan, index=df.index)),
                                                          df.get("target_weights", pd.Series(np.nan, index=df.index)),
                                                          df.get("target_node_bytes", pd.Series(np.nan, index=df.index)))]
        df["ratio"] = [f[0] for f in found]
        df = df[df["ratio"].notna()].copy()
    if df.empty:
        note(ax, "no successful runs on a DRAM target over two nodes\n(see the status and error columns)")
    else:
        df["dram_pct"] = [r.dram_pct for r in df["ratio"]]
        df["mix"] = [next((m[0] for m in tiers.MIXES if m[1] == str(op) and m[2] == int(rp)),
                          f"{op} read_pct={rp}") for op, rp in zip(df["op"], df["read_pct"])]
        ratios = {r.dram_pct: r for r in df["ratio"]}
        order = [m[0] for m in tiers.MIXES]
        series(ax, df, "dram_pct", "bw_gbps", "mix", order=order)
        colors = series_colors(ax)
        stats = tiers.summarize(results.rows, sorted(ratios.values(), key=lambda r: -r.dram_pct))
        for s in stats:
            if s.best:
                ax.plot([s.ratio.dram_pct], [s.mean], marker="*", markersize=13, color=colors.get(s.mix, "k"),
                        markeredgecolor="k", linestyle="none", zorder=5)
                gain = "" if math.isnan(s.gain_pct) else f" {s.gain_pct:+.1f} %"
                ax.annotate(f"{s.ratio.text}{gain}", (s.ratio.dram_pct, s.mean), textcoords="offset points",
                            xytext=(0, 9), ha="center", fontsize=7)
        for mix, text in tiers.best_text(stats).items():
            notes.add(f"best for {mix}: {text}")
        data_ticks(ax, list(ratios), lambda v: str(ratios[v].text) if v in ratios else f"{v:g}")
        zero_based(ax)
        nodes = sorted({str(n) for n in df.get("target_nodes", pd.Series(dtype=str)).dropna()})
        notes.add(f"x: DRAM:CXL page weights of the target (nodes {', '.join(nodes)}: DRAM first), from 100 % "
                  f"of its pages on DRAM (left) to none; * the best ratio of each mix and its gain over 1:0")
    ax.set_xlabel("DRAM:CXL pages (share on DRAM falls to the right)")
    ax.set_ylabel(BW_LABEL)
    if ratios:
        ax.invert_xaxis()
    legend(ax)
    return _finish(fig, results, "Bandwidth vs DRAM:CXL page ratio (weighted placement)", notes)


RECIPES: dict[str, Recipe] = {
    "idle-latency": idle_latency,
    "instr-latency": instr_latency,
    "tail-latency": tail_latency,
    "bw-threads": bw_threads,
    "bw-size": bw_size,
    "emulation": emulation,
    "ewr": ewr,
    "xpbuffer": xpbuffer,
    "flush-instr": flush_instr,
    "sfence-interval": sfence_interval,
    "imc-contention": imc_contention,
    "numa-mix": numa_mix,
    "mixed-threads": mixed_threads,
    "loaded-latency": loaded_latency,
    "page-size": page_size,
}
# the figures of one-liners that have no config of configs/ (their tests make their own rows)
COMMAND_RECIPES: dict[str, Recipe] = {
    "tier-bw": tier_bw,
}
# every recipe, by the sweep name that picks it
ALL_RECIPES: dict[str, Recipe] = {**RECIPES, **COMMAND_RECIPES}
