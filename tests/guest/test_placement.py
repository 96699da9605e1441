"""Placement oracle: fill the namespace with a known pattern, run each write op on a window, then
read the device back and check that no byte outside the window changed, and that one sequential
pass changed exactly the window."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from kmod_driver import WRITE_OPS, Module

MiB = 1 << 20
CHUNK = MiB


# The known content: one MiB of 8-byte words that name their position, repeated over the whole
# device. One bytes object serves every chunk, so checking a MiB is a single memcmp (the guest
# runs under software emulation, where anything more per byte costs minutes per scan).
FILL = (np.arange(CHUNK // 8, dtype=np.uint64) ^ np.uint64(0x5A5A5A5A00000000)).tobytes()


@pytest.fixture(scope="module")
def filled(pmem_dev: str):
    """Write the pattern once; each test checks and then restores what it changed."""
    size = int(subprocess.run(["blockdev", "--getsize64", pmem_dev], capture_output=True, text=True,
                              check=True).stdout)
    size -= size % CHUNK
    with open(pmem_dev, "r+b", buffering=0) as dev:
        for off in range(0, size, CHUNK):
            dev.write(FILL)
        os.fsync(dev.fileno())
    return size


def changed_ranges(dev_path: str, size: int) -> list[tuple[int, int]]:
    """Byte ranges (64-byte granular) that differ from the fill pattern."""
    subprocess.run(["blockdev", "--flushbufs", dev_path], check=True)  # drop the page cache
    ranges: list[tuple[int, int]] = []
    with open(dev_path, "rb", buffering=0) as dev:
        for off in range(0, size, CHUNK):
            got = dev.read(CHUNK)
            want = FILL
            if got == want:
                continue
            for line in range(0, CHUNK, 64):
                if got[line:line + 64] != want[line:line + 64]:
                    start = off + line
                    if ranges and ranges[-1][1] == start:
                        ranges[-1] = (ranges[-1][0], start + 64)
                    else:
                        ranges.append((start, start + 64))
    return ranges


def restore(dev_path: str, ranges: list[tuple[int, int]]) -> None:
    with open(dev_path, "r+b", buffering=0) as dev:
        for start, end in ranges:
            first = start - start % CHUNK
            for off in range(first, end, CHUNK):
                dev.seek(off)
                dev.write(FILL)
        os.fsync(dev.fileno())


WINDOW_OFFSET, WINDOW = 8 * MiB, 4 * MiB


def run_and_diff(module, pmem_dev: str, size: int, **params) -> list[tuple[int, int]]:
    with module(target=pmem_dev, allow_overwrite=1) as sysfs:
        Module(sysfs).run(window_offset=WINDOW_OFFSET, working_set=WINDOW, **params)
    ranges = changed_ranges(pmem_dev, size)
    restore(pmem_dev, ranges)
    return ranges


@pytest.mark.parametrize("op", WRITE_OPS)
@pytest.mark.parametrize("pattern,placement", [("rand", "global"), ("stride", "per-thread"),
                                               ("hotspot", "per-thread"), ("rand", "per-dimm")])
def test_writes_stay_inside_the_window(module, pmem_dev: str, filled: int, op: str, pattern: str,
                                       placement: str) -> None:
    ranges = run_and_diff(module, pmem_dev, filled, op=op, pattern=pattern, placement=placement,
                          threads=2, access_size=256, stride=1024, hotspot_size=64 * 1024,
                          interleave_ways=4, interleave_gran=4096, dimms_per_thread=1,
                          mode="bandwidth", duration_ms=30, count=0)
    assert ranges, "the run wrote nothing"
    outside = [(s, e) for s, e in ranges if s < WINDOW_OFFSET or e > WINDOW_OFFSET + WINDOW]
    assert not outside, f"{op} {pattern}/{placement} wrote outside the window: {outside[:5]}"


@pytest.mark.parametrize("op", WRITE_OPS)
def test_one_sequential_pass_changes_exactly_the_window(module, pmem_dev: str, filled: int, op: str) -> None:
    access, threads = 256, 2
    ranges = run_and_diff(module, pmem_dev, filled, op=op, pattern="seq", placement="per-thread",
                          threads=threads, access_size=access, mode="bandwidth",
                          count=WINDOW // threads // access)
    assert ranges == [(WINDOW_OFFSET, WINDOW_OFFSET + WINDOW)]
