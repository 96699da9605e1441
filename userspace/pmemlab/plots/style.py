"""Drawing helpers shared by the recipes: figures without pyplot (headless, no global state),
series with error bars, byte-size log axes, the caption line, heatmaps, and notes."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import os
import tempfile

# matplotlib caches fonts under ~/.config; in the test guest that is read-only, and it warns
if not os.access(os.path.expanduser("~/.config"), os.W_OK):
    os.environ.setdefault("MPLCONFIGDIR", os.path.join(tempfile.gettempdir(), "pmemlab-matplotlib"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # headless; must precede any pyplot import elsewhere

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullLocator  # noqa: E402

from pmemlab.plots.data import mean_over_repeats, size_label  # noqa: E402

CAPTION_GID = "pmemlab-caption"
BW_LABEL = "Bandwidth (GB/s)"
LAT_LABEL = "Latency (ns)"


def new_figure(panels: int = 1, rows: int = 1, width_per_panel: float = 4.6, height: float = 3.6,
               sharey: bool = False) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(max(width_per_panel * panels, 5.0), height * rows + 0.5))
    axes = fig.subplots(rows, panels, sharey=sharey, squeeze=False)
    return fig, [ax for row in axes for ax in row]


def add_caption(fig: Figure, text: str) -> None:
    """The caption line (target, machine, date) under the axes."""
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.text(0.01, 0.012, text, fontsize=6.5, color="0.3", ha="left", va="bottom", wrap=True, gid=CAPTION_GID)


def caption_of(fig: Figure) -> str:
    return next((t.get_text() for t in fig.texts if t.get_gid() == CAPTION_GID), "")


def bytes_axis(ax: Axes, axis: str = "x", ticks: Sequence[float] | None = None) -> None:
    """A log2 axis labelled in B / KiB / MiB / GiB: a tick per power of 4, or one per value of
    `ticks` (sizes that are no power of 4, e.g. the 24 and 48 KiB of six interleaved DIMMs)."""
    formatter = FuncFormatter(lambda v, _pos: size_label(v) if v > 0 else "")
    if axis == "x":
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(formatter)
        if ticks is not None and len(ticks):
            ax.xaxis.set_major_locator(FixedLocator(sorted({float(t) for t in ticks})))
            ax.xaxis.set_minor_locator(NullLocator())
        else:
            ax.xaxis.set_major_locator(LogLocator(base=4))
        ax.tick_params(axis="x", labelrotation=45)
    else:
        ax.set_yscale("log", base=2)
        ax.yaxis.set_major_formatter(formatter)


def series(ax: Axes, df: pd.DataFrame, x: str, y: str, hue: str | None = None,
           label_of: Callable[[Any], str] = str, order: Sequence[Any] | None = None,
           marker: str = "o", linestyle: str = "-", prefix: str = "") -> None:
    """One line per value of `hue`: the mean of `y` over repeats at each `x`, error bars = 1 std."""
    groups = [(None, df)] if hue is None else list(df.groupby(hue, sort=True, dropna=False))
    if order is not None and hue is not None:
        rank = {v: i for i, v in enumerate(order)}
        groups.sort(key=lambda g: rank.get(g[0], len(rank)))
    for value, grp in groups:
        stats = mean_over_repeats(grp, [x], y).sort_values(x)
        if stats.empty:
            continue
        label = prefix + label_of(value) if hue is not None else (prefix or y)
        ax.errorbar(stats[x], stats["mean"], yerr=stats["std"] if (stats["n"] > 1).any() else None,
                    marker=marker, markersize=4, linestyle=linestyle, capsize=2.5, label=label)


def grouped_bars(ax: Axes, stats: pd.DataFrame, category: str, hue: str, categories: Sequence[Any],
                 hues: Sequence[Any], label_of: Callable[[Any], str] = str,
                 category_label: Callable[[Any], str] = str) -> None:
    """Bars of stats['mean'] (error bars stats['std']) per category, one colour per hue value."""
    width = 0.8 / max(len(hues), 1)
    xs = np.arange(len(categories))
    for i, h in enumerate(hues):
        sub = stats[stats[hue] == h].set_index(category)
        heights = [sub["mean"].get(c, np.nan) for c in categories]
        errs = [sub["std"].get(c, 0.0) for c in categories]
        below = [min(e, m) if np.isfinite(m) else 0.0 for e, m in zip(errs, heights)]  # bars stay >= 0
        ax.bar(xs + (i - (len(hues) - 1) / 2) * width, heights, width, yerr=[below, errs], capsize=2.5,
               label=label_of(h))
    ax.set_xticks(xs)
    ax.set_xticklabels([category_label(c) for c in categories])


def heatmap(ax: Axes, df: pd.DataFrame, x: str, row: str, value: str, fig: Figure,
            x_label: Callable[[Any], str] = str, row_label: Callable[[Any], str] = str,
            colorbar_label: str = "") -> None:
    """Mean of `value` over repeats on a grid of `row` (y) by `x` (columns)."""
    stats = mean_over_repeats(df, [row, x], value)
    grid = stats.pivot(index=row, columns=x, values="mean").sort_index().sort_index(axis=1)
    image = ax.imshow(grid.values, aspect="auto", origin="lower", cmap="viridis")
    ax.set_xticks(range(len(grid.columns)))
    ax.set_xticklabels([x_label(c) for c in grid.columns], rotation=45, ha="right")
    ax.set_yticks(range(len(grid.index)))
    ax.set_yticklabels([row_label(r) for r in grid.index])
    bar = fig.colorbar(image, ax=ax)
    bar.set_label(colorbar_label or value)


def log_y_if_wide(ax: Axes, stats: pd.DataFrame, ratio: float = 50.0) -> None:
    """A log y axis when means and error bars span more than `ratio` (outliers of an emulated
    device would flatten every bar on a linear axis); the paper's linear axis otherwise."""
    means = stats["mean"][stats["mean"] > 0]
    if means.empty:
        return
    if (means + stats.loc[means.index, "std"]).max() / means.min() > ratio:
        ax.set_yscale("log")


def integer_x(ax: Axes, values: Sequence[Any] | None = None) -> None:
    """Whole numbers only on the x axis (threads, DIMMs): a tick per value of `values` when there
    are few (a single value gets the axis around it, not ticks 1.9 .. 2.1), else integer ticks."""
    xs = sorted({int(v) for v in values if pd.notna(v)}) if values is not None else []
    if 0 < len(xs) <= 16:
        ax.set_xticks(xs)
        if len(xs) == 1:
            ax.set_xlim(xs[0] - 1, xs[0] + 1)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def note(ax: Axes, text: str) -> None:
    """A message in an axis that has no data to show (the reason why)."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=8, wrap=True,
            color="0.35")


def legend(ax: Axes, title: str | None = None) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(title=title, fontsize=7, title_fontsize=7)
