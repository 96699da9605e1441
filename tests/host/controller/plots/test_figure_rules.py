"""The rules every figure follows, checked on every recipe through matplotlib's objects: bandwidth
axes from 0, latency axes that name their statistic and say when they are logarithmic, no empty
panel; the EMULATED mark exactly when the run conditions say hypervisor or emulated namespace;
hollow markers where the engine's columns say loop-bound; the papers' reference values, each
holding the number its quoted sentence states."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pmemlab.analysis.resultset import load_results
from pmemlab.plots.marks import MARK_GID, WATERMARK_GID, emulation_notice, notice_of
from pmemlab.plots.recipes import RECIPES
from pmemlab.plots.references import REFERENCES, references, withheld
from pmemlab.analysis.resultset import find_experiments
from pmemlab.plots.render import generic_figure
from pmemlab.plots.style import LOOP_BOUND_GID, LOOP_BOUND_NOTE, caption_of

from testlib import HOST_FIXTURES

RECORDED = HOST_FIXTURES / "recorded"


@pytest.fixture(scope="module")
def experiments() -> dict[str, list[Path]]:
    return find_experiments(RECORDED)


def data_axes(fig):
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def drawn_artists(ax) -> int:
    return len(ax.lines) + len(ax.collections) + len(ax.patches) + len(ax.images)


@pytest.mark.parametrize("name", list(RECIPES))
def test_axes_follow_the_rules(experiments, name):
    """Every bandwidth axis on a linear scale starts at 0; every latency axis names the statistic
    (median, a percentile legend, or the CCDF) and says 'log scale' when it is one; every panel
    shows data or says why not."""
    fig = RECIPES[name](load_results(experiments[name]))
    for ax in data_axes(fig):
        label = ax.get_ylabel()
        if label.startswith("Bandwidth") and ax.get_yscale() == "linear" and drawn_artists(ax):
            assert ax.get_ylim()[0] == 0, (name, label)
        if "latency" in label.lower():
            legend = ax.get_legend()
            entries = [t.get_text() for t in legend.get_texts()] if legend else []
            assert ("median" in label.lower() or label.startswith("P(latency")
                    or {"99.9th", "99.99th", "max"} <= {e.split(" · ")[0] for e in entries}), (name, label)
        if ax.get_yscale() == "log":
            assert "log scale" in label, (name, label)
        if ax.get_xscale() == "log" and "atency" in ax.get_xlabel():
            assert "log scale" in ax.get_xlabel(), (name, ax.get_xlabel())
        assert drawn_artists(ax) or ax.texts, f"{name}: an empty panel"
    assert "repeats:" in caption_of(fig)
    assert_legends_clear_of_data(fig, name)


@pytest.mark.parametrize("name", list(RECIPES))
def test_axis_labels_stay_clear_of_the_title_and_the_mark(experiments, name):
    """No axis label runs into the figure's title or the EMULATED banner, nor out of the figure; a
    y label stays beside its axis (at most a sixth of the axis' height beyond either end: longer,
    it reads as part of the title band or the caption)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = RECIPES[name](load_results(experiments[name]))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    frame = [t.get_window_extent(renderer) for t in fig.texts if t.get_gid() == MARK_GID]
    if fig._suptitle is not None:
        frame.append(fig._suptitle.get_window_extent(renderer))
    assert frame, "the fixtures come from a TCG guest: a title and the mark"
    for ax in data_axes(fig):
        for label in (ax.xaxis.label, ax.yaxis.label):
            if not label.get_text():
                continue
            box = label.get_window_extent(renderer)
            assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1, \
                (name, label.get_text())
            assert not any(box.overlaps(other) for other in frame), (name, label.get_text())
        area, box = ax.get_window_extent(renderer), ax.yaxis.label.get_window_extent(renderer)
        assert area.y0 - area.height / 6 <= box.y0 and box.y1 <= area.y1 + area.height / 6, (name, ax.get_ylabel())


@pytest.mark.parametrize("name", list(RECIPES))
def test_a_series_keeps_its_colour_in_every_panel(experiments, name):
    """A series named alike in several panels of a figure (an op on each target) has one colour,
    whatever else a panel draws (hollow loop-bound markers, references)."""
    from matplotlib.colors import to_hex

    fig = RECIPES[name](load_results(experiments[name]))
    colours: dict[str, set[str]] = {}
    for ax in data_axes(fig):
        for line in ax.get_lines():
            label = line.get_label()
            if not label.startswith("_") and line.get_gid() is None:
                colours.setdefault(label, set()).add(to_hex(line.get_color()))
        for container in ax.containers:
            label = container.get_label()
            artist = container.lines[0] if hasattr(container, "lines") else container.patches[0]
            if label and not label.startswith("_") and artist is not None:
                colour = artist.get_color() if hasattr(container, "lines") else artist.get_facecolor()
                colours.setdefault(label, set()).add(to_hex(colour))
    assert {label: c for label, c in colours.items() if len(c) > 1} == {}


def assert_legends_clear_of_data(fig, name: str) -> None:
    """Every legend lies outside every panel (beside or below its axes, as drawn: an axis is never
    stretched to make room for a legend, nor its data covered by one) and inside the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    for ax in data_axes(fig):
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        for other in data_axes(fig):
            assert not box.overlaps(other.get_window_extent(renderer)), \
                f"{name}: the legend of {ax.get_title()!r} lies over the panel {other.get_title()!r}"
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 + 1 and fig.bbox.y0 <= box.y0, \
            f"{name}: {ax.get_title()!r}: the legend runs out of the figure"
        for other in data_axes(fig):
            if other is not ax and other.get_legend() is not None:
                assert not box.overlaps(other.get_legend().get_window_extent(renderer)), \
                    f"{name}: the legends of {ax.get_title()!r} and {other.get_title()!r} overlap"


# --------------------------------------------------------------------------
# the EMULATED mark
# --------------------------------------------------------------------------
def with_conditions(results, hypervisor: str, emulated: dict[str, str]):
    """The results as if run with these conditions (emulated: target label -> target_emulated)."""
    rows = results.rows.copy()
    rows["hypervisor"] = hypervisor
    rows["target_emulated"] = rows["target_label"].map(emulated).fillna("no")
    results.rows = rows
    return results


def marks(fig) -> tuple[str, bool]:
    return notice_of(fig), any(t.get_gid() == WATERMARK_GID for t in fig.texts)


@pytest.mark.parametrize("name", list(RECIPES))
def test_mark_follows_the_run_conditions(experiments, name):
    """Recorded in a TCG guest: marked (test_plots checks every recipe's mark). The same rows from
    bare metal with real NVDIMMs: no mark at all."""
    kinds = {label: ("dram" if label.startswith("dram") else "no")
             for label in load_results(experiments[name]).rows["target_label"].unique()}
    fig = RECIPES[name](with_conditions(load_results(experiments[name]), "none", kinds))
    assert marks(fig) == ("", False)
    assert not any(t.get_gid() in (MARK_GID, WATERMARK_GID) for t in fig.texts)


@pytest.mark.parametrize("name", ["bw-threads", "idle-latency"])
def test_mark_names_the_hypervisor_and_emulated_namespaces(experiments, name):
    """Under KVM: marked, naming it; on bare metal with every pmem target on memmap= DRAM: marked."""
    kinds = {label: ("dram" if label.startswith("dram") else "no")
             for label in load_results(experiments[name]).rows["target_label"].unique()}
    fig = RECIPES[name](with_conditions(load_results(experiments[name]), "kvm", kinds))
    assert marks(fig)[0] == "EMULATED: run under a hypervisor (kvm) - not pmem performance" and marks(fig)[1]
    memmap = {label: ("memmap" if kind == "no" else kind) for label, kind in kinds.items()}
    fig = RECIPES[name](with_conditions(load_results(experiments[name]), "none", memmap))
    assert marks(fig) == ("EMULATED: pmem: memmap= DRAM - not pmem performance", True)


def test_real_pmem_beside_an_emulation_names_it_without_the_watermark(experiments):
    """FAST'20 fig 6 compares real pmem with an emulation on purpose: on bare metal the emulated
    target is named, the figure is not marked as a whole."""
    results = with_conditions(load_results(experiments["emulation"]), "none",
                              {"dram": "dram", "emulated": "memmap", "pmem": "no"})
    text, watermark = marks(RECIPES["emulation"](results))
    assert text == "emulated pmem in this figure: emulated: memmap= DRAM" and not watermark


def test_mark_rule_on_its_own():
    rows = pd.DataFrame({"target_label": ["dram", "pmem"], "hypervisor": ["none", "none"],
                         "target_emulated": ["dram", "no"]})
    assert emulation_notice(rows) is None
    assert emulation_notice(rows.assign(hypervisor=["", "unknown"])).text.startswith(
        "EMULATED: run under a hypervisor (unidentified)")
    only_dram = rows.iloc[:1]
    assert emulation_notice(only_dram) is None, "a DRAM baseline on bare metal is DRAM, not emulated pmem"
    nfit = rows.assign(target_emulated=["dram", "nfit_test"])
    assert emulation_notice(nfit).whole_figure and "nfit_test bus" in emulation_notice(nfit).text
    assert emulation_notice(pd.DataFrame({"target_label": ["x"]})) is None, "no conditions recorded: no claim"


def test_generic_plot_carries_the_mark(experiments):
    fig = generic_figure(load_results(experiments["bw-size"]), "access_size", "bw_gbps", "op")
    assert notice_of(fig).startswith("EMULATED")
    assert fig.axes[0].get_ylim()[0] == 0


# --------------------------------------------------------------------------
# loop-bound points (the engine's columns)
# --------------------------------------------------------------------------
def test_loop_bound_points_are_hollow(experiments, tmp_path):
    """A CSV with the engine's engine_ceiling_gbps / loop_bound columns (here: the recorded
    bw-threads rows, 2-thread loads marked loop-bound in one of their repeats) gets hollow markers
    exactly on those points, and the legend says what they mean; without the columns, none; and
    the recorded columns themselves (the engine's own verdicts in the TCG guest) give hollow
    markers on every point loop-bound in any repeat."""
    paths, bare = [], []
    for path in experiments["bw-threads"]:
        df = pd.read_csv(path, dtype={"thread": str})
        df.drop(columns=["engine_ceiling_gbps", "loop_bound"]).to_csv(tmp_path / f"bare-{path.name}", index=False)
        bare.append(tmp_path / f"bare-{path.name}")
        bound = (df["op"] == "load") & (df["threads"] == 2) & (df["repeat"] == 0) & (df["thread"] == "all")
        df["engine_ceiling_gbps"] = np.where(df["thread"] == "all", 2.0 * df["bw_gbps"].max(), np.nan)
        df["loop_bound"] = np.where(df["thread"] == "all", bound.astype(int), "")
        out = tmp_path / path.name
        df.to_csv(out, index=False)
        paths.append(out)
    results = load_results(paths)
    fig = RECIPES["bw-threads"](results)
    ok = results.ok()
    for ax in data_axes(fig):
        label = ax.get_title().split(" · ")[0]
        hollow = [line for line in ax.get_lines() if line.get_gid() == LOOP_BOUND_GID]
        assert len(hollow) == 1
        line = hollow[0]
        expected = ok[(ok["target_label"] == label) & (ok["op"] == "load") & (ok["threads"] == 2)]["bw_gbps"].mean()
        assert list(line.get_xdata()) == [drawn_x(ax, "Read (load)", 2)] and list(line.get_ydata()) == pytest.approx([expected])
        assert line.get_markerfacecolor() == "white"
        assert LOOP_BOUND_NOTE in ax.get_legend().get_title().get_text().replace("\n", " ")

    plain = RECIPES["bw-threads"](load_results(bare))
    assert not [line for ax in plain.axes for line in ax.get_lines() if line.get_gid() == LOOP_BOUND_GID]

    recorded = load_results(experiments["bw-threads"])
    ok = recorded.ok().assign(bound=lambda d: pd.to_numeric(d["loop_bound"], errors="coerce") == 1)
    assert ok["bound"].any() and not ok["bound"].all()
    for ax in data_axes(RECIPES["bw-threads"](recorded)):
        sub = ok[ok["target_label"] == ax.get_title().split(" · ")[0]]
        per_point = sub.groupby(["op", "threads"]).agg(bound=("bound", "any"), bw=("bw_gbps", "mean"))
        expected = sorted((float(t), bw) for (_, t), (bound, bw) in per_point.iterrows() if bound)
        drawn = sorted((float(x), float(y)) for line in ax.get_lines() if line.get_gid() == LOOP_BOUND_GID
                       for x, y in zip(line.get_xdata(), line.get_ydata()))
        assert [round(x) for x, _ in drawn] == [x for x, _ in expected] and expected  # x: moved apart (dodge)
        assert [y for _, y in drawn] == pytest.approx([y for _, y in expected])


def drawn_x(ax, label: str, x: float) -> float:
    """Where the series `label` draws its point of x value `x` (series move apart along x: dodge)."""
    from matplotlib.container import ErrorbarContainer

    container = next(c for c in ax.containers if isinstance(c, ErrorbarContainer) and c.get_label() == label)
    values = list(container._pmemlab_x)
    return float(container.lines[0].get_xdata()[values.index(x)])


# --------------------------------------------------------------------------
# the papers' values
# --------------------------------------------------------------------------
UNITS = {"ns": 1.0, "µs": 1000.0, "GB/s": 1.0, "GB/sec": 1.0, "B": 1.0, "kB": 1024.0, "MB": 2.0 ** 20, "%": 0.01}


@pytest.mark.parametrize("ref", REFERENCES, ids=lambda r: f"{r.experiment}:{r.stated}")
def test_reference_states_its_value(ref):
    """The quoted sentence holds the words that state the value, and those words are the value."""
    assert ref.stated in ref.quote
    number, unit = re.fullmatch(r"([0-9.]+)\s*(\S+)", ref.stated).groups()
    assert float(number) * UNITS[unit] == pytest.approx(ref.value)
    assert ref.axis in ("x", "y") and ref.target in ("pmem", "dram") and ref.source.startswith(("REPORT", "FAST'20"))


def test_references_by_dimm_count():
    """A value measured on one DIMM (or six) is drawn only for a namespace of that many."""
    one = {r.value for r in references("bw-threads", "pmem", 1)}
    six = {r.value for r in references("bw-threads", "pmem", 6)}
    assert one == {6.6, 2.3} and six == {39.4, 13.9}
    assert references("bw-threads", "pmem", None) == [] and len(withheld("bw-threads", "pmem", None)) == 4
    assert {r.value for r in references("idle-latency", "dram", None)} == {81.0, 86.0}


# --------------------------------------------------------------------------
# the papers' values sit on series measured as they were, or say their own conditions
# --------------------------------------------------------------------------
def overlays(fig):
    """(axis, paper value, label of the series it sits on or None, its artist) for every value drawn."""
    from pmemlab.plots.style import references_drawn

    return [(ax, ref, on, artist) for ax in data_axes(fig) for ref, on, artist in references_drawn(ax)]


def candidates_of(ax, ref):
    """Every series on `ax` with its conditions (errorbar series, tail lines, bar charts per category)."""
    from pmemlab.plots.style import bar_candidates, series_on

    out = list(series_on(ax))
    hues = [c.get_label() for c in ax.containers if hasattr(c, "patches") and getattr(c, "_pmemlab_conditions", None)]
    for hue in hues:
        out += bar_candidates(ax, ref.series, hue)
    return out


def legend_texts(ax) -> list[str]:
    leg = ax.get_legend()
    return [t.get_text().replace("\n", " ") for t in leg.get_texts()] if leg else []


def assert_overlays_follow_their_series(fig, name):
    """A paper value drawn on a series: that series was measured as the value was (the same series
    name, statistic, thread count where the series has one, prefetcher state where both say), and
    the value takes its colour. A value on no series: no series on its axis matches it, and its
    legend entry names its own conditions."""
    from matplotlib.colors import to_hex

    from pmemlab.plots.style import NEUTRAL

    for ax, ref, on, artist in overlays(fig):
        options = candidates_of(ax, ref)
        if on is not None:
            (cond, colour), *_ = [(c, col) for label, c, col in options if label == on]
            assert ref.matches(cond), (name, ref.citation, on, cond)
            for key in ("threads", "prefetch"):
                if key in cond and getattr(ref, key) is not None:
                    assert cond[key] == getattr(ref, key), (name, ref.citation, key)
            if artist.get_marker() != "_":  # a bar chart's value is a black bar on its bar
                assert to_hex(artist.get_color()) == to_hex(colour), (name, ref.citation)
        else:
            assert not any(ref.matches(c) for _, c, _ in options), (name, ref.citation, "a matching series exists")
            texts = legend_texts(ax)
            if ref.conditions and artist.get_label() != "_nolegend_":
                assert any(ref.conditions.replace("\n", " ") in t or ref.conditions in t.replace("  ", " ")
                           for t in [" ".join(x.split()) for x in texts]), (name, ref.citation, texts)
            if artist.get_marker() != "_" and ref.source.startswith("REPORT") and name != "tail-latency":
                assert to_hex(artist.get_color()) == to_hex(NEUTRAL), (name, ref.citation)


@pytest.mark.parametrize("name", list(RECIPES))
def test_paper_values_sit_on_series_measured_as_they_were(experiments, name):
    """On the recorded runs (one DIMM, prefetchers on: no control in the guest) and on the same runs
    as if on the papers' machine (six DIMMs; for idle-latency, prefetchers off)."""
    results = load_results(experiments[name])
    fig = RECIPES[name](results)
    assert_overlays_follow_their_series(fig, name)
    six = load_results(experiments[name])
    six.rows["target_interleave_ways"] = np.where(six.rows["target_kind"] == "fsdax", 6, np.nan)
    six.rows["prefetch"] = "off"
    assert_overlays_follow_their_series(RECIPES[name](six), name)


def test_paper_values_placed_as_the_issue_asks(experiments):
    """idle-latency: the REPORT's means (prefetchers off) sit on no median and say so; with the
    prefetchers off they sit on our means. bw-size: the REPORT's one-thread, one-DIMM read peak sits
    on the one-thread load curve (drawn for it, dashed), its 'stores' on none. tail-latency: the
    outlier share is a point at its latency, not a line."""
    fig = RECIPES["idle-latency"](load_results(experiments["idle-latency"]))
    drawn = overlays(fig)
    assert drawn and all(on is None for _, _, on, _ in drawn)
    assert any("REPORT summary of §3 (paper values, mean, prefetchers off)" == t for t in legend_texts(data_axes(fig)[0]))
    off = load_results(experiments["idle-latency"])
    off.rows["prefetch"] = "off"
    drawn = overlays(RECIPES["idle-latency"](off))
    assert drawn and all(on is not None and on.endswith("mean of the samples") for _, _, on, _ in drawn)

    fig = RECIPES["bw-size"](load_results(experiments["bw-size"]))
    on = {ref.series: on for _, ref, on, _ in overlays(fig)}
    assert on == {"load": "Read (load) (1 thr)", "store": None}
    tail = RECIPES["tail-latency"](load_results(experiments["tail-latency"]))
    (point,) = [artist for _, ref, _, artist in overlays(tail) if ref.series == "ccdf"]
    assert list(point.get_xdata()) == [50_000.0] and list(point.get_ydata()) == [pytest.approx(6e-5)]


# --------------------------------------------------------------------------
# spreads: no drawn interval crosses zero for a quantity that cannot
# --------------------------------------------------------------------------
def vertical_intervals(ax):
    """(low, high) of every error bar and whisker drawn on `ax` (errorbar series and bars)."""
    out = []
    for container in ax.containers:
        bars = container.errorbar if hasattr(container, "errorbar") and container.errorbar is not None else container
        if not hasattr(bars, "lines") or bars.lines is None or len(bars.lines) < 3:
            continue
        for collection in bars.lines[2]:
            for seg in collection.get_segments():
                if len(seg) == 2 and seg[0][0] == seg[1][0]:  # vertical
                    out.append((min(seg[0][1], seg[1][1]), max(seg[0][1], seg[1][1])))
                elif len(seg) == 2 and seg[0][1] == seg[1][1]:  # horizontal: an x interval (bandwidth on x)
                    out.append((min(seg[0][0], seg[1][0]), max(seg[0][0], seg[1][0])))
    return out


def with_three_spread_repeats(results):
    """The runs as if every point had run three times: the recorded value, 2 % of it and 3x it (a
    t interval of those reaches below zero)."""
    rows = results.rows
    agg = (rows["thread"].astype(str) == "all") & (rows["status"] == "ok")
    extra = []
    for repeat, factor in ((101, 0.02), (102, 3.0)):
        more = rows[agg].copy()
        more["repeat"] = repeat
        more["bw_gbps"] = pd.to_numeric(more["bw_gbps"], errors="coerce") * factor
        extra.append(more)
    results.rows = pd.concat([rows, *extra], ignore_index=True)
    return results


@pytest.mark.parametrize("name", list(RECIPES))
def test_no_drawn_interval_crosses_zero(experiments, name):
    """Bandwidth and latency cannot be negative: no error bar or whisker of any figure reaches
    below 0, on the recorded runs (1-2 repeats: the repeats' range) and on the same points with
    three repeats spread so widely that their 95 % t interval would (the range is drawn instead)."""
    for results in (load_results(experiments[name]), with_three_spread_repeats(load_results(experiments[name]))):
        fig = RECIPES[name](results)
        for ax in data_axes(fig):
            for low, high in vertical_intervals(ax):
                assert low >= -1e-9, (name, ax.get_title(), low, high)


def test_spread_rule():
    """From 3 repeats the 95 % CI of the mean; fewer, or a CI reaching below 0: the range; 1: none."""
    from pmemlab.analysis.stats import spread_of
    from scipy import stats as scipy_stats

    assert spread_of([5.0]) == (5.0, 5.0, "")
    assert spread_of([1.0, 3.0]) == (1.0, 3.0, "min-max")
    values = [10.0, 11.0, 12.0]
    half = scipy_stats.t.ppf(0.975, 2) * np.std(values, ddof=1) / np.sqrt(3)
    lo, hi, kind = spread_of(values)
    assert kind == "ci95" and (lo, hi) == (pytest.approx(11 - half), pytest.approx(11 + half))
    assert spread_of([0.1, 0.1, 5.0]) == (0.1, 5.0, "min-max"), "the CI would cross 0"
    assert spread_of([-1.0, 0.0, 5.0], non_negative=False)[2] == "ci95"


@pytest.mark.parametrize("name", ["idle-latency", "bw-size", "tail-latency"])
def test_report_figures_carry_neither_caption_nor_banner(experiments, name):
    """In the report a figure's caption is the page's figure caption and the banner is said once at
    the top: the figure itself draws neither, keeps its caption text for the page, and keeps the
    faint watermark so that a panel cut out of the page is still marked."""
    from pmemlab.plots.style import CAPTION_GID, Frame, framed

    standalone = RECIPES[name](load_results(experiments[name]))
    with framed(Frame(caption=False, banner=False)):
        framed_fig = RECIPES[name](load_results(experiments[name]))
    gids = [t.get_gid() for t in framed_fig.texts]
    assert CAPTION_GID not in gids and MARK_GID not in gids and WATERMARK_GID in gids
    assert caption_of(framed_fig) == caption_of(standalone) and caption_of(standalone).startswith(name)
    assert CAPTION_GID in [t.get_gid() for t in standalone.texts] and notice_of(standalone)
