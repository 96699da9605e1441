"""The store data of a run's threads, as the module and the runner set them up (core/worker.c's
pl_thread_setup, then the engine), through libpltest.so (pl_test_thread_data): every thread
writes its own stream. A device that compresses or deduplicates would see less data than was
written if two threads stored the same sequence (issue 33, point 13: with `data_seed | 1` from
`seed x K + thread`, threads 0 and 1 of an even seed stored the same words, 1 and 2 of an odd one).
"""
from __future__ import annotations

import ctypes
import itertools

import numpy as np
import pytest

from test_engine import CPU, INC, MASK64, aligned, lib  # noqa: F401  (lib: the module-scoped fixture)

COUNT = 512  # accesses per thread
SEEDS = (0, 1, 2, 3, 4, 42, 1000, 2**32, 2**63, 2**64 - 1, 2**64 - 2)


def thread_data(lib: ctypes.CDLL, seed: int, n: int, count: int = COUNT) -> np.ndarray:
    """n x count: row i is the 8-byte words thread i stored, in the order of its accesses."""
    lib.pl_test_thread_data.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_uint64, ctypes.c_uint32,
                                        ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_char_p,
                                        ctypes.c_size_t]
    size = n * count * 8
    buf = aligned(size)
    buf[:] = 0
    bases = np.zeros(n, dtype=np.uint64)
    why = ctypes.create_string_buffer(256)
    rc = lib.pl_test_thread_data(seed, n, count, CPU, buf.ctypes.data, size, bases.ctypes.data, why, 256)
    assert rc == 0, why.value.decode()
    words = buf.view(np.uint64)
    rows = np.stack([words[int(b) // 8:int(b) // 8 + count] for b in bases])
    assert len(set(int(b) for b in bases)) == n, "threads share a region"
    return rows


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n", (2, 3, 8))
def test_no_two_threads_store_the_same_data(lib: ctypes.CDLL, seed: int, n: int) -> None:  # noqa: F811
    rows = thread_data(lib, seed, n)
    for i, row in enumerate(rows):
        # within a thread: odd (never zero), the constant step, every access a new value
        assert np.all(row & np.uint64(1) == 1), f"thread {i}: even (or zero) data"
        assert all((int(b) - int(a)) & MASK64 == INC for a, b in zip(row[:-1], row[1:])), f"thread {i}"
    for i, j in itertools.combinations(range(n), 2):
        same = np.count_nonzero(rows[i] == rows[j])
        assert same == 0, f"seed {seed}: threads {i} and {j} store the same word at {same} equal positions"
        shared = set(rows[i].tolist()) & set(rows[j].tolist())
        assert not shared, f"seed {seed}: threads {i} and {j} both store {len(shared)} values"


def test_the_streams_depend_on_the_seed(lib: ctypes.CDLL) -> None:  # noqa: F811
    """The same thread of two seeds stores different data; the same seed the same (reproducible)."""
    a, b, again = thread_data(lib, 2, 2), thread_data(lib, 4, 2), thread_data(lib, 2, 2)
    assert np.array_equal(a, again)
    assert not (set(a.ravel().tolist()) & set(b.ravel().tolist()))
