"""`pmemlab plot CSV...`: the figure of one experiment from its sweep CSV(s) (pmemlab.plots draws it;
imported when the command runs, so that building the parser stays free of matplotlib)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pmemlab.output import add_json, examples


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="render sweep CSVs: the experiment's recipe, or a generic plot with --x/--y",
                       description="Render the figure of one experiment from its sweep CSV(s): the recipe named "
                                   "by the sweep (or --recipe), or a generic plot of --y against --x.",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=examples("pmemlab plot results/bw-threads.csv -o plots",
                                       "pmemlab plot results/bw-size@dram.csv results/bw-size@pmem.csv",
                                       "pmemlab plot results/t.csv --x access_size --y bw_gbps --hue op --logx",
                                       "pmemlab plot --list"))
    p.add_argument("csv", type=Path, nargs="*",
                   help="sweep CSV(s) (NAME.csv; several are merged, e.g. one per target)")
    p.add_argument("-o", "--output", type=Path, default=Path("plots"), metavar="DIR", help="directory for the figures (plots/)")
    p.add_argument("--x", help="column on the x axis (generic plot)")
    p.add_argument("--y", help="column on the y axis (generic plot; default bw_gbps or lat_ns_mean)")
    p.add_argument("--hue", help="column that makes one series per value")
    p.add_argument("--facet", help="column that makes one panel per value")
    p.add_argument("--logx", action="store_true", help="log2 x axis")
    p.add_argument("--logy", action="store_true", help="log10 y axis")
    p.add_argument("--recipe", help="recipe to use instead of the one named by the sweep (see --list)")
    p.add_argument("--list", action="store_true", help="list the recipes and exit (no CSV needed)")
    p.add_argument("--name", help="file name of the figure, without extension")
    p.add_argument("--format", default="png,svg", help="comma list of formats (png,svg)")
    add_json(p, "the files written (with --list: the recipes)")


def run(args: argparse.Namespace) -> int:
    from pmemlab.plots.render import plot_command

    return plot_command(args)
