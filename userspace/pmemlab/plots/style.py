"""Drawing helpers shared by the recipes: figures without pyplot (headless, no global state),
bandwidth series with 95 % CI error bars on a zero-based axis, latency bars of the median with
p5-p95 whiskers, ticks at the swept values, heatmaps on one colour scale, the papers' reference
values, loop-bound markers, the caption line and the emulation mark.

What an axis shows beyond its series (the error-bar statistic, hollow loop-bound markers) is
said in its legend's title, so the legend entries stay one per series."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

import math
import os
import tempfile
import textwrap

# matplotlib caches fonts under ~/.config; in the test guest that is read-only, and it warns
if not os.access(os.path.expanduser("~/.config"), os.W_OK):
    os.environ.setdefault("MPLCONFIGDIR", os.path.join(tempfile.gettempdir(), "pmemlab-matplotlib"))

import matplotlib  # noqa: E402

matplotlib.use("Agg")  # headless; must precede any pyplot import elsewhere

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.container import BarContainer, ErrorbarContainer  # noqa: E402
from matplotlib.cm import ScalarMappable  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.transforms import ScaledTranslation  # noqa: E402
from matplotlib.ticker import (  # noqa: E402
    FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator,
)

from pmemlab.analysis.resultset import (  # noqa: E402
    SPREAD_TEXT, Results, TimerStep, caption, count_text, mean_over_repeats, repeats_text, size_label, spread_text,
)
from pmemlab.analysis.stats import spread_of  # noqa: E402
from pmemlab.plots.marks import draw_notice, emulation_notice, notice_height  # noqa: E402
from pmemlab.plots.references import FAST, REPORT, Reference  # noqa: E402

CAPTION_GID = "pmemlab-caption"
REFERENCE_GID = "pmemlab-reference"  # a paper's value: Line2D whose data is the value
REFERENCE_LABEL_GID = "pmemlab-reference-label"
LOOP_BOUND_GID = "pmemlab-loop-bound"
LEGEND_NOTE_GID = "pmemlab-legend-note"  # a legend's notes where the axis has no series
TIMER_STEP_GID = "pmemlab-timer-step"  # a value below the clock's step, or the band under it
MEAN_GID = "pmemlab-mean"
MEAN_LABEL = "mean of the samples"
BW_LABEL = "Bandwidth (GB/s)"
LAT_LABEL = "Latency (ns)"
MEDIAN_LABEL = "Median latency (ns)"
LOG_NOTE = ", log scale"
LOOP_BOUND_NOTE = "hollow: loop-bound (measures the tool, not the memory)"
MAX_TICK_LABELS = 12
PAPERS = (REPORT, FAST)
OFF_SCALE = 4.0  # a reference further than this factor beyond the data is named, not drawn to scale


def new_figure(panels: int = 1, rows: int = 1, width_per_panel: float = 4.6, height: float = 3.6,
               sharey: bool = False) -> tuple[Figure, list[Axes]]:
    fig = Figure(figsize=(max(width_per_panel * panels, 5.0), height * rows + 0.5))
    axes = fig.subplots(rows, panels, sharey=sharey, squeeze=False)
    return fig, [ax for row in axes for ax in row]


# --------------------------------------------------------------------------
# the frame: title, caption, emulation mark
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class Frame:
    """What a figure carries around its axes: the caption under them and the EMULATED banner over
    them. A standalone figure (plot, plot-all, the gallery) carries both; the report's figures
    carry neither, because the page says each once (the caption as the figure's caption, the
    banner at the top), and keep the faint watermark, so that a panel cut out of the page is
    still marked."""

    caption: bool = True
    banner: bool = True


FRAME: ContextVar[Frame] = ContextVar("pmemlab_frame", default=Frame())


@contextmanager
def framed(frame: Frame) -> Iterator[None]:
    """Figures made inside the block are framed so (the report: Frame(caption=False, banner=False))."""
    token = FRAME.set(frame)
    try:
        yield
    finally:
        FRAME.reset(token)


def finish(fig: Figure, results: Results, title: str, extra: Sequence[str] = ()) -> Figure:
    """Title, the caption (run conditions, repeats, what the recipe adds) and, when the runs were
    emulated, the mark; then a layout that leaves room for all three (FRAME says which of the
    caption and the banner are drawn; the caption text is kept on the figure either way)."""
    frame = FRAME.get()
    notice = emulation_notice(results.rows)
    for ax in fig.axes:
        settle_limits(ax)
        say_what_log_scale_drops(ax)
    place_legends(fig)
    grow_for_legends_below(fig)
    height = fig.get_size_inches()[1]
    banner = notice_height(fig, notice) if frame.banner else 0.0  # inches
    fig.suptitle(title, fontsize=10, y=1 - (0.04 + banner) / height, va="top")
    # tight_layout adds the title's height below the rect's top itself: the rect only leaves the banner
    text = caption(results, extra)
    fig._pmemlab_caption = text
    top = 1 - max(banner - 0.08, 0.0) / height
    place_legends_below(fig)  # under the tick labels and the x label, then the layout makes room for it
    add_caption(fig, text if frame.caption else "", top=top)
    draw_notice(fig, notice, banner=frame.banner)
    return fig


WHISKER_CAP_GID = "pmemlab-whisker-cap"  # the p95 written where cap_whiskers stopped the axis under it
LOG_MARGIN = 1.25  # a log axis fitted to its data leaves this factor on each side
LINEAR_MARGIN = 0.05  # a linear one this share of the span


def drawn_values(ax: Axes, axis: str) -> np.ndarray[Any, Any]:
    """The data coordinates along `axis` ('x' or 'y') of every point `ax` draws: lines and
    markers, error bars and other collections, bars; not the papers' values (an off-scale one
    is named, not drawn to scale), not lines across the axes (axhline, axvline), not the whiskers
    cap_whiskers stopped (their p95 is written at the top). NaN and inf left out."""
    which = 0 if axis == "x" else 1
    out: list[np.ndarray[Any, Any]] = []
    capped = axis == "y" and any(t.get_gid() == WHISKER_CAP_GID for t in ax.texts)
    caps = {id(cap) for c in ax.containers for bars in [getattr(c, "errorbar", None) or c]
            if isinstance(bars, ErrorbarContainer) for cap in bars.lines[1]}
    for line in ax.get_lines():
        if line.get_gid() == REFERENCE_GID or line.get_transform() != ax.transData:
            continue
        data = np.asarray(line.get_xdata() if axis == "x" else line.get_ydata(), float).ravel()
        out.append(data[data <= ax.get_ylim()[1]] if capped and id(line) in caps else data)
    for coll in ax.collections:
        if coll.get_transform() != ax.transData and coll.get_offset_transform() != ax.transData:
            continue
        segments: list[Any] = list(getattr(coll, "get_segments", lambda: [])())
        points = [np.asarray(seg, float).reshape(-1, 2)[:, which] for seg in segments if len(seg)]
        if capped and points:
            points = [p[p <= ax.get_ylim()[1]] if p.size else p for p in points]
        if not segments and coll.get_offset_transform() == ax.transData:
            points = [np.asarray(coll.get_offsets(), float).reshape(-1, 2)[:, which]]
        out.extend(points)
    for container in ax.containers:
        if isinstance(container, BarContainer):
            for patch in container.patches:
                x, y, w, h = patch.get_x(), patch.get_y(), patch.get_width(), patch.get_height()
                out.append(np.asarray([x, x + w] if axis == "x" else [y + h], float))
    values: np.ndarray[Any, Any] = np.concatenate(out) if out else np.empty(0)
    finite: np.ndarray[Any, Any] = values[np.isfinite(values)]
    return finite


def settle_limits(ax: Axes) -> None:
    """The one check of every axis' limits, when the figure is finished (whatever set them, and
    whatever the scale was then): they are finite, positive on a log axis, and hold every point
    drawn_values gives. Limits that break this are fitted to the data (a log axis: its positive
    values, LOG_MARGIN beyond); limits that hold it stay as the recipe set them."""
    if ax.get_images() or ax.get_label() == "<colorbar>":
        return
    for axis in "xy":
        log = (ax.get_xscale() if axis == "x" else ax.get_yscale()) == "log"
        get, put = (ax.get_xlim, ax.set_xlim) if axis == "x" else (ax.get_ylim, ax.set_ylim)
        lo, hi = get()
        flipped = lo > hi
        lo, hi = min(lo, hi), max(lo, hi)
        values = drawn_values(ax, axis)
        if log:
            values = values[values > 0]
        broken = not (math.isfinite(lo) and math.isfinite(hi)) or (log and lo <= 0)
        if not values.size:
            if broken:
                new = (1.0, 10.0) if log else (0.0, 1.0)
                put(*(new[::-1] if flipped else new))
            continue
        vmin, vmax = float(values.min()), float(values.max())
        if not broken and lo <= vmin and vmax <= hi:
            continue
        if log:
            low, high = vmin / LOG_MARGIN, vmax * LOG_MARGIN
        else:
            pad = LINEAR_MARGIN * ((vmax - vmin) or abs(vmax) or 1.0)
            low, high = vmin - pad, vmax + pad
        if not broken:  # the recipe's limits, widened to the points they left out
            low, high = (lo if lo <= vmin else low), (hi if vmax <= hi else high)
        put(*((high, low) if flipped else (low, high)))


def dropped_on_log_scale(ax: Axes) -> str:
    """The note say_what_log_scale_drops gave `ax` ('' when it drops nothing)."""
    return getattr(ax, "_pmemlab_dropped", "")


def say_what_log_scale_drops(ax: Axes) -> None:
    """A log y axis cannot draw 0: a line or bar whose value is 0 (a median of 0 ns where the TSC
    did not tick between an access's start and end, as under software emulation) would vanish
    without a word. The axis says how many points it leaves out."""
    if ax.get_yscale() != "log":
        return
    values: list[float] = []
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer) and container.lines[0] is not None:
            values.extend(np.asarray(container.lines[0].get_ydata(), float))
        elif isinstance(container, BarContainer):
            values.extend(patch.get_height() for patch in container.patches)
    zeros = sum(1 for v in values if np.isfinite(v) and v <= 0)
    if not zeros:
        return
    text = f"{zeros} point{'s' if zeros > 1 else ''} at 0 (no tick between start and end): not drawn on the log scale"
    ax._pmemlab_dropped = text
    if hasattr(ax, "_pmemlab_legend"):  # with the legend's other notes (the data's bottom edge has no room for text)
        add_note(ax, text)
    else:
        ax.text(0.99, 0.01, text, transform=ax.transAxes, ha="right", va="bottom", fontsize=5.5, color="0.35")


def add_caption(fig: Figure, text: str, top: float) -> None:
    """The caption (target, machine, date, statistic, ...) under the axes, wrapped to the figure
    ('' : none, the axes take the room)."""
    width_in, height_in = fig.get_size_inches()
    per_line = max(int(width_in * 19.5), 40)
    lines = sum(max(1, math.ceil(len(part) / per_line)) for part in _wrap(text, per_line).split("\n")) if text else 0
    bottom = min(0.45, (lines * 0.125 + 0.12) / height_in) if text else 0.0
    try:
        fig.tight_layout(rect=(0, bottom, 1, top))
    except (ValueError, np.linalg.LinAlgError):  # pragma: no cover - degenerate layouts keep their positions
        pass
    if text:
        fig.text(0.01, 0.01, _wrap(text, per_line), fontsize=6.5, color="0.25", ha="left", va="bottom",
                 gid=CAPTION_GID, linespacing=1.3)


def _wrap(text: str, width: int) -> str:
    """Line breaks at the caption's ' · ' separators (a line broken there ends in ' ·'), else at
    spaces, so that no line exceeds `width`."""
    out: list[str] = []
    line = ""
    for part in text.split(" · "):
        if line and len(line) + 3 + len(part) > width:
            out.append(line + " ·")
            line = part
        else:
            line = f"{line} · {part}" if line else part
        while len(line) > width:
            cut = line.rfind(" ", 0, width)
            cut = cut if cut > width // 2 else width
            out.append(line[:cut])
            line = line[cut:].lstrip()
    out.append(line)
    return "\n".join(out)


def caption_of(fig: Figure) -> str:
    """The caption as one line (its fields joined by ' · '): as drawn, else as kept (a report figure)."""
    text = next((t.get_text() for t in fig.texts if t.get_gid() == CAPTION_GID), "")
    return " ".join(text.split("\n")) or getattr(fig, "_pmemlab_caption", "")


# --------------------------------------------------------------------------
# notes in the legend title
# --------------------------------------------------------------------------
def add_note(ax: Axes, text: str) -> None:
    notes: list[str] = getattr(ax, "_pmemlab_notes", [])
    if text and text not in notes:
        notes.append(text)
    ax._pmemlab_notes = notes


def notes_of(ax: Axes) -> list[str]:
    return list(getattr(ax, "_pmemlab_notes", []))


LEGEND_WRAP = 46  # characters per line of a legend entry or of its title


def legend(ax: Axes, title: str | None = None, outside: bool = True, below: bool | None = None) -> None:
    """The series' legend, outside the axes (never over the data, and the axis is never stretched
    to make room for it): on the right of a panel alone in its row, below a panel with others
    beside it (decided when the figure is finished, once every panel exists; `below` forces
    either); its title says what the glyphs mean (error bars, hollow markers). `outside` is kept
    for callers that name it: every legend is outside."""
    ax._pmemlab_legend = (title, below)
    _place_legend(ax, below if below is not None else False)


def _place_legend(ax: Axes, below: bool) -> None:
    title, _ = getattr(ax, "_pmemlab_legend", (None, None))
    lines = [textwrap.fill(t, 56 if below else 40) for t in (title, *notes_of(ax)) if t]
    handles, labels = ax.get_legend_handles_labels()
    for text in ax.texts:
        if text.get_gid() == LEGEND_NOTE_GID:
            text.remove()
    ax._pmemlab_legend_below = below
    if handles:
        labels = [textwrap.fill(label, LEGEND_WRAP) for label in labels]
        if below:
            ax.legend(handles, labels, title="\n".join(lines) or None, fontsize=7, title_fontsize=6.5,
                      loc="upper center", bbox_to_anchor=(0.5, 0.0), bbox_transform=_below(ax, 0.5),
                      borderaxespad=0.0, ncol=min(len(handles), 3 if max(map(len, labels)) < 16 else 2),
                      alignment="left")
        else:
            ax.legend(handles, labels, title="\n".join(lines) or None, fontsize=7, title_fontsize=6.5,
                      loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, alignment="left")
    elif lines:
        ax.text(1.02, 1.0, "\n".join(lines), transform=ax.transAxes, ha="left", va="top", fontsize=6.5,
                color="0.3", gid=LEGEND_NOTE_GID)


def place_legends(fig: Figure) -> None:
    """Every legend where it goes now that the figure has all its panels (legend())."""
    for ax in fig.axes:
        if hasattr(ax, "_pmemlab_legend"):
            _, below = ax._pmemlab_legend
            _place_legend(ax, below if below is not None else _row_panels(ax) > 1)


def _row_panels(ax: Axes) -> int:
    """How many data panels share the row of `ax` (colour bars left out)."""
    spec = ax.get_subplotspec()
    if spec is None:
        return 1
    rows = set(range(spec.rowspan.start, spec.rowspan.stop))
    count = 0
    for other in ax.figure.axes:
        other_spec = other.get_subplotspec()
        if other_spec is None or other.get_label() == "<colorbar>":
            continue
        if rows & set(range(other_spec.rowspan.start, other_spec.rowspan.stop)):
            count += 1
    return count


def grow_for_legends_below(fig: Figure) -> None:
    """The figure grows by the height of the tallest legend below a panel of each row, so that the
    panels keep the height the recipe gave them."""
    below = [ax for ax in fig.axes if getattr(ax, "_pmemlab_legend_below", False) and ax.get_legend()]
    if not below:
        return
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    per_row: dict[int, float] = {}
    for ax in below:
        spec = ax.get_subplotspec()
        row = spec.rowspan.start if spec is not None else 0
        inches = ax.get_legend().get_window_extent(renderer).height / fig.dpi
        per_row[row] = max(per_row.get(row, 0.0), inches + 0.1)
    width, height = fig.get_size_inches()
    fig.set_size_inches(width, height + sum(per_row.values()))


def _below(ax: Axes, inches: float) -> Any:
    """Axes coordinates moved down by `inches`: a place under the axes that keeps its distance
    whatever height the layout gives them."""
    return ax.transAxes + ScaledTranslation(0.0, -inches, ax.figure.dpi_scale_trans)


def place_legends_below(fig: Figure) -> None:
    """A legend below its panel starts just under the panel's x label and tick labels (their height
    in inches does not change with the layout)."""
    if not any(getattr(ax, "_pmemlab_legend_below", False) and ax.get_legend() for ax in fig.axes):
        return
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        box = ax.get_legend()
        if box is None or not getattr(ax, "_pmemlab_legend_below", False):
            continue
        area = ax.get_window_extent(renderer)
        axis = ax.xaxis.get_tightbbox(renderer)  # the tick labels and the label, where they are drawn
        low = min(axis.y0, area.y0) if axis is not None else area.y0
        box.set_bbox_to_anchor((0.5, 0.0), transform=_below(ax, (area.y0 - low + 6) / fig.dpi))


def ci_note(repeats: Iterable[int], kinds: Iterable[str] | None = None) -> str:
    """What the error bars are: 'error bars: min-max of 2 repeats', 'error bars: 95 % CI over 3
    repeats' (spread_text: the rule is stats.spread_of); '1 repeat: no error bars' without any."""
    counts = [int(n) for n in repeats if pd.notna(n)]
    if kinds is None:
        kinds = [spread_of([0.0] * n)[2] for n in counts]
    return spread_text(kinds, counts)


def spread_note(stats: pd.DataFrame) -> str:
    """'median; whiskers p5-p95 of 40 k samples (2 repeats pooled)'."""
    if stats.empty:
        return ""
    if not stats["from_histogram"].any():
        return "median of each run, averaged over repeats (no histogram: no spread)"
    samples = stats.loc[stats["from_histogram"], "samples"]
    span = count_text(samples.min()) if samples.min() == samples.max() else \
        f"{count_text(samples.min())} to {count_text(samples.max())}"
    repeats = stats["repeats"]
    pooled = f"{repeats_text(repeats)} pooled" if repeats.max() > 1 else "1 repeat"
    return f"median; whiskers {SPREAD_TEXT} of {span} samples per point ({pooled})"


# --------------------------------------------------------------------------
# series
# --------------------------------------------------------------------------
DODGE_LOG2 = 0.09  # octaves between neighbouring series' points on a log2 axis
DODGE_LINEAR = 0.035  # of the smallest step between x values on a linear axis


def dodge(xs: Sequence[float], index: int, count: int, log: bool | None) -> np.ndarray[Any, Any]:
    """The x positions of series `index` of `count` that share x values, moved apart so that
    their error bars do not hide each other (log: by octaves; linear: by a share of the smallest
    x step; None: not moved)."""
    values = np.asarray(xs, float)
    if log is None or count < 2:
        return values
    shift = index - (count - 1) / 2
    moved: np.ndarray[Any, Any]
    if log:
        moved = values * 2.0 ** (shift * DODGE_LOG2)
        return moved
    steps = np.diff(np.unique(values))
    moved = values + shift * DODGE_LINEAR * (float(steps.min()) if len(steps) else 1.0)
    return moved


def series_conditions(grp: pd.DataFrame, name: Any, statistic: str, x: str) -> dict[str, Any]:
    """The conditions a series was measured under, from the rows it was drawn from: its name (the
    op or access the recipe groups by), the statistic drawn, and the thread count and prefetcher
    state where all its rows share one (and the x axis is not that parameter)."""
    out: dict[str, Any] = {"series": str(name), "statistic": statistic}
    for column, cast in (("threads", int), ("prefetch", str)):
        if column != x and column in grp and grp[column].dropna().nunique() == 1:
            out[column] = cast(grp[column].dropna().iloc[0])
    return out


def series(ax: Axes, df: pd.DataFrame, x: str, y: str, hue: str | None = None,
           label_of: Callable[[Any], str] = str, order: Sequence[Any] | None = None,
           marker: str = "o", linestyle: str = "-", prefix: str = "", log_x: bool | None = None,
           name_of: Callable[[Any], Any] = lambda v: v, **style: Any) -> pd.DataFrame:
    """One line per value of `hue`: the mean of `y` over repeats at each `x`, error bars the
    spread stats.spread_of gives (the 95 % CI of the mean from 3 repeats, the repeats' range below,
    none for one repeat); points where a repeat was loop-bound get hollow markers. Several series
    with error bars are moved apart along x (`log_x`: the axis' kind; None: not moved). Each drawn
    series keeps its conditions (series_conditions: `name_of(hue value)` is its name) for the
    papers' values. Adds the error-bar note to the axis. Returns the statistics."""
    groups = [(None, df)] if hue is None else list(df.groupby(hue, sort=True, dropna=False))
    if order is not None and hue is not None:
        rank = {v: i for i, v in enumerate(order)}
        groups.sort(key=lambda g: rank.get(g[0], len(rank)))
    every_stats = [(value, grp, mean_over_repeats(grp, [x], y).sort_values(x)) for value, grp in groups]
    every_stats = [(v, g, st) for v, g, st in every_stats if not st.empty]
    spread = any((st["spread"] != "").any() for _, _, st in every_stats)
    drawn = []
    for i, (value, grp, stats) in enumerate(every_stats):
        label = prefix + label_of(value) if hue is not None else (prefix or y)
        xs = dodge(stats[x], i, len(every_stats), log_x if spread else None)
        yerr = [stats["mean"] - stats["lo"], stats["hi"] - stats["mean"]] if (stats["spread"] != "").any() else None
        container = ax.errorbar(xs, stats["mean"], yerr=yerr, marker=marker, markersize=4, linestyle=linestyle,
                                capsize=2.5, label=label, **style)
        container._pmemlab_x = np.asarray(stats[x], float)
        container._pmemlab_conditions = series_conditions(grp, name_of(value), "mean", x)
        mark_loop_bound(ax, xs, stats["mean"], stats["loop_bound"], container.lines[0].get_color(), marker)
        drawn.append(stats.assign(series=label))
    if drawn:
        every = pd.concat(drawn, ignore_index=True)
        add_note(ax, ci_note(every["n"], every["spread"]))
        return every
    return pd.DataFrame()


def mark_loop_bound(ax: Axes, xs: Iterable[Any], ys: Iterable[Any], bound: Iterable[bool], color: str,
                    marker: str = "o") -> None:
    """Hollow markers over the points whose bandwidth the measuring loop bounds."""
    hollow(ax, xs, ys, bound, color, LOOP_BOUND_NOTE, LOOP_BOUND_GID, marker)


def hollow(ax: Axes, xs: Iterable[Any], ys: Iterable[Any], which: Iterable[bool], color: str, why: str,
           gid: str, marker: str = "o") -> None:
    """Hollow markers over the points `which` selects; `why` goes into the legend title."""
    pts = [(x, y) for x, y, b in zip(xs, ys, which) if b]
    if not pts:
        return
    # color= too: a plot without one takes the next colour of the cycle, and the series drawn after
    # these markers would change colour with the number of series that have hollow points
    ax.plot([p[0] for p in pts], [p[1] for p in pts], linestyle="none", marker=marker, markersize=6, color=color,
            markerfacecolor="white", markeredgecolor=color, markeredgewidth=1.2, gid=gid, zorder=5)
    add_note(ax, why)


def zero_based(ax: Axes) -> None:
    """A bandwidth axis starts at 0 (a truncated axis exaggerates differences)."""
    ax.set_ylim(bottom=0.0, top=max(ax.get_ylim()[1], 1e-9))


def latency_bars(ax: Axes, stats: pd.DataFrame, category: str, hue: str, categories: Sequence[Any],
                 hues: Sequence[Any], label_of: Callable[[Any], str] = str,
                 category_label: Callable[[Any], str] = str, step: TimerStep | None = None,
                 conditions: Callable[[Any, Any], dict[str, Any]] | None = None,
                 means: bool = False) -> dict[tuple[Any, Any], float]:
    """Bars of the median (stats['p50']) per category, one colour per hue value, whiskers from
    stats['p5'] to stats['p95']; with `means`, the mean of the samples (stats['mean']) as a white
    diamond on each bar. A median below the timer `step` (one the clock did not resolve) gets a
    hatched box up to the step. `conditions(category, hue)`: what each bar was measured under (for
    the papers' values). Returns the x position of each (category, hue) bar."""
    width = 0.8 / max(len(hues), 1)
    xs = np.arange(len(categories))
    where: dict[tuple[Any, Any], float] = {}
    below = 0
    for i, h in enumerate(hues):
        sub = stats[stats[hue] == h].set_index(category)
        heights = np.array([sub["p50"].get(c, np.nan) for c in categories], float)
        lo = np.array([sub["p5"].get(c, np.nan) for c in categories], float)
        hi = np.array([sub["p95"].get(c, np.nan) for c in categories], float)
        pos = xs + (i - (len(hues) - 1) / 2) * width
        bars = ax.bar(pos, heights, width, yerr=[np.clip(heights - lo, 0, None), np.clip(hi - heights, 0, None)],
                      capsize=2.5, label=label_of(h), error_kw={"elinewidth": 0.9})
        color = bars.patches[0].get_facecolor() if bars.patches else "0.5"
        if conditions is not None:
            bars._pmemlab_conditions = {c: {**conditions(c, h), "statistic": "median"}
                                        for c in categories}
        if means and "mean" in sub:
            mean = np.array([sub["mean"].get(c, np.nan) for c in categories], float)
            marks = ax.plot(pos, mean, linestyle="none", marker="D", markersize=4.5, markerfacecolor="white",
                            markeredgecolor="black", markeredgewidth=0.9, zorder=4, gid=MEAN_GID,
                            label=MEAN_LABEL if i == 0 else "_nolegend_")[0]
            if conditions is not None:
                marks._pmemlab_conditions = {c: {**conditions(c, h), "statistic": "mean"}
                                             for c in categories}
            marks._pmemlab_hue = h
        if step is not None and step.resolved:
            for x, value in zip(pos, heights):
                if np.isfinite(value) and value < step.ns:
                    below += 1
                    ax.add_patch(Rectangle((x - width / 2, 0), width, step.ns, fill=False, hatch="////",
                                           edgecolor=color, linewidth=0.6, gid=TIMER_STEP_GID, zorder=3))
        where.update({(c, h): float(p) for c, p in zip(categories, pos)})
    if below and step is not None:
        add_note(ax, f"hatched: {below} median{'s' if below > 1 else ''} below the timer step "
                     f"({step.ns:.3g} ns): not resolved")
    ax.set_xticks(xs)
    ax.set_xticklabels([category_label(c) for c in categories])
    return where


WHISKER_ROOM = 3.0  # a linear latency axis shows up to this many times the largest median


def cap_whiskers(ax: Axes, stats: pd.DataFrame, where: dict[tuple[Any, Any], float], category: str,
                 hue: str, scope: pd.DataFrame | None = None) -> None:
    """On a linear axis, whiskers far above every median (an emulated machine's p95 can be 50x its
    median) would flatten the bars: the axis stops at 3x the largest median (or above the papers'
    values already drawn, which stay in view) and each whisker that leaves it is labelled with its
    p95. `scope`: the statistics of every panel sharing the axis. Call it after draw_references:
    a reference drawn later would move the axis top away from the labels."""
    scope = stats if scope is None else scope
    medians = pd.to_numeric(scope["p50"], errors="coerce").dropna()
    if medians.empty or ax.get_yscale() == "log":
        return
    limit = WHISKER_ROOM * float(medians.max())
    in_view = [v for vertical, v in reference_points(ax) if not vertical and v <= ax.get_ylim()[1]]  # not off scale
    # the means drawn on the bars (latency_bars' diamonds) stay in view: a point the axis cut off would be lost
    means = list(pd.to_numeric(scope["mean"], errors="coerce").dropna()) if "mean" in scope else []
    top = max([v for v in pd.to_numeric(scope["p95"], errors="coerce").dropna() if v <= limit]
              + [float(medians.max())] + in_view + means) * 1.12
    p95 = pd.to_numeric(stats["p95"], errors="coerce")
    if top >= ax.get_ylim()[1]:
        return
    ax.set_ylim(0, top)
    for row, value in zip(stats.itertuples(), p95):
        x = where.get((getattr(row, category), getattr(row, hue)))
        if x is not None and pd.notna(value) and value > top:
            ax.annotate(f"p95\n{value:,.0f}", xy=(x, top), xytext=(-3, -2), textcoords="offset points",
                        ha="right", va="top", fontsize=5.5, color="0.2", gid=WHISKER_CAP_GID)


def latency_series(ax: Axes, stats: pd.DataFrame, x: str, label: str, marker: str = "o",
                   step: TimerStep | None = None, log_x: bool | None = None, index: int = 0, count: int = 1,
                   conditions: dict[str, Any] | None = None) -> None:
    """A line of medians against `x` with p5-p95 whiskers (asymmetric error bars), moved along x
    as series `index` of `count` (dodge) so that whiskers at one x do not hide each other. A
    median below the timer `step` is not a measured value: it is drawn as an open triangle at
    the step (an upper bound), not on the line (a log axis could not show its 0 anyway)."""
    stats = stats.sort_values(x)
    xs = dodge(stats[x], index, count, log_x)
    p50 = stats["p50"].to_numpy(float)
    unresolved = np.zeros(len(p50), bool)
    if step is not None and step.resolved:
        unresolved = np.isfinite(p50) & (p50 < step.ns)
    shown = np.where(unresolved, np.nan, p50)
    lo = np.clip(shown - stats["p5"].to_numpy(float), 0, None)
    hi = np.clip(stats["p95"].to_numpy(float) - shown, 0, None)
    yerr = [lo, hi] if stats["from_histogram"].any() else None
    container = ax.errorbar(xs, shown, yerr=yerr, marker=marker, markersize=4, capsize=2.5, label=label)
    container._pmemlab_x = np.asarray(stats[x], float)
    container._pmemlab_conditions = dict(conditions or {"series": label, "statistic": "median"})
    if unresolved.any() and step is not None:
        ax.plot(xs[unresolved], [step.ns] * int(unresolved.sum()), linestyle="none", marker="v", markersize=5,
                color=container.lines[0].get_color(), markerfacecolor="white", gid=TIMER_STEP_GID, zorder=5)
        add_note(ax, f"▽: median below the timer step ({step.ns:.3g} ns), not resolved")


def mark_timer_step(ax: Axes, step: TimerStep | None) -> None:
    """A grey band from the axis' bottom up to the timer step: values inside it are not resolved."""
    if step is None or not step.resolved:
        return
    bottom = ax.get_ylim()[0] if ax.get_yscale() == "log" else 0.0
    ax.axhspan(bottom, step.ns, color="0.88", zorder=0.2, linewidth=0, gid=TIMER_STEP_GID,
               label=f"below the timer step ({step.ns:.3g} ns)")


# --------------------------------------------------------------------------
# axes and ticks at the data
# --------------------------------------------------------------------------
def _thin(values: Sequence[float]) -> set[float]:
    """The values that get a label: all when few, else every other one, always the first and last."""
    if len(values) <= MAX_TICK_LABELS:
        return set(values)
    step = math.ceil(len(values) / MAX_TICK_LABELS)
    keep = set(values[::step])
    keep.add(values[-1])
    return keep


def data_ticks(ax: Axes, values: Iterable[Any], fmt: Callable[[float], str] = lambda v: f"{v:g}",
               axis: str = "x") -> None:
    """A tick at every swept value of `axis` (labels thinned when there are more than 12)."""
    ticks = sorted({float(v) for v in values if pd.notna(v)})
    if not ticks:
        return
    labelled = _thin(ticks)
    target = ax.xaxis if axis == "x" else ax.yaxis
    target.set_major_locator(FixedLocator(ticks))
    target.set_major_formatter(FuncFormatter(lambda v, _pos: fmt(v) if _near(v, labelled) else ""))
    target.set_minor_locator(NullLocator())


def _near(v: float, values: set[float]) -> bool:
    return any(abs(v - w) <= 1e-9 * max(abs(w), 1.0) for w in values)


def bytes_axis(ax: Axes, ticks: Iterable[Any] | None = None, axis: str = "x") -> None:
    """A log2 axis labelled in B / KiB / MiB / GiB with a tick at every swept size in `ticks`."""
    if axis == "x":
        ax.set_xscale("log", base=2)
        ax.tick_params(axis="x", labelrotation=45, labelsize=7)
    else:
        ax.set_yscale("log", base=2)
    if ticks is not None:
        data_ticks(ax, ticks, lambda v: size_label(v) if v > 0 else "", axis)


def integer_x(ax: Axes, values: Sequence[Any] | None = None) -> None:
    """Whole numbers only on the x axis (threads, DIMMs): a tick per value of `values` (a single
    value gets the axis around it, not ticks 1.9 .. 2.1), else integer ticks."""
    xs = sorted({int(v) for v in values if pd.notna(v)}) if values is not None else []
    if xs:
        data_ticks(ax, xs, lambda v: f"{v:g}")
        if len(xs) == 1:
            ax.set_xlim(xs[0] - 1, xs[0] + 1)
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def log_label(label: str) -> str:
    """'Latency (ns)' -> 'Latency (ns, log scale)'."""
    if not label or LOG_NOTE in label:
        return label
    return label[:-1] + f"{LOG_NOTE})" if label.endswith(")") else label + " (log scale)"


def log_y(ax: Axes) -> None:
    """A log latency axis, said in its label (never silently); 1-2-5 labels where it spans less
    than two decades (else a single power of ten may be the only label)."""
    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    if lo > 0 and hi / lo < 100:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel(log_label(ax.get_ylabel()))


def note(ax: Axes, text: str) -> None:
    """A message in an axis that has no data to show (the reason why)."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=8, wrap=True,
            color="0.35")


# --------------------------------------------------------------------------
# heatmaps on one colour scale
# --------------------------------------------------------------------------
def shared_norm(frames: Iterable[pd.DataFrame], keys: Sequence[str], value: str) -> Normalize:
    """One colour scale for every heatmap of a figure: 0 to the largest mean of any of them."""
    top = 0.0
    for df in frames:
        stats = mean_over_repeats(df, keys, value)
        if not stats.empty:
            top = max(top, float(stats["mean"].max()))
    return Normalize(vmin=0.0, vmax=top or 1.0)


def heatmap(ax: Axes, df: pd.DataFrame, x: str, row: str, value: str, norm: Normalize,
            x_label: Callable[[Any], str] = str, row_label: Callable[[Any], str] = str, cmap: str = "viridis") -> None:
    """Mean of `value` over repeats on a grid of `row` (y) by `x` (columns), on the colour scale
    `norm`; a cell where a repeat was loop-bound is hatched (it measures the tool)."""
    stats = mean_over_repeats(df, [row, x], value)
    grid = stats.pivot(index=row, columns=x, values="mean").sort_index().sort_index(axis=1)
    bound = stats.pivot(index=row, columns=x, values="loop_bound").reindex_like(grid).fillna(False)
    ax.imshow(grid.values, aspect="auto", origin="lower", cmap=cmap, norm=norm)
    for (r, c), flag in np.ndenumerate(bound.to_numpy(bool)):
        if flag:
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, hatch="///", edgecolor="white",
                                   linewidth=0, gid=LOOP_BOUND_GID))
    ax.set_xticks(range(len(grid.columns)))
    ax.set_xticklabels([x_label(c) for c in grid.columns], rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(grid.index)))
    ax.set_yticklabels([row_label(r) for r in grid.index], fontsize=8)


def shared_colorbar(fig: Figure, cax: Axes, norm: Normalize, label: str, cmap: str = "viridis") -> None:
    """The one colour bar, in its own axes `cax`, of every heatmap drawn with `norm`."""
    cax.set_label("<colorbar>")
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), cax=cax)
    bar.set_label(label)


# --------------------------------------------------------------------------
# the papers' values
# --------------------------------------------------------------------------
Candidate = tuple[str, dict[str, Any], Any]  # a series a paper value may sit on: (label, conditions, colour)


def series_on(ax: Axes) -> list[Candidate]:
    """Every series drawn on `ax` with the conditions it was measured under (series() and
    latency_series() keep them): where a paper value may belong."""
    out = []
    for container in ax.containers:
        cond = getattr(container, "_pmemlab_conditions", None)
        if isinstance(cond, dict) and "series" in cond and hasattr(container, "lines"):
            out.append((container.get_label(), cond, container.lines[0].get_color()))
    for line in ax.get_lines():
        cond = getattr(line, "_pmemlab_conditions", None)
        if isinstance(cond, dict) and "series" in cond and line.get_gid() != MEAN_GID:
            out.append((line.get_label(), cond, line.get_color()))
    return out


def bar_candidates(ax: Axes, category: Any, hue_label: str) -> list[Candidate]:
    """The series a paper value at bar `category` of `hue_label` may sit on: the mean marker and the
    bar itself (latency_bars keeps what each was measured under)."""
    out: list[Candidate] = []
    for line in ax.get_lines():
        cond = getattr(line, "_pmemlab_conditions", None)
        if line.get_gid() == MEAN_GID and isinstance(cond, dict) and str(getattr(line, "_pmemlab_hue", "")) == hue_label:
            if category in cond:
                out.append((f"{hue_label}: {MEAN_LABEL}", cond[category], "black"))
    for container in ax.containers:
        cond = getattr(container, "_pmemlab_conditions", None)
        if isinstance(container, BarContainer) and container.get_label() == hue_label and isinstance(cond, dict):
            if category in cond:
                out.append((f"{hue_label}: median", cond[category], container.patches[0].get_facecolor()))
    return out


NEUTRAL = "0.3"  # a paper value that no series of ours matches: drawn apart from every series' colour


def reference_label(ref: Reference, on: str | None) -> str:
    """The legend entry of a paper value: its citation, and its own conditions unless it sits on a
    series measured the same way."""
    return ref.citation if on is not None or not ref.conditions else f"{ref.citation} ({ref.conditions})"


def draw_references(ax: Axes, refs: Sequence[Reference], at: Callable[[Reference], float | None] = lambda r: None,
                    candidates: Callable[[Reference], Sequence[Candidate]] | None = None,
                    color_of: Callable[[Reference], str | None] = lambda r: None) -> None:
    """Each value as a dashed line (axis 'y': horizontal, 'x': vertical), as a point (`ref.at`),
    or as a black bar marker at the x position `at(ref)` gives (a category of a bar chart) with
    the value written beside it. A value sits on the first of `candidates(ref)` (default: every
    series on the axis) measured as it was (Reference.matches: series, statistic, threads,
    prefetchers) and takes its colour; where none is, it is drawn in grey (or `color_of(ref)`)
    and its legend entry says its own conditions. Each drawn marker keeps the value and the
    series it sits on (`_pmemlab_ref`, `_pmemlab_on`). A value further than 4x beyond the data is
    not drawn to scale: a note at the axis edge names it."""
    if not refs:
        return
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    stacked = {"top": 0, "bottom": 0}
    drawn: list[tuple[Reference, str | None, Any]] = getattr(ax, "_pmemlab_refs", [])

    def off_note(text: str, edge: str, color: str) -> None:
        """An off-scale value named under the axis (below its label), one line each."""
        k = stacked["top"] + stacked["bottom"]
        stacked[edge] += 1
        ax.annotate(text, xy=(0.0, 0.0), xycoords="axes fraction", xytext=(0, -34 - 8 * k),
                    textcoords="offset points", ha="left", va="top", fontsize=5.5, color=color,
                    gid=REFERENCE_LABEL_GID, annotation_clip=False)

    def keep(artist: Any, ref: Reference, on: str | None) -> None:
        artist._pmemlab_ref = ref
        artist._pmemlab_on = on
        drawn.append((ref, on, artist))

    for ref in refs:
        options = candidates(ref) if candidates is not None else series_on(ax)
        match = next(((label, colour) for label, cond, colour in options if ref.matches(cond)), None)
        on = match[0] if match else None
        color = match[1] if match else (color_of(ref) or NEUTRAL)
        text = reference_label(ref, on)
        pos = at(ref)
        if ref.axis == "y":
            log = ax.get_yscale() == "log"
            above, below = ref.value > y1 * OFF_SCALE, log and ref.value < y0 / OFF_SCALE
            if pos is not None:
                label = f"{ref.source} (paper values{'' if on else ', ' + ref.conditions})"
                if label in ax.get_legend_handles_labels()[1]:
                    label = "_nolegend_"
                (artist,) = ax.plot([pos], [ref.value], marker="_", markersize=16, markeredgewidth=2.2, color="black",
                                    linestyle="none", gid=REFERENCE_GID, zorder=6, label=label)
                keep(artist, ref, on)
                if not (above or below):  # beside the marker: the bar's whisker runs through its middle
                    ax.annotate(f"{ref.value:g}", xy=(pos, ref.value), xytext=(10, 0), textcoords="offset points",
                                ha="left", va="center", fontsize=5.5, gid=REFERENCE_LABEL_GID)
            elif ref.at is not None:
                (artist,) = ax.plot([ref.at], [ref.value], marker="*", markersize=9, color=color, linestyle="none",
                                    gid=REFERENCE_GID, zorder=6, label="_nolegend_" if above or below else text)
                keep(artist, ref, on)
                x1 = max(x1, ref.at * 1.6) if ax.get_xscale() == "log" else max(x1, ref.at * 1.05)
            else:
                artist = ax.axhline(ref.value, color=color, linestyle="--", linewidth=1.0, gid=REFERENCE_GID,
                                    zorder=1.5, label="_nolegend_" if above or below else text)
                keep(artist, ref, on)
            if above or below:
                off_note(f"{'↑' if above else '↓'} {text} (off scale)", "top" if above else "bottom", color)
            else:
                y1 = max(y1, ref.value * (1.6 if log else 1.12))
                y0 = min(y0, ref.value / 1.6) if log else y0
        else:
            off = ref.value > x1 * OFF_SCALE or ref.value < x0 / OFF_SCALE
            artist = ax.axvline(ref.value, color=color, linestyle="--", linewidth=1.0, gid=REFERENCE_GID, zorder=1.5,
                                label="_nolegend_" if off else text)
            keep(artist, ref, on)
            if off:
                off_note(f"{'→' if ref.value > x1 else '←'} {text} (off scale)", "bottom", color)
            else:
                log = ax.get_xscale() == "log"
                x0 = min(x0, ref.value / 1.3) if log else min(x0, ref.value)
                x1 = max(x1, ref.value * 1.3) if log else max(x1, ref.value * 1.05)
    ax._pmemlab_refs = drawn
    if (x0, x1) != tuple(ax.get_xlim()):
        ax.set_xlim(x0, x1)
    if (y0, y1) != tuple(ax.get_ylim()):
        ax.set_ylim(y0, y1)


def references_drawn(ax: Axes) -> list[tuple[Reference, str | None, Any]]:
    """(paper value, the label of the series it sits on or None, its artist) of every value drawn on `ax`."""
    return list(getattr(ax, "_pmemlab_refs", []))


def is_reference_label(label: str) -> bool:
    """A legend entry of a paper value (not a series)."""
    return label.startswith(PAPERS)


def reference_points(ax: Axes) -> list[tuple[bool, float]]:
    """(vertical, value) of each reference marker drawn on `ax`: an x value for a vertical line,
    else a y value (a horizontal line or a bar marker)."""
    out = []
    for line in ax.get_lines():
        if line.get_gid() == REFERENCE_GID:
            xs, ys = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
            vertical = xs.size == 2 and xs[0] == xs[1] and list(ys) == [0.0, 1.0]  # axvline
            out.append((vertical, float(xs[0] if vertical else ys[0])))
    return out


def references_of(ax: Axes) -> list[float]:
    """The values of the reference markers drawn on `ax` (for tests and the report)."""
    return [value for _, value in reference_points(ax)]
