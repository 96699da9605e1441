"""copy and ntcopy on the module (issue 35 point 1): the shared engine's copy loops in pinned
IRQ-off segments, each thread's region split as core/place.c splits it for both backends. The
byte oracle: the device is filled with random bytes first (O_DIRECT, as the namespace holds them);
after a copy, the destination holds the source's bytes exactly where the copy wrote, and no other
byte of the device's first MiBs changed. Under TCG only structure and counts, never a speed."""
from __future__ import annotations

import errno
import random
import subprocess
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from kmod_driver import Module, WriteRefused
from test_features import DEFAULTS

MiB = 1 << 20
OFF = MiB  # window_offset: the device's first MiB (where file systems sign) is left as it is
DEV = 8 * MiB  # the bytes compared: the window and what lies around it


def split(span: int) -> tuple[int, int]:
    """(bytes of each part, source - destination) of a copy's region of span bytes, as the docs
    state the rule (method.md, Addresses): halves below 2 MiB; from 2 MiB on the source an odd
    number of 4 KiB pages above the destination, each part the rest, in whole lines."""
    if span < 2 * MiB:
        half = span // 2 // 64 * 64
        return half, half
    delta = (span // 2 & ~4095) | 4096
    return min(delta, span - delta) // 64 * 64, delta


def device_bytes(dev: str, n: int = DEV) -> bytes:
    """The device's first n bytes as the namespace holds them (O_DIRECT: not the page cache)."""
    return subprocess.run(["dd", f"if={dev}", f"bs={MiB}", f"count={n // MiB}", "iflag=direct", "status=none"],
                          check=True, capture_output=True).stdout


def fill(dev: str, seed: int) -> bytes:
    """Random bytes in [OFF, DEV) of the device, the rest as it is; returns the device's first DEV bytes."""
    data = random.Random(seed).randbytes(DEV - OFF)
    subprocess.run(["dd", f"of={dev}", f"bs={MiB}", f"seek={OFF // MiB}", "oflag=direct", "conv=notrunc",
                    "status=none"], input=data, check=True)
    got = device_bytes(dev)
    assert got[OFF:] == data, "the random bytes did not reach the device"
    return got


@pytest.fixture
def fresh(mod: Module) -> Iterator[Module]:
    if not Path("/sys/module/pmemlab").exists():
        pytest.fail("the module was unloaded by an earlier test")
    mod.wait(timeout=60)
    mod.set(**{**DEFAULTS, "window_offset": OFF, "warmup_ms": 0})
    yield mod
    mod.wait(timeout=60)
    mod.set(window_offset=0, working_set=8 * MiB, op="load", count=0, threads=1)


def insn_of(mod: Module, op: str, width: int) -> str:
    row = next(ln.split()[1:] for ln in mod.read("op_table").splitlines() if ln.split()[0] == op)
    return next(c.split(":")[1] for c in row if c.startswith(f"{width}:"))


def check_rows(mod: Module, rows: list[dict[str, str]], op: str, mode: str, count: int, access: int) -> None:
    """Each thread's line: the op, its loop (pl_bw_<op>_<form>_linear or pl_lat_<op>_<form>) and
    unit (load and store, as op_table names them), every access a write: writes = ops = count,
    reads = 0, bytes = ops x access_size."""
    for r in rows:
        width = int(r["width"])
        kind = "lat" if mode == "latency" else "bw"
        assert r["op"] == op and r["mode"] == mode, r
        assert r["loop"].startswith(f"pl_{kind}_{op}_") and (mode == "latency" or r["loop"].endswith("_linear")), r
        assert r["insn"] == insn_of(mod, op, width) and len(r["insn"].split("+")) == 2, r
        assert (int(r["ops"]), int(r["writes"]), int(r["reads"])) == (count, count, 0), r
        assert int(r["bytes"]) == count * access, r


def expect_copied(before: bytes, regions: list[tuple[int, int, int]]) -> bytes:
    """before with each (destination, source, length) copied, in order: what the device must hold."""
    out = bytearray(before)
    for dst, src, n in regions:
        out[dst:dst + n] = before[src:src + n]
    return bytes(out)


def first_difference(a: bytes, b: bytes) -> str:
    k = next(i for i in range(len(a)) if a[i] != b[i])
    return f"first differing byte at {k:#x}"


@pytest.mark.kernel_matrix
@pytest.mark.parametrize("op,mode,access,width", [("copy", "bandwidth", 64, 0), ("ntcopy", "bandwidth", 4096, 0),
                                                  ("copy", "latency", 256, 16), ("ntcopy", "latency", 64, 8)])
def test_a_copy_writes_the_sources_bytes_to_its_destination_only(fresh: Module, pmem_dev: str, op: str, mode: str,
                                                                 access: int, width: int) -> None:
    """One thread, one sequential pass over the destination (1 MiB region: two halves): the lower
    half holds the upper half's bytes after the run, every other byte is as it was."""
    ws = MiB
    half, delta = split(ws)
    count = half // access
    before = fill(pmem_dev, seed=zlib.crc32(f"{op} {mode}".encode()))
    assert before[OFF:OFF + half] != before[OFF + delta:OFF + delta + half]
    res = fresh.run(op=op, mode=mode, access_size=access, width=width, working_set=ws, count=count,
                    pattern="seq", samples=16)
    after = device_bytes(pmem_dev)
    check_rows(fresh, res.threads, op, mode, count, access)
    want = expect_copied(before, [(OFF, OFF + delta, half)])
    assert after == want, first_difference(after, want)


def test_ntcopy_per_thread_regions_with_the_skewed_source(fresh: Module, pmem_dev: str) -> None:
    """Two threads, 3 MiB each: the source an odd number of 4 KiB pages above the destination
    (method.md), each thread within its own region."""
    ws, threads, access = 6 * MiB, 2, 4096
    span = ws // threads
    half, delta = split(span)
    assert delta % 8192 == 4096 and delta + half <= span
    count = half // access
    before = fill(pmem_dev, seed=35)
    res = fresh.run(op="ntcopy", threads=threads, placement="per-thread", access_size=access, working_set=ws,
                    count=count, pattern="seq")
    after = device_bytes(pmem_dev)
    assert len(res.threads) == threads
    check_rows(fresh, res.threads, "ntcopy", "bandwidth", count, access)
    want = expect_copied(before, [(OFF + i * span, OFF + i * span + delta, half) for i in range(threads)])
    assert after == want, first_difference(after, want)


def test_a_random_copy_writes_whole_slots_of_the_source(fresh: Module, pmem_dev: str) -> None:
    """pattern rand, fewer accesses than slots: every 64-byte slot of the destination either holds
    what it held or the source's slot delta above it, some hold the source's, no byte elsewhere changed."""
    ws, access, count = MiB, 64, 500
    half, delta = split(ws)
    before = fill(pmem_dev, seed=36)
    res = fresh.run(op="copy", access_size=access, working_set=ws, count=count, pattern="rand")
    after = device_bytes(pmem_dev)
    r = res.threads[0]
    assert r["loop"].startswith("pl_bw_copy_") and r["loop"].endswith("_rand"), r
    assert (int(r["ops"]), int(r["writes"]), int(r["reads"]), int(r["bytes"])) == (count, count, 0, count * access)
    assert after[:OFF] == before[:OFF] and after[OFF + half:] == before[OFF + half:], "bytes outside the destination"
    copied = 0
    for k in range(half // access):
        dst, src = OFF + k * access, OFF + delta + k * access
        got = after[dst:dst + access]
        if got != before[dst:dst + access]:
            assert got == before[src:src + access], f"slot {k}: neither its old bytes nor the source's"
            copied += 1
    assert 0 < copied <= count, copied


def test_copies_refuse_per_dimm_placement(fresh: Module) -> None:
    for op in ("copy", "ntcopy"):
        fresh.set(op=op, placement="per-dimm", interleave_ways=2, interleave_gran=4096)
        with pytest.raises(WriteRefused) as info:
            fresh.start()
        assert info.value.errno == errno.EINVAL, info.value
        assert info.value.reason == f"op {op} does not combine with placement per-dimm", info.value.reason
        assert fresh.state() != "running"
    fresh.set(placement="per-thread", interleave_ways=1)
