"""The engine's generated loops, run through libpltest.so (pl_test_engine: pl_eng_init, then
the selected loop through pl_eng_run, on a buffer), judged by what they leave in memory:

- every op x instruction form (the legacy SSE forms too) x access shape (a unit, two or four
  units, a line, blocks of four lines and a tail) x flush mode writes exactly its data there, or
  nothing (loads), or the source (copies), and nothing elsewhere;
- every address family (seq, stride, hotspot, rand, per-DIMM seq and rand, with passes) writes
  where an independent Python model of the generators says, in that order: access k stores
  (seed | 1) + (k + 1) * PL_DATA_INC in every 8-byte word, the last store to a word wins;
- read_pct mixes: the reads are exactly the accesses the accumulator picks, and write nothing;
- the division by multiplication the per-DIMM loops use is exact;
- the ceiling runs the plain loop of the ceiling op (ntstore: store, ntcopy: copy) on its buffer.
"""
from __future__ import annotations

import ctypes
import errno
import random
from pathlib import Path

import numpy as np
import pytest

from engine_code import FAMILIES, FORM_WIDTH, FORMS, OPS, has_form, ident
from pmemlab import plcore
from testlib import TOP

LIB = TOP / "userspace" / "runner" / "libpltest.so"
FEATURES = ("sse2", "sse4_1", "avx", "avx2", "avx512f", "clflush", "clflushopt", "clwb", "rdtscp")
FLAGS = set(next((ln.split(":", 1)[1].split() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                  if ln.startswith("flags")), []))
CPU = sum(1 << i for i, f in enumerate(FEATURES) if f in FLAGS)
NO_AVX = CPU & ~((1 << 2) | (1 << 3) | (1 << 4))
MASK64 = (1 << 64) - 1
INC = (2 * 0x9E3779B97F4A7C15) & MASK64
PAT = {"seq": 0, "rand": 1, "stride": 2, "hotspot": 3}
# the op enum's order is ops.def's (the module's ops, chase among them, then the runner's copies)
OP_INDEX = {op["name"]: i for i, op in enumerate(plcore.schema()["ops"])}


class Eng(ctypes.Structure):
    """struct pl_test_eng (userspace/runner/pltest.c): all u64."""
    _fields_ = [(n, ctypes.c_uint64) for n in (
        "op", "width", "features", "mode", "pattern", "access", "step", "span", "passes", "pass_offset",
        "ways", "gran", "dimms", "first_dimm", "seed", "stream", "copy_delta", "fence", "fence_interval",
        "flush", "read_pct", "delay_ticks", "prep", "count", "data_seed", "base_len", "ceil_len")]


class Res(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in ("ops", "reads", "writes", "bytes", "data", "lat_n", "ceil_bytes",
                                                "ceil_ticks", "ceil_ops")] + \
               [(n, ctypes.c_char * 64) for n in ("loop", "insn", "ceil_loop")]


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    import subprocess
    res = subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    lib = ctypes.CDLL(str(LIB))
    lib.pl_test_engine.argtypes = [ctypes.c_void_p, ctypes.POINTER(Eng), ctypes.POINTER(Res), ctypes.c_void_p,
                                   ctypes.c_char_p, ctypes.c_size_t]
    lib.pl_test_ceiling_len.argtypes = [ctypes.POINTER(Eng)]
    lib.pl_test_ceiling_len.restype = ctypes.c_uint64
    lib.pl_test_divc.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
    lib.pl_test_divc.restype = ctypes.c_uint64
    lib.pl_test_bw_name.restype = ctypes.c_char_p
    lib.pl_test_lat_name.restype = ctypes.c_char_p
    lib.pl_test_bwl_name.restype = ctypes.c_char_p
    lib.pl_test_steps.argtypes = [ctypes.c_void_p, ctypes.POINTER(Eng), ctypes.c_uint64, ctypes.c_void_p,
                                  ctypes.POINTER(Res), ctypes.c_char_p, ctypes.c_size_t]
    return lib


def aligned(nbytes: int, align: int = 4096) -> np.ndarray:
    raw = np.zeros(nbytes + align, dtype=np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + nbytes]


def run(lib: ctypes.CDLL, buf: np.ndarray, off: int = 0, ceil: np.ndarray | None = None, **kw: int) -> Res:
    """The engine on buf[off:] (all of it its buffer: base_len), the ceiling on all of ceil."""
    e = Eng(**{"features": CPU, "passes": 1, "seed": 1, "data_seed": 0x1234, "base_len": buf.nbytes - off,
               "ceil_len": 0 if ceil is None else ceil.nbytes, **kw})
    if not e.step:
        e.step = e.access
    res = Res()
    why = ctypes.create_string_buffer(256)
    rc = lib.pl_test_engine(buf.ctypes.data + off, ctypes.byref(e), ctypes.byref(res),
                            None if ceil is None else ceil.ctypes.data, why, 256)
    assert rc == 0, why.value.decode()
    return res


def form_ok(op: str, form: str) -> bool:
    need = {"16vex": {"avx"}, "32": {"avx"}, "64": {"avx512f"}}.get(form, set())
    if op == "ntload" and form == "32":
        need = {"avx2"}
    need |= {"store+clwb": {"clwb"}, "store+clflushopt": {"clflushopt"}}.get(op, set())
    return has_form(op, form) and need <= FLAGS


def features_for(form: str) -> int:
    return NO_AVX if form == "16sse" else CPU


def data(k: int, seed: int = 0x1234) -> int:
    """The store data of access k (0-based)."""
    return ((seed | 1) + (k + 1) * INC) & MASK64


# --------------------------------------------------------------------------- one access
SIZES = (8, 16, 32, 64, 192, 256, 320, 4096, 4288)
ACCESS_CASES = [(op, form, n, fl) for op in OPS for form in FORMS for n in SIZES for fl in (0, 1)
                if form_ok(op, form) and n >= FORM_WIDTH[form] and (n >= 64 or not fl)
                and (fl == 0 or op.startswith("store+"))]


@pytest.mark.parametrize("op,form,n,flush", ACCESS_CASES)
def test_one_access_writes_exactly_its_data(lib: ctypes.CDLL, op: str, form: str, n: int, flush: int) -> None:
    buf = aligned(3 * 8192)
    rng = np.random.default_rng(n * 131 + FORM_WIDTH[form])
    buf[:] = rng.integers(1, 255, size=buf.size, dtype=np.uint8)
    before = buf.copy()
    off, delta = 4096, 8192
    res = run(lib, buf, off, op=OP_INDEX[op], width=FORM_WIDTH[form], features=features_for(form), access=n,
              span=n, count=1, flush=flush, copy_delta=delta)
    assert res.loop.decode() == f"pl_bw_{ident(op)}_{form}_linear"
    assert (res.ops, res.bytes) == (1, n)
    if op in ("load", "ntload"):
        assert np.array_equal(buf, before), f"{op} changed memory"
        assert (res.reads, res.writes) == (1, 0)
        return
    assert (res.reads, res.writes) == (0, 1)
    if op in ("copy", "ntcopy"):
        assert np.array_equal(buf[off:off + n], before[off + delta:off + delta + n]), "copy: dest != source"
        assert np.array_equal(buf[off + n:], before[off + n:]), "copy wrote past its destination"
    else:
        got = buf.view(np.uint64)[off // 8:(off + n) // 8]
        assert np.all(got == np.uint64(data(0))), f"{op} {form}: stored {got[:4]} not {data(0):#x}"
        assert np.array_equal(buf[off + n:], before[off + n:])
    assert np.array_equal(buf[:off], before[:off])


# --------------------------------------------------------------------------- the address families, modelled
def splitmix64(x: int) -> tuple[int, int]:
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return x, z ^ (z >> 31)


class Mcg128:
    """The rand family's generator: state * 0xda942042e4dd58b5 mod 2^128, the high 64 bits out."""

    def __init__(self, seed: int, stream: int) -> None:
        x = (seed ^ (stream * 0xD1342543DE82EF95)) & MASK64
        x, hi = splitmix64(x)
        x, lo = splitmix64(x)
        self.state = (hi << 64) | lo | 1

    def next(self) -> int:
        self.state = (self.state * 0xDA942042E4DD58B5) & ((1 << 128) - 1)
        return self.state >> 64

    def below(self, n: int) -> int:
        m = self.next() * n
        if (m & MASK64) < n:
            thresh = (-n) % n
            while (m & MASK64) < thresh:
                m = self.next() * n
        return m >> 64


def model_offsets(pattern: str, access: int, step: int, span: int, passes: int, pass_offset: int, count: int,
                  ways: int = 0, gran: int = 0, dimms: int = 0, first: int = 0, seed: int = 1,
                  stream: int = 0) -> list[int]:
    """Region offsets of the first count accesses, from the definition (method.md, Addresses)."""
    vspan = (span // (ways * gran)) * dimms * gran if ways else span
    nslots = (vspan - ((passes - 1) * pass_offset + access)) // step + 1
    rng = Mcg128(seed, stream)
    out, k = [], 0
    while len(out) < count:
        base = (k % passes) * pass_offset
        for j in range(nslots):
            slot = rng.below(nslots) if pattern == "rand" else j
            v = base + slot * step
            if ways:
                chunk, within = divmod(v, gran)
                rnd, c = divmod(chunk, dimms)
                v = (rnd * ways + (first + c) % ways) * gran + within
            out.append(v)
            if len(out) == count:
                break
        k += 1
    return out


WALKS = [
    # pattern, access, step, span, passes, pass_offset, per-DIMM (ways, gran, dimms, first)
    ("seq", 64, 64, 4096, 1, 0, None),
    ("seq", 8, 8, 1024, 3, 16, None),
    ("stride", 64, 256, 8192, 2, 128, None),
    ("hotspot", 320, 320, 2048, 1, 0, None),
    ("rand", 64, 64, 8192, 1, 0, None),
    ("rand", 64, 256, 16384, 2, 64, None),
    ("rand", 4096, 4096, 1 << 16, 1, 0, None),
    ("seq", 256, 256, 1 << 16, 1, 0, (4, 4096, 2, 1)),
    ("seq", 64, 64, 3 * 8192 + 4096, 2, 128, (3, 4096, 2, 2)),
    ("rand", 256, 256, 1 << 16, 1, 0, (4, 4096, 1, 3)),
    ("rand", 64, 192, 3 * 12288, 2, 64, (3, 12288, 2, 1)),   # slots per chunk: 64, not a power of two
    ("rand", 32, 32, 6 * 96 * 5, 1, 0, (6, 96, 4, 5)),        # gran 96: 3 slots per chunk
    ("rand", 64, 64, 3 * 192 * 7, 2, 64, (3, 192, 1, 2)),     # 3 slots per chunk, one DIMM a thread
]


@pytest.mark.parametrize("form", ["8", "64" if "avx512f" in FLAGS else "32"])
@pytest.mark.parametrize("walk", WALKS, ids=lambda w: f"{w[0]}-{w[1]}-{w[2]}-{w[4]}p-{'dimm' if w[6] else 'flat'}")
def test_every_family_writes_where_the_definition_says(lib: ctypes.CDLL, walk: tuple, form: str) -> None:
    pattern, access, step, span, passes, po, dimm = walk
    width = FORM_WIDTH[form]
    if access < width:
        pytest.skip("access smaller than the width")
    ways, gran, dimms, first = dimm or (0, 0, 0, 0)
    nslots_guess = max(1, span // step)
    count = 3 * nslots_guess + 7  # three passes and a bit
    buf = aligned(span)
    buf[:] = 0
    res = run(lib, buf, op=OP_INDEX["store"], width=width, pattern=PAT[pattern], access=access, step=step,
              span=span, passes=passes, pass_offset=po, ways=ways, gran=gran, dimms=dimms, first_dimm=first,
              count=count, seed=9, stream=2)
    fam = ("dimm_" if ways else "") + ("rand" if pattern == "rand" else "linear")
    assert res.loop.decode() == f"pl_bw_store_{form}_{fam}"
    assert res.ops == count and res.writes == count
    want = np.zeros(span // 8, dtype=np.uint64)
    for k, v in enumerate(model_offsets(pattern, access, step, span, passes, po, count, ways, gran, dimms,
                                        first, seed=9, stream=2)):
        want[v // 8:(v + access) // 8] = data(k)
    got = buf.view(np.uint64)
    bad = np.nonzero(got != want)[0]
    assert not len(bad), f"{len(bad)} words differ, first at byte {bad[0] * 8}: {got[bad[0]]:#x} != {want[bad[0]]:#x}"
    assert res.data == data(count - 1)


@pytest.mark.parametrize("mode", [0, 1])
def test_read_pct_reads_exactly_the_picked_accesses(lib: ctypes.CDLL, mode: int) -> None:
    """Accumulator read_pct per access, a load when it reaches 100: those write nothing."""
    access, count, pct, span = 64, 200, 30, 64 * 256
    buf = aligned(span)
    buf[:] = 0
    res = run(lib, buf, op=OP_INDEX["ntstore"], width=8, access=access, span=span, count=count, read_pct=pct,
              mode=mode)
    assert res.loop.decode() == ("pl_lat_ntstore_8" if mode else "pl_bwf_ntstore_8")
    assert res.insn.decode() == "movnti,mov"
    acc, reads = 0, []
    for _ in range(count):
        acc += pct
        reads.append(acc >= 100)
        if acc >= 100:
            acc -= 100
    assert res.reads == sum(reads) == count * pct // 100 and res.writes == count - res.reads
    got = buf.view(np.uint64)
    for k in range(count):
        assert np.all(got[k * 8:(k + 1) * 8] == (0 if reads[k] else data(k))), k


def window_run(lib: ctypes.CDLL, warmup_ms: int, duration_ms: int, segments: list[tuple[int, ...]], count: int = 0,
               exit: int = 0) -> tuple[list[int], list[dict[str, str]]]:
    """pl_test_window at 1000 ticks per ms, each segment (t0, t1), or (now, t0, t1) when its end
    was computed at now, the loop left at exit (0: at the last segment's end): its out array and
    the thread's and the `all` result lines (resultfmt.c)."""
    triples = [seg if len(seg) == 3 else (seg[0], *seg) for seg in segments]
    seg = (ctypes.c_uint64 * (3 * len(triples)))(*[x for t in triples for x in t])
    n = len(triples)
    out = (ctypes.c_uint64 * (n + 4))()
    text = ctypes.create_string_buffer(4096)
    lib.pl_test_window(ctypes.c_uint64(warmup_ms), ctypes.c_uint64(duration_ms), ctypes.c_uint64(count),
                       ctypes.c_uint64(1000), seg, ctypes.c_uint(n), ctypes.c_uint64(exit), out, text,
                       ctypes.c_size_t(len(text)))
    lines = [dict(f.split("=", 1) for f in line.split()) for line in text.value.decode().splitlines()]
    assert [line["thread"] for line in lines] == ["0", "all"], text.value
    return list(out), lines


def window(lib: ctypes.CDLL, warmup_ms: int, duration_ms: int, segments: list[tuple[int, ...]], count: int = 0
           ) -> tuple[list[bool], int, int]:
    """window_run: whether the loop goes on after each segment, the timed segments and their
    ticks. Every segment runs one access; the counted ones are the timed segments', and a count
    run's limit is back after the warm-up (both checked here), as the result line reports them."""
    out, (line, _) = window_run(lib, warmup_ms, duration_ms, segments, count)
    n = len(segments)
    timed, ops, left = out[n], out[n + 2], out[n + 3]
    assert ops == timed, f"{ops} accesses counted in {timed} timed segments"
    assert left == (count - timed if count else MASK64), left
    assert (int(line["segments"]), int(line["ops"]), int(line["ticks"])) == (timed, ops, out[n + 1]), line
    return [bool(x) for x in out[:n]], timed, out[n + 1]


def test_a_thread_reports_how_late_it_started_and_how_much_of_the_end_it_missed(lib: ctypes.CDLL) -> None:
    """start_lag_ticks: from the timed run's start (the common start plus the warm-up) to the
    thread's first timed segment; end_lag_ticks: from its last timed stamp to when it left its
    loop, at most to the run's end. A thread whose CPU came late, or went away near the end (a
    busy host, a stalled vCPU: 123 ms once, two TCG guests on two cores), says so, and what it
    covered adds up: start lag + ticks + gap_ticks + end lag = the run's length. One that left
    its loop early (stopped) falls short by as much. The `all` line has the largest of each."""
    def lags(warmup_ms: int, segments: list[tuple[int, ...]], exit: int = 0) -> tuple[int, int, int, int]:
        _, (line, total) = window_run(lib, warmup_ms, 10, segments, exit=exit)
        for key in ("start_lag_ticks", "end_lag_ticks"):
            assert total[key] == line[key], key
        return (int(line["start_lag_ticks"]), int(line["ticks"]) + int(line["gap_ticks"]), int(line["end_lag_ticks"]),
                int(line["segments"]))

    assert lags(0, [(0, 4000), (4000, 10000)]) == (0, 10000, 0, 2)
    assert lags(0, [(3000, 6000), (6100, 10000)]) == (3000, 7000, 0, 2)  # 3000 + 7000 + 0
    # the last segment ended at 6000 and the thread only looked again at 12000: 4000 of the end lost
    assert lags(0, [(0, 3000), (3000, 6000)], exit=12000) == (0, 6000, 4000, 2)
    # stopped at 8000 (an abort), 2000 before the end: the sum falls short by that
    assert lags(0, [(0, 3000), (3000, 6000)], exit=8000) == (0, 6000, 2000, 2)
    # with a warm-up of 5 ms the timed run starts at 5000: warm-up segments do not count
    assert lags(5, [(0, 5000), (5000, 10000), (10000, 15000)]) == (0, 10000, 0, 2)
    assert lags(5, [(0, 3000), (6000, 9000), (9000, 15000)]) == (1000, 9000, 0, 2)
    # no CPU until after the end: the one late segment, past the end, no end lag
    assert lags(5, [(21000, 21040)]) == (16000, 40, 0, 1)


def test_a_thread_reports_its_longest_stretch_with_interrupts_off(lib: ctypes.CDLL) -> None:
    """irqoff_max_ticks: the longest segment of the thread, its warm-up's included (interrupts are
    off in every segment, timed or not); the `all` line has the longest of every thread."""
    def longest(warmup_ms: int, segments: list[tuple[int, ...]]) -> int:
        _, (line, total) = window_run(lib, warmup_ms, 10, segments)
        assert total["irqoff_max_ticks"] == line["irqoff_max_ticks"]
        return int(line["irqoff_max_ticks"])

    assert longest(0, [(0, 4000), (4000, 10000)]) == 6000
    assert longest(0, [(0, 1000), (1100, 1200), (1300, 10000)]) == 8700
    # the warm-up's segment of 4500 ticks is the longest, though not timed
    assert longest(5, [(0, 4500), (4500, 5000), (5000, 8000), (8000, 12000), (12000, 15000)]) == 4500


def test_a_run_has_a_timed_segment_even_when_its_window_passed_without_it(lib: ctypes.CDLL) -> None:
    """Warm-up 5 ms, run 10 ms (ticks 5000..15000). A worker that got no CPU for the window, or
    whose warm-up segment ran past its end, runs one timed segment late, so that its result is a
    rate measured on accesses rather than 0 accesses reported as 0 GB/s (seen in the user backend
    on a saturated host, 10 ms runs)."""
    assert window(lib, 5, 10, [(0, 5000), (5000, 10000), (10000, 15000)]) == ([True, True, False], 2, 10000)
    # the warm-up segment was descheduled past the end: it counts for nothing, one more runs
    assert window(lib, 5, 10, [(0, 20000), (20000, 20050)]) == ([True, False], 1, 50)
    # no CPU at all until after the end: the first segment is the timed one
    assert window(lib, 5, 10, [(21000, 21040)]) == ([False], 1, 40)
    # without a warm-up
    assert window(lib, 0, 10, [(0, 4000), (4000, 10000)]) == ([True, False], 2, 10000)


CHASE_WRITE = {"none": 0, "raw": 1, "store": 2}  # enum pl_chase_write


@pytest.mark.parametrize("op,mode,cw", [("load", 0, "none"), ("load", 1, "none"), ("chase", 1, "none"),
                                        ("chase", 1, "raw"), ("chase", 1, "store")],
                         ids=["bandwidth", "latency", "chase", "chase-raw", "chase-store"])
def test_a_worker_that_got_no_cpu_for_its_window_measures_one_step_late(lib: ctypes.CDLL, op: str, mode: int,
                                                                         cw: str) -> None:
    """The worker loop with the real engine and clock, its start 11 ms after a 10 ms window's: it
    runs late until it has one access (bandwidth: one batch; latency: one sample; the chase: one
    batch of hops, after the raw chase's write pass, one step a segment), never 0 accesses as a
    result. Before, the latency loops looked at the clock before their first sample: a probe
    stage's chase on a loaded host came out with ops 0 and status ok (fresh make test, 6.1 guest,
    test_the_2m_stage_on_the_user_backend)."""
    span = 1 << 16  # 1024 lines: the raw chase's write pass is 64 steps of 16
    buf = aligned(span)
    out = (ctypes.c_uint64 * 4)()
    why = ctypes.create_string_buffer(256)
    rc = lib.pl_test_late(ctypes.c_void_p(buf.ctypes.data), ctypes.c_uint64(span), ctypes.c_int(OP_INDEX[op]),
                          ctypes.c_int(mode), ctypes.c_int(CHASE_WRITE[cw]), ctypes.c_uint64(10),
                          ctypes.c_uint64(2_000_000), out, why, ctypes.c_size_t(256))
    assert rc == 0, why.value
    ops, segments, lat_n, nsamples = out
    step = 16 if op == "chase" else 1
    if mode == 0:
        assert ops >= 1 and segments == 1 and lat_n == 0, list(out)
        return
    # one sample (a batch of 16 hops for the chase), taken in the first segment that could take one
    assert ops == step and lat_n == 1 and nsamples == 1, list(out)
    # raw: one write step a segment, the last one with the pass's mfence and the first timed batch
    assert segments == (span // 64 // 16 if cw == "raw" else 1), list(out)


@pytest.mark.parametrize("count", [0, 10])
def test_a_worker_off_its_cpu_across_the_warm_up_end_resets_before_it_counts(lib: ctypes.CDLL, count: int) -> None:
    """Warm-up 5 ms: the worker is off its CPU from 3 ms to 6 ms, so no segment reaches the
    warm-up's end. Before, the segment that started at 6 ms was timed without the reset: the
    warm-up's accesses stayed counted and a count run's limit never came back (a count run ran
    until abort). Now the segment's end, computed at 6 ms, resets first, and the segment is timed;
    one whose end was computed before the warm-up's end but that started after it (off the CPU in
    between) ran as the warm-up does, and resets instead of being timed."""
    def more(*m: bool) -> list[bool]:
        return [True] * len(m) if count else list(m)  # a count run has no end in time

    assert window(lib, 5, 10, [(0, 3000), (6000, 9000), (9000, 15000)], count) == (more(True, True, False), 2, 9000)
    assert window(lib, 5, 10, [(0, 3000), (2990, 6000, 9000), (9000, 15000)], count) == \
        (more(True, True, False), 1, 6000)
    # the late segment reaches past the run's end: one more, timed, follows
    assert window(lib, 5, 10, [(0, 3000), (2990, 6000, 16000), (16000, 16100)], count) == \
        (more(True, True, False), 1, 100)


def warmup_run(lib: ctypes.CDLL, mode: int, stall_at: int, count: int = 0, samples: int = 0, delay: int = 0,
               warm_ms: int = 40, seg_ms: int = 5, duration_ms: int = 30) -> dict[str, int]:
    """pl_test_warmup: the worker loop with the real engine and clock, descheduled from the end of
    its first segment to 1 ms past the warm-up's end, before computing the next segment's end
    (stall_at 0) or after (1); retried until the first segment did end inside the warm-up."""
    buf = aligned(1 << 16)
    out = (ctypes.c_uint64 * 8)()
    why = ctypes.create_string_buffer(256)
    khz = 2_000_000  # ticks per ms, near enough: only the order of the segments matters
    names = ("stalled", "ended", "ops", "bytes", "ticks", "segments", "lat_n", "nsamples")
    for _ in range(20):
        rc = lib.pl_test_warmup(ctypes.c_void_p(buf.ctypes.data), ctypes.c_uint64(buf.nbytes), ctypes.c_int(mode),
                                *(ctypes.c_uint64(x) for x in (count, samples, delay, warm_ms, seg_ms, duration_ms,
                                                               khz)), ctypes.c_int(stall_at), out, why,
                                ctypes.c_size_t(256))
        assert rc == 0, why.value
        res = dict(zip(names, out))
        if res["stalled"]:
            return res
    pytest.fail("the worker never ended a warm-up segment before the warm-up's end (20 tries)")


@pytest.mark.parametrize("stall_at", [0, 1], ids=["between-segments", "after-its-end-was-set"])
@pytest.mark.parametrize("mode", [0, 1], ids=["bandwidth", "latency"])
def test_a_count_run_descheduled_across_the_warm_up_end_counts_only_its_own_accesses(lib: ctypes.CDLL, mode: int,
                                                                                     stall_at: int) -> None:
    """Before the fix the late segment was timed without the reset: the warm-up's accesses stayed
    in the counters, the histogram and the samples, and the count (no limit during the warm-up)
    never came back, so the count run ran until abort (here: the harness's deadline)."""
    count = 300 if mode else 20000
    res = warmup_run(lib, mode, stall_at, count=count, samples=count)
    assert res["ended"], "the count run did not end by itself"
    assert res["ops"] == count and res["bytes"] == 8 * count, res
    if mode:
        assert res["lat_n"] == count and res["nsamples"] == count, res


@pytest.mark.parametrize("stall_at", [0, 1], ids=["between-segments", "after-its-end-was-set"])
def test_a_timed_run_descheduled_across_the_warm_up_end_excludes_the_warm_up(lib: ctypes.CDLL, stall_at: int) -> None:
    """Each access busy-waits delay_ticks after itself, so the timed accesses fit in the timed
    ticks: ops x delay <= ticks, whatever the machine's speed. The warm-up's 30 ms segment counted
    in (before the fix) breaks it: its accesses against a timed run of 20 ms."""
    delay = 20_000
    res = warmup_run(lib, 0, stall_at, delay=delay, seg_ms=30, duration_ms=20)
    assert res["ended"] and res["ops"] > 0, res
    assert res["ops"] * delay <= res["ticks"], res


def test_latency_threads_calibrate_again_twice_their_calibration_before_the_start(lib: ctypes.CDLL) -> None:
    """The barrier calibrates a latency thread again from go - 2 x its calibration's length, after
    the spin has brought the core's clock up (calibrated cold, a slower core overestimates the
    overhead). The calibration times itself: 101 brackets, each at least the overhead it finds."""
    out = (ctypes.c_uint64 * 4)()
    why = ctypes.create_string_buffer(256)
    assert lib.pl_test_calibration(ctypes.c_uint64(10**6), out, why, ctypes.c_size_t(256)) == 0, why.value
    cal_ticks, cal_end, overhead, recal_before_go = out
    assert overhead > 0 and cal_end > 0
    assert cal_ticks >= 101 * overhead, (cal_ticks, overhead)
    assert recal_before_go == 2 * cal_ticks


def test_division_by_multiplication_is_exact(lib: ctypes.CDLL) -> None:
    rng = random.Random(5)
    ds = [1, 2, 3, 5, 7, 48, 64, 96, 1000, 4095, 4096, 4097, (1 << 27) + 3, (1 << 32) - 1, (1 << 40) + 7,
          (1 << 62) + 1]
    ns = [0, 1, 2, 63, 64, (1 << 32) - 1, 1 << 32, (1 << 45) - 1, (1 << 63) - 1, 1 << 63, MASK64]
    for d in ds:
        for n in ns + [rng.getrandbits(64) for _ in range(300)] + [(d * rng.getrandbits(36) + d - 1) & MASK64 for _ in range(50)]:
            assert lib.pl_test_divc(n, d) == n // d, (n, d)


# --------------------------------------------------------------------------- tables and the ceiling
def test_every_op_form_family_has_its_loop(lib: ctypes.CDLL) -> None:
    for op in OPS:
        i = OP_INDEX[op]
        for f, form in enumerate(FORMS):
            for fam, name in enumerate(FAMILIES):
                got = lib.pl_test_bw_name(i, f, fam, 1)
                want = f"pl_bw_{ident(op)}_{form}_{name}".encode() if has_form(op, form) else None
                assert got == want, (op, form, name)
                assert lib.pl_test_bw_name(i, f, fam, 0) == (f"pl_bwf_{ident(op)}_{form}".encode() if want else None)
            assert lib.pl_test_lat_name(i, f) == (f"pl_lat_{ident(op)}_{form}".encode() if has_form(op, form) else None)
            assert lib.pl_test_bwl_name(i, f) == (f"pl_bwl_{ident(op)}_{form}".encode() if has_form(op, form) else None)


@pytest.mark.parametrize("op,ceil", [("load", "load"), ("ntload", "ntload"), ("ntstore", "store"),
                                     ("store+clflush", "store"), ("copy", "copy"), ("ntcopy", "copy")])
def test_ceiling_runs_the_plain_loop_on_its_buffer(lib: ctypes.CDLL, op: str, ceil: str) -> None:
    form = "32" if "avx2" in FLAGS else "16vex"
    for access, family in ((64, "linear"), (4096, "rand"), (256, "dimm_rand"), (4 << 20, "linear")):
        if family.startswith("dimm") and op.endswith("copy"):
            continue
        kw = dict(op=OP_INDEX[op], width=FORM_WIDTH[form], access=access, span=max(1 << 20, access), count=8,
                  pattern=PAT["rand" if "rand" in family else "seq"], copy_delta=max(1 << 20, access))
        if family.startswith("dimm"):
            kw.update(ways=6, gran=4096, dimms=2, first_dimm=5)
        need = lib.pl_test_ceiling_len(ctypes.byref(Eng(**{**kw, "step": access})))
        one = max(32 << 10, min(2 * access, 2 << 20))
        assert need == (2 * one if op.endswith("copy") else one), (op, access, need)
        ceil_buf = aligned(need)
        buf = aligned(max(2 << 20, 2 * access))
        before = buf.copy()
        res = run(lib, buf, ceil=ceil_buf, **kw)
        # an access above a piece (16 KiB) runs split, in the ceiling too (at 2 MiB)
        want = f"pl_bwl_{ident(ceil)}_{form}" if access > PIECE else f"pl_bw_{ident(ceil)}_{form}_{family}"
        assert res.ceil_loop.decode() == want
        assert res.ceil_bytes > 0 and res.ceil_ticks > 0
        if op in ("load", "ntload"):
            assert np.array_equal(buf, before), "the ceiling touched the run's region"


# --------------------------------------------------------------------------- long accesses, split
PIECE = 16384  # PL_PIECE_BYTES: the most bytes between two reads of the clock


def steps(lib: ctypes.CDLL, buf: np.ndarray, until_ticks: int = 0, **kw: int) -> tuple[dict[str, int], Res]:
    """pl_test_steps: the engine called as segments whose end has passed (until_ticks 0: each call
    runs its first step only), until its count is done."""
    e = Eng(**{"features": CPU, "passes": 1, "seed": 1, "data_seed": 0x1234, "base_len": buf.nbytes, **kw})
    if not e.step:
        e.step = e.access
    if not e.span:
        e.span = buf.nbytes
    out = (ctypes.c_uint64 * 6)()
    res = Res()
    why = ctypes.create_string_buffer(256)
    rc = lib.pl_test_steps(buf.ctypes.data, ctypes.byref(e), until_ticks, out, ctypes.byref(res), why, 256)
    assert rc == 0, why.value.decode()
    return dict(zip(("calls", "most", "bytes", "ops", "pieces", "slowest"), out)), res


def test_a_64_mib_access_is_split_into_pieces_between_segments(lib: ctypes.CDLL) -> None:
    """Issue 33 point 8: one access of 64 MiB (the largest) ran as one asm statement with
    interrupts off (2.01 s on the bed's CXL node with segment_ms=1). It now runs in pieces of
    16 KiB, the clock read between them: a segment whose end has passed stops after its first
    piece, and the next call goes on where it stopped. Called so, the access takes 4096 calls of
    16 KiB each, counts once when its last piece is done, and stores exactly its data on every
    byte (before: one call of 64 MiB)."""
    n = 64 << 20
    buf = aligned(n)
    got, res = steps(lib, buf, op=OP_INDEX["store"], width=8, access=n, count=1)
    assert got["most"] <= PIECE, f"one call issued {got['most']} bytes with interrupts off (bound {PIECE})"
    assert res.loop.decode() == "pl_bwl_store_8"
    assert (got["calls"], got["pieces"], got["bytes"], got["ops"]) == (n // PIECE, n // PIECE, n, 1), got
    assert (res.reads, res.writes) == (0, 1)
    assert np.all(buf.view(np.uint64) == np.uint64(data(0))), "the split access stored other data"
    # a segment of about 1 ms (10^6 ticks): pieces until its end, then the rest in the next ones
    buf[:] = 0
    got, _ = steps(lib, buf, until_ticks=1_000_000, op=OP_INDEX["store"], width=8, access=n, count=1)
    assert (got["pieces"], got["bytes"], got["ops"]) == (n // PIECE, n, 1), got
    assert got["most"] % PIECE == 0 and got["most"] * got["calls"] >= n, got
    assert np.all(buf.view(np.uint64) == np.uint64(data(0)))


@pytest.mark.parametrize("op,flush,fence,fi,per_access", [
    # (pieces per 1 MiB access: 64 pieces of 16 KiB; flush=access with a fence piece above 16 KiB:
    #  its stores, then its flushes, each in pieces)
    ("store", 0, 0, 0, 64),
    ("ntstore", 0, 1, 0, 64),
    ("store+clflush", 0, 1, 0, 64),
    ("store+clflush", 1, 1, 0, 128),
    ("store+clflush", 1, 1, 4096, 64),        # fence pieces of 4 KiB: 4 per step, flushed per piece
    ("store+clflush", 1, 2, 65536, 128),      # fence pieces of 64 KiB: stores then flushes, in steps
    ("store+clflush", 0, 2, 65536, 64),
    ("load", 0, 0, 0, 64),
])
def test_split_accesses_keep_their_data_counts_and_pieces(lib: ctypes.CDLL, op: str, flush: int, fence: int,
                                                          fi: int, per_access: int) -> None:
    """Three accesses of 1 MiB over a 4 MiB buffer, seq, every call a single step: each step
    issues at most 16 KiB of accesses, the pieces are as many as the access's bytes (twice for
    flush=access above a piece), and every access stores its own data on all of its bytes."""
    n, count = 1 << 20, 3
    buf = aligned(4 * n)
    got, res = steps(lib, buf, op=OP_INDEX[op], width=8, access=n, count=count, flush=flush, fence=fence,
                     fence_interval=fi)
    assert got["most"] <= PIECE, got
    assert (got["pieces"], got["bytes"], got["ops"]) == (count * per_access, count * n, count), got
    if op == "load":
        assert (res.reads, res.writes) == (count, 0)
        return
    words = buf.view(np.uint64)
    for k in range(count):
        assert np.all(words[k * n // 8:(k + 1) * n // 8] == np.uint64(data(k))), f"access {k}"
    assert not words[count * n // 8:].any()


def test_a_split_access_with_a_read_mix_counts_whole_accesses(lib: ctypes.CDLL) -> None:
    """read_pct 50 over four 64 KiB accesses: two loads and two stores, each whole, in pieces."""
    n = 64 << 10
    buf = aligned(8 * n)
    got, res = steps(lib, buf, op=OP_INDEX["store"], width=8, access=n, count=4, read_pct=50)
    assert (res.ops, res.reads, res.writes, res.bytes) == (4, 2, 2, 4 * n)
    assert got["pieces"] == 4 * n // PIECE and got["most"] <= PIECE
    words = buf.view(np.uint64)
    stored = [k for k in range(4) if words[k * n // 8:(k + 1) * n // 8].any()]
    assert len(stored) == 2 and all(np.all(words[k * n // 8:(k + 1) * n // 8] == np.uint64(data(k))) for k in stored)


def test_a_latency_access_above_64_kib_is_refused(lib: ctypes.CDLL) -> None:
    """A latency sample is one access in one bracket: it cannot be split, so it is bounded."""
    buf = aligned(1 << 20)
    e = Eng(features=CPU, passes=1, seed=1, op=OP_INDEX["load"], width=8, mode=1, access=128 << 10,
            step=128 << 10, span=1 << 20, count=1, base_len=buf.nbytes)
    why = ctypes.create_string_buffer(256)
    rc = lib.pl_test_engine(buf.ctypes.data, ctypes.byref(e), ctypes.byref(Res()), None, why, 256)
    assert rc == -errno.EINVAL and b"cannot be split" in why.value, (rc, why.value)
