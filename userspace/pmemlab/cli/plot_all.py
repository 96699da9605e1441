"""`pmemlab plot-all [RESULTS_DIR]`: every experiment under RESULTS_DIR with its recipe (pmemlab.plots
draws them; imported when the command runs, so that building the parser stays free of matplotlib)."""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from pmemlab.cli.args import figure_formats
from pmemlab.errors import BadInput, PmemlabError
from pmemlab.output import add_json, check_writable, examples, print_json


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
    # matplotlib, numpy and pandas: imported when the command runs, not when the parser is built
    import pandas as pd

    from pmemlab.analysis.resultset import find_experiments, load_results
    from pmemlab.plots.gallery import gallery_problem, gallery_revision_problem, write_gallery
    from pmemlab.plots.recipes import ALL_RECIPES
    from pmemlab.plots.render import fallback_figure, recipe_figure, save_figure

    formats = figure_formats(args.format)
    if not args.results.is_dir():
        raise BadInput(f"{args.results}: {'not a directory' if args.results.exists() else 'no such directory'}",
                       "give the directory the sweeps wrote (results/)")
    groups = find_experiments(args.results)
    if not groups:
        raise BadInput(f"nothing to plot: no pmemlab sweep CSV under {args.results}/",
                       "run a sweep first (make demo, pmemlab sweep), or give the directory it wrote")
    check_writable(args.output)
    written: dict[str, list[Path]] = {}
    failed: dict[str, str] = {}
    revisions: dict[str, set[str]] = defaultdict(set)
    for name, paths in sorted(groups.items()):
        try:
            results = load_results(paths)
            for rev in results.rows.get("toolkit_version", pd.Series(dtype=str)).dropna().astype(str):
                revisions[rev].add(name)
            if name in ALL_RECIPES:
                fig = recipe_figure(results)
            else:
                fig = fallback_figure(results)
            written[name] = save_figure(fig, args.output, name, formats)
            if not args.json:
                print(f"plot-all: {name} ({len(paths)} CSV) -> {', '.join(str(p) for p in written[name])}")
        except (PmemlabError, KeyError, ValueError) as exc:
            failed[name] = (f"{exc.cause}; fix: {exc.fix}" if exc.fix else exc.cause) \
                if isinstance(exc, PmemlabError) else f"{type(exc).__name__}: {exc}"
    problem = gallery_problem(revisions)
    if problem:
        print(f"pmemlab: plot-all: not gallery-ready: {problem}", file=sys.stderr)
    gallery: dict[str, str] | None = None
    if args.gallery is not None and not failed:
        why = problem or gallery_revision_problem(revisions)
        if why:
            print(f"pmemlab: plot-all: gallery {args.gallery} not updated: {why}", file=sys.stderr)
        else:
            gallery = write_gallery(args.gallery, {name: groups[name] for name in written}, written)
            if not args.json:
                print(f"plot-all: gallery {args.gallery} rendered at {gallery['revision'][:12]}")
    if args.json:
        print_json({"written": written, "failed": failed, "not_gallery_ready": problem or None,
                    "gallery": gallery})
    if failed:
        raise PmemlabError(f"plot-all: {len(failed)} of {len(groups)} experiments not rendered, one per line above",
                           "see why above; `pmemlab plot NAME.csv` renders one alone",
                           details=[f"{name}: not rendered: {why}" for name, why in failed.items()])
    return 0
