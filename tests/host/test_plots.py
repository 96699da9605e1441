"""Figures: every recipe renders from a small results set and has the paper's axes, scales,
series and legend entries (checked on the matplotlib objects); the generic plot; plot-all.

Results come from tests/host/fixtures/recorded/ (real runs of the module in the guest, written by
record.sh) where an experiment has been recorded, else from the same configs at quick scale run
through the fake module."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures"))
from fake_pmemlab import make_fake  # noqa: E402

import pmemlab.cli as cli  # noqa: E402
import pmemlab.machine as machine  # noqa: E402
from pmemlab.config import load_config, target_loads  # noqa: E402
from pmemlab.plots.data import load_results, mean_over_repeats  # noqa: E402
from pmemlab.plots.recipes import RECIPES  # noqa: E402
from pmemlab.plots.render import find_experiments  # noqa: E402
from pmemlab.plots.style import caption_of  # noqa: E402

TOP = Path(__file__).resolve().parents[2]
RECORDED = Path(__file__).resolve().parent / "fixtures" / "recorded"
BW = "Bandwidth (GB/s)"
LAT = "Latency (ns)"


def _fake_results(out: Path, work: Path, name: str) -> None:
    """configs/NAME.toml at quick scale through the fake module, one CSV per module load."""
    cfg_path = TOP / "configs" / f"{name}.toml"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(machine, "run_tool", lambda argv: machine.ToolResult(127, "", "not installed"))
        mp.setattr(cli, "_online_cpus", lambda: 2)
        for label, args in target_loads(load_config(cfg_path, scale="quick"), "/dev/pmem0"):
            dram = "target=dram" in args
            fake = make_fake(work / f"{name}-{label}", target="dram" if dram else "/dev/pmem0",
                             target_kind="dram" if dram else "fsdax", run_s=0.0005)
            if "dram_pages=4k" in args:
                (fake.root / "target_page_size").write_text("4096\n")
            mp.setattr(cli, "_module", lambda _args, f=fake: f.module())
            rc = cli.main(["sweep", str(cfg_path), "--scale", "quick", "--no-progress",
                           "-o", str(out / f"{name}@{label}.csv")])
            assert rc == 0


@pytest.fixture(scope="session")
def results_dir(tmp_path_factory) -> Path:
    """One directory with every experiment: recorded CSVs where present, else fake-module runs."""
    out = tmp_path_factory.mktemp("results")
    recorded = find_experiments(RECORDED)
    for name in RECIPES:
        if name in recorded:
            for path in recorded[name]:
                for sibling in path.parent.glob(path.stem + ".*"):
                    (out / sibling.name).write_bytes(sibling.read_bytes())
        else:
            _fake_results(out, tmp_path_factory.mktemp("fake"), name)
    if (RECORDED / "SKIPPED").exists():
        (out / "SKIPPED").write_bytes((RECORDED / "SKIPPED").read_bytes())
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


def assert_caption(fig, results):
    text = caption_of(fig)
    assert text.startswith(results.name) and "target:" in text and "machine:" in text and "date:" in text
    for host in results.rows["hostname"].dropna().unique():
        assert str(host) in text
    for label in results.rows["target_label"].unique():
        assert str(label) in text


def test_every_experiment_has_results(experiments):
    assert set(experiments) == set(RECIPES)


# --------------------------------------------------------------------------
# one test per recipe: axis labels, scales, series, legend
# --------------------------------------------------------------------------
def test_idle_latency(experiments):
    results, fig = figure_of(experiments, "idle-latency")
    (ax,) = data_axes(fig)
    assert ax.get_ylabel() == LAT
    stats = mean_over_repeats(results.ok(), ["op", "pattern", "target_label"], "lat_ns_mean")
    spread = (stats["mean"] + mean_over_repeats(results.ok(), ["op", "pattern", "target_label"],
                                                 "lat_ns_stddev")["mean"]).max() / stats["mean"].min()
    assert ax.get_yscale() == ("log" if spread > 50 else "linear")  # the paper's linear axis unless outliers
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Read (seq)", "Read (rand)", "Write (clwb)", "Write (ntstore)"]
    assert sorted(legend_labels(ax)) == sorted(results.rows["target_label"].unique())
    assert len(ax.patches) == 4 * len(legend_labels(ax))
    assert_caption(fig, results)


def test_instr_latency(experiments):
    results, fig = figure_of(experiments, "instr-latency")
    axes = data_axes(fig)
    assert [ax.get_title().split(" · ")[0] for ax in axes] == ["seq", "rand"]
    assert axes[0].get_ylabel() == "Median latency (ns)"
    ticks = [t.get_text() for t in axes[0].get_xticklabels()]
    assert ticks[:2] == ["L", "LN"] and set(ticks) <= {"L", "LN", "SF", "SN", "SO", "SW"}
    assert legend_labels(axes[0]) == ["64 B", "128 B", "256 B"]
    assert_caption(fig, results)


def test_tail_latency(experiments):
    results, fig = figure_of(experiments, "tail-latency")
    pct, cdf = data_axes(fig)
    assert pct.get_xscale() == "log" and pct.get_yscale() == "log"
    assert pct.get_xlabel() == "Hotspot size" and pct.get_ylabel() == LAT
    assert legend_labels(pct) == ["99.9th", "99.99th", "max"]
    assert cdf.get_xscale() == "log" and cdf.get_ylabel().startswith("CDF")
    hotspots = sorted(results.ok()["hotspot_size"].unique())
    assert len(cdf.get_lines()) == len(hotspots) and legend_labels(cdf)[0] == "256 B"
    for line in cdf.get_lines():
        assert line.get_ydata()[-1] == pytest.approx(1.0)
    assert_caption(fig, results)


def test_bw_threads(experiments):
    results, fig = figure_of(experiments, "bw-threads")
    axes = data_axes(fig)
    assert [ax.get_title() for ax in axes] == ["dram", "pmem"]  # DRAM on the left, as in the paper
    for ax in axes:
        assert ax.get_xlabel() == "Threads" and ax.get_ylabel() == BW
        assert legend_labels(ax) == ["Read (load)", "Write (ntstore)", "Write (clwb)"]
        assert len(ax.get_lines()) >= 3
    assert_caption(fig, results)


def test_bw_size(experiments):
    results, fig = figure_of(experiments, "bw-size")
    lines_ax, _, heat_ax, _ = data_axes(fig)
    assert lines_ax.get_xscale() == "log" and lines_ax.get_xlabel() == "Access size" and lines_ax.get_ylabel() == BW
    labels = legend_labels(lines_ax)
    assert len(labels) == 3 and all(label.endswith(" thr)") for label in labels)
    assert lines_ax.get_title().startswith("dram · threads ")
    assert [t.get_text() for t in lines_ax.get_xticklabels() if t.get_text()][0].endswith(" B")
    assert heat_ax.images and heat_ax.get_ylabel() == "Threads"
    assert any(ax.get_label() == "<colorbar>" and ax.get_ylabel() == BW for ax in fig.axes)
    assert_caption(fig, results)


def test_emulation(experiments):
    results, fig = figure_of(experiments, "emulation")
    (ax,) = data_axes(fig)
    assert ax.get_xlabel() == BW and ax.get_ylabel() == LAT and ax.get_yscale() == "log"
    ran = set(results.ok()["target_label"])
    assert set(legend_labels(ax)) == ran and "pmem" in ran and "dram" in ran
    for entry in results.not_run:  # loads insmod refused (no second node in the guest) are named
        assert f"not run: {entry.split(':')[0]}" in caption_of(fig)
    assert_caption(fig, results)


def test_loaded_latency(experiments):
    results, fig = figure_of(experiments, "loaded-latency")
    axes = data_axes(fig)
    assert [ax.get_title() for ax in axes] == ["dram", "pmem"]
    for ax in axes:
        assert ax.get_xlabel() == BW and ax.get_ylabel() == LAT and ax.get_yscale() == "log"
        assert legend_labels(ax) == ["Read (load) rand", "Read (load) seq", "Write (ntstore) rand", "Write (ntstore) seq"]
    assert_caption(fig, results)


def test_ewr_without_media_counters_says_so(experiments):
    results, fig = figure_of(experiments, "ewr")
    (ax,) = data_axes(fig)
    assert ax.get_xlabel().startswith("Effective write ratio") and ax.get_ylabel() == BW
    assert results.ok()["ewr"].isna().all()
    assert any("EWR unavailable" in t.get_text() for t in ax.texts)
    assert_caption(fig, results)


def test_ewr_with_media_counters_scatters_points(experiments):
    results = load_results(experiments["ewr"])
    ok = (results.rows["thread"].astype(str) == "all") & (results.rows["status"] == "ok")
    results.rows.loc[ok, "ewr"] = 0.5
    fig = RECIPES["ewr"](results)
    (ax,) = data_axes(fig)
    assert len(ax.collections) == results.ok()["op"].nunique()
    assert legend_labels(ax) == ["Write (ntstore)", "Write (clwb)"]


def test_xpbuffer(experiments):
    results, fig = figure_of(experiments, "xpbuffer")
    (ax,) = data_axes(fig)
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "Region size N (256 B XPLines)"
    assert "EWR proxy" in ax.get_ylabel()  # no media counters in the guest
    assert legend_labels(ax) == ["Write (ntstore)"]
    assert list(ax.get_lines()[0].get_xdata()) == [1, 4, 16, 64, 256, 1024]
    assert_caption(fig, results)


def test_flush_instr(experiments):
    results, fig = figure_of(experiments, "flush-instr")
    bw_ax, lat_ax = data_axes(fig)
    assert bw_ax.get_ylabel() == BW and lat_ax.get_ylabel() == LAT
    assert bw_ax.get_xscale() == "log" and lat_ax.get_xscale() == "log" and lat_ax.get_yscale() == "log"
    assert bw_ax.get_title() == "bandwidth (2 threads)" and lat_ax.get_title() == "latency (1 thread)"
    for ax in (bw_ax, lat_ax):
        assert sorted(legend_labels(ax)) == sorted(["Write (ntstore) + sfence", "Write (clwb) + sfence",
                                                    "Write (store) + sfence"])
    assert_caption(fig, results)


def test_sfence_interval(experiments):
    results, fig = figure_of(experiments, "sfence-interval")
    (ax,) = data_axes(fig)
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "Write size between sfences" and ax.get_ylabel() == BW
    assert sorted(legend_labels(ax)) == ["clwb after the write", "clwb every 64 B line"]
    assert_caption(fig, results)


def test_imc_contention(experiments):
    results, fig = figure_of(experiments, "imc-contention")
    left, right = data_axes(fig)
    assert left.get_xlabel() == "DIMMs per thread (N)" and left.get_ylabel() == "Bandwidth per DIMM (GB/s)"
    assert legend_labels(left) == ["Read (load) (2 thr)", "Write (ntstore) (2 thr)"]
    assert list(left.get_lines()[0].get_xdata()) == [1, 2, 3, 4, 5, 6]
    assert right.get_xscale() == "log" and right.get_ylabel() == BW
    assert any(list(line.get_xdata()) == [4096, 4096] for line in right.get_lines())  # the interleave size
    assert_caption(fig, results)


def test_numa_mix_records_missing_remote_node(experiments):
    results, fig = figure_of(experiments, "numa-mix")
    (ax,) = data_axes(fig)
    assert ax.get_xlabel() == "Loads within each thread (%)" and ax.get_ylabel() == BW
    assert set(legend_labels(ax)) == {"1 thread, local", "2 threads, local"}
    skipped = results.rows[results.rows["status"] == "skipped"]
    assert not skipped.empty and skipped["error"].str.contains("not online").all()
    assert any("skipped" in t.get_text() for t in ax.texts)
    assert_caption(fig, results)


def test_mixed_threads(experiments):
    results, fig = figure_of(experiments, "mixed-threads")
    left, right = data_axes(fig)
    assert left.get_xlabel() == "Threads" and right.get_xlabel().startswith("Reader threads k")
    assert sorted(legend_labels(left)) == ["1r:1w rand", "1r:1w seq"]  # 3-thread ratios skipped on 2 CPUs
    assert sorted(legend_labels(right)) == ["NT rand", "NT seq", "W rand", "W seq"]
    for line in right.get_lines():
        assert list(line.get_xdata()) == [0, 1, 2]
    assert_caption(fig, results)


def test_page_size(experiments):
    results, fig = figure_of(experiments, "page-size")
    lat_ax, bw_ax = data_axes(fig)
    assert lat_ax.get_ylabel() == LAT and bw_ax.get_ylabel() == BW
    assert lat_ax.get_xscale() == bw_ax.get_xscale() == "log" and lat_ax.get_yscale() == "log"
    labels = legend_labels(lat_ax)
    assert any("4 KiB pages" in label for label in labels) and any("2 MiB pages" in label for label in labels)
    assert len(labels) == 3
    assert_caption(fig, results)


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
        assert all(len(line.get_xdata()) == 6 for line in ax.get_lines())
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
    results = load_results(experiments["bw-threads"])
    fig = RECIPES["bw-threads"](results)
    ax = data_axes(fig)[0]
    ok = results.ok()
    repeats = ok.groupby("point_key")["repeat"].nunique()
    if (repeats > 1).any():
        # errorbar containers carry the bar lines: one per series
        assert all(container.has_yerr for container in ax.containers)
    df = pd.read_csv(experiments["bw-threads"][0])
    assert (df["status"] == "ok").any()


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
