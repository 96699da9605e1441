"""Two memory tiers in one DRAM target: DRAM:CXL weights, what `pmemlab tier-bw` measures for each,
and how its rows are summed up (the table and the figure say the same: one function, `summarize`).

A ratio d:c is a DRAM target over the DRAM node and the CXL node (`dram_nodes=D,C dram_weights=d,c`):
its pages go to the two nodes in weighted round robin, d pages on DRAM then c on CXL, stripe after
stripe (docs/interface.md, docs/userspace.md). 1:0 and 0:1 are the plain targets on one node. The
rows of each run carry the placement the backend checked (target_nodes, target_weights,
target_node_bytes), and the summary is read from them, not from the command line. The sweep that
makes the rows (`--weights`, the two nodes, a target per ratio) is pmemlab.targets.tiers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from pmemlab.analysis.stats import spread_of, summarize as stat_summary
from pmemlab.lazy import lazy_module

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")  # imported where rows are summed up: tier-bw's parser is built without it

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
    lo: float = math.nan  # the spread the figure draws (stats.spread_of: range below 3 runs)
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


