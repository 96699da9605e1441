"""NAME.summary.csv: per point, mean, sample standard deviation and 95 % CI half-width of
every metric across the ok repeats."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from pmemlab import ipmctl
from pmemlab.params import PARAM_NAMES
from pmemlab.results import KNOWN_RESULT_COLUMNS
from pmemlab.stats import summarize
from pmemlab.sweep.files import summary_path
from pmemlab.table import BASE_COLUMNS

SUMMARY_SKIP = frozenset({"cpu", "thread_node", "thread_op"})


def summarize_csv(csv_path: Path) -> pd.DataFrame:
    """Per point: parameters, repeats n, and mean / stddev / 95 % CI half-width per metric."""
    df = pd.read_csv(csv_path, low_memory=False)
    agg = df[(df["thread"].astype(str) == "all") & (df["status"] == "ok")]
    metrics = [c for c in agg.columns
               if (c in KNOWN_RESULT_COLUMNS or c in ipmctl.COLUMNS or c not in BASE_COLUMNS)
               and c not in SUMMARY_SKIP and pd.api.types.is_numeric_dtype(agg[c]) and agg[c].notna().any()]
    keep_cols = ["sweep", *(["target_label"] if "target_label" in agg.columns else []), "point", "point_key",
                 *[c for c in PARAM_NAMES if c in agg.columns]]
    out_rows: list[dict[str, Any]] = []
    for key, grp in agg.groupby("point_key", sort=False):
        first = grp.iloc[0]
        row: dict[str, Any] = {c: first[c] for c in keep_cols}
        row["n"] = len(grp)
        for m in metrics:
            s = summarize(grp[m].dropna().tolist())
            row[f"{m}_mean"] = s.mean
            row[f"{m}_stddev"] = s.stddev
            row[f"{m}_ci95"] = s.ci95
        out_rows.append(row)
    return pd.DataFrame(out_rows)


def write_summary(csv_path: Path) -> Path | None:
    df = summarize_csv(csv_path)
    path = summary_path(csv_path)
    tmp = path.with_name(path.name + ".tmp")
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)
    return path
