"""The experiment suite of configs/: every config expands and validates at full and quick scale,
keeps the papers' parameter ranges at full scale, fits the guests (an emulated NVDIMM namespace and
a DRAM-emulated one, 2 vCPUs) at quick scale, and the scale / targets hooks work."""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from pathlib import Path
from textwrap import dedent
from typing import Any

import pandas as pd
import pytest

import pmemlab.cli as cli
from pmemlab.config import expand, load_config, parse_config
from pmemlab.targets.spec import target_loads
from pmemlab.errors import ConfigError
from pmemlab.params import GiB, KiB, MiB, TargetFacts, parse_size

from testlib import TOP

EXPERIMENTS = ("idle-latency", "instr-latency", "tail-latency", "bw-threads", "bw-size", "emulation", "ewr",
               "xpbuffer", "flush-instr", "sfence-interval", "imc-contention", "numa-mix", "mixed-threads",
               "loaded-latency", "page-size")
CONFIGS = [TOP / "configs" / f"{name}.toml" for name in EXPERIMENTS]
PMEM, PMEM_DRAM = "@PMEM@", "@PMEM_DRAM@"  # the placeholders of [sweep.targets] (pmemlab sweep fills them)
# The guests quick configs run in, with the target_size the module reports for each namespace there
# (measured: insmod target=DEV in each guest; the recorded fixtures' sidecars carry the demo's):
# `make demo` / record.sh (scripts/run-configs --vm: one 1 GiB NVDIMM, memmap=256M) and `make test`'s
# bed (scripts/run-tests: a 512 MiB NVDIMM, memmap=384M). A quick config must fit both.
GUESTS = {
    "demo": {PMEM: 992 * MiB, PMEM_DRAM: 250 * MiB},
    "test-bed": {PMEM: 488 * MiB, PMEM_DRAM: 376 * MiB},
}
CPU_FEATURES = frozenset("sse2 sse4_1 avx avx2 clflush clflushopt clwb rdtscp".split())
QUICK_BUDGET_S = 240  # bandwidth time of one quick config, all targets (latency runs are short counts)


def guest_facts(size: int) -> TargetFacts:
    return TargetFacts(target_size=size, online_cpus=2, widths=(8, 16, 32), prefetch_control="none",
                       cpu_features=CPU_FEATURES)


def points(name: str, scale: str = "full") -> list[dict[str, Any]]:
    return [p.params for p in expand(load_config(TOP / "configs" / f"{name}.toml", scale=scale))]


def loads(name: str, scale: str = "full") -> dict[str, str]:
    return dict(target_loads(load_config(TOP / "configs" / f"{name}.toml", scale=scale), PMEM))


def values(pts: list[dict[str, Any]], key: str) -> list[Any]:
    return sorted({p[key] for p in pts})


def pow2(lo: int, hi: int) -> list[int]:
    return [1 << i for i in range(lo.bit_length() - 1, hi.bit_length())]


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
    pts = expand(cfg)  # raises on any invalid value
    assert pts and all(not p.skip_reason for p in pts)
    assert len({p.key for p in pts}) == len(pts), "two points with the same parameters"


def _dram_size(args: str) -> int | None:
    if not re.search(r"(^|\s)target=dram(\s|$)", args):
        return None
    m = re.search(r"dram_size=(\S+)", args)
    return parse_size(m.group(1)) if m else 256 * MiB  # the module's default


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
@pytest.mark.parametrize("scale", ["full", "quick"])
def test_targets_are_placeholders_or_dram_that_holds_the_window(path, scale):
    """No config names a device of one machine (/dev/pmem1 is real remote Optane on another), and a
    DRAM target holds every point's window (else every DRAM point would be skipped)."""
    cfg = load_config(path, scale=scale)
    for label, args in target_loads(cfg, PMEM):
        assert "/dev/" not in args, f"{label}: {args}: use {PMEM} or {PMEM_DRAM}"
        size = _dram_size(args)
        if size is not None:
            for p in expand(cfg):
                assert p.params["window_offset"] + p.params["working_set"] <= size, (label, p.params["working_set"])


@pytest.mark.parametrize("guest", GUESTS)
@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_quick_scale_fits_the_guest(path, guest):
    cfg = load_config(path, scale="quick")
    target_list = target_loads(cfg, PMEM)
    for label, args in target_list:
        device = next((d for d in (PMEM_DRAM, PMEM) if f"target={d}" in args), None)
        size = GUESTS[guest][device] if device else _dram_size(args)
        pts = expand(cfg, guest_facts(size))
        reasons = {p.skip_reason for p in pts if p.skip_reason}
        # what the guest lacks may skip points (threads or CPUs it does not have, prefetch control
        # for the points that ask for prefetchers off), never its size
        assert not [r for r in reasons if "target" in r or "window" in r], (label, reasons)
        assert all(r.startswith(("threads:", "cpus:", "prefetch:")) for r in reasons), (label, reasons)
        runnable = [p for p in pts if not p.skip_reason]
        assert runnable, f"{label}: nothing runs in the guest"
        assert all(p.params["working_set"] <= 256 * MiB for p in runnable)
        assert all(p.params["count"] <= 20000 for p in runnable)
    runnable = [p for p in expand(cfg, guest_facts(GUESTS[guest][PMEM])) if not p.skip_reason]
    bandwidth_s = sum(p.params["duration_ms"] for p in runnable
                      if p.params["mode"] == "bandwidth" and not p.params["count"]) / 1000 * cfg.repeats
    assert bandwidth_s * len(target_list) <= QUICK_BUDGET_S


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_full_scale_is_at_least_quick(path):
    full, quick = expand(load_config(path)), expand(load_config(path, scale="quick"))
    assert len(full) >= len(quick)
    assert max(p.params["threads"] for p in full) >= max(p.params["threads"] for p in quick)
    assert max(p.params["working_set"] for p in full) >= max(p.params["working_set"] for p in quick)
    assert set(loads(path.stem)) == set(loads(path.stem, "quick")), "quick drops a compared target"


# --------------------------------------------------------------------------
# the papers' ranges at full scale, one test per experiment
# --------------------------------------------------------------------------
def test_idle_latency_paper_ranges():
    """FAST fig 2 / REPORT fig 7: single 8 B accesses, one per 64 B line (FAST'20 section 3.2: a 64 B
    stride for the sequential bars, 64 B-aligned random lines), seq and rand cold reads, warm
    store+clwb and ntstore writes, timed with mfence (the module's latency mode), DRAM vs pmem,
    prefetchers off where the module can switch them (and on)."""
    pts = points("idle-latency")
    assert {(p["op"], p["pattern"], p["cold"], p["warm"]) for p in pts} == {
        ("load", "stride", 1, 0), ("load", "rand", 1, 0), ("store+clwb", "stride", 0, 1), ("ntstore", "stride", 0, 1)}
    assert {(p["mode"], p["access_size"], p["width"], p["threads"], p["stride"]) for p in pts} == {
        ("latency", 8, 8, 1, 64)}
    assert values(pts, "prefetch") == ["off", "on"]
    assert all(p["count"] >= 1_000_000 for p in pts)
    assert "latency mode always uses mfence" in (TOP / "docs" / "interface.md").read_text()
    assert set(loads("idle-latency")) == {"pmem", "dram"}


def test_instr_latency_paper_ranges():
    """REPORT fig 8: L LN SF SN SO SW at 64/128/256 B, seq and rand, one million samples, 256-bit
    instructions over the first 16 GB; PM-Optane vs PM-LDRAM (memmap namespace) vs DRAM."""
    pts = points("instr-latency")
    ops = {"load", "ntload", "store+clflush", "ntstore", "store+clflushopt", "store+clwb"}
    combos = Counter((p["pattern"], p["op"], p["access_size"]) for p in pts)
    assert set(combos) == {(pat, op, size) for pat in ("seq", "rand") for op in ops for size in (64, 128, 256)}
    assert set(combos.values()) == {1}
    assert {(p["mode"], p["threads"], p["count"], p["width"], p["working_set"], p["window_offset"])
            for p in pts} == {("latency", 1, 1_000_000, 32, 16 * GiB, 0)}
    assert loads("instr-latency") == {"pmem": f"target={PMEM}", "emulated": f"target={PMEM_DRAM}",
                                      "dram": "target=dram dram_size=16G"}


def test_tail_latency_paper_ranges():
    """FAST fig 3: 20 M 64 B writes by one thread into a hotspot of 256 B .. 1 GiB."""
    pts = points("tail-latency")
    assert values(pts, "hotspot_size")[0] == 256 and values(pts, "hotspot_size")[-1] == GiB
    assert all(a * 4 == b for a, b in zip(values(pts, "hotspot_size"), values(pts, "hotspot_size")[1:]))
    assert {(p["mode"], p["op"], p["access_size"], p["threads"], p["pattern"], p["count"]) for p in pts} == {
        ("latency", "ntstore", 64, 1, "hotspot", 20_000_000)}
    assert all(p["working_set"] >= p["hotspot_size"] for p in pts)


def test_bw_threads_paper_ranges():
    """FAST fig 4 / REPORT figs 9-10: 1..24 threads, sequential 256 B, load / ntstore / store+clwb,
    per-thread regions, DRAM vs pmem."""
    pts = points("bw-threads")
    combos = Counter((p["op"], p["threads"]) for p in pts)
    assert set(combos) == {(op, t) for op in ("load", "ntstore", "store+clwb") for t in range(1, 25)}
    assert {(p["mode"], p["pattern"], p["access_size"], p["placement"]) for p in pts} == {
        ("bandwidth", "seq", 256, "per-thread")}
    assert set(loads("bw-threads")) == {"pmem", "dram"}


def test_bw_size_paper_ranges():
    """FAST fig 5 / REPORT fig 11: random accesses of 64 B .. 128 KiB in log2 steps, every op at
    several thread counts (the figure picks the best), 16 threads among them."""
    pts = points("bw-size")
    assert values(pts, "access_size") == pow2(64, 128 * KiB)
    threads = values(pts, "threads")
    assert 1 in threads and 16 in threads and len(threads) >= 4
    combos = Counter((p["op"], p["threads"], p["access_size"]) for p in pts)
    assert len(combos) == 3 * len(threads) * 12 and {op for op, _, _ in combos} == {"load", "ntstore", "store+clwb"}
    assert {(p["mode"], p["pattern"]) for p in pts} == {("bandwidth", "rand")}
    quick = values(points("bw-size", "quick"), "access_size")
    assert quick[0] == 64 and quick[-1] == 128 * KiB, "quick keeps both ends of the range"


def test_emulation_paper_ranges():
    """FAST fig 6 (left): loaded ntstore latency vs bandwidth of pmem, local and remote DRAM and
    DRAM-emulated pmem, every load measured from the same CPUs, delays from 0 (full load) up."""
    for scale in ("full", "quick"):
        targets = loads("emulation", scale)
        assert set(targets) == {"pmem", "dram", "dram-remote", "emulated", "dram-cpuless"}
        assert targets["pmem"] == f"target={PMEM}" and targets["emulated"] == f"target={PMEM_DRAM}"
        assert "dram_node=@CPULESS_NODE@" in targets["dram-cpuless"]
        local, remote = (re.search(r"dram_node=(\d+)", targets[k]) for k in ("dram", "dram-remote"))
        assert local and remote and local.group(1) != remote.group(1)
        pts = points("emulation", scale)
        assert {(p["op"], p["probe"], p["mode"], p["access_size"]) for p in pts} == {("ntstore", 1, "bandwidth", 64)}
        cpus = {p["cpus"] for p in pts}
        assert len(cpus) == 1 and cpus != {""}, "the threads must not follow each target's node"
        delays = values(pts, "delay_ticks")
        assert delays[0] == 0 and delays[-1] >= 100_000
    assert len(values(points("emulation"), "delay_ticks")) >= 10


def test_ewr_paper_ranges():
    """FAST fig 8: EWR against bandwidth over a broad write sweep (ops x patterns x sizes x threads)."""
    pts = points("ewr")
    assert set(values(pts, "op")) == {"ntstore", "store+clwb", "store"}
    assert values(pts, "pattern") == ["rand", "seq"]
    assert values(pts, "access_size") == pow2(64, 4096)
    assert values(pts, "threads") == [1, 2, 4, 8]
    assert {p["mode"] for p in pts} == {"bandwidth"}


def test_xpbuffer_paper_ranges():
    """FAST fig 9: N = 1..1024 XPLines of 256 B; write the first 128 B half of each, then the second."""
    pts = points("xpbuffer")
    assert sorted(p["working_set"] // 256 for p in pts) == pow2(1, 1024)
    assert {(p["op"], p["threads"], p["pattern"], p["access_size"], p["stride"], p["passes"], p["pass_offset"])
            for p in pts} == {("ntstore", 1, "stride", 128, 256, 2, 128)}


def test_flush_instr_paper_ranges():
    """FAST fig 12: ntstore, store+clwb and store, each + sfence, sequential, 64 B up; bandwidth with
    6 threads, latency with 1."""
    pts = points("flush-instr")
    for mode, threads in (("bandwidth", 6), ("latency", 1)):
        sub = [p for p in pts if p["mode"] == mode]
        assert {p["threads"] for p in sub} == {threads}
        assert set(values(sub, "op")) == {"ntstore", "store+clwb", "store"}
        assert values(sub, "access_size") == pow2(64, 64 * KiB)
    assert {(p["fence"], p["pattern"]) for p in pts} == {("sfence", "seq")}


def test_sfence_interval_paper_ranges():
    """FAST fig 13: one thread, sequential store+clwb writes of 64 B .. 64 MiB, clwb per line or
    after the write, one sfence per write."""
    pts = points("sfence-interval")
    assert values(pts, "access_size") == pow2(64, 64 * MiB)
    assert values(pts, "flush") == ["access", "line"]
    assert {(p["threads"], p["pattern"], p["op"], p["fence"], p["fence_interval"]) for p in pts} == {
        (1, "seq", "store+clwb", "sfence", 0)}


def test_imc_contention_paper_ranges():
    """FAST fig 15: 24 load / 6 ntstore threads on 6 interleaved DIMMs (4 KiB), each thread over
    N = 1..6 DIMMs; and random sizes around 4 KiB over the whole set (dip at 4 KiB, 24/48 KiB peaks)."""
    pts = points("imc-contention")
    assert {(p["interleave_ways"], p["interleave_gran"], p["pattern"]) for p in pts} == {(6, 4 * KiB, "rand")}
    per_dimm = [p for p in pts if p["placement"] == "per-dimm"]
    assert Counter((p["op"], p["threads"], p["dimms_per_thread"]) for p in per_dimm) == Counter(
        {(op, t, n): 1 for op, t in (("load", 24), ("ntstore", 6)) for n in range(1, 7)})
    assert {p["access_size"] for p in per_dimm} == {256}
    spread = [p for p in pts if p["placement"] == "global"]
    sizes = values(spread, "access_size")
    assert {4 * KiB, 24 * KiB, 48 * KiB} <= set(sizes) and sizes[0] <= KiB and sizes[-1] >= 64 * KiB
    assert {(p["op"], p["threads"]) for p in spread} == {("load", 24), ("ntstore", 6)}


def test_numa_mix_paper_ranges():
    """FAST fig 17: bandwidth vs % loads within each thread (pure ntstore .. pure load), 1 and 4
    threads, local (the target's node: cpus left to the module) and remote (another node's CPUs,
    chosen by the controller)."""
    pts = points("numa-mix")
    for threads in (1, 4):
        sub = [p for p in pts if p["threads"] == threads]
        local = [p for p in sub if p["cpus"] == ""]
        remote = [p for p in sub if p["cpus"] != ""]
        assert local and remote
        assert all(p["cpus"] == "remote" for p in remote)
        for part in (local, remote):
            shares = sorted(100 if p["op"] == "load" else p["read_pct"] for p in part)
            assert shares[0] == 0 and shares[-1] == 100 and len(shares) >= 5
    assert {p["threads"] for p in pts} == {1, 4}


def _ratio(op: str) -> str:
    items = op.split(",")
    period = 2 if items[1] != "load" else 3
    readers = items[:period].count("load")
    return f"{readers}r:{period - readers}{'nt' if 'ntstore' in items[:period] else 'w'}"


def test_mixed_threads_paper_ranges():
    """REPORT fig 12: 1r:1w, 2r:1w and 2r:1nt at growing thread counts up to 24; fig 13: 16 threads,
    k readers and 16-k writers (store W, ntstore NT), k = 0..16; seq and rand."""
    pts = points("mixed-threads")
    assert values(pts, "pattern") == ["rand", "seq"]
    for pattern in ("seq", "rand"):
        sub = [p for p in pts if p["pattern"] == pattern]
        assert all(len(p["op"].split(",")) == p["threads"] for p in sub), "one op per thread"
        ratio = [p for p in sub if p["op"].startswith("load,") and p["op"] != ",".join(["load"] * 16)]
        by_ratio: dict[str, list[int]] = {}
        for p in ratio:
            by_ratio.setdefault(_ratio(p["op"]), []).append(p["threads"])
        assert {k: sorted(v) for k, v in by_ratio.items()} == {
            "1r:1w": list(range(2, 25, 2)), "2r:1w": list(range(3, 25, 3)), "2r:1nt": list(range(3, 25, 3))}
        split = [p for p in sub if p not in ratio]
        assert {p["threads"] for p in split} == {16}
        for writer in ("store", "ntstore"):
            ks = sorted(p["op"].split(",").count("load") for p in split
                        if writer in p["op"].split(",") or p["op"] == ",".join(["load"] * 16))
            assert ks == list(range(0, 17)), writer
    assert {p["mode"] for p in pts} == {"bandwidth"}


def test_loaded_latency_paper_ranges():
    """REPORT fig 14: a probe thread beside 23 load or 12 ntstore threads that wait 0 .. ~80 us between
    accesses (TSC ticks; 200000 ticks are 80 us at a 2.5 GHz TSC), seq and rand, DRAM vs pmem."""
    pts = points("loaded-latency")
    # the probe (thread 0) reads under both loads, as MLC's loaded latency: an op list for ntstore
    loaders = {(p["op"].split(",")[-1], p["threads"] - p["probe"]) for p in pts}
    assert loaders == {("load", 23), ("ntstore", 12)}
    assert {p["op"].split(",")[0] for p in pts} == {"load"}
    assert all(p["op"].count(",") in (0, p["threads"] - 1) for p in pts)
    assert {p["probe"] for p in pts} == {1}
    assert values(pts, "pattern") == ["rand", "seq"]
    delays = values(pts, "delay_ticks")
    assert delays[0] == 0 and len(delays) >= 10
    assert 70 <= delays[-1] / 2.5e3 <= 90, "the longest delay is ~80 us at 2.5 GHz"
    assert set(loads("loaded-latency")) == {"pmem", "dram"}


def test_page_size_paper_ranges():
    """Mason et al.: random 64 B loads over growing working sets, mapped by 4 KiB vs 2 MiB DRAM pages
    and by the namespace's own mapping; latency and bandwidth."""
    pts = points("page-size")
    assert values(pts, "working_set")[0] <= 64 * KiB and values(pts, "working_set")[-1] >= 16 * GiB
    assert values(pts, "mode") == ["bandwidth", "latency"]
    assert {(p["op"], p["pattern"], p["access_size"]) for p in pts} == {("load", "rand", 64)}
    targets = loads("page-size")
    assert "dram_pages=4k" in targets["dram-4k"] and "dram_pages=2m" in targets["dram-2m"]
    assert targets["pmem"] == f"target={PMEM}"


# --------------------------------------------------------------------------
# targets and scripts/run-configs
# --------------------------------------------------------------------------
def test_targets_of_compared_loads():
    loads_ = dict(target_loads(load_config(TOP / "configs/page-size.toml", scale="quick"), "/dev/pmem3"))
    assert loads_ == {"dram-4k": "target=dram dram_size=512M dram_pages=4k",
                      "dram-2m": "target=dram dram_size=512M dram_pages=2m", "pmem": "target=/dev/pmem3"}
    assert target_loads(load_config(TOP / "configs/ewr.toml"), "/dev/pmem0") == [("pmem", "target=/dev/pmem0")]


def test_targets_command(capsys):
    assert cli.main(["targets", str(TOP / "configs/emulation.toml"), "--scale", "quick", "--pmem", "/dev/pmem1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "pmem target=/dev/pmem1"
    assert "dram-remote target=dram dram_size=256M dram_node=1" in lines
    assert f"emulated target={PMEM_DRAM}" in lines  # run-configs fills it in
    assert cli.main(["targets", str(TOP / "configs/emulation.toml"), "--scale", "quick", "--pmem", "/dev/pmem1",
                     "--pmem-dram", "/dev/pmem7"]) == 0
    assert "emulated target=/dev/pmem7" in capsys.readouterr().out.splitlines()


def run_configs(*args: str, env: dict[str, str] | None = None, path_prefix: Path | None = None):
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PMEMLAB_")}
    environ.update(env or {})
    if path_prefix:
        environ["PATH"] = f"{path_prefix}:{environ['PATH']}"
    return subprocess.run([str(TOP / "scripts" / "run-configs"), *args], capture_output=True, text=True,
                          env=environ, cwd=TOP, timeout=120)


def test_run_configs_fills_pmem_dram_or_skips_the_target():
    cfg = "configs/emulation.toml"
    out = run_configs("--dry-run", "--scale", "quick", "--target", "/dev/pmem0", cfg)
    assert out.returncode == 0, out.stderr
    lines = [line.strip() for line in out.stdout.splitlines()]
    assert "target pmem: load target=/dev/pmem0" in lines
    assert any(line.startswith("target emulated: not measured: no DRAM-emulated fsdax namespace") for line in lines)
    assert "output would go to results/emulation.csv (one CSV, column target_label)" in lines
    out = run_configs("--dry-run", "--scale", "quick", "--target", "/dev/pmem0", cfg,
                      env={"PMEMLAB_PMEM_DRAM": "/dev/pmem1 /dev/pmem2"})
    assert "target emulated: load target=/dev/pmem1" in [line.strip() for line in out.stdout.splitlines()]
    out = run_configs("--dry-run", "--pmem-dram", "/dev/pmem7", "--target", "/dev/pmem0",
                      "configs/instr-latency.toml", env={"PMEMLAB_PMEM_DRAM": "/dev/pmem1"})
    assert "target emulated: load target=/dev/pmem7" in out.stdout
    out = run_configs("--dry-run", "--vm", "--targets", "pmem,dram", "configs/flush-instr.toml")
    assert out.returncode == 0, out.stderr
    assert ["target pmem: load target=@PMEM@", "target dram: load target=dram"] == [
        line.strip() for line in out.stdout.splitlines() if line.strip().startswith("target ")]
    # a config without [sweep.targets] runs on the pmem namespace (the script loads the module)
    out = run_configs("--dry-run", "--target", "/dev/pmem0", "configs/flush-instr.toml", "configs/bw-threads.toml")
    assert out.returncode == 0, out.stderr
    assert ["target pmem: load target=/dev/pmem0", "target pmem: load target=/dev/pmem0",
            "target dram: load target=dram dram_size=32G"] == [
        line.strip() for line in out.stdout.splitlines() if line.strip().startswith("target ")]


def test_run_configs_one_csv_per_config_and_the_old_files_go(tmp_path):
    """One CSV per config, written by pmemlab sweep over its targets; the earlier one-CSV-per-load
    files of that config and its SKIPPED lines are removed (the figures would merge them). The
    script loads the module once, without target= (insmod and rmmod are stand-ins that log their
    arguments), and unloads it at the end; the stand-in loads nothing, so each config's sweep stops
    in one line (module not loaded) and writes nothing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    (bin_dir / "insmod").write_text(f"#!/bin/sh\necho insmod \"$@\" >>{calls}\n")
    (bin_dir / "rmmod").write_text(f"#!/bin/sh\necho rmmod \"$@\" >>{calls}\n")
    (bin_dir / "dmesg").write_text("#!/bin/sh\nexit 0\n")
    for tool in ("insmod", "rmmod", "dmesg"):
        (bin_dir / tool).chmod(0o755)
    out_dir = tmp_path / "results"
    out_dir.mkdir()
    (out_dir / "SKIPPED").write_text("emulation@dram-remote: insmod ...: old reason\nbw-size@dram: kept\n")
    for old in ("emulation@pmem.csv", "emulation@pmem.json", "emulation@emulated.hist.csv"):
        (out_dir / old).write_text("sweep\nemulation\n")  # an earlier run's results
    (out_dir / "bw-size@dram.csv").write_text("sweep\nbw-size\n")
    ko = tmp_path / "pmemlab.ko"
    ko.write_text("")
    res = run_configs("--in-guest", "--scale", "quick", "--out", str(out_dir), "--no-plots", "--fresh",
                      "configs/emulation.toml", "configs/xpbuffer.toml",
                      env={"PMEMLAB_PMEM": "/dev/pmem0", "PMEMLAB_KO": str(ko)}, path_prefix=bin_dir)
    assert res.returncode == 1, res.stderr  # every run failed
    assert calls.read_text() == f"insmod {ko}\nrmmod pmemlab\n", "loaded once, no target=, unloaded after"
    assert (out_dir / "SKIPPED").read_text() == "bw-size@dram: kept\n"
    # the stand-in loaded nothing: each config's sweep stops in one line, before it writes a file
    assert sorted(p.name for p in out_dir.iterdir()) == ["SKIPPED", "bw-size@dram.csv"]
    assert res.stderr.count("pmemlab: module not loaded (/sys/kernel/pmemlab does not exist)") == 2, res.stderr


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
