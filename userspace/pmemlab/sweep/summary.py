"""NAME.summary.csv: per point, its parameters and run conditions, and the mean, sample standard
deviation and 95 % CI half-width of every metric across the ok repeats; then the point's metric,
its coefficient of variation, the highest steal time of its runs and whether the point should be
trusted (pmemlab.analysis.noise). The target and condition columns stay, so the summaries of one sweep on
several targets (NAME@dram, NAME@pmem) can be concatenated and still told apart."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pmemlab.host import ipmctl
from pmemlab.analysis.noise import judge, metric_of, steal_columns
from pmemlab.params import PARAM_NAMES
from pmemlab.results import KNOWN_RESULT_COLUMNS
from pmemlab.analysis.stats import summarize
from pmemlab.sweep.files import summary_path
from pmemlab.table import BASE_COLUMNS, CONDITION_COLUMNS, NOISE_COLUMNS, RUN_STATE_COLUMNS, read_rows

if TYPE_CHECKING:  # pandas is imported by the functions that use it: `pmemlab run` never needs it
    import pandas as pd

SUMMARY_SKIP = frozenset({"cpu", "thread_node", "thread_op"})
# per point: what the repeats share (several values joined with "/": they changed between repeats)
SUMMARY_CONDITIONS: tuple[str, ...] = (*CONDITION_COLUMNS, *RUN_STATE_COLUMNS)
# judged per point (pmemlab.analysis.noise) and placed after the statistics
JUDGEMENT_COLUMNS: tuple[str, ...] = ("metric", "cv_pct", "steal_pct_max", "noisy", "noise")


def _shared(values: pd.Series) -> Any:
    """The value the rows share; several distinct values joined with '/'; None for none."""
    return _shared_list(values.tolist())


def _shared_list(values: list[Any]) -> Any:
    """_shared of a column's values as a list."""
    distinct = list(dict.fromkeys(v for v in values if not (isinstance(v, float) and math.isnan(v))))
    if not distinct:
        return None
    return distinct[0] if len(distinct) == 1 else "/".join(str(v) for v in distinct)


EMPTY_COLUMNS: tuple[str, ...] = ("sweep", "point", "point_key", "n", *JUDGEMENT_COLUMNS)


def _clean(values: list[Any]) -> list[Any]:
    """The values that are there (None and NaN dropped), as pandas' dropna()."""
    return [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]


def summarize_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Per point (the ok aggregate rows of a sweep CSV as read by table.read_rows); without any,
    a frame with the identifying columns and no rows (the file still says what it is).
    Each column is taken out of the frame once and each point's rows are positions into it:
    the cost per point is its own rows', not a frame's per group (issue 37)."""
    import pandas as pd

    if df.empty:
        return pd.DataFrame(columns=list(EMPTY_COLUMNS))
    agg = df[(df["thread"].astype(str) == "all") & (df["status"] == "ok")]
    metrics = [c for c in agg.columns
               if (c in KNOWN_RESULT_COLUMNS or c in ipmctl.COLUMNS or c not in BASE_COLUMNS)
               and c not in SUMMARY_SKIP and pd.api.types.is_numeric_dtype(agg[c]) and agg[c].notna().any()]
    keep_cols = ["sweep", *(["target_label"] if "target_label" in agg.columns else []), "point", "point_key",
                 *[c for c in PARAM_NAMES if c in agg.columns]]
    conditions = [c for c in SUMMARY_CONDITIONS if c in agg.columns]
    noise_max = [c for c in NOISE_COLUMNS if c in agg.columns]
    if agg.empty:
        return pd.DataFrame(columns=list(EMPTY_COLUMNS))
    judged = agg.assign(metric=metric_of(agg)).reset_index(drop=True)
    plain = {c: judged[c].tolist() for c in dict.fromkeys([*keep_cols, *conditions, *metrics, "metric"])}
    numeric = {c: pd.to_numeric(judged[c], errors="coerce").tolist()
               for c in dict.fromkeys([*noise_max, *steal_columns(judged.columns),
                                       *(m for m in set(plain["metric"]) if m in judged.columns)])}
    steals = steal_columns(judged.columns)
    out_rows: list[dict[str, Any]] = []
    for _key, where in judged.groupby("point_key", sort=False).indices.items():
        first = int(where[0])
        row: dict[str, Any] = {c: plain[c][first] for c in keep_cols}
        row.update({c: _shared_list([plain[c][i] for i in where]) for c in conditions})
        row["n"] = len(where)
        for m in metrics:
            s = summarize(_clean([plain[m][i] for i in where]))
            row[f"{m}_mean"] = s.mean
            row[f"{m}_stddev"] = s.stddev
            row[f"{m}_ci95"] = s.ci95
        for c in noise_max:
            values = _clean([numeric[c][i] for i in where])
            row[f"{c}_max"] = float(max(values)) if values else None
        metric = str(plain["metric"][first])
        verdict = judge(_clean([numeric[metric][i] for i in where]) if metric in numeric else [],
                        [v for c in steals for v in _clean([numeric[c][i] for i in where])])
        row.update(metric=metric, cv_pct=verdict.cv_pct,
                   steal_pct_max=None if math.isnan(verdict.steal_pct) else verdict.steal_pct,
                   noisy=int(verdict.noisy), noise="; ".join(verdict.reasons))
        out_rows.append(row)
    out = pd.DataFrame(out_rows)
    if out.empty:
        return pd.DataFrame(columns=list(EMPTY_COLUMNS))
    rest = [c for c in out.columns if c not in JUDGEMENT_COLUMNS]
    return out[[*rest, *JUDGEMENT_COLUMNS]]


def summarize_csv(csv_path: Path) -> pd.DataFrame:
    """Per point: parameters, conditions, repeats n, mean / stddev / 95 % CI half-width per metric,
    and the noise judgement."""
    return summarize_frame(read_rows(csv_path))


def write_summary(csv_path: Path) -> Path | None:
    df = summarize_csv(csv_path)
    path = summary_path(csv_path)
    tmp = path.with_name(path.name + ".tmp")
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)
    return path
