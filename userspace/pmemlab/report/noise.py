"""An experiment's warnings: what says its figure should not be trusted as it stands, by the
noise rules of pmemlab.analysis.noise (pmemlab.report lists them): spread over repeats, few
repeats, loop-bound points, steal time, failed and skipped points, module loads not run."""

from __future__ import annotations

import pandas as pd

from pmemlab.analysis.noise import CV_WARN, FEW_REPEATS, STEAL_WARN_PCT, steal_columns
from pmemlab.analysis.resultset import Results, TimerStep
from pmemlab.report.markup import cell


def noise_warnings(results: Results, table: pd.DataFrame, step: TimerStep | None = None,
                   few_repeats: bool = True) -> list[str]:
    """The warnings of one experiment from its rows and its point table (experiments.point_table).
    A latency point whose repeats differ by no more than the timer's resolved step is said to
    vary by the clock's step, not by noise. `few_repeats` False leaves the repeat count to the
    report's one line."""

    out = []
    if not table.empty:
        out += point_warnings(table, step, few_repeats)
    out += row_warnings(results)
    return out


def point_warnings(table: pd.DataFrame, step: TimerStep | None, few_repeats: bool) -> list[str]:
    """Spread over repeats, few repeats, loop-bound points: from the point table."""
    out = []
    noisy = table[table["cv_pct"] > 100 * CV_WARN]
    if len(noisy):
        out.append(spread_warning(table, noisy, step))
    few = table[table["repeats"] < FEW_REPEATS]
    if len(few) and few_repeats:
        out.append(f"{len(few)} of {len(table)} points have fewer than {FEW_REPEATS} repeats "
                   f"({', '.join(sorted({str(n) for n in few['repeats']}))}): the figure shows their range, "
                   "not a confidence interval")
    bound = table[table["loop_bound"]]
    if len(bound):
        out.append(f"{len(bound)} points are loop-bound: they measure the tool, not the memory (hollow markers)")
    return out


def spread_warning(table: pd.DataFrame, noisy: pd.DataFrame, step: TimerStep | None) -> str:
    """The points varying by more than CV_WARN: those within one timer step said as the clock's
    resolution, the worst of the others named."""
    quantised = pd.Series(False, index=noisy.index)
    if step is not None and step.resolved:
        quantised = (noisy["metric"] == "lat_ns_p50") & (noisy["range"] <= step.ns * 1.05)
    text = f"{len(noisy)} of {len(table)} points vary by more than {CV_WARN:.0%} over their repeats"
    if quantised.any() and step is not None:
        example = noisy[quantised].sort_values("cv_pct", ascending=False).iloc[0]
        text += (f"; {int(quantised.sum())} of them by one timer step or less ({step.ns:.3g} ns: "
                 f"CV {example['cv_pct']:.0f} % at {point_text(example)}), the clock's resolution, not noise")
    rest = noisy[~quantised]
    if len(rest):
        worst = rest.sort_values("cv_pct", ascending=False).iloc[0]
        text += (f"; {'worst' if not quantised.any() else 'worst of the others'} "
                 f"{worst['cv_pct']:.0f} % at {point_text(worst)}")
    return f"{text} (coefficient of variation)"


def row_warnings(results: Results) -> list[str]:
    """Steal time, failed and skipped points, module loads not run: from the rows."""
    out = []
    rows = results.rows
    for column in steal_columns(rows.columns):
        values = pd.to_numeric(rows[column], errors="coerce")
        high = values[values > STEAL_WARN_PCT]
        if len(high):
            out.append(f"steal time above {STEAL_WARN_PCT:g} % in {len(high)} rows ({column} up to {high.max():.3g})")
    agg = rows[rows["thread"].astype(str) == "all"]
    failed = agg[agg["status"].isin(["error", "timeout", "refused"])]
    if len(failed):
        out.append(f"{failed['point_key'].nunique()} points failed ({', '.join(sorted(set(failed['status'])))})")
    skipped = agg[agg["status"] == "skipped"]
    if len(skipped):
        out.append(f"{skipped['point_key'].nunique()} points skipped on this machine "
                   f"(e.g. {str(skipped['error'].dropna().iloc[0]) if skipped['error'].notna().any() else 'no reason'})")
    for entry in results.not_run:
        out.append(f"module load not run: {entry}")
    return out


def point_text(row: pd.Series) -> str:
    """A point of the point table by its keys: 'target_label=pmem0 access_size=64'."""
    skip = {"metric", "repeats", "mean", "median", "ci95", "cv_pct", "loop_bound", "range"}
    return " ".join(f"{k}={cell(v)}" for k, v in row.items() if k not in skip) or "the point"
