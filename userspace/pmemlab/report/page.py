"""The report's page: its frame (head, the EMULATED mark, contents) and its assembly from the
sections of a results directory, in order (pmemlab.report): coverage (report.coverage), run
conditions (report.conditions), warnings (report.validity), the experiments
(report.experiments), the curves families (report.curves) and device cards (report.cards);
rendered as HTML and Markdown by `write_report`."""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

import pandas as pd

from pmemlab import __version__
from pmemlab.errors import ConfigError
from pmemlab.analysis.resultset import find_experiments
from pmemlab.host.machine import toolkit_revision
from pmemlab.output import check_writable
from pmemlab.plots.marks import emulation_notice
from pmemlab.plots.references import PaperFigure
from pmemlab.report.cards import cards_html, cards_markdown, device_cards
from pmemlab.report.conditions import conditions_html, conditions_markdown, machine_facts, targets_table, timing_table
from pmemlab.report.coverage import coverage_html, coverage_markdown, coverage_table, not_run
from pmemlab.report.curves import curves_families, curves_html, curves_markdown
from pmemlab.report.experiments import Section, build_sections, experiment_html, experiment_markdown
from pmemlab.report.markup import STYLE
from pmemlab.report.validity import other_warnings, timing_warnings, warnings_html, warnings_markdown


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
    mark, whole = overall_notice(sections)
    return Page(mark, whole, coverage_table(sections), not_run(sections), timing_table(sections),
                targets_table(sections), machine_facts(sections), timing_warnings(sections),
                other_warnings(sections))


def overall_notice(sections: Sequence[Section]) -> tuple[str, bool]:
    """The report's own mark: the figures' marks (whole-figure ones first)."""

    rows = pd.concat([s.results.rows for s in sections], ignore_index=True)
    notice = emulation_notice(rows)
    if notice is None:
        return "", False
    return notice.text, notice.whole_figure


# --------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------
def html_head(results_dir: Path) -> list[str]:
    return ["<!DOCTYPE html>", "<html lang=en><head><meta charset=utf-8>",
            f"<title>pmemlab report: {html.escape(str(results_dir))}</title>",
            f"<style>{STYLE}</style></head><body>"]


def html_title(results_dir: Path, generated: str) -> list[str]:
    return [f"<h1>pmemlab report: {html.escape(str(results_dir))}</h1>",
            f"<p class=muted>{html.escape(generated)}</p>"]


def html_nav(sections: Sequence[Section]) -> str:
    return ("<nav>Contents: <a href='#coverage'>coverage</a> · <a href='#conditions'>run conditions</a> · "
            "<a href='#warnings'>warnings</a> · " + " · ".join(
                f"<a href='#exp-{html.escape(s.name)}'>{html.escape(s.name)}</a>" for s in sections) + "</nav>")


def render_html(sections: Sequence[Section], results_dir: Path, generated: str, out_dir: Path | None = None) -> str:
    page = page_of(sections)
    out_dir = out_dir or results_dir
    out = html_head(results_dir)
    if page.mark:
        out.append(f"<p class='mark{'' if page.whole else ' partial'}' id=emulated-mark>{html.escape(page.mark)}</p>")
    out += html_title(results_dir, generated)
    out.append(html_nav(sections))
    out += coverage_html(page.coverage, page.missing)
    out += conditions_html(page.timing, page.targets, page.machine)
    out += warnings_html(page.timing_warnings, page.warnings)
    for s in sections:
        out += experiment_html(s, out_dir)
    out.append("</body></html>")
    return "\n".join(out)


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------
def render_markdown(sections: Sequence[Section], results_dir: Path, generated: str, figures: str,
                    out_dir: Path | None = None) -> str:
    """The page in Markdown, the experiments' figures in the directory `figures` beside it."""

    page = page_of(sections)
    out_dir = out_dir or results_dir
    out = []
    if page.mark:
        out.append(f"> **{page.mark}**\n")
    out += [f"# pmemlab report: {results_dir}", "", generated, ""]
    out += coverage_markdown(page.coverage, page.missing)
    out += conditions_markdown(page.timing, page.targets, page.machine)
    out += warnings_markdown(page.timing_warnings, page.warnings)
    for s in sections:
        out += experiment_markdown(s, figures, out_dir)
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------
# the report's files
# --------------------------------------------------------------------------
def bare_page(results_dir: Path, generated: str, parts: Sequence[str], markdown: bool) -> str:
    """The page of a results directory without a sweep: its cards and curves families only."""
    if markdown:
        return "\n".join([f"# pmemlab report: {results_dir}", "", generated, "", *parts]) + "\n"
    return "\n".join([*html_head(results_dir), *html_title(results_dir, generated), *parts, "</body></html>"])


def write_report(results_dir: Path, out_dir: Path, name: str = "report") -> tuple[Path, Path]:
    """The report of results_dir as out_dir/NAME.html and NAME.md, the Markdown's figures in
    out_dir/NAME-figures: the sweeps' experiments, then the curves families and device cards; a
    directory holding only cards or families reports them alone."""

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
    generated = generated_text(len(sections), len(found))
    extra_html = [*curves_html(families, out_dir), *cards_html(found, card_warnings, out_dir)]
    extra_md = [*curves_markdown(families, out_dir), *cards_markdown(found, card_warnings, out_dir, figures)]
    if bare:
        page = bare_page(results_dir, generated, extra_html, markdown=False)
        md = bare_page(results_dir, generated, extra_md, markdown=True)
    else:
        page = render_html(sections, results_dir, generated, out_dir)
        page = page.replace("</body></html>", "\n".join([*extra_html, "</body></html>"]))
        if found or card_warnings:
            page = page.replace("</nav>", " · <a href='#device-cards'>device cards</a></nav>", 1)
        md = render_markdown(sections, results_dir, generated, figures.name, out_dir)
        md += "\n".join(extra_md) + ("\n" if extra_md else "")
    html_path, md_path = out_dir / f"{name}.html", out_dir / f"{name}.md"
    html_path.write_text(page, encoding="utf-8")
    md_path.write_text(md, encoding="utf-8")
    return html_path, md_path


def generated_text(experiments: int, cards: int) -> str:
    """'Generated WHEN by pmemlab VERSION (REVISION) from N experiments and M device cards.'"""
    what = f"{experiments} experiments" + (f" and {cards} device card{'s' if cards != 1 else ''}" if cards else "")
    return (f"Generated {datetime.now(timezone.utc).isoformat(timespec='seconds')} by pmemlab {__version__} "
            f"({toolkit_revision()}) from {what}.")
