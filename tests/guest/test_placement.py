"""Placement oracle: fill the namespace with a known pattern, run write ops on windows, then read
the device back and check that no byte outside the windows changed, that exact runs (one
sequential pass, two XPBuffer passes, ...) changed exactly what they had to, and that per-DIMM
threads wrote only their own DIMMs' interleave chunks.

A whole-namespace scan costs about ten seconds under TCG, so a batch of configurations runs with
one module load, each in its own window with untouched gaps between the windows, and is scanned
once (the per-op tests share one batch of every write op's windows): a write outside every
window fails the test (a stray write from one window into another is caught by the exact and
per-DIMM cases, whose expected changes are known byte for byte)."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from kmod_driver import WRITE_OPS, Module

MiB = 1 << 20
KiB = 1 << 10
CHUNK = MiB

# The known content: one MiB of 8-byte words that name their position, repeated over the whole
# device (the tail chunk is a prefix of it). One bytes object serves every chunk, so an unchanged
# MiB costs a single memcmp (under software emulation anything more per byte costs minutes).
FILL = (np.arange(CHUNK // 8, dtype=np.uint64) ^ np.uint64(0x5A5A5A5A00000000)).tobytes()
FILL_WORDS = np.frombuffer(FILL, dtype=np.uint64)


def device_size(dev: str) -> int:
    return int(subprocess.run(["blockdev", "--getsize64", dev], capture_output=True, text=True,
                              check=True).stdout)


def write_fill(dev_path: str, chunks: list[int], size: int) -> None:
    with open(dev_path, "r+b", buffering=0) as dev:
        for off in chunks:
            dev.seek(off)
            dev.write(FILL[:min(CHUNK, size - off)])
        os.fsync(dev.fileno())


@pytest.fixture(scope="module", params=["nvdimm"] + ([pytest.param("cxl", marks=pytest.mark.cxl)]
                                                       if os.environ.get("PMEMLAB_CXL_PMEM") else []))
def pmem_dev(request) -> str:
    """The namespace under test: the emulated NVDIMM's, and in a guest with the CXL lanes
    (scripts/vm --cxl) also the first fsdax namespace of the CXL pmem region, whose cases are
    marked cxl (make test runs them in the CXL guest, with the kernel matrix)."""
    if request.param == "cxl":
        return os.environ["PMEMLAB_CXL_PMEM"].split()[0]
    devs = os.environ.get("PMEMLAB_PMEM", "").split()
    assert devs, "no fsdax namespace on the emulated NVDIMM"
    return devs[0]


def unit(size: int) -> int:
    """The window of one case: 1 MiB, or 256 KiB on a namespace under 256 MiB (a CXL namespace:
    the CXL window is emulated MMIO, a few MB/s under TCG, so it is kept small and so are the
    windows). Every offset of the batches is a multiple of it."""
    return MiB if size >= 256 * MiB else 256 * KiB


@pytest.fixture(scope="module")
def filled(pmem_dev: str) -> int:
    """Write the pattern once (the whole device, tail included); each test restores what it
    changed."""
    size = device_size(pmem_dev)
    write_fill(pmem_dev, list(range(0, size, CHUNK)), size)
    return size


def changed_ranges(dev_path: str, size: int, chunks: list[int] | None = None) -> list[tuple[int, int]]:
    """Byte ranges, 8-byte granular, that differ from the fill pattern (in the given chunks, or
    the whole device)."""
    subprocess.run(["blockdev", "--flushbufs", dev_path], check=True)  # drop the page cache
    ranges: list[tuple[int, int]] = []
    with open(dev_path, "rb", buffering=0) as dev:
        for off in range(0, size, CHUNK) if chunks is None else chunks:
            n = min(CHUNK, size - off)
            dev.seek(off)
            got = dev.read(n)
            assert len(got) == n
            if got == FILL[:n]:
                continue
            idx = np.flatnonzero(np.frombuffer(got, dtype=np.uint64) != FILL_WORDS[:n // 8])
            breaks = np.flatnonzero(np.diff(idx) != 1)
            starts = np.concatenate((idx[:1], idx[breaks + 1]))
            ends = np.concatenate((idx[breaks], idx[-1:])) + 1
            for s, e in zip(starts.tolist(), ends.tolist()):
                start, end = off + 8 * s, off + 8 * e
                if ranges and ranges[-1][1] == start:
                    ranges[-1] = (ranges[-1][0], end)
                else:
                    ranges.append((start, end))
    return ranges


def restore(dev_path: str, ranges: list[tuple[int, int]], size: int) -> list[int]:
    """Write the pattern back over the chunks the ranges touch; returns those chunks."""
    chunks = sorted({off for start, end in ranges for off in range(start - start % CHUNK, end, CHUNK)})
    write_fill(dev_path, chunks, size)
    return chunks


@dataclass
class Case:
    label: str
    offset: int
    size: int
    params: dict
    changed: list[tuple[int, int]] = field(default_factory=list)

    def inside(self, start: int, end: int) -> bool:
        return self.offset <= start and end <= self.offset + self.size

    def rel(self) -> list[tuple[int, int]]:
        """Changes relative to the window start."""
        return [(s - self.offset, e - self.offset) for s, e in self.changed]


def run_batch(module, pmem_dev: str, size: int, cases: list[Case]) -> list[tuple[int, int]]:
    """Run every case in its window with one module load, scan once, restore; fill each case's
    `changed` and return the changes outside every window."""
    spans = sorted((c.offset, c.offset + c.size) for c in cases)
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:])), "windows must not touch"
    with module(target=pmem_dev, allow_overwrite=1) as sysfs:
        mod = Module(sysfs)
        for case in cases:
            params = dict(BASE)
            params.update(case.params)
            mod.run(window_offset=case.offset, working_set=case.size, **params)
    ranges = changed_ranges(pmem_dev, size)
    # Only the rewritten chunks can still differ: the scan just found every other one unchanged,
    # and nothing has written to the device since (the module is unloaded).
    rewritten = restore(pmem_dev, ranges, size)
    assert changed_ranges(pmem_dev, size, rewritten) == [], "restore left changes behind"
    stray = []
    for start, end in ranges:
        owner = [c for c in cases if c.inside(start, end)]
        if owner:
            owner[0].changed.append((start, end))
        else:
            stray.append((start, end))
    return stray


BASE = dict(mode="bandwidth", read_pct=0, width=0, access_size=256, stride=0, pattern="seq", passes=1,
            pass_offset=0, fence="none", fence_interval=0, flush="line", threads=2, cpus="",
            placement="per-thread", interleave_ways=1, interleave_gran=4096, dimms_per_thread=1,
            duration_ms=30, count=0, delay_ticks=0, probe=0, seed=1, cold=0, warm=0, samples=0,
            hotspot_size=64 * KiB)

COMBOS = [(pattern, placement) for pattern in ("seq", "rand", "stride", "hotspot")
          for placement in ("global", "per-thread", "per-dimm")
          if not (pattern == "hotspot" and placement == "per-dimm")]  # refused combination
W = MiB  # the window of one case on a namespace of 256 MiB or more (unit())
WAYS, GRAN = 4, 4096


def dimm_of(rel: int) -> int:
    """DIMM of a window offset (window_offset is a multiple of ways x gran)."""
    return (rel // GRAN) % WAYS


def lines_of(ranges: list[tuple[int, int]]) -> int:
    return sum(e - s for s, e in ranges)


NEEDS = {"store+clwb": "clwb", "store+clflushopt": "clflushopt"}  # the CPU flag an op needs


def skip_unless_supported(mod_features: set[str], op: str) -> None:
    need = NEEDS.get(op)
    if need and need not in mod_features:
        pytest.skip(f"this CPU lacks {need}")


def cpu_features() -> set[str]:
    cached = Path("/sys/kernel/pmemlab/cpu_features")
    if cached.exists():
        return set(cached.read_text().split())
    flags = Path("/proc/cpuinfo").read_text().split("flags", 1)[1].split("\n", 1)[0]
    return set(flags.replace(":", " ").split())


@pytest.fixture(scope="module")
def every_write_op(module, pmem_dev: str, filled: int) -> tuple[dict[str, tuple[list[Case], Case]], list]:
    """The windows of every write op the CPU runs in one batch, 32 windows apart: one load and one
    scan of the namespace for all of them, not one per op. Returns each op's cases (pattern x
    placement, then one sequential pass) and the changes outside every window."""
    feats = cpu_features()
    W = unit(filled)
    by_op: dict[str, tuple[list[Case], Case]] = {}
    for i, op in enumerate(WRITE_OPS):
        if NEEDS.get(op, "sse2") not in feats:
            continue
        base = 8 * W + i * 32 * W
        cases = []
        for k, (pattern, placement) in enumerate(COMBOS):
            cases.append(Case(f"{pattern}/{placement}", base + k * 2 * W, W,
                              dict(op=op, pattern=pattern, placement=placement, stride=1024,
                                   interleave_ways=WAYS, dimms_per_thread=1)))
        exact = Case("one seq pass", base + len(COMBOS) * 2 * W, W,
                     dict(op=op, pattern="seq", count=W // 2 // 256, duration_ms=1000))
        cases.append(exact)
        by_op[op] = (cases, exact)
    stray = run_batch(module, pmem_dev, filled, [c for cases, _ in by_op.values() for c in cases])
    return by_op, stray


@pytest.mark.parametrize("op", WRITE_OPS)
def test_writes_stay_inside_the_window(every_write_op, op: str) -> None:
    """Every write op x pattern x placement (hotspot x per-dimm is refused at run) writes only
    inside its window, per-DIMM threads only in their DIMMs' chunks, hotspot only in the hot
    region of each thread; and one sequential pass changes exactly the window."""
    skip_unless_supported(cpu_features(), op)
    by_op, stray = every_write_op
    cases, exact = by_op[op]
    W = cases[0].size
    assert not stray, f"writes outside every window of the batch (every write op): {stray[:5]}"
    for case in cases:
        assert case.changed, f"{op} {case.label}: the run wrote nothing"
        pattern, _, placement = case.label.partition("/")
        if placement == "per-dimm":  # threads 0 and 1 own DIMMs 0 and 1 of 4
            bad = [(s, e) for s, e in case.rel()
                   if any(dimm_of(c * GRAN) not in (0, 1) for c in range(s // GRAN, (e - 1) // GRAN + 1))]
            assert not bad, f"{op} {case.label}: writes in other DIMMs' chunks: {bad[:5]}"
        if pattern == "hotspot":
            hot = 64 * KiB
            regions = [0] if placement == "global" else [0, W // 2]
            bad = [(s, e) for s, e in case.rel() if not any(r <= s and e <= r + hot for r in regions)]
            assert not bad, f"{op} {case.label}: writes outside the hot regions: {bad[:5]}"
    assert exact.rel() == [(0, W)], f"{op}: one sequential pass changed {exact.rel()[:5]}"


@pytest.mark.kernel_matrix
def test_exact_shapes(module, pmem_dev: str, filled: int) -> None:
    """Runs whose every written byte is known: XPBuffer passes (256 B slots, 128 B halves),
    latency mode with cold and warm, 8/16/32-byte accesses at that width, a sparse 8-byte
    stride, fence_interval smaller than access_size, flush=access, per-DIMM with two DIMMs per
    thread (one writer at a time, so each thread's chunks are seen alone), and a window that ends
    exactly at the end of the target."""
    feats = cpu_features()
    flush_op = "store+clwb" if "clwb" in feats else "store+clflush"
    flush_op2 = "store+clflushopt" if "clflushopt" in feats else "store+clflush"
    with module(target=pmem_dev) as sysfs:
        widths = [int(w) for w in Module(sysfs).read("widths").split()]
        target_size = int(Module(sysfs).read("target_size"))
    assert target_size <= filled
    one = dict(threads=1, duration_ms=1000)
    W = unit(filled)
    halves = [(j, j + 128) for j in range(0, W, 256)]
    per_dimm = dict(placement="per-dimm", interleave_ways=WAYS, dimms_per_thread=2, threads=2,
                    pattern="seq", count=W * 2 // WAYS // 256, duration_ms=1000)
    specs = [
        ("xpbuffer 1 pass", dict(op="ntstore", access_size=128, pattern="stride", stride=256, passes=2,
                                 pass_offset=128, count=W // 256, **one), halves),
        ("xpbuffer 2 passes", dict(op="ntstore", access_size=128, pattern="stride", stride=256, passes=2,
                                   pass_offset=128, count=2 * W // 256, **one), [(0, W)]),
        ("latency cold", dict(mode="latency", op=flush_op, cold=1, count=W // 256, **one), [(0, W)]),
        ("latency warm", dict(mode="latency", op="ntstore", warm=1, count=W // 256, **one), [(0, W)]),
        ("sparse 8 B", dict(op="ntstore", width=8, access_size=8, pattern="stride", stride=64,
                            count=W // 64, **one), [(j, j + 8) for j in range(0, W, 64)]),
        ("fence_interval < access", dict(op=flush_op2, access_size=1024, fence="sfence", fence_interval=256,
                                         flush="access", count=W // 1024, **one), [(0, W)]),
        ("flush=access", dict(op=flush_op, access_size=4096, flush="access", fence="mfence",
                              count=W // 4096, **one), [(0, W)]),
        ("per-dimm thread 0", dict(op="store,load", **per_dimm),
         [(c * GRAN, (c + 1) * GRAN) for c in range(W // GRAN) if dimm_of(c * GRAN) in (0, 1)]),
        ("per-dimm thread 1", dict(op="load,ntstore", **per_dimm),
         [(c * GRAN, (c + 1) * GRAN) for c in range(W // GRAN) if dimm_of(c * GRAN) in (2, 3)]),
    ]
    for width, op in ((8, "store"), (16, "ntstore"), (32, flush_op)):
        if width in widths:
            specs.append((f"width {width}", dict(op=op, width=width, access_size=width, count=W // width, **one),
                          [(0, W)]))
    cases = [Case(label, 40 * W + k * 2 * W, W, params) for k, (label, params, _) in enumerate(specs)]
    end = Case("window ends at target_size", target_size - W, W, dict(op="store", count=W // 2 // 256,
                                                                      duration_ms=1000))
    cases.append(end)
    expected = {label: want for label, _, want in specs}
    expected[end.label] = [(0, W)]
    stray = run_batch(module, pmem_dev, filled, cases)
    assert not stray, f"writes outside every window: {stray[:5]}"
    for case in cases:
        got = case.rel()
        want = expected[case.label]
        assert got == merge(want), f"{case.label}: changed {got[:6]}... ({lines_of(got)} bytes), " \
                                   f"want {merge(want)[:6]}... ({lines_of(want)} bytes)"


def merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(ranges):
        if out and out[-1][1] == s:
            out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out
