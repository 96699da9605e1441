"""The engine's ceilings kept for the runs after them (core/ceil.c; docs/method.md, "The ceiling,
reused"), through libpltest.so (pl_test_ceil): runs of bandwidth threads through one cache as both
backends keep it, each thread's ceiling and bandwidth given, not measured, so the rule is held
exactly and no speed or time is asserted.

- A set of ceilings is reused only once it is credible: the fastest of PL_CEIL_TRUST measurements
  per thread (one starved measurement, 5.6 GB/s against the fresh runs' 151, was reused for every
  later point of a served runner).
- A run that outruns the ceiling it reused proves it stale: its lines say `ceiling_src=reused-low`
  (the thread's, and the `all` line's), and the set leaves the cache, so the next runs measure.
"""
from __future__ import annotations

import ctypes
import re
import subprocess

import pytest

from testlib import TOP

RUNNER_DIR = TOP / "userspace" / "runner"
TRUST = int(re.search(r"^#define PL_CEIL_TRUST\s+(\d+)", (TOP / "core" / "pl_run.h").read_text(), re.M).group(1))
GB = 1_000_000  # bytes in the harness's 10^6 ticks (a millisecond) at 1 GB/s


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    res = subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    lib = ctypes.CDLL(str(RUNNER_DIR / "libpltest.so"))
    u64p = ctypes.POINTER(ctypes.c_uint64)
    lib.pl_test_ceil.argtypes = [ctypes.c_uint, ctypes.c_uint, u64p, u64p, ctypes.c_char_p, ctypes.c_size_t,
                                 ctypes.c_char_p, ctypes.c_size_t]
    return lib


def runs(lib: ctypes.CDLL, ceil: list[list[float]], bw: list[list[float]]) -> list[list[dict[str, str]]]:
    """Per run: its lines' fields, the threads' then the `all` line's. ceil[i][j], bw[i][j]: GB/s of
    thread j of run i, its ceiling where it measures one, and what it ran."""
    n = len(ceil[0])
    flat_c = [round(c * GB) for r in ceil for c in r]
    flat_b = [round(b * GB) for r in bw for b in r]
    arr = ctypes.c_uint64 * len(flat_c)
    line = ctypes.create_string_buffer(1 << 20)
    why = ctypes.create_string_buffer(256)
    rc = lib.pl_test_ceil(n, len(ceil), arr(*flat_c), arr(*flat_b), line, len(line), why, len(why))
    assert rc == 0, why.value.decode()
    rows = [dict(f.split("=", 1) for f in ln.split() if "=" in f) for ln in line.value.decode().splitlines()]
    assert len(rows) == len(ceil) * (n + 1)
    return [rows[i * (n + 1):(i + 1) * (n + 1)] for i in range(len(ceil))]


def src(run: list[dict[str, str]]) -> list[str]:
    return [r["ceiling_src"] for r in run]


def gbps(run: list[dict[str, str]]) -> float:
    return float(run[-1]["ceiling_mbps"]) / 1000


def test_a_starved_first_ceiling_is_not_reused_alone(lib: ctypes.CDLL) -> None:
    """The observed case: the first measurement starved (5.6 GB/s), the next ones not (151, 150).
    Each measuring run reports its own; the set is reused from measurement PL_CEIL_TRUST on, at
    the fastest of them."""
    assert TRUST >= 2
    measured = [5.6, 151.0, 150.0, 149.0][:TRUST]
    got = runs(lib, [[c] for c in measured] + [[1.0]] * 3, [[3.0]] * (TRUST + 3))
    assert [src(r) for r in got] == [["measured"] * 2] * TRUST + [["reused"] * 2] * 3
    assert [gbps(r) for r in got[:TRUST]] == measured
    assert {gbps(r) for r in got[TRUST:]} == {max(measured)}


def test_a_run_that_outruns_its_reused_ceiling_says_so_and_the_next_measures(lib: ctypes.CDLL) -> None:
    """Every measurement starved (a long load): the set is reused at 5.6 GB/s until a run moves more
    than that. That run's lines say reused-low (its ceiling is the stale one it reused); the set is
    gone, so the runs after it measure again, PL_CEIL_TRUST times, before one reuses."""
    low = [[5.6 - 0.1 * i] for i in range(TRUST)]
    ceil = low + [[1.0], [1.0]] + [[150.0]] * TRUST + [[1.0], [1.0]]
    bw = [[3.0]] * TRUST + [[5.6], [7.0]] + [[3.0]] * (TRUST + 2)
    got = runs(lib, ceil, bw)
    assert [src(r)[-1] for r in got] == (["measured"] * TRUST + ["reused", "reused-low"]
                                         + ["measured"] * TRUST + ["reused"] * 2)
    assert src(got[TRUST + 1]) == ["reused-low", "reused-low"]
    assert gbps(got[TRUST]) == 5.6, "a run at its ceiling has not outrun it"
    assert gbps(got[TRUST + 1]) == 5.6, "the line shows the ceiling the run reused"
    assert gbps(got[TRUST + 2]) == 150.0 and gbps(got[-1]) == 150.0


def test_one_thread_outrunning_drops_the_whole_set(lib: ctypes.CDLL) -> None:
    """Two threads whose ceilings were measured together: thread 1 outruns its own; its line says
    reused-low, thread 0's reused, the `all` line (the sum holds the stale part) reused-low; both
    measure again after."""
    ceil = [[100.0, 4.0]] * TRUST + [[1.0, 1.0], [90.0, 80.0]]
    bw = [[3.0, 3.0]] * TRUST + [[3.0, 6.0], [3.0, 3.0]]
    got = runs(lib, ceil, bw)
    assert src(got[TRUST]) == ["reused", "reused-low", "reused-low"]
    assert gbps(got[TRUST]) == 104.0
    assert src(got[TRUST + 1]) == ["measured"] * 3
    assert [float(r["ceiling_mbps"]) / 1000 for r in got[TRUST + 1]] == [90.0, 80.0, 170.0]


def test_the_fastest_is_kept_per_thread(lib: ctypes.CDLL) -> None:
    """The set's ceiling per thread is its fastest measurement, whichever run it came from."""
    ceil = [[10.0, 50.0], [40.0, 20.0], [30.0, 30.0]][:TRUST] + [[1.0, 1.0]]
    while len(ceil) < TRUST + 1:
        ceil.insert(0, [5.0, 5.0])
    got = runs(lib, ceil, [[3.0, 3.0]] * (TRUST + 1))
    best = [max(c[j] for c in ceil[:TRUST]) for j in range(2)]
    assert src(got[TRUST]) == ["reused"] * 3
    assert [float(r["ceiling_mbps"]) / 1000 for r in got[TRUST][:2]] == best
