"""Figures: every recipe renders from results recorded by the real module in the guest
(tests/host/fixtures/recorded, written by its record.sh), and draws the right DATA: each recipe's
lines, bars, CCDFs and heatmaps are compared with the same statistic computed here from the CSVs
with pandas (95 % CIs with scipy, medians and percentiles from the histograms by the module's rank
rule), and with the summary CSVs the sweeps wrote; plus the rules of a publishable figure checked
through matplotlib's objects: bandwidth axes from 0, error bars as wide as the CI, latency named
(median) with its p5-p95 spread and log axes said in the label, tails as a CCDF on a log axis,
ticks at the swept values, one colour scale per figure, the papers' values as reference markers,
hollow loop-bound points, the caption (target, machine, date, repeats, what is missing) and the
EMULATED mark. Then the generic plot and plot-all."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import BarContainer, ErrorbarContainer
from scipy import stats as scipy_stats

import pmemlab.cli as cli
from pmemlab.config import expand, load_config
from pmemlab.targets.spec import target_loads
from pmemlab.analysis.resultset import load_results
from pmemlab.plots.recipes import RECIPES
from pmemlab.analysis.resultset import find_experiments
from pmemlab.plots.marks import WATERMARK_GID, notice_of
from pmemlab.plots.style import caption_of, dropped_on_log_scale, is_reference_label, references_of
from pmemlab.targets.sweep import target_points

from recorded_targets import RECORDED, one_target

from testlib import TOP

BW = "Bandwidth (GB/s)"
LAT = "Latency (ns)"
MEDIAN = "Median latency (ns)"
MEDIAN_LOG = "Median latency (ns, log scale)"
OPS = {"Read (load)": "load", "Write (ntstore)": "ntstore", "Write (clwb)": "store+clwb", "Write (store)": "store"}


def recorded_loads() -> dict[str, dict[str, str]]:
    """Per experiment, LABEL -> insmod arguments of every target its quick config compares (a
    config without [sweep.targets]: the pmem namespace, as record.sh runs it)."""
    out = {}
    for name in RECIPES:
        cfg = load_config(TOP / "configs" / f"{name}.toml", scale="quick")
        out[name] = dict(target_loads(cfg, "@PMEM@"))
    return out


def filled(load: str) -> re.Pattern:
    """A load with its placeholders (@PMEM@, @PMEM_DRAM@, @CPULESS_NODE@) as what fills them."""
    return re.compile(r"\S+".join(map(re.escape, re.split(r"@[A-Z_]+@", load))))


def test_recorded_fixtures_cover_every_recipe_at_the_current_quick_scale():
    """Every recipe has results recorded from the real module in one CSV (the controller's target
    axis: a target_label column), holding on every target its quick config compares exactly the
    points that config expands to now (a changed config needs record.sh again); a target the guest
    could not have would be recorded as skipped rows with the reason, and its sidecar says so.
    Every file comes from one clean revision and stays under 2 MiB."""
    recorded = find_experiments(RECORDED)
    assert set(recorded) == set(RECIPES)
    assert not list(RECORDED.glob("*@*")) and not (RECORDED / "SKIPPED").exists(), "the one-CSV-per-load form"
    revisions = set()
    for name, loads in recorded_loads().items():
        assert recorded[name] == [RECORDED / f"{name}.csv"]
        rows = pd.read_csv(recorded[name][0], usecols=["target_label", "point_key", "status", "error", "sweep",
                                                       "toolkit_version"], dtype=str)
        assert list(dict.fromkeys(rows["target_label"])) == list(loads), name
        points = expand(load_config(TOP / "configs" / f"{name}.toml", scale="quick"))
        side = json.loads(recorded[name][0].with_suffix(".json").read_text())
        assert side["description"].endswith("[scale: quick]") and side["status"] == "complete"
        assert list(side["targets"]) == list(loads)
        for label, grp in rows.groupby("target_label", sort=False):
            keys = {p.key for p in target_points(points, label)}
            assert set(grp["point_key"]) == keys, f"{name} on {label}: re-record with record.sh"
            assert filled(loads[label]).fullmatch(side["targets"][label]["load"]), (name, label)
            if not (grp["status"] == "ok").any():  # not measured: skipped rows that say why
                assert (grp["status"] == "skipped").all() and grp["error"].notna().all(), (name, label)
                assert side["targets"][label].get("not_measured"), (name, label)
        assert (rows["status"] == "ok").any() and set(rows["sweep"]) == {name}
        assert rows.loc[rows["status"] == "skipped", "error"].notna().all(), "every skipped row says why"
        revisions |= set(rows["toolkit_version"].dropna())
    assert len(revisions) == 1 and not revisions.pop().endswith("-dirty"), "one clean revision"
    assert max(path.stat().st_size for path in RECORDED.iterdir()) < 2 << 20


def test_the_earlier_one_csv_per_load_form_still_plots(tmp_path):
    """Results written before the controller owned the target axis (one NAME@LABEL.csv per module
    load, no target_label column, a SKIPPED line per load insmod refused) draw what the one-CSV
    form draws, and the caption names the load not run."""
    for label in ("dram", "pmem"):
        csv = one_target("bw-threads", label, tmp_path / f"bw-threads@{label}.csv")
        for path in (csv, csv.with_name(csv.stem + ".summary.csv")):
            pd.read_csv(path, dtype=str).drop(columns="target_label").to_csv(path, index=False)
    (tmp_path / "SKIPPED").write_text("bw-threads@interleaved: insmod: ERROR: Invalid parameters\n"
                                      "ewr@pmem: not this sweep's\n")
    old = find_experiments(tmp_path)["bw-threads"]
    assert [p.name for p in old] == ["bw-threads@dram.csv", "bw-threads@pmem.csv"]
    then, now = load_results(old), load_results([RECORDED / "bw-threads.csv"])
    assert then.not_run == ["interleaved: insmod: ERROR: Invalid parameters"] and not now.not_run
    fig_then, fig_now = RECIPES["bw-threads"](then), RECIPES["bw-threads"](now)
    assert [ax.get_title() for ax in data_axes(fig_then)] == [ax.get_title() for ax in data_axes(fig_now)]
    for ax_then, ax_now in zip(data_axes(fig_then), data_axes(fig_now)):
        drawn_then, drawn_now = curves(ax_then), curves(ax_now)
        assert list(drawn_then) == list(drawn_now)
        for label, (x, y) in drawn_now.items():
            assert list(drawn_then[label][0]) == list(x) and list(drawn_then[label][1]) == pytest.approx(list(y))
    assert "not run: interleaved" in caption_of(fig_then) and "not run" not in caption_of(fig_now)


@pytest.fixture(scope="session")
def results_dir(tmp_path_factory) -> Path:
    """Every experiment's recorded CSVs (with sidecars, histograms and summaries) in one directory."""
    out = tmp_path_factory.mktemp("results")
    for path in RECORDED.iterdir():
        if path.suffix in (".csv", ".json"):
            (out / path.name).write_bytes(path.read_bytes())
    return out


@pytest.fixture(scope="session")
def experiments(results_dir) -> dict[str, list[Path]]:
    return find_experiments(results_dir)


def figure_of(experiments, name):
    results = load_results(experiments[name])
    return results, RECIPES[name](results)


def legend_labels(ax) -> list[str]:
    """The series in the legend (the papers' reference values, also listed there, left out; long
    entries are wrapped: joined again)."""
    leg = ax.get_legend()
    texts = [" ".join(t.get_text().split("\n")) for t in leg.get_texts()] if leg else []
    return [t for t in texts if not is_reference_label(t)]


def legend_title(ax) -> str:
    leg = ax.get_legend()
    return leg.get_title().get_text().replace("\n", " ") if leg else ""


def data_axes(fig):
    """The plotting axes (colour bars excluded)."""
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


# --------------------------------------------------------------------------
# what a figure draws, and the same statistics from the CSV
# --------------------------------------------------------------------------
def curves(ax) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """label -> (x, y) of every error-bar series (recipes draw lines with errorbar). Series that
    share x values are drawn moved apart (dodge): x is the value each point stands for, which
    the drawn position is checked against (dodged_x)."""
    out = {}
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer):
            line = container.lines[0]
            drawn = np.asarray(line.get_xdata(), float)
            x = np.asarray(getattr(container, "_pmemlab_x", drawn), float)
            assert np.allclose(drawn, dodged_x(ax, container, x)), container.get_label()
            out[container.get_label()] = (x, np.asarray(line.get_ydata(), float))
    return out


def dodged_x(ax, container, x: np.ndarray) -> np.ndarray:
    """Where a series of `ax` may draw its points at values x: at x, or moved by its place among
    the series with error bars (a constant factor on a log axis, a constant step on a linear one)."""
    drawn = np.asarray(container.lines[0].get_xdata(), float)
    if np.allclose(drawn, x) or not len(x):
        return x
    if ax.get_xscale() == "log":
        factor = drawn / x
        assert np.allclose(factor, factor[0]) and abs(np.log2(factor[0])) < 0.3, "one small factor per series"
        return x * factor[0]
    shift = drawn - x
    steps = np.diff(np.unique(x))
    assert np.allclose(shift, shift[0]) and abs(shift[0]) < 0.1 * (steps.min() if len(steps) else 1.0), \
        "one small step per series"
    return x + shift[0]


def yerr_of(ax, label: str) -> np.ndarray:
    """Half the length of each error bar of the series `label` (NaN where a point has none)."""
    container = next(c for c in ax.containers if isinstance(c, ErrorbarContainer) and c.get_label() == label)
    if not container.has_yerr:
        return np.array([])
    segments = container.lines[2][-1].get_segments()
    return np.array([(seg[1][1] - seg[0][1]) / 2 if len(seg) else np.nan for seg in segments])


def whiskers_of(ax, label: str) -> tuple[np.ndarray, np.ndarray]:
    """(lower end, upper end) of each vertical error bar of the series `label`."""
    container = next(c for c in ax.containers if isinstance(c, ErrorbarContainer) and c.get_label() == label)
    segments = container.lines[2][-1].get_segments()
    return (np.array([seg[0][1] if len(seg) else np.nan for seg in segments]),
            np.array([seg[1][1] if len(seg) else np.nan for seg in segments]))


def bars(ax) -> dict[str, dict[str, float]]:
    """hue label -> {category tick label: bar height} of grouped bars."""
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    return {c.get_label(): dict(zip(ticks, (p.get_height() for p in c.patches)))
            for c in ax.containers if isinstance(c, BarContainer)}


def bar_whiskers(ax, label: str) -> list[tuple[float, float]]:
    """(lower, upper) end of each bar's whisker of hue `label`."""
    container = next(c for c in ax.containers if isinstance(c, BarContainer) and c.get_label() == label)
    return [(seg[0][1], seg[1][1]) for seg in container.errorbar.lines[2][0].get_segments()]


def bar_x(ax, label: str) -> dict[str, float]:
    """category tick label -> x centre of the bar of hue `label`."""
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    container = next(c for c in ax.containers if isinstance(c, BarContainer) and c.get_label() == label)
    return {t: p.get_x() + p.get_width() / 2 for t, p in zip(ticks, container.patches)}


def visible_ticks(ax) -> list[str]:
    """The x tick labels inside the axis' view."""
    lo, hi = sorted(ax.get_xlim())
    return [t.get_text() for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi and t.get_text()]


def agg(df: pd.DataFrame) -> pd.DataFrame:
    """The aggregate (thread = all) rows of successful runs, computed here, not by the recipe."""
    return df[(df["thread"].astype(str) == "all") & (df["status"] == "ok")].copy()


def csv_rows(experiments, name) -> pd.DataFrame:
    """Every row of the experiment's CSV, with its target's label as `label`."""
    frames = [pd.read_csv(path, low_memory=False, dtype={"thread": str, "op": str, "cpus": str})
              for path in experiments[name]]
    return pd.concat(frames, ignore_index=True).assign(label=lambda df: df["target_label"])


def mean_by(df: pd.DataFrame, keys, y: str) -> pd.Series:
    return df.groupby(keys)[y].mean()


def ci95_by(df: pd.DataFrame, keys, y: str) -> pd.Series:
    """Half-width of the Student-t 95 % CI of the mean over repeats (scipy), NaN for one repeat."""
    def half(v):
        v = v.dropna()
        return scipy_stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 else np.nan
    return df.groupby(keys)[y].apply(half)


def hist_rows(experiments, name) -> pd.DataFrame:
    """Every histogram row of the experiment, with its target's label as `label`."""
    frames = [pd.read_csv(path.with_name(path.stem + ".hist.csv"), dtype={"thread": str})
              for path in experiments[name] if path.with_name(path.stem + ".hist.csv").exists()]
    return pd.concat(frames, ignore_index=True).assign(label=lambda df: df["target_label"])


def pooled_quantiles(hist: pd.DataFrame, runs: pd.DataFrame, keys, qs) -> pd.DataFrame:
    """Per combination of `keys` of the aggregate rows `runs`: the quantiles `qs` of every sample
    of their runs (thread 'all' histograms of all repeats pooled) by the module's rule (hist.c):
    the midpoint in whole ticks of the bucket holding rank ceil(n*q), clamped to the runs' exact
    min and max."""
    keys = list(keys)
    columns = list(dict.fromkeys(["label", "point_key", "repeat", *keys]))
    merged = hist[hist["thread"] == "all"].merge(runs[columns], on=["label", "point_key", "repeat"])
    out = []
    for key, grp in merged.groupby(keys if len(keys) > 1 else keys[0]):
        key = key if isinstance(key, tuple) else (key,)
        counts = grp.groupby(["lo_ticks", "hi_ticks", "lo_ns", "hi_ns"])["count"].sum().sort_index()
        cum, n = counts.cumsum().to_numpy(), int(counts.sum())
        sel = runs
        for k, v in zip(keys, key):
            sel = sel[sel[k] == v]
        lo, hi = sel["lat_ns_min"].min(), sel["lat_ns_max"].max()
        row = dict(zip(keys, key), n=n)
        for q in qs:
            rank = -(-n * round(q * 1e6) // 10**6)  # ceil(n * q) in parts per million, as hist.c
            lo_t, hi_t, lo_ns, hi_ns = counts.index[int(np.argmax(cum >= rank))]
            mid = lo_ns + (hi_t - lo_t) // 2 * ((hi_ns - lo_ns) / (hi_t - lo_t) if hi_t > lo_t else 0)
            row[q] = min(max(mid, lo), hi)
        out.append(row)
    return pd.DataFrame(out).set_index(keys)


def assert_curve(ax, label: str, expected: pd.Series) -> None:
    """The series `label` has x = expected's index (sorted) and y = its values."""
    got = curves(ax)
    assert label in got, (label, list(got))
    x, y = got[label]
    expected = expected.sort_index()
    assert list(x) == pytest.approx([float(v) for v in expected.index]), label
    assert list(y) == pytest.approx(list(expected.to_numpy(float)), rel=1e-9, nan_ok=True), label


def sidecar_days(paths) -> str:
    days = sorted({json.loads(Path(p).with_suffix(".json").read_text())["started_at"][:10] for p in paths})
    return days[0] if len(days) == 1 else f"{days[0]} .. {days[-1]}"


def assert_caption(fig, results, paths):
    """The caption names the sweep, every target (label and device), the host, CPU model and kernel,
    the day(s) the sidecars say the runs started and the repeats per point; the figure carries the
    EMULATED mark (the fixtures come from a TCG guest)."""
    text = caption_of(fig)
    assert text.startswith(results.name) and "target:" in text and "machine:" in text
    fields = dict(part.split(": ", 1) for part in text.split(" · ") if ": " in part)
    assert fields["date"] == sidecar_days(paths)
    rows = results.rows
    for column in ("hostname", "cpu_model", "kernel", "target", "target_label"):
        for value in rows[column].dropna().unique():
            assert str(value) in text, (column, value)
    for label in rows["target_label"].unique():
        assert f"{label} (" in fields["target"]
    repeats = results.ok().groupby(["source_csv", "point_key"])["repeat"].nunique()
    assert fields["repeats"].startswith(f"{repeats.min()}") and fields["repeats"].endswith("per point")
    assert notice_of(fig).startswith("EMULATED: run under a hypervisor")
    assert any(t.get_gid() == WATERMARK_GID for t in fig.texts)


def test_every_experiment_has_results(experiments):
    assert set(experiments) == set(RECIPES)


# --------------------------------------------------------------------------
# one test per recipe: the data drawn, axis labels, scales, series, legend
# --------------------------------------------------------------------------
# one access per line: the sequential bars are a 64 B stride
ACCESS = {("load", "stride"): "Read (seq)", ("load", "rand"): "Read (rand)", ("store+clwb", "stride"): "Write (clwb)",
          ("ntstore", "stride"): "Write (ntstore)"}


def ref_values(ax) -> list[float]:
    return sorted(references_of(ax))


def tcg_step_ns(hist: pd.DataFrame) -> float:
    """The clock step of the recorded samples, found here the simple way: under TCG every sample is
    a multiple of one step, so the smallest non-zero exact value holding 1 % of the samples is it."""
    exact = hist[(hist["lo_ticks"] == hist["hi_ticks"]) & (hist["thread"] == "all")]
    counts = exact.groupby(["lo_ticks", "lo_ns"])["count"].sum()
    common = counts[counts >= 0.01 * counts.sum()]
    return float(common[common.index.get_level_values(0) > 0].index[0][1])


def pooled_means(df: pd.DataFrame, keys) -> pd.Series:
    """The mean of every sample of the runs per key: the runs' exact means weighted by their counts."""
    return (df["lat_ns_mean"] * df["lat_n"]).groupby([df[k] for k in keys]).sum() / df.groupby(keys)["lat_n"].sum()


def test_idle_latency(experiments):
    """Bars of the pooled median, whiskers p5-p95, on a linear axis from 0; the mean of the samples
    (the papers' statistic) as a diamond on each bar; bars whose median is below the clock's step
    (measured from the samples: 10 ns under TCG) hatched up to it, with the band under the step
    shaded; the REPORT's values as black bars over the bars they belong to (pmem and DRAM, seq and
    rand read, clwb write), labelled as means with the prefetchers off (ours ran with them on)."""
    from pmemlab.plots.style import MEAN_GID, TIMER_STEP_GID

    results, fig = figure_of(experiments, "idle-latency")
    (ax,) = data_axes(fig)
    assert ax.get_ylabel() == MEDIAN and ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0
    df = agg(csv_rows(experiments, "idle-latency"))
    df["access"] = [ACCESS[(o, p)] for o, p in zip(df["op"], df["pattern"])]
    hist = hist_rows(experiments, "idle-latency")
    q = pooled_quantiles(hist, df, ["label", "access"], (0.5, 0.05, 0.95))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Read (seq)", "Read (rand)", "Write (clwb)", "Write (ntstore)"]
    drawn = bars(ax)
    assert list(drawn) == ["dram", "pmem"]  # DRAM first, as in the paper
    means = pooled_means(df, ["label", "access"])
    diamonds = {line._pmemlab_hue: line for line in ax.get_lines() if line.get_gid() == MEAN_GID}
    for label, heights in drawn.items():
        assert heights == pytest.approx(q[0.5][label].to_dict(), rel=1e-9), "bars: median of the pooled samples"
        expected = [v for a in heights for v in (q[0.05][label][a], q[0.95][label][a])]
        ends = [v for pair in bar_whiskers(ax, label) for v in pair]  # approx compares numbers, not pairs
        assert ends == pytest.approx(expected, rel=1e-9), "whiskers: p5-p95"
        assert list(diamonds[label].get_ydata()) == pytest.approx([means[label][a] for a in heights], rel=1e-9)
        assert list(diamonds[label].get_xdata()) == pytest.approx(list(bar_x(ax, label).values()))
    step = tcg_step_ns(hist)
    assert step == pytest.approx(10.0148, rel=1e-3)
    below = sorted((round(bar_x(ax, label)[a], 6)) for label in drawn for a, h in drawn[label].items() if h < step)
    hatched = sorted(round(p.get_x() + p.get_width() / 2, 6) for p in ax.patches
                     if p.get_gid() == TIMER_STEP_GID and p.get_hatch())
    assert hatched == below and below, "each median below the step hatched up to it"
    assert all(p.get_height() == pytest.approx(step) for p in ax.patches if p.get_gid() == TIMER_STEP_GID and p.get_hatch())
    assert set(legend_labels(ax)) == {"dram", "pmem", "mean of the samples", f"below the timer step ({step:.3g} ns)"}
    assert "whiskers p5-p95 of 40 k samples" in legend_title(ax)
    assert f"hatched: {len(below)} medians below the timer step ({step:.3g} ns)" in legend_title(ax)
    markers = {(round(line.get_xdata()[0], 6), float(line.get_ydata()[0])) for line in ax.get_lines()
               if line.get_gid() == "pmemlab-reference"}
    x_dram, x_pmem = bar_x(ax, "dram"), bar_x(ax, "pmem")
    assert markers == {(round(x_pmem["Read (rand)"], 6), 305.0), (round(x_dram["Read (rand)"], 6), 81.0),
                       (round(x_pmem["Read (seq)"], 6), 169.0), (round(x_pmem["Write (clwb)"], 6), 94.0),
                       (round(x_dram["Write (clwb)"], 6), 86.0)}
    assert "REPORT summary of §3 (paper values, mean, prefetchers off)" in [
        " ".join(t.get_text().split("\n")) for t in ax.get_legend().get_texts()]
    assert "REPORT summary of §3" in caption_of(fig) and "timer step 10 ns (26 TSC ticks)" in caption_of(fig)
    assert_caption(fig, results, experiments["idle-latency"])


def test_idle_latency_whisker_off_the_axis_is_labelled_at_its_top(experiments):
    """pmem's random reads given a tail 20x slower (every sample above 150 ns): their p95 leaves
    the axis, which stops at 1.12x the largest value in view, here their mean (the means drawn
    and the papers' values stay in view), and the whisker is labelled with its p95 at the axis top."""
    results = load_results(experiments["idle-latency"])
    rows = results.rows
    keys = set(rows.loc[(rows["pattern"] == "rand") & (rows["target_label"] == "pmem"), "point_key"])
    slow = results.hist["point_key"].isin(keys) & (results.hist["lo_ns"] > 150)
    results.hist.loc[slow, ["lo_ns", "hi_ns"]] *= 20
    rows.loc[rows["point_key"].isin(keys), "lat_ns_max"] *= 20
    (ax,) = data_axes(RECIPES["idle-latency"](results))
    top = ax.get_ylim()[1]
    from pmemlab.plots.style import MEAN_GID

    means = [y for line in ax.get_lines() if line.get_gid() == MEAN_GID for y in line.get_ydata()]
    assert top == pytest.approx(1.12 * max(ref_values(ax) + means)) and max(means) > max(ref_values(ax))
    (cap,) = [t for t in ax.texts if t.get_gid() == "pmemlab-whisker-cap"]
    assert cap.xy == pytest.approx((bar_x(ax, "pmem")["Read (rand)"], top))
    assert float(cap.get_text().split("\n")[1].replace(",", "")) > 20 * 150


SHORT = {"load": "L", "ntload": "LN", "store+clflush": "SF", "ntstore": "SN", "store+clflushopt": "SO", "store+clwb": "SW"}


def test_instr_latency(experiments):
    results, fig = figure_of(experiments, "instr-latency")
    axes = data_axes(fig)
    assert [ax.get_title() for ax in axes] == ["seq", "rand"]
    df = agg(csv_rows(experiments, "instr-latency"))
    df["size_type"] = [f"{a}_{SHORT[o]}" for a, o in zip(df["access_size"], df["op"])]
    q = pooled_quantiles(hist_rows(experiments, "instr-latency"), df, ["pattern", "label", "size_type"], (0.5,))[0.5]
    labels = sorted(set(df["label"]), key=lambda t: (not t.startswith("dram"), t))
    wide = q.max() / q[q > 0].min() > 50
    for ax, pattern in zip(axes, ("seq", "rand")):
        assert ax.get_ylabel() == (MEDIAN_LOG if wide else MEDIAN) and ax.get_xlabel().startswith("Size_Type")
        assert ax.get_yscale() == ("log" if wide else "linear")
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        assert ticks == [f"{size}_{SHORT[op]}" for size in (64, 128, 256) for op in SHORT if op in set(df["op"])]
        drawn = bars(ax)
        assert list(drawn) == labels and legend_labels(ax) == labels
        for label, heights in drawn.items():
            assert heights == pytest.approx(q[pattern][label].to_dict(), rel=1e-9)
    assert_caption(fig, results, experiments["instr-latency"])


def test_tail_latency(experiments):
    """Top: p99.9 and p99.99 of every sample per hotspot size and the exact max, log-log (said in
    the label), of DRAM and pmem in one panel (a colour per statistic, a line style per target),
    hollow where fewer than 10 samples lie above; FAST'20's 50 µs outliers as a line on pmem's
    max. Below: the CCDF per target on shared log axes down to the drawn 1/n floor, with the
    paper's 0.006 % as a point at 50 µs on pmem's only; the caption sets our sample count
    against the paper's 20 M and says the 0.006 % lies below what 20 k samples resolve. The
    title names the op."""
    from pmemlab.plots.recipes import FLOOR_GID

    results, fig = figure_of(experiments, "tail-latency")
    pct, *ccdfs = data_axes(fig)
    assert pct.get_xscale() == "log" and pct.get_yscale() == "log"
    assert pct.get_xlabel() == "Hotspot size" and pct.get_ylabel() == "Latency (ns, log scale)"
    targets = ["dram", "pmem"]
    assert legend_labels(pct) == [f"{q} · {t}" for t in targets for q in ("99.9th", "99.99th", "max")]
    styles = {c.get_label(): (c.lines[0].get_linestyle(), c.lines[0].get_color()) for c in pct.containers}
    for q in ("99.9th", "99.99th", "max"):
        assert styles[f"{q} · dram"][1] == styles[f"{q} · pmem"][1] and styles[f"{q} · dram"][0] != styles[f"{q} · pmem"][0]
    df = agg(csv_rows(experiments, "tail-latency"))
    assert fig._suptitle.get_text() == f"Tail latency of 64 B {df['op'].iloc[0]} writes into a hotspot (1 thread)"
    hist = hist_rows(experiments, "tail-latency")
    hollow = [line for line in pct.get_lines() if line.get_gid() == "pmemlab-few-samples"]
    thin = sorted(zip(*[np.concatenate([line.get_xdata() for line in hollow]),
                        np.concatenate([line.get_ydata() for line in hollow])]))
    expected_thin = []
    for target in targets:
        sub = df[df["label"] == target]
        q = pooled_quantiles(hist, sub, ["hotspot_size"], (0.999, 0.9999))
        assert_curve(pct, f"99.9th · {target}", q[0.999])
        assert_curve(pct, f"99.99th · {target}", q[0.9999])
        assert_curve(pct, f"max · {target}", sub.groupby("hotspot_size")["lat_ns_max"].max())
        expected_thin += [(s, v) for qq in (0.999, 0.9999) for s, v in q[qq].items() if q["n"][s] * (1 - qq) < 10]
    assert thin == pytest.approx(sorted(expected_thin)) and expected_thin, "hollow: fewer than 10 samples above"
    assert [float(t) for t in pct.get_xticks()] == sorted(float(s) for s in df["hotspot_size"].unique())
    (max_ref,) = [line for line in pct.get_lines() if line.get_gid() == "pmemlab-reference"]
    assert list(max_ref.get_ydata()) == [50_000.0] * 2 and max_ref.get_color() == styles["max · pmem"][1]
    assert [ax.get_title() for ax in ccdfs] == [f"{t}: latency CCDF per hotspot size" for t in targets]
    assert ccdfs[0].get_shared_y_axes().joined(*ccdfs) and ccdfs[0].get_shared_x_axes().joined(*ccdfs)
    hotspots = sorted(df["hotspot_size"].unique())
    for target, ccdf in zip(targets, ccdfs):
        assert ccdf.get_yscale() == "log" and ccdf.get_xscale() == "log" and ccdf.get_ylabel().startswith("P(latency > x)")
        lines = [line for line in ccdf.get_lines() if line.get_gid() not in ("pmemlab-reference", FLOOR_GID)]
        assert len(lines) == len(hotspots) and legend_labels(ccdf)[0] == "256 B"
        sub = df[df["label"] == target]
        runs = hist[(hist["thread"] == "all") & (hist["label"] == target)].merge(
            sub[["point_key", "hotspot_size"]].drop_duplicates(), on="point_key")
        for size, line in zip(hotspots, lines):
            y = np.asarray(line.get_ydata(), float)
            counts = runs[runs["hotspot_size"] == size].groupby("hi_ns")["count"].sum().sort_index()
            n = counts.sum()
            assert y[0] == 1.0 and np.all(np.diff(y) <= 0) and y.min() == pytest.approx(1 / n), "a CCDF down to 1/n"
            assert list(y[1:-1]) == pytest.approx(list((n - counts.cumsum()) / n)[:-1])
            assert line.get_xdata()[-1] == pytest.approx(counts.index[-1]), "the last step runs to the maximum"
        n = runs.groupby("hotspot_size")["count"].sum()
        (floor,) = [line for line in ccdf.get_lines() if line.get_gid() == FLOOR_GID]
        assert list(floor.get_ydata()) == [pytest.approx(1 / n.min())] * 2
        assert f"1/n: one sample in n = {n.min() // 1000:g} k per size" in legend_labels(ccdf)
        assert ccdf.get_ylim()[0] <= 1 / n.max()
    assert ref_values(ccdfs[0]) == [], "no outlier share for DRAM"
    (point,) = [line for line in ccdfs[1].get_lines() if line.get_gid() == "pmemlab-reference"]
    assert (list(point.get_xdata()), list(point.get_ydata())) == ([50_000.0], [pytest.approx(6e-5)])
    assert point.get_linestyle() == "None", "a point, not a line across the panel"
    text = caption_of(fig)
    assert "percentiles from 20 k samples per hotspot size" in text and "FAST'20 issued 20 M writes" in text
    assert "p99.99 rests on 2 samples above it" in text
    assert "FAST'20 §3.3's 0.006 % is 1.2 of 20 k samples per hotspot size here: below what the data resolves" in text
    assert_caption(fig, results, experiments["tail-latency"])


def summary_ci(experiments, name: str) -> pd.DataFrame:
    """The sweeps' own summary CSVs (written when the fixtures were recorded), with the label."""
    frames = [pd.read_csv(path.with_name(path.stem + ".summary.csv")) for path in experiments[name]]
    return pd.concat(frames, ignore_index=True).assign(label=lambda df: df["target_label"])


def test_bw_threads(experiments):
    """One panel per target with what it is (DRAM, 1 DIMM); the mean over repeats with error bars
    from the smallest to the largest of the 2 repeats (a t interval of 2 is 12.7 standard errors
    wide and reaches below 0), on an axis from 0, ticks at the swept thread counts; the REPORT's
    single-DIMM values on the 1-DIMM panel; the caption names the missing panel."""
    results, fig = figure_of(experiments, "bw-threads")
    axes = data_axes(fig)
    assert [ax.get_title() for ax in axes] == ["dram · DRAM", "pmem · 1 DIMM, non-interleaved"]
    df = agg(csv_rows(experiments, "bw-threads"))
    summary = summary_ci(experiments, "bw-threads")
    for ax in axes:
        label = ax.get_title().split(" · ")[0]
        assert ax.get_xlabel() == "Threads" and ax.get_ylabel() == BW and ax.get_ylim()[0] == 0
        assert legend_labels(ax) == ["Read (load)", "Write (ntstore)", "Write (clwb)"]
        assert legend_title(ax).endswith("error bars: min-max of the repeats (2 repeats)")  # after the loop-bound note
        sub = df[df["label"] == label]
        for name, op in OPS.items():
            if op in set(sub["op"]):
                assert_curve(ax, name, mean_by(sub[sub["op"] == op], "threads", "bw_gbps"))
                lo, hi = whiskers_of(ax, name)
                by = sub[sub["op"] == op].groupby("threads")["bw_gbps"]
                assert list(lo) == pytest.approx(list(by.min()), rel=1e-9) and list(hi) == pytest.approx(
                    list(by.max()), rel=1e-9), "the repeats' range"
                expected = summary[(summary["label"] == label) & (summary["op"] == op)].sort_values("threads")
                assert (expected["bw_gbps_ci95"] > 0).all(), "the summary CSV keeps its CI"
        assert [float(t) for t in ax.get_xticks()] == sorted(float(t) for t in sub["threads"].unique())
    dram, pmem = axes
    assert ref_values(dram) == [] and ref_values(pmem) == [2.3, 6.6]
    text = caption_of(fig)
    assert "missing panels of FAST'20 fig 4: interleaved pmem" in text
    assert "6-DIMM values of REPORT §3.2.1 Obs. 4 not drawn (pmem has 1 DIMM)" in text
    assert_caption(fig, results, experiments["bw-threads"])


def test_bw_size(experiments):
    """Per target the random-access bandwidth of each op at its best thread count; where the
    REPORT's value was measured at another thread count (one thread), that count's curve dashed,
    the value on it in its colour; the REPORT's 'stores' (no instruction stated) on no curve,
    grey, labelled with its conditions. Two thread counts make no heatmaps: the caption says so."""
    results, fig = figure_of(experiments, "bw-size")
    axes = data_axes(fig)
    df = agg(csv_rows(experiments, "bw-size"))
    targets = ["dram", "pmem"]
    sizes = sorted(df["access_size"].unique())
    assert len(axes) == 2 and not any(ax.images for ax in fig.axes), "2 thread counts: no heatmaps"
    for ax, target in zip(axes, targets):
        assert ax.get_xscale() == "log" and ax.get_xlabel() == "Access size" and ax.get_ylabel() == BW
        assert ax.get_ylim()[0] == 0
        sub = df[df["label"] == target]
        by_threads = mean_by(sub, ["op", "threads"], "bw_gbps")
        best = {op: int(by_threads[op].idxmax()) for op in ("load", "ntstore", "store+clwb")}
        assert ax.get_title() == f"{target} · threads {best['load']}/{best['ntstore']}/{best['store+clwb']}"
        own = [f"{label} ({best[op]} thr)" for label, op in OPS.items() if op in best]
        assert legend_labels(ax)[:len(own)] == own
        for label, op in OPS.items():
            if op in best:
                chosen = sub[(sub["op"] == op) & (sub["threads"] == best[op])]
                assert_curve(ax, f"{label} ({best[op]} thr)", mean_by(chosen, "access_size", "bw_gbps"))
        assert [float(t) for t in ax.get_xticks()] == [float(s) for s in sizes], "a tick at every swept size"
        assert visible_ticks(ax) == ["64 B", "256 B", "1 KiB", "4 KiB", "16 KiB", "64 KiB", "128 KiB"]
    dram, pmem = axes
    assert ref_values(dram) == [] and ref_values(pmem) == [1.5, 2.8]
    one = df[(df["label"] == "pmem") & (df["op"] == "load") & (df["threads"] == 1)]
    assert_curve(pmem, "Read (load) (1 thr)", mean_by(one, "access_size", "bw_gbps"))
    colours = {c.get_label(): c.lines[0].get_color() for c in pmem.containers}
    assert pmem.containers[-1].get_label() == "Read (load) (1 thr)" and pmem.containers[-1].lines[0].get_linestyle() == "--"
    lines = {float(line.get_ydata()[0]): line for line in pmem.get_lines() if line.get_gid() == "pmemlab-reference"}
    assert lines[2.8].get_color() == colours["Read (load) (1 thr)"] and lines[1.5].get_color() == "0.3"
    entries = legend_texts(pmem)
    assert "REPORT summary Fig. 2: read peak 2.8 GB/s" in entries
    assert ("REPORT summary Fig. 2: write peak 1.5 GB/s (1 thread, 1 DIMM, peak over access sizes; 'stores', "
            "the instruction not stated)") in entries
    assert "no threads x access size heatmaps: 2 thread counts (1/2); they need 3" in caption_of(fig)
    assert_caption(fig, results, experiments["bw-size"])


def test_bw_size_heatmaps_with_three_thread_counts(experiments):
    """With 3 thread counts (the recorded runs, and a copy of the 2-thread ones as 4 threads at
    1.5x), a heatmap per target and op below the curves, threads x access size, one colour scale
    and one colour bar, loop-bound cells hatched, tick labels at 8 pt."""
    from pmemlab.plots.style import LOOP_BOUND_GID

    results = load_results(experiments["bw-size"])
    rows = results.rows
    four = rows[rows["threads"] == 2].copy()
    four["threads"], four["bw_gbps"] = 4, four["bw_gbps"] * 1.5
    four["point_key"] = four["point_key"] + "-4"
    results.rows = pd.concat([rows, four], ignore_index=True)
    fig = RECIPES["bw-size"](results)
    heat_axes = [ax for ax in data_axes(fig) if ax.images]
    assert len(heat_axes) == 2 * 3, "a heatmap per target and op"
    ok = results.ok()
    top = ok.groupby(["target_label", "op", "threads", "access_size"])["bw_gbps"].mean().max()
    bound = ok.assign(b=pd.to_numeric(ok["loop_bound"], errors="coerce") == 1)
    for ax in heat_axes:
        target, rest = ax.get_title().split(" · ", 1)
        op = OPS[rest.split(":")[0]]
        sub = ok[(ok["target_label"] == target) & (ok["op"] == op)]
        grid = sub.groupby(["threads", "access_size"])["bw_gbps"].mean().unstack().sort_index().sort_index(axis=1)
        assert np.allclose(ax.images[0].get_array(), grid.to_numpy()), ax.get_title()
        assert (ax.images[0].norm.vmin, ax.images[0].norm.vmax) == (0.0, pytest.approx(top)), "one colour scale"
        assert ax.get_ylabel() == "Threads" and all(t.get_fontsize() == 8 for t in ax.get_xticklabels())
        cells = bound[(bound["target_label"] == target) & (bound["op"] == op)].groupby(["threads", "access_size"])["b"].any()
        expected = sorted((list(grid.columns).index(a), list(grid.index).index(t)) for (t, a), b in cells.items() if b)
        hatched = sorted((round(p.get_x() + 0.5), round(p.get_y() + 0.5)) for p in ax.patches
                         if p.get_gid() == LOOP_BOUND_GID)
        assert hatched == expected, ax.get_title()
    bars_ = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    assert len(bars_) == 1 and bars_[0].get_ylabel().startswith(BW), "one colour bar"
    assert "hatched: loop-bound" in caption_of(fig)


def legend_texts(ax) -> list[str]:
    leg = ax.get_legend()
    return [" ".join(t.get_text().split("\n")) for t in leg.get_texts()] if leg else []


def probe_curve(df: pd.DataFrame, hist: pd.DataFrame) -> pd.DataFrame:
    """Per delay: mean aggregate bandwidth and the median of the probe's samples (the runs'
    aggregate histogram holds the latency threads' samples: the probe's), computed here."""
    ok = df[(df["status"] == "ok") & (df["thread"] == "all")]
    bw = ok.groupby("delay_ticks")["bw_gbps"].mean()
    lat = pooled_quantiles(hist, ok, ["delay_ticks"], (0.5,))[0.5]
    return pd.DataFrame({"bw": bw, "lat": lat}).sort_index(ascending=False)


def test_probe_histogram_is_the_probe_thread():
    """Under loaded latency the aggregate row's latency statistics are the probe thread's (the
    rule the figures rely on to take the probe's samples from the aggregate histogram)."""
    d = pd.read_csv(RECORDED / "loaded-latency.csv", dtype={"thread": str})
    d = d[d["status"] == "ok"]
    both = d[d["thread"] == "all"].merge(d[d["thread_role"] == "probe"], on=["target_label", "point_key", "repeat"])
    assert len(both) and (both["lat_ns_p50_x"] == both["lat_ns_p50_y"]).all()
    assert (both["lat_n_x"] == both["lat_n_y"]).all()


def test_emulation(experiments):
    results, fig = figure_of(experiments, "emulation")
    (ax,) = data_axes(fig)
    assert ax.get_xlabel() == BW and ax.get_ylabel() == "Probe median latency (ns, log scale)"
    assert ax.get_yscale() == "log" and ax.get_xlim()[0] == 0
    rows = csv_rows(experiments, "emulation")
    hist = hist_rows(experiments, "emulation")
    ran = set(rows.loc[rows["status"] == "ok", "label"])
    # every target ran: the memmap namespace, and DRAM on the guest's CPU-less node (dram-remote
    # and dram-cpuless both name node 1, the only other node)
    assert ran == {"pmem", "dram", "dram-remote", "emulated", "dram-cpuless"} and not results.not_run
    threads = rows[(rows["thread"] != "all") & (rows["status"] == "ok")]
    nodes = threads.groupby("label")[["thread_node", "target_node"]].agg(lambda s: sorted(set(s.astype(int))))
    shown = {label: label if t == m else f"{label} (threads on node {'/'.join(map(str, t))}, target on node "
                                         f"{'/'.join(map(str, m))})" for label, (t, m) in nodes.iterrows()}
    assert shown["dram-remote"] == "dram-remote (threads on node 0, target on node 1)" and shown["dram"] == "dram"
    assert set(legend_labels(ax)) == set(shown.values())
    for label in ran:
        expected = probe_curve(rows[rows["label"] == label], hist)
        x, y = curves(ax)[shown[label]]
        assert list(x) == pytest.approx(list(expected["bw"]), rel=1e-9), "x: achieved bandwidth per delay"
        assert list(y) == pytest.approx(list(expected["lat"]), rel=1e-9), "y: the probe's median"
    assert "not run:" not in caption_of(fig)
    assert notice_of(fig) == ("EMULATED: run under a hypervisor (qemu); emulated: memmap= DRAM; "
                              "pmem: virtual NVDIMM - not pmem performance")
    assert_caption(fig, results, experiments["emulation"])


def test_loaded_latency(experiments):
    results, fig = figure_of(experiments, "loaded-latency")
    axes = data_axes(fig)
    rows = csv_rows(experiments, "loaded-latency")
    hist = hist_rows(experiments, "loaded-latency")
    assert [ax.get_title().split(" · ")[0] for ax in axes] == ["dram", "pmem"]
    for ax in axes:
        target = ax.get_title().split(" · ")[0]
        assert ax.get_xlabel() == BW and ax.get_ylabel() == "Probe median latency (ns, log scale)"
        assert ax.get_yscale() == "log"
        assert legend_labels(ax) == ["Read (load) rand", "Read (load) seq", "Write (ntstore) rand", "Write (ntstore) seq"]
        sub = rows[rows["label"] == target]
        us = sub["delay_ticks"] / sub["tsc_khz"] * 1000
        assert ax.get_title().endswith(f"delay {us.min():.3g}-{us.max():.3g} µs")
        for label in legend_labels(ax):
            name, pattern = label.rsplit(" ", 1)
            loaders = sub["op"].astype(str).str.split(",").str[-1]  # the probe's load, then the loaders' op
            expected = probe_curve(sub[(loaders == OPS[name]) & (sub["pattern"] == pattern)], hist)
            x, y = curves(ax)[label]
            assert list(x) == pytest.approx(list(expected["bw"]), rel=1e-9), f"{label}: x is the achieved bandwidth"
            assert list(y) == pytest.approx(list(expected["lat"]), rel=1e-9), f"{label}: y is the probe's median"
    dram, pmem = axes
    assert ref_values(dram) == [52.3, 70.4, 105.9], "the REPORT's DRAM bandwidth ceilings (vertical lines)"
    assert ref_values(pmem) == [], "its Optane values are for six DIMMs; this namespace has one"
    assert "6-DIMM values of REPORT §3.2.5 not drawn" in caption_of(fig)
    assert_caption(fig, results, experiments["loaded-latency"])


def test_ewr_without_media_counters_says_so(experiments):
    results, fig = figure_of(experiments, "ewr")
    (ax,) = data_axes(fig)
    assert ax.get_xlabel().startswith("Effective write ratio") and ax.get_ylabel() == BW
    assert results.ok()["ewr"].isna().all()
    assert any("EWR unavailable" in t.get_text() for t in ax.texts)
    assert not ax.collections
    assert_caption(fig, results, experiments["ewr"])


def test_ewr_with_media_counters_scatters_points(experiments):
    """No Optane in the guest: give the rows EWR values to see that each point lands at (ewr, bw)."""
    results = load_results(experiments["ewr"])
    ok = (results.rows["thread"].astype(str) == "all") & (results.rows["status"] == "ok")
    results.rows.loc[ok, "ewr"] = np.linspace(0.2, 1.0, ok.sum())
    fig = RECIPES["ewr"](results)
    (ax,) = data_axes(fig)
    assert legend_labels(ax) == ["Write (ntstore)", "Write (clwb)"] and ax.get_ylim()[0] == 0
    okrows = results.rows[ok]
    for collection, label in zip(ax.collections, legend_labels(ax)):
        sub = okrows[okrows["op"] == OPS[label]]
        assert sorted(map(tuple, collection.get_offsets())) == pytest.approx(sorted(zip(sub["ewr"], sub["bw_gbps"])))


def test_xpbuffer(experiments):
    results, fig = figure_of(experiments, "xpbuffer")
    (ax,) = data_axes(fig)
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "Region size N (256 B XPLines)"
    assert "EWR proxy" in ax.get_ylabel() and ax.get_ylim()[0] == 0  # no media counters in the guest
    assert legend_labels(ax) == ["Write (ntstore)"]
    df = agg(csv_rows(experiments, "xpbuffer"))
    expected = mean_by(df.assign(n=df["working_set"] // 256), "n", "bw_gbps")
    assert list(expected.index) == [1, 4, 16, 64, 256, 1024]
    assert_curve(ax, "Write (ntstore)", expected)
    assert [float(t) for t in ax.get_xticks()] == [1, 4, 16, 64, 256, 1024]
    assert_caption(fig, results, experiments["xpbuffer"])


def test_flush_instr(experiments):
    """Bandwidth: mean from 0; latency: the median with p5-p95 whiskers on a log axis said in the
    label; FAST'20's crossover sizes as vertical lines."""
    results, fig = figure_of(experiments, "flush-instr")
    bw_ax, lat_ax = data_axes(fig)
    assert bw_ax.get_ylabel() == BW and lat_ax.get_ylabel() == MEDIAN_LOG and bw_ax.get_ylim()[0] == 0
    assert bw_ax.get_xscale() == "log" and lat_ax.get_xscale() == "log" and lat_ax.get_yscale() == "log"
    assert bw_ax.get_title() == "bandwidth (2 threads)" and lat_ax.get_title() == "latency (1 thread)"
    df = agg(csv_rows(experiments, "flush-instr"))
    lat = df[df["mode"] == "latency"]
    q = pooled_quantiles(hist_rows(experiments, "flush-instr"), lat, ["op", "access_size"], (0.5, 0.05, 0.95))
    for ax, mode in ((bw_ax, "bandwidth"), (lat_ax, "latency")):
        assert sorted(legend_labels(ax)) == sorted(["Write (ntstore) + sfence", "Write (clwb) + sfence",
                                                    "Write (store) + sfence"])
        for label in legend_labels(ax):
            op = OPS[label.removesuffix(" + sfence")]
            if mode == "bandwidth":
                assert_curve(ax, label, mean_by(df[(df["mode"] == mode) & (df["op"] == op)], "access_size", "bw_gbps"))
            else:  # a median below the clock's step is no value: a triangle at the step instead
                step = tcg_step_ns(hist_rows(experiments, "flush-instr"))
                assert_curve(ax, label, q[0.5][op].where(q[0.5][op] >= step))
                lo, hi = whiskers_of(ax, label)
                resolved = (q[0.5][op] >= step).to_numpy()
                assert list(lo[resolved]) == pytest.approx(list(q[0.05][op][resolved]))
                assert list(hi[resolved]) == pytest.approx(list(q[0.95][op][resolved]))
                colour = next(c.lines[0].get_color() for c in ax.containers if c.get_label() == label)
                under = [line for line in ax.get_lines() if line.get_gid() == "pmemlab-timer-step"
                         and line.get_color() == colour]
                ys = [y for line in under for y in line.get_ydata()]
                assert ys == [pytest.approx(step)] * int((~resolved).sum()), label
                assert all(line.get_marker() == "v" for line in under)
        sizes = sorted(df.loc[df["mode"] == mode, "access_size"].unique())
        assert [float(t) for t in ax.get_xticks()] == [float(s) for s in sizes]
    assert ref_values(bw_ax) == [256.0] and ref_values(lat_ax) == [512.0]
    assert "median; whiskers p5-p95 of 2 k samples per point" in legend_title(lat_ax)
    assert_caption(fig, results, experiments["flush-instr"])


def test_sfence_interval(experiments):
    results, fig = figure_of(experiments, "sfence-interval")
    (ax,) = data_axes(fig)
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "Write size between sfences" and ax.get_ylabel() == BW
    assert ax.get_ylim()[0] == 0
    assert sorted(legend_labels(ax)) == ["clwb after the write", "clwb every 64 B line"]
    df = agg(csv_rows(experiments, "sfence-interval"))
    for label, flush in (("clwb every 64 B line", "line"), ("clwb after the write", "access")):
        assert_curve(ax, label, mean_by(df[df["flush"] == flush], "access_size", "bw_gbps"))
    assert [float(t) for t in ax.get_xticks()] == sorted(float(s) for s in df["access_size"].unique())
    assert ref_values(ax) == [256.0, 8 * 2**20]
    assert_caption(fig, results, experiments["sfence-interval"])


def test_imc_contention(experiments):
    results, fig = figure_of(experiments, "imc-contention")
    left, right = data_axes(fig)
    assert left.get_xlabel() == "DIMMs per thread (N)" and left.get_ylabel() == "Bandwidth per DIMM (GB/s)"
    assert left.get_ylim()[0] == 0 and right.get_ylim()[0] == 0
    assert legend_labels(left) == ["Read (load) (2 thr)", "Write (ntstore) (2 thr)"]
    df = agg(csv_rows(experiments, "imc-contention"))
    per_dimm = df[df["placement"] == "per-dimm"]
    for label in legend_labels(left):
        sub = per_dimm[per_dimm["op"] == OPS[label.removesuffix(" (2 thr)")]]
        expected = (sub["bw_gbps"] / sub["interleave_ways"]).groupby(sub["dimms_per_thread"]).mean()
        assert list(expected.index) == [1, 2, 3, 4, 5, 6]
        assert_curve(left, label, expected)
    assert list(left.get_xticks()) == [1, 2, 3, 4, 5, 6]
    assert right.get_xscale() == "log" and right.get_ylabel() == BW
    spread = df[df["placement"] == "global"]
    for label in legend_labels(right):
        assert_curve(right, label, mean_by(spread[spread["op"] == OPS[label]], "access_size", "bw_gbps"))
    ticks = visible_ticks(right)
    assert {"4 KiB", "24 KiB", "48 KiB"} <= set(ticks), ticks  # the interleave size and the stripe peaks
    assert any(list(line.get_xdata()) == [4096, 4096] for line in right.get_lines())  # the interleave size
    assert ref_values(right) == [4096.0, 24576.0, 49152.0], "FAST'20's dip and peaks (6 DIMMs, 4 KiB)"
    assert_caption(fig, results, experiments["imc-contention"])


def test_numa_mix_records_missing_remote_node(experiments):
    """Two targets: pmem (node 0, with the CPUs: its remote points skipped, no other node has CPUs)
    and DRAM on the guest's CPU-less node 1, whose every run is remote (threads on node 0): its
    default-CPU and 'remote' runs land on the same CPUs and make one curve per thread count."""
    results, fig = figure_of(experiments, "numa-mix")
    (ax,) = data_axes(fig)
    assert ax.get_xlabel() == "Loads within each thread (%)" and ax.get_ylabel() == BW and ax.get_ylim()[0] == 0
    assert set(legend_labels(ax)) == {"pmem: 1 thread, local", "pmem: 2 threads, local",
                                      "dram-cpuless: 1 thread, remote", "dram-cpuless: 2 threads, remote"}
    df = agg(csv_rows(experiments, "numa-mix"))
    df["share"] = [100 if op == "load" else pct for op, pct in zip(df["op"], df["read_pct"])]
    pmem, cpuless = df[df["label"] == "pmem"], df[df["label"] == "dram-cpuless"]
    assert pmem["cpus"].isna().all() and set(cpuless["cpus"].fillna("")) == {"", "remote"}
    for threads, name in ((1, "1 thread"), (2, "2 threads")):
        expected = mean_by(pmem[pmem["threads"] == threads], "share", "bw_gbps")
        assert list(expected.index) == [0, 25, 75, 100]  # pure loads at 100 %, pure ntstores at 0 %
        assert_curve(ax, f"pmem: {name}, local", expected)
        assert_curve(ax, f"dram-cpuless: {name}, remote", mean_by(cpuless[cpuless["threads"] == threads], "share",
                                                                   "bw_gbps"))
    assert [float(t) for t in ax.get_xticks()] == [0, 25, 75, 100], "ticks at the swept shares only"
    skipped = results.rows[results.rows["status"] == "skipped"]
    assert set(skipped["target_label"]) == {"pmem"} and set(skipped["cpus"]) == {"remote"}
    assert skipped["error"].str.contains("no NUMA node other than the target").all()
    assert any("skipped" in t.get_text() for t in ax.texts)
    assert_caption(fig, results, experiments["numa-mix"])


def test_numa_mix_keeps_named_cpus_apart_from_local_runs(experiments):
    """On a one-node machine with enough CPUs, the runs on the 'remote' CPUs measure local memory:
    they must neither be called remote nor average into the curves of the default (local) CPUs."""
    results = load_results(experiments["numa-mix"])
    rows = results.rows[results.rows["target_label"] == "pmem"]  # the target with local CPUs
    local = rows["cpus"].isna()
    twin = rows[local].copy()  # the local runs, as if run on the CPUs meant for the other node
    twin["cpus"] = twin["threads"].map({1: "24", 2: "24-25"})
    twin["bw_gbps"] = twin["bw_gbps"] * 10
    twin["point_key"] = "x" + twin["point_key"].astype(str)
    results.rows = pd.concat([rows[local], twin], ignore_index=True)
    (ax,) = data_axes(RECIPES["numa-mix"](results))
    assert set(legend_labels(ax)) == {"1 thread, local", "2 threads, local", "1 thread, local (CPUs 24)",
                                      "2 threads, local (CPUs 24-25)"}
    df = agg(csv_rows(experiments, "numa-mix"))
    df = df[df["label"] == "pmem"].assign(share=lambda d: [100 if op == "load" else pct
                                                           for op, pct in zip(d["op"], d["read_pct"])])
    assert_curve(ax, "1 thread, local", mean_by(df[(df["threads"] == 1) & df["cpus"].isna()], "share", "bw_gbps"))


def test_numa_mix_tells_module_loads_apart(experiments):
    """numa-mix runs on the pmem namespace and on a CPU-less node's DRAM: their curves must not
    average into one another."""
    results = load_results(experiments["numa-mix"])
    rows = results.rows
    local = rows[rows["cpus"].isna() & (rows["target_label"] == "pmem")]
    other = local.copy()
    other["target_label"] = "dram-cpuless"
    other["bw_gbps"] = other["bw_gbps"] * 3
    other["point_key"] = "c" + other["point_key"].astype(str)
    results.rows = pd.concat([local.assign(target_label="pmem"), other], ignore_index=True)
    (ax,) = data_axes(RECIPES["numa-mix"](results))
    assert set(legend_labels(ax)) == {"pmem: 1 thread, local", "pmem: 2 threads, local",
                                      "dram-cpuless: 1 thread, local", "dram-cpuless: 2 threads, local"}
    df = agg(csv_rows(experiments, "numa-mix"))
    df["share"] = [100 if op == "load" else pct for op, pct in zip(df["op"], df["read_pct"])]
    one = mean_by(df[(df["threads"] == 1) & df["cpus"].isna() & (df["label"] == "pmem")], "share", "bw_gbps")
    assert_curve(ax, "pmem: 1 thread, local", one)
    assert_curve(ax, "dram-cpuless: 1 thread, local", one * 3)


def test_mixed_threads(experiments):
    results, fig = figure_of(experiments, "mixed-threads")
    left, right = data_axes(fig)
    assert left.get_xlabel() == "Threads" and right.get_xlabel().startswith("Reader threads k")
    assert sorted(legend_labels(left)) == ["1r:1w rand", "1r:1w seq"]  # 3-thread ratios skipped on 2 CPUs
    notes = " ".join(t.get_text() for t in left.texts)
    assert "not run: 2r:1w (threads: 3 exceeds the 2 online CPUs)" in notes and "not run: 2r:1nt" in notes
    assert sorted(legend_labels(right)) == ["NT rand", "NT seq", "W rand", "W seq"]
    df = agg(csv_rows(experiments, "mixed-threads"))
    for pattern in ("seq", "rand"):
        sub = df[df["pattern"] == pattern]
        ratio = sub[sub["op"] == "load,store"]
        assert_curve(left, f"1r:1w {pattern}", mean_by(ratio, "threads", "bw_gbps"))
        split = sub[sub["op"] != "load,store"].assign(k=[op.split(",").count("load") for op in sub["op"]
                                                         if op != "load,store"])
        for writer, name in (("store", "W"), ("ntstore", "NT")):
            part = split[[writer in op.split(",") or set(op.split(",")) == {"load"} for op in split["op"]]]
            expected = mean_by(part, "k", "bw_gbps")
            assert list(expected.index) == [0, 1, 2]
            assert_curve(right, f"{name} {pattern}", expected)
    assert [float(t) for t in left.get_xticks()] == [2.0] and left.get_xlim() == (1.0, 3.0)  # no 1.9 .. 2.1 ticks
    assert left.get_ylim()[0] == 0 and right.get_ylim()[0] == 0
    assert "skipped: 4 points" in caption_of(fig)
    assert "missing curves of REPORT fig 12: 2r:1nt (threads: 3 exceeds the 2 online CPUs)" in caption_of(fig)
    assert_caption(fig, results, experiments["mixed-threads"])


def test_page_size(experiments):
    results, fig = figure_of(experiments, "page-size")
    lat_ax, bw_ax = data_axes(fig)
    assert lat_ax.get_ylabel() == MEDIAN_LOG and bw_ax.get_ylabel() == BW and bw_ax.get_ylim()[0] == 0
    assert lat_ax.get_xscale() == bw_ax.get_xscale() == "log" and lat_ax.get_yscale() == "log"
    labels = legend_labels(lat_ax)
    assert any("4 KiB pages" in label for label in labels) and any("2 MiB pages" in label for label in labels)
    assert len(labels) == 3
    df = agg(csv_rows(experiments, "page-size"))
    hist = hist_rows(experiments, "page-size")
    # a median below the clock's step (0 ns: no TSC tick under TCG) is no value: an open triangle at
    # the step instead of a point (a log axis could not show the 0 anyway), said in the legend
    latency = df[df["mode"] == "latency"]
    medians = pooled_quantiles(hist, latency, ["label", "working_set"], (0.5,))[0.5]
    step = tcg_step_ns(hist)
    below = int((medians < step).sum())
    triangles = [y for line in lat_ax.get_lines() if line.get_gid() == "pmemlab-timer-step" for y in line.get_ydata()]
    assert below and (medians <= 0).any() and triangles == [pytest.approx(step)] * below
    assert not dropped_on_log_scale(lat_ax) and not dropped_on_log_scale(bw_ax)
    assert f"▽: median below the timer step ({step:.3g} ns), not resolved" in legend_title(lat_ax)
    for ax, mode in ((lat_ax, "latency"), (bw_ax, "bandwidth")):
        for label in legend_labels(ax):
            target, pages = label.split(" · ")
            sub = df[(df["label"] == target) & (df["mode"] == mode)]
            page = int(sub["target_page_size"].iloc[0])
            assert pages == {4096: "4 KiB pages", 2 << 20: "2 MiB pages", 1 << 30: "1 GiB pages"}[page]
            if mode == "bandwidth":
                assert_curve(ax, label, mean_by(sub, "working_set", "bw_gbps"))
            else:
                q = pooled_quantiles(hist, sub, ["working_set"], (0.5,))[0.5]
                assert_curve(ax, label, q.where(q >= step))
        assert [float(t) for t in ax.get_xticks()] == sorted(float(w) for w in df["working_set"].unique())
    assert_caption(fig, results, experiments["page-size"])


# --------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------
def test_plot_all_renders_every_experiment(results_dir, tmp_path, capsys):
    """Every experiment in PNG and SVG; and a gallery shows one clean revision: the recorded
    fixtures are one (plot-all is quiet about it); results of several revisions or of a modified
    tree are named on stderr."""
    from pmemlab.plots.gallery import gallery_problem

    assert cli.main(["plot-all", str(results_dir), "-o", str(tmp_path / "plots")]) == 0
    for name in RECIPES:
        for ext in ("png", "svg"):
            path = tmp_path / "plots" / f"{name}.{ext}"
            assert path.exists() and path.stat().st_size > 1000, path
    out, err = capsys.readouterr()
    assert "bw-threads (1 CSV)" in out
    assert "not gallery-ready" not in err, "the fixtures come from one clean revision"
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for name, revision in (("bw-threads", "abc1234"), ("xpbuffer", "def5678-dirty")):
        frame = pd.read_csv(results_dir / f"{name}.csv", dtype=str)
        frame.assign(toolkit_version=revision).to_csv(mixed / f"{name}.csv", index=False)
    assert cli.main(["plot-all", str(mixed), "-o", str(tmp_path / "mixed-plots")]) == 0
    err = capsys.readouterr().err
    assert "not gallery-ready: the results come from 2 revisions (abc1234: bw-threads; def5678-dirty: xpbuffer)" in err
    assert "def5678-dirty is a modified tree" in err
    assert gallery_problem({"abc1234": {"bw-size", "idle-latency"}}) == ""
    assert "v0.1.0-dirty is a modified tree" in gallery_problem({"v0.1.0-dirty": {"x"}})


@pytest.mark.parametrize("missing", [False, True])
def test_plot_all_on_empty_results_says_so(tmp_path, capsys, missing):
    results = tmp_path / "results"
    if not missing:
        results.mkdir()
        (results / "README.md").write_text("results go here\n")
    assert cli.main(["plot-all", str(results), "-o", str(tmp_path / "plots")]) == 2  # bad input: a script can tell
    err = capsys.readouterr().err
    assert ("no such directory" if missing else "nothing to plot: no pmemlab sweep CSV under") in err
    assert len(err.strip().splitlines()) == 1 and "; fix: " in err
    assert not (tmp_path / "plots").exists()


def test_generic_plot(experiments, tmp_path, capsys):
    csvs = [str(p) for p in experiments["bw-size"]]
    rc = cli.main(["plot", *csvs, "--x", "access_size", "--y", "bw_gbps", "--hue", "op", "--facet", "threads",
                   "--logx", "--logy", "-o", str(tmp_path), "--name", "g"])
    assert rc == 0
    assert (tmp_path / "g.png").exists() and (tmp_path / "g.svg").exists()
    from pmemlab.plots.render import generic_figure

    results = load_results(experiments["bw-size"])
    fig = generic_figure(results, "access_size", "bw_gbps", "op", "threads", logx=True, logy=True)
    axes = data_axes(fig)
    assert [ax.get_title() for ax in axes] == ["threads = 1", "threads = 2"]
    for ax in axes:
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        assert ax.get_xlabel() == "access_size (bytes)" and ax.get_ylabel() == "Bandwidth (GB/s, log scale)"
        assert legend_labels(ax) == ["load", "ntstore", "store+clwb"]
    df = agg(csv_rows(experiments, "bw-size"))
    for ax, threads in zip(axes, (1, 2)):
        for op in ("load", "ntstore", "store+clwb"):  # mean over both targets: no hue separates them
            assert_curve(ax, op, mean_by(df[(df["threads"] == threads) & (df["op"] == op)], "access_size", "bw_gbps"))
    assert "target:" in caption_of(fig)


def test_plot_picks_the_recipe_by_sweep_name(experiments, tmp_path, capsys):
    assert cli.main(["plot", *map(str, experiments["tail-latency"]), "-o", str(tmp_path)]) == 0
    assert (tmp_path / "tail-latency.png").exists() and (tmp_path / "tail-latency.svg").exists()


def test_plot_refuses_to_mix_sweeps(experiments, tmp_path, capsys):
    rc = cli.main(["plot", str(experiments["bw-size"][0]), str(experiments["ewr"][0]), "-o", str(tmp_path)])
    assert rc != 0 and "2 sweeps (bw-size, ewr)" in capsys.readouterr().err


def test_plot_bad_column_is_a_clear_error(experiments, tmp_path, capsys):
    rc = cli.main(["plot", str(experiments["bw-size"][0]), "--x", "nope", "-o", str(tmp_path)])
    assert rc == 2 and "--x: no column 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "bw-size.png").exists()


def test_error_bars_come_from_repeats(experiments):
    """bw-threads runs every point twice at the quick scale: each series has error bars whose
    half-length is the std of the repeats (the values are checked in test_bw_threads)."""
    results = load_results(experiments["bw-threads"])
    fig = RECIPES["bw-threads"](results)
    ok = results.ok()
    assert (ok.groupby(["source_csv", "point_key"])["repeat"].nunique() > 1).all()
    for ax in data_axes(fig):
        assert all(c.has_yerr for c in ax.containers if isinstance(c, ErrorbarContainer))
        assert all(yerr_of(ax, label).size for label in legend_labels(ax))


@pytest.mark.parametrize("name", list(RECIPES))
def test_recipe_renders_a_csv_without_runs(experiments, tmp_path, name):
    """A sweep that has written only its header (just started) still gets a figure that says so."""
    header = experiments[name][0].read_text().splitlines()[0]
    path = tmp_path / f"{name}.csv"
    path.write_text(header + "\n")
    fig = RECIPES[name](load_results([path]))
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any("no successful runs" in t or "unavailable" in t for t in texts)


def test_sweep_without_recipe_gets_one_series_per_other_axis(experiments, tmp_path):
    """e.g. configs/default.toml (make demo): x = access size (log2), one series per op."""
    from pmemlab.plots.render import fallback_figure

    path = tmp_path / "default.csv"
    df = pd.read_csv(experiments["bw-size"][0])
    df = df[df["threads"] == 1]  # left varying: op and access_size, as in default.toml
    df.assign(sweep="default").to_csv(path, index=False)
    fig = fallback_figure(load_results([path]))
    (ax, *_) = data_axes(fig)
    assert ax.get_xlabel() == "access_size (bytes)" and ax.get_xscale() == "log" and ax.get_ylabel() == BW
    assert legend_labels(ax) == sorted(df["op"].dropna().unique())
    for op in legend_labels(ax):
        assert_curve(ax, op, mean_by(agg(df[df["op"] == op]), "access_size", "bw_gbps"))


def test_histogram_percentiles_follow_the_module():
    """The figures' percentiles from a histogram (pooled_buckets + bucket_quantiles) are the
    module's own for a single run: every p50 .. p99.99 of every recorded run, exactly."""
    from pmemlab.analysis.resultset import bucket_quantiles, pooled_buckets

    checked = 0
    for hist in sorted(RECORDED.glob("*.hist.csv")):
        results = load_results([hist.with_name(hist.name.replace(".hist", ""))])
        ok = results.ok()
        for (key, repeat), buckets in pooled_buckets(results, ok, ["point_key", "repeat"]).items():
            row = ok[(ok["point_key"] == key) & (ok["repeat"] == repeat)].iloc[0]
            got = bucket_quantiles(buckets, [0.5, 0.9, 0.99, 0.999, 0.9999], row["lat_ns_min"], row["lat_ns_max"])
            assert got == pytest.approx([row[f"lat_ns_p{p}"] for p in ("50", "90", "99", "999", "9999")], rel=1e-12)
            checked += 1
    assert checked > 150


# --------------------------------------------------------------------------
# the timer step, measured from the samples
# --------------------------------------------------------------------------
def buckets_of(values_counts: dict[int, int], tsc_khz: float = 2_600_000.0, point: str = "p") -> pd.DataFrame:
    """Histogram rows as the module writes them: exact buckets below 256 ticks, 128 per power of
    two above (hist.c), for the sample values (ticks) and their counts given."""
    rows = []
    per_tick = 1e6 / tsc_khz
    for value, count in values_counts.items():
        if value < 256:
            lo = hi = value
        else:
            width = 1 << (value.bit_length() - 1 - 7)
            lo = value - value % width
            hi = lo + width - 1
        rows.append({"source_csv": "x.csv", "point_key": point, "repeat": 0, "thread": "all", "lo_ticks": lo,
                     "hi_ticks": hi, "lo_ns": lo * per_tick, "hi_ns": hi * per_tick, "count": count})
    return pd.DataFrame(rows)


def test_timer_step_is_measured_from_the_samples(experiments):
    """Every recorded run (QEMU TCG) steps by 26 ticks, 10 ns, on every target; a clock stepping by
    26 ticks with the overhead subtraction 4 ticks off and a tick of rounding either way is found;
    a dense clock resolves to the tick; samples only above the exact range bound the step by
    their neighbouring buckets; no samples: no step."""
    from pmemlab.analysis.resultset import timer_step

    checked = 0
    for name, paths in experiments.items():
        results = load_results(paths)
        if results.hist is None:
            continue
        for label in results.ok()["target_label"].unique():
            step = results.timer_step(label)
            if step is None:
                continue
            assert step.resolved and step.ticks == 26 and step.ns == pytest.approx(tcg_step_ns(
                hist_rows(experiments, name)), rel=1e-9), (name, label)
            checked += 1
    assert checked >= 10
    rng = np.random.default_rng(7)
    lattice = {}
    for k in range(1, 9):
        for jitter in (-1, 0, 1):
            lattice[26 * k - 4 + jitter] = int(rng.integers(50, 500))
    lattice[0] = 400
    step = timer_step(buckets_of(lattice))
    assert step is not None and step.resolved and step.ticks == 26 and step.ns == pytest.approx(10.0)
    assert step.text() == "10 ns (26 TSC ticks): every sample is a multiple"
    dense = timer_step(buckets_of({v: 100 for v in range(40, 200)}))
    assert dense is not None and not dense.resolved and dense.ticks == 1
    above = timer_step(buckets_of({v: 100 for v in range(700, 900)}))  # buckets 4 ticks wide there
    assert above is not None and not above.resolved and above.ticks == 8
    assert above.text().startswith("at most 3.1 ns")
    assert timer_step(buckets_of({})) is None and timer_step(None) is None


def test_timer_step_is_not_claimed_from_two_modes():
    """A bare-metal TSC whose cached latencies fall into two or three narrow modes is no stepping
    clock: no step is claimed (the neighbouring ticks bound it)."""
    from pmemlab.analysis.resultset import timer_step

    two = timer_step(buckets_of({39: 500, 40: 900, 41: 400, 122: 80, 123: 60}))
    assert two is not None and not two.resolved and two.ticks == 1
    odd = timer_step(buckets_of({30: 500, 31: 500, 75: 300, 76: 100, 190: 50}))
    assert odd is not None and not odd.resolved


def test_timer_step_per_run_offsets():
    """Each run subtracts its own overhead: one run's samples sit on 26 k, another's on 26 k + 12.
    Pooled they are no lattice; run by run both step by 26 ticks."""
    from pmemlab.analysis.resultset import timer_step

    one = buckets_of({26 * k: 100 for k in range(0, 6)}, point="a")
    other = buckets_of({26 * k + 12: 100 for k in range(0, 6)}, point="b")
    step = timer_step(pd.concat([one, other], ignore_index=True))
    assert step is not None and step.resolved and step.ticks == 26
