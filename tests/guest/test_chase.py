"""op chase on the module (issue 35 point 1): the chain laid by core/chase.c, run by the shared
engine's pl_chase_loop in pinned IRQ-off segments, its latency per hop in the result. Under TCG
only structure and counts are asserted, never a speed."""
from __future__ import annotations

import errno
import hashlib
from pathlib import Path

import pytest

from kmod_driver import Module, WriteRefused
from test_features import DEFAULTS

# the module's chase on every kernel of the matrix (issue 35): passed by hand on 6.1, 5.10, 6.1-rt, 7.2 and 6.12
pytestmark = pytest.mark.kernel_matrix

MiB = 1 << 20
WS = 4 * MiB


@pytest.fixture
def fresh(mod: Module) -> Module:
    if not Path("/sys/module/pmemlab").exists():
        pytest.fail("the module was unloaded by an earlier test")
    mod.wait(timeout=60)
    mod.set(**{**DEFAULTS, "mode": "latency", "op": "chase", "working_set": WS})
    return mod


def window_digest(dev: str) -> str:
    with open(dev, "rb") as f:
        return hashlib.sha256(f.read(WS)).hexdigest()


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
