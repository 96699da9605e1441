"""The experiment suite of configs/: every config expands and validates at full and quick scale,
fits the guest (1 GiB namespace, 2 vCPUs) at quick scale, and the scale / targets hooks work."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

import pmemlab.cli as cli
from pmemlab.config import expand, load_config, parse_config, target_loads
from pmemlab.errors import ConfigError
from pmemlab.params import MiB, TargetFacts

TOP = Path(__file__).resolve().parents[2]
EXPERIMENTS = ("idle-latency", "instr-latency", "tail-latency", "bw-threads", "bw-size", "emulation", "ewr",
               "xpbuffer", "flush-instr", "sfence-interval", "imc-contention", "numa-mix", "mixed-threads",
               "loaded-latency", "page-size")
CONFIGS = [TOP / "configs" / f"{name}.toml" for name in EXPERIMENTS]
# The guest of scripts/vm as the module reports it (pmemlab info in the guest).
GUEST = TargetFacts(target_size=992 * MiB, online_cpus=2, widths=(8, 16, 32), prefetch_control="none",
                    cpu_features=frozenset("sse2 sse4_1 avx avx2 clflush clflushopt clwb rdtscp".split()))
QUICK_BUDGET_S = 240  # bandwidth time of one quick config, all targets (latency runs are short counts)


def test_one_config_per_experiment():
    names = {p.stem for p in (TOP / "configs").glob("*.toml")} - {"default"}
    assert names == set(EXPERIMENTS)
    for path in CONFIGS:
        assert load_config(path).name == path.stem


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
@pytest.mark.parametrize("scale", ["full", "quick"])
def test_config_expands_and_validates(path, scale):
    cfg = load_config(path, scale=scale)
    assert cfg.scale == scale and "quick" in cfg.scales
    points = expand(cfg)  # raises on any invalid value
    assert points and all(not p.skip_reason for p in points)
    assert len({p.key for p in points}) == len(points), "two points with the same parameters"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_quick_scale_fits_the_guest(path):
    cfg = load_config(path, scale="quick")
    points = expand(cfg, GUEST)
    reasons = {p.skip_reason for p in points if p.skip_reason}
    # what the guest lacks may skip points (threads or CPUs it does not have), never its size
    assert not [r for r in reasons if "target" in r or "window" in r], reasons
    assert all(r.startswith(("threads:", "cpus:")) for r in reasons), reasons
    assert len(reasons) < len(points) or not points
    runnable = [p for p in points if not p.skip_reason]
    assert runnable, "nothing runs in the guest"
    assert all(p.params["working_set"] <= 256 * MiB for p in runnable)
    assert all(p.params["count"] <= 20000 for p in runnable)
    bandwidth_s = sum(p.params["duration_ms"] for p in runnable
                      if p.params["mode"] == "bandwidth" and not p.params["count"]) / 1000 * cfg.repeats
    assert bandwidth_s * len(target_loads(cfg, "/dev/pmem0")) <= QUICK_BUDGET_S


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_full_scale_keeps_the_papers_ranges(path):
    full, quick = expand(load_config(path)), expand(load_config(path, scale="quick"))
    assert len(full) >= len(quick)
    assert max(p.params["threads"] for p in full) >= max(p.params["threads"] for p in quick)
    assert max(p.params["working_set"] for p in full) >= max(p.params["working_set"] for p in quick)


def test_paper_ranges_spot_checks():
    sizes = sorted({p.params["access_size"] for p in expand(load_config(TOP / "configs/bw-size.toml"))})
    assert sizes[0] == 64 and sizes[-1] == 128 * 1024 and len(sizes) == 12
    hot = sorted({p.params["hotspot_size"] for p in expand(load_config(TOP / "configs/tail-latency.toml"))})
    assert hot[0] == 256 and hot[-1] == 1 << 30
    threads = sorted({p.params["threads"] for p in expand(load_config(TOP / "configs/bw-threads.toml"))})
    assert threads == list(range(1, 25))
    lines = sorted({p.params["working_set"] // 256 for p in expand(load_config(TOP / "configs/xpbuffer.toml"))})
    assert lines[0] == 1 and lines[-1] == 1024
    sfence = sorted({p.params["access_size"] for p in expand(load_config(TOP / "configs/sfence-interval.toml"))})
    assert sfence[0] == 64 and sfence[-1] == 64 * MiB


def test_targets_of_compared_loads():
    loads = dict(target_loads(load_config(TOP / "configs/page-size.toml", scale="quick"), "/dev/pmem3"))
    assert loads == {"dram-4k": "target=dram dram_size=512M dram_pages=4k",
                     "dram-2m": "target=dram dram_size=512M dram_pages=2m", "pmem": "target=/dev/pmem3"}
    assert target_loads(load_config(TOP / "configs/ewr.toml"), "/dev/pmem0") == [("pmem", "target=/dev/pmem0")]


def test_targets_command(capsys):
    assert cli.main(["targets", str(TOP / "configs/emulation.toml"), "--scale", "quick", "--pmem", "/dev/pmem1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "pmem target=/dev/pmem1"
    assert "dram-remote target=dram dram_size=256M dram_node=1" in lines


OVERLAY = dedent("""\
    [sweep]
    name = "s"
    repeats = 5

    [base]
    working_set = "16G"
    threads = 4

    [axes]
    op = ["load", "ntstore"]
    access_size = "64..4K *2"

    [[zip]]
    mode = ["bandwidth", "latency"]
    count = [0, 1000]

    [scale.quick.sweep]
    repeats = 1

    [scale.quick.base]
    working_set = "64M"
    access_size = 256

    [scale.quick.axes]
    threads = [1, 2]

    [[scale.quick.zip]]
    mode = ["bandwidth", "latency"]
    count = [0, "zero"]
    """)


def test_scale_overlay_replaces_and_moves_keys():
    text = OVERLAY.replace('"zero"', "10")
    full = parse_config(text)
    quick = parse_config(text, scale="quick")
    assert full.repeats == 5 and quick.repeats == 1
    assert quick.base["working_set"] == 64 * MiB and quick.base["access_size"] == 256
    assert "threads" not in quick.base and "access_size" not in quick.axis_keys
    assert quick.axis_keys == ["op", "threads", "mode", "count"]
    assert len(expand(quick)) == 2 * 2 * 2
    assert quick.description.endswith("[scale: quick]")


def test_scale_overlay_errors_name_the_overlay_line():
    with pytest.raises(ConfigError) as err:
        parse_config(OVERLAY, source="s.toml", scale="quick")
    assert "s.toml:29:" in str(err.value) and "count" in str(err.value)


def test_unknown_scale_is_refused_and_full_is_the_config_as_written():
    with pytest.raises(ConfigError, match="no scale 'tiny'.*full, quick"):
        parse_config(OVERLAY, scale="tiny")
    plain = "[base]\nmode = 'bandwidth'\n"
    assert parse_config(plain, scale="quick").scale == "full"  # a config without scales runs as written
    with pytest.raises(ConfigError, match="scale.full"):
        parse_config(plain + "[scale.full.base]\nthreads = 2\n")


def test_bad_targets_are_config_errors():
    with pytest.raises(ConfigError, match="sweep.targets.x"):
        parse_config('[sweep.targets]\nx = "dram_size=1G"\n')
