"""Random run-parameter sets for the differential tests (tests/host/test_params_diff.py: runner
against controller; tests/guest/test_params_diff.py: module against runner against controller).

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
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from pmemlab import params as P

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
def value_texts(name: str, m: Machine, user_ops: bool = True) -> st.SearchStrategy[str]:
    """Text for one parameter's file: mostly a valid value, often at the edge of its range,
    sometimes junk; with user_ops, the names of the user backend's own ops too."""
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
                              + (["copy", "ntcopy,load", "chase"] if user_ops else []))
        return _weighted((6, one), (4, lists), (1, bad))
    # cpus
    good = ["", "0", "0-1", "1", "0,1", "1,0", "0-1:1/2"] if m.online > 1 else ["", "0"]
    return _weighted((6, st.sampled_from(good)),
                     (2, st.sampled_from(["1-0", "0-3", "2", "0-7:2/4", "8191", "8192", "0-", "a", "3"])))


CHANGE = 51  # of 256: a parameter is changed in one set in five


@st.composite
def param_sets(draw: st.DrawFn, m: Machine | None = None, user_ops: bool = True) -> dict[str, str]:
    """A run's parameters as text, in table order; most are left at their defaults. Without
    user_ops, no op only the user backend has (the module and the runner differ there)."""
    m = m or Machine()
    chosen: dict[str, str] = {}
    if draw(st.integers(0, 3)) == 0:
        chosen.update(draw(st.sampled_from(DRIFTED)))
    # one byte per parameter, drawn at once (a draw per parameter was most of the cost of a set):
    # below CHANGE the parameter gets a value; for threads, the next band keeps it within the CPUs
    dice = draw(st.binary(min_size=len(P.PARAM_NAMES), max_size=len(P.PARAM_NAMES)))
    for name, die in zip(P.PARAM_NAMES, dice):
        if die < CHANGE:
            chosen[name] = draw(value_texts(name, m, user_ops))
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

    def __init__(self, *target_args: str) -> None:
        self.proc = subprocess.Popen([str(RUNNER), "--check-batch", *target_args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)

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
