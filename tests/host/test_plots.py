"""Figures: every recipe renders from results recorded by the real module in the guest
(tests/host/fixtures/recorded, written by its record.sh), and draws the right DATA: each recipe's
lines, bars, CDFs and heatmaps are compared with the same statistic computed here from the CSVs
with pandas; plus the paper's axes, scales, series, legend entries and the caption line (target,
machine, date), checked through matplotlib's objects. Then the generic plot and plot-all."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import BarContainer, ErrorbarContainer

import pmemlab.cli as cli  # noqa: E402
from pmemlab.config import expand, load_config, target_loads  # noqa: E402
from pmemlab.plots.data import load_results  # noqa: E402
from pmemlab.plots.recipes import RECIPES  # noqa: E402
from pmemlab.plots.render import find_experiments  # noqa: E402
from pmemlab.plots.style import caption_of  # noqa: E402

TOP = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).resolve().parent / "fixtures" / "recorded"
BW = "Bandwidth (GB/s)"
LAT = "Latency (ns)"
OPS = {"Read (load)": "load", "Write (ntstore)": "ntstore", "Write (clwb)": "store+clwb", "Write (store)": "store"}


def recorded_loads() -> dict[str, dict[str, str]]:
    """Per experiment, LABEL -> insmod arguments of every load its quick config compares."""
    out = {}
    for name in RECIPES:
        cfg = load_config(TOP / "configs" / f"{name}.toml", scale="quick")
        out[name] = dict(target_loads(cfg, "/dev/pmem0"))
    return out


def skipped_loads() -> dict[str, str]:
    path = RECORDED / "SKIPPED"
    lines = path.read_text().splitlines() if path.exists() else []
    return {line.split(":", 1)[0]: line.split(":", 1)[1] for line in lines if ":" in line}


def test_recorded_fixtures_cover_every_recipe_at_the_current_quick_scale():
    """Every recipe has results recorded from the real module, one CSV per module load of its quick
    config (a load the guest could not run is listed in SKIPPED instead), each holding exactly the
    points the quick config expands to now: a changed config needs record.sh again."""
    recorded = find_experiments(RECORDED)
    assert set(recorded) == set(RECIPES)
    skipped = skipped_loads()
    for name, loads in recorded_loads().items():
        labels = {p.stem.split("@", 1)[1] for p in recorded[name]}
        assert labels | {k.split("@", 1)[1] for k in skipped if k.startswith(f"{name}@")} == set(loads), name
        assert not labels & {k.split("@", 1)[1] for k in skipped if k.startswith(f"{name}@")}, name
        keys = {p.key for p in expand(load_config(TOP / "configs" / f"{name}.toml", scale="quick"))}
        for path in recorded[name]:
            rows = pd.read_csv(path, usecols=["point_key", "status", "sweep"], dtype=str)
            assert set(rows["point_key"]) == keys, f"{path.name}: re-record with record.sh"
            assert (rows["status"] == "ok").any() and set(rows["sweep"]) == {name}
            side = json.loads(path.with_suffix(".json").read_text())
            assert side["description"].endswith("[scale: quick]") and side["status"] == "complete"
    for key in skipped:
        assert key.split("@", 1)[1] in recorded_loads()[key.split("@", 1)[0]], f"SKIPPED names an unknown load {key}"


@pytest.fixture(scope="session")
def results_dir(tmp_path_factory) -> Path:
    """Every experiment's recorded CSVs (with sidecars, histograms and SKIPPED) in one directory."""
    out = tmp_path_factory.mktemp("results")
    for path in RECORDED.iterdir():
        if path.suffix in (".csv", ".json") or path.name == "SKIPPED":
            (out / path.name).write_bytes(path.read_bytes())
    return out


@pytest.fixture(scope="session")
def experiments(results_dir) -> dict[str, list[Path]]:
    return find_experiments(results_dir)


def figure_of(experiments, name):
    results = load_results(experiments[name])
    return results, RECIPES[name](results)


def legend_labels(ax) -> list[str]:
    leg = ax.get_legend()
    return [t.get_text() for t in leg.get_texts()] if leg else []


def data_axes(fig):
    """The plotting axes (colour bars excluded)."""
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


# --------------------------------------------------------------------------
# what a figure draws, and the same statistics from the CSV
# --------------------------------------------------------------------------
def curves(ax) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """label -> (x, y) of every error-bar series (recipes draw lines with errorbar)."""
    out = {}
    for container in ax.containers:
        if isinstance(container, ErrorbarContainer):
            line = container.lines[0]
            out[container.get_label()] = (np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float))
    return out


def yerr_of(ax, label: str) -> np.ndarray:
    """Half the length of each error bar of the series `label` (symmetric bars: the std)."""
    container = next(c for c in ax.containers if isinstance(c, ErrorbarContainer) and c.get_label() == label)
    if not container.has_yerr:
        return np.array([])
    segments = container.lines[2][0].get_segments()
    return np.array([(seg[1][1] - seg[0][1]) / 2 for seg in segments])


def bars(ax) -> dict[str, dict[str, float]]:
    """hue label -> {category tick label: bar height} of grouped bars."""
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    return {c.get_label(): dict(zip(ticks, (p.get_height() for p in c.patches)))
            for c in ax.containers if isinstance(c, BarContainer)}


def bar_tops(ax, label: str) -> list[float]:
    """The upper end of each bar's error bar (mean + std) of hue `label`."""
    container = next(c for c in ax.containers if isinstance(c, BarContainer) and c.get_label() == label)
    return [seg[1][1] for seg in container.errorbar.lines[2][0].get_segments()]


def visible_ticks(ax) -> list[str]:
    """The x tick labels inside the axis' view."""
    lo, hi = sorted(ax.get_xlim())
    return [t.get_text() for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi and t.get_text()]


def agg(df: pd.DataFrame) -> pd.DataFrame:
    """The aggregate (thread = all) rows of successful runs, computed here, not by the recipe."""
    return df[(df["thread"].astype(str) == "all") & (df["status"] == "ok")].copy()


def csv_rows(experiments, name) -> pd.DataFrame:
    frames = []
    for path in experiments[name]:
        frame = pd.read_csv(path, low_memory=False, dtype={"thread": str, "op": str, "cpus": str})
        frame["label"] = path.stem.split("@", 1)[1]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def mean_by(df: pd.DataFrame, keys, y: str) -> pd.Series:
    return df.groupby(keys)[y].mean()


def assert_curve(ax, label: str, expected: pd.Series) -> None:
    """The series `label` has x = expected's index (sorted) and y = its values."""
    got = curves(ax)
    assert label in got, (label, list(got))
    x, y = got[label]
    expected = expected.sort_index()
    assert list(x) == pytest.approx([float(v) for v in expected.index]), label
    assert list(y) == pytest.approx(list(expected.to_numpy(float)), rel=1e-9), label


def sidecar_days(paths) -> str:
    days = sorted({json.loads(Path(p).with_suffix(".json").read_text())["started_at"][:10] for p in paths})
    return days[0] if len(days) == 1 else f"{days[0]} .. {days[-1]}"


def assert_caption(fig, results, paths):
    """The caption names the sweep, every target (label and device), the host, CPU model and kernel,
    and the day(s) the sidecars say the runs started."""
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


def test_every_experiment_has_results(experiments):
    assert set(experiments) == set(RECIPES)


# --------------------------------------------------------------------------
# one test per recipe: the data drawn, axis labels, scales, series, legend
# --------------------------------------------------------------------------
ACCESS = {("load", "seq"): "Read (seq)", ("load", "rand"): "Read (rand)", ("store+clwb", "seq"): "Write (clwb)",
          ("ntstore", "seq"): "Write (ntstore)"}


def test_idle_latency(experiments):
    results, fig = figure_of(experiments, "idle-latency")
    (ax,) = data_axes(fig)
    assert ax.get_ylabel() == LAT
    df = agg(csv_rows(experiments, "idle-latency"))
    df["access"] = [ACCESS[(o, p)] for o, p in zip(df["op"], df["pattern"])]
    means = mean_by(df, ["label", "access"], "lat_ns_mean")
    spread = mean_by(df, ["label", "access"], "lat_ns_stddev")
    assert ax.get_yscale() == ("log" if (means + spread).max() / means.min() > 50 else "linear")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Read (seq)", "Read (rand)", "Write (clwb)", "Write (ntstore)"]
    drawn = bars(ax)
    assert list(drawn) == ["dram", "pmem"]  # DRAM first, as in the paper
    for label, heights in drawn.items():
        assert heights == pytest.approx(means[label].to_dict(), rel=1e-9)
        tops = [means[label][a] + spread[label][a] for a in heights]
        assert bar_tops(ax, label) == pytest.approx(tops, rel=1e-9), "error bars: 1 std of the samples"
    assert legend_labels(ax) == ["dram", "pmem"]
    assert_caption(fig, results, experiments["idle-latency"])


SHORT = {"load": "L", "ntload": "LN", "store+clflush": "SF", "ntstore": "SN", "store+clflushopt": "SO", "store+clwb": "SW"}


def test_instr_latency(experiments):
    results, fig = figure_of(experiments, "instr-latency")
    axes = data_axes(fig)
    assert [ax.get_title() for ax in axes] == ["seq", "rand"]
    df = agg(csv_rows(experiments, "instr-latency"))
    df["size_type"] = [f"{a}_{SHORT[o]}" for a, o in zip(df["access_size"], df["op"])]
    means = mean_by(df, ["pattern", "label", "size_type"], "lat_ns_p50")
    std = df.groupby(["pattern", "label", "size_type"])["lat_ns_p50"].std().fillna(0)
    labels = sorted(set(df["label"]), key=lambda t: (not t.startswith("dram"), t))
    for ax, pattern in zip(axes, ("seq", "rand")):
        assert ax.get_ylabel() == "Median latency (ns)" and ax.get_xlabel().startswith("Size_Type")
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        assert ticks == [f"{size}_{SHORT[op]}" for size in (64, 128, 256) for op in SHORT if op in set(df["op"])]
        drawn = bars(ax)
        assert list(drawn) == labels and legend_labels(ax) == labels
        for label, heights in drawn.items():
            assert heights == pytest.approx(means[pattern][label].to_dict(), rel=1e-9)
    wide = (means + std).max() / means[means > 0].min() > 50
    assert all(ax.get_yscale() == ("log" if wide else "linear") for ax in axes)
    assert_caption(fig, results, experiments["instr-latency"])


def test_tail_latency(experiments):
    results, fig = figure_of(experiments, "tail-latency")
    pct, cdf = data_axes(fig)
    assert pct.get_xscale() == "log" and pct.get_yscale() == "log"
    assert pct.get_xlabel() == "Hotspot size" and pct.get_ylabel() == LAT
    assert legend_labels(pct) == ["99.9th", "99.99th", "max"]
    df = agg(csv_rows(experiments, "tail-latency"))
    for label, column in (("99.9th", "lat_ns_p999"), ("99.99th", "lat_ns_p9999"), ("max", "lat_ns_max")):
        assert_curve(pct, label, mean_by(df, "hotspot_size", column))
    assert cdf.get_xscale() == "log" and cdf.get_ylabel().startswith("CDF")
    hotspots = sorted(df["hotspot_size"].unique())
    lines = cdf.get_lines()
    assert len(lines) == len(hotspots) and legend_labels(cdf)[0] == "256 B"
    hist = pd.read_csv(experiments["tail-latency"][0].with_name("tail-latency@pmem.hist.csv"), dtype={"thread": str})
    hist = hist[hist["thread"] == "all"].merge(df[["point_key", "hotspot_size"]].drop_duplicates(), on="point_key")
    for size, line in zip(hotspots, lines):
        y = np.asarray(line.get_ydata(), float)
        assert np.all(np.diff(y) >= 0) and y[-1] == pytest.approx(1.0), "a CDF rises to 1"
        counts = hist[hist["hotspot_size"] == size].groupby("hi_ns")["count"].sum().sort_index()
        assert list(line.get_xdata()) == pytest.approx(list(counts.index))
        assert list(y) == pytest.approx(list(counts.cumsum() / counts.sum()))
    assert_caption(fig, results, experiments["tail-latency"])


def test_bw_threads(experiments):
    results, fig = figure_of(experiments, "bw-threads")
    axes = data_axes(fig)
    assert [ax.get_title() for ax in axes] == ["dram", "pmem"]  # DRAM on the left, as in the paper
    df = agg(csv_rows(experiments, "bw-threads"))
    for ax in axes:
        assert ax.get_xlabel() == "Threads" and ax.get_ylabel() == BW
        assert legend_labels(ax) == ["Read (load)", "Write (ntstore)", "Write (clwb)"]
        sub = df[df["label"] == ax.get_title()]
        for label, op in OPS.items():
            if op in set(sub["op"]):
                assert_curve(ax, label, mean_by(sub[sub["op"] == op], "threads", "bw_gbps"))
                assert list(yerr_of(ax, label)) == pytest.approx(
                    list(sub[sub["op"] == op].groupby("threads")["bw_gbps"].std()), rel=1e-9), "error bars: std of repeats"
        assert [float(t) for t in ax.get_xticks()] == sorted(float(t) for t in sub["threads"].unique())
    assert_caption(fig, results, experiments["bw-threads"])


def test_bw_size(experiments):
    results, fig = figure_of(experiments, "bw-size")
    axes = data_axes(fig)
    df = agg(csv_rows(experiments, "bw-size"))
    targets = ["dram", "pmem"]
    line_axes = axes[:2]
    for ax, target in zip(line_axes, targets):
        assert ax.get_xscale() == "log" and ax.get_xlabel() == "Access size" and ax.get_ylabel() == BW
        sub = df[df["label"] == target]
        by_threads = mean_by(sub, ["op", "threads"], "bw_gbps")
        best = {op: int(by_threads[op].idxmax()) for op in ("load", "ntstore", "store+clwb")}
        assert ax.get_title() == f"{target} · threads {best['load']}/{best['ntstore']}/{best['store+clwb']}"
        assert legend_labels(ax) == [f"{label} ({best[op]} thr)" for label, op in OPS.items() if op in best]
        for label, op in OPS.items():
            if op in best:
                chosen = sub[(sub["op"] == op) & (sub["threads"] == best[op])]
                assert_curve(ax, f"{label} ({best[op]} thr)", mean_by(chosen, "access_size", "bw_gbps"))
        assert visible_ticks(ax)[0] == "64 B"
    heat_axes = [ax for ax in axes[2:] if ax.images]
    assert len(heat_axes) == 2 * 3, "a heatmap per target and op"
    for ax in heat_axes:
        target, rest = ax.get_title().split(" · ", 1)
        op = OPS[rest.split(":")[0]]
        sub = df[(df["label"] == target) & (df["op"] == op)]
        grid = sub.groupby(["threads", "access_size"])["bw_gbps"].mean().unstack().sort_index().sort_index(axis=1)
        assert np.allclose(ax.images[0].get_array(), grid.to_numpy()), ax.get_title()
        assert ax.get_ylabel() == "Threads"
    assert any(ax.get_label() == "<colorbar>" and ax.get_ylabel() == BW for ax in fig.axes)
    assert_caption(fig, results, experiments["bw-size"])


def probe_curve(df: pd.DataFrame) -> pd.DataFrame:
    """Per delay: mean aggregate bandwidth and mean latency of the probe thread, computed here."""
    ok = df[df["status"] == "ok"]
    total = ok[ok["thread"] == "all"].groupby("delay_ticks")["bw_gbps"].mean()
    probe = ok[ok["thread_role"] == "probe"].groupby("delay_ticks")["lat_ns_mean"].mean()
    return pd.DataFrame({"bw": total, "lat": probe}).sort_index(ascending=False)


def test_emulation(experiments):
    results, fig = figure_of(experiments, "emulation")
    (ax,) = data_axes(fig)
    assert ax.get_xlabel() == BW and ax.get_ylabel() == LAT and ax.get_yscale() == "log"
    rows = csv_rows(experiments, "emulation")
    ran = set(rows.loc[rows["status"] == "ok", "label"])
    assert set(legend_labels(ax)) == ran and {"pmem", "dram", "emulated"} <= ran  # the memmap namespace ran
    for label in ran:
        expected = probe_curve(rows[rows["label"] == label])
        x, y = curves(ax)[label]
        assert list(x) == pytest.approx(list(expected["bw"]), rel=1e-9), "x: achieved bandwidth per delay"
        assert list(y) == pytest.approx(list(expected["lat"]), rel=1e-9), "y: the probe thread's latency"
    for entry in results.not_run:  # loads insmod refused (no second node in the guest) are named
        assert f"not run: {entry.split(':')[0]}" in caption_of(fig)
    assert "not run: dram-remote" in caption_of(fig)
    assert_caption(fig, results, experiments["emulation"])


def test_loaded_latency(experiments):
    results, fig = figure_of(experiments, "loaded-latency")
    axes = data_axes(fig)
    rows = csv_rows(experiments, "loaded-latency")
    assert [ax.get_title().split(" · ")[0] for ax in axes] == ["dram", "pmem"]
    for ax in axes:
        target = ax.get_title().split(" · ")[0]
        assert ax.get_xlabel() == BW and ax.get_ylabel() == LAT and ax.get_yscale() == "log"
        assert legend_labels(ax) == ["Read (load) rand", "Read (load) seq", "Write (ntstore) rand", "Write (ntstore) seq"]
        sub = rows[rows["label"] == target]
        us = sub["delay_ticks"] / sub["tsc_khz"] * 1000
        assert ax.get_title().endswith(f"delay {us.min():.3g}-{us.max():.3g} µs")
        for label in legend_labels(ax):
            name, pattern = label.rsplit(" ", 1)
            expected = probe_curve(sub[(sub["op"] == OPS[name]) & (sub["pattern"] == pattern)])
            x, y = curves(ax)[label]
            assert list(x) == pytest.approx(list(expected["bw"]), rel=1e-9), f"{label}: x is the achieved bandwidth"
            assert list(y) == pytest.approx(list(expected["lat"]), rel=1e-9), f"{label}: y is the probe latency"
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
    assert legend_labels(ax) == ["Write (ntstore)", "Write (clwb)"]
    okrows = results.rows[ok]
    for collection, label in zip(ax.collections, legend_labels(ax)):
        sub = okrows[okrows["op"] == OPS[label]]
        assert sorted(map(tuple, collection.get_offsets())) == pytest.approx(sorted(zip(sub["ewr"], sub["bw_gbps"])))


def test_xpbuffer(experiments):
    results, fig = figure_of(experiments, "xpbuffer")
    (ax,) = data_axes(fig)
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "Region size N (256 B XPLines)"
    assert "EWR proxy" in ax.get_ylabel()  # no media counters in the guest
    assert legend_labels(ax) == ["Write (ntstore)"]
    df = agg(csv_rows(experiments, "xpbuffer"))
    expected = mean_by(df.assign(n=df["working_set"] // 256), "n", "bw_gbps")
    assert list(expected.index) == [1, 4, 16, 64, 256, 1024]
    assert_curve(ax, "Write (ntstore)", expected)
    assert_caption(fig, results, experiments["xpbuffer"])


def test_flush_instr(experiments):
    results, fig = figure_of(experiments, "flush-instr")
    bw_ax, lat_ax = data_axes(fig)
    assert bw_ax.get_ylabel() == BW and lat_ax.get_ylabel() == LAT
    assert bw_ax.get_xscale() == "log" and lat_ax.get_xscale() == "log" and lat_ax.get_yscale() == "log"
    assert bw_ax.get_title() == "bandwidth (2 threads)" and lat_ax.get_title() == "latency (1 thread)"
    df = agg(csv_rows(experiments, "flush-instr"))
    for ax, mode, y in ((bw_ax, "bandwidth", "bw_gbps"), (lat_ax, "latency", "lat_ns_mean")):
        assert sorted(legend_labels(ax)) == sorted(["Write (ntstore) + sfence", "Write (clwb) + sfence",
                                                    "Write (store) + sfence"])
        for label in legend_labels(ax):
            op = OPS[label.removesuffix(" + sfence")]
            assert_curve(ax, label, mean_by(df[(df["mode"] == mode) & (df["op"] == op)], "access_size", y))
    assert_caption(fig, results, experiments["flush-instr"])


def test_sfence_interval(experiments):
    results, fig = figure_of(experiments, "sfence-interval")
    (ax,) = data_axes(fig)
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "Write size between sfences" and ax.get_ylabel() == BW
    assert sorted(legend_labels(ax)) == ["clwb after the write", "clwb every 64 B line"]
    df = agg(csv_rows(experiments, "sfence-interval"))
    for label, flush in (("clwb every 64 B line", "line"), ("clwb after the write", "access")):
        assert_curve(ax, label, mean_by(df[df["flush"] == flush], "access_size", "bw_gbps"))
    assert_caption(fig, results, experiments["sfence-interval"])


def test_imc_contention(experiments):
    results, fig = figure_of(experiments, "imc-contention")
    left, right = data_axes(fig)
    assert left.get_xlabel() == "DIMMs per thread (N)" and left.get_ylabel() == "Bandwidth per DIMM (GB/s)"
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
    assert_caption(fig, results, experiments["imc-contention"])


def test_numa_mix_records_missing_remote_node(experiments):
    results, fig = figure_of(experiments, "numa-mix")
    (ax,) = data_axes(fig)
    assert ax.get_xlabel() == "Loads within each thread (%)" and ax.get_ylabel() == BW
    assert set(legend_labels(ax)) == {"1 thread, local", "2 threads, local"}
    df = agg(csv_rows(experiments, "numa-mix"))
    df["share"] = [100 if op == "load" else pct for op, pct in zip(df["op"], df["read_pct"])]
    for threads, label in ((1, "1 thread, local"), (2, "2 threads, local")):
        expected = mean_by(df[(df["threads"] == threads) & df["cpus"].isna()], "share", "bw_gbps")
        assert list(expected.index) == [0, 25, 75, 100]  # pure loads at 100 %, pure ntstores at 0 %
        assert_curve(ax, label, expected)
    skipped = results.rows[results.rows["status"] == "skipped"]
    assert not skipped.empty and skipped["error"].str.contains("no NUMA node other than the target").all()
    assert any("skipped" in t.get_text() for t in ax.texts)
    assert_caption(fig, results, experiments["numa-mix"])


def test_numa_mix_keeps_named_cpus_apart_from_local_runs(experiments):
    """On a one-node machine with enough CPUs, the runs on the 'remote' CPUs measure local memory:
    they must neither be called remote nor average into the curves of the default (local) CPUs."""
    results = load_results(experiments["numa-mix"])
    rows = results.rows
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
    df["share"] = [100 if op == "load" else pct for op, pct in zip(df["op"], df["read_pct"])]
    assert_curve(ax, "1 thread, local", mean_by(df[(df["threads"] == 1) & df["cpus"].isna()], "share", "bw_gbps"))


def test_numa_mix_tells_module_loads_apart(experiments):
    """numa-mix runs on the pmem namespace and on a CPU-less node's DRAM: their curves must not
    average into one another."""
    results = load_results(experiments["numa-mix"])
    rows = results.rows
    local = rows[rows["cpus"].isna()]
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
    one = mean_by(df[(df["threads"] == 1) & df["cpus"].isna()], "share", "bw_gbps")
    assert_curve(ax, "pmem: 1 thread, local", one)
    assert_curve(ax, "dram-cpuless: 1 thread, local", one * 3)


def test_mixed_threads(experiments):
    results, fig = figure_of(experiments, "mixed-threads")
    left, right = data_axes(fig)
    assert left.get_xlabel() == "Threads" and right.get_xlabel().startswith("Reader threads k")
    assert sorted(legend_labels(left)) == ["1r:1w rand", "1r:1w seq"]  # 3-thread ratios skipped on 2 CPUs
    notes = " ".join(t.get_text() for t in left.texts)
    assert "not run: 2r:1w (threads: more threads than the 2 online CPUs)" in notes and "not run: 2r:1nt" in notes
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
    assert "skipped: 4 points" in caption_of(fig)
    assert_caption(fig, results, experiments["mixed-threads"])


def test_page_size(experiments):
    results, fig = figure_of(experiments, "page-size")
    lat_ax, bw_ax = data_axes(fig)
    assert lat_ax.get_ylabel() == LAT and bw_ax.get_ylabel() == BW
    assert lat_ax.get_xscale() == bw_ax.get_xscale() == "log" and lat_ax.get_yscale() == "log"
    labels = legend_labels(lat_ax)
    assert any("4 KiB pages" in label for label in labels) and any("2 MiB pages" in label for label in labels)
    assert len(labels) == 3
    df = agg(csv_rows(experiments, "page-size"))
    for ax, mode, y in ((lat_ax, "latency", "lat_ns_mean"), (bw_ax, "bandwidth", "bw_gbps")):
        for label in legend_labels(ax):
            target, pages = label.split(" · ")
            sub = df[(df["label"] == target) & (df["mode"] == mode)]
            page = int(sub["target_page_size"].iloc[0])
            assert pages == {4096: "4 KiB pages", 2 << 20: "2 MiB pages", 1 << 30: "1 GiB pages"}[page]
            assert_curve(ax, label, mean_by(sub, "working_set", y))
    assert_caption(fig, results, experiments["page-size"])


# --------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------
def test_plot_all_renders_every_experiment(results_dir, tmp_path, capsys):
    assert cli.main(["plot-all", str(results_dir), "-o", str(tmp_path / "plots")]) == 0
    for name in RECIPES:
        for ext in ("png", "svg"):
            path = tmp_path / "plots" / f"{name}.{ext}"
            assert path.exists() and path.stat().st_size > 1000, path
    assert "bw-threads (2 CSV)" in capsys.readouterr().out


@pytest.mark.parametrize("missing", [False, True])
def test_plot_all_on_empty_results_says_so(tmp_path, capsys, missing):
    results = tmp_path / "results"
    if not missing:
        results.mkdir()
        (results / "README.md").write_text("results go here\n")
    assert cli.main(["plot-all", str(results), "-o", str(tmp_path / "plots")]) == 0
    assert "nothing to plot" in capsys.readouterr().out
    assert not (tmp_path / "plots").exists() or not any((tmp_path / "plots").iterdir())


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
        assert ax.get_xlabel() == "access_size (bytes)" and ax.get_ylabel() == BW
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
    assert rc != 0 and "no column 'nope'" in capsys.readouterr().err


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
