"""Drawing helpers shared by the recipes: figures without pyplot (headless, no global state),
bandwidth series with 95 % CI error bars on a zero-based axis, latency bars of the median with
p5-p95 whiskers, ticks at the swept values, heatmaps on one colour scale, the papers' reference
values, loop-bound markers, the caption line and the emulation mark.

What an axis shows beyond its series (the error-bar statistic, hollow loop-bound markers) is
said in its legend's title, so the legend entries stay one per series."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

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
from matplotlib.ticker import (  # noqa: E402
    FixedLocator, FuncFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator,
)

from pmemlab.plots.data import (  # noqa: E402
    SPREAD_TEXT, Results, caption, count_text, mean_over_repeats, repeats_text, size_label,
)
from pmemlab.plots.marks import draw_notice, emulation_notice, notice_height  # noqa: E402
from pmemlab.plots.references import FAST, REPORT, Reference  # noqa: E402

CAPTION_GID = "pmemlab-caption"
REFERENCE_GID = "pmemlab-reference"  # a paper's value: Line2D whose data is the value
REFERENCE_LABEL_GID = "pmemlab-reference-label"
LOOP_BOUND_GID = "pmemlab-loop-bound"
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
def finish(fig: Figure, results: Results, title: str, extra: Sequence[str] = ()) -> Figure:
    """Title, the caption (run conditions, repeats, what the recipe adds) and, when the runs were
    emulated, the mark; then a layout that leaves room for all three."""
    notice = emulation_notice(results.rows)
    height = fig.get_size_inches()[1]
    banner = notice_height(fig, notice)  # inches
    fig.suptitle(title, fontsize=10, y=1 - (0.04 + banner) / height, va="top")
    # tight_layout adds the title's height below the rect's top itself: the rect only leaves the banner
    for ax in fig.axes:
        say_what_log_scale_drops(ax)
    add_caption(fig, caption(results, extra), top=1 - max(banner - 0.08, 0.0) / height)
    make_room_for_legends(fig)
    draw_notice(fig, notice)
    return fig


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
    box = ax.get_legend()
    if box is not None:  # with the legend's other notes (the data's bottom edge has no room for text)
        title = box.get_title()
        title.set_text("\n".join(t for t in (title.get_text(), textwrap.fill(text, 44)) if t))
    ax._pmemlab_dropped = text  # type: ignore[attr-defined]
    if box is None:
        ax.text(0.99, 0.01, text, transform=ax.transAxes, ha="right", va="bottom", fontsize=5.5, color="0.35")


def add_caption(fig: Figure, text: str, top: float) -> None:
    """The caption (target, machine, date, statistic, ...) under the axes, wrapped to the figure."""
    width_in, height_in = fig.get_size_inches()
    per_line = max(int(width_in * 19.5), 40)
    lines = sum(max(1, math.ceil(len(part) / per_line)) for part in _wrap(text, per_line).split("\n"))
    bottom = min(0.45, (lines * 0.125 + 0.12) / height_in)
    try:
        fig.tight_layout(rect=(0, bottom, 1, top))
    except (ValueError, np.linalg.LinAlgError):  # pragma: no cover - degenerate layouts keep their positions
        pass
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
    """The caption as one line (its fields joined by ' · '), as drawn."""
    text = next((t.get_text() for t in fig.texts if t.get_gid() == CAPTION_GID), "")
    return " ".join(text.split("\n"))


# --------------------------------------------------------------------------
# notes in the legend title
# --------------------------------------------------------------------------
def add_note(ax: Axes, text: str) -> None:
    notes: list[str] = getattr(ax, "_pmemlab_notes", [])
    if text and text not in notes:
        notes.append(text)
    ax._pmemlab_notes = notes  # type: ignore[attr-defined]


def notes_of(ax: Axes) -> list[str]:
    return list(getattr(ax, "_pmemlab_notes", []))


def legend(ax: Axes, title: str | None = None, outside: bool = False) -> None:
    """The series' legend; its title says what the glyphs mean (error bars, hollow markers).
    `outside`: to the right of the axis (bar charts leave no free corner)."""
    lines = [textwrap.fill(t, 44) for t in (title, *notes_of(ax)) if t]
    if ax.get_legend_handles_labels()[0]:
        where = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)} if outside else {}
        ax.legend(title="\n".join(lines) or None, fontsize=7, title_fontsize=6.5, **where)
        ax._pmemlab_legend_outside = outside  # type: ignore[attr-defined]
    elif lines:
        ax.text(0.99, 0.99, "\n".join(lines), transform=ax.transAxes, ha="right", va="top", fontsize=6.5,
                color="0.3")


def make_room_for_legends(fig: Figure) -> None:
    """After the layout: a legend that 'best' could only place over the data (its points or the
    lines joining them) gets room above them instead (linear axes from 0, log axes): the top rises
    until the data clear the legend's height, and the legend moves to the upper corner with less
    under it."""
    for ax in fig.axes:
        box = ax.get_legend()
        if box is None or getattr(ax, "_pmemlab_legend_outside", True):
            continue
        corner = _make_room(ax, box)
        if corner:
            title = box.get_title().get_text()
            ax.legend(title=title or None, fontsize=7, title_fontsize=6.5, loc=corner)


def _make_room(ax: Axes, box: Any) -> str | None:
    log = ax.get_yscale() == "log"
    if not log and (ax.get_yscale() != "linear" or ax.get_ylim()[0] != 0):
        return None
    fig = ax.figure
    if not hasattr(fig.canvas, "get_renderer"):
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    renderer = fig.canvas.get_renderer()
    frame = box.get_window_extent(renderer)
    area = ax.get_window_extent(renderer)
    points = np.concatenate([drawn_path(line) for line in ax.get_lines()  # data, not axhline/axvline marks
                             if line.get_gid() != REFERENCE_GID and line.get_transform() is ax.transData]
                            or [np.empty((0, 2))])
    inside = (points[:, 0] >= frame.x0) & (points[:, 0] <= frame.x1) & (points[:, 1] >= frame.y0) & \
             (points[:, 1] <= frame.y1)
    if not inside.any() or area.height <= 0:
        return None
    share = min(frame.height / area.height + 0.06, 0.7)
    bottom, top = ax.get_ylim()
    if log:  # the same share of the height, in decades
        ax.set_ylim(bottom, bottom * (top / bottom) ** (1 / (1 - share)))
    else:
        ax.set_ylim(bottom, top / (1 - share))
    left_side = (points[:, 0] < area.x0 + area.width / 2).sum()
    return "upper left" if left_side <= len(points) - left_side else "upper right"


def drawn_path(line: Any, per_segment: int = 24) -> np.ndarray:
    """Display coordinates of a line's data points and, where it draws a line between them, of
    `per_segment` points along each segment (what a legend must not cover)."""
    xy = np.column_stack([np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)])
    xy = line.get_transform().transform(xy) if len(xy) else np.empty((0, 2))
    xy = xy[np.isfinite(xy).all(axis=1)]
    if len(xy) < 2 or line.get_linestyle() in ("None", "none", "", " "):
        return xy
    t = np.linspace(0.0, 1.0, per_segment, endpoint=False)[None, :, None]
    along = (xy[:-1, None, :] + t * (xy[1:, None, :] - xy[:-1, None, :])).reshape(-1, 2)
    return np.concatenate([along, xy[-1:]])


def ci_note(repeats: Iterable[int]) -> str:
    """'error bars: 95 % CI over 2 repeats' ('1 repeat: no error bars' when none can be drawn)."""
    values = [int(n) for n in repeats if pd.notna(n)]
    if not values or max(values) < 2:
        return "1 repeat: no error bars"
    return f"error bars: 95 % CI over {repeats_text(values)}"


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
def series(ax: Axes, df: pd.DataFrame, x: str, y: str, hue: str | None = None,
           label_of: Callable[[Any], str] = str, order: Sequence[Any] | None = None,
           marker: str = "o", linestyle: str = "-", prefix: str = "") -> pd.DataFrame:
    """One line per value of `hue`: the mean of `y` over repeats at each `x`, error bars the 95 %
    confidence interval of that mean (none for a single repeat); points where a repeat was
    loop-bound get hollow markers. Adds the error-bar note to the axis. Returns the statistics."""
    groups = [(None, df)] if hue is None else list(df.groupby(hue, sort=True, dropna=False))
    if order is not None and hue is not None:
        rank = {v: i for i, v in enumerate(order)}
        groups.sort(key=lambda g: rank.get(g[0], len(rank)))
    drawn = []
    for value, grp in groups:
        stats = mean_over_repeats(grp, [x], y).sort_values(x)
        if stats.empty:
            continue
        label = prefix + label_of(value) if hue is not None else (prefix or y)
        has_ci = (stats["n"] > 1).any()
        container = ax.errorbar(stats[x], stats["mean"], yerr=stats["ci95"] if has_ci else None,
                                marker=marker, markersize=4, linestyle=linestyle, capsize=2.5, label=label)
        mark_loop_bound(ax, stats[x], stats["mean"], stats["loop_bound"], container.lines[0].get_color(), marker)
        drawn.append(stats.assign(series=label))
    if drawn:
        every = pd.concat(drawn, ignore_index=True)
        add_note(ax, ci_note(every["n"]))
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
                 category_label: Callable[[Any], str] = str) -> dict[tuple[Any, Any], float]:
    """Bars of the median (stats['p50']) per category, one colour per hue value, whiskers from
    stats['p5'] to stats['p95']. Returns the x position of each (category, hue) bar."""
    width = 0.8 / max(len(hues), 1)
    xs = np.arange(len(categories))
    where: dict[tuple[Any, Any], float] = {}
    for i, h in enumerate(hues):
        sub = stats[stats[hue] == h].set_index(category)
        heights = np.array([sub["p50"].get(c, np.nan) for c in categories], float)
        lo = np.array([sub["p5"].get(c, np.nan) for c in categories], float)
        hi = np.array([sub["p95"].get(c, np.nan) for c in categories], float)
        pos = xs + (i - (len(hues) - 1) / 2) * width
        ax.bar(pos, heights, width, yerr=[np.clip(heights - lo, 0, None), np.clip(hi - heights, 0, None)],
               capsize=2.5, label=label_of(h), error_kw={"elinewidth": 0.9})
        where.update({(c, h): float(p) for c, p in zip(categories, pos)})
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
    top = max([v for v in pd.to_numeric(scope["p95"], errors="coerce").dropna() if v <= limit]
              + [float(medians.max())] + in_view) * 1.12
    p95 = pd.to_numeric(stats["p95"], errors="coerce")
    if top >= ax.get_ylim()[1]:
        return
    ax.set_ylim(0, top)
    for row, value in zip(stats.itertuples(), p95):
        x = where.get((getattr(row, category), getattr(row, hue)))
        if x is not None and pd.notna(value) and value > top:
            ax.annotate(f"p95\n{value:,.0f}", xy=(x, top), xytext=(0, -2), textcoords="offset points",
                        ha="center", va="top", fontsize=5.5, color="0.2", gid="pmemlab-whisker-cap")


def latency_series(ax: Axes, stats: pd.DataFrame, x: str, label: str, marker: str = "o") -> None:
    """A line of medians against `x` with p5-p95 whiskers (asymmetric error bars)."""
    stats = stats.sort_values(x)
    lo = np.clip(stats["p50"] - stats["p5"], 0, None)
    hi = np.clip(stats["p95"] - stats["p50"], 0, None)
    yerr = [lo, hi] if stats["from_histogram"].any() else None
    ax.errorbar(stats[x], stats["p50"], yerr=yerr, marker=marker, markersize=4, capsize=2.5, label=label)


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
    """Mean of `value` over repeats on a grid of `row` (y) by `x` (columns), on the colour scale `norm`."""
    stats = mean_over_repeats(df, [row, x], value)
    grid = stats.pivot(index=row, columns=x, values="mean").sort_index().sort_index(axis=1)
    ax.imshow(grid.values, aspect="auto", origin="lower", cmap=cmap, norm=norm)
    ax.set_xticks(range(len(grid.columns)))
    ax.set_xticklabels([x_label(c) for c in grid.columns], rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(len(grid.index)))
    ax.set_yticklabels([row_label(r) for r in grid.index])


def shared_colorbar(fig: Figure, cax: Axes, norm: Normalize, label: str, cmap: str = "viridis") -> None:
    """The one colour bar, in its own axes `cax`, of every heatmap drawn with `norm`."""
    cax.set_label("<colorbar>")
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), cax=cax)
    bar.set_label(label)


# --------------------------------------------------------------------------
# the papers' values
# --------------------------------------------------------------------------
def draw_references(ax: Axes, refs: Sequence[Reference], color_of: Callable[[Reference], str | None] = lambda r: None,
                    at: Callable[[Reference], float | None] = lambda r: None) -> None:
    """Each value as a dashed line (axis 'y': horizontal, 'x': vertical) with its citation in the
    legend, or as a black bar marker at the x position `at(ref)` gives (a category of a bar chart)
    with the value written over it. A value further than 4x beyond the data is not drawn to
    scale: a note at the axis edge names it."""
    if not refs:
        return
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    marker_sources: set[str] = set()
    stacked = {"top": 0, "bottom": 0}

    def off_note(text: str, edge: str, left: bool, color: str) -> None:
        """An off-scale value named under the axis (below its label), one line each."""
        k = stacked["top"] + stacked["bottom"]
        stacked[edge] += 1
        ax.annotate(text, xy=(0.0, 0.0), xycoords="axes fraction", xytext=(0, -34 - 8 * k),
                    textcoords="offset points", ha="left", va="top", fontsize=5.5, color=color,
                    gid=REFERENCE_LABEL_GID, annotation_clip=False)

    for ref in refs:
        color = color_of(ref) or "0.25"
        text = f"{ref.source}: {ref.label}"
        pos = at(ref)
        if ref.axis == "y":
            log = ax.get_yscale() == "log"
            above, below = ref.value > y1 * OFF_SCALE, log and ref.value < y0 / OFF_SCALE
            if pos is not None:
                label = f"{ref.source} (paper values)"
                if label in marker_sources or label in ax.get_legend_handles_labels()[1]:
                    label = "_nolegend_"
                marker_sources.add(label)
                ax.plot([pos], [ref.value], marker="_", markersize=16, markeredgewidth=2.2, color="black",
                        linestyle="none", gid=REFERENCE_GID, zorder=6, label=label)
                if not (above or below):
                    ax.annotate(f"{ref.value:g}", xy=(pos, ref.value), xytext=(0, 3), textcoords="offset points",
                                ha="center", va="bottom", fontsize=5.5, gid=REFERENCE_LABEL_GID)
            else:
                ax.axhline(ref.value, color=color, linestyle="--", linewidth=1.0, gid=REFERENCE_GID, zorder=1.5,
                           label="_nolegend_" if above or below else text)
            if above or below:
                off_note(f"{'↑' if above else '↓'} {text} (off scale)", "top" if above else "bottom", True, color)
            else:
                y1 = max(y1, ref.value * (1.6 if log else 1.12))
                y0 = min(y0, ref.value / 1.6) if log else y0
        else:
            off = ref.value > x1 * OFF_SCALE or ref.value < x0 / OFF_SCALE
            ax.axvline(ref.value, color=color, linestyle="--", linewidth=1.0, gid=REFERENCE_GID, zorder=1.5,
                       label="_nolegend_" if off else text)
            if off:
                off_note(f"{'→' if ref.value > x1 else '←'} {text} (off scale)", "bottom", ref.value < x1, color)
            else:
                log = ax.get_xscale() == "log"
                x0 = min(x0, ref.value / 1.3) if log else min(x0, ref.value)
                x1 = max(x1, ref.value * 1.3) if log else max(x1, ref.value * 1.05)
    if (x0, x1) != tuple(ax.get_xlim()):
        ax.set_xlim(x0, x1)
    if (y0, y1) != tuple(ax.get_ylim()):
        ax.set_ylim(y0, y1)


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
