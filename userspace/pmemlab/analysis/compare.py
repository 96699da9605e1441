"""`pmemlab compare A B`: two result sets (sweep CSVs or result directories) from different
targets, machines or revisions, point by point.

Points are matched on the parameters their sweep varies (what is constant on both sides but
different, such as the target, the machine or the toolkit revision, is what is compared). Per
point: the mean of the metric over repeats on each side with its Student-t 95 % confidence
interval (pmemlab.analysis.stats, the rule of the summary CSVs), the ratio B/A, whether the intervals
overlap, and a verdict for B against A: `faster`, `slower` or `no difference` (the intervals
overlap, or B is within the threshold of A). The metric is `bw_gbps` for bandwidth points
(higher is faster) and the run's median latency `lat_ns_p50` for latency points (lower is
faster), unless --metric names one."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from pmemlab.lazy import lazy_module
from pmemlab.errors import BadInput, ConfigError
from pmemlab.output import dumps
from pmemlab.analysis.noise import metric_of
from pmemlab.params import PARAM_NAMES
from pmemlab.analysis.stats import summarize
from pmemlab.table import is_pmemlab_csv, read_rows

if TYPE_CHECKING:
    import pandas as pd
    from pmemlab.analysis.resultset import Results, find_experiments, is_sweep_csv, load_results, sweep_name
else:
    pd = lazy_module("pandas")  # imported on first use: `pmemlab run` and every --help stay without it

DEFAULT_THRESHOLD = 0.05  # |B/A - 1| below this is "no difference" even where the CIs are apart
# what tells the two sides apart, shown in the header
SIDE_COLUMNS = ("target", "target_kind", "target_label", "hostname", "cpu_model", "kernel", "toolkit_version",
                "hypervisor", "target_emulated")
COLUMNS = ("experiment", "point", "metric", "a_mean", "a_ci95", "a_n", "b_mean", "b_ci95", "b_n", "ratio",
           "ci_overlap", "verdict")


@dataclass
class Comparison:
    a: str
    b: str
    threshold: float
    rows: pd.DataFrame  # COLUMNS plus one column per matched parameter
    sides: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # experiment -> column -> [a, b]
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        verdicts = self.rows["verdict"].value_counts() if not self.rows.empty else pd.Series(dtype=int)
        return {v: int(verdicts.get(v, 0)) for v in ("faster", "slower", "no difference")}


# --------------------------------------------------------------------------
def result_sets(path: Path) -> dict[str, list[Path]]:
    """Sweep name -> CSVs of one side: a sweep CSV, or every sweep CSV under a directory."""
    from pmemlab.analysis.resultset import find_experiments, is_sweep_csv, sweep_name

    if path.is_dir():
        found = find_experiments(path)
        if not found:
            raise BadInput(f"no pmemlab sweep CSV under {path}", "give a results directory or a NAME.csv a sweep wrote")
        return found
    if not path.exists():
        raise BadInput(f"{path} does not exist", "give a sweep CSV or a results directory")
    if not is_sweep_csv(path) or not path.is_file():
        raise BadInput(f"{path} is not a sweep CSV (a .summary.csv or .hist.csv rides along with NAME.csv)",
                       "give NAME.csv or the results directory")
    if not is_pmemlab_csv(path):
        read_rows(path)  # says what is wrong with it
    return {sweep_name(path): [path]}


def lower_is_faster(metric: str) -> bool:
    return metric.startswith(("lat_", "elapsed_", "gap_"))


def swept_parameters(*frames: pd.DataFrame) -> list[str]:
    """The parameters that take more than one value in any of `frames`: what a point is."""
    return [name for name in PARAM_NAMES if all(name in f for f in frames)
            and any(f[name].nunique(dropna=False) > 1 for f in frames)]


def _constant_differences(a: pd.DataFrame, b: pd.DataFrame, keys: Sequence[str]) -> dict[str, list[str]]:
    """Columns constant on each side but different between them (the target, host, revision, and
    parameters the two sweeps fixed at different values)."""
    out: dict[str, list[str]] = {}
    for name in [*SIDE_COLUMNS, *(p for p in PARAM_NAMES if p not in keys)]:
        if name not in a or name not in b:
            continue
        va, vb = _values(a[name]), _values(b[name])
        if va != vb:
            out[name] = [", ".join(va) or "-", ", ".join(vb) or "-"]
    return out


def _values(column: pd.Series) -> list[str]:
    return sorted({str(v) for v in column.dropna()})


def _label_key(a: pd.DataFrame, b: pd.DataFrame, name: str, pa: Path, pb: Path) -> list[str]:
    """Match on the target label too when both sides hold the same several targets; refuse when
    one side holds several and they cannot be paired."""
    la, lb = _values(a["target_label"]), _values(b["target_label"])
    if len(la) <= 1 and len(lb) <= 1:
        return []
    if la == lb:
        return ["target_label"]
    raise ConfigError(f"{name}: {pa} holds targets {', '.join(la)} and {pb} holds {', '.join(lb)}",
                      "compare one target with one: --a-target LABEL --b-target LABEL (or the NAME@LABEL.csv files)")


def compare_experiment(name: str, a: Results, b: Results, metric: str | None, threshold: float,
                       pa: Path, pb: Path) -> tuple[pd.DataFrame, dict[str, list[str]], list[str], list[str]]:
    ra, rb = a.ok(), b.ok()
    if ra.empty or rb.empty:
        return pd.DataFrame(), {}, [], []
    keys = [*_label_key(ra, rb, name, pa, pb), *swept_parameters(ra, rb)]
    ra = ra.assign(metric=metric_of(ra, metric))
    rb = rb.assign(metric=metric_of(rb, metric))
    keys_m = [*keys, "metric"]
    by: str | list[str] = keys_m if len(keys_m) > 1 else keys_m[0]  # one key: scalar groups, no pandas warning
    side_a = dict(iter(ra.groupby(by, dropna=False, sort=True)))
    side_b = dict(iter(rb.groupby(by, dropna=False, sort=True)))
    rows = []
    for key in [k for k in side_a if k in side_b]:
        ga, gb = side_a[key], side_b[key]
        key = key if isinstance(key, tuple) else (key,)
        m = key[-1]
        sa = summarize(pd.to_numeric(ga[m], errors="coerce").dropna().tolist())
        sb = summarize(pd.to_numeric(gb[m], errors="coerce").dropna().tolist())
        if sa.n == 0 or sb.n == 0:
            continue
        rows.append({"experiment": name, "point": _point_text(keys, key[:-1]), "metric": m,
                     **dict(zip(keys, key[:-1])), **verdict(sa.mean, sa.ci95, sa.n, sb.mean, sb.ci95, sb.n, m,
                                                          threshold)})
    only_a = [f"{name}: {_point_text(keys_m, k if isinstance(k, tuple) else (k,))}" for k in side_a if k not in side_b]
    only_b = [f"{name}: {_point_text(keys_m, k if isinstance(k, tuple) else (k,))}" for k in side_b if k not in side_a]
    return pd.DataFrame(rows), _constant_differences(a.rows, b.rows, keys), only_a, only_b


def _point_text(keys: Sequence[str], values: Sequence[Any]) -> str:
    return " ".join(f"{k}={_short(v)}" for k, v in zip(keys, values)) or "(one point)"


def _short(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def verdict(a_mean: float, a_ci: float, a_n: int, b_mean: float, b_ci: float, b_n: int, metric: str,
            threshold: float = DEFAULT_THRESHOLD) -> dict[str, Any]:
    """Ratio B/A, CI overlap ('yes', 'no', or 'unknown' with a single repeat on a side) and the
    verdict for B: 'no difference' where the intervals overlap or |B/A - 1| < threshold, else
    'faster' or 'slower' (for a latency metric, lower is faster)."""
    ratio = b_mean / a_mean if a_mean else math.nan
    known = a_n > 1 and b_n > 1 and not (math.isnan(a_ci) or math.isnan(b_ci))
    overlap = "unknown"
    if known:
        overlap = "yes" if (a_mean - a_ci) <= (b_mean + b_ci) and (b_mean - b_ci) <= (a_mean + a_ci) else "no"
    if math.isnan(ratio) or overlap == "yes" or abs(ratio - 1.0) < threshold:
        word = "no difference"
    else:
        better = ratio < 1.0 if lower_is_faster(metric) else ratio > 1.0
        word = "faster" if better else "slower"
    return {"a_mean": a_mean, "a_ci95": a_ci if a_n > 1 else math.nan, "a_n": a_n, "b_mean": b_mean,
            "b_ci95": b_ci if b_n > 1 else math.nan, "b_n": b_n, "ratio": ratio, "ci_overlap": overlap,
            "verdict": word}


def one_target(results: Results, label: str | None, side: Path) -> Results:
    """The rows of one target of a result set (None: all of them)."""
    if label is None:
        return results
    labels = _values(results.rows["target_label"])
    if label not in labels:
        raise ConfigError(f"{side}: {results.name} has no target {label!r} (it has {', '.join(labels) or 'none'})",
                          "give one of its target labels")
    results.rows = results.rows[results.rows["target_label"] == label]
    return results


def compare(a: Path, b: Path, metric: str | None = None, threshold: float = DEFAULT_THRESHOLD,
            a_target: str | None = None, b_target: str | None = None) -> Comparison:
    from pmemlab.analysis.resultset import load_results

    if not 0 <= threshold < 1:
        raise ConfigError(f"--threshold {threshold}: not a fraction in [0, 1)", "e.g. --threshold 0.05 (5 %)")
    sets_a, sets_b = result_sets(a), result_sets(b)
    common = sorted(set(sets_a) & set(sets_b))
    if not common:
        raise BadInput(f"no experiment in both: {a} holds {', '.join(sorted(sets_a))}; "
                           f"{b} holds {', '.join(sorted(sets_b))}", "compare results of the same sweep")
    frames, sides, only_a, only_b, notes = [], {}, [], [], []
    for name in common:
        res_a = one_target(load_results(sets_a[name]), a_target, a)
        res_b = one_target(load_results(sets_b[name]), b_target, b)
        rows, diff, oa, ob = compare_experiment(name, res_a, res_b, metric, threshold, a, b)
        if rows.empty:
            notes.append(f"{name}: no point ran on both sides")
        frames.append(rows)
        sides[name] = diff
        only_a += oa
        only_b += ob
    for name in sorted(set(sets_a) - set(sets_b)):
        notes.append(f"{name}: only in {a}")
    for name in sorted(set(sets_b) - set(sets_a)):
        notes.append(f"{name}: only in {b}")
    rows = pd.concat([f for f in frames if not f.empty], ignore_index=True) if any(not f.empty for f in frames) \
        else pd.DataFrame(columns=list(COLUMNS))
    return Comparison(str(a), str(b), threshold, rows, sides, only_a, only_b, notes)


# --------------------------------------------------------------------------
def _fmt(v: Any, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def format_table(c: Comparison) -> str:
    lines = [f"A: {c.a}", f"B: {c.b}"]
    for name, diff in c.sides.items():
        if diff:
            lines.append(f"{name}: A and B differ in " + "; ".join(f"{k} {va} -> {vb}" for k, (va, vb) in diff.items()))
    if not c.rows.empty:
        table = pd.DataFrame({
            "experiment": c.rows["experiment"], "point": c.rows["point"], "metric": c.rows["metric"],
            "A": [f"{_fmt(m)} ± {_fmt(ci, 2)} (n={n})" for m, ci, n in zip(c.rows["a_mean"], c.rows["a_ci95"], c.rows["a_n"])],
            "B": [f"{_fmt(m)} ± {_fmt(ci, 2)} (n={n})" for m, ci, n in zip(c.rows["b_mean"], c.rows["b_ci95"], c.rows["b_n"])],
            "B/A": [_fmt(r, 3) for r in c.rows["ratio"]],
            "CIs overlap": c.rows["ci_overlap"], "verdict": c.rows["verdict"],
        })
        lines.append(table.to_string(index=False))
    counts = c.counts()
    ratios = pd.to_numeric(c.rows["ratio"], errors="coerce")
    ratios = ratios[ratios > 0]
    geo = f"; geometric mean B/A {math.exp(sum(map(math.log, ratios)) / len(ratios)):.3g}" if len(ratios) else ""
    lines.append(f"{len(c.rows)} points: B faster at {counts['faster']}, slower at {counts['slower']}, no difference "
                 f"at {counts['no difference']}{geo} (± is the 95 % CI over repeats; no difference: the CIs overlap "
                 f"or B is within {c.threshold:.0%} of A)")
    for label, points in (("only in A", c.only_a), ("only in B", c.only_b)):
        if points:
            lines.append(f"{len(points)} points {label}: " + "; ".join(points[:5]) + (" ..." if len(points) > 5 else ""))
    lines.extend(c.notes)
    return "\n".join(lines)


def to_json(c: Comparison) -> str:
    return dumps({
        "a": c.a, "b": c.b, "threshold": c.threshold, "differences": c.sides, "counts": c.counts(),
        "points": c.rows, "only_in_a": c.only_a, "only_in_b": c.only_b, "notes": c.notes,
    })
