"""The report's page: its sections read from a results directory (coverage, run conditions,
warnings, the experiments, curves and device cards) rendered as HTML and Markdown
(`write_report`). What the page holds, in order: pmemlab.report."""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import pandas as pd

from pmemlab import __version__
from pmemlab.analysis.compare import swept_parameters
from pmemlab.analysis.noise import FEW_REPEATS
from pmemlab.analysis.resultset import Results, count_text, find_experiments, latency_stats, repeats_text, scale_of
from pmemlab.errors import ConfigError
from pmemlab.host.machine import toolkit_revision
from pmemlab.output import check_writable
from pmemlab.plots.marks import emulation_notice
from pmemlab.plots.recipes import STATISTIC, dimm_text, target_kind
from pmemlab.plots.references import FIGURES, PaperFigure
from pmemlab.report.cards import cards_html, cards_markdown, device_cards
from pmemlab.report.conditions import (
    agg_ok, conditions_html, conditions_markdown, distinct, machine_facts, machine_widths, rows_by_target,
    target_steps, targets_table, timing_table, tsc_text, user_backend,
)
from pmemlab.report.curves import curves_families, curves_html, curves_markdown
from pmemlab.report.experiments import Section, build_sections, experiment_html, experiment_markdown
from pmemlab.report.markup import STYLE, html_table as _html_table, md_table as _md_table, values_text

RUN_ONE = ("Each runs with make sweep CONFIG=configs/NAME.toml TARGET=/dev/pmemN (VM=1: in the emulated guest), "
           "then pmemlab report RESULTS_DIR.")
BARE_METAL_IRQOFF = 99.9  # % of a module run with interrupts off on bare metal (docs/method.md)
STEP_MATTERS_NS = 2.0  # a resolved clock step from this size on is worth a warning


# --------------------------------------------------------------------------
# coverage: the papers' figures against this run
# --------------------------------------------------------------------------
def deviations(figure: PaperFigure, results: Results) -> list[str]:
    """How this run of the figure's experiment differs from the paper's: threads, instruction
    width, DIMMs and interleave, prefetchers, statistic, samples, scale."""

    ok = results.ok()
    if ok.empty:
        return ["no successful runs"]
    out = []
    threads = sorted({int(t) for t in ok["threads"].dropna()})
    if figure.thread_counts and max(threads) < max(figure.thread_counts):
        modes = list(dict.fromkeys(ok["mode"])) if "mode" in ok else []
        if len(modes) > 1:  # each mode its own thread count (flush-instr: bandwidth with several, latency with 1)
            per_mode = ", ".join(f"{values_text(ok.loc[ok['mode'] == m, 'threads'])} ({m})" for m in modes)
            out.append(f"threads {per_mode} (paper: {figure.threads})")
        else:
            out.append(f"threads {values_text(threads)} (paper: {figure.threads})")
    widths = sorted({int(w) for w in pd.to_numeric(ok.get("width_used", pd.Series(dtype=float)), errors="coerce").dropna()})
    if figure.width and widths and any(w < figure.width for w in widths):
        have = machine_widths(results)
        missing = f"; this CPU's widest is {max(have)} B" if have and max(have) < figure.width else ""
        out.append(f"{values_text(widths, sizes=True)} instructions (paper: {figure.width} B"
                   f"{', AVX-512' if figure.width == 64 else ''}{missing})")
    ours = [dimm_text(ok, t) for t in dict.fromkeys(ok["target_label"])]
    kinds = {target_kind(ok, t) for t in dict.fromkeys(ok["target_label"])}
    wanted = [t for t in figure.targets if t not in ("DRAM",) or "dram" not in kinds]
    pmem_paper = [t for t in wanted if "DIMM" in t]
    pmem_ours = [o for o in ours if "DIMM" in o]
    if pmem_paper and not any(_same_dimms(p, o) for p in pmem_paper for o in pmem_ours):
        out.append(f"pmem: {', '.join(pmem_ours) or 'none'} (paper: {', '.join(pmem_paper)})")
    elif len(pmem_paper) > 1:
        absent = [p for p in pmem_paper if not any(_same_dimms(p, o) for o in pmem_ours)]
        if absent:
            out.append(f"no {' or '.join(absent)} namespace")
    if "DRAM" in figure.targets and "dram" not in kinds:
        out.append("no DRAM target")
    prefetch = sorted(set(ok.get("prefetch", pd.Series(dtype=str)).dropna().astype(str)))
    if figure.prefetch == "off" and "off" not in prefetch:
        control = sorted(set(ok.get("prefetch_control", pd.Series(dtype=str)).dropna().astype(str)))
        why = " (this CPU offers no control)" if control == ["none"] else ""
        out.append(f"prefetchers on{why} (paper: off)")
    ours_stat = STATISTIC.get(results.name, "")
    if figure.statistic and ours_stat and ours_stat != figure.statistic:
        out.append(f"statistic: {ours_stat} (paper: {figure.statistic})")
    if figure.samples and "lat_n" in ok:
        per_point = pd.to_numeric(ok["lat_n"], errors="coerce").groupby([ok["target_label"], ok["point_key"]]).sum()
        if len(per_point):
            out.append(f"{count_text(per_point.min())} samples per point (paper: {figure.samples})")
    repeats = ok.groupby(["source_csv", "point_key"])["repeat"].nunique()
    scale = scale_of(results.sidecars)
    if scale and scale != "full" or repeats.max() < FEW_REPEATS:

        out.append(f"{scale + ' scale, ' if scale else ''}{repeats_text(repeats)} per point")
    return out


def _same_dimms(paper: str, ours: str) -> bool:
    """'1 DIMM' against '1 DIMM, non-interleaved'; '6 DIMMs interleaved' against '6 DIMMs interleaved'."""
    return paper.split()[0] == ours.split()[0] and ("DIMM" in ours)


def coverage_table(sections: Sequence[Section]) -> pd.DataFrame:

    rows = []
    for s in sections:
        if s.figure is None:
            continue
        rows.append({"paper figure": s.figure.source, "claim": s.figure.claim, "experiment": s.name,
                     "this run": s.ran, "deviations from the paper": "\n".join(deviations(s.figure, s.results))})
    return pd.DataFrame(rows, columns=["paper figure", "claim", "experiment", "this run", "deviations from the paper"])


def not_run(sections: Sequence[Section]) -> list[PaperFigure]:
    done = {s.name for s in sections}
    return [f for f in FIGURES if f.experiment not in done]


# --------------------------------------------------------------------------
# warnings: timing validity first
# --------------------------------------------------------------------------
def timing_warnings(sections: Sequence[Section]) -> list[str]:
    """The facts that make times incomparable or coarse, each with what it means for the figures."""

    out = []
    by_target = rows_by_target(sections)
    bad_tsc = {label: grp for label, grp in by_target.items()
               if "0" in distinct(grp, "tsc_invariant") or "0" in distinct(grp, "tsc_reliable")}
    if bad_tsc:
        grp = pd.concat(bad_tsc.values())
        out.append(f"TSC {tsc_text(grp).split(', ', 1)[-1]} (clocksource {'/'.join(distinct(grp, 'clocksource')) or '?'}) "
                   f"on {', '.join(bad_tsc)}: ticks become ns at the kernel's tsc_khz and the threads' common "
                   "window spans CPUs whose TSCs may disagree, so no latency or bandwidth here is comparable with "
                   "a bare-metal run (docs/method.md, \"The TSC\")")
    steps = {label: step for label, step in target_steps(sections).items()
             if step is not None and step.resolved and step.ns >= STEP_MATTERS_NS}
    if steps:
        step = next(iter(steps.values()))
        below = []
        for s in sections:
            ok = s.results.ok()
            lat = ok[ok["mode"] == "latency"] if "mode" in ok else ok.iloc[0:0]
            if lat.empty:
                continue
            keys = ["target_label", *[k for k in swept_parameters(lat) if k != "mode"]]
            stats = latency_stats(s.results, lat, keys)
            under = int((stats["p50"] < step.ns).sum())
            if under:
                below.append(f"{s.name} {under} of {len(stats)}")
        smallest = ", ".join(f"{v:g}" for v in step.values_ns)
        out.append(f"the clock advances in steps of {step.ns:.3g} ns ({step.ticks:.0f} TSC ticks) on "
                   f"{', '.join(steps)}: every latency sample is a multiple (the smallest: {smallest} ns), so a value "
                   "below one step is not measured"
                   + (f"; medians below it: {'; '.join(below)} (hatched bars, open triangles)" if below else "")
                   + "; percentiles move in whole steps")
    low: list[tuple[str, float, float]] = []
    for label, grp in by_target.items():
        if user_backend(grp):
            continue
        values = pd.to_numeric(agg_ok(grp).get("irqoff_pct", pd.Series(dtype=float)), errors="coerce").dropna()
        if len(values) and values.min() < BARE_METAL_IRQOFF - 1:
            low.append((label, float(values.min()), float(values.max())))
    if low:
        lo, hi = min(v for _, v, _ in low), max(v for _, _, v in low)
        out.append(f"interrupts were off for only {lo:.0f}-{hi:.0f} % of the timed runs on "
                   f"{', '.join(label for label, _, _ in low)} (a module run on bare metal: above "
                   f"{BARE_METAL_IRQOFF:g} %): the gaps between segments, where the CPU takes its interrupts, are "
                   "inside the common window, so aggregate bandwidth is low by up to that share")
    narrow = []
    for s in sections:
        if s.figure is None or not s.figure.width:
            continue
        widths = sorted({int(w) for w in pd.to_numeric(s.results.ok().get("width_used", pd.Series(dtype=float)),
                                                       errors="coerce").dropna()})
        if widths and max(widths) < s.figure.width:
            narrow.append(f"{s.name} {values_text(widths, sizes=True)}")
    if narrow:
        widest = sorted({w for s in sections for w in machine_widths(s.results)})
        out.append(f"narrower instructions than the papers' 64 B AVX-512 ones: {'; '.join(narrow)}"
                   + (f" (this CPU's widest is {max(widest)} B)" if widest and max(widest) < 64 else "")
                   + ": bandwidth per instruction and the loop's own cost differ from the papers' runs")
    return out


def repeats_warning(sections: Sequence[Section]) -> str:
    """One line for every experiment with fewer than 3 repeats per point (a quick-scale run)."""

    few = []
    scales = set()
    for s in sections:
        ok = s.results.ok()
        if ok.empty:
            continue
        repeats = ok.groupby(["source_csv", "point_key"])["repeat"].nunique()
        if repeats.min() < FEW_REPEATS:
            few.append((s.name, repeats))
            scales.add(scale_of(s.results.sidecars) or "?")
    if not few:
        return ""
    counts = [int(n) for _, r in few for n in r]
    which = "every experiment" if len(few) == len([s for s in sections if not s.results.ok().empty]) \
        else ", ".join(name for name, _ in few)
    scale = f"{'/'.join(sorted(scales))} scale: " if scales - {"?"} else ""
    return (f"{scale}{repeats_text(counts)} per point in {which}: the figures show the repeats' range (min-max), "
            f"not confidence intervals; {FEW_REPEATS} or more repeats (the full scale, or [sweep.adaptive]) give 95 % "
            "CIs")


# --------------------------------------------------------------------------
# HTML and Markdown
# --------------------------------------------------------------------------
def _overall_notice(sections: Sequence[Section]) -> tuple[str, bool]:
    """The report's own mark: the figures' marks (whole-figure ones first)."""

    rows = pd.concat([s.results.rows for s in sections], ignore_index=True)
    notice = emulation_notice(rows)
    if notice is None:
        return "", False
    return notice.text, notice.whole_figure


@dataclass
class Page:
    """Everything the page says, computed once for HTML and Markdown."""

    mark: str
    whole: bool
    coverage: pd.DataFrame
    missing: list[PaperFigure]
    timing: pd.DataFrame
    targets: pd.DataFrame
    machine: list[tuple[str, str]]
    timing_warnings: list[str]
    warnings: list[tuple[str, str]]  # (experiment or '', text)


def page_of(sections: Sequence[Section]) -> Page:
    mark, whole = _overall_notice(sections)
    general = []
    repeats = repeats_warning(sections)
    if repeats:
        general.append(("", repeats))
    quick = bool(repeats)
    per_experiment = []
    for s in sections:
        warnings = s.warnings if not quick else [w for w in s.warnings if f"fewer than {FEW_REPEATS} repeats" not in w]
        per_experiment += [(s.name, w) for w in warnings]
    return Page(mark, whole, coverage_table(sections), not_run(sections), timing_table(sections),
                targets_table(sections), machine_facts(sections), timing_warnings(sections),
                general + per_experiment)


def render_html(sections: Sequence[Section], results_dir: Path, generated: str, out_dir: Path | None = None) -> str:
    page = page_of(sections)
    out_dir = out_dir or results_dir
    out = ["<!DOCTYPE html>", "<html lang=en><head><meta charset=utf-8>",
           f"<title>pmemlab report: {html.escape(str(results_dir))}</title>",
           f"<style>{STYLE}</style></head><body>"]
    if page.mark:
        out.append(f"<p class='mark{'' if page.whole else ' partial'}' id=emulated-mark>{html.escape(page.mark)}</p>")
    out.append(f"<h1>pmemlab report: {html.escape(str(results_dir))}</h1>")
    out.append(f"<p class=muted>{html.escape(generated)}</p>")
    out.append("<nav>Contents: <a href='#coverage'>coverage</a> · <a href='#conditions'>run conditions</a> · "
               "<a href='#warnings'>warnings</a> · " + " · ".join(
                   f"<a href='#exp-{html.escape(s.name)}'>{html.escape(s.name)}</a>" for s in sections) + "</nav>")
    out.append("<h2 id=coverage>What this run reproduces</h2>")
    if not page.coverage.empty:
        out.append(_html_table(page.coverage, table_id="coverage-table"))
    else:
        out.append("<p id=coverage-table>None of these experiments reproduces a paper figure.</p>")
    if page.missing:
        out.append("<p id=not-run><b>Not run here:</b> " + "; ".join(
            f"{html.escape(f.source)} (<code>configs/{html.escape(f.experiment)}.toml</code>)" for f in page.missing)
            + f". {html.escape(RUN_ONE)}</p>")
    out += conditions_html(page.timing, page.targets, page.machine)
    out.append("<h2 id=warnings>Warnings</h2>")
    if page.timing_warnings or page.warnings:
        items = [f"<li class=timing>{html.escape(w[0].upper() + w[1:])}</li>" for w in page.timing_warnings]
        items += [f"<li>{'<b>' + html.escape(n) + '</b>: ' if n else ''}{html.escape(w)}</li>" for n, w in page.warnings]
        out.append("<div class=warn id=warning-list><ul>" + "".join(items) + "</ul></div>")
    else:
        out.append("<p id=warning-list>None: the TSC is invariant and trusted, the timer resolves every value, and "
                   "every point has at least 3 repeats varying by less than 5 %.</p>")
    for s in sections:
        out += experiment_html(s, out_dir)
    out.append("</body></html>")
    return "\n".join(out)


def render_markdown(sections: Sequence[Section], results_dir: Path, generated: str, figures: str,
                    out_dir: Path | None = None) -> str:

    page = page_of(sections)
    out_dir = out_dir or results_dir
    out = []
    if page.mark:
        out.append(f"> **{page.mark}**\n")
    out += [f"# pmemlab report: {results_dir}", "", generated, "", "## What this run reproduces", ""]
    if not page.coverage.empty:
        out += [_md_table(page.coverage), ""]
    if page.missing:
        out += ["**Not run here:** " + "; ".join(f"{f.source} (`configs/{f.experiment}.toml`)" for f in page.missing)
                + f". {RUN_ONE}", ""]
    out += conditions_markdown(page.timing, page.targets, page.machine)
    out += ["## Warnings", ""]
    lines = [f"- **{w[0].upper() + w[1:]}**" for w in page.timing_warnings]
    lines += [f"- {'**' + n + '**: ' if n else ''}{w}" for n, w in page.warnings]
    out += lines or ["None."]
    for s in sections:
        out += experiment_markdown(s, figures, out_dir)
    return "\n".join(out) + "\n"


def _bare_page(results_dir: Path, generated: str, parts: Sequence[str], markdown: bool) -> str:
    """The page of a results directory without a sweep: its cards and curves families only."""
    if markdown:
        return "\n".join([f"# pmemlab report: {results_dir}", "", generated, "", *parts]) + "\n"
    return "\n".join(["<!DOCTYPE html>", "<html lang=en><head><meta charset=utf-8>",
                      f"<title>pmemlab report: {html.escape(str(results_dir))}</title>",
                      f"<style>{STYLE}</style></head><body>",
                      f"<h1>pmemlab report: {html.escape(str(results_dir))}</h1>",
                      f"<p class=muted>{html.escape(generated)}</p>", *parts, "</body></html>"])


def write_report(results_dir: Path, out_dir: Path, name: str = "report") -> tuple[Path, Path]:

    if "/" in name or name in ("", ".", ".."):
        raise ConfigError(f"--name {name!r}: not a file name", "give a name without /, e.g. --name report")
    families = curves_families(results_dir)
    found, card_warnings = device_cards(results_dir)
    # a directory holding only cards or curves families reports them; without any of them, bad input
    bare = not find_experiments(results_dir) and bool(families or found or card_warnings)
    sections = [] if bare else build_sections(results_dir)
    check_writable(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = out_dir / f"{name}-figures"
    figures.mkdir(exist_ok=True)
    for s in sections:
        (figures / f"{s.name}.png").write_bytes(s.png)
    what = f"{len(sections)} experiments" + (f" and {len(found)} device card{'s' if len(found) != 1 else ''}"
                                             if found else "")
    generated = (f"Generated {datetime.now(timezone.utc).isoformat(timespec='seconds')} by pmemlab {__version__} "
                 f"({toolkit_revision()}) from {what}.")
    html_path, md_path = out_dir / f"{name}.html", out_dir / f"{name}.md"
    extra_html = [*curves_html(families, out_dir), *cards_html(found, card_warnings, out_dir)]
    extra_md = [*curves_markdown(families, out_dir), *cards_markdown(found, card_warnings, out_dir, figures)]
    if bare:
        page = _bare_page(results_dir, generated, extra_html, markdown=False)
        md = _bare_page(results_dir, generated, extra_md, markdown=True)
    else:
        page = render_html(sections, results_dir, generated, out_dir)
        page = page.replace("</body></html>", "\n".join([*extra_html, "</body></html>"]))
        if found or card_warnings:
            page = page.replace("</nav>", " · <a href='#device-cards'>device cards</a></nav>", 1)
        md = render_markdown(sections, results_dir, generated, figures.name, out_dir)
        md += "\n".join(extra_md) + ("\n" if extra_md else "")
    html_path.write_text(page, encoding="utf-8")
    md_path.write_text(md, encoding="utf-8")
    return html_path, md_path


# --------------------------------------------------------------------------
