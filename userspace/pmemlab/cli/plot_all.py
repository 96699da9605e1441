"""`pmemlab plot-all [RESULTS_DIR]`: every experiment under RESULTS_DIR with its recipe (pmemlab.plots
draws them; imported when the command runs, so that building the parser stays free of matplotlib)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pmemlab.output import add_json, examples


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="render every sweep CSV under RESULTS_DIR with its experiment's recipe",
                       description="Render every experiment found under RESULTS_DIR (NAME.csv and NAME@LABEL.csv "
                                   "merge) with its recipe; exits 1 when one could not be rendered.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=examples("pmemlab plot-all", "pmemlab plot-all results -o plots --format png"))
    p.add_argument("results", type=Path, nargs="?", default=Path("results"), metavar="RESULTS_DIR")
    p.add_argument("-o", "--output", type=Path, default=Path("plots"), metavar="PLOTS_DIR")
    p.add_argument("--format", default="png,svg", help="comma list of formats (png,svg)")
    p.add_argument("--gallery", type=Path, default=None, metavar="DIR",
                   help="also render the figures as the gallery DIR (PNG and gallery.json with the revision), "
                        "only from results of the clean revision the tree is at (make demo: docs/gallery)")
    add_json(p, "the files written per experiment")


def run(args: argparse.Namespace) -> int:
    from pmemlab.plots.render import plot_all_command

    return plot_all_command(args)
