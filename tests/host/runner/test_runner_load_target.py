"""pmemlab-run's load_target (docs/userspace.md): with probe=1 the load threads run on a second
target the runner maps, thread 0 probes target=; the load threads' windows are judged on the load
target's size by the core's check, and their stores land in their regions of the load target and
nowhere else of it."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from testlib import TOP

RUNNER = TOP / "userspace" / "runner" / "pmemlab-run"
MiB = 1 << 20


@pytest.fixture(scope="module")
def runner() -> Path:
    res = subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return RUNNER


def run(runner: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(runner), *args], capture_output=True, text=True, timeout=120)


def rows(out: str) -> list[dict[str, str]]:
    return [dict(f.split("=", 1) for f in line.split()) for line in out.splitlines()
            if line.startswith("thread=")]


def facts(out: str) -> dict[str, str]:
    return {line.split()[1]: line.split(" ", 2)[2] for line in out.splitlines() if line.startswith("#fact ")}


def test_probe_on_dram_load_threads_on_another_dram(runner: Path) -> None:
    res = run(runner, "target=dram", "dram_size=8M", "dram_pages=4k", "probe=1", "threads=2",
              "op=load,ntstore", "load_target=dram", "working_set=4M", "duration_ms=50")
    assert res.returncode == 0, res.stderr
    f = facts(res.stdout)
    assert f["load_target"] == "dram" and f["load_target_kind"] == "dram"
    assert int(f["load_target_size"]) == 8 * MiB
    r = rows(res.stdout)
    assert [x["role"] for x in r] == ["probe", "load", "all"]
    assert int(r[0]["lat_n"]) > 0 and int(r[1]["writes"]) > 0


@pytest.mark.parametrize("args, err, text", [
    (["threads=2", "op=load", "load_target=dram"], "EINVAL", "load_target needs probe=1"),
    (["threads=1", "probe=1", "load_target=dram"], "EINVAL", "probe"),
    (["threads=2", "probe=1", "load_target=dram:x"], "EINVAL", "load_target 'dram:x': not dram or dram:NODE"),
    (["threads=2", "probe=1", "load_target=has space"], "EINVAL", "load_target"),
    (["threads=2", "probe=1", "load_target=/nonexistent/file"], "ENOENT", "/nonexistent/file"),
])
def test_refusals(runner: Path, args: list[str], err: str, text: str) -> None:
    res = run(runner, "target=dram", "dram_size=4M", "duration_ms=10", *args)
    assert res.returncode == 2, res.stdout
    assert res.stderr.startswith(f"pmemlab-run: {err}: ") and text in res.stderr, res.stderr


def test_the_load_targets_size_judges_the_load_threads_window(runner: Path, tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.write_bytes(b"\0" * (2 * MiB))
    base = ["target=dram", "dram_size=8M", "probe=1", "threads=2", "op=load,store", f"load_target={small}",
            "allow_file=1", "duration_ms=10"]
    res = run(runner, *base, "working_set=4M")
    assert res.returncode == 2
    assert "working_set: window_offset + working_set = 4194304 exceeds the load target (2097152 bytes)" in res.stderr
    res = run(runner, *base, "window_offset=3M", "working_set=1M")
    assert res.returncode == 2 and "is not below the size of the load target (2097152 bytes)" in res.stderr
    assert run(runner, *base, "working_set=2M").returncode == 0


def test_the_load_threads_store_in_their_regions_of_the_load_target(runner: Path, tmp_path: Path) -> None:
    """The runner fills the load target before the run (word i = i * 0x9e3779b97f4a7c15 | 1); after a
    store run with the probe on DRAM, the words of the file that differ from that fill are in the
    load threads' regions of the window (per-thread: the window in halves, the probe's the first)
    and there are some; the rest of the file is as filled."""
    path = tmp_path / "load"
    path.write_bytes(b"\0" * (8 * MiB))
    off, ws = 2 * MiB, 3 * MiB
    res = run(runner, "target=dram", "dram_size=8M", "probe=1", "threads=2", "op=load,store",
              f"load_target={path}", "allow_file=1", "placement=per-thread", f"window_offset={off}",
              f"working_set={ws}", "access_size=256", "duration_ms=50")
    assert res.returncode == 0, res.stderr
    words = np.frombuffer(path.read_bytes(), dtype=np.uint64)
    filled = (np.arange(words.size, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)) | np.uint64(1)
    changed = np.flatnonzero(words != filled) * 8
    assert changed.size, "the load threads wrote nothing on the load target"
    region = ws // 2 // 64 * 64
    assert changed.min() >= off + region, "a store in the probe's region or before the window"
    assert changed.max() < off + ws, "a store past the window"
