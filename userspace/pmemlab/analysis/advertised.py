"""Measured against advertised: the value a result is held against, from the adv_* columns every
row carries (machine.advertised_conditions: access0 of the target's memory node, as the kernel
exposes the HMAT, or for a CXL node its combination of the devices' CDAT). Used by the one-liners'
tables and the report's per-point tables; docs/method.md says how each is read."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pmemlab.lazy import lazy_module
from pmemlab.params import READ_OPS  # the module's ops that only read (core/ops.def)

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")  # imported on first use: `pmemlab run` and every --help stay without it


def advertised_of(rows: pd.DataFrame, target: str | None = None) -> dict[str, float]:
    """The advertised values recorded with a target's rows (all rows without a target; NaN where the
    kernel had none): latency ns, and bandwidth in GB/s (the kernel's MB/s read as 1e6 B/s, ACPI's unit)."""
    agg = rows[rows["thread"].astype(str) == "all"] if "thread" in rows else rows
    if target is not None and "target_label" in agg:
        agg = agg[agg["target_label"] == target]

    def first(col: str, scale: float = 1.0) -> float:
        vals = pd.to_numeric(agg[col], errors="coerce").dropna() if col in agg else pd.Series(dtype=float)
        return float(vals.iloc[0]) * scale if not vals.empty else math.nan

    return {"read_ns": first("adv_read_latency_ns"), "write_ns": first("adv_write_latency_ns"),
            "read_gbps": first("adv_read_bw_mbps", 1e-3), "write_gbps": first("adv_write_bw_mbps", 1e-3),
            "node": first("adv_node")}


def advertised_latency(adv: dict[str, float], op: str) -> float:
    return adv["read_ns"] if op in READ_OPS else adv["write_ns"]


def advertised_bandwidth(adv: dict[str, float], op: str, read_pct: int = 0) -> float:
    """Reads: the read bandwidth; writes: the write bandwidth; a load:store mix: the two combined
    as the time each share takes (1 / (p / read + (1 - p) / write)), docs/method.md."""
    if op in READ_OPS or read_pct >= 100:
        return adv["read_gbps"]
    if not read_pct:
        return adv["write_gbps"]
    p = read_pct / 100
    if not adv["read_gbps"] or not adv["write_gbps"] or math.isnan(adv["read_gbps"] + adv["write_gbps"]):
        return math.nan
    return 1 / (p / adv["read_gbps"] + (1 - p) / adv["write_gbps"])


def ratio(measured: float, advertised: float) -> float:
    if not advertised or math.isnan(advertised) or measured is None or math.isnan(measured):
        return math.nan
    return measured / advertised


