"""One recipe per experiment of configs/ (the sweep name picks it): the paper's figure from the
sweep's rows. Every recipe takes the experiment's Results and returns a matplotlib Figure whose
last text is the caption line (target, machine, date)."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from pmemlab.params import WRITE_OPS
from pmemlab.plots.data import Results, caption, mean_over_repeats, size_label
from pmemlab.plots.style import (
    BW_LABEL, LAT_LABEL, add_caption, bytes_axis, grouped_bars, heatmap, integer_x, legend, log_y_if_wide,
    new_figure, note, series,
)

Recipe = Callable[[Results], Figure]
OP_SHORT = {"load": "L", "ntload": "LN", "store": "S", "ntstore": "SN", "store+clwb": "SW",
            "store+clflushopt": "SO", "store+clflush": "SF"}
OP_LABEL = {"load": "Read (load)", "ntload": "Read (ntload)", "store": "Write (store)",
            "ntstore": "Write (ntstore)", "store+clwb": "Write (clwb)", "store+clflushopt": "Write (clflushopt)",
            "store+clflush": "Write (clflush)"}
NO_DATA = "no successful runs in this CSV\n(see its status and error columns)"


def op_label(op: object) -> str:
    return OP_LABEL.get(str(op), str(op))


def _finish(fig: Figure, results: Results, title: str) -> Figure:
    fig.suptitle(title, fontsize=10)
    add_caption(fig, caption(results))
    return fig


def _targets(df: pd.DataFrame) -> list[str]:
    """Target labels, DRAM first (the papers draw DRAM on the left)."""
    labels = list(dict.fromkeys(df["target_label"])) if "target_label" in df else ["target"]
    return sorted(labels, key=lambda t: (not str(t).startswith(("DRAM", "dram")), str(t)))


def _probe_latency(results: Results) -> pd.DataFrame:
    """Aggregate rows with `probe_lat_ns`: the probe thread's mean latency (else the aggregate's)."""
    agg = results.ok()
    threads = results.threads()
    if "thread_role" in threads and (threads["thread_role"] == "probe").any():
        probe = threads[threads["thread_role"] == "probe"][["point_key", "repeat", "source_csv", "lat_ns_mean"]]
        probe = probe.rename(columns={"lat_ns_mean": "probe_lat_ns"})
        agg = agg.merge(probe, on=["point_key", "repeat", "source_csv"], how="left")
    else:
        agg["probe_lat_ns"] = np.nan
    agg["probe_lat_ns"] = agg["probe_lat_ns"].fillna(agg.get("lat_ns_mean"))
    return agg


# --------------------------------------------------------------------------
def idle_latency(results: Results) -> Figure:
    """FAST'20 fig 2: mean latency (error bar: one standard deviation of the samples) of seq and
    rand reads and of clwb and ntstore writes, one bar per target."""
    df = results.ok()
    fig, (ax,) = new_figure(1, width_per_panel=6.0)
    if df.empty:
        note(ax, NO_DATA)
    else:
        df["access"] = [f"{'Read' if op in ('load', 'ntload') else 'Write'} ({_access_kind(op, pat)})"
                        for op, pat in zip(df["op"], df["pattern"])]
        stats = mean_over_repeats(df, ["access", "target_label"], "lat_ns_mean")
        spread = mean_over_repeats(df, ["access", "target_label"], "lat_ns_stddev")
        stats = stats.merge(spread[["access", "target_label", "mean"]].rename(columns={"mean": "sample_std"}),
                            on=["access", "target_label"], how="left")
        stats["std"] = stats["sample_std"].fillna(stats["std"])
        grouped_bars(ax, stats, "access", "target_label", list(dict.fromkeys(df["access"])), _targets(df))
        log_y_if_wide(ax, stats)
        legend(ax, "target")
    ax.set_ylabel(LAT_LABEL)
    ax.set_xlabel("Access")
    return _finish(fig, results, "Idle latency of 8 B accesses (error bars: 1 std of the samples)")


def _access_kind(op: str, pattern: str) -> str:
    return pattern if op in ("load", "ntload") else {"store+clwb": "clwb", "ntstore": "ntstore"}.get(op, op)


INSTR_ORDER = ("load", "ntload", "store+clflush", "ntstore", "store+clflushopt", "store+clwb")


def instr_category(access_size: object, op: object) -> str:
    """REPORT fig 8's Size_Type names: 64_L, 128_SW, ..."""
    return f"{int(access_size)}_{OP_SHORT.get(str(op), str(op))}"


def instr_latency(results: Results) -> Figure:
    """REPORT fig 8: median latency per Size_Type (access size x L LN SF SN SO SW), a bar per
    target (DRAM, the DRAM-emulated namespace, pmem), one panel per pattern; a log axis when the
    values span more than 50x (one slow outlier would hide every other bar)."""
    df = results.ok()
    patterns = [p for p in ("seq", "rand") if not df.empty and (df["pattern"] == p).any()]
    fig, axes = new_figure(1, rows=max(len(patterns), 1), width_per_panel=10.0, height=3.2, sharey=True)
    if not patterns:
        note(axes[0], NO_DATA)
    targets = _targets(df) if not df.empty else []
    every = []
    for ax, pattern in zip(axes, patterns):
        sub = df[df["pattern"] == pattern]
        sub = sub.assign(size_type=[instr_category(a, o) for a, o in zip(sub["access_size"], sub["op"])])
        stats = mean_over_repeats(sub, ["size_type", "target_label"], "lat_ns_p50")
        ops = [op for op in INSTR_ORDER if op in set(sub["op"])]
        categories = [instr_category(a, op) for a in sorted(set(sub["access_size"])) for op in ops]
        categories = [c for c in categories if c in set(sub["size_type"])]
        grouped_bars(ax, stats, "size_type", "target_label", categories, [t for t in targets if t in set(sub["target_label"])])
        ax.tick_params(axis="x", labelrotation=60, labelsize=7)
        ax.set_title(pattern, fontsize=9)
        ax.set_xlabel("Size_Type (L load, LN ntload, SF store+clflush, SN ntstore, SO store+clflushopt, SW store+clwb)")
        ax.set_ylabel("Median latency (ns)")
        legend(ax, "target")
        every.append(stats)
    if every:
        log_y_if_wide(axes[0], pd.concat(every, ignore_index=True))
    return _finish(fig, results, "Memory instruction latency (median)")


def tail_latency(results: Results) -> Figure:
    """FAST'20 fig 3: 99.9th, 99.99th percentile and max latency vs hotspot size (log-log), and
    the latency CDF per hotspot size from the histogram."""
    df = results.ok()
    fig, (left, right) = new_figure(2, width_per_panel=5.0)
    if df.empty:
        note(left, NO_DATA)
    for column, label in (("lat_ns_p999", "99.9th"), ("lat_ns_p9999", "99.99th"), ("lat_ns_max", "max")):
        if column in df and df[column].notna().any():
            series(left, df, "hotspot_size", column, prefix=label)
    bytes_axis(left)
    left.set_yscale("log")
    left.set_xlabel("Hotspot size")
    left.set_ylabel(LAT_LABEL)
    left.set_title("Tail latency vs hotspot size", fontsize=9)
    legend(left, "percentile")
    _latency_cdf(right, results)
    return _finish(fig, results, "Tail latency of 64 B writes into a hotspot")


def _latency_cdf(ax, results: Results) -> None:
    hist = results.hist
    ax.set_xlabel(LAT_LABEL)
    ax.set_ylabel("CDF (fraction of accesses)")
    ax.set_title("Latency CDF per hotspot size", fontsize=9)
    ax.set_xscale("log")
    if hist is None or hist.empty:
        note(ax, "no latency histogram (NAME.hist.csv) next to the CSV")
        return
    agg = results.ok()[["point_key", "hotspot_size", "source_csv"]].drop_duplicates(["point_key", "source_csv"])
    merged = hist[hist["thread"].astype(str) == "all"].merge(agg, on=["point_key", "source_csv"], how="inner")
    if merged.empty:
        merged = hist.merge(agg, on=["point_key", "source_csv"], how="inner")
    for size, grp in merged.groupby("hotspot_size", sort=True):
        buckets = grp.groupby("hi_ns", sort=True)["count"].sum()
        cdf = buckets.cumsum() / buckets.sum()
        ax.step(buckets.index, cdf.values, where="post", label=size_label(size))
    ax.set_ylim(0, 1.02)
    legend(ax, "hotspot")


def bw_threads(results: Results) -> Figure:
    """FAST'20 fig 4: bandwidth vs threads per op, one panel per target (own vertical scale)."""
    df = results.ok()
    targets = _targets(df) if not df.empty else ["target"]
    fig, axes = new_figure(len(targets))
    for ax, target in zip(axes, targets):
        sub = df[df["target_label"] == target] if not df.empty else df
        if sub.empty:
            note(ax, NO_DATA)
        else:
            series(ax, sub, "threads", "bw_gbps", "op", label_of=op_label)
        ax.set_title(str(target), fontsize=9)
        integer_x(ax, sub["threads"] if not sub.empty else None)
        ax.set_xlabel("Threads")
        ax.set_ylabel(BW_LABEL)
        legend(ax)
    return _finish(fig, results, "Bandwidth vs thread count (sequential 256 B)")


def _best_threads(df: pd.DataFrame) -> dict[str, int]:
    """Per op, the thread count with the highest mean bandwidth over all sizes."""
    stats = mean_over_repeats(df, ["op", "threads"], "bw_gbps")
    best = stats.loc[stats.groupby("op")["mean"].idxmax()]
    return {row.op: int(row.threads) for row in best.itertuples()}


def bw_size(results: Results) -> Figure:
    """FAST'20 fig 5: random-access bandwidth vs access size, each op at its best thread count
    (the legend gives it), one panel per target (top row); below, per target a row of heatmaps
    threads x access size, one per op."""
    df = results.ok()
    targets = _targets(df) if not df.empty else ["target"]
    ops = [op for op in OP_LABEL if not df.empty and op in set(df["op"])]
    columns = max(len(targets), len(ops), 1)
    fig, axes = new_figure(columns, rows=1 + len(targets), width_per_panel=4.4, height=3.2)
    for extra in axes[len(targets):columns]:
        extra.remove()
    for i, target in enumerate(targets):
        ax, heat_axes = axes[i], axes[columns * (1 + i):columns * (2 + i)]
        sub = df[df["target_label"] == target] if not df.empty else df
        if sub.empty:
            note(ax, NO_DATA)
            for heat_ax in heat_axes:
                heat_ax.remove()
            continue
        best = _best_threads(sub)
        chosen = sub[[best.get(op) == t for op, t in zip(sub["op"], sub["threads"])]]
        series(ax, chosen, "access_size", "bw_gbps", "op", label_of=lambda op: f"{op_label(op)} ({best[op]} thr)",
               order=ops)
        bytes_axis(ax)
        ax.set_title(f"{target} · threads " + "/".join(str(best[o]) for o in ops if o in best), fontsize=9)
        ax.set_xlabel("Access size")
        ax.set_ylabel(BW_LABEL)
        legend(ax)
        for j, heat_ax in enumerate(heat_axes):
            if j >= len(ops) or not (sub["op"] == ops[j]).any():
                heat_ax.remove()
                continue
            heatmap(heat_ax, sub[sub["op"] == ops[j]], "access_size", "threads", "bw_gbps", fig,
                    x_label=size_label, colorbar_label=BW_LABEL)
            heat_ax.set_title(f"{target} · {op_label(ops[j])}: threads x access size", fontsize=8)
            heat_ax.set_xlabel("Access size")
            heat_ax.set_ylabel("Threads")
    return _finish(fig, results, "Bandwidth vs access size (random)")


def _latency_vs_bandwidth(ax, df: pd.DataFrame, hue: str, label_of: Callable[[object], str] = str) -> None:
    """One curve per `hue`: probe latency against achieved bandwidth, ordered by injected delay."""
    for value, grp in df.groupby(hue, sort=True):
        bw = mean_over_repeats(grp, ["delay_ticks"], "bw_gbps")
        lat = mean_over_repeats(grp, ["delay_ticks"], "probe_lat_ns")
        curve = bw.merge(lat, on="delay_ticks", suffixes=("_bw", "_lat")).sort_values("delay_ticks", ascending=False)
        ax.errorbar(curve["mean_bw"], curve["mean_lat"], xerr=curve["std_bw"], yerr=curve["std_lat"],
                    marker="o", markersize=4, capsize=2.5, label=label_of(value))
    ax.set_xlabel(BW_LABEL)
    ax.set_ylabel(LAT_LABEL)
    ax.set_yscale("log")


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
    df = _probe_latency(results)
    fig, (ax,) = new_figure(1, width_per_panel=6.0)
    if df.empty:
        note(ax, NO_DATA)
    else:
        where = _where(results, df)
        _latency_vs_bandwidth(ax, df, "target_label", label_of=lambda t: f"{t}{where.get(str(t), '')}")
        ax.set_title(_delay_range(df), fontsize=9)
    ax.set_xlabel(BW_LABEL)
    ax.set_ylabel(LAT_LABEL)
    legend(ax, "target")
    return _finish(fig, results, "Write latency vs bandwidth: pmem, DRAM and emulation")


def loaded_latency(results: Results) -> Figure:
    """REPORT fig 14: probe latency vs achieved bandwidth under injected load, a curve per op and
    pattern, one panel per target."""
    df = _probe_latency(results)
    targets = _targets(df) if not df.empty else ["target"]
    fig, axes = new_figure(len(targets))
    for ax, target in zip(axes, targets):
        sub = df[df["target_label"] == target] if not df.empty else df
        if sub.empty:
            note(ax, NO_DATA)
        else:
            sub = sub.assign(workload=[f"{op_label(o)} {p}" for o, p in zip(sub["op"], sub["pattern"])])
            _latency_vs_bandwidth(ax, sub, "workload")
        delays = _delay_range(sub)
        ax.set_title(f"{target} · {delays}" if delays else str(target), fontsize=9)
        ax.set_xlabel(BW_LABEL)
        ax.set_ylabel(LAT_LABEL)
        legend(ax)
    return _finish(fig, results, "Performance under load: latency vs bandwidth")


def ewr(results: Results) -> Figure:
    """FAST'20 fig 8: EWR against bandwidth over every point of the sweep."""
    df = results.ok()
    fig, (ax,) = new_figure(1, width_per_panel=5.5)
    has_ewr = "ewr" in df and pd.to_numeric(df["ewr"], errors="coerce").notna().any()
    if has_ewr:
        for op, grp in df.groupby("op"):
            ax.scatter(pd.to_numeric(grp["ewr"], errors="coerce"), grp["bw_gbps"], s=12, label=op_label(op))
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
    else:
        df["xplines"] = df["working_set"] // 256
        has_ewr = "ewr" in df and pd.to_numeric(df["ewr"], errors="coerce").notna().any()
        y = "ewr" if has_ewr else "bw_gbps"
        series(ax, df, "xplines", y, "op", label_of=op_label)
        ax.set_ylabel("Effective write ratio" if has_ewr else f"{BW_LABEL} (EWR proxy: no media counters)")
    if df.empty:
        ax.set_ylabel("Effective write ratio")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("Region size N (256 B XPLines)")
    legend(ax)
    return _finish(fig, results, "Inferring the XPBuffer capacity (half-line writes)")


def flush_instr(results: Results) -> Figure:
    """FAST'20 fig 12: bandwidth (left) and latency (right) vs access size per instruction sequence."""
    df = results.ok()
    fig, (bw_ax, lat_ax) = new_figure(2)
    for ax, mode, y, label in ((bw_ax, "bandwidth", "bw_gbps", BW_LABEL), (lat_ax, "latency", "lat_ns_mean", LAT_LABEL)):
        sub = df[df["mode"] == mode] if not df.empty else df
        if sub.empty:
            note(ax, NO_DATA)
        else:
            threads = ", ".join(str(t) for t in sorted(set(sub["threads"])))
            series(ax, sub, "access_size", y, "op", label_of=lambda op: f"{op_label(op)} + sfence")
            ax.set_title(f"{mode} ({threads} thread{'s' if threads != '1' else ''})", fontsize=9)
        bytes_axis(ax)
        ax.set_xlabel("Access size")
        ax.set_ylabel(label)
        legend(ax)
    lat_ax.set_yscale("log")
    return _finish(fig, results, "Performance of persistence instructions")


def sfence_interval(results: Results) -> Figure:
    """FAST'20 fig 13: bandwidth vs write size, clwb per line vs after the whole write."""
    df = results.ok()
    fig, (ax,) = new_figure(1, width_per_panel=6.0)
    names = {"line": "clwb every 64 B line", "access": "clwb after the write"}
    if df.empty:
        note(ax, NO_DATA)
    else:
        series(ax, df, "access_size", "bw_gbps", "flush", label_of=lambda f: names.get(str(f), str(f)))
    bytes_axis(ax)
    ax.set_xlabel("Write size between sfences")
    ax.set_ylabel(BW_LABEL)
    legend(ax, "flush")
    return _finish(fig, results, "Bandwidth vs sfence interval (1 thread, sequential)")


def imc_contention(results: Results) -> Figure:
    """FAST'20 fig 15: per-DIMM bandwidth vs DIMMs per thread; and bandwidth vs random access size
    around the interleave size over the whole interleave set."""
    df = results.ok()
    fig, (left, right) = new_figure(2)
    per_dimm = df[df["placement"] == "per-dimm"].copy() if not df.empty else df
    if per_dimm.empty:
        note(left, NO_DATA)
    else:
        per_dimm["bw_per_dimm"] = per_dimm["bw_gbps"] / per_dimm["interleave_ways"]
        series(left, per_dimm, "dimms_per_thread", "bw_per_dimm", "op",
               label_of=lambda op: f"{op_label(op)} ({_threads_of(per_dimm, op)} thr)")
    integer_x(left, per_dimm["dimms_per_thread"] if not per_dimm.empty else None)
    left.set_xlabel("DIMMs per thread (N)")
    left.set_ylabel("Bandwidth per DIMM (GB/s)")
    legend(left)
    spread = df[df["placement"] == "global"] if not df.empty else df
    if spread.empty:
        note(right, NO_DATA)
    else:
        series(right, spread, "access_size", "bw_gbps", "op", label_of=op_label)
        for gran in sorted(set(spread["interleave_gran"].dropna())):
            right.axvline(gran, color="0.6", linestyle=":", linewidth=1)
    bytes_axis(right, ticks=sorted(set(spread["access_size"])) if not spread.empty else None)
    right.set_xlabel("Access size (random, all DIMMs)")
    right.set_ylabel(BW_LABEL)
    legend(right)
    return _finish(fig, results, "iMC contention on interleaved DIMMs")


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
        df["read_share"] = [100 if op in ("load", "ntload") else int(rp) for op, rp in zip(df["op"], df["read_pct"])]
        df["curve"] = numa_curves(results, df)
        series(ax, df, "read_share", "bw_gbps", "curve")
    skipped = results.rows[results.rows["status"] == "skipped"]
    if not skipped.empty:
        ax.annotate(f"{skipped['point_key'].nunique()} points skipped (e.g. {skipped['error'].iloc[0]})",
                    (0.01, 0.01), xycoords="axes fraction", fontsize=6, color="0.4")
    ax.set_xticks([0, 25, 50, 75, 100])
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
    readers = sum(op in ("load", "ntload") for op in items)
    writers = [op for op in items if op in WRITE_OPS]
    writer = writers[0] if writers else ""
    part = "ratio" if items[0] in ("load", "ntload") and writers else "split"
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
        series(left, ratio, "threads", "bw_gbps", "curve")
        split = _split_curves(df[df["part"] == "split"])
        series(right, split, "readers", "bw_gbps", "curve")
        total = sorted(set(split["threads"]))
        right.set_title(f"{'/'.join(map(str, total))} threads: k readers", fontsize=9)
        integer_x(left, ratio["threads"])
        integer_x(right, split["readers"])
    missing = _ratios_not_run(results)
    if missing:
        note_lines = [f"not run: {name} ({why})" for name, why in missing.items()]
        left.annotate("\n".join(note_lines), (0.01, 0.01), xycoords="axes fraction", fontsize=6, color="0.4",
                      va="bottom")
    left.set_title("fixed reader:writer ratios", fontsize=9)
    left.set_xlabel("Threads")
    right.set_xlabel("Reader threads k (the others write)")
    for ax in (left, right):
        ax.set_ylabel(BW_LABEL)
        legend(ax)
    return _finish(fig, results, "Bandwidth with mixed reader and writer threads")


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
    readers = sum(op in ("load", "ntload") for op in cycle)
    writer = "nt" if "ntstore" in cycle else "w"
    return f"{readers}r:{len(cycle) - readers}{writer}"


def page_size(results: Results) -> Figure:
    """seeds/001: latency and bandwidth of random loads vs working set, per page size of the
    mapping (target_page_size) and target."""
    df = results.ok()
    fig, (lat_ax, bw_ax) = new_figure(2)
    if not df.empty:
        df["mapping"] = [f"{t} · {size_label(p)} pages" if pd.notna(p) else str(t)
                         for t, p in zip(df["target_label"], df.get("target_page_size", [np.nan] * len(df)))]
    for ax, mode, y, label in ((lat_ax, "latency", "lat_ns_mean", LAT_LABEL), (bw_ax, "bandwidth", "bw_gbps", BW_LABEL)):
        sub = df[df["mode"] == mode] if not df.empty else df
        if sub.empty:
            note(ax, NO_DATA)
        else:
            series(ax, sub, "working_set", y, "mapping")
        bytes_axis(ax)
        ax.set_xlabel("Working set")
        ax.set_ylabel(label)
        ax.set_title(mode, fontsize=9)
        legend(ax, "mapping")
    lat_ax.set_yscale("log")
    return _finish(fig, results, "Page size of the mapping: random 64 B loads")


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
