"""The generic figure, the figure of an experiment (its recipe, else the generic one) and saving
figures. The `plot` and `plot-all` commands are cli/plot.py and cli/plot_all.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd
from matplotlib.figure import Figure

from pmemlab.errors import ConfigError
from pmemlab.analysis.resultset import Results, size_label
from pmemlab.plots.recipes import ALL_RECIPES
from pmemlab.plots.style import (
    bytes_axis, data_ticks, finish, legend, log_label, new_figure, note, series, zero_based,
)
from pmemlab.params import PARAM_NAMES
from pmemlab.table import SIZE_PARAMS

# the columns in bytes: the size parameters (the parameter table's) and the target's sizes
SIZE_COLUMNS = frozenset({*SIZE_PARAMS, "target_size", "target_page_size"})
Y_UNITS = {"bw_gbps": "Bandwidth (GB/s)", "bw_mbps": "Bandwidth (MB/s)", "ewr": "Effective write ratio"}


def axis_label(column: str) -> str:
    if column in Y_UNITS:
        return Y_UNITS[column]
    if column.startswith("lat_ns_"):
        return f"Latency {column[len('lat_ns_'):]} (ns)"
    if column in SIZE_COLUMNS:
        return f"{column} (bytes)"
    return column


def default_y(df: pd.DataFrame) -> str:
    """bw_gbps for bandwidth sweeps, lat_ns_mean for latency sweeps."""
    if "mode" in df and (df["mode"] == "latency").all() and "lat_ns_mean" in df:
        return "lat_ns_mean"
    return "bw_gbps"


def varied_parameters(results: Results) -> list[str]:
    """Parameters that take more than one value among the successful runs, in parameter order."""
    ok = results.ok()
    return [key for key in PARAM_NAMES if key in ok and ok[key].nunique() > 1]


def default_x(results: Results) -> str:
    """A numeric parameter that varies (sizes first), else any that varies."""
    varied = varied_parameters(results)
    ok = results.ok()
    numeric = [k for k in varied if pd.api.types.is_numeric_dtype(ok[k])]
    sizes = [k for k in numeric if k in SIZE_COLUMNS]
    for choice in (sizes, numeric, varied):
        if choice:
            return choice[0]
    raise ConfigError(f"{results.name}: no parameter varies; nothing to put on the x axis", "give --x COLUMN")


def default_hue(results: Results, x: str) -> str | None:
    """The first other parameter that varies: one series per value instead of an average over it."""
    return next((k for k in varied_parameters(results) if k != x), None)


def generic_figure(results: Results, x: str, y: str, hue: str | None = None, facet: str | None = None,
                   logx: bool = False, logy: bool = False) -> Figure:
    """y against x, one series per hue value, one panel per facet value, error bars from repeats."""
    df = results.ok()
    for column in (x, y, hue, facet):
        if column and column not in df.columns and column not in results.rows.columns:
            raise ConfigError(f"no column {column!r} in {results.name}",
                              "columns: " + ", ".join(c for c in results.rows.columns[:60]))
    panels = list(dict.fromkeys(df[facet])) if facet and not df.empty else [None]
    fig, axes = new_figure(len(panels))
    for ax, value in zip(axes, panels):
        sub = df if facet is None else df[df[facet] == value]
        if sub.empty:
            note(ax, "no successful runs")
        else:
            series(ax, sub, x, y, hue, label_of=_value_label(hue))
        if facet is not None:
            ax.set_title(f"{facet} = {_value_label(facet)(value)}", fontsize=9)
        numeric = not sub.empty and pd.api.types.is_numeric_dtype(sub[x])
        if logx:
            if x in SIZE_COLUMNS:
                bytes_axis(ax, sub[x] if numeric else None)
            else:
                ax.set_xscale("log", base=2)
                if numeric:
                    data_ticks(ax, sub[x])
        elif numeric:
            data_ticks(ax, sub[x], size_label if x in SIZE_COLUMNS else (lambda v: f"{v:g}"))
        if logy:
            ax.set_yscale("log")
            ax.set_ylabel(log_label(axis_label(y)))
        else:
            ax.set_ylabel(axis_label(y))
            if not sub.empty and (pd.to_numeric(sub[y], errors="coerce").dropna() >= 0).all():
                zero_based(ax)
        ax.set_xlabel(axis_label(x))
        legend(ax, hue)
    return finish(fig, results, f"{results.name}: {y} vs {x} (mean over repeats)")


def fallback_figure(results: Results) -> Figure:
    """A sweep without a recipe: y against a varied parameter, one series per another."""
    x = default_x(results)
    return generic_figure(results, x, default_y(results.ok()), default_hue(results, x), logx=x in SIZE_COLUMNS)


def _value_label(column: str | None) -> Callable[[Any], str]:
    if column in SIZE_COLUMNS:
        return lambda v: size_label(v)
    return str


def recipe_figure(results: Results, recipe: str | None = None) -> Figure:
    name = recipe or results.name
    if name not in ALL_RECIPES:
        raise ConfigError(f"no recipe {name!r}", "recipes: " + ", ".join(ALL_RECIPES) + "; or give --x and --y")
    return ALL_RECIPES[name](results)


def save_figure(fig: Figure, out_dir: Path, name: str, formats: Sequence[str] = ("png", "svg")) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = out_dir / f"{name}.{fmt}"
        fig.savefig(path, dpi=150)
        paths.append(path)
    return paths
