"""`pmemlab probe`: plan and run the measurements a device card rests on (pointer-chase latency
vs region size, refined where a knee is suspected; random-read bandwidth vs access size), save
them, infer the card (analysis/card.py) and draw a figure per inference. `--from DIR` infers
again from a probe's saved measurements without running anything. docs/card.md."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence


from pmemlab import exitcodes
from pmemlab import params as P
from pmemlab.analysis import CARD_NAME as _CARD_NAME, PROBE_CSV as _PROBE_CSV
from pmemlab.analysis.curves import CurvePoint
from pmemlab.lazy import lazy_module
from pmemlab.backends.spec import BackendSpec
from pmemlab.cli import backend as backends
from pmemlab.cli import curves as CU
from pmemlab.cli.oneliners.bed import Bed
from pmemlab.cli.args import positive_seconds
from pmemlab.cli.parser import command_parser
from pmemlab.config import one_point
from pmemlab.host.caches import CACHE_DIR, cpu_caches  # noqa: F401 (the probe's names)
from pmemlab.host.readall import read_all
from pmemlab.errors import BadInput, OutputError, ParamRefused, PmemlabError, UsageError
from pmemlab.output import dumps, print_json, text_table
from pmemlab.sweep import Bench, one_point_sweep

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from pmemlab.analysis import card as C
    from pmemlab.analysis.inference import Inference
else:  # imported on first use: `pmemlab --help` and the commands without tables stay light
    np = lazy_module("numpy")
    pd = lazy_module("pandas")
    C = lazy_module("pmemlab.analysis.card")

CSV_NAME = _PROBE_CSV
CARD_NAME = _CARD_NAME
MIN_SIZE = 4096
BEYOND = 8  # the chase reaches this factor beyond the largest cache (capped by the target's size)
CHASE_MS = 60
RANDREAD_MS = 100
RANDREAD_SIZES = tuple(2 ** k for k in range(3, 17))  # 8 B .. 64 KiB
RANDREAD_REPEATS = 3  # the median of each size enters the fits
RANDWRITE_OP = "ntstore"  # the op a persistent target's writes use; it writes the line without reading it
TAIL_SIZES = (256, 1024, 4096, 16384, 65536)  # hotspot sizes of the write tail (FAST'20 fig 3)
TAIL_COUNT = 20000  # timed writes per hotspot size and repeat
TAIL_REPEATS = 2
SLOT = 4096  # the one-line-per-page chase: one line in each 4 KiB slot (chase_page=1 access_size=4096)
RAW_BATCH = 64  # the read-after-write chase's batch: a chain has at least a batch of lines (4 KiB of 64 B)
PAGE_MIN = 16 * SLOT
PAGE_TOP = 64 << 20  # the page chase's largest region (capped at half the target): 16 Ki pages
PAGE_DRAM = "128M"  # the 4 KiB-page DRAM target it runs on (mapped at each run: small is quick)
SLOT_2M = 2 << 20  # the 2 MiB-page chase: one line in each 2 MiB slot (chase_page=1 access_size=2M)
PAGE2M_MIN = 2 * SLOT_2M  # its ladder: a few 2 MiB pages,
PAGE2M_DRAM = 2 << 30  # up to the whole 2 MiB-page DRAM target it runs on (dram_pages=2m): 1024 pages,
PAGE2M_SHARE = 4  # or 1/4 of the memory available now where that is less (page2m_size)
PAGE2M_PER_OCTAVE = 1  # a coarse ladder: 4 MiB-2 GiB in 10 runs
PREFETCH_REPEATS = 3
LOADED_POINTS = (3, 6)  # throttles per mix of the loaded-latency family (curves' measurement): as many as fit
LOADED_MS = 50  # each run of it
# shares of the budget: each stage stops at its share (measured from the probe's start, cumulatively);
# the chase levels and their refinement take what is left (docs/card.md)
SHARES = (("randread", 0.07), ("randread_par", 0.04), ("randwrite", 0.06), ("randwrite_par", 0.03), ("tail", 0.05),
          ("prefetch", 0.02), ("chase_grid", 0.20), ("chase_raw", 0.07), ("chase_page", 0.13), ("chase_page_2m", 0.04),
          ("loaded", 0.15))
PAR = "_par"  # the random-access curves again with par_threads() threads: the granularity is held against them
GRID_PASSES = 2  # the chase's first grid, measured this many times over
STABLE = 1.1  # knees within this factor of the previous round: stable
TCG = "qemu"  # systemd-detect-virt names TCG 'qemu' (KVM: 'kvm'); machine.hypervisor_info
CSV_COLUMNS = ("curve", "round", "size", "value", "lat_ns_p50", "lat_ns_mean", "bw_gbps", "status", "error")


class NoChase(PmemlabError):
    """The backend cannot pointer-chase (a module without op=chase): exit 1."""


def add_parser(sub: Any, name: str) -> None:
    p = command_parser(sub, name, "measure and infer a device card: cache levels, access granularity, interleave",
                       ["pmemlab probe --target dram --budget 2m -o card-dram",
                        "pmemlab probe --backend kernel --budget 5m -o card-pmem",
                        "pmemlab probe --from card-dram --json"],
                       description="Plans its own measurements (chase latency vs region size, refined where a "
                                   "knee is suspected; random-read bandwidth vs access size), saves them in DIR, "
                                   "and prints the card: every inference with its confidence, evidence and "
                                   "method, or 'uncertain'. docs/card.md.")
    p.add_argument("--backend", choices=("user", "kernel"), default="user",
                   help="user (pmemlab-run, default) or kernel (pmemlab.ko: needs its op=chase)")
    p.add_argument("--target", help="user backend: dram[:NODE] (default dram), a DAX file or /dev/daxX.Y; "
                                    "kernel: refuse unless the module's target is this")
    p.add_argument("--budget", type=positive_seconds, default=300.0, metavar="T",
                   help="time to spend measuring (90s, 5m, 1h; default 5m): stops earlier when stable")
    p.add_argument("--json", action="store_true", help="print the card as one JSON document")
    p.add_argument("-o", "--output", metavar="DIR", help="where the measurements, card.json and figures go "
                                                         "(default probe-TARGET; with --from: not written)")
    p.add_argument("--from", dest="source", metavar="DIR", help="infer again from DIR's saved measurements; no run")


# --------------------------------------------------------------------------
# the plan
# --------------------------------------------------------------------------
def initial_grid(lo: int, hi: int, per_octave: int = 2) -> list[int]:
    """Region sizes lo..hi, `per_octave` a octave, rounded to 64 B lines."""
    n = int(math.floor(math.log2(hi / lo) * per_octave))
    return sorted({int(round(lo * 2 ** (i / per_octave) / 64)) * 64 for i in range(n + 1)} | {hi // 64 * 64})


def refine(sizes: Sequence[int], fit_knees: Sequence[Mapping[str, Any]], per_octave: int = 8) -> list[int]:
    """New sizes between each knee's last size below and first above (and half an octave beyond
    each), `per_octave` a octave, not yet measured."""
    have = set(sizes)
    new: set[int] = set()
    for k in fit_knees:
        lo, hi = k["last_below"] / 2 ** 0.5, k["first_above"] * 2 ** 0.5
        x = math.log2(lo)
        while x <= math.log2(hi):
            s = int(round(2 ** x / 64)) * 64
            if s >= 64 and not any(abs(s - h) <= h * 0.01 for h in have | new):
                new.add(s)
            x += 1 / per_octave
    return sorted(new)


# --------------------------------------------------------------------------
# measuring
# --------------------------------------------------------------------------
@dataclass
class Page2M:
    """The target the 2 MiB-page chase runs on. Its size is known beforehand (the ladder is
    planned on it); a target of its own (the user backend's DRAM, dram_pages=2m) is opened only
    when the stage begins (`open`): reading its facts maps and faults all of it, seconds and
    compaction a probe whose budget ends before the stage must not pay."""

    size: int = 0  # the largest region its ladder may reach; 0: none
    why: str = "no target of 2 MiB pages given to the probe"  # why it cannot run ('': it can)
    bench: Bench | None = None  # the target, once open
    opener: Callable[[], Bench] | None = None  # opens the target of its own (once)

    def open(self) -> Bench | None:
        """The target, opened now where it is not yet; None where it cannot run (`why` says so:
        a target of its own the kernel gave no transparent huge pages)."""
        if self.bench is None and self.opener is not None and not self.why:
            opener, self.opener = self.opener, None
            b = opener()
            why = page2m_target(b.conditions)
            if why:
                self.why = why + " (dram_pages=2m: transparent huge pages not given)"
            else:
                self.bench = b
        return None if self.why else self.bench


class Prober:
    """Runs one point at a time on the backend and keeps the rows (and, for the write tail, the
    latency histograms as rows of curve `tail_hist`)."""

    def __init__(self, bench: Bench, deadline: float, out: Any, page_bench: Bench | None = None,
                 page2m: Page2M | None = None) -> None:
        self.bench = bench
        self.page_bench = page_bench or bench  # the one-line-per-page chase: a target of 4 KiB pages
        self.page2m = page2m or Page2M()  # the one-line-per-2-MiB-page chase: a target of 2 MiB pages
        self.deadline = deadline
        self.rows: list[dict[str, Any]] = []
        self.out = out
        self.skipped: list[tuple[str, str]] = []  # (inference, why) not measured
        self.run_s: list[float] = []  # wall time of each run beyond its own length (start, setup, reading)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def run(self, curve: str, rnd: int, size: int, raw: dict[str, str], bench: Bench | None = None,
            keep_hist: bool = False) -> dict[str, Any]:
        bench = bench or self.bench
        values, problems = P.normalize(raw)
        if problems:
            raise BadInput(f"probe: the planned point {raw} is refused: {problems}", "report this as a bug")
        pt = one_point(values, raw, bench.facts, bench.discovered)
        sweep, rec = one_point_sweep(pt, bench, timeout_s=60.0, run_conditions=False)
        t0 = time.monotonic()
        try:
            sweep.run()
        except ParamRefused as exc:
            raise NoChase(f"probe: the backend refused {curve} ({exc.cause})",
                          "use --backend user, or a pmemlab.ko that has op=chase") from None
        row = dict(rec.rows[-1])
        if str(row.get("status")) == "refused":
            raise NoChase(f"probe: the backend refused {curve} ({row.get('error')})",
                          "use --backend user, or a pmemlab.ko that has op=chase")
        self.run_s.append(max(0.0, time.monotonic() - t0 - float(raw.get("duration_ms", 0)) / 1000))
        lat = row.get("lat_ns_p50")
        bw = row.get("bw_gbps")
        value = bw if curve.startswith(("randread", "randwrite")) else lat
        out = {"curve": curve, "round": rnd, "size": size, "value": value, **row}
        self.rows.append(out)
        if keep_hist:
            for h in rec.hist:
                if str(h.get("thread")) in ("0", "all") and int(h.get("count") or 0) > 0:
                    self.rows.append({"curve": "tail_hist", "round": rnd, "size": size, "value": int(h["count"]),
                                      "status": "ok", "lo_ns": float(h["lo_ns"]), "hi_ns": float(h["hi_ns"])})
        return out

    def chase(self, rnd: int, size: int) -> dict[str, Any]:
        return self.run("chase", rnd, size, {"mode": "latency", "op": "chase", "working_set": str(size),
                                             "duration_ms": str(CHASE_MS)})

    def chase_raw(self, rnd: int, size: int) -> dict[str, Any]:
        """The read-after-write chase: each round movnti to every line of the chain, mfence, then
        the chase (chase_write=raw)."""
        return self.run("chase_raw", rnd, size, {"mode": "latency", "op": "chase", "chase_write": "raw",
                                                 "chase_batch": str(RAW_BATCH), "working_set": str(size),
                                                 "duration_ms": str(CHASE_MS)})

    def chase_page(self, rnd: int, size: int) -> dict[str, Any]:
        return self.run("chase_page", rnd, size, {"mode": "latency", "op": "chase", "chase_page": "1",
                                                  "access_size": str(SLOT), "working_set": str(size),
                                                  "duration_ms": str(CHASE_MS)}, bench=self.page_bench)

    def chase_page_2m(self, rnd: int, size: int) -> dict[str, Any]:
        return self.run("chase_page_2m", rnd, size, {"mode": "latency", "op": "chase", "chase_page": "1",
                                                     "access_size": str(SLOT_2M), "working_set": str(size),
                                                     "duration_ms": str(CHASE_MS)}, bench=self.page2m.open())

    def randread(self, size: int, ws: int, threads: int = 1) -> dict[str, Any]:
        return self.random_access("randread", "load", size, ws, threads)

    def randwrite(self, size: int, ws: int, threads: int = 1) -> dict[str, Any]:
        return self.random_access("randwrite", RANDWRITE_OP, size, ws, threads)

    def random_access(self, curve: str, op: str, size: int, ws: int, threads: int) -> dict[str, Any]:
        """Random accesses of `size` bytes over `ws` (each thread its share of it): curve, or
        curve_par with more than one thread."""
        return self.run(curve + (PAR if threads > 1 else ""), 0, size,
                        {"mode": "bandwidth", "op": op, "pattern": "rand", "access_size": str(size),
                         "working_set": str(ws), "threads": str(threads), "placement": "per-thread",
                         "duration_ms": str(RANDREAD_MS)})

    def tail(self, rnd: int, hotspot: int, ws: int) -> dict[str, Any]:
        return self.run("tail", rnd, hotspot, {"mode": "latency", "op": RANDWRITE_OP, "pattern": "hotspot",
                                               "hotspot_size": str(hotspot), "access_size": "64", "threads": "1",
                                               "working_set": str(ws), "count": str(TAIL_COUNT)}, keep_hist=True)

    def load_latency(self, pattern: str, ws: int) -> dict[str, Any]:
        return self.run(f"prefetch_{pattern}", 0, ws, {"mode": "latency", "op": "load", "pattern": pattern,
                                                        "access_size": "64", "threads": "1", "working_set": str(ws),
                                                        "duration_ms": str(CHASE_MS)})


def _points(rows: Sequence[Mapping[str, Any]], curve: str) -> list[tuple[float, float]]:
    out = []
    for r in rows:
        v = r.get("value")
        if r.get("curve") == curve and str(r.get("status")) == "ok" and v is not None and not pd.isna(v):
            out.append((float(r["size"]), float(v)))
    return out


def page_bytes_of(cond: Mapping[str, Any]) -> int:
    """The target's page size from its run conditions or a run's row (target_page_size), 0 where
    unsaid (the module says 0 where it could not look its mapping up)."""
    v = _num(cond.get("target_page_size"))
    return 0 if math.isnan(v) else int(v)


def page2m_target(cond: Mapping[str, Any]) -> str:
    """Why the 2 MiB-page chase cannot run on a target of these run conditions ('' : it can)."""
    ps = page_bytes_of(cond)
    if ps == SLOT_2M:
        return ""
    pages = cond.get("target_pages")
    return (f"2 MiB pages: the target's pages are {ps or 'unknown'}"
            + (" B" if ps else "") + (f" (target_pages {pages})" if pages not in (None, "") else "")
            + ", not 2 MiB")


def page2m_ladder(size: int) -> list[int]:
    """The 2 MiB-page chase's regions, PAGE2M_PER_OCTAVE an octave, multiples of 2 MiB from
    PAGE2M_MIN up to `size` (Page2M.size: the whole of its own DRAM target, half of the probe's
    target where it runs on that, as the other chases); [] under two rungs."""
    top = size // SLOT_2M * SLOT_2M
    if top < 2 * PAGE2M_MIN:
        return []
    return sorted({max(PAGE2M_MIN, s // SLOT_2M * SLOT_2M) for s in initial_grid(PAGE2M_MIN, top, PAGE2M_PER_OCTAVE)})


def _sweep_sizes(prober: Prober, sizes: Sequence[Any], repeats: int, until: float, one: Any) -> None:
    """Rounds over every size (a burst of noise hits one repeat of several): the first round
    whole (an inference needs its sizes) while the budget lasts, the others until `until`."""
    for i in range(repeats):
        for a in sizes:
            if prober.left() <= 0 or (i and time.monotonic() > until):
                return
            one(a)


def par_threads() -> int:
    """The threads the random-access curves are measured with again (the granularity is held
    against them): every online CPU up to 4, as the loaded-latency stage; 1: not measured."""
    return min(4, backends.online_cpus())


def loaded_points_fit(share_s: float, run_s: float) -> int:
    """How many throttles a mix of the loaded-latency family can have in `share_s` seconds, each
    run taking 2 run_s + LOADED_MS: two mixes, at least two repeats a point, two unloaded runs;
    0 when fewer than LOADED_POINTS[0] fit."""
    n = int((share_s / (2 * run_s + LOADED_MS / 1000) - 2) // 4)  # its runs have two threads: twice the setup
    return 0 if n < LOADED_POINTS[0] else min(n, LOADED_POINTS[1])


def measure_loaded(prober: Prober, ws: int, points: int) -> None:
    """A short loaded-latency family by `pmemlab curves`' own measurement (cli/curves: unloaded,
    _measure, points_of): 100 % and 0 % reads, LOADED_POINTS throttles each; its points are kept as
    rows of curve `loaded` (size: the delay in ticks, value: the probe's p50) and `unloaded`."""
    bench = prober.bench
    bed = Bed(kind=bench.backend.kind, benches=[bench])
    threads = max(2, min(4, backends.online_cpus()))
    args = argparse.Namespace(timeout=60.0, repeats=1, max_repeats=2, ci_target=0.1, json=True,
                              points=points, max_delay=1 << 16, mixes=(100, 0), write_op=RANDWRITE_OP,
                              duration_ms=LOADED_MS)
    setup = CU.Setup(threads=threads, working_set=ws, probe_op=CU.LATENCY_OP, write_op=RANDWRITE_OP,
                     base={"mode": "bandwidth", "probe": 1, "threads": threads, "pattern": "rand",
                           "access_size": 64, "placement": "per-thread", "working_set": ws,
                           "duration_ms": LOADED_MS})
    setup.probe_op = CU.choose_probe(setup, bed)
    alone = CU.unloaded(setup, bed, args)
    rows, hist, _ = CU._measure(setup, bed, args)
    for p in CU.points_of(rows, hist):
        prober.rows.append({"curve": "loaded", "round": 0, "size": p.delay_ticks, "value": p.p50_ns,
                            "status": "ok", "bw_gbps": p.bw_gbps, "read_pct": p.mix, "bw_std": p.bw_std,
                            "read_share": p.read_share, "lat_ns_p50": p.p50_ns, "lat_ns_p90": p.p90_ns,
                            "lat_ns_p99": p.p99_ns, "lat_ns_p999": p.p999_ns, "lat_ns_max": p.max_ns,
                            "p50_std": p.p50_std, "repeat": p.repeats, "op": setup.probe_op})
    if setup.probe_op in alone:
        prober.rows.append({"curve": "unloaded", "round": 0, "size": 64, "value": alone[setup.probe_op],
                            "status": "ok", "op": setup.probe_op})


def _stage(prober: Prober, name: str, fn: Any) -> None:
    """A stage whose backend cannot run it (a module without the op, a target too small) leaves
    its line out, the reason in the card's undecided list; the probe goes on."""
    try:
        fn()
    except NoChase as exc:
        prober.skipped.append((name, exc.cause))
    except PmemlabError as exc:
        if isinstance(exc, (BadInput,)):
            raise
        prober.skipped.append((name, exc.cause))


def measure_2m(prober: Prober, until: float) -> None:
    """The 2 MiB-page chase over its ladder: its target opened here, where the budget reaches the
    stage (Page2M); not measured, and why, where it has no target or one under two rungs."""
    ladder = page2m_ladder(prober.page2m.size)
    if prober.page2m.why or not ladder:
        prober.skipped.append(("tlb_reach_2m", prober.page2m.why or "its target is smaller than "
                                                                    f"{2 * PAGE2M_MIN >> 20} MiB"))
        return
    if prober.left() <= 0:
        return
    if prober.page2m.open() is None:
        prober.skipped.append(("tlb_reach_2m", prober.page2m.why))
        return
    _sweep_sizes(prober, ladder, 1, until, lambda s: prober.chase_page_2m(0, s))


def measure(prober: Prober, target_size: int, caches: Sequence[Mapping[str, Any]], budget_s: float) -> str:
    """The plan, each stage inside its share of the budget (SHARES, cumulative from the start):
    random reads and writes over the access sizes (three rounds), the write tail per hotspot
    size, sequential vs random loads past the last cache, the chase on a 2-a-octave grid (its
    first pass whole, GRID_PASSES in its share), the read-after-write chase on the same grid, the
    one-line-per-page chase on a 2-a-octave
    grid, a short loaded-latency family (as many throttles as fit its share); then rounds refining
    the chase around each knee (and measuring each knee's two neighbours again) until two rounds
    agree or the budget is spent. Returns why it stopped: stable | budget."""
    largest = max((int(c["size_bytes"]) for c in caches), default=32 << 20)
    top = max(MIN_SIZE * 4, min(largest * BEYOND, target_size // 2))
    ws = top
    t0 = time.monotonic()
    ends: dict[str, float] = {}
    acc = 0.0
    for name, share in SHARES:
        acc += share
        ends[name] = t0 + acc * budget_s
    par = par_threads()
    _sweep_sizes(prober, RANDREAD_SIZES, RANDREAD_REPEATS, ends["randread"], lambda a: prober.randread(a, ws))
    if par > 1:
        _sweep_sizes(prober, RANDREAD_SIZES, RANDREAD_REPEATS, ends["randread_par"],
                     lambda a: prober.randread(a, ws, par))
    grid = initial_grid(MIN_SIZE, top)
    _stage(prober, "write_granularity", lambda: _sweep_sizes(
        prober, RANDREAD_SIZES, RANDREAD_REPEATS, ends["randwrite"], lambda a: prober.randwrite(a, ws)))
    if par > 1:
        _stage(prober, "write_granularity", lambda: _sweep_sizes(
            prober, RANDREAD_SIZES, RANDREAD_REPEATS, ends["randwrite_par"], lambda a: prober.randwrite(a, ws, par)))
    tail_ws = max(TAIL_SIZES) * 4
    _stage(prober, "write_tail", lambda: _sweep_sizes(
        prober, TAIL_SIZES, TAIL_REPEATS, ends["tail"], lambda h: prober.tail(0, h, tail_ws)))
    past = max(MIN_SIZE * 4, min(largest * 4, target_size // 2)) // 64 * 64
    _stage(prober, "prefetch", lambda: _sweep_sizes(
        prober, ("seq", "rand"), PREFETCH_REPEATS, ends["prefetch"], lambda pat: prober.load_latency(pat, past)))
    # the chase's grid: its first pass whole (the levels rest on it), more passes inside its share
    for i in range(GRID_PASSES):
        for s in grid:
            if prober.left() <= 0:
                return "budget"
            if i and time.monotonic() > ends["chase_grid"]:
                break
            prober.chase(i, s)
    _stage(prober, "write_levels", lambda: _sweep_sizes(
        prober, grid, 1, ends["chase_raw"], lambda s: prober.chase_raw(0, s)))
    page_top = max(PAGE_MIN * 4, min(PAGE_TOP, target_size // 2))
    _stage(prober, "tlb_reach", lambda: _sweep_sizes(
        prober, initial_grid(PAGE_MIN, page_top), 1, ends["chase_page"], lambda s: prober.chase_page(0, s)))
    _stage(prober, "tlb_reach_2m", lambda: measure_2m(prober, ends["chase_page_2m"]))
    # its share, or half of what is left where the stages before it overran theirs
    loaded_s = max(min(ends["loaded"], prober.deadline) - time.monotonic(), prober.left() / 2)
    run_s = float(np.median(prober.run_s)) if prober.run_s else 0.5
    points = loaded_points_fit(loaded_s, run_s)
    if points:
        _stage(prober, "loaded_latency", lambda: measure_loaded(prober, min(ws, 256 << 20), points))
    else:
        prober.skipped.append(("loaded_latency", f"{max(loaded_s, 0):.0f} s left of its share: too short for "
                                                 f"{LOADED_POINTS[0]} loads a mix (a larger --budget)"))
    prev: list[float] | None = None
    rnd = 0
    while prober.left() > 0:
        rnd += 1
        inf = C.infer(_points(prober.rows, "chase"), [])[0]
        knees = inf.detail.get("knees", [])
        caps = [k["capacity_bytes"] for k in knees]
        if prev is not None and len(prev) == len(caps) and all(
                1 / STABLE <= a / b <= STABLE for a, b in zip(caps, prev)):
            return "stable"
        prev = caps
        sizes = sorted({int(s) for s, _ in _points(prober.rows, "chase")})
        new = refine(sizes, knees) if knees else initial_grid(MIN_SIZE, top, 4)
        new = [s for s in new if s not in sizes and s <= top]
        if not new:  # nothing left to add: repeat every point once more
            new = sizes
        else:  # and measure again the two sizes either side of each knee: they place it
            new += sorted({int(k[e]) for k in knees for e in ("last_below", "first_above")})
        for s in new:
            if prober.left() <= 0:
                return "budget"
            prober.chase(GRID_PASSES - 1 + rnd, s)
    return "budget"


# --------------------------------------------------------------------------
# files, figures, the card
# --------------------------------------------------------------------------
def save_rows(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    frame = pd.DataFrame(list(rows))
    first = [c for c in CSV_COLUMNS if c in frame.columns]
    frame = frame[first + [c for c in frame.columns if c not in first]]
    frame.to_csv(path, index=False)


def load_rows(directory: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    csv, card = directory / CSV_NAME, directory / CARD_NAME
    if not csv.is_file():
        raise BadInput(f"probe --from {directory}: no {CSV_NAME} there",
                       "give the directory a `pmemlab probe -o DIR` wrote")
    try:
        frame = pd.read_csv(csv, float_precision="round_trip")
    except (ValueError, pd.errors.ParserError) as exc:
        raise BadInput(f"probe --from {csv}: not a CSV ({exc})", "give the directory a `pmemlab probe -o DIR` wrote") from None
    missing = [c for c in ("curve", "size", "value", "status") if c not in frame.columns]
    if missing:
        raise BadInput(f"probe --from {csv}: not a probe's measurements (no {', '.join(missing)} column)",
                       "give the directory a `pmemlab probe -o DIR` wrote")
    meta: dict[str, Any] = {}
    if card.is_file():
        try:
            meta = json.loads(card.read_text())
        except ValueError:
            meta = {}
    rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in frame.to_dict("records")]
    return rows, meta


def _declared(cond: Mapping[str, Any]) -> tuple[int | None, int | None]:
    def num(v: Any) -> int | None:
        try:
            return int(v) if v is not None and not (isinstance(v, float) and math.isnan(v)) else None
        except (TypeError, ValueError):
            return None
    return num(cond.get("target_interleave_gran")), num(cond.get("target_interleave_ways"))


def is_emulated(cond: Mapping[str, Any]) -> bool:
    return str(cond.get("hypervisor") or "").lower() == TCG


def _num(v: Any) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return math.nan
    return f


def _ok(rows: Sequence[Mapping[str, Any]], curve: str) -> list[Mapping[str, Any]]:
    return [r for r in rows if r.get("curve") == curve and str(r.get("status")) == "ok"]


def tail_hists(rows: Sequence[Mapping[str, Any]]) -> dict[int, list[tuple[float, float, int]]] | None:
    """The write tail's histograms by hotspot size (the `tail_hist` rows); None: not measured."""
    hist = _ok(rows, "tail_hist")
    if not hist and not _ok(rows, "tail"):
        return None
    out: dict[int, list[tuple[float, float, int]]] = {}
    for r in hist:
        out.setdefault(int(r["size"]), []).append((_num(r["lo_ns"]), _num(r["hi_ns"]), int(_num(r["value"]))))
    return out


def loaded_points(rows: Sequence[Mapping[str, Any]]) -> tuple[list[Any], float | None] | None:
    """The loaded-latency family's points (analysis.curves.CurvePoint) and the unloaded latency
    from the `loaded` and `unloaded` rows; None: not measured."""
    pts = _ok(rows, "loaded")
    if not pts:
        return None
    out = [CurvePoint(mix=int(_num(r["read_pct"])), delay_ticks=int(_num(r["size"])), bw_gbps=_num(r["bw_gbps"]),
                      bw_std=_num(r.get("bw_std")) if not math.isnan(_num(r.get("bw_std"))) else 0.0,
                      read_share=_num(r.get("read_share")), p50_ns=_num(r["value"]), p90_ns=_num(r.get("lat_ns_p90")),
                      p99_ns=_num(r.get("lat_ns_p99")), p999_ns=_num(r.get("lat_ns_p999")),
                      max_ns=_num(r.get("lat_ns_max")), repeats=int(_num(r.get("repeat")) or 1))
           for r in pts]
    alone = [_num(r["value"]) for r in _ok(rows, "unloaded")]
    return out, (alone[0] if alone and not math.isnan(alone[0]) else None)


def _prefetch(rows: Sequence[Mapping[str, Any]]) -> tuple[list[float], list[float], int | None] | None:
    seq, rnd = _points(rows, "prefetch_seq"), _points(rows, "prefetch_rand")
    if not seq and not rnd:
        return None
    sizes = [int(s) for s, _ in seq + rnd]
    return [v for _, v in seq], [v for _, v in rnd], (sizes[0] if sizes else None)


def _page_bytes(rows: Sequence[Mapping[str, Any]]) -> int:
    """The page size the one-line-per-page chase ran on (its target's, page_bytes_of of each run),
    4096 where unsaid or its runs disagree."""
    sizes = {page_bytes_of(r) for r in _ok(rows, "chase_page")} - {0}
    return sizes.pop() if len(sizes) == 1 else 4096


def points_2m(rows: Sequence[Mapping[str, Any]]) -> tuple[list[tuple[float, float]] | None, str]:
    """The 2 MiB-page chase's points from the runs whose target had 2 MiB pages (a THP target
    the kernel gave 4 KiB pages in part reports 4096: its runs do not count); None and why where
    there are none."""
    runs = _ok(rows, "chase_page_2m")
    if not runs:
        return None, "no measurement of it in this probe's data"
    kept = [r for r in runs if page_bytes_of(r) == SLOT_2M]
    if not kept:
        r = runs[0]
        huge = _num(r.get("target_huge_pct"))
        return None, (page2m_target(r) + ("" if math.isnan(huge) else f", {huge:.0f} % of it in huge pages")
                      + " when it was chased")
    return _points(kept, "chase_page_2m"), ""


def _skipped_of(meta: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The stages a saved card says were not measured (its undecided `not measured: ...`)."""
    out = []
    for u in meta.get("undecided", []) or []:
        why = str(u.get("reason", ""))
        if why.startswith("not measured: "):
            out.append((str(u.get("name")), why[len("not measured: "):]))
    return out


def _parallel(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The random-access curves measured with more threads (curve_par rows; a probe from before
    they were measured has none), and their thread count."""
    threads = {int(r["threads"]) for r in rows if str(r.get("curve", "")).endswith(PAR) and r.get("threads")}
    if not threads:
        return {}
    return {"parallel": {c: _points(rows, c + PAR) for c in ("randread", "randwrite")
                         if any(r.get("curve") == c + PAR for r in rows)}, "par_threads": max(threads)}


def build_card(rows: Sequence[Mapping[str, Any]], cond: Mapping[str, Any], *, target: str, backend: str,
               caches: Sequence[Mapping[str, Any]], budget_s: float | None, wall_s: float | None,
               stopped: str, skipped: Sequence[tuple[str, str]] = ()) -> tuple[dict[str, Any], list[Inference]]:
    emulated = is_emulated(cond)
    gran, ways = _declared(cond)
    curves = {str(r.get("curve")) for r in rows}
    loaded = loaded_points(rows)
    page = _points(rows, "chase_page")
    page2m, no_2m = points_2m(rows)
    infs = C.infer(_points(rows, "chase"), _points(rows, "randread"), gran, ways, emulated,
                   randwrite=_points(rows, "randwrite") if "randwrite" in curves else None,
                   chase_page=page if "chase_page" in curves else None, chase_page_2m=page2m,
                   chase_raw=_points(rows, "chase_raw") if "chase_raw" in curves else None,
                   tail_hists=tail_hists(rows), loaded=loaded[0] if loaded else None,
                   unloaded_ns=loaded[1] if loaded else None, prefetch=_prefetch(rows),
                   page_bytes=_page_bytes(rows), **_parallel(rows))
    C.hold_levels_against_cpu(infs[0], caches, str(cond.get("hypervisor") or ""))
    have = {i.name for i in infs}
    gone: list[tuple[str, str]] = [(n, why) for n, why in skipped if n not in have]
    named = {n for n, _ in gone}
    for name in ("write_granularity", "write_levels", "tlb_reach", "write_tail", "loaded_latency", "prefetch"):
        if name not in have and name not in named:
            gone.append((name, "no measurement of it in this probe's data"))
    if "tlb_reach_2m" not in have and "tlb_reach_2m" not in named:
        gone.append(("tlb_reach_2m", no_2m))
    if "loaded_latency" not in have and "rw_asymmetry" not in named:
        gone.append(("rw_asymmetry", "it is read from the loaded-latency family, not measured"))
    doc = C.card_doc(infs, cond, target=target, backend=backend, emulated=emulated, cpu_caches=caches,
                     budget_s=budget_s, wall_s=wall_s, stopped=stopped, not_measured=gone)
    doc["shares"] = {n: f for n, f in SHARES}
    return doc, infs


def _draw_one(ax: Any, inf: Mapping[str, Any], doc: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> None:
    """One inference's figure: its measured points (grey: every repeat), the points it rests on,
    and what it found."""
    name, ev, det = inf["name"], inf["evidence"], inf.get("detail", {})
    if name in ("levels", "tlb_reach", "tlb_reach_2m", "write_levels"):
        pts = (points_2m(rows)[0] or [] if name == "tlb_reach_2m" else
               _points(rows, {"levels": "chase", "tlb_reach": "chase_page", "write_levels": "chase_raw"}[name]))
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=10, color="0.6", label="measured (every repeat)")
        if name == "write_levels":  # the read chase beside it: a knee only this curve has is the writes'
            rd = sorted(C.lows(_points(rows, "chase")))
            ax.plot([p[0] for p in rd], [p[1] for p in rd], "--", color="0.45", lw=1, label="read chase (its lows)")
        ax.plot([e["size_bytes"] for e in ev], [e["latency_ns"] for e in ev], "o-", ms=4, color="C0",
                label="points used (medians)")
        knees = det.get("tlb_knees", []) if name.startswith("tlb_reach") else det.get("knees", [])
        for k in knees:
            ax.axvline(k["capacity_bytes"], color="C3", lw=1.2)
            ax.annotate(f"{C.size_text(k['capacity_bytes'])}\n(conf {k['confidence']:.2f})",
                        (k["capacity_bytes"], ax.get_ylim()[1]), fontsize=7, color="C3", va="top")
        for k in det.get("cache_knees", []):
            ax.axvline(k["capacity_bytes"], color="0.4", lw=1, ls="--")
        for lv in det.get("levels", []):
            ax.hlines(lv["latency_ns"], lv["from_bytes"], lv["to_bytes"], color="C2", lw=2)
        if name == "levels":
            for c in doc.get("cpu_caches", []):
                ax.axvline(c["size_bytes"], color="0.3", ls=":", lw=1)
            ax.set_xlabel("region size (B); dotted: caches the CPU reports")
        elif name == "write_levels":
            ax.set_xlabel("region size (B), each line written (movnti, mfence) before it is chased")
        else:
            ax.set_xlabel(f"region size (B), one line per {C.size_text(det.get('slot_bytes', SLOT))} page; "
                          "red: TLB knees, dashed: caches (footprint)")
        ax.set_ylabel("chase latency p50 (ns)")
        ax.set_xscale("log", base=2)
    elif name in ("read_granularity", "write_granularity", "interleave"):
        curve = "randwrite" if name == "write_granularity" else "randread"
        ykey = "bw_gbps" if name == "interleave" else "ops_per_s"
        pts = _points(rows, curve)
        if ykey == "ops_per_s":
            pts = [(a, b * 1e9 / a) for a, b in pts]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=10, color="0.6", label="measured (every repeat)")
        for n, color in sorted({(int(e.get("threads", 1)), "C0" if int(e.get("threads", 1)) == 1 else "C1")
                                for e in ev}):
            used = [e for e in ev if int(e.get("threads", 1)) == n]
            ax.plot([e["access_size"] for e in used], [e[ykey] for e in used], "o-", ms=4, color=color,
                    label=f"points used (medians), {n} thread{'s' if n > 1 else ''}")
        brk = det.get("break_bytes") or det.get("saturation_bytes")
        if brk:
            word = "break" if name == "interleave" else "unit"
            ax.axvline(brk, color="C3", lw=1.2, label=f"{word} {brk:.0f} B")
        for thr, b in (det.get("breaks_by_threads") or {}).items():
            if thr != "1" and b:
                ax.axvline(b, color="C1", lw=1.2, ls="--", label=f"unit with {thr} threads {b:.0f} B")
        op = RANDWRITE_OP if curve == "randwrite" else "load"
        ax.set_xlabel(f"random access size (B), op {op}")
        ax.set_ylabel("operations/s" if ykey == "ops_per_s" else "bandwidth (GB/s)")
        ax.set_xscale("log", base=2)
    elif name == "write_tail":
        sz = det.get("sizes", [])
        xs = [p["hotspot_bytes"] for p in sz]
        ax.plot(xs, [p["p50_ns"] for p in sz], "o-", color="C0", label="p50")
        ax.plot(xs, [p["p999_ns"] for p in sz], "s--", color="C3", label="p99.9")
        ax2 = ax.twinx()
        ax2.plot(xs, [max(p["frac_above_k"], 1e-7) for p in sz], "^:", color="C2",
                 label=f"fraction > {det.get('k_median', 4):g}x median")
        ax2.set_yscale("log")
        ax2.set_ylabel("fraction of slow writes", color="C2")
        ax2.legend(fontsize=7, loc="lower right")
        ax.set_xlabel(f"hotspot size (B), {RANDWRITE_OP} 64 B")
        ax.set_ylabel("write latency (ns)")
        ax.set_xscale("log", base=2)
    elif name in ("loaded_latency", "rw_asymmetry"):
        for mix, colour in ((100, "C0"), (0, "C3")):
            e = [x for x in ev if x["mix_pct"] == mix]
            ax.plot([x["bw_gbps"] for x in e], [x["p50_ns"] for x in e], "o-", color=colour,
                    label=f"{mix} % reads: p50")
        v = inf.get("value")
        if name == "loaded_latency" and isinstance(v, dict):
            for f in (50, 80, 95):
                y = v.get(f"p50_at_{f}pct_ns")
                if y is not None:
                    ax.scatter([v["peak_read_gbps"] * f / 100], [y], marker="x", s=40, color="k", zorder=3)
            if v.get("unloaded_ns"):
                ax.axhline(v["unloaded_ns"], color="0.4", ls=":", lw=1, label="unloaded")
        ax.set_xlabel("bandwidth of the load threads (GB/s)")
        ax.set_ylabel("probe latency p50 (ns)")
    elif name == "prefetch":
        for i, pat in enumerate(("seq", "rand")):
            ys = [x["latency_ns"] for x in ev if x["pattern"] == pat]
            ax.scatter([i] * len(ys), ys, s=20, color=f"C{i}", label=f"{pat} (every repeat)")
        ax.set_xticks([0, 1], ["sequential", "random"])
        ax.set_xlim(-0.5, 1.5)
        ax.set_ylabel("64 B load latency p50 (ns)")
    log_y_where_positive(ax)
    ax.legend(fontsize=7)


def log_y_where_positive(ax: Any) -> None:
    """A log y axis where every plotted value is above 0; symlog, linear below the smallest
    positive one, where some are 0 (under TCG the clock steps by 10 ns, and a latency of 0 ns is
    a fact of the clock, not to be dropped with a warning); linear where none is positive."""
    import numpy as np
    ys = [np.asarray(line.get_ydata(), dtype=float) for line in ax.get_lines()]
    ys += [np.asarray(c.get_offsets(), dtype=float).reshape(-1, 2)[:, 1] for c in ax.collections]
    y = np.concatenate(ys) if ys else np.array([])
    y = y[np.isfinite(y)]
    if y.size and (y > 0).all():
        ax.set_yscale("log")
    elif (y > 0).any():
        ax.set_yscale("symlog", linthresh=float(y[y > 0].min()))


def draw(doc: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], directory: Path) -> list[Path]:
    """A figure per inference: every measured point, the points the inference rests on, the
    knees / break found, the CPU's caches for the levels."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pmemlab.analysis.resultset import Results
    from pmemlab.plots.style import finish

    frame = pd.DataFrame([r for r in rows if r.get("curve") == "chase"] or list(rows))
    frame["source_csv"] = CSV_NAME
    results = Results("probe", frame, paths=[directory / CSV_NAME])
    paths = []
    for inf in doc["inferences"]:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        _draw_one(ax, inf, doc, rows)
        verdict = "uncertain: " + inf["reason"] if inf["uncertain"] else C.value_text(inf)
        extra = [f"{inf['name']}: {verdict}", f"method: {inf['method']}"]
        if inf.get("emulated"):
            extra.append("EMULATED (TCG): the timing means nothing")
        finish(fig, results, f"probe {doc['target']}: {inf['name']}", extra)
        path = directory / f"{inf['name']}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def print_card(doc: Mapping[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(doc)
        return
    wall = f", {doc['wall_s']:.0f} s" if doc.get("wall_s") is not None else ""
    mark = " - EMULATED: timings mean nothing" if doc.get("emulated") else ""
    hyp = doc.get("conditions", {}).get("hypervisor")
    virt = f" (under a hypervisor: {hyp})" if hyp not in (None, "", "none") and not doc.get("emulated") else ""
    print(f"device card: {doc['target']} ({doc['backend']} backend{wall}, stopped: {doc['stopped']}){mark}{virt}")
    print("\n".join(text_table(C.TABLE_COLUMNS, C.table_rows(doc))))
    caches = ", ".join(f"L{c['level']} {c['size_bytes'] // 1024} KiB" for c in doc.get("cpu_caches", []))
    if caches:
        print(f"the CPU reports: {caches}")
    for u in doc["undecided"]:
        print(f"not decided: {u['name']}: {u['reason']}")


def _output_dir(path: str) -> Path:
    d = Path(path)
    if d.exists() and not d.is_dir():
        raise OutputError(f"probe -o {d}: not a directory", "give a directory (it is created if missing)")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"probe -o {d}: cannot create it ({exc.strerror})", "give a directory you can write") from None
    return d


def page2m_size(meminfo: Path = Path("/proc/meminfo"), node_meminfo: Path | None = None) -> int:
    """The 2 MiB-page DRAM target's size: PAGE2M_DRAM, or 1/PAGE2M_SHARE of MemAvailable where
    that is less, in whole 2 MiB pages (at least PAGE2M_MIN): a probe must not push a small
    machine (a 2.5 GiB guest) into reclaim or the OOM killer for its second target. On one node
    (`dram:NODE`, node_meminfo its /sys/.../nodeN/meminfo) the node's MemFree bounds it too: the
    target's pages come from that node alone, however much the machine has."""
    kib = []
    if meminfo.exists():
        m = re.search(r"^MemAvailable:\s+(\d+) kB", read_all(meminfo), re.M)
        kib += [int(m.group(1))] if m else []
    if node_meminfo is not None and node_meminfo.exists():
        m = re.search(r"^Node \d+ MemFree:\s+(\d+) kB", read_all(node_meminfo), re.M)
        kib += [int(m.group(1))] if m else []
    if not kib:
        return PAGE2M_DRAM
    share = min(kib) * 1024 // PAGE2M_SHARE // SLOT_2M * SLOT_2M
    return max(PAGE2M_MIN, min(PAGE2M_DRAM, share))


def node_meminfo_of(target: str) -> Path | None:
    """The meminfo of the node a user-backend DRAM target names (`dram:NODE`), None for `dram`."""
    _, _, node = str(target).partition(":")
    return Path(f"/sys/devices/system/node/node{node}/meminfo") if node.isdigit() else None


def page2m_plan(args: argparse.Namespace, target: str, bench: Bench, cond: Mapping[str, Any],
                target_size: int) -> Page2M:
    """The target the 2 MiB-page chase runs on (Page2M): on the user backend's DRAM a second target
    of page2m_size() mapped with transparent huge pages (dram_pages=2m; the kernel may give it
    4 KiB pages in part: its runs say so, build_card keeps those of 2 MiB pages), opened when the
    stage begins; elsewhere (a DAX target, the module's) the probe's target where its pages are
    2 MiB, its half as the other chases."""
    if args.backend == "user" and str(target).split(":")[0] == "dram":
        size = page2m_size(node_meminfo=node_meminfo_of(target))

        def opener() -> Bench:
            be = BackendSpec("user", target=args.target or "dram",
                             options={"dram_pages": "2m", "dram_size": str(size)}).open()
            be.require_loaded()
            return Bench.probe(be, backends.online_cpus())
        return Page2M(size=size, why="", opener=opener)
    why = page2m_target(cond)
    return Page2M(why=why) if why else Page2M(size=target_size // 2, why="", bench=bench)


def write_card(doc: Mapping[str, Any], path: Path) -> None:
    """card.json as `--json` prints it (output.dumps): strict JSON, NaN as null, numpy numbers as
    numbers (json.dumps(default=str) wrote NaN, which is no JSON, and numpy integers as strings)."""
    path.write_text(dumps(doc) + "\n")


def run(args: argparse.Namespace) -> int:
    if args.source:
        src = Path(args.source)
        if not src.is_dir():
            raise BadInput(f"probe --from {src}: not a directory", "give the directory a `pmemlab probe -o DIR` wrote")
        rows, meta = load_rows(src)
        cond = meta.get("conditions", {})
        doc, _ = build_card(rows, cond, target=str(meta.get("target", "?")), backend=str(meta.get("backend", "?")),
                            caches=meta.get("cpu_caches", []), budget_s=meta.get("budget_s"),
                            wall_s=meta.get("wall_s"), stopped=str(meta.get("stopped", "?")),
                            skipped=_skipped_of(meta))
        if args.output:
            out = _output_dir(args.output)
            write_card(doc, out / CARD_NAME)
            save_rows(rows, out / CSV_NAME)
            draw(doc, rows, out)
        print_card(doc, args.json)
        return exitcodes.OK
    if args.backend == "user":
        target = args.target or "dram"
        be = BackendSpec("user", target=target, options={}).open()
    else:
        be = backends.module(args)
    be.require_loaded()
    bench = Bench.probe(be, backends.online_cpus())
    if args.backend == "kernel":
        be.check_target(args.target)
    cond = dict(bench.conditions)
    target = str(cond.get("target") or args.target or "?")
    out = _output_dir(args.output or f"probe-{re.sub(r'[^A-Za-z0-9_.-]+', '_', target)}")
    caches = cpu_caches()
    t0 = time.monotonic()
    page_bench = None
    if args.backend == "user" and str(target).split(":")[0] == "dram":
        # the one-line-per-page chase on a DRAM target mapped with 4 KiB pages (dram_pages=4k):
        # the default maps transparent huge pages, whose TLB reach is not the 4 KiB one
        page_be = BackendSpec("user", target=args.target or "dram", options={"dram_pages": "4k", "dram_size": PAGE_DRAM}).open()
        page_be.require_loaded()
        page_bench = Bench.probe(page_be, backends.online_cpus())
    target_size = int(cond.get("target_size") or 256 << 20)
    prober = Prober(bench, t0 + args.budget, sys.stderr, page_bench,
                    page2m_plan(args, target, bench, cond, target_size))
    if args.backend == "kernel":
        try:
            prober.chase(0, MIN_SIZE)
        except PmemlabError as exc:  # the parameter check or the module itself refuses op=chase
            raise NoChase(f"probe: the module has no pointer chase ({exc.cause})",
                          "use --backend user, or load a pmemlab.ko that has op=chase") from None
        prober.rows.clear()
    stopped = measure(prober, target_size, caches, args.budget)
    wall = time.monotonic() - t0
    save_rows(prober.rows, out / CSV_NAME)
    doc, _ = build_card(prober.rows, cond, target=target, backend=args.backend, caches=caches,
                        budget_s=args.budget, wall_s=wall, stopped=stopped, skipped=prober.skipped)
    write_card(doc, out / CARD_NAME)
    draw(doc, prober.rows, out)
    print_card(doc, args.json)
    if not args.json:
        print(f"measurements, card and figures in {out}/")
    return exitcodes.OK
