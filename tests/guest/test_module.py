"""The module against a real fsdax namespace and against DRAM, in the guest: internally
consistent results for every op x mode x pattern, refusals of bad input, -EBUSY during runs,
teardown mid-run, a long run without lockup warnings. (Kernel-log cleanliness is checked after
every test by conftest.clean_kernel_log.)"""
from __future__ import annotations

import errno
import itertools
import subprocess
import threading
import time
from pathlib import Path

import pytest

from kmod_driver import MODES, OPS, PATTERNS, Module, Result, WriteRefused

MiB = 1 << 20


@pytest.fixture(params=["fsdax", "dram"])
def target(request, ko: Path, pmem_dev: str):
    """The module loaded for one target kind; kept loaded across the consistency matrix (a
    reload per test would cost more than the runs) unless another test unloaded it."""
    spec = {"target": pmem_dev} if request.param == "fsdax" else {"target": "dram", "dram_size": "64M"}
    sysfs = Path("/sys/kernel/pmemlab")
    loaded_target = (sysfs / "target").read_text().strip() if (sysfs / "target").exists() else None
    if loaded_target != spec["target"] or (request.param == "dram" and
                                           (sysfs / "target_size").read_text().strip() != str(64 * MiB)):
        subprocess.run(["rmmod", "pmemlab"], capture_output=True)
        args = [f"{k}={v}" for k, v in spec.items()]
        res = subprocess.run(["insmod", str(ko), *args], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
    return request.param, Module()


@pytest.fixture(scope="module", autouse=True)
def unload_after_this_file():
    yield
    subprocess.run(["rmmod", "pmemlab"], capture_output=True)


def usable_ops(mod: Module) -> list[str]:
    feats = set(mod.read("cpu_features").split())
    need = {"store+clwb": "clwb", "store+clflushopt": "clflushopt"}
    return [op for op in OPS if need.get(op, "sse2") in feats]


def check_consistent(res: Result, mode: str, access_size: int, threads: int) -> None:
    rows = res.threads
    assert len(rows) == threads
    total = res.total
    for row in rows + [total]:
        ops, nbytes = int(row["ops"]), int(row["bytes"])
        assert ops > 0, row
        assert nbytes == ops * access_size, row
        assert int(row["ticks"]) > 0 and int(row["ns"]) > 0, row
    for key in ("ops", "bytes"):
        assert sum(int(r[key]) for r in rows) == int(total[key]), key
    if mode == "latency":
        for row in rows + [total]:
            pct = [int(row[k]) for k in ("lat_min", "lat_p50", "lat_p90", "lat_p99", "lat_p999",
                                          "lat_p9999", "lat_max")]
            assert pct == sorted(pct), row
            assert pct[0] <= float(row["lat_mean"]) <= pct[-1], row
            assert float(row["lat_stddev"]) >= 0
        assert int(total["lat_max"]) == max(int(r["lat_max"]) for r in rows)
        assert int(total["lat_min"]) == min(int(r["lat_min"]) for r in rows)


@pytest.mark.parametrize("mode,pattern", list(itertools.product(MODES, PATTERNS)))
def test_every_op_is_consistent(target, mode: str, pattern: str) -> None:
    kind, mod = target
    access = 256
    for op in usable_ops(mod):
        params = dict(mode=mode, op=op, pattern=pattern, access_size=access, working_set=8 * MiB,
                      window_offset=MiB, threads=2, placement="per-thread", hotspot_size=64 * 1024,
                      stride=1024 if pattern == "stride" else 0)
        if mode == "latency":
            params.update(count=500)
        else:
            params.update(count=0, duration_ms=50)
        res = mod.run(**params)
        check_consistent(res, mode, access, threads=2)
        if mode == "bandwidth":
            wall_ns = int(res.total["ns"])
            assert 40e6 <= wall_ns <= 2e9, f"{kind} {op} {pattern}: ran {wall_ns} ns for 50 ms"


def test_target_facts(module, pmem_dev: str) -> None:
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        assert mod.read("target_kind") == "fsdax"
        assert int(mod.read("tsc_khz")) > 0
        assert int(mod.read("target_page_size")) in (4096, 2 * MiB, 1 << 30)
        assert "clflush" in mod.read("cpu_features").split()
        assert "8" in mod.read("widths").split()
        assert mod.read("fs_signature") == "none"
        assert mod.read("state") == "idle"


def test_dram_target_page_sizes(module) -> None:
    for pages, size in (("4k", 4096), ("2m", 2 * MiB)):
        with module(target="dram", dram_size="16M", dram_pages=pages) as sysfs:
            mod = Module(sysfs)
            assert mod.read("target_kind") == "dram"
            assert int(mod.read("target_size")) == 16 * MiB
            assert int(mod.read("target_page_size")) == size
            check_consistent(mod.run(op="store", duration_ms=20, threads=1), "bandwidth", 64, 1)


BAD_VALUES = ["", "bogus", "-1", "1.5", "99999999999999999999999999", "0x", "1 2", "\x01\x02", "9" * 4000]
NUMERIC = ["access_size", "stride", "window_offset", "working_set", "hotspot_size", "passes",
           "pass_offset", "fence_interval", "threads", "interleave_ways", "interleave_gran",
           "dimms_per_thread", "duration_ms", "count", "delay_ticks", "samples", "read_pct"]
ENUMS = ["mode", "op", "pattern", "fence", "flush", "placement", "prefetch", "width"]


@pytest.mark.parametrize("name", NUMERIC + ENUMS + ["cpus", "cold", "probe"])
def test_bad_values_are_refused(module, pmem_dev: str, name: str) -> None:
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        before = mod.read(name)
        for value in BAD_VALUES:
            if name in ("cpus",) and value == "":
                continue  # empty cpus means "default placement"
            with pytest.raises(WriteRefused) as info:
                mod.write(name, value)
            assert info.value.errno in (errno.EINVAL, errno.ERANGE, errno.EOPNOTSUPP), value
            assert info.value.reason, f"{name}={value!r} refused without a reason"
            assert mod.read(name) == before, f"{name} changed by a refused write"
        # The module still measures after all that.
        check_consistent(mod.run(op="load", duration_ms=20, threads=1, access_size=64), "bandwidth", 64, 1)


def test_out_of_range_combinations_are_refused_at_run(module, pmem_dev: str) -> None:
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        size = int(mod.read("target_size"))
        for params in (dict(window_offset=size - 4096, working_set=MiB),  # past the end
                       dict(window_offset=0, working_set=size + 4096),
                       dict(threads=64, working_set=MiB)):  # more threads than CPUs
            mod.set(window_offset=0, working_set=0)
            try:
                mod.set(**params)
                with pytest.raises(WriteRefused):
                    mod.start()
            except WriteRefused:
                pass  # refusing the value itself is just as good
            assert mod.state() in ("idle", "done") or mod.state().startswith("error")
        mod.set(window_offset=0, working_set=8 * MiB, threads=1)
        mod.run(duration_ms=20)


def test_unsupported_width_is_refused_with_reason(module, pmem_dev: str) -> None:
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        widths = set(mod.read("widths").split())
        missing = [w for w in ("8", "16", "32", "64") if w not in widths]
        if not missing:
            pytest.skip("this CPU runs every width")
        with pytest.raises(WriteRefused) as info:
            mod.write("width", missing[-1])
            mod.start()
        assert "avx" in info.value.reason.lower() or "width" in info.value.reason.lower()


def test_second_run_and_writes_during_a_run_get_ebusy(module, pmem_dev: str) -> None:
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        mod.set(op="load", duration_ms=3000, threads=2, working_set=16 * MiB)
        mod.start()
        assert mod.state() == "running"
        for name, value in (("run", 1), ("op", "store"), ("threads", 1)):
            with pytest.raises(WriteRefused) as info:
                mod.write(name, value)
            assert info.value.errno == errno.EBUSY
        mod.write("abort", 1)
        state = mod.wait(timeout=30)
        assert state in ("done", "idle") or state.startswith("error"), state
        mod.run(duration_ms=20)  # usable again


def test_rmmod_mid_run(module, pmem_dev: str) -> None:
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        mod.set(op="store", duration_ms=20000, threads=2, working_set=16 * MiB)
        mod.start()
        time.sleep(0.5)
        start = time.monotonic()
        subprocess.run(["rmmod", "pmemlab"], check=True)
        assert time.monotonic() - start < 10
    assert not Path("/sys/module/pmemlab").exists()


def test_abort_during_latency_run(module, pmem_dev: str) -> None:
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        mod.set(mode="latency", op="load", count=50_000_000, threads=1, working_set=64 * MiB,
                pattern="rand")
        mod.start()
        time.sleep(0.5)
        mod.write("abort", 1)
        assert mod.wait(timeout=30) != "running"


def test_concurrent_writers_do_not_break_the_module(module, pmem_dev: str) -> None:
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        errors: list[BaseException] = []

        def hammer(seed: int) -> None:
            values = ["64", "128", "4096", "bogus", "", "-5"]
            try:
                for i in range(300):
                    try:
                        mod.write(["access_size", "stride", "threads", "op"][(i + seed) % 4], values[(i * seed) % 6])
                    except WriteRefused:
                        pass
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        workers = [threading.Thread(target=hammer, args=(s,)) for s in range(1, 5)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert not errors
        mod.set(access_size=64, stride=0, threads=1, op="load")
        check_consistent(mod.run(duration_ms=20), "bandwidth", 64, 1)


@pytest.mark.slow
def test_sixty_second_run_without_lockup(module, pmem_dev: str) -> None:
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        res = mod.run(timeout=180, op="ntstore", duration_ms=60_000, threads=2, working_set=64 * MiB)
        tsc_hz = int(mod.read("tsc_khz")) * 1000
        for row in res.threads:
            wall_s = (int(row["ticks"]) + int(row["gap_ticks"])) / tsc_hz
            assert 55 <= wall_s <= 120, row
            assert int(row["segments"]) > 60, row  # cut into many short IRQ-off segments
