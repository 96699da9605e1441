"""The module against a real fsdax namespace and against DRAM, in the guest: internally
consistent results for every op x mode x pattern, refusals of bad input, -EBUSY during runs,
teardown mid-run, a long run without lockup warnings. (Kernel-log cleanliness is checked after
every test by conftest.clean_kernel_log.)"""
from __future__ import annotations

import contextlib
import errno
import itertools
import os
import re
import select
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel_log import KernelLog
from kmod_driver import COPY_OPS, MODES, OPS, PATTERNS, SYSFS, Module, Result, WriteRefused, assert_split

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


def test_the_module_is_loaded_from_the_guests_memory(ko: Path) -> None:
    """scripts/vm copies the module into tmpfs: from the host's virtio-fs every insmod read the
    file again (an open drops its page cache), onto the node of the CPU it ran on."""
    mounts = [line.split()[1:3] for line in Path("/proc/mounts").read_text().splitlines()]
    where = max((m for m in mounts if ko.resolve().is_relative_to(m[0])), key=lambda m: len(m[0]))
    assert where[1] == "tmpfs", (ko, where)
    assert ko.read_bytes()[:4] == b"\x7fELF"


def usable_ops(mod: Module) -> list[str]:
    feats = set(mod.read("cpu_features").split())
    need = {"store+clwb": "clwb", "store+clflushopt": "clflushopt"}
    return [op for op in OPS + COPY_OPS if need.get(op, "sse2") in feats]


def milli(value: str) -> int:
    """A three-decimal result field as an integer number of thousandths (exact; lat_mean may be
    negative: "-0.250")."""
    sign, digits = (-1, value[1:]) if value.startswith("-") else (1, value)
    whole, _, frac = digits.partition(".")
    assert len(frac) == 3, value
    return sign * (int(whole) * 1000 + int(frac))


SUMMED = ("ops", "reads", "writes", "bytes", "segments", "gap_ticks")


def check_consistent(res: Result, mode: str, access_size: int, threads: int, count: int = 0) -> None:
    """bytes = ops x access_size, reads + writes = ops, the loading threads' sums = aggregate
    (ops, reads, writes, bytes, segments, gap_ticks), the aggregate's ticks the common window (at
    least every thread's ticks) and its bandwidth its bytes over that window (method.md),
    ops = count for count runs, percentiles monotonic, the aggregate's start and end lags the
    largest of the threads'."""
    rows = res.threads
    assert len(rows) == threads
    total = res.total
    loaders = [r for r in rows if r["role"] != "probe"]
    for row in rows + [total]:
        ops, nbytes = int(row["ops"]), int(row["bytes"])
        assert ops > 0, row
        assert nbytes == ops * access_size, row
        assert int(row["reads"]) + int(row["writes"]) == ops, row
        assert int(row["ticks"]) > 0 and int(row["ns"]) > 0, row
    for key in SUMMED:
        assert sum(int(r[key]) for r in loaders) == int(total[key]), key
    for key in ("start_lag_ticks", "end_lag_ticks"):
        assert int(total[key]) == max(int(r[key]) for r in loaders), key
    tsc_khz = int((SYSFS / "tsc_khz").read_text())
    assert int(total["ticks"]) >= max(int(r["ticks"]) for r in loaders)
    assert milli(total["bw_mbps"]) == int(total["bytes"]) * tsc_khz // int(total["ticks"])
    if count:
        for row in rows:
            if row["role"] != "probe":
                assert int(row["ops"]) == count, row
    if mode == "latency":
        for row in rows + [total]:
            pct = [int(row[k]) for k in ("lat_min", "lat_p50", "lat_p90", "lat_p99", "lat_p999",
                                          "lat_p9999", "lat_max")]
            assert pct == sorted(pct), row
            # the mean is of the unclamped differences (method.md): below the clamped min only
            # where samples were clamped to 0
            assert float(row["lat_mean"]) <= pct[-1], row
            assert pct[0] <= float(row["lat_mean"]) or pct[0] == 0, row
            assert float(row["lat_stddev"]) >= 0
            assert int(row["lat_n"]) == int(row["ops"]), row
        assert int(total["lat_max"]) == max(int(r["lat_max"]) for r in rows)
        assert int(total["lat_min"]) == min(int(r["lat_min"]) for r in rows)


def covered(row: dict[str, str]) -> int:
    """The ticks a thread's result accounts for, from the run's common start to its end: its
    start lag, its timed ticks, the gaps between its segments and its end lag (method.md)."""
    return sum(int(row[k]) for k in ("start_lag_ticks", "ticks", "gap_ticks", "end_lag_ticks"))


def check_duration(mod: Module, res: Result, duration_ms: int) -> None:
    """Each thread of a duration run ran to its end, by the engine's own accounting, never by a
    wall-time ratio (under TCG a vCPU stalls for 100s of ms, inside a segment or between two):
    its result covers the window from the common start (start lag, timed ticks, gaps, end lag)
    exactly when its last segment ended before the window's end (end lag > 0: the loop only
    stops at or past the end), and more only by an overrun of its last segment (end lag 0),
    which is part of that segment's timed ticks: a thread that left early falls short, one that
    went on for segments past the end would need its gaps too. A thread that got no CPU for the
    whole window runs exactly one segment late (method.md). The aggregate's window, from the
    first thread's first timed stamp to the last one's last, is what the threads' stamps give,
    to the tick."""
    tsc_khz = int(mod.read("tsc_khz"))
    want = duration_ms * tsc_khz
    last = []
    for row in res.threads:
        got = covered(row)
        start_lag, end_lag = int(row["start_lag_ticks"]), int(row["end_lag_ticks"])
        ticks, segments = int(row["ticks"]), int(row["segments"])
        where = f"thread {row['thread']} covered {got} ticks of a {want}-tick run ({duration_ms} ms; started " \
            f"{start_lag} ticks late, left {end_lag} of its end, {segments} segments, {ticks} timed ticks)"
        assert segments >= 1 and got >= want, where + ": it stopped before the end"
        if end_lag:
            assert got == want, where + ": its last segment ended before the end, the accounting must close exactly"
        elif start_lag >= want:
            assert segments == 1, where + ": a thread that started after the end runs exactly one segment"
        else:
            assert got - want < ticks, where + ": an overrun is inside its last segment, which started before the end"
        last.append(got - end_lag)  # its last timed stamp, from the common start
    assert int(res.total["ticks"]) == max(last) - min(int(r["start_lag_ticks"]) for r in res.threads), \
        (res.total, res.threads)


@pytest.mark.kernel_matrix
@pytest.mark.check
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
        # (the run's length is test_run_length_close_to_the_request's: under a busy host a vCPU
        # can miss a 50 ms window or stretch it, seen both ways under TCG at load 8 to 11)
        check_consistent(res, mode, access, threads=2, count=params["count"])


@pytest.mark.kernel_matrix
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


def _notified(fd: int, timeout_s: float) -> bool:
    """poll() of a sysfs file for its notification (POLLPRI|POLLERR) for up to timeout_s."""
    p = select.poll()
    p.register(fd, select.POLLPRI | select.POLLERR)
    return bool(p.poll(int(timeout_s * 1000)))


def _reread(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    return os.read(fd, 4096).decode().strip()


@pytest.mark.kernel_matrix
def test_state_is_notified_at_every_change(module) -> None:
    """`state` is notified (sysfs_notify) when a run starts (before the `run` write returns) and
    when it ends, done or aborted: a reader that read it and polls it for POLLPRI wakes then, and
    not before (docs/interface.md)."""
    with module(target="dram", dram_size="64M") as sysfs:
        mod = Module(sysfs)
        mod.set(mode="bandwidth", op="load", access_size=256, working_set=8 * MiB, threads=1, count=0,
                duration_ms=300)
        fd = os.open(sysfs / "state", os.O_RDONLY)
        try:
            assert _reread(fd) == "idle"  # the read arms the poll
            assert not _notified(fd, 0), "notified with nothing changed"
            mod.start()
            assert _notified(fd, 0), "the run started: notified before the write returned"
            state = _reread(fd)
            if state == "running":  # (a vCPU stalled past the run's end: both changes in one wake)
                assert _notified(fd, 600), "the run never notified its end"
                state = _reread(fd)
            assert state == "done", mod.last_error()
            assert not _notified(fd, 0), "notified again with nothing changed"
            # an aborted run notifies its end too
            mod.set(duration_ms=60_000)
            mod.start()
            assert _notified(fd, 0) and _reread(fd) == "running"
            mod.write("abort", 1)
            assert _notified(fd, 600), "the aborted run never notified its end"
            assert _reread(fd) == "error:aborted"
        finally:
            os.close(fd)


@pytest.mark.kernel_matrix
def test_dram_target_page_sizes(module) -> None:
    """4 KiB and 2 MiB pages as asked; on a kernel without huge vmalloc (before 5.18: 5.10) the
    2 MiB request gets 4 KiB pages, and the module says so at load, and why."""
    for pages, size in (("4k", 4096), ("2m", 2 * MiB)):
        with KernelLog() as log, module(target="dram", dram_size="16M", dram_pages=pages) as sysfs:
            mod = Module(sysfs)
            assert mod.read("target_kind") == "dram"
            assert int(mod.read("target_size")) == 16 * MiB
            if pages == "2m" and any("dram_pages=2m: this kernel has no huge vmalloc (5.18+): the target "
                                     "has 4096-byte pages" in line for line in log.lines()):
                size = 4096
            assert int(mod.read("target_page_size")) == size
            check_consistent(mod.run(op="store", duration_ms=20, threads=1), "bandwidth", 64, 1)


BAD_VALUES = ["", "bogus", "-1", "1.5", "99999999999999999999999999", "0x", "1 2", "\x01\x02", "9" * 4000]
NUMERIC = ["access_size", "stride", "window_offset", "working_set", "hotspot_size", "passes",
           "pass_offset", "fence_interval", "threads", "interleave_ways", "interleave_gran",
           "dimms_per_thread", "duration_ms", "count", "delay_ticks", "samples", "read_pct"]
ENUMS = ["mode", "op", "pattern", "fence", "flush", "placement", "prefetch", "width"]


@pytest.mark.parametrize("name", NUMERIC + ENUMS + ["cpus", "cold", "probe"])
def test_bad_values_are_refused(shared_module, pmem_dev: str, name: str) -> None:
    with shared_module(target=pmem_dev) as sysfs:  # one load for all: a refused write changes nothing
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


@pytest.mark.kernel_matrix
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


@pytest.mark.kernel_matrix
def test_second_run_and_writes_during_a_run_get_ebusy(module, pmem_dev: str) -> None:
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        # the run lasts until the abort (ten minutes): a 3 s run could end before the writes under
        # TCG on a loaded host, and the abort lands when the writer gets a vCPU between segments
        # (18.9 s once, test_features): the wait is a hang's bound
        mod.set(op="load", duration_ms=600000, threads=2, working_set=16 * MiB)
        mod.start()
        assert mod.state() == "running"
        for name, value in (("run", 1), ("op", "store"), ("threads", 1)):
            with pytest.raises(WriteRefused) as info:
                mod.write(name, value)
            assert info.value.errno == errno.EBUSY
        mod.write("abort", 1)
        state = mod.wait(timeout=300)
        assert state in ("done", "idle") or state.startswith("error"), state
        mod.run(duration_ms=20)  # usable again


@pytest.mark.kernel_matrix
def test_rmmod_mid_run(module, pmem_dev: str) -> None:
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        # rmmod stops the run instead of waiting for its end: it returns within half of it. It runs
        # when it gets a vCPU between the threads' segments, which took 18.9 s once for an abort
        # with two TCG guests side by side (test_features): the run is ten minutes long, so the
        # bound tells stopping from waiting, not a speed.
        mod.set(op="store", duration_ms=600000, threads=2, working_set=16 * MiB)
        mod.start()
        time.sleep(0.5)
        start = time.monotonic()
        subprocess.run(["rmmod", "pmemlab"], check=True, timeout=900)
        assert time.monotonic() - start < 300
    assert not Path("/sys/module/pmemlab").exists()


@pytest.mark.kernel_matrix
def test_abort_during_latency_run(module, pmem_dev: str) -> None:
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        mod.set(mode="latency", op="load", count=50_000_000, threads=1, working_set=64 * MiB,
                pattern="rand")
        mod.start()
        time.sleep(0.5)
        mod.write("abort", 1)
        assert mod.wait(timeout=300) != "running"  # an abort took 18.9 s once (test_features): a hang's bound


@pytest.mark.kernel_matrix
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


# The detectors' thresholds lowered for the run (watchdog_thresh=2: hard lockup 2 s, soft lockup
# 4 s; RCU CPU stall 3 s), and a run of 10 s, longer than each with room for the detectors' own
# check periods: a run that failed to re-enable IRQs or to reschedule between segments is
# reported in the kernel log, as with the default thresholds (10, 20, 21 s) and a 30 s run, in a
# third of the time.
LONG_RUN_S = 10
LOW_THRESHOLDS = {Path("/proc/sys/kernel/watchdog_thresh"): "2",
                  Path("/sys/module/rcupdate/parameters/rcu_cpu_stall_timeout"): "3"}


@contextlib.contextmanager
def low_lockup_thresholds() -> Iterator[None]:
    old = {path: path.read_text().strip() for path in LOW_THRESHOLDS if path.exists()}
    try:
        for path in old:
            path.write_text(LOW_THRESHOLDS[path] + "\n")
        yield
    finally:
        for path, value in old.items():
            path.write_text(value + "\n")


@pytest.mark.kernel_matrix
@pytest.mark.slow
def test_long_run_without_lockup(module, pmem_dev: str) -> None:
    with module(target=pmem_dev) as sysfs, low_lockup_thresholds():
        mod = Module(sysfs)
        # the wait for its end a hang's bound (300 s), not 6x the run: it ends at its TSC time plus
        # any stall inside its last segments, and its reader needs a vCPU to see it
        res = mod.run(timeout=300, op="ntstore", duration_ms=LONG_RUN_S * 1000, threads=2,
                      working_set=64 * MiB)
        check_duration(mod, res, LONG_RUN_S * 1000)
        for row in res.threads:
            assert int(row["segments"]) > 60, row  # cut into many short IRQ-off segments


@pytest.mark.kernel_matrix
@pytest.mark.parametrize("mode,op", [("bandwidth", "load"), ("bandwidth", "ntstore"), ("latency", "load")])
def test_run_length_close_to_the_request(target, mode: str, op: str) -> None:
    """A duration run lasts about duration_ms (wall time: TCG is slow, but the TSC is not), on
    every thread and on the aggregate; a count run issues exactly count accesses per thread."""
    kind, mod = target
    common = dict(mode=mode, op=op, pattern="seq", access_size=256, working_set=8 * MiB,
                  window_offset=MiB, threads=2, placement="per-thread", stride=0)
    res = mod.run(count=0, duration_ms=400, **common)
    check_consistent(res, mode, 256, threads=2)
    check_duration(mod, res, 400)
    res = mod.run(count=3000, **common)
    check_consistent(res, mode, 256, threads=2, count=3000)


def test_ntload_has_no_8_byte_form(module, pmem_dev: str) -> None:
    """Refused on every CPU: the op has no 8-byte instruction at all."""
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        mod.set(op="ntload", width=8, access_size=64, duration_ms=20)
        with pytest.raises(WriteRefused) as info:
            mod.start()
        assert info.value.errno == errno.EOPNOTSUPP
        assert "has no 8-byte instruction" in info.value.reason
        assert mod.state() == "idle"


def _online_cpus() -> int:
    return len([c for c in Path("/sys/devices/system/cpu").glob("cpu[0-9]*")
                if not (c / "online").exists() or (c / "online").read_text().strip() == "1"])


T40 = 1 << 40


def out_of_range_table(size: int, online: int, prefetch: str) -> list[tuple[str, str, int]]:
    """(parameter, value, errno) for the values just outside every range of docs/interface.md."""
    E, R = errno.EINVAL, errno.ERANGE
    return [
        ("mode", "sideways", E), ("op", "load,bogus", E), ("op", ",".join(["load"] * 257), E),
        ("read_pct", "101", E), ("width", "4", E), ("width", "12", E), ("width", "128", E),
        ("access_size", "0", E), ("access_size", "4", E), ("access_size", "65", E),
        ("access_size", str(64 * MiB + 64), E),
        ("stride", "12", E), ("stride", str(T40 + 8), E),
        ("window_offset", "4095", E), ("window_offset", str(size), R),
        ("working_set", str(size + 8), R), ("working_set", "12", E),
        ("pattern", "zigzag", E), ("hotspot_size", "0", E), ("hotspot_size", str(T40 + 8), E),
        ("passes", "0", E), ("passes", "4097", E),
        ("pass_offset", "12", E), ("pass_offset", str(T40 + 8), E),
        ("fence", "lfence", E), ("fence_interval", "32", E), ("fence_interval", str(T40 + 64), E),
        ("flush", "page", E), ("threads", "0", E), ("threads", str(online + 1), R),
        ("threads", "257", E), ("cpus", str(4096), E), ("cpus", "0-", E),
        ("placement", "per-socket", E),
        ("interleave_ways", "0", E), ("interleave_ways", "65", E),
        ("interleave_gran", "32", E), ("interleave_gran", "96", E),
        ("interleave_gran", str((1 << 30) + 64), E),
        ("dimms_per_thread", "0", E), ("dimms_per_thread", "65", E),
        ("duration_ms", "0", E), ("duration_ms", "3600001", E),
        ("count", str(T40 + 1), E), ("delay_ticks", str((1 << 36) + 1), E),
        ("probe", "2", E), ("seed", str(1 << 64), E), ("prefetch", "auto", E),
        *([("prefetch", "off", errno.EOPNOTSUPP)] if prefetch == "none" else []),
        ("cold", "2", E), ("warm", "2", E),
        ("samples", str((1 << 20) + 1), E), ("segment_ms", "0", E), ("segment_ms", "201", E),
    ]


def in_range_table(size: int, online: int) -> list[tuple[str, str, str]]:
    """(parameter, written, read back) for values at and inside the limits."""
    return [
        ("mode", "latency", "latency"), ("mode", "bandwidth", "bandwidth"),
        ("op", "load,store+clflush", "load,store+clflush"), ("op", "ntstore", "ntstore"),
        ("read_pct", "0", "0"), ("read_pct", "100", "100"), ("read_pct", "50", "50"),
        ("width", "0", "0"), ("width", "8", "8"), ("width", "64", "64"),
        ("access_size", "8", "8"), ("access_size", "64M", str(64 * MiB)), ("access_size", "0x100", "256"),
        ("stride", "0", "0"), ("stride", "1T", str(T40)),
        ("window_offset", str(size - 4096), str(size - 4096)), ("window_offset", "0", "0"),
        ("working_set", str(size), str(size)), ("working_set", "1M", str(MiB)), ("working_set", "0", "0"),
        ("hotspot_size", "8", "8"), ("hotspot_size", str(T40), str(T40)),
        ("passes", "1", "1"), ("passes", "4096", "4096"),
        ("pass_offset", "0", "0"), ("pass_offset", "1T", str(T40)),
        ("fence_interval", "0", "0"), ("fence_interval", "64", "64"), ("fence_interval", "1T", str(T40)),
        ("threads", "1", "1"), ("threads", str(online), str(online)),
        ("cpus", "0", "0"), ("cpus", f"0-{online - 1}", f"0-{online - 1}" if online > 1 else "0"),
        ("cpus", "", ""),
        ("interleave_ways", "1", "1"), ("interleave_ways", "64", "64"),
        ("interleave_gran", "64", "64"), ("interleave_gran", "1G", str(1 << 30)),
        ("dimms_per_thread", "1", "1"), ("dimms_per_thread", "64", "64"),
        ("duration_ms", "1", "1"), ("duration_ms", "3600000", "3600000"),
        ("count", "0", "0"), ("count", str(T40), str(T40)),
        ("delay_ticks", "0", "0"), ("delay_ticks", str(1 << 36), str(1 << 36)),
        ("probe", "1", "1"), ("probe", "0", "0"),
        ("seed", "0", "0"), ("seed", str((1 << 64) - 1), str((1 << 64) - 1)),
        ("prefetch", "on", "on"), ("cold", "1", "1"), ("cold", "0", "0"), ("warm", "1", "1"),
        ("warm", "0", "0"), ("samples", "0", "0"), ("samples", str(1 << 20), str(1 << 20)),
        ("segment_ms", "1", "1"), ("segment_ms", "200", "200"), ("segment_ms", "5", "5"),
    ]


def test_out_of_range_values_are_refused_and_limits_accepted(module, pmem_dev: str) -> None:
    """Table-driven: every numeric parameter at min-1 and max+1 (and the enum, list and CPU
    parameters one step outside) is refused with its errno and a reason naming the parameter,
    leaving the value as it was; the limits themselves and values inside are accepted and read
    back in canonical form."""
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        size = int(mod.read("target_size"))
        online = _online_cpus()
        prev_reason = None
        for name, value, want in out_of_range_table(size, online, mod.read("prefetch_control")):
            before = mod.read(name)
            with pytest.raises(WriteRefused) as info:
                mod.write(name, value)
            got = info.value
            assert got.errno == want, f"{name}={value[:40]}: {errno.errorcode[got.errno]} ({got.reason})"
            assert name in got.reason, f"{name}={value[:40]}: reason {got.reason!r}"
            assert got.reason != prev_reason, f"{name}={value[:40]}: last_error not updated"
            prev_reason = got.reason
            assert mod.read(name) == before, f"{name} changed by a refused write"
        for name, value, canonical in in_range_table(size, online):
            mod.write(name, value)
            assert mod.read(name) == canonical, (name, value)
        # Back to a runnable configuration: the module still measures.
        mod.set(mode="bandwidth", op="load", read_pct=0, width=0, access_size=64, window_offset=0,
                working_set=4 * MiB, probe=0, cold=0, warm=0, count=0, duration_ms=20, delay_ticks=0,
                interleave_ways=1, dimms_per_thread=1, stride=0, pass_offset=0, fence_interval=0,
                passes=1, samples=0, pattern="seq", placement="per-thread", cpus="", segment_ms=5)
        check_consistent(mod.run(threads=1), "bandwidth", 64, 1)


def test_delay_must_fit_well_inside_a_segment(module, pmem_dev: str) -> None:
    """delay_ticks busy-waits with IRQs off after each access: a delay of half a segment or more
    is refused at run with a reason naming segment_ms; just below it runs and every access then
    takes at least the delay."""
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        tsc_khz = int(mod.read("tsc_khz"))
        mod.set(op="load", threads=1, working_set=MiB, segment_ms=2, count=0, duration_ms=50)
        for delay in (1 << 36, tsc_khz):  # the sysfs maximum, and exactly half of 2 ms
            mod.write("delay_ticks", delay)
            with pytest.raises(WriteRefused) as info:
                mod.start()
            assert info.value.errno == errno.EINVAL
            assert "segment_ms" in info.value.reason and "delay_ticks" in info.value.reason
            assert mod.state() == "idle"
        delay = tsc_khz - 1
        for mode in ("bandwidth", "latency"):
            res = mod.run(mode=mode, delay_ticks=delay, count=20)
            row = res.threads[0]
            assert int(row["ops"]) == 20
            if mode == "bandwidth":  # the delay is part of the timed ticks
                assert int(row["ticks"]) >= 20 * delay, row


@pytest.mark.kernel_matrix
def test_one_huge_access_is_split_between_segments(module, pmem_dev: str) -> None:
    """Issue 33 point 8: an access of 64 MiB (the largest) was one asm statement with interrupts
    off for its whole length (2.01 s on the bed's CXL node with segment_ms=1: a 64 MiB store+
    clflush under TCG took up to a second). Bandwidth mode now issues it in pieces of 16 KiB
    with the clock read between them: with segment_ms=1 a count=1 access is many segments (no
    time is asserted: TCG; the counts say it), flush=access too (its stores, then its
    flushes, then the fence). A latency sample, one bracket, cannot be split: above 64 KiB it
    is refused with the reason (the kernel log is checked after the test)."""
    with module(target=pmem_dev, allow_overwrite=1) as sysfs:
        mod = Module(sysfs)
        for params in (dict(op="store"), dict(op="store+clflush", flush="access", fence="sfence")):
            res = mod.run(timeout=300, mode="bandwidth", access_size=64 * MiB, working_set=64 * MiB,
                          pattern="seq", count=1, threads=1, segment_ms=1, **params)
            assert_split(res, 64 * MiB, params["op"])
        with pytest.raises(WriteRefused) as info:
            mod.run(mode="latency", op="store+clflush", access_size=128 << 10, count=3)
        assert info.value.errno == errno.EINVAL
        assert info.value.reason.startswith("access_size") and "cannot be split" in info.value.reason
        res = mod.run(mode="latency", op="store+clflush", access_size=64 << 10, cold=1, count=3, segment_ms=1)
        row = res.threads[0]
        assert int(row["ops"]) == 3 and int(row["irqoff_max_ticks"]) >= int(row["lat_max"]), row


COST_FIELDS = ["setup_ticks", "setup_ns", "teardown_ticks", "teardown_ns", "total_ticks", "total_ns"]
RESULT_SCALARS = ["ops", "reads", "writes", "bytes", "ticks", "ns", "bw_mbps", "segments", "gap_ticks",
                  "start_lag_ticks", "end_lag_ticks", "irqoff_pct", "irqoff_max_ticks", *COST_FIELDS]
BW_SCALARS = ["ceiling_mbps", "ceiling_src"]  # only with a bandwidth thread
LAT_SCALARS = ["lat_overhead_ticks", "lat_n", "lat_min", "lat_mean", "lat_stddev", "lat_p50", "lat_p90",
               "lat_p99", "lat_p999", "lat_p9999", "lat_max"]


def test_results_directory_matches_the_all_line(module, pmem_dev: str) -> None:
    """results/<field> is the all line's field: empty before a run and while one is active,
    lat_* empty for a run without latency threads."""
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        rdir = sysfs / "results"
        names = sorted(p.name for p in rdir.iterdir())
        assert names == sorted(RESULT_SCALARS + BW_SCALARS + LAT_SCALARS)
        for name in names:
            assert oct((rdir / name).stat().st_mode & 0o777) == oct(0o444), name
            assert (rdir / name).read_text() == "\n", f"{name} before any run"
        res = mod.run(mode="bandwidth", op="load", threads=2, duration_ms=50, working_set=4 * MiB)
        for name in RESULT_SCALARS + BW_SCALARS:
            assert (rdir / name).read_text().strip() == res.total[name], name
        for name in LAT_SCALARS:
            assert (rdir / name).read_text() == "\n", name
        res = mod.run(mode="latency", op="load", threads=2, count=300, working_set=4 * MiB)
        for name in RESULT_SCALARS + LAT_SCALARS:
            assert (rdir / name).read_text().strip() == res.total[name], name
        for name in BW_SCALARS:
            assert (rdir / name).read_text() == "\n", name
        mod.set(mode="bandwidth", count=0, duration_ms=600000)  # running until the abort (3 s could end first)
        mod.start()
        assert (rdir / "ops").read_text() == "\n", "a running run has no result yet"
        mod.write("abort", 1)
        mod.wait(timeout=300)
        assert (rdir / "ops").read_text().strip() == mod.result().total["ops"]


def test_check_judges_like_run_and_starts_nothing(module, pmem_dev: str) -> None:
    """`check` gives run's verdict (errno and last_error naming the parameter) without starting a
    run: state and run_id stay; during a run it is EBUSY like run."""
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        run_id = mod.read("run_id")
        mod.set(op="ntload", width=8, access_size=64, duration_ms=20)
        for control in ("check", "run"):
            with pytest.raises(WriteRefused) as info:
                mod.write(control, 1)
            assert info.value.errno == errno.EOPNOTSUPP
            assert info.value.reason == "width: op ntload has no 8-byte instruction"
        mod.set(width=0, working_set=4 * MiB, window_offset=0)
        mod.write("check", 1)
        assert mod.state() == "idle" and mod.read("run_id") == run_id
        mod.set(op="load", duration_ms=600000, threads=1)  # running until the abort (3 s could end first)
        mod.start()
        with pytest.raises(WriteRefused) as info:
            mod.write("check", 1)
        assert info.value.errno == errno.EBUSY
        mod.write("abort", 1)
        mod.wait(timeout=300)
        for bad in (b"0\n", b"2\n", b"yes please\n"):
            with pytest.raises(OSError) as err:
                mod.write_raw("check", bad)
            assert err.value.errno == errno.EINVAL


def test_combination_refusals_name_the_parameter(module, pmem_dev: str) -> None:
    """The reasons `run` gives start with the parameter at fault (the controller reports its line)."""
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        cases = [
            (dict(access_size=256, stride=128, pattern="stride"), errno.EINVAL, "stride"),
            (dict(probe=1, threads=1), errno.EINVAL, "probe"),
            (dict(cold=1, warm=1), errno.EINVAL, "warm"),
            (dict(cpus="0", threads=2), errno.EINVAL, "cpus"),
            (dict(working_set=32, access_size=64), errno.ERANGE, "working_set"),
        ]
        for params, err, name in cases:
            mod.set(access_size=64, stride=0, pattern="seq", probe=0, threads=1, cold=0, warm=0, cpus="",
                    working_set=MiB)
            mod.set(**params)
            with pytest.raises(WriteRefused) as info:
                mod.write("check", 1)
            assert info.value.errno == err, (params, info.value.reason)
            assert info.value.reason.startswith(name), (params, info.value.reason)


def test_warm_up_is_not_counted(module, pmem_dev: str) -> None:
    """warmup_ms: the warm-up runs first and counts for nothing (core/worker.c)."""
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        tsc_khz = int(mod.read("tsc_khz"))
        res = mod.run(mode="latency", op="load", threads=1, count=2000, warmup_ms=200, working_set=MiB)
        assert int(res.total["ops"]) == 2000 and int(res.total["lat_n"]) == 2000
        res = mod.run(mode="bandwidth", op="load", threads=2, count=0, duration_ms=100, warmup_ms=300,
                      segment_ms=5, working_set=MiB)
        # the 300 ms warm-up lies in the run's whole (total_ticks) but outside each thread's timed
        # ticks: held by structure, as the runner's test does, not by a bound on the timed ticks
        # (a vCPU the host takes away inside a segment stretches them: 138 ms seen for 100 ms under
        # TCG on a busy host; the old 400 ms bound was a few such stalls away); counted in, total
        # minus timed would be the set-up and teardown alone
        for row in res.threads:
            assert int(row["ticks"]) > 0, row
            assert int(row["total_ticks"]) - int(row["ticks"]) >= 300 * tsc_khz, \
                ((int(row["total_ticks"]) - int(row["ticks"])) / tsc_khz, row)


def test_setup_and_teardown_are_reported_and_add_up(module, pmem_dev: str) -> None:
    """Every line carries the run's fixed cost (issue 37): setup (run -> first timed stamp),
    teardown (last timed stamp -> done) and total, in ticks and ns; structure only (TCG)."""
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        khz = int(mod.read("tsc_khz"))
        for params in ({"mode": "bandwidth", "op": "load", "threads": 2, "duration_ms": 30},
                       {"mode": "latency", "op": "load", "threads": 1, "count": 500},
                       {"mode": "bandwidth", "op": "store", "threads": 1, "count": 1000}):
            res = mod.run(working_set=4 * MiB, **params)
            total = res.total
            for row in res.rows:
                v = {k: int(row[k]) for k in COST_FIELDS}
                assert all(x >= 0 for x in v.values()), row
                for k in ("setup", "teardown", "total"):
                    assert abs(v[f"{k}_ns"] - v[f"{k}_ticks"] * 10**6 // khz) <= 1, (k, row)
                assert v["setup_ticks"] + int(row["ticks"]) + v["teardown_ticks"] <= v["total_ticks"], row
                assert v["total_ticks"] == int(total["total_ticks"]), "one run, one total"
            assert int(total["setup_ticks"]) + int(total["ticks"]) + int(total["teardown_ticks"]) == \
                int(total["total_ticks"]), total
            assert int(total["setup_ticks"]) > 0 and int(total["teardown_ticks"]) > 0, total


# measurements of a key combined (the fastest kept) before it is reused (core/pl_run.h)
CEIL_TRUST = int(re.search(r"^#define PL_CEIL_TRUST\s+(\d+)",
                           (Path(__file__).resolve().parents[2] / "core" / "pl_run.h").read_text(), re.M).group(1))


def test_ceiling_is_reused_where_its_key_matches_and_measured_after_a_change(module, pmem_dev: str) -> None:
    """Once CEIL_TRUST identical runs measured it, a run reuses the fastest of their ceilings (its
    workers skip theirs); a change of key (access size), another target (a named target, a reload)
    measures again."""
    point = {"mode": "bandwidth", "op": "load", "access_size": 256, "threads": 1, "cpus": "0",
             "duration_ms": 20, "count": 0, "working_set": 4 * MiB}
    with module(target="dram", dram_size="32M") as sysfs:
        mod = Module(sysfs)

        def run(m: Module = mod, **change: object) -> dict[str, str]:
            return m.run(**{**point, **change}).total

        def settled(m: Module = mod, **change: object) -> list[dict[str, str]]:
            got = [run(m, **change) for _ in range(CEIL_TRUST)]
            assert [g["ceiling_src"] for g in got] == ["measured"] * CEIL_TRUST, got
            return got

        first = settled()
        again = run()
        assert again["ceiling_src"] == "reused"
        assert float(again["ceiling_mbps"]) == max(float(f["ceiling_mbps"]) for f in first)
        assert (sysfs / "results" / "ceiling_src").read_text().strip() == "reused"
        assert run(seed=9)["ceiling_src"] == "reused", "the seed is not in the key"
        settled(access_size=512)
        assert run(access_size=512)["ceiling_src"] == "reused"
        assert run()["ceiling_src"] == "reused", "the cache holds both keys"
        assert run(threads=2, cpus="0,1")["ceiling_src"] == "measured"
        # latency runs carry no ceiling; an aborted run stores none
        assert "ceiling_src" not in mod.run(mode="latency", op="load", count=200, working_set=4 * MiB).total
        # another target: its own cache
        Module(sysfs / "targets").write_raw("add", b"other dram dram_size=16M\n")
        named = Module(sysfs / "targets" / "other")
        settled(named)
        assert run(named)["ceiling_src"] == "reused"
        assert run()["ceiling_src"] == "reused"
        Module(sysfs / "targets").write_raw("remove", b"other\n")
    with module(target="dram", dram_size="32M") as sysfs:  # loaded again: nothing kept
        assert Module(sysfs).run(**point).total["ceiling_src"] == "measured"


def test_params_gen_changes_with_each_parameter_write_taken(module, pmem_dev: str) -> None:
    """params_gen (the controller writes only what changed while it is what its writes made):
    +1 per write taken, unchanged by a refused one, by a run and by a read; another value after a
    reload."""
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        gen = int(mod.read("params_gen"))
        mod.set(op="load", access_size=256)
        assert int(mod.read("params_gen")) == (gen + 2) % 2**64
        with pytest.raises(WriteRefused):
            mod.write("access_size", "abc")
        assert int(mod.read("params_gen")) == (gen + 2) % 2**64
        mod.run(mode="bandwidth", duration_ms=10, working_set=MiB)
        gen2 = int(mod.read("params_gen"))
        assert gen2 == (gen + 5) % 2**64 and mod.read("access_size") == "256"
        assert oct((sysfs / "params_gen").stat().st_mode & 0o777) == oct(0o444)
    with module(target=pmem_dev) as sysfs:
        assert int(Module(sysfs).read("params_gen")) != gen2


@pytest.mark.kernel_matrix
def test_the_locked_control_files_are_one_line_each(module, pmem_dev: str) -> None:
    """state, last_error, run_id and params_gen (read under the target's lock: RO_LOCKED in
    kmod/sysfs.c) byte for byte, newline included, through idle, a refusal, done and
    error:<reason>."""
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)

        def raw(name: str) -> bytes:
            return (sysfs / name).read_bytes()

        assert (raw("state"), raw("run_id"), raw("last_error")) == (b"idle\n", b"0\n", b"\n")
        gen = int(mod.read("params_gen"))
        assert raw("params_gen") == f"{gen}\n".encode()
        with pytest.raises(WriteRefused) as info:
            mod.write("access_size", "abc")
        assert "access_size" in info.value.reason
        assert raw("last_error") == f"{info.value.reason}\n".encode()
        mod.run(op="load", duration_ms=10, threads=1, working_set=MiB)
        assert (raw("state"), raw("run_id")) == (b"done\n", b"1\n")
        assert raw("params_gen") == f"{(gen + 4) % 2**64}\n".encode()  # four writes taken
        mod.set(duration_ms=600000)
        mod.start()
        mod.write("abort", 1)
        assert mod.wait(timeout=300) == "error:aborted"
        assert (raw("state"), raw("run_id")) == (b"error:aborted\n", b"2\n")
        assert raw("last_error") == b"run 2: aborted\n"
