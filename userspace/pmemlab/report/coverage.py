"""The report's coverage: each paper figure the results reproduce, its claim, the experiment,
what this run deviates in from the paper (threads, instruction width, DIMMs and interleave,
prefetchers, statistic, samples, scale), and the figures not run (plots/references.FIGURES holds
the papers' side)."""

from __future__ import annotations

import html
from typing import Sequence

import pandas as pd

from pmemlab.analysis.noise import FEW_REPEATS
from pmemlab.analysis.resultset import Results, count_text, repeats_text, scale_of
from pmemlab.plots.recipes import STATISTIC, dimm_text, target_kind
from pmemlab.plots.references import FIGURES, PaperFigure
from pmemlab.report.conditions import machine_widths
from pmemlab.report.experiments import Section
from pmemlab.report.markup import html_table, md_table, values_text

RUN_ONE = ("Each runs with make sweep CONFIG=configs/NAME.toml TARGET=/dev/pmemN (VM=1: in the emulated guest), "
           "then pmemlab report RESULTS_DIR.")
COVERAGE_COLUMNS = ["paper figure", "claim", "experiment", "this run", "deviations from the paper"]


def coverage_table(sections: Sequence[Section]) -> pd.DataFrame:
    """A row per section that reproduces a paper figure."""

    rows = []
    for s in sections:
        if s.figure is None:
            continue
        rows.append({"paper figure": s.figure.source, "claim": s.figure.claim, "experiment": s.name,
                     "this run": s.ran, "deviations from the paper": "\n".join(deviations(s.figure, s.results))})
    return pd.DataFrame(rows, columns=COVERAGE_COLUMNS)


def not_run(sections: Sequence[Section]) -> list[PaperFigure]:
    done = {s.name for s in sections}
    return [f for f in FIGURES if f.experiment not in done]


# --------------------------------------------------------------------------
# the deviations of a run from its paper figure
# --------------------------------------------------------------------------
def deviations(figure: PaperFigure, results: Results) -> list[str]:
    """How this run of the figure's experiment differs from the paper's: threads, instruction
    width, DIMMs and interleave, prefetchers, statistic, samples, scale."""

    ok = results.ok()
    if ok.empty:
        return ["no successful runs"]
    return [*thread_deviations(figure, ok), *width_deviations(figure, results, ok), *dimm_deviations(figure, ok),
            *prefetch_deviations(figure, ok), *statistic_deviations(figure, results, ok),
            *scale_deviations(results, ok)]


def thread_deviations(figure: PaperFigure, ok: pd.DataFrame) -> list[str]:
    threads = sorted({int(t) for t in ok["threads"].dropna()})
    if not (figure.thread_counts and max(threads) < max(figure.thread_counts)):
        return []
    modes = list(dict.fromkeys(ok["mode"])) if "mode" in ok else []
    if len(modes) > 1:  # each mode its own thread count (flush-instr: bandwidth with several, latency with 1)
        per_mode = ", ".join(f"{values_text(ok.loc[ok['mode'] == m, 'threads'])} ({m})" for m in modes)
        return [f"threads {per_mode} (paper: {figure.threads})"]
    return [f"threads {values_text(threads)} (paper: {figure.threads})"]


def width_deviations(figure: PaperFigure, results: Results, ok: pd.DataFrame) -> list[str]:
    widths = sorted({int(w) for w in pd.to_numeric(ok.get("width_used", pd.Series(dtype=float)), errors="coerce").dropna()})
    if not (figure.width and widths and any(w < figure.width for w in widths)):
        return []
    have = machine_widths(results)
    missing = f"; this CPU's widest is {max(have)} B" if have and max(have) < figure.width else ""
    return [f"{values_text(widths, sizes=True)} instructions (paper: {figure.width} B"
            f"{', AVX-512' if figure.width == 64 else ''}{missing})"]


def dimm_deviations(figure: PaperFigure, ok: pd.DataFrame) -> list[str]:
    """The paper's DIMMs and DRAM against the targets that ran."""
    out = []
    ours = [dimm_text(ok, t) for t in dict.fromkeys(ok["target_label"])]
    kinds = {target_kind(ok, t) for t in dict.fromkeys(ok["target_label"])}
    wanted = [t for t in figure.targets if t not in ("DRAM",) or "dram" not in kinds]
    pmem_paper = [t for t in wanted if "DIMM" in t]
    pmem_ours = [o for o in ours if "DIMM" in o]
    if pmem_paper and not any(same_dimms(p, o) for p in pmem_paper for o in pmem_ours):
        out.append(f"pmem: {', '.join(pmem_ours) or 'none'} (paper: {', '.join(pmem_paper)})")
    elif len(pmem_paper) > 1:
        absent = [p for p in pmem_paper if not any(same_dimms(p, o) for o in pmem_ours)]
        if absent:
            out.append(f"no {' or '.join(absent)} namespace")
    if "DRAM" in figure.targets and "dram" not in kinds:
        out.append("no DRAM target")
    return out


def same_dimms(paper: str, ours: str) -> bool:
    """'1 DIMM' against '1 DIMM, non-interleaved'; '6 DIMMs interleaved' against '6 DIMMs interleaved'."""
    return paper.split()[0] == ours.split()[0] and ("DIMM" in ours)


def prefetch_deviations(figure: PaperFigure, ok: pd.DataFrame) -> list[str]:
    prefetch = sorted(set(ok.get("prefetch", pd.Series(dtype=str)).dropna().astype(str)))
    if not (figure.prefetch == "off" and "off" not in prefetch):
        return []
    control = sorted(set(ok.get("prefetch_control", pd.Series(dtype=str)).dropna().astype(str)))
    why = " (this CPU offers no control)" if control == ["none"] else ""
    return [f"prefetchers on{why} (paper: off)"]


def statistic_deviations(figure: PaperFigure, results: Results, ok: pd.DataFrame) -> list[str]:
    """The statistic the figure shows and the samples per point, against the paper's."""
    out = []
    ours_stat = STATISTIC.get(results.name, "")
    if figure.statistic and ours_stat and ours_stat != figure.statistic:
        out.append(f"statistic: {ours_stat} (paper: {figure.statistic})")
    if figure.samples and "lat_n" in ok:
        per_point = pd.to_numeric(ok["lat_n"], errors="coerce").groupby([ok["target_label"], ok["point_key"]]).sum()
        if len(per_point):
            out.append(f"{count_text(per_point.min())} samples per point (paper: {figure.samples})")
    return out


def scale_deviations(results: Results, ok: pd.DataFrame) -> list[str]:
    repeats = ok.groupby(["source_csv", "point_key"])["repeat"].nunique()
    scale = scale_of(results.sidecars)
    if scale and scale != "full" or repeats.max() < FEW_REPEATS:
        return [f"{scale + ' scale, ' if scale else ''}{repeats_text(repeats)} per point"]
    return []


# --------------------------------------------------------------------------
# on the page
# --------------------------------------------------------------------------
def coverage_html(coverage: pd.DataFrame, missing: Sequence[PaperFigure]) -> list[str]:
    out = ["<h2 id=coverage>What this run reproduces</h2>"]
    if not coverage.empty:
        out.append(html_table(coverage, table_id="coverage-table"))
    else:
        out.append("<p id=coverage-table>None of these experiments reproduces a paper figure.</p>")
    if missing:
        out.append("<p id=not-run><b>Not run here:</b> " + "; ".join(
            f"{html.escape(f.source)} (<code>configs/{html.escape(f.experiment)}.toml</code>)" for f in missing)
            + f". {html.escape(RUN_ONE)}</p>")
    return out


def coverage_markdown(coverage: pd.DataFrame, missing: Sequence[PaperFigure]) -> list[str]:
    out = ["## What this run reproduces", ""]
    if not coverage.empty:
        out += [md_table(coverage), ""]
    if missing:
        out += ["**Not run here:** " + "; ".join(f"{f.source} (`configs/{f.experiment}.toml`)" for f in missing)
                + f". {RUN_ONE}", ""]
    return out
