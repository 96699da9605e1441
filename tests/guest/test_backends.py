"""The same small configurations on the module and on the user backend (pmemlab-run) give the
same counts: ops, reads, writes, bytes per thread and in total (count-bounded runs).

The module runs on target=dram; the runner on anonymous DRAM of the same size, and on an
ext4-dax file on the DRAM-emulated pmem namespace when the guest has one."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kmod_driver import Module

TOP = Path(__file__).resolve().parents[2]
RUNNER = TOP / "userspace" / "runner" / "pmemlab-run"
COUNTED = ("ops", "reads", "writes", "bytes")
# the module keeps parameters between runs: every run sets all of these
BASE = dict(mode="bandwidth", pattern="seq", stride=0, read_pct=0, width=0, hotspot_size=4096, probe=0)

CONFIGS = [
    dict(op="store", access_size=4096, count=500, threads=1),
    dict(op="ntstore", access_size=256, count=2000, threads=2, pattern="rand"),
    dict(op="load", access_size=64, count=3000, threads=2, pattern="stride", stride=256),
    dict(op="store+clflush", access_size=128, count=1000, threads=1, read_pct=30, width=16),
    dict(mode="latency", op="load", access_size=64, count=2000, threads=1, pattern="rand"),
    dict(op="store", access_size=64, count=1000, threads=1, pattern="hotspot", hotspot_size=8192),
]


@pytest.fixture(scope="module")
def runner() -> Path:
    if not RUNNER.exists():
        subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], check=True)
    return RUNNER


def user_counts(runner: Path, target: list[str], cfg: dict) -> list[dict[str, str]]:
    args = [str(runner), *target, "working_set=8M", "placement=per-thread",
            *(f"{k}={v}" for k, v in {**BASE, **cfg}.items())]
    res = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    rows = [dict(f.split("=", 1) for f in ln.split()) for ln in res.stdout.splitlines() if ln.startswith("thread=")]
    return rows


def module_counts(cfg: dict) -> list[dict[str, str]]:
    m = Module()
    res = m.run(working_set="8M", placement="per-thread", **{**BASE, **cfg})
    return res.threads + [res.total]


def test_same_counts_dram(module, runner: Path) -> None:
    with module(target="dram", dram_size="16M"):
        for cfg in CONFIGS:
            want = module_counts(cfg)
            got = user_counts(runner, ["target=dram", "dram_size=16M"], cfg)
            assert len(got) == len(want), cfg
            for w, g in zip(want, got):
                assert {k: w[k] for k in COUNTED} == {k: g[k] for k in COUNTED}, (cfg, w, g)
                assert w["width"] == g["width"] and w["op"] == g["op"] and w["mode"] == g["mode"], cfg


def test_same_counts_dax_file(module, runner: Path, dram_pmem_dev: str, tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    # -b 4096: on a namespace this small mkfs picks 1 KiB blocks, and ext4 mounts those without DAX
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", "4096", dram_pmem_dev], check=True)
    subprocess.run(["mount", "-o", "dax", dram_pmem_dev, str(mnt)], check=True)
    try:
        pool = mnt / "pool"
        pool.write_bytes(b"")
        with module(target="dram", dram_size="16M"):
            for cfg in CONFIGS[:3]:
                want = module_counts(cfg)
                got = user_counts(runner, [f"target={pool}", "size=16M"], cfg)
                for w, g in zip(want, got):
                    assert {k: w[k] for k in COUNTED} == {k: g[k] for k in COUNTED}, (cfg, w, g)
        facts = subprocess.run([str(runner), "--facts", f"target={pool}"], capture_output=True, text=True).stdout
        assert "#fact target_kind file" in facts
    finally:
        subprocess.run(["umount", str(mnt)], check=False)
