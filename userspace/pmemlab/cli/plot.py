"""`pmemlab plot CSV...`: the figure of one experiment from its sweep CSV(s) (pmemlab.plots draws it;
imported when the command runs, so that building the parser stays free of matplotlib)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pmemlab.cli.args import figure_formats
from pmemlab.errors import BadInput, ConfigError, UsageError
from pmemlab.output import add_json, check_writable, examples, print_json


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
    # matplotlib, numpy and pandas: imported when the command runs, not when the parser is built
    from pmemlab.analysis.resultset import is_sweep_csv, load_results, sweep_name
    from pmemlab.plots.recipes import ALL_RECIPES
    from pmemlab.plots.render import default_x, default_y, fallback_figure, generic_figure, recipe_figure, save_figure

    if args.list:
        recipes = {name: (fn.__doc__ or "").strip().splitlines()[0] for name, fn in ALL_RECIPES.items()}
        if args.json:
            print_json([{"name": n, "description": d} for n, d in recipes.items()])
        else:
            for name, doc in recipes.items():
                print(f"{name:<16} {doc}")
        return 0
    if not args.csv:
        raise UsageError("plot: no CSV given", "give the NAME.csv a sweep wrote (or --list for the recipes)")
    if args.recipe and args.recipe not in ALL_RECIPES:
        raise ConfigError(f"--recipe {args.recipe!r}: no such recipe",
                          "recipes: " + ", ".join(ALL_RECIPES) + " (pmemlab plot --list)")
    formats = figure_formats(args.format)
    missing = [str(p) for p in args.csv if not p.is_file()]
    if missing:
        raise BadInput(f"no such CSV: {', '.join(missing)}", "give the NAME.csv a sweep wrote")
    csvs = [p for p in args.csv if is_sweep_csv(p)]  # NAME.hist.csv / NAME.summary.csv ride along with NAME.csv
    if not csvs:
        raise BadInput("no sweep CSV among the arguments (only .hist.csv / .summary.csv)", "give NAME.csv")
    sweeps = sorted({sweep_name(p) for p in csvs})
    if len(sweeps) > 1 and not (args.x or args.y):
        raise ConfigError(f"the CSVs hold {len(sweeps)} sweeps ({', '.join(sweeps)}); a figure shows one",
                          "plot them one at a time, or use plot-all RESULTS_DIR")
    results = load_results(csvs)
    check_writable(args.output)
    if args.x or args.y or args.hue or args.facet:
        for option in ("x", "y", "hue", "facet"):
            column = getattr(args, option)
            if column and column not in results.rows:
                raise ConfigError(f"--{option}: no column {column!r} in {', '.join(str(p) for p in csvs)}",
                                  "pick a column the CSV has (its header lists them)")
        x = args.x or default_x(results)
        fig = generic_figure(results, x, args.y or default_y(results.ok()), args.hue, args.facet,
                             args.logx, args.logy)
        name = args.name or f"{results.name}.{args.y or default_y(results.ok())}-vs-{x}"
    elif (args.recipe or results.name) in ALL_RECIPES:
        fig = recipe_figure(results, args.recipe)
        name = args.name or (args.recipe or results.name)
    else:
        fig = fallback_figure(results)
        name = args.name or results.name
    if "/" in name or name in ("", ".", ".."):
        raise ConfigError(f"--name {name!r}: not a file name", "give a name without /")
    written = save_figure(fig, args.output, name, formats)
    if args.json:
        print_json({"figure": name, "written": written})
    else:
        for path in written:
            print(f"plot: {path}")
    return 0
