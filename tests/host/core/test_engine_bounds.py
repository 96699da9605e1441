"""The engine's buffers (issue 20): every access of a run and of its engine ceiling stays inside
the buffer the engine was handed, checked by the engine itself (pl_eng_init, for the module and
the runner alike), and the runner hands it each buffer between guard pages, so that an overrun
faults at once instead of landing in a neighbouring mapping.

- the ceiling's access, capped at 2 MiB, keeps the run's pieces whole (fence_interval below
  access_size): its stores stay inside its buffer (a canary after it survives);
- the engine refuses a region, a copy's source, a latency prep's lines or a ceiling buffer that
  reach past the buffer it was given;
- the ceiling's windows stop once its time is spent, whatever the delay: two accesses with a
  delay longer than the ceiling's whole time (nine before), a count, not a timing;
- pmemlab-run under valgrind memcheck is clean on the case of the issue;
- guard pages: a store one byte past a guarded buffer, or one byte before its page, kills the
  process with SIGSEGV; a running runner's target, histogram and samples lie between PROT_NONE
  pages (/proc/PID/maps); a SIGTERM while they are mapped aborts the run (exit 1).
"""
from __future__ import annotations

import ctypes
import errno
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from test_engine import FLAGS, FORM_WIDTH, OP_INDEX, Eng, Res, aligned, lib, run  # noqa: F401 (fixture)
from testlib import TOP

RUNNER = TOP / "userspace" / "runner" / "pmemlab-run"
LIBPL = TOP / "userspace" / "runner" / "libpltest.so"
FORM = "32" if "avx2" in FLAGS else "16vex"
SFENCE = 1
MiB = 1 << 20


def refusal(lib: ctypes.CDLL, buf: np.ndarray, off: int = 0, ceil: np.ndarray | None = None,
            **kw: int) -> tuple[int, str]:
    """pl_test_engine with explicit buffer lengths: its return code and reason."""
    e = Eng(**{"features": 0xFFFF, "passes": 1, "seed": 1, "width": 8, "count": 1, **kw})
    if not e.step:
        e.step = e.access
    why = ctypes.create_string_buffer(256)
    rc = lib.pl_test_engine(buf.ctypes.data + off, ctypes.byref(e), ctypes.byref(Res()),
                            None if ceil is None else ceil.ctypes.data, why, 256)
    return rc, why.value.decode()


# --------------------------------------------------------------------------- the ceiling's pieces
@pytest.mark.parametrize("op,access,fi", [
    ("store", 3 * MiB, 1536 << 10),          # the issue's case: 1 MiB past a 2 MiB buffer
    ("store", 3 * MiB, 192),                 # 2 MiB is no multiple of 192: 64 B past
    ("store+clwb", 6 * MiB, 3 * MiB),        # a piece larger than the ceiling's cap
    ("ntstore", 64 * MiB, 64),
    ("store", 2112 << 10, 704 << 10),        # 2 MiB + 64 KiB in three pieces: two fit
    ("store", 2 * MiB, 4096),                # at the cap: unchanged
])
def test_the_ceiling_keeps_whole_pieces_inside_its_buffer(lib: ctypes.CDLL, op: str, access: int, fi: int) -> None:
    kw = dict(op=OP_INDEX[op], width=FORM_WIDTH[FORM], access=access, span=access, count=1, fence=SFENCE,
              fence_interval=fi)
    need = lib.pl_test_ceiling_len(ctypes.byref(Eng(**{**kw, "step": access})))
    assert need <= 2 * MiB
    raw = aligned(need + 2 * MiB)  # a canary longer than any piece: an overrun lands in it
    raw[:] = 0xA5
    ceil = raw[:need]
    buf = aligned(access)
    res = run(lib, buf, ceil=ceil, **kw)
    # bytes, not ops: a split access counts as an op only when done, and 1e6 ticks on a loaded host
    # may end inside the first 2 MiB piece (CI: ceil_ops 0 for ntstore at 64 B fences)
    assert res.ceil_bytes > 0 and res.ceil_ticks > 0
    assert np.all(raw[need:] == 0xA5), f"the ceiling wrote {np.count_nonzero(raw[need:] != 0xA5)} bytes past its buffer"
    assert not np.all(ceil[:4096] == 0xA5), "the ceiling stored nothing"


def test_the_engine_refuses_accesses_past_its_buffer(lib: ctypes.CDLL) -> None:
    buf = aligned(3 * 8192)
    store, copy, load = OP_INDEX["store"], OP_INDEX["copy"], OP_INDEX["load"]
    # the region: a 4 KiB sequential walk in 4032 bytes
    assert refusal(lib, buf, op=store, access=64, span=4096, base_len=4096)[0] == 0
    rc, why = refusal(lib, buf, op=store, access=64, span=4096, base_len=4032)
    assert rc == -errno.EINVAL and why == "engine: region: accesses reach byte 4096 of a 4032-byte buffer", why
    # a copy's source, copy_delta above the destination
    assert refusal(lib, buf, op=copy, access=64, span=4096, copy_delta=8192, base_len=12288)[0] == 0
    rc, why = refusal(lib, buf, op=copy, access=64, span=4096, copy_delta=8192, base_len=12224)
    assert rc == -errno.EINVAL and "reach byte 12288 of a 12224-byte buffer" in why, why
    # a store's copy_delta is not an access
    assert refusal(lib, buf, op=store, access=64, span=4096, copy_delta=8192, base_len=4096)[0] == 0
    # cold prep flushes the whole line of an 8-byte access
    for base_len, want in ((8, -errno.EINVAL), (64, 0)):
        e = Eng(features=0xFFFF, passes=1, seed=1, width=8, count=1, op=load, access=8, step=8, span=8, mode=1,
                prep=1, base_len=base_len)
        why = ctypes.create_string_buffer(256)
        assert lib.pl_test_engine(buf.ctypes.data, ctypes.byref(e), ctypes.byref(Res()), None, why, 256) == want, \
            why.value
    # the ceiling's buffer, 64 bytes short
    kw = dict(op=store, width=8, access=4096, span=8192, base_len=8192)
    need = lib.pl_test_ceiling_len(ctypes.byref(Eng(**{**kw, "step": 4096})))
    ceil = aligned(need)
    assert refusal(lib, buf, ceil=ceil, ceil_len=need, **kw)[0] == 0
    rc, why = refusal(lib, buf, ceil=ceil, ceil_len=need - 64, **kw)
    assert rc == -errno.EINVAL and why.startswith("engine: ceiling: accesses reach byte"), why
    # no length at all: nothing runs
    assert refusal(lib, buf, op=store, access=64, span=4096)[0] == -errno.EINVAL


def test_the_ceiling_stops_at_its_time_whatever_the_delay(lib: ctypes.CDLL) -> None:
    """The ceiling gets 1e6 ticks here; a delay of 3e6 ticks after each access makes every window
    one access long. It stops after the warming window and one measured window (it ran all nine,
    27e6 ticks with interrupts off in the module, before): counted, not timed."""
    kw = dict(op=OP_INDEX["store"], width=8, access=64, span=8192, count=1, delay_ticks=3_000_000)
    need = lib.pl_test_ceiling_len(ctypes.byref(Eng(**{**kw, "step": 64})))
    res = run(lib, aligned(8192), ceil=aligned(need), **kw)
    assert res.ceil_ops == 2, res.ceil_ops
    assert res.ceil_bytes == 64
    # without a delay it runs every window, each of them many accesses
    res = run(lib, aligned(8192), ceil=aligned(need), **{**kw, "delay_ticks": 0})
    assert res.ceil_ops > 9 * 256


# --------------------------------------------------------------------------- the runner
ISSUE_CASE = ["target=dram", "dram_size=8M", "dram_pages=4k", "mode=bandwidth", "op=store", "access_size=3M",
              "fence=sfence", "fence_interval=1536K", "duration_ms=20", "warmup_ms=0", "tsc_khz=2000000"]


@pytest.mark.skipif(not shutil.which("valgrind"), reason="valgrind is not installed (scripts/install-deps)")
@pytest.mark.parametrize("op", ["store", "load"])
def test_the_runner_under_valgrind_is_clean_on_the_issue_case(op: str) -> None:
    args = [a.replace("op=store", f"op={op}") for a in ISSUE_CASE]
    res = subprocess.run(["valgrind", "-q", "--error-exitcode=99", str(RUNNER), *args], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Invalid" not in res.stderr, res.stderr[-3000:]
    assert "#state done" in res.stdout


FAULT = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.plu_guarded_alloc.restype = ctypes.c_void_p
lib.plu_guarded_alloc.argtypes = [ctypes.c_uint64]
n, where = int(sys.argv[2]), sys.argv[3]
p = lib.plu_guarded_alloc(n)
assert p and p % 64 == 0
ctypes.memset(p, 1, n)
print("whole buffer written", flush=True)
ctypes.memset(p + n if where == "after" else p - p % 4096 - 1, 1, 1)
print("survived", flush=True)
"""


@pytest.mark.parametrize("n", [64, 4096, 8000, 59392, 3 * MiB])
@pytest.mark.parametrize("where", ["after", "before"])
def test_a_store_past_a_guarded_buffer_faults(n: int, where: str) -> None:
    res = subprocess.run([sys.executable, "-c", FAULT, str(LIBPL), str(n), where], capture_output=True, text=True,
                         timeout=60)
    assert res.stdout == "whole buffer written\n", res.stdout + res.stderr
    assert res.returncode == -signal.SIGSEGV, (res.returncode, res.stderr)


def vmas(pid: int) -> list[tuple[int, int, str]]:
    out = []
    for line in open(f"/proc/{pid}/maps"):
        rng, perms = line.split()[:2]
        lo, hi = (int(x, 16) for x in rng.split("-"))
        out.append((lo, hi, perms))
    return sorted(out)


def guarded(maps: list[tuple[int, int, str]], size: int) -> bool:
    """A read-write mapping of size bytes with inaccessible pages right below and above it."""
    for i in range(1, len(maps) - 1):
        lo, hi, perms = maps[i]
        if hi - lo == size and perms.startswith("rw") and maps[i - 1][1] == lo and maps[i + 1][0] == hi \
                and maps[i - 1][2].startswith("---") and maps[i + 1][2].startswith("---"):
            return True
    return False


def test_the_runner_maps_target_histogram_and_samples_between_guard_pages() -> None:
    proc = subprocess.Popen([str(RUNNER), "target=dram", "dram_size=6M", "dram_pages=4k", "mode=latency",
                             "samples=1000", "duration_ms=600000", "tsc_khz=2000000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        want = {"target": 6 * MiB, "histogram": 61440, "samples": 8192}
        # the runner maps them at its start; it runs until the SIGTERM below (ten minutes), and
        # the wait is a hang's bound (a 20 s run and 30 s were close to a starved start)
        deadline = time.monotonic() + 300
        found: dict[str, bool] = {}
        while time.monotonic() < deadline:
            maps = vmas(proc.pid)
            found = {k: guarded(maps, v) for k, v in want.items()}
            if all(found.values()) or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert all(found.values()), found
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1 and "#state error:aborted" in out, (proc.returncode, err)


def test_a_sigterm_while_the_workers_are_set_up_aborts_the_run() -> None:
    """The stop is caught before the first worker buffer is mapped (run.c): a SIGTERM the moment
    the histogram appears ends the run as aborted (exit 1), not the process by SIGTERM's default
    action, which CI met once when its load widened that window."""
    codes = []
    for _ in range(5):
        proc = subprocess.Popen([str(RUNNER), "target=dram", "dram_size=6M", "dram_pages=4k",
                                 "mode=latency", "samples=1000000", "duration_ms=600000",
                                 "tsc_khz=2000000"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 300   # a hang's bound
            while time.monotonic() < deadline and proc.poll() is None:
                if guarded(vmas(proc.pid), 61440):
                    break
        finally:
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=300)
        codes.append(proc.returncode)
        assert proc.returncode == 1 and "#state error:aborted" in out, (codes, err)
