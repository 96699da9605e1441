"""Interface fuzzing: thousands of random and adversarial writes across every sysfs attribute,
from several processes at once and during runs, then a normal measurement that must come out
right; and the engine under valid runs drawn from the parameter table (tests/param_sets.py, as the
host's test_engine_fuzz.py draws them for the runner), each judged by `check`, run, and checked
for its accounting, on a DRAM target whose every engine buffer ends at vmalloc's guard page. The
kernel log is checked after each test by conftest.clean_kernel_log (KASAN does not see the
engine's inline asm; a guard page faults for it)."""
from __future__ import annotations

import errno
import json
import os
import random
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from kmod_driver import SYSFS, Module, WriteRefused
from test_module import check_consistent

pytestmark = pytest.mark.kernel_matrix  # every kernel survives the fuzz

MiB = 1 << 20
# valid runs through sysfs: a share in make test's guests, a few hundred in the debug-kernel lane
# (make test-kasan); PMEMLAB_GUEST_FUZZ_RUNS for more
GUEST_RUNS = int(os.environ.get("PMEMLAB_GUEST_FUZZ_RUNS", "300" if os.environ.get("PMEMLAB_DEBUG_KERNEL") else "40"))
GUEST_WORK_NS = 2_000_000  # a count run's work (TCG runs the loops tens of times slower)
WRITES_PER_PROCESS = 2600
PROCESSES = 4  # 10,400 writes in all

# Files whose writes have side effects beyond a parameter, or judge the whole run (check: EPERM
# on a target with a file system, ENXIO when it is gone): fuzzed separately and sparingly.
CONTROL = {"run", "check", "abort"}

ADVERSARIAL = [
    b"", b"\n", b"0", b"-0", b"-1", b"-9223372036854775808", b"9223372036854775807",
    b"18446744073709551615", b"18446744073709551616", b"99999999999999999999999999999",
    b"0x40", b"0b1", b"1e3", b"64K", b"64k", b"1G", b"1T", b"64 ", b" 64", b"6 4", b"64\n\n",
    b"\x00", b"64\x00", b"\xff\xfe", b"load,", b",load", b"load,,store", b"store+", b"+clwb",
    b"0-", b"-3", b"0-99999", b"1,1,1", b"3-1", b"%s%s%n", b"../../etc", b"A" * 4096,
    b"9" * 4095, b"load," * 800,
]


def writable_attributes() -> list[str]:
    names = []
    for path in sorted(SYSFS.iterdir()):
        if path.is_file() and os.stat(path).st_mode & 0o200 and path.name not in CONTROL:
            names.append(path.name)
    return names


def fuzz_worker(seed: int, names: list[str], count: int) -> tuple[int, int, list[str]]:
    rng = random.Random(seed)
    # the top level, and now and then the named target of the load (a directory of the same files)
    mods = [Module()] + [Module(p) for p in sorted((SYSFS / "targets").glob("*")) if p.is_dir()]
    accepted = refused = 0
    unexpected: list[str] = []
    for _ in range(count):
        mod = mods[0] if len(mods) == 1 or rng.random() < 0.7 else rng.choice(mods[1:])
        name = rng.choice(names)
        kind = rng.random()
        if kind < 0.4:
            data = rng.choice(ADVERSARIAL)
        elif kind < 0.7:
            data = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 64)))
        elif kind < 0.9:
            data = str(rng.choice([0, 1, 8, 64, 4096, 1 << 20, 1 << 30, 1 << 40, -(1 << rng.randint(0, 63)),
                                   rng.getrandbits(64)])).encode()
        else:
            data = rng.choice([b"load", b"store+clwb", b"seq", b"rand", b"latency", b"sfence", b"0-1", b"on"])
        if rng.random() < 0.5:
            data += b"\n"
        if rng.random() < 0.01:
            try:
                mod.write_raw("run", b"1\n")
            except OSError:
                pass
        if rng.random() < 0.05:
            try:
                mod.write_raw("check", rng.choice([b"1\n", b"1", b"0\n", data]))
            except OSError:
                pass
        if data and rng.random() < 0.02:
            # targets/add and targets/remove with the same data: refused (no target is ever made:
            # no line of it has a valid name and spec), or a name that is not there (an empty
            # write never reaches a store), or EBUSY while a run another process started is
            # active (targets change between runs: issue 33 point 4; a fresh run met it)
            for ctl in ("add", "remove"):
                try:
                    Module(SYSFS / "targets").write_raw(ctl, data)
                    unexpected.append(f"targets/{ctl} took {data[:40]!r}")
                except OSError as exc:
                    if exc.errno not in (errno.EINVAL, errno.ENOENT, errno.EEXIST, errno.EBUSY):
                        unexpected.append(f"targets/{ctl} {data[:40]!r}: {exc}")
        try:
            mod.write_raw(name, data)
            accepted += 1
        except OSError as exc:
            refused += 1
            if exc.errno not in (errno.EINVAL, errno.ERANGE, errno.EOPNOTSUPP, errno.EBUSY, errno.E2BIG):
                unexpected.append(f"{name}={data[:40]!r}: {exc}")
    try:
        for mod in mods:
            mod.write_raw("abort", b"1\n")
    except OSError:
        pass
    return accepted, refused, unexpected


def test_fuzz_every_attribute(module, pmem_dev: str) -> None:
    with module(target=pmem_dev, targets='"fz dram dram_size=8M dram_pages=4k"') as sysfs:
        names = writable_attributes()
        assert len(names) >= 20, names
        # Separate processes, not threads: each write is its own syscall from its own task.
        procs = [subprocess.Popen([sys.executable, __file__, str(seed), str(WRITES_PER_PROCESS), *names],
                                  stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parent)
                 for seed in range(PROCESSES)]
        outcomes = []
        for p in procs:
            out, _ = p.communicate(timeout=600)
            assert p.returncode == 0
            outcomes.append(json.loads(out))
        accepted = sum(o[0] for o in outcomes)
        refused = sum(o[1] for o in outcomes)
        unexpected = [u for o in outcomes for u in o[2]]
        assert accepted + refused == PROCESSES * WRITES_PER_PROCESS
        assert refused > accepted, "random bytes should mostly be refused"
        assert not unexpected, unexpected[:10]

        assert (sysfs / "targets" / "fz").is_dir()
        assert Module(sysfs / "targets" / "fz").wait(timeout=120) != "running"
        mod = Module(sysfs)
        state = mod.wait(timeout=120)
        assert state != "running"
        # Put everything back to known values and measure: the module must still be right.
        mod.set(mode="bandwidth", op="load", read_pct=0, width=0, access_size=256, stride=0, window_offset=0,
                working_set=8 * MiB, pattern="seq", passes=1, pass_offset=0, fence="none", fence_interval=0,
                flush="line", threads=2, cpus="", placement="per-thread", interleave_ways=1,
                interleave_gran=4096, dimms_per_thread=1, duration_ms=50, count=0, delay_ticks=0, probe=0,
                seed=1, prefetch="on", cold=0, warm=0, samples=0, segment_ms=5, load_target="")
        check_consistent(mod.run(), "bandwidth", 256, 2)
        named = Module(sysfs / "targets" / "fz")
        named.set(mode="bandwidth", op="load", read_pct=0, width=0, access_size=256, stride=0, window_offset=0,
                  working_set=4 * MiB, pattern="seq", passes=1, pass_offset=0, fence="none", fence_interval=0,
                  flush="line", threads=2, cpus="", placement="per-thread", interleave_ways=1,
                  interleave_gran=4096, dimms_per_thread=1, duration_ms=50, count=0, delay_ticks=0, probe=0,
                  seed=1, prefetch="on", cold=0, warm=0, samples=0, segment_ms=5, load_target="")
        check_consistent(named.run(), "bandwidth", 256, 2)


@pytest.mark.parametrize("name", ["op", "cpus", "access_size"])
def test_every_length_up_to_a_page(module, pmem_dev: str, name: str) -> None:
    """Values of every length up to a page plus one, with and without a newline."""
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        before = mod.read(name)
        for length in list(range(0, 80)) + [4094, 4095, 4096, 4097]:
            for data in (b"7" * length, b"7" * length + b"\n"):
                try:
                    mod.write_raw(name, data)
                except OSError as exc:
                    assert exc.errno in (errno.EINVAL, errno.ERANGE, errno.E2BIG, errno.EOPNOTSUPP), exc
        mod.write(name, before)
        assert Path(sysfs / name).read_text().strip() == before


def test_an_op_list_longer_than_a_page_is_refused_whole(module, pmem_dev: str) -> None:
    """256 x store+clflushopt is 4351 bytes; sysfs hands the store one page, whose first 4096 bytes
    are a valid list of 241 entries. The module refuses any store of 4094 bytes or more (no value
    and its newline is that long), so no cut is ever taken: EINVAL, the reason in last_error, the
    op list it had kept. The longest value that fits, 4093 bytes and its newline, is taken whole."""
    with module(target=pmem_dev) as sysfs:
        mod = Module(sysfs)
        mod.write("op", "ntstore")
        page = ",".join(["store+clflushopt"] * 256).encode()
        assert len(page) == 4351 and page[:4096].endswith(b"store+clflushopt")
        for data in (page, page + b"\n", page[:4096], page[:4095] + b"\n", page[:4094]):
            with pytest.raises(OSError) as ei:
                mod.write_raw("op", data)
            assert ei.value.errno == errno.EINVAL, (len(data), ei.value)
            assert "at most 4093" in mod.last_error() and "one sysfs write" in mod.last_error()
            assert mod.read("op") == "ntstore", len(data)
        # 170 x store+clflushopt and 86 x store+clflush: 4093 bytes in 256 entries
        longest = ",".join(["store+clflushopt"] * 170 + ["store+clflush"] * 86)
        assert len(longest) == 4093
        mod.write("op", longest)
        assert mod.read("op") == longest
        with pytest.raises(OSError):
            mod.write_raw("op", longest.encode() + b",load\n")
        assert mod.read("op") == longest
        mod.write("op", "load")


def test_fuzz_valid_runs_through_sysfs(module) -> None:
    """GUEST_RUNS valid sets drawn from the table, each judged by the module (`check`), run to its
    end and checked: state done, and the accounting of its `result` and `raw_samples`
    (param_sets.check_accounting). The 4 KiB DRAM target is vmalloc_node's, so the engine's
    ceiling buffer and the target both end at an unmapped guard page."""
    # here, not at the top: the file also runs as a script (the fuzz workers), without tests/ on its path
    from hypothesis import HealthCheck, Phase, assume, given, settings

    from param_sets import Machine, check_accounting, runnable_sets

    with module(target="dram", dram_size="16M", dram_pages="4k",
                targets='"fz dram dram_size=16M dram_pages=4k"') as sysfs:
        top = Module(sysfs)
        named = Module(sysfs / "targets" / "fz")  # the same size: one Machine for both
        mod = top
        m = Machine(target_size=int(mod.read("target_size")), online=len(os.sched_getaffinity(0)),
                    tsc_khz=int(mod.read("tsc_khz")))
        widths = tuple(int(w) for w in mod.read("widths").split())
        done = []

        @settings(max_examples=GUEST_RUNS, deadline=None, database=None,
                  phases=[Phase.explicit, Phase.reuse, Phase.generate],
                  suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow,
                                         HealthCheck.data_too_large])
        @given(values=runnable_sets(m, widths=widths, work_ns=GUEST_WORK_NS))
        def one(values: dict[str, str]) -> None:
            nonlocal mod
            # a named target for a quarter of the sets, picked from the values (so a replay picks it again)
            mod = named if zlib.crc32(repr(sorted(values.items())).encode()) % 4 == 0 else top
            try:
                mod.set(**values)
                mod.write("check", 1)
            except WriteRefused:
                assume(False)
            mod.start()
            state = mod.wait(timeout=300)
            what = " ".join(f"{k}={v}" for k, v in values.items())
            assert state == "done", f"{what}: state {state}, last_error {mod.last_error()!r}"
            try:
                check_accounting(values, mod.read("result"), (mod.root / "raw_samples").read_bytes())
            except AssertionError as exc:
                raise AssertionError(f"{what}\n{exc}") from None
            done.append(values)

        one()
        assert len(done) >= GUEST_RUNS // 2, f"only {len(done)} of {GUEST_RUNS} sets ran"


FAIL_NTH = Path("/proc/thread-self/fail-nth")
FAILSLAB = Path("/sys/kernel/debug/failslab")


def test_fuzz_every_failed_start_keeps_the_last_results(module) -> None:
    """Each slab allocation a run's start makes, made to fail in turn (the kernel's fail-nth with
    failslab, GFP_KERNEL allocations included: the debug kernel of make test-kasan has them): a
    start that fails leaves the last run's state, result and raw samples as they were (the results
    were freed before the controller thread was created: a failed kthread_create lost them), and
    the lane's kmemleak scan finds nothing left behind; after the last allocation the start
    succeeds and its run is right."""
    if not FAIL_NTH.exists() or not (FAILSLAB / "ignore-gfp-wait").exists():
        pytest.skip("kernel without fault injection (fail-nth, failslab): make test-kasan's debug kernel has it")
    saved = {name: (FAILSLAB / name).read_text().strip() for name in ("ignore-gfp-wait", "verbose")}
    (FAILSLAB / "ignore-gfp-wait").write_text("N")
    (FAILSLAB / "verbose").write_text("0")
    try:
        with module(target="dram", dram_size="16M", dram_pages="4k") as sysfs:
            mod = Module(sysfs)
            params = dict(mode="latency", op="load", threads=1, count=2000, samples=500, duration_ms=10)
            mod.run(**params)
            last = (mod.read("result"), (sysfs / "raw_samples").read_bytes())
            nth = os.open(FAIL_NTH, os.O_RDWR)
            run = os.open(sysfs / "run", os.O_WRONLY)
            failed = injected_ok = 0
            try:
                for n in range(1, 2000):
                    os.pwrite(nth, str(n).encode(), 0)
                    try:
                        os.write(run, b"1\n")
                        started = True
                    except OSError as exc:
                        started, err = False, exc.errno
                    fired = int(os.pread(nth, 32, 0)) == 0
                    os.pwrite(nth, b"0", 0)  # disarm before anything else allocates
                    if not started:
                        assert fired and err in (errno.ENOMEM, errno.EAGAIN, errno.EINTR), (n, err)
                        failed += 1
                        assert mod.state() == "done", (n, mod.state(), mod.last_error())
                        now = (mod.read("result"), (sysfs / "raw_samples").read_bytes())
                        assert now == last, f"a start that failed at allocation {n} changed the last results"
                        continue
                    assert mod.wait(timeout=120) == "done", mod.last_error()
                    check_consistent(mod.result(), "latency", 64, 1)
                    last = (mod.read("result"), (sysfs / "raw_samples").read_bytes())
                    if not fired:
                        break  # past the last allocation of a start
                    injected_ok += 1  # a failed allocation it could do without
                else:
                    pytest.fail("the start never got past its allocations")
            finally:
                os.close(run)
                os.close(nth)
            assert failed >= 5, f"only {failed} allocations of a start failed it"
    finally:
        for name, value in saved.items():
            (FAILSLAB / name).write_text(value)


if __name__ == "__main__":
    print(json.dumps(fuzz_worker(int(sys.argv[1]), sys.argv[3:], int(sys.argv[2]))))
