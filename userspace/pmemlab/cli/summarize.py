"""`pmemlab summarize NAME.csv`: per point mean, stddev, 95 % CI across repeats and a noise flag;
prints the table and (re)writes NAME.summary.csv."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pmemlab.analysis import noise
from pmemlab import params as P
from pmemlab.cli.parser import command_parser
from pmemlab.errors import BadInput
from pmemlab.output import add_json, print_json
from pmemlab.sweep import summarize_csv, write_summary

if TYPE_CHECKING:  # pandas is imported where the summary is read: `pmemlab run` never needs it
    import pandas as pd

SUMMARY_TABLE_LIMIT = 60  # rows printed (the CSV and --json have all)


def add_parser(sub: Any, name: str) -> None:
    p = command_parser(sub, name, "per point: mean, stddev, 95%% CI across repeats and a noise flag; "
                                  "prints the table and (re)writes NAME.summary.csv",
                       ["pmemlab summarize results/bw-threads.csv",
                        "pmemlab summarize results/idle-latency.csv --json"])
    p.add_argument("csv", type=Path, help="a sweep CSV (NAME.csv)")
    p.add_argument("--no-write", action="store_true", help="print only; leave NAME.summary.csv as it is")
    add_json(p, "the summary rows")


def run(args: argparse.Namespace) -> int:
    from pmemlab.analysis.resultset import is_sweep_csv

    if not args.csv.exists():
        raise BadInput(f"{args.csv} does not exist", "give the NAME.csv a sweep wrote")
    if not is_sweep_csv(args.csv):
        raise BadInput(f"{args.csv} is not a sweep CSV (a .summary.csv or .hist.csv rides along with NAME.csv)",
                       "give NAME.csv")
    table = summarize_csv(args.csv)  # refuses a CSV that is not pmemlab's before anything is written
    path = None if args.no_write else write_summary(args.csv)
    warning = noise.sweep_warning(table, path.name if path else "")
    if args.json:
        print_json({"csv": args.csv, "summary": path, "points": table, "noise_warning": warning or None})
        return 0
    print(format_summary(table))
    if path is not None:
        print(f"summary -> {path}")
    if warning:
        print(f"pmemlab: warning: {warning}", file=sys.stderr)
    return 0


def format_summary(table: pd.DataFrame) -> str:
    """The summary as a table: per point what varies (and the target, where several), repeats, the
    point's metric as mean ± 95 % CI, its CV and the noise judgement."""
    import pandas as pd

    if table.empty:
        return "no ok runs to summarize"
    varies = [c for c in ("target", *P.PARAM_NAMES) if c in table and table[c].nunique(dropna=False) > 1]
    rows = []
    for _, r in table.iterrows():
        metric = str(r["metric"])
        mean, ci = r.get(f"{metric}_mean"), r.get(f"{metric}_ci95")
        rows.append({**{c: r[c] for c in varies}, "n": int(r["n"]), "metric": metric,
                     "mean": _num(mean), "± 95% CI": _num(ci), "CV %": _num(r.get("cv_pct"), 2),
                     "steal % max": _num(r.get("steal_pct_max"), 2), "noise": r.get("noise") or ""})
    df = pd.DataFrame(rows)
    if df["steal % max"].eq("-").all():
        df = df.drop(columns=["steal % max"])
    if not df["noise"].astype(bool).any():
        df = df.drop(columns=["noise"])
    shown = str(df.head(SUMMARY_TABLE_LIMIT).to_string(index=False))
    more = f"\n({len(df) - SUMMARY_TABLE_LIMIT} more points in the CSV)" if len(df) > SUMMARY_TABLE_LIMIT else ""
    return shown + more


def _num(value: Any, digits: int = 4) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "-"
    return "-" if math.isnan(v) else f"{v:.{digits}g}"
