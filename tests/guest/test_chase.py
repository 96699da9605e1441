"""op chase on the module (issue 35 point 1): the chain laid by core/chase.c, run by the shared
engine's pl_chase_loop in pinned IRQ-off segments, its latency per hop in the result. Under TCG
only structure and counts are asserted, never a speed."""
from __future__ import annotations

import errno
import hashlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from kernel_log import KernelLog
from kmod_driver import Module, WriteRefused
from test_features import DEFAULTS

# the module's chase on every kernel of the matrix (issue 35): passed by hand on 6.1, 5.10, 6.1-rt, 7.2 and 6.12
pytestmark = pytest.mark.kernel_matrix

MiB = 1 << 20
WS = 4 * MiB


@pytest.fixture
def fresh(mod: Module) -> Iterator[Module]:
    if not Path("/sys/module/pmemlab").exists():
        pytest.fail("the module was unloaded by an earlier test")
    mod.wait(timeout=60)
    # the chase's own parameters at their defaults too: the module keeps what an earlier test set
    mod.set(**{**DEFAULTS, "mode": "latency", "op": "chase", "working_set": WS, "chase_write": "none",
               "chase_page": 0, "chase_batch": 256})
    yield mod
    mod.wait(timeout=60)
    mod.set(chase_write="none")  # the module keeps its parameters: the next file's chase is plain


def device_bytes(dev: str, n: int = WS) -> bytes:
    """The device's first n bytes as the namespace holds them: O_DIRECT, since a buffered read of
    the block device answers from the page cache an earlier read filled, blind to the module's
    writes through the DAX mapping."""
    return subprocess.run(["dd", f"if={dev}", f"bs={MiB}", f"count={n // MiB}", "iflag=direct", "status=none"],
                          check=True, capture_output=True).stdout


def window_digest(dev: str) -> str:
    return hashlib.sha256(device_bytes(dev)).hexdigest()


@pytest.mark.parametrize("page,access,batch,threads", [(0, 64, 256, 1), (1, 4096, 64, 2), (0, 256, 16, 2)])
def test_chase_runs_on_the_module_and_leaves_the_target(fresh: Module, pmem_dev: str, page: int, access: int,
                                                      batch: int, threads: int) -> None:
    before = window_digest(pmem_dev)
    res = fresh.run(threads=threads, chase_page=page, access_size=access, chase_batch=batch, duration_ms=300,
                    samples=64)
    assert fresh.state() == "done", fresh.last_error()
    rows = res.threads
    assert len(rows) == threads
    for r in rows:
        assert r["op"] == "chase" and r["mode"] == "latency", r
        assert "chase_loop" in r["loop"] and r["insn"] == "mov", r
        ops, n = int(r["ops"]), int(r["lat_n"])
        # a sample is one batch of hops: the hops are whole batches, each in the histogram
        assert n >= 1 and ops == n * batch, (ops, n, batch)
        assert int(r["reads"]) == ops and int(r["writes"]) == 0 and int(r["bytes"]) == ops * access, r
        assert int(r["segments"]) >= 1, r
        assert int(r["lat_min"]) <= int(r["lat_p50"]) <= int(r["lat_max"]), r
    assert window_digest(pmem_dev) == before, "the chase left bytes changed in the target"


def test_chase_counts_hops_in_whole_batches(fresh: Module) -> None:
    res = fresh.run(count=1000, chase_batch=64)
    r = res.threads[0]
    assert fresh.state() == "done", fresh.last_error()
    assert int(r["ops"]) == 1024 and int(r["lat_n"]) == 16, r


@pytest.mark.parametrize("bad,param,err", [
    (dict(chase_page=1), "access_size", errno.EINVAL),
    (dict(mode="bandwidth"), "chase", errno.EINVAL),
    (dict(access_size=32), "multiple of 64", errno.EINVAL),
    # shared lines: another thread's chain or restore would overwrite the pointers (a wild load)
    (dict(threads=2, placement="global"), "needs lines of its own", errno.EINVAL),
    (dict(threads=2, placement="per-dimm", interleave_ways=1), "needs lines of its own", errno.EINVAL),
])
def test_bad_chase_parameters_are_refused_with_the_reason(fresh: Module, bad: dict[str, object], param: str,
                                                          err: int) -> None:
    fresh.set(**bad)
    with pytest.raises(WriteRefused) as info:
        fresh.start()
    assert info.value.errno == err and param in info.value.reason, info.value.reason


def test_a_chase_batch_off_the_unroll_is_refused(fresh: Module) -> None:
    with pytest.raises(WriteRefused) as info:
        fresh.write("chase_batch", 24)
    assert info.value.errno == errno.EINVAL and "16" in info.value.reason, info.value.reason


SMALL = 256 << 10  # the written chain's window: 4096 lines of 64 B


@pytest.mark.parametrize("cw,loop,insn", [("store", "pl_chase_store_loop", "mov+mov"),
                                          ("raw", "pl_chase_raw_loop", "movnti+mov")])
def test_a_writing_chase_writes_exactly_its_chains_lines(fresh: Module, pmem_dev: str, cw: str, loop: str,
                                                         insn: str) -> None:
    """chase_write on the module (the byte oracle of tests/host/runner/test_chase_write.py): the 8 bytes at
    offset 8 of every line of the chain hold odd store data, each line its own; every other byte of
    the device's first 4 MiB, the pointers written back among them, is as it was."""
    lines, batch = SMALL // 64, 64
    before = device_bytes(pmem_dev)
    # a seed of its own: with the same seed the other case's data sits in some lines already (the
    # chain's first line gets the same value from both), and those words would not change
    res = fresh.run(working_set=SMALL, chase_write=cw, chase_batch=batch, count=2 * lines, samples=16,
                    seed={"store": 0x5EED0001, "raw": 0x5EED0002}[cw])
    after = device_bytes(pmem_dev)
    r = res.threads[0]
    assert r["loop"] == loop and r["insn"] == insn, r
    ops = int(r["ops"])
    assert ops == 2 * lines and int(r["lat_n"]) == ops // batch, r
    # a store-chase's hop reads and writes: a write, as a copy's access; raw's write passes are uncounted
    assert (int(r["reads"]), int(r["writes"])) == ((0, ops) if cw == "store" else (ops, 0)), r
    a = np.frombuffer(before, dtype=np.uint64)
    b = np.frombuffer(after, dtype=np.uint64)
    changed = np.nonzero(a != b)[0]
    assert sorted(int(k) * 8 for k in changed) == [k * 64 + 8 for k in range(lines)], \
        f"{len(changed)} words changed, the chain has {lines} lines"
    vals = b[changed]
    assert bool(np.all(vals & 1)) and len(set(vals.tolist())) == lines, "store data: odd, every line its own"


def test_a_raw_chase_shorter_than_a_batch_is_refused(fresh: Module) -> None:
    fresh.set(working_set=4096, chase_write="raw", chase_batch=256)
    with pytest.raises(WriteRefused) as info:
        fresh.start()
    assert info.value.errno == errno.EINVAL and "chase_batch" in info.value.reason, info.value.reason


NO_HUGE_VMALLOC = "dram_pages=2m: this kernel has no huge vmalloc (5.18+): the target has 4096-byte pages"


def test_the_chase_over_2m_pages_of_a_dram_target(module) -> None:
    """chase_page=1 access_size=2M (the probe's 2 MiB-page TLB reach) on the module's DRAM target
    of 2 MiB pages (dram_pages=2m): one line of the chain in each 2 MiB slot, the hops counted in
    whole batches, reads only, the target's pages 2 MiB. A kernel without huge vmalloc (before
    5.18: 5.10) gives the target 4 KiB pages and says so at load (test_module.py
    test_dram_target_page_sizes): skipped with that reason. Last in the file: it loads the module
    on a target of its own (the tests above share the NVDIMM load)."""
    size, batch = 32 * MiB, 16  # 16 slots: a batch of hops goes once round the chain
    with KernelLog() as log, module(target="dram", dram_size=str(size), dram_pages="2m") as sysfs:
        m = Module(sysfs)
        said = [line for line in log.lines() if NO_HUGE_VMALLOC in line]
        if said:
            assert int(m.read("target_page_size")) == 4096
            pytest.skip(f"no huge vmalloc on this kernel: {said[0].strip()}")
        assert int(m.read("target_page_size")) == 2 * MiB
        res = m.run(**{**DEFAULTS, "mode": "latency", "op": "chase", "working_set": size, "chase_write": "none",
                       "chase_page": 1, "access_size": 2 * MiB, "chase_batch": batch, "duration_ms": 200,
                       "samples": 64})
        assert m.state() == "done", m.last_error()
        assert int(m.read("target_page_size")) == 2 * MiB  # the pages the run had
    (r,) = res.threads
    assert r["op"] == "chase" and r["mode"] == "latency" and "chase_loop" in r["loop"], r
    ops, n = int(r["ops"]), int(r["lat_n"])
    assert n >= 1 and ops == n * batch, (ops, n, batch)
    assert int(r["reads"]) == ops and int(r["writes"]) == 0 and int(r["bytes"]) == ops * 2 * MiB, r
    assert int(r["lat_min"]) <= int(r["lat_p50"]) <= int(r["lat_max"]), r
