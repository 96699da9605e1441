"""write_levels: where writes sit (issue 35, LENS's read-after-write prober made an inference).

The read-after-write chase (`op=chase chase_write=raw`: each round writes every line of the chain
with movnti, an mfence, then chases the lines) reads back lines whose writes went past the CPU's
caches. Over a small region it reads them from whatever holds recent writes (a memory-side write
buffer, the controller, a device's write-combining buffer), over a large one from what has
drained to the media. Its curve vs region size is fitted as the read chase's is (knees.py); each
knee is held against the read chase's knees: a knee within NEAR of a read knee is a level both
see (a cache the lines went back into, the TLB), one that is not is seen only after writes (a
buffer that holds recent writes: Optane's 16 KiB write-combining buffer in FAST'20 and LENS).

A knee no read knee explains is called a level of the writes' own only where the raw chase rises
by STEP or more past it. STEP is a stated choice above the largest step seen with no write buffer
to explain it (x1.17 at 556 KiB on this machine's DRAM guest); a hit in a device's buffer of
recent writes skips the media read, a larger step, but none has been measured here. Smaller steps
are kept in `detail.unexplained` and named in the reason, not called a level."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from pmemlab.analysis.inference import Inference
from pmemlab.analysis.knees import levels_inference

NEAR = 1.5  # a write knee within this factor of a read knee is the same level
STEP = 1.3  # the least rise past a knee (above_ns / below_ns) that is called a buffer of the writes
METHOD = ("levels fit of the read-after-write chase (chase_write=raw: movnti to every line, mfence, then the "
          "chase) latency vs region; each knee held against the read chase's knees (within 1.5x: a level both "
          "see; else, rising 1.3x or more past it, seen only after writes)")


def _same(a: float, b: float) -> bool:
    return 1 / NEAR <= a / b <= NEAR


def write_levels_inference(name: str, sizes: Sequence[float], latencies: Sequence[float],
                           read_knees: Sequence[Mapping[str, Any]],
                           read_points: Sequence[tuple[float, float]] = ()) -> Inference:
    """`sizes`, `latencies`: the raw chase (its least latency per size, as the levels take the read
    chase's); `read_knees`: the read chase's knees (capacity_bytes); `read_points`: the read chase's
    (size, latency), for the latency ratio at the sizes both measured (`detail.raw_over_read`)."""
    inf = levels_inference(name, sizes, latencies)
    inf.method = METHOD
    reads = [float(k["capacity_bytes"]) for k in read_knees]
    read_at = {int(s): v for s, v in read_points}
    inf.detail["read_knees"] = reads
    inf.detail["raw_over_read"] = [{"size_bytes": int(s), "ratio": float(v) / read_at[int(s)]}
                                   for s, v in sorted(zip(sizes, latencies)) if read_at.get(int(s))]
    if inf.uncertain:
        return inf
    knees = inf.detail["knees"]
    for k in knees:
        k["seen_in_reads"] = any(_same(float(k["capacity_bytes"]), r) for r in reads)
        k["rise"] = float(k["above_ns"]) / float(k["below_ns"]) if float(k["below_ns"]) > 0 else float("inf")
    only = [round(float(k["capacity_bytes"])) for k in knees if not k["seen_in_reads"] and k["rise"] >= STEP]
    small = [k for k in knees if not k["seen_in_reads"] and k["rise"] < STEP]
    inf.detail["write_only"] = only
    inf.detail["unexplained"] = [{"capacity_bytes": round(float(k["capacity_bytes"])), "rise": k["rise"]}
                                 for k in small]
    if only:
        inf.reason = (f"{len(only)} level{'s' if len(only) > 1 else ''} seen only after writes, at "
                      + ", ".join(f"{b / 1024:.0f} KiB" for b in only)
                      + ": where recent writes sit (a write buffer); the others are the read chase's levels")
    else:
        inf.reason = "every level is one the read chase shows too: no level holds writes alone"
    if small:
        inf.reason += ("; " + ", ".join(f"x{k['rise']:.2f} at {float(k['capacity_bytes']) / 1024:.0f} KiB" for k in small)
                       + f" after writes that no read knee explains, below the x{STEP:g} a write buffer makes:"
                       " not called a level")
    return inf
