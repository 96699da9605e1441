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
from pmemlab.analysis.resultset import find_experiments, latency_stats, repeats_text, scale_of
from pmemlab.errors import ConfigError
from pmemlab.host.machine import toolkit_revision
from pmemlab.output import check_writable
from pmemlab.plots.marks import emulation_notice
from pmemlab.plots.references import PaperFigure
from pmemlab.report.cards import cards_html, cards_markdown, device_cards
from pmemlab.report.conditions import (
    agg_ok, conditions_html, conditions_markdown, distinct, machine_facts, machine_widths, rows_by_target,
    target_steps, targets_table, timing_table, tsc_text, user_backend,
)
from pmemlab.report.coverage import coverage_html, coverage_markdown, coverage_table, not_run
from pmemlab.report.curves import curves_families, curves_html, curves_markdown
from pmemlab.report.experiments import Section, build_sections, experiment_html, experiment_markdown
from pmemlab.report.markup import STYLE, values_text

BARE_METAL_IRQOFF = 99.9  # % of a module run with interrupts off on bare metal (docs/method.md)
STEP_MATTERS_NS = 2.0  # a resolved clock step from this size on is worth a warning


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
    out += coverage_html(page.coverage, page.missing)
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
    out += [f"# pmemlab report: {results_dir}", "", generated, ""]
    out += coverage_markdown(page.coverage, page.missing)
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
