"""Two memory tiers in one DRAM target: DRAM:CXL weights, what `pmemlab tier-bw` measures for each,
and how its rows are summed up (the table and the figure say the same: one function, `summarize`).

A ratio d:c is a DRAM target over the DRAM node and the CXL node (`dram_nodes=D,C dram_weights=d,c`):
its pages go to the two nodes in weighted round robin, d pages on DRAM then c on CXL, stripe after
stripe (docs/interface.md, docs/userspace.md). 1:0 and 0:1 are the plain targets on one node. The
rows of each run carry the placement the backend checked (target_nodes, target_weights,
target_node_bytes), and the summary is read from them, not from the command line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from pmemlab.errors import ConfigError
from pmemlab.stats import summarize as stat_summary
from pmemlab.targets.spec import TargetLoad

if TYPE_CHECKING:  # pandas is imported by the functions that use it
    import pandas as pd

DEFAULT_WEIGHTS = "1:0,9:1,4:1,3:1,2:1,1:1,0:1"
WEIGHT_MAX = 255  # as dram_weights (core/pl_tier.h) and the kernel's weighted interleave
# (label, op, read_pct): loads, and a 2:1 load:store mix within each thread (as peak-bw's row)
MIXES: tuple[tuple[str, str, int], ...] = (("load", "load", 0), ("2:1 load:store", "store", 67))


@dataclass(frozen=True)
class Ratio:
    """DRAM:CXL page weights."""

    dram: int
    cxl: int

    @property
    def text(self) -> str:
        return f"{self.dram}:{self.cxl}"

    @property
    def dram_pct(self) -> float:
        """The share of the target's pages on DRAM, %."""
        return 100.0 * self.dram / (self.dram + self.cxl)

    @property
    def label(self) -> str:
        """Its target label (dram9-cxl1): a label has no colon."""
        return f"dram{self.dram}-cxl{self.cxl}"


def parse_weights(text: str) -> tuple[Ratio, ...]:
    """`1:0,9:1,4:1` -> the ratios, in the order given (ConfigError, exit code 2, when malformed)."""
    out: list[Ratio] = []
    for item in (part.strip() for part in text.split(",")):
        m = re.fullmatch(r"(\d+):(\d+)", item)
        if not m:
            raise ConfigError(f"--weights {text!r}: {item!r} is not DRAM:CXL", "give e.g. --weights 1:0,3:1,1:1")
        r = Ratio(int(m.group(1)), int(m.group(2)))
        if max(r.dram, r.cxl) > WEIGHT_MAX or not r.dram + r.cxl:
            raise ConfigError(f"--weights {text!r}: {item} has a weight above {WEIGHT_MAX} or none above 0",
                              f"weights are 0..{WEIGHT_MAX}, at least one of the two above 0")
        if any(o.dram * r.cxl == o.cxl * r.dram for o in out):
            raise ConfigError(f"--weights {text!r}: {item} is the ratio of an earlier one",
                              "give each ratio once (9:1 and 18:2 place the pages alike)")
        out.append(r)
    return tuple(out)


def ratio_loads(ratios: Sequence[Ratio], dram_node: int, cxl_node: int, size: str,
                pages: str | None = None) -> list[TargetLoad]:
    """A target per ratio: the DRAM target over both nodes with the ratio's weights (a weight of 0
    leaves that node out: the plain target on the other)."""
    extra = (("dram_pages", pages),) if pages else ()
    return [TargetLoad(r.label, (("target", "dram"), ("dram_nodes", f"{dram_node},{cxl_node}"),
                                 ("dram_weights", f"{r.dram},{r.cxl}"), ("dram_size", size), *extra))
            for r in ratios]


def placed(nodes: Any, weights: Any, node_bytes: Any) -> tuple[Ratio | None, float]:
    """From a row's placement columns: the ratio it was loaded with (None when its target is not
    two nodes with weights) and the share of its bytes found on the first node, %."""
    try:
        ns = [int(n) for n in str(nodes).split(",")]
        ws = [int(w) for w in str(weights).split(",")]
    except ValueError:
        return None, math.nan
    if len(ns) != 2 or len(ws) != 2 or not sum(ws):
        return None, math.nan
    found: dict[str, int] = {}
    for item in str(node_bytes).split(","):
        key, _, value = item.partition(":")
        if value.isdigit():
            found[key] = int(value)
    total = sum(found.values())
    return Ratio(ws[0], ws[1]), 100.0 * found.get(str(ns[0]), 0) / total if total else math.nan


@dataclass
class RatioStats:
    """One ratio x mix: the bandwidth over its runs, the gain over DRAM alone (1:0), whether it is
    the best of its mix, and the DRAM share found in its rows."""

    ratio: Ratio
    mix: str
    op: str
    read_pct: int
    mean: float = math.nan
    ci95: float = math.nan
    lo: float = math.nan  # the spread the figure draws (plots.data.spread_of: range below 3 runs)
    hi: float = math.nan
    spread: str = ""
    runs: int = 0
    gain_pct: float = math.nan  # (mean / mean of 1:0 - 1) x 100
    beats_dram: bool | None = None  # the 95 % CIs of this ratio and 1:0 do not overlap (None: unknown)
    best: bool = False
    dram_pct_placed: float = math.nan

    def record(self) -> dict[str, Any]:
        return {"ratio": self.ratio.text, "dram_weight": self.ratio.dram, "cxl_weight": self.ratio.cxl,
                "dram_pct": self.ratio.dram_pct, "dram_pct_placed": self.dram_pct_placed, "mix": self.mix,
                "op": self.op, "read_pct": self.read_pct, "bw_gbps_mean": self.mean, "bw_gbps_ci95": self.ci95,
                "bw_gbps_lo": self.lo, "bw_gbps_hi": self.hi, "spread": self.spread, "runs": self.runs, "gain_over_dram_pct": self.gain_pct, "beats_dram": self.beats_dram,
                "best": self.best}


def summarize(rows: pd.DataFrame, ratios: Sequence[Ratio] | None = None,
              mixes: Sequence[tuple[str, str, int]] = MIXES) -> list[RatioStats]:
    """Per ratio and mix (ratios in the order given, else as the rows have them by falling DRAM
    share): mean GB/s over the `thread=all` rows with status ok and its Student-t 95 % CI; the gain
    over 1:0 of the same mix; `best`: the highest mean of each mix."""
    import pandas as pd

    from pmemlab.plots.data import spread_of

    agg = rows[(rows["thread"].astype(str) == "all") & (rows["status"] == "ok")] if not rows.empty else rows
    by: dict[tuple[Ratio, str, int], list[float]] = {}
    share: dict[Ratio, list[float]] = {}
    if not agg.empty:
        for _, r in agg.iterrows():
            ratio, pct = placed(r.get("target_nodes"), r.get("target_weights"), r.get("target_node_bytes"))
            if ratio is None:
                continue
            bw = pd.to_numeric(r.get("bw_gbps"), errors="coerce")
            if pd.notna(bw):
                by.setdefault((ratio, str(r["op"]), int(r["read_pct"])), []).append(float(bw))
            share.setdefault(ratio, []).append(pct)
    order = list(ratios) if ratios is not None else sorted({k[0] for k in by}, key=lambda r: -r.dram_pct)
    out: list[RatioStats] = []
    for label, op, pct in mixes:
        cells = []
        for ratio in order:
            s = RatioStats(ratio, label, op, pct)
            values = by.get((ratio, op, pct), [])
            if values:
                st = stat_summary(values)
                s.mean, s.ci95, s.runs = st.mean, st.ci95, st.n
                s.lo, s.hi, s.spread = spread_of(values)
            found = [v for v in share.get(ratio, []) if not math.isnan(v)]
            s.dram_pct_placed = sum(found) / len(found) if found else math.nan
            cells.append(s)
        alone = next((c for c in cells if c.ratio.cxl == 0 and c.runs), None)
        for c in cells:
            if alone is not None and c.runs and alone.mean > 0:
                c.gain_pct = 100.0 * (c.mean / alone.mean - 1.0)
                if c.runs > 1 and alone.runs > 1 and not (math.isnan(c.ci95) or math.isnan(alone.ci95)):
                    c.beats_dram = c.mean - c.ci95 > alone.mean + alone.ci95
        done = [c for c in cells if c.runs]
        if done:
            max(done, key=lambda c: c.mean).best = True
        out.extend(cells)
    return out


def best_text(stats: Sequence[RatioStats]) -> dict[str, str]:
    """mix -> 'best 3:1: 12.5 GB/s, +20.1 % over DRAM alone (CIs apart)' for each mix that ran."""
    out = {}
    for s in stats:
        if not s.best:
            continue
        gain = "" if math.isnan(s.gain_pct) else f", {s.gain_pct:+.1f} % over DRAM alone"
        sure = {True: " (95 % CIs apart)", False: " (within the 95 % CIs of DRAM alone)", None: ""}[s.beats_dram]
        out[s.mix] = f"{s.ratio.text}: {s.mean:.3g} GB/s{gain}{sure if gain else ''}"
    return out


def node_pair(nodes: Sequence[Mapping[str, Any]], dram: int | None, cxl: int | None) -> tuple[int, int]:
    """The DRAM node (given, else the first node with CPUs and memory) and the CXL node (given, else
    the first node with memory and no CPUs: how CXL memory appears)."""
    memory = [n for n in nodes if (n.get("mem_total_kib") or 0) > 0]
    with_cpus = [n["node"] for n in memory if (n.get("cpus") or "").strip()]
    cpuless = [n["node"] for n in memory if not (n.get("cpus") or "").strip()]
    have = {n["node"] for n in memory}
    if dram is None:
        if not with_cpus:
            raise ConfigError("no NUMA node with CPUs and memory for the DRAM side", "give --dram-node N")
        dram = with_cpus[0]
    if cxl is None:
        if not cpuless:
            raise ConfigError("no NUMA node with memory and no CPUs (how CXL memory appears) on this machine",
                              "give --cxl-node N (any other node with memory)")
        cxl = cpuless[0]
    for what, node in (("--dram-node", dram), ("--cxl-node", cxl)):
        if node not in have:
            raise ConfigError(f"{what} {node}: no NUMA node {node} with memory on this machine",
                              f"nodes with memory: {', '.join(map(str, sorted(have))) or 'none'}")
    if dram == cxl:
        raise ConfigError(f"--dram-node and --cxl-node are both {dram}", "give two different nodes")
    return dram, cxl
