"""What a one-liner prints: a Table (title, statistic, columns with units, rows, notes; --json its
records), and the readings of the sweep's rows every command's table is made of."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from pmemlab.analysis.stats import summarize
from pmemlab.cli.oneliners.bed import Bed
from pmemlab.output import text_table

if TYPE_CHECKING:  # pandas is imported by the functions that use it: `pmemlab run` never needs it
    import pandas as pd


@dataclass
class Table:
    """What a command prints: a title, the statistic, columns with units, rows, notes."""

    title: str
    statistic: str
    columns: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # the rows in JSON: tidy, names with units
    extra: dict[str, Any] = field(default_factory=dict)  # more of the JSON document (tier-bw: the best ratios)

    def text(self) -> str:
        cells = [[cell(v) for v in row] for row in self.rows]
        out = [self.title, self.statistic, "", *text_table(self.columns, cells, left=1)]
        out += [""] + self.notes if self.notes else []
        return "\n".join(out)

    def document(self, command: str) -> dict[str, Any]:
        return {"command": command, "title": self.title, "statistic": self.statistic,
                "rows": self.records, "notes": self.notes, **self.extra}  # output.jsonable makes NaN null


def cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, float):  # four significant digits, no exponent
        return f"{v:.0f}" if abs(v) >= 1000 else f"{v:.1f}" if abs(v) >= 100 else f"{v:.2f}" if abs(v) >= 10 \
            else f"{v:.3f}"
    return str(v)


def _ok(rows: pd.DataFrame) -> pd.DataFrame:
    if rows.empty:
        return rows
    return rows[(rows["thread"].astype(str) == "all") & (rows["status"] == "ok")]


def latency_of(rows: pd.DataFrame, hist: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Per combination of keys: the median, p5 and p95 of every sample of the runs (repeats
    pooled, from the histograms; the figures' rule) and the exact mean, with the sample count."""
    import pandas as pd

    from pmemlab.analysis.resultset import Results, latency_stats

    runs = _ok(rows).assign(source_csv="")
    results = Results("", rows.assign(source_csv=""), hist.assign(source_csv="") if not hist.empty else None)
    return latency_stats(results, runs, keys)  # its `mean`: the runs' exact means weighted by their samples


def bandwidth_of(rows: pd.DataFrame, keys: Sequence[str]) -> dict[tuple[Any, ...], tuple[float, float, int]]:
    """Per combination of keys: mean GB/s over the runs, its Student-t 95 % CI half-width, runs."""
    import pandas as pd

    out: dict[tuple[Any, ...], tuple[float, float, int]] = {}
    ok = _ok(rows)
    if ok.empty:
        return out
    for key, grp in ok.groupby(list(keys), dropna=False, sort=False):
        s = summarize(pd.to_numeric(grp["bw_gbps"], errors="coerce").dropna().tolist())
        out[key if isinstance(key, tuple) else (key,)] = (s.mean, s.ci95, s.n)
    return out


def not_run(rows: pd.DataFrame, match: dict[str, Any]) -> str:
    """Why the runs of one row of a table gave nothing ('' when one did)."""
    agg = rows[rows["thread"].astype(str) == "all"]
    for k, v in match.items():
        agg = agg[agg[k] == v]
    if agg.empty or (agg["status"] == "ok").any():
        return ""
    errors = agg["error"].dropna().astype(str)
    return f"{agg['status'].iloc[0]}: {errors.iloc[0] if not errors.empty else ''}".strip()


def headline(command: str, rows: pd.DataFrame, bed: Bed) -> str:
    import pandas as pd

    agg = rows[rows["thread"].astype(str) == "all"]
    first = agg.iloc[0] if not agg.empty else pd.Series(dtype=object)
    where = f"{bed.kind} backend" + (f", {first.get('hostname')}" if first.get("hostname") else "")
    return f"pmemlab {command} ({where}; {first.get('cpu_model') or 'unknown CPU'})"


def emulation_note(rows: pd.DataFrame) -> list[str]:
    import pandas as pd

    agg = rows[rows["thread"].astype(str) == "all"]
    hyper = {str(v) for v in agg.get("hypervisor", pd.Series(dtype=str)).dropna() if str(v) not in ("none", "")}
    emulated = {str(v) for v in agg.get("target_emulated", pd.Series(dtype=str)).dropna()
                if str(v) not in ("no", "dram", "")}
    if not hyper and not emulated:
        return []
    what = ", ".join([*(f"under {h}" for h in sorted(hyper)), *(f"on a {e} namespace" for e in sorted(emulated))])
    return [f"EMULATED: measured {what}: these numbers show the tool works, not pmem performance"]


def target_names(rows: pd.DataFrame, bed: Bed) -> dict[str, str]:
    """target_label -> how a column or row names it: the label and what it is."""
    import pandas as pd

    out: dict[str, str] = {}
    agg = rows[rows["thread"].astype(str) == "all"]
    for t in bed.targets or []:
        sub = agg[agg["target_label"] == t.label]
        node = sub["target_node"].dropna() if "target_node" in sub else pd.Series(dtype=float)
        what = t.load.target if t.load.target != "dram" else "DRAM"
        where = f", node {int(node.iloc[0])}" if not node.empty and not t.load.target.startswith("dram") else ""
        out[t.label] = t.label if t.label.startswith(("dram", "pmem")) and not where else f"{t.label} ({what}{where})"
    return out


def advertised_note(rows: pd.DataFrame) -> list[str]:
    import pandas as pd

    agg = rows[rows["thread"].astype(str) == "all"]
    if "adv_node" not in agg or pd.to_numeric(agg.get("adv_read_latency_ns"), errors="coerce").dropna().empty:
        return ["advertised: n/a (the kernel has no access0 values for the target's node: no HMAT)"]
    return ["advertised: the firmware's access0 values of the target's memory node (HMAT; for a CXL node the "
            "kernel's sum of the devices' CDAT, links and host bridge), read as the kernel exposes them; "
            "bandwidth MB/s read as 1e6 B/s"]


def reasons_note(reasons: dict[str, str]) -> list[str]:
    return [f"n/a {key}: {why}" for key, why in reasons.items()]


def only_target(rows: pd.DataFrame) -> str:
    import pandas as pd

    agg = rows[rows["thread"].astype(str) == "all"]
    if agg.empty:
        return "?"
    first = agg.iloc[0]
    node = first.get("target_node")
    return f"{first.get('target')} ({first.get('target_kind')}" + (
        f", node {int(node)})" if node is not None and not pd.isna(node) else ")")

