"""`pmemlab report RESULTS_DIR`: one self-contained HTML page (and Markdown) of a results
directory (pmemlab.report.page writes it; imported when the command runs: pandas, matplotlib)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pmemlab import report
from pmemlab.errors import BadInput
from pmemlab.output import add_json, examples, print_json


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="one self-contained HTML page (and Markdown) of a results directory",
                       description=report.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=examples("pmemlab report results -o report    # then open report/report.html",
                                       "pmemlab report results --name demo --json"))
    p.add_argument("results", type=Path, metavar="RESULTS_DIR", help="directory of sweep CSVs, curves CSVs and probe directories (results/)")
    p.add_argument("-o", "--output", type=Path, default=None, metavar="DIR",
                   help="directory for NAME.html, NAME.md and NAME-figures/ (default: RESULTS_DIR)")
    p.add_argument("--name", default="report", help="file name of the report, without extension (report)")
    add_json(p, "the paths written")


def run(args: argparse.Namespace) -> int:
    if not args.results.is_dir():
        raise BadInput(f"{args.results}: {'not a directory' if args.results.exists() else 'no such directory'}",
                       "give the directory the sweeps wrote (results/)")
    out_dir = args.output or args.results
    from pmemlab.report.page import write_report  # pandas, matplotlib: not while the parser is built

    html_path, md_path = write_report(args.results, out_dir, args.name)
    if args.json:
        print_json({"html": html_path, "markdown": md_path, "figures": out_dir / f"{args.name}-figures"})
        return 0
    print(f"report: {html_path}")
    print(f"report: {md_path}")
    return 0
