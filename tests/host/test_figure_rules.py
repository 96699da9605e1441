"""The rules every figure follows, checked on every recipe through matplotlib's objects: bandwidth
axes from 0, latency axes that name their statistic and say when they are logarithmic, no empty
panel; the EMULATED mark exactly when the run conditions say hypervisor or emulated namespace;
hollow markers where the engine's columns say loop-bound; the papers' reference values, each
holding the number its quoted sentence states (and, given the seed papers, quoted verbatim)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from matplotlib.path import Path as MplPath

from pmemlab.plots.data import load_results
from pmemlab.plots.marks import MARK_GID, WATERMARK_GID, emulation_notice, notice_of
from pmemlab.plots.recipes import RECIPES
from pmemlab.plots.references import REFERENCES, references, withheld
from pmemlab.plots.render import find_experiments, generic_figure
from pmemlab.plots.style import LOOP_BOUND_GID, LOOP_BOUND_NOTE, caption_of

RECORDED = Path(__file__).resolve().parent / "fixtures" / "recorded"


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
                    or {"99.9th", "99.99th", "max"} <= set(entries)), (name, label)
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
    """On a linear axis from 0 or a log axis, no data point and no line between points lies under the
    legend (as drawn; matplotlib's own path-box intersection)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    for ax in data_axes(fig):
        legend = ax.get_legend()
        if legend is None or (ax.get_yscale() == "linear" and ax.get_ylim()[0] != 0):
            continue
        box = legend.get_window_extent(renderer)
        for line in ax.get_lines():  # the data (axvline / axhline marks span the axis on purpose)
            if (line.get_gid() == "pmemlab-reference" or not len(line.get_xdata())
                    or line.get_transform() is not ax.transData):
                continue
            xy = line.get_transform().transform(np.column_stack([np.asarray(line.get_xdata(), float),
                                                                 np.asarray(line.get_ydata(), float)]))
            inside = [(x, y) for x, y in xy if box.x0 <= x <= box.x1 and box.y0 <= y <= box.y1]
            assert not inside, f"{name}: {ax.get_title()!r}: the legend covers data points"
            if line.get_linestyle() not in ("None", "none", "", " ") and len(xy) > 1:
                path = MplPath(xy[np.isfinite(xy).all(axis=1)])
                assert not path.intersects_bbox(box, filled=False), \
                    f"{name}: {ax.get_title()!r}: the legend covers a line of {line.get_label()!r}"


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
        assert list(line.get_xdata()) == [2] and list(line.get_ydata()) == pytest.approx([expected])
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
        assert [x for x, _ in drawn] == [x for x, _ in expected] and expected
        assert [y for _, y in drawn] == pytest.approx([y for _, y in expected])


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


SEEDS = os.environ.get("PMEMLAB_SEEDS")


@pytest.mark.skipif(not SEEDS, reason="set PMEMLAB_SEEDS to the directory of the seed papers' text to check the quotes")
def test_references_quote_the_papers_verbatim():
    papers = {"REPORT": "000_*.txt", "FAST'20": "002_*.txt"}
    texts = {name: " ".join(next(Path(SEEDS).glob(pattern)).read_text(encoding="utf-8").split())
             for name, pattern in papers.items()}
    for ref in REFERENCES:
        paper = "FAST'20" if ref.source.startswith("FAST'20") else "REPORT"
        assert " ".join(ref.quote.split()) in texts[paper], (ref.experiment, ref.stated)


def test_references_by_dimm_count():
    """A value measured on one DIMM (or six) is drawn only for a namespace of that many."""
    one = {r.value for r in references("bw-threads", "pmem", 1)}
    six = {r.value for r in references("bw-threads", "pmem", 6)}
    assert one == {6.6, 2.3} and six == {39.4, 13.9}
    assert references("bw-threads", "pmem", None) == [] and len(withheld("bw-threads", "pmem", None)) == 4
    assert {r.value for r in references("idle-latency", "dram", None)} == {81.0, 86.0}
