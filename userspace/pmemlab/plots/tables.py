"""The numbers behind each figure, in the figure's own statistic: the report's per-point tables.

A latency point is the median of every sample of its runs (repeats pooled, from the histogram)
with p5 and p95 and the exact mean of the samples, as the figures draw it; a tail point is p99.9,
p99.99 and the exact max; a bandwidth point is the mean over repeats with the spread the figure
draws (stats.spread_of: the 95 % CI from 3 repeats, else the repeats' min and max). Every value
comes from the functions the recipes draw with (data.latency_stats, data.mean_over_repeats,
data.bucket_quantiles), so a table and its figure cannot disagree. Points are named as the figure
names them (idle-latency's "Read (seq)", not "load stride")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from pmemlab.analysis.compare import swept_parameters
from pmemlab.analysis.resultset import (
    Results, TimerStep, bucket_quantiles, groups, latency_stats, mean_over_repeats, pooled_buckets,
    size_label,
)
from pmemlab.analysis.stats import SPREAD_CI
from pmemlab.plots.recipes import TAIL_QUANTILES, access_name, instr_category

SIZE_KEYS = frozenset({"access_size", "working_set", "hotspot_size", "stride", "fence_interval", "interleave_gran"})


@dataclass
class FigureTable:
    """One table of a figure: its title (the statistic), the rows, and how many points it has."""

    title: str
    table: pd.DataFrame


# per experiment, the columns that name a point as its figure does (added to the rows first)
Naming = Callable[[pd.DataFrame], pd.DataFrame]
NAMING: dict[str, tuple[Naming, list[str]]] = {
    "idle-latency": (lambda d: d.assign(access=[access_name(o, p) for o, p in zip(d["op"], d["pattern"])]),
                     ["access", "prefetch"]),
    "instr-latency": (lambda d: d.assign(size_type=[instr_category(a, o) for a, o in zip(d["access_size"], d["op"])]),
                      ["pattern", "size_type"]),
}


def point_keys(df: pd.DataFrame, name: str) -> list[str]:
    """The columns that name a point: the target where there are several, then the experiment's
    own naming (NAMING) or the parameters the sweep varied."""
    keys = ["target_label"] if "target_label" in df and df["target_label"].nunique() > 1 else []
    if name in NAMING:
        own = [k for k in NAMING[name][1] if k in df and (df[k].nunique() > 1 or k not in ("prefetch",))]
        return keys + own
    return keys + [k for k in swept_parameters(df) if k != "mode"]


def figure_tables(name: str, results: Results, step: TimerStep | None = None) -> list[FigureTable]:
    """The tables of experiment `name`: one per mode its figure draws (latency, bandwidth), or the
    tail statistics for tail-latency."""
    ok = results.ok()
    if ok.empty:
        return []
    if name in NAMING:
        ok = NAMING[name][0](ok)
    if name == "tail-latency":
        return [tail_table(results, ok)]
    out = []
    modes = list(dict.fromkeys(ok["mode"])) if "mode" in ok else ["bandwidth"]
    for mode in modes:
        rows = ok[ok["mode"] == mode] if "mode" in ok else ok
        keys = point_keys(rows, name)
        if mode == "latency":
            out.append(latency_table(results, rows, keys, step))
        else:
            out.append(bandwidth_table(rows, keys))
    return out


def latency_table(results: Results, rows: pd.DataFrame, keys: list[str], step: TimerStep | None) -> FigureTable:
    stats = latency_stats(results, rows, keys)
    table = stats[[*keys]].copy()
    table["samples"] = stats["samples"]
    table["repeats"] = stats["repeats"]
    if stats["from_histogram"].any():
        table["median ns"] = stats["p50"]
        table["p5 ns"] = stats["p5"]
        table["p95 ns"] = stats["p95"]
        title = "latency: the median of every sample (repeats pooled) with p5 and p95, and the samples' mean"
    else:
        table["median ns"] = stats["p50"]
        title = "latency: the mean over repeats of each run's median (no histogram)"
    table["mean ns"] = stats["mean"]
    if step is not None and step.resolved:
        below = stats["p50"] < step.ns
        if below.any():
            table[f"below the {step.ns:.3g} ns step"] = below.map({True: "yes", False: ""})
    return FigureTable(title, _sizes(table.sort_values(keys) if keys else table))


def bandwidth_table(rows: pd.DataFrame, keys: list[str]) -> FigureTable:
    stats = mean_over_repeats(rows, keys, "bw_gbps")
    table = stats[[*keys]].copy()
    table["repeats"] = stats["n"]
    table["mean GB/s"] = stats["mean"]
    ci = stats["spread"] == SPREAD_CI
    if ci.any():
        table["95 % CI ±"] = np.where(ci, stats["ci95"], np.nan)
    if (stats["n"] > 1).any() and not ci.all():
        table["min GB/s"] = np.where(stats["n"] > 1, stats["min"], np.nan)
        table["max GB/s"] = np.where(stats["n"] > 1, stats["max"], np.nan)
    if (stats["n"] >= 3).any():
        table["CV %"] = np.where(stats["n"] >= 3, 100 * stats["std"] / stats["mean"].where(stats["mean"] != 0), np.nan)
    if stats["loop_bound"].any():
        table["loop-bound"] = stats["loop_bound"].map({True: "yes", False: ""})
    spread = ("95 % CI of the mean from 3 repeats, the repeats' min-max below" if ci.any()
              else "the repeats' min-max" if (stats["n"] > 1).any() else "one repeat")
    return FigureTable(f"bandwidth: the mean over repeats ({spread})", _sizes(table))


def tail_table(results: Results, rows: pd.DataFrame) -> FigureTable:
    """Per target and hotspot size: samples, p99.9, p99.99 (pooled, the module's rank rule) and
    the exact max over repeats, as the tail figure draws them."""
    keys = ["target_label", "hotspot_size"] if rows["target_label"].nunique() > 1 else ["hotspot_size"]
    buckets = pooled_buckets(results, rows, keys)
    out = []
    for key, grp in groups(rows, keys):
        b = buckets.get(key)
        row = dict(zip(keys, key))
        lo, hi = grp["lat_ns_min"].min(), grp["lat_ns_max"].max()
        row["samples"] = int(b["count"].sum()) if b is not None else 0
        for q, label in TAIL_QUANTILES:
            row[f"p{label[:-2]} ns"] = bucket_quantiles(b, [q], lo, hi)[0] if b is not None else np.nan
        row["max ns"] = hi
        out.append(row)
    return FigureTable("tail: p99.9 and p99.99 of every sample (repeats pooled) and the exact max", _sizes(pd.DataFrame(out)))


def _sizes(table: pd.DataFrame) -> pd.DataFrame:
    """Sizes in B / KiB / MiB, the target column named as the figures name it."""
    table = table.copy()
    for column in table.columns:
        if column in SIZE_KEYS:
            table[column] = [size_label(v) for v in table[column]]
    return table.rename(columns={"target_label": "target"}).reset_index(drop=True)
