"""The generic figure, saving figures, and the `plot` / `plot-all` commands."""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd
from matplotlib.figure import Figure

from pmemlab.errors import BadInput, ConfigError, PmemlabError, UsageError
from pmemlab.output import check_writable, print_json
from pmemlab.plots.data import Results, find_experiments, is_sweep_csv, load_results, size_label, sweep_name
from pmemlab.plots.recipes import ALL_RECIPES
from pmemlab.plots.style import (
    bytes_axis, data_ticks, finish, legend, log_label, new_figure, note, series, zero_based,
)
from pmemlab.params import PARAM_NAMES
from pmemlab.table import SIZE_PARAMS

# the columns in bytes: the size parameters (the parameter table's) and the target's sizes
SIZE_COLUMNS = frozenset({*SIZE_PARAMS, "target_size", "target_page_size"})
Y_UNITS = {"bw_gbps": "Bandwidth (GB/s)", "bw_mbps": "Bandwidth (MB/s)", "ewr": "Effective write ratio"}


def axis_label(column: str) -> str:
    if column in Y_UNITS:
        return Y_UNITS[column]
    if column.startswith("lat_ns_"):
        return f"Latency {column[len('lat_ns_'):]} (ns)"
    if column in SIZE_COLUMNS:
        return f"{column} (bytes)"
    return column


def default_y(df: pd.DataFrame) -> str:
    """bw_gbps for bandwidth sweeps, lat_ns_mean for latency sweeps."""
    if "mode" in df and (df["mode"] == "latency").all() and "lat_ns_mean" in df:
        return "lat_ns_mean"
    return "bw_gbps"


def varied_parameters(results: Results) -> list[str]:
    """Parameters that take more than one value among the successful runs, in parameter order."""
    ok = results.ok()
    return [key for key in PARAM_NAMES if key in ok and ok[key].nunique() > 1]


def default_x(results: Results) -> str:
    """A numeric parameter that varies (sizes first), else any that varies."""
    varied = varied_parameters(results)
    ok = results.ok()
    numeric = [k for k in varied if pd.api.types.is_numeric_dtype(ok[k])]
    sizes = [k for k in numeric if k in SIZE_COLUMNS]
    for choice in (sizes, numeric, varied):
        if choice:
            return choice[0]
    raise ConfigError(f"{results.name}: no parameter varies; nothing to put on the x axis", "give --x COLUMN")


def default_hue(results: Results, x: str) -> str | None:
    """The first other parameter that varies: one series per value instead of an average over it."""
    return next((k for k in varied_parameters(results) if k != x), None)


def generic_figure(results: Results, x: str, y: str, hue: str | None = None, facet: str | None = None,
                   logx: bool = False, logy: bool = False) -> Figure:
    """y against x, one series per hue value, one panel per facet value, error bars from repeats."""
    df = results.ok()
    for column in (x, y, hue, facet):
        if column and column not in df.columns and column not in results.rows.columns:
            raise ConfigError(f"no column {column!r} in {results.name}",
                              "columns: " + ", ".join(c for c in results.rows.columns[:60]))
    panels = list(dict.fromkeys(df[facet])) if facet and not df.empty else [None]
    fig, axes = new_figure(len(panels))
    for ax, value in zip(axes, panels):
        sub = df if facet is None else df[df[facet] == value]
        if sub.empty:
            note(ax, "no successful runs")
        else:
            series(ax, sub, x, y, hue, label_of=_value_label(hue))
        if facet is not None:
            ax.set_title(f"{facet} = {_value_label(facet)(value)}", fontsize=9)
        numeric = not sub.empty and pd.api.types.is_numeric_dtype(sub[x])
        if logx:
            if x in SIZE_COLUMNS:
                bytes_axis(ax, sub[x] if numeric else None)
            else:
                ax.set_xscale("log", base=2)
                if numeric:
                    data_ticks(ax, sub[x])
        elif numeric:
            data_ticks(ax, sub[x], size_label if x in SIZE_COLUMNS else (lambda v: f"{v:g}"))
        if logy:
            ax.set_yscale("log")
            ax.set_ylabel(log_label(axis_label(y)))
        else:
            ax.set_ylabel(axis_label(y))
            if not sub.empty and (pd.to_numeric(sub[y], errors="coerce").dropna() >= 0).all():
                zero_based(ax)
        ax.set_xlabel(axis_label(x))
        legend(ax, hue)
    return finish(fig, results, f"{results.name}: {y} vs {x} (mean over repeats)")


def fallback_figure(results: Results) -> Figure:
    """A sweep without a recipe: y against a varied parameter, one series per another."""
    x = default_x(results)
    return generic_figure(results, x, default_y(results.ok()), default_hue(results, x), logx=x in SIZE_COLUMNS)


def _value_label(column: str | None) -> Callable[[Any], str]:
    if column in SIZE_COLUMNS:
        return lambda v: size_label(v)
    return str


def recipe_figure(results: Results, recipe: str | None = None) -> Figure:
    name = recipe or results.name
    if name not in ALL_RECIPES:
        raise ConfigError(f"no recipe {name!r}", "recipes: " + ", ".join(ALL_RECIPES) + "; or give --x and --y")
    return ALL_RECIPES[name](results)


def save_figure(fig: Figure, out_dir: Path, name: str, formats: Sequence[str] = ("png", "svg")) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = out_dir / f"{name}.{fmt}"
        fig.savefig(path, dpi=150)
        paths.append(path)
    return paths


def _formats(text: str) -> list[str]:
    formats = [f.strip().lower() for f in text.split(",") if f.strip()]
    bad = [f for f in formats if f not in ("png", "svg", "pdf")]
    if bad or not formats:
        raise ConfigError(f"--format {text!r}: unknown format {bad[0] if bad else ''}", "png, svg or pdf")
    return formats


# --------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------
def plot_command(args: argparse.Namespace) -> int:
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
    formats = _formats(args.format)
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


def plot_all_command(args: argparse.Namespace) -> int:
    formats = _formats(args.format)
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


def gallery_problem(revisions: dict[str, set[str]]) -> str:
    """Why figures of results recorded at these toolkit revisions (revision -> experiments) do
    not make one gallery: several revisions, or a modified tree (-dirty); '' when they do."""
    if not revisions:
        return ""
    dirty = sorted(r for r in revisions if r.endswith("-dirty"))
    parts = []
    if len(revisions) > 1:
        parts.append(f"the results come from {len(revisions)} revisions ("
                     + "; ".join(f"{r}: {', '.join(sorted(n))}" for r, n in sorted(revisions.items())) + ")")
    if dirty:
        parts.append(f"{', '.join(dirty)} {'is a modified tree' if len(dirty) == 1 else 'are modified trees'}")
    return " and ".join(parts) + ("; record them again from one clean commit" if parts else "")


GALLERY_MANIFEST = "gallery.json"
GALLERY_RECIPES = "userspace/pmemlab/plots"  # what a gallery shows: figures drawn by this code


def git_head(top: Path | None = None) -> tuple[str, bool] | None:
    """(full commit of the tree this package runs from, whether the tree is clean), or None
    outside a git checkout."""
    import subprocess

    here = top or Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=60, check=False)
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0 or dirty.returncode != 0:
        return None
    return head.stdout.strip(), not dirty.stdout.strip()


def gallery_revision_problem(revisions: dict[str, set[str]]) -> str:
    """Why results recorded at `revisions` cannot become the gallery rendered by this tree: it is
    not a git checkout, it is modified, or the results come from another commit ('' : they can)."""
    head = git_head()
    if head is None:
        return "not a git checkout: a gallery names the commit it was rendered at"
    commit, clean = head
    if not clean:
        return "the tree is modified: commit first, then make demo renders the gallery at that commit"
    recorded = sorted(revisions)
    if len(recorded) != 1 or not commit.startswith(recorded[0].split("-g")[-1]):
        return (f"the results come from {', '.join(recorded) or 'no recorded revision'}, the tree is at "
                f"{commit[:12]}: run the sweeps again")
    return ""


def write_gallery(out: Path, groups: dict[str, list[Path]], written: dict[str, list[Path]] | None = None) -> dict[str, str]:
    """The figures of `groups` as the gallery `out`: NAME.png each (as plot-all renders them, at
    150 dpi: the PNG it `written` when there is one), a gallery.json naming the commit they were
    recorded and rendered at and each PNG's SHA-256; PNGs of experiments no longer shown are
    removed."""
    import shutil

    import hashlib
    import json
    from datetime import datetime, timezone

    head = git_head()
    assert head is not None  # gallery_revision_problem said so
    out.mkdir(parents=True, exist_ok=True)
    figures = {}
    for name, paths in sorted(groups.items()):
        made = [p for p in (written or {}).get(name, []) if p.suffix == ".png"]
        if made:
            png = out / f"{name}.png"
            if made[0].resolve() != png.resolve():
                shutil.copyfile(made[0], png)
        else:
            fig = recipe_figure(load_results(paths)) if name in ALL_RECIPES else fallback_figure(load_results(paths))
            (png,) = save_figure(fig, out, name, ("png",))
        figures[name] = {"png": png.name, "sha256": hashlib.sha256(png.read_bytes()).hexdigest()}
    for stale in out.glob("*.png"):
        if stale.stem not in figures:
            stale.unlink()
    manifest = {"revision": head[0], "recipes": GALLERY_RECIPES,
                "rendered_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "figures": figures}
    (out / GALLERY_MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return {"revision": head[0], "manifest": str(out / GALLERY_MANIFEST)}
