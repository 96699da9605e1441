"""How far a point's figure can be trusted: the metric a point is judged by, how much it varies
over the repeats, and the steal time of its runs.

The one place for these rules (docs/method.md, "When a figure should not be trusted"): the
summary's `noisy` and `noise` columns, the warning at the end of a sweep, `pmemlab summarize`
and the report's noise warnings all use them.

- coefficient of variation (sample standard deviation / mean over the ok repeats) above 5 %;
- steal time (the `steal_pct` column: % of the run's CPU time the hypervisor gave to others)
  above 1 % in any run of the point;
- fewer than 3 repeats is reported by the report (the CI is too wide to tell much), but does
  not make a point noisy: it says nothing about the runs themselves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from pmemlab.lazy import lazy_module
from pmemlab.errors import ConfigError
from pmemlab.analysis.stats import summarize

if TYPE_CHECKING:
    import pandas as pd
else:
    pd = lazy_module("pandas")  # imported on first use: `pmemlab run` and every --help stay without it

CV_WARN = 0.05  # coefficient of variation over repeats above this: the point is noisy
FEW_REPEATS = 3  # fewer repeats than this: the CI is too wide to tell much
STEAL_WARN_PCT = 1.0  # steal time above this share of a run's CPU time
BANDWIDTH_METRIC = "bw_gbps"
LATENCY_METRIC = "lat_ns_p50"


def metric_of(runs: pd.DataFrame, metric: str | None = None) -> pd.Series:
    """Per run, the metric its point is judged and compared by: `metric` when given, else bw_gbps
    for bandwidth runs and the run's median latency (lat_ns_p50) for latency runs."""
    if metric:
        if metric not in runs:
            raise ConfigError(f"no column {metric!r} in the results", "e.g. --metric bw_gbps or lat_ns_p99")
        return pd.Series(metric, index=runs.index)
    latency = runs.get("mode", pd.Series("", index=runs.index)).astype(str) == "latency"
    return latency.map({True: LATENCY_METRIC, False: BANDWIDTH_METRIC})


def steal_columns(columns: Iterable[str]) -> list[str]:
    """The columns that hold steal time in percent (steal_pct, and any steal* a backend adds)."""
    return [c for c in columns if str(c).lower().startswith("steal") and not str(c).endswith("_max")]


@dataclass(frozen=True)
class PointNoise:
    """The judgement of one point: repeats, mean, coefficient of variation (NaN below 2 repeats or
    at a zero mean) and the highest steal time of its runs (NaN where none was recorded)."""

    n: int
    mean: float
    cv: float
    steal_pct: float

    @property
    def reasons(self) -> list[str]:
        out = []
        if not math.isnan(self.cv) and self.cv > CV_WARN:
            out.append(f"CV {100 * self.cv:.1f} % > {100 * CV_WARN:g} %")
        if not math.isnan(self.steal_pct) and self.steal_pct > STEAL_WARN_PCT:
            out.append(f"steal {self.steal_pct:.2g} % > {STEAL_WARN_PCT:g} %")
        return out

    @property
    def noisy(self) -> bool:
        return bool(self.reasons)

    @property
    def cv_pct(self) -> float:
        return 100 * self.cv


def judge(values: Sequence[float], steal: Sequence[float] = ()) -> PointNoise:
    """A point from its metric over the repeats and the steal time of its runs (NaN dropped)."""
    clean = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    s = summarize(clean)
    cv = s.stddev / abs(s.mean) if s.n > 1 and s.mean else math.nan
    stolen = [float(v) for v in steal if v is not None and not math.isnan(float(v))]
    return PointNoise(n=s.n, mean=s.mean, cv=cv, steal_pct=max(stolen) if stolen else math.nan)


def judge_runs(runs: pd.DataFrame, metric: str) -> PointNoise:
    """A point from its ok aggregate rows (one per repeat)."""
    values = pd.to_numeric(runs[metric], errors="coerce").dropna().tolist() if metric in runs else []
    steal: list[float] = []
    for column in steal_columns(runs.columns):
        steal += pd.to_numeric(runs[column], errors="coerce").dropna().tolist()
    return judge(values, steal)


def sweep_warning(summary: pd.DataFrame, csv_name: str = "") -> str:
    """The line a sweep ends with when some points should not be trusted ('' when none):
    how many, why, and the worst."""
    if summary.empty or "noisy" not in summary:
        return ""
    noisy = summary[summary["noisy"].astype(bool)]
    if noisy.empty:
        return ""
    why = []
    cv = pd.to_numeric(noisy.get("cv_pct"), errors="coerce") if "cv_pct" in noisy else pd.Series(dtype=float)
    high_cv = cv[cv > 100 * CV_WARN]
    if len(high_cv):
        why.append(f"{len(high_cv)} vary by more than {100 * CV_WARN:g} % over their repeats "
                   f"(worst CV {high_cv.max():.1f} %)")
    steal = pd.to_numeric(noisy.get("steal_pct_max"), errors="coerce") if "steal_pct_max" in noisy \
        else pd.Series(dtype=float)
    high_steal = steal[steal > STEAL_WARN_PCT]
    if len(high_steal):
        why.append(f"{len(high_steal)} lost more than {STEAL_WARN_PCT:g} % of their CPU time to steal "
                   f"(up to {high_steal.max():.2g} %)")
    where = f" (the noisy and noise columns of {csv_name})" if csv_name else ""
    return (f"{len(noisy)} of {len(summary)} points should not be trusted as they stand: " + "; ".join(why)
            + f"{where}; rerun with more repeats, on an idle machine, or with [sweep.adaptive]")
