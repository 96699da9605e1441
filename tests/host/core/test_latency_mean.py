"""The latency mean is the mean of the unclamped differences (issue 37, point 6).

A latency sample is a bracket's ticks t less the thread's calibrated overhead ov (the median of
an empty bracket). The histogram, its percentiles, min and max count max(0, t - ov); the mean
and the standard deviation are of t - ov itself, signed: a clamp at 0 lifts the mean of samples
near zero (L1 hits, whose brackets fall on both sides of the median overhead) by the mean of the
negative differences it drops (measured 5.1 TSC ticks above an independent mfence/rdtscp
bracket). Synthetic brackets go through the core's own statistics (pl_hist_add, pl_hist_moments,
the result lines of resultfmt.c) in libpltest.so (userspace/runner/pltest.c)."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import pytest

from testlib import TOP

RUNNER_DIR = TOP / "userspace" / "runner"


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    res = subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    lib = ctypes.CDLL(str(RUNNER_DIR / "libpltest.so"))
    p, u64 = ctypes.c_void_p, ctypes.c_uint64
    lib.pl_test_moments.argtypes = [p, u64, u64, p, ctypes.c_char_p, ctypes.c_size_t]
    return lib


def moments(lib: ctypes.CDLL, t: np.ndarray, ov: int) -> tuple[list[int], dict[str, str], dict[str, str]]:
    """(mean x 1000, sd x 1000, median, min, max), and the thread's and the `all` line's fields."""
    t = np.ascontiguousarray(t, dtype=np.uint64)
    out = np.zeros(5, dtype=np.int64)
    line = ctypes.create_string_buffer(8192)
    lib.pl_test_moments(t.ctypes.data, t.size, ov, out.ctypes.data, line, len(line))
    rows = [dict(f.split("=", 1) for f in ln.split() if "=" in f) for ln in line.value.decode().splitlines()]
    assert len(rows) == 2, line.value
    return [int(x) for x in out], rows[0], rows[1]


def milli_toward_zero(num: int, n: int) -> int:
    """1000 * num / n, truncated toward zero (exact integers)."""
    q = abs(num) * 1000 // n
    return -q if num < 0 else q


def test_the_mean_is_of_the_unclamped_differences(lib: ctypes.CDLL) -> None:
    # L1-hit brackets: the empty bracket's median is 40 ticks; the access adds 0-2 ticks and the
    # brackets spread by a few ticks on both sides
    rng = np.random.default_rng(37)
    ov = 40
    t = ov + rng.integers(-6, 9, 100_000)
    (mean, sd, med, lo, hi), thread, all_ = moments(lib, t, ov)
    d = t.astype(np.int64) - ov
    want = milli_toward_zero(int(d.sum()), d.size)
    clamped = milli_toward_zero(int(np.maximum(d, 0).sum()), d.size)
    assert clamped - want > 1000, "the case must tell the two means apart by more than a tick"
    assert mean == want, f"mean x 1000: {mean}, the unclamped differences' {want} (clamped: {clamped})"
    for row in (thread, all_):
        assert row["lat_mean"] == f"{want // 1000 if want >= 0 else -(-want // 1000)}.{abs(want) % 1000:03d}" \
            or float(row["lat_mean"]) == pytest.approx(want / 1000, abs=5e-4), row["lat_mean"]
    # the standard deviation is of the same differences (the overhead is a constant)
    assert abs(sd / 1000 - float(d.std())) <= 0.01, (sd, float(d.std()))
    # the histogram keeps its clamp: a tick count, never below 0
    assert lo == 0 and hi == int(d.max()) and med == int(np.percentile(np.maximum(d, 0), 50, method="inverted_cdf"))
    assert thread["lat_min"] == "0" and int(thread["lat_p50"]) == med


def test_a_mean_below_the_overhead_is_negative(lib: ctypes.CDLL) -> None:
    t = np.array([37, 38, 40, 41], dtype=np.uint64)  # differences -3 -2 0 1: mean -1
    (mean, _, _, lo, _), thread, all_ = moments(lib, t, 40)
    assert mean == -1000 and lo == 0
    assert thread["lat_mean"] == "-1.000" and all_["lat_mean"] == "-1.000"
    t = np.array([39, 40, 40, 40], dtype=np.uint64)  # -0.25: the sign of a mean above -1
    (mean, _, _, _, _), thread, _ = moments(lib, t, 40)
    assert mean == -250 and thread["lat_mean"] == "-0.250"


def test_sums_beyond_64_bits_do_not_wrap(lib: ctypes.CDLL) -> None:
    # 2^22 differences of 2^42 ticks: their sum is 2^64 (beyond s64 and u64), their squares' 2^106
    t = np.full(1 << 22, (1 << 42) + 5, dtype=np.uint64)
    (mean, sd, _, _, _), thread, _ = moments(lib, t, 5)
    assert mean == (1 << 42) * 1000 and sd == 0
    assert thread["lat_mean"] == f"{1 << 42}.000"
