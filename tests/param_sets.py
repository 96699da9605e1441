"""Random run-parameter sets for the differential tests (tests/host/core/test_params_diff.py: runner
against controller; tests/guest/test_params_three_ways.py: module against runner against controller).

A set is a dict name -> text in table order: the text the module's sysfs file is written with.
The values lean on the edges of every range (lo - 1, lo, hi, hi + 1, the multiples around them),
on malformed text, on the facts of the machine (threads around the online CPUs, windows around
the target's end, delays around half a segment) and on the six inputs the controller once
refused while the module accepted them. Only the module's own spellings are made: the Python-only
ones the controller also takes ("2MiB", "load, store", `true`) are no input of the module."""
from __future__ import annotations

import errno
import functools
import subprocess
from array import array
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from pmemlab import params as P
from pmemlab.results import parse_result_text

RUNNER = Path(__file__).resolve().parents[1] / "userspace" / "runner" / "pmemlab-run"
Verdict = tuple[str, str]  # ("ok", "-") or (errno name, parameter at fault)

MiB = 1 << 20
# (no white space inside: the runner's batch takes a set as one line of KEY=VALUE words)
JUNK = ["", "-1", "abc", "1.5", "0x", "+5", "K", "0b1", "99999999999999999999999", "9" * 40, "0x1g", "--",
        "64k64"]
# the six inputs of issue 12, each on the defaults
DRIFTED = [
    {"access_size": "8", "width": "0"},
    {"read_pct": "100", "op": "store"},
    {"stride": "72", "pattern": "seq"},
    {"op": "load,store", "threads": "3"},
    {"op": "load,store", "threads": "2", "read_pct": "50"},
    {"interleave_gran": "4032", "placement": "per-dimm", "working_set": "1M"},
]


@dataclass(frozen=True)
class Machine:
    """What the values lean on: the target's size, the online CPUs, the TSC rate."""

    target_size: int = 64 * MiB
    online: int = 2
    tsc_khz: int = 2_000_000


def _size_texts(v: int) -> list[str]:
    out = [str(v)]
    for suffix, shift in (("T", 40), ("G", 30), ("M", 20), ("K", 10)):
        if v and not v % (1 << shift):
            out.append(f"{v >> shift}{suffix}")
            break
    if v:
        out.append(hex(v))
    return out


def _numbers(p: P.Param, m: Machine) -> list[int]:
    lo, hi, mult = p.lo or 0, p.hi or 0, p.multiple_of or 1
    vals = {lo, hi, lo + 1, hi - 1, hi + 1, 0, 1, 2, 3, 8, 12, 16, 24, 32, 48, 64, 72, 96, 100, 128, 192, 256,
            4032, 4096, 8192, 65536, MiB, 2 * MiB, 64 * MiB, 64 * MiB + 64, 1 << 40}
    if lo:
        vals.add(lo - 1)
    vals |= {mult * k for k in (1, 2, 3, 5, 7)} | {mult * 3 + 8}
    if p.name in ("window_offset", "working_set"):
        vals |= {m.target_size - 4096, m.target_size, m.target_size + 8, m.target_size // 2, m.target_size // 2 + 4096}
    if p.name == "threads":
        vals |= {m.online - 1, m.online, m.online + 1, 3, 256, 257}
    if p.name == "delay_ticks":
        half = 5 * m.tsc_khz // 2  # segment_ms 5
        vals |= {half - 1, half, half + 1, m.tsc_khz // 2 - 1}
    if p.name == "samples":
        vals |= {(1 << 20), (1 << 20) + 1, 1 << 17, 1 << 18}
    return sorted(v for v in vals if v >= 0)


def _valid(name: str, text: str) -> bool:
    """Would the value pass on its own (to lean the sets towards runs that reach the combination)?"""
    try:
        P.canonical(name, text)
    except P.ConfigValueError:
        return False
    return True


def _weighted(*choices: tuple[int, st.SearchStrategy[str]]) -> st.SearchStrategy[str]:
    """One of the strategies, picked with the given weights."""
    table = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.integers(0, len(table) - 1).flatmap(lambda i: table[i])


@functools.cache  # built once per parameter and machine: each build judges dozens of texts through libplcore
def value_texts(name: str, m: Machine) -> st.SearchStrategy[str]:
    """Text for one parameter's file: mostly a valid value, often at the edge of its range,
    sometimes junk, sometimes an op of rules of its own (the copies, chase)."""
    p = P.PARAMS[name]
    junk = st.sampled_from(JUNK)
    if p.kind in ("int", "size"):
        nums = _numbers(p, m)
        texts = sorted({t for v in nums for t in (_size_texts(v) if p.kind == "size" else [str(v)])})
        good = [t for t in texts if _valid(name, t)]
        if name == "threads":
            good = [str(n) for n in range(1, m.online + 1)]
        anywhere = st.integers(0, (p.hi or 1 << 40) + 2).map(str)
        return _weighted((12, st.sampled_from(good)), (3, st.sampled_from(texts)), (1, anywhere), (1, junk))
    if p.kind == "bool":
        return _weighted((8, st.sampled_from(["0", "1"])), (1, st.just("2")), (1, junk))
    if p.kind == "enum":
        extra = ["4", "12", "24", "128"] if name == "width" else [str(p.choices[0]).upper(), f"{p.choices[0]}x"]
        return _weighted((12, st.sampled_from([str(c) for c in p.choices])), (1, st.sampled_from(extra)), (1, junk))
    if p.kind == "ops":
        one = st.sampled_from(P.OPS)
        lists = st.lists(one, min_size=1, max_size=4).map(",".join)
        bad = st.sampled_from(["stor", "load,", ",load", "load,,store", "store+", "LOAD"]
                              + ["copy", "ntcopy,load", "chase"])
        return _weighted((6, one), (4, lists), (1, bad))
    if p.kind == "name":  # load_target: empty (this target), a name, or text no name may be (no white
        # space: the runner's --check-batch lines split on it)
        return _weighted((6, st.just("")), (2, st.sampled_from(["cxl", "dram", "dram:0", "a-b_c"])),
                         (1, st.sampled_from(["x" * 300, "\u00e9", "a\x7fb"])), (1, junk))
    # cpus
    good = ["", "0", "0-1", "1", "0,1", "1,0", "0-1:1/2"] if m.online > 1 else ["", "0"]
    return _weighted((6, st.sampled_from(good)),
                     (2, st.sampled_from(["1-0", "0-3", "2", "0-7:2/4", "8191", "8192", "0-", "a", "3"])))


CHANGE = 51  # of 256: a parameter is changed in one set in five


@st.composite
def param_sets(draw: st.DrawFn, m: Machine | None = None) -> dict[str, str]:
    """A run's parameters as text, in table order; most are left at their defaults."""
    m = m or Machine()
    chosen: dict[str, str] = {}
    if draw(st.integers(0, 3)) == 0:
        chosen.update(draw(st.sampled_from(DRIFTED)))
    # one byte per parameter, drawn at once (a draw per parameter was most of the cost of a set):
    # below CHANGE the parameter gets a value; for threads, the next band keeps it within the CPUs
    dice = draw(st.binary(min_size=len(P.PARAM_NAMES), max_size=len(P.PARAM_NAMES)))
    for name, die in zip(P.PARAM_NAMES, dice):
        if die < CHANGE:
            chosen[name] = draw(value_texts(name, m))
        elif name == "threads" and die < CHANGE + (256 - CHANGE) // 2:
            chosen[name] = str(draw(st.integers(1, m.online)))
    # a window that fits most of the time, so the combination is reached
    if "working_set" not in chosen and draw(st.booleans()):
        chosen["working_set"] = draw(st.sampled_from(["4096", "64K", "1M", "4M"]))
    return {name: chosen[name] for name in P.PARAM_NAMES if name in chosen}


# ---- the judges: each says (errno name or "ok", parameter named) of one set -----------------------
def errno_name(code: int) -> str:
    """The name the runner prints (Python calls EOPNOTSUPP by its alias ENOTSUP)."""
    return "EOPNOTSUPP" if code == errno.EOPNOTSUPP else errno.errorcode[code]


def controller_verdict(raw: dict[str, str], facts: P.TargetFacts | None) -> Verdict:
    """The controller: its values (normalize), then the point (check_point), through libplcore."""
    values, probs = P.normalize(raw, facts)
    probs = probs or P.check_point(values, facts)
    if not probs:
        return ("ok", "-")
    return (errno_name(probs[0].errno), probs[0].key)


class RunnerJudge:
    """One `pmemlab-run --check-batch` process: a set per line in, a verdict per line out."""

    def __init__(self, *target_args: str, runner: Path = RUNNER, prefix: tuple[str, ...] = (),
                 env: dict[str, str] | None = None) -> None:
        """prefix: a command the runner runs under (valgrind, which shows it another CPU)."""
        self.proc = subprocess.Popen([*prefix, str(runner), "--check-batch", *target_args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1, env=env)

    def __call__(self, raw: dict[str, str]) -> Verdict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(" ".join(f"{k}={v}" for k, v in raw.items()) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"pmemlab-run --check-batch ended (status {self.proc.poll()})"
        words = line.split(" ", 3)
        return ("ok", "-") if words[0] == "ok" else (words[0], words[1])

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


# ---- runnable sets: valid runs to execute, for the fuzz of the engine -------------------------------
# (tests/host/core/test_engine_fuzz.py through the guarded runner, tests/guest/test_fuzz.py through sysfs)
#
# Every parameter comes from the table (its range, multiple and names, libplcore.so): a value the
# table gains is drawn too. Three kinds of bound are the fuzz's own: what a run may cost
# (RUN_CAPS, and a count's work), sizes that must fit the target, and a few relations drawn more
# often than chance would (a fence_interval that divides access_size, a stride above it, per-dimm
# geometry), so that most sets are valid; the validator then judges each (RunnerJudge, or the
# module's `check`) and only valid sets run.
RUN_CAPS = {"duration_ms": 10, "warmup_ms": 10, "segment_ms": 8, "samples": 4096, "passes": 9,
            "interleave_ways": 8, "dimms_per_thread": 8}
# what a count run may cost: its bytes as if at 1 byte per ns, plus its delays
RUN_WORK_NS = 10_000_000
# access sizes around the engine's own limits: units, a line, four lines, the batch (16 KiB), its
# ceiling's buffer (32 KiB .. 2 MiB, a capped access), pieces that do not divide 2 MiB
ACCESS_AROUND = [8, 16, 32, 64, 128, 192, 256, 320, 4096, 4160, 16384, 16448, 32768, 65536, 1 << 20,
                 2 * MiB - 64, 2 * MiB, 2 * MiB + 64, 2112 * 1024, 3 * MiB, 4 * MiB, 6 * MiB]


def _table_int(draw: st.DrawFn, name: str, cap: int | None = None, lo: int | None = None) -> int:
    """A number the table allows for name, at most cap: its edges, powers of two around the range,
    or anywhere in it, rounded down to its multiple."""
    p = P.PARAMS[name]
    mult = p.multiple_of or 1
    low = max(p.lo or 0, lo or 0)
    high = p.hi if cap is None else min(p.hi or cap, cap)
    high = max(high // mult * mult, -(-low // mult) * mult)
    edges = [low, high] + [(1 << k) + d for k in range(3, 64) for d in (-mult, 0, mult) if low <= (1 << k) + d <= high]
    v = draw(st.one_of(st.sampled_from(edges), st.integers(low, high)))
    return max(-(-low // mult) * mult, min(high, v // mult * mult))


def _pick(draw: st.DrawFn, name: str) -> str:
    """An enum's name or a bool, from the table, its default more often than not."""
    p = P.PARAMS[name]
    choices = [str(c) for c in p.choices] if p.kind == "enum" else ["0", "1"]
    return str(p.default) if draw(st.integers(0, 2)) == 0 else draw(st.sampled_from(choices))


@st.composite
def runnable_sets(draw: st.DrawFn, m: Machine, widths: tuple[int, ...] = (8, 16, 32),
                  work_ns: int = RUN_WORK_NS) -> dict[str, str]:
    """A run's parameters as text (table order), meant to be valid and quick on a target of
    m.target_size bytes (a count run: work_ns of work, RUN_WORK_NS): judge it before running it."""
    v: dict[str, object] = {name: _pick(draw, name) for name in P.PARAM_NAMES
                            if P.PARAMS[name].kind in ("enum", "bool") and name != "width"}
    size = m.target_size
    lat = v["mode"] == "latency"
    ops = [o["name"] for o in P.plcore.schema()["ops"]]
    plain = [o for o in ops if o != "chase"]
    threads = draw(st.integers(1, min(m.online, P.PARAMS["threads"].hi or 1)))
    v["threads"] = threads
    if lat and draw(st.integers(0, 7)) == 0:
        v["op"] = "chase"
    else:
        v["op"] = ",".join(draw(st.lists(st.sampled_from(plain), min_size=1, max_size=3)))
    access = draw(st.one_of(st.sampled_from(ACCESS_AROUND), st.integers(1, 64).map(lambda k: 64 * k),
                            st.just(64 * MiB)))
    access = min(access, (P.PARAMS["access_size"].hi or access), size // 2)
    v["access_size"] = access
    v["width"] = draw(st.sampled_from([0] + [w for w in widths if w <= access]))
    v["read_pct"] = draw(st.sampled_from([0, 0, _table_int(draw, "read_pct"), 100]))
    pattern = str(v["pattern"])
    step = access if pattern in ("seq", "hotspot") else draw(st.sampled_from(
        [0, access, 2 * access, -(-access // 64) * 64 + 64, _table_int(draw, "stride", size // 4, lo=access)]))
    v["stride"] = step
    step = step or (access if pattern != "stride" else -(-access // 64) * 64)
    align = min(access, 64)
    # the window: most of the target, or a part of it
    v["window_offset"] = draw(st.sampled_from([0, 0, 4096, _table_int(draw, "window_offset", size // 2)]))
    room = size - int(v["window_offset"])
    v["working_set"] = draw(st.sampled_from([0, room, _table_int(draw, "working_set", room,
                                                                 lo=min(room, 2 * threads * (step + access)))]))
    region = (int(v["working_set"]) or room) // (threads if v["placement"] == "per-thread" else 1)
    v["hotspot_size"] = draw(st.sampled_from([P.PARAMS["hotspot_size"].default,
                                              _table_int(draw, "hotspot_size", max(region, 8), lo=access)]))
    passes = _table_int(draw, "passes", RUN_CAPS["passes"])
    v["passes"] = passes
    offsets = [align, 8 * align, _table_int(draw, "pass_offset", max(region // passes, 8))]
    v["pass_offset"] = 0 if passes == 1 or draw(st.booleans()) else draw(st.sampled_from(offsets)) // align * align
    # fences: a whole number of pieces most of the time (the ceiling's cap is not a multiple of them)
    pieces = [access // k for k in (1, 2, 3, 4, 16, 48, 1024) if access // k and access % k == 0
              and (access // k) % 64 == 0]
    v["fence_interval"] = draw(st.sampled_from([0, _table_int(draw, "fence_interval", 4 * access + 64)]
                                               + pieces + [2 * access]))
    # per-dimm: a granule the step divides, ways that fit the window
    ways = _table_int(draw, "interleave_ways", RUN_CAPS["interleave_ways"])
    gran = step * draw(st.integers(1, 4)) if step % 64 == 0 else 4096 // step * step if step <= 4096 else step
    gran = max(gran, P.PARAMS["interleave_gran"].lo or 64) // 64 * 64
    v["interleave_ways"], v["interleave_gran"] = ways, gran
    v["dimms_per_thread"] = draw(st.integers(1, ways))
    if v["placement"] == "per-dimm":
        v["window_offset"] = int(v["window_offset"]) // (ways * gran) * (ways * gran)
        v["pass_offset"] = int(v["pass_offset"]) // step * step
        if pattern == "hotspot":
            v["pattern"] = "seq"
        if "copy" in str(v["op"]) and draw(st.integers(0, 3)):
            v["placement"] = "global"
    if v["op"] == "chase":
        v["read_pct"], v["probe"], v["cold"], v["warm"] = 0, "0", "0", "0"
        if access != 4096:
            v["chase_page"] = "0"  # one line per page: slots of a page
    v["cpus"] = draw(st.sampled_from(["", "", ",".join(str(c) for c in range(threads))]))
    # what the run costs: a short window, or a count whose work is bounded
    v["segment_ms"] = _table_int(draw, "segment_ms", RUN_CAPS["segment_ms"])
    v["duration_ms"] = _table_int(draw, "duration_ms", RUN_CAPS["duration_ms"])
    v["warmup_ms"] = draw(st.sampled_from([0, _table_int(draw, "warmup_ms", RUN_CAPS["warmup_ms"])]))
    half_segment = int(v["segment_ms"]) * m.tsc_khz // 2
    delay = draw(st.sampled_from([0, 0, 0, 1, 100, 10_000, _table_int(draw, "delay_ticks", half_segment - 1)]))
    if v["op"] == "chase":
        delay = 0
    v["delay_ticks"] = delay
    per_access_ns = access + delay * 1_000_000 // m.tsc_khz + (access if v["cold"] == "1" else 0) + 100
    most = max(1, work_ns // per_access_ns)
    v["count"] = 0 if draw(st.booleans()) else _table_int(draw, "count", most, lo=1)
    v["samples"] = _table_int(draw, "samples", RUN_CAPS["samples"])
    v["seed"] = _table_int(draw, "seed")
    if v["cold"] == "1" and v["warm"] == "1":
        v[draw(st.sampled_from(["cold", "warm"]))] = "0"
    if v["probe"] == "1" and (lat or threads < 2):
        v["probe"] = "0"
    if v["prefetch"] != P.PARAMS["prefetch"].default and draw(st.integers(0, 7)):
        v["prefetch"] = str(P.PARAMS["prefetch"].default)
    return {name: str(v[name]) for name in P.PARAM_NAMES if name in v}


SAMPLE_NONE = (1 << 64) - 1  # a raw_samples slot its thread did not fill (core/pl_run.h)
CHASE = 256  # loads per chase sample: chase_batch's default (core/params.def)


def check_accounting(values: dict[str, str], out: str, samples: bytes) -> None:
    """The accounting of one run (the runner's output or the module's `result`, and its
    raw_samples): bytes = ops x access_size and reads + writes = ops on every line, a timed
    segment on every loader, a count run's exact count, one histogram entry per timed access (a
    chase sample per CHASE loads) and min(samples, entries) raw samples first in each latency
    thread's slice, the read_pct share of loads, ops x delay_ticks <= ticks (each timed access
    waits its delay inside the timed ticks: a warm-up access counted in breaks it), and the `all`
    line as the loaders' sums."""
    rows = parse_result_text(out)
    assert rows and rows[-1]["thread"] == "all", out
    threads, all_row = rows[:-1], rows[-1]
    assert len(threads) == int(values["threads"])
    access, count, delay = int(values["access_size"]), int(values["count"]), int(values["delay_ticks"])
    lat_threads = [r for r in threads if r["mode"] == "latency"]
    for r in rows:
        assert r["bytes"] == r["ops"] * access, r
        assert r["reads"] + r["writes"] == r["ops"], r
        # (a probe stops with its loaders, before its first timed segment if they are quicker)
        assert r["segments"] >= 1 or r["role"] == "probe", f"a timed run without a timed segment: {r}"
    for r in threads:
        loader = r["role"] != "probe"
        # a chase sample is the mean of CHASE loads (docs/userspace.md): its count is whole samples
        per_sample = CHASE if r["op"] == "chase" else 1
        if count and loader:
            want = -(-count // per_sample) * per_sample
            assert r["ops"] == want, f"thread {r['thread']}: {r['ops']} accesses of a count of {count}"
        if delay and loader:
            # each access waits delay ticks inside the segment: the timed ones fit in the timed ticks
            assert r["ops"] * delay <= r["ticks"], f"more accesses than the timed ticks hold: {r}"
        # a store-chase's hop reads and writes: a write, as a copy's access (engine.c)
        writes = r["op"] not in ("load", "ntload", "chase") or \
            (r["op"] == "chase" and values.get("chase_write", "none") == "store")
        # the probe is not mixed (worker.c): its writing op writes every access
        pct = (int(values["read_pct"]) if loader else 0) if writes else 100
        want = r["ops"] * pct / 100
        assert abs(r["reads"] - want) <= 1, f"read_pct {pct}: {r['reads']} reads of {r['ops']}"
        if r["mode"] == "latency":
            assert r["lat_n"] * per_sample == r["ops"], f"histogram {r['lat_n']} != timed accesses {r['ops']}"
    loaders = [r for r in threads if r["role"] != "probe"]
    for key in ("ops", "bytes", "reads", "writes"):
        assert all_row[key] == sum(r[key] for r in loaders), (key, all_row)
    per = int(values["samples"])
    if per and lat_threads:
        got = array("Q")
        got.frombytes(samples)
        assert len(got) == per * len(lat_threads), (len(got), per, len(lat_threads))
        for i, r in enumerate(lat_threads):
            mine = got[i * per:(i + 1) * per]
            filled = sum(1 for x in mine if x != SAMPLE_NONE)
            assert filled == min(per, r["lat_n"]), f"thread {r['thread']}: {filled} raw samples of {r['lat_n']}"
            assert all(x != SAMPLE_NONE for x in mine[:filled])
