"""The report's experiments, one section each in the papers' order: the figure drawn from the
sweep's rows, what ran (from the rows, at the scale actually run), the per-point tables and the
points against what the firmware advertises, the experiment's warnings (report.noise); and the
section as HTML and Markdown."""

from __future__ import annotations

import html
import io
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from pmemlab.analysis.advertised import advertised_bandwidth, advertised_latency, advertised_of, ratio
from pmemlab.analysis.compare import swept_parameters
from pmemlab.analysis.noise import judge, metric_of
from pmemlab.analysis.resultset import (
    Results, count_text, find_experiments, load_results, loop_bound_rows, repeats_text, scale_of,
)
from pmemlab.analysis.stats import summarize
from pmemlab.errors import BadInput
from pmemlab.plots.recipes import ALL_RECIPES
from pmemlab.plots.references import EXPERIMENT_ORDER, PaperFigure, figure_of
from pmemlab.plots.render import fallback_figure
from pmemlab.plots.style import Frame, caption_of, framed
from pmemlab.plots.tables import FigureTable, figure_tables
from pmemlab.report.markup import html_table, md_table, numeric_columns, png_uri, relative, upper_first, values_text
from pmemlab.report.noise import noise_warnings

ADVERTISED_TEXT = ("Each point against what the firmware advertises for the memory (HMAT, CDAT): the mean over "
                   "repeats, the advertised value and mean / advertised")


@dataclass
class Section:
    name: str
    results: Results
    png: bytes
    caption: str
    tables: list[FigureTable]
    ran: str
    figure: PaperFigure | None = None
    warnings: list[str] = field(default_factory=list)
    table: pd.DataFrame | None = None  # per point: the metric over repeats (point_table), for the noise rules

    @property
    def heading(self) -> str:
        return f"{self.figure.source} · {self.name}" if self.figure else self.name


def build_sections(results_dir: Path, dpi: int = 110) -> list[Section]:
    """A section per experiment under results_dir, in the papers' order, then the rest by name."""

    groups = find_experiments(results_dir)
    if not groups:
        raise BadInput(f"no pmemlab sweep CSV under {results_dir}",
                       "run a sweep (or make demo) first, then report its directory")
    rank = {name: i for i, name in enumerate(EXPERIMENT_ORDER)}
    names = sorted(groups, key=lambda n: (rank.get(n, len(rank)), n))
    return [build_section(name, load_results(groups[name]), dpi) for name in names]


def build_section(name: str, results: Results, dpi: int) -> Section:
    with framed(Frame(caption=False, banner=False)):  # the page says both once
        fig = ALL_RECIPES[name](results) if name in ALL_RECIPES else fallback_figure(results)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    step = results.timer_step()
    table = point_table(results)
    return Section(name, results, buf.getvalue(), caption_of(fig), figure_tables(name, results, step),
                   ran_text(results), figure_of(name), noise_warnings(results, table, step), table)


# --------------------------------------------------------------------------
# per point
# --------------------------------------------------------------------------
def point_table(results: Results) -> pd.DataFrame:
    """Per point (the swept parameters, and the target where several): the metric it is judged
    by (pmemlab.analysis.noise), repeats, mean, median over repeats, the 95 % CI half-width, the
    coefficient of variation, the repeats' range, loop-bound."""

    ok = results.ok()
    if ok.empty:
        return pd.DataFrame()
    ok = ok.assign(metric=metric_of(ok), loop_bound=loop_bound_rows(ok))
    keys = (["target_label"] if ok["target_label"].nunique() > 1 else []) + swept_parameters(ok)
    out = []
    for key, grp in ok.groupby([*keys, "metric"], dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        out.append({**dict(zip(keys, key[:-1])), **point_row(grp, key[-1])})
    table = pd.DataFrame(out)
    if table.empty or table["advertised"].isna().all():  # no HMAT: nothing to hold the points against
        table = table.drop(columns=["advertised", "mean_over_adv"], errors="ignore")
    return table


def point_row(grp: pd.DataFrame, metric: str) -> dict[str, object]:
    """One point's row of the point table: its metric over the repeats."""
    values = pd.to_numeric(grp[metric], errors="coerce").dropna()
    s = summarize(values.tolist())
    cv = judge(values.tolist()).cv
    adv = advertised_for(grp, metric)
    return {"metric": metric, "repeats": s.n, "mean": s.mean,
            "median": float(values.median()) if len(values) else math.nan,
            "ci95": s.ci95, "cv_pct": 100 * cv,
            "range": float(values.max() - values.min()) if len(values) else math.nan,
            "advertised": adv, "mean_over_adv": ratio(s.mean, adv) if s.n else math.nan,
            "loop_bound": bool(grp["loop_bound"].any())}


def advertised_for(grp: pd.DataFrame, metric: str) -> float:
    """What the firmware advertises for a point's metric: its op's latency for a latency metric
    (lat_ns_*), its op's bandwidth (a mix: by the time each share takes) for bw_gbps, else NaN."""
    adv = advertised_of(grp)
    op = str(grp["op"].iloc[0]) if "op" in grp and len(grp) else ""
    if metric.startswith("lat_ns_"):
        return advertised_latency(adv, op.split(",")[0])
    if metric == "bw_gbps":
        pct = grp["read_pct"].iloc[0] if "read_pct" in grp and len(grp) else 0
        return advertised_bandwidth(adv, op.split(",")[0], int(pct) if pct == pct else 0)
    return math.nan


def against_advertised(table: pd.DataFrame | None) -> pd.DataFrame:
    """A section's points held against the advertised values (point_table's advertised columns;
    empty where the rows carry none)."""

    if table is None or "advertised" not in table:
        return pd.DataFrame()
    held = table[table["advertised"].notna()]
    keep = [c for c in held.columns if c not in ("ci95", "cv_pct", "range", "loop_bound", "median", "repeats")]
    return held[keep].rename(columns={"mean_over_adv": "mean / adv."}).reset_index(drop=True)


# --------------------------------------------------------------------------
# what ran
# --------------------------------------------------------------------------
def ran_text(results: Results) -> str:
    """What ran, from the rows (not the config's description, which may speak of the full scale):
    per mode, threads, ops, patterns, access sizes, run length; repeats; targets; scale."""

    ok = results.ok()
    if ok.empty:
        return "no successful runs"
    parts = []
    for mode, rows in ok.groupby("mode", sort=False) if "mode" in ok else [("", ok)]:
        parts.append(f"{mode + ': ' if mode else ''}{', '.join(mode_items(str(mode), rows))}")
    repeats = ok.groupby(["source_csv", "point_key"])["repeat"].nunique()
    targets = ", ".join(str(t) for t in dict.fromkeys(ok["target_label"]))
    scale = scale_of(results.sidecars)
    tail = f"{repeats_text(repeats)} per point; target{'s' if ',' in targets else ''} {targets}"
    return "; ".join(parts) + f"; {tail}" + (f"; {scale} scale" if scale else "")


def mode_items(mode: str, rows: pd.DataFrame) -> list[str]:
    """What ran in one mode: threads, ops, patterns, access sizes, widths, run length."""
    items = [f"{values_text(rows['threads'])} thread{'s' if rows['threads'].max() > 1 else ''}"]
    items.append(values_text(rows["op"]))
    if "pattern" in rows:
        items.append(values_text(rows["pattern"]))
    items.append(f"{values_text(rows['access_size'], sizes=True)} accesses")
    if "width_used" in rows and pd.to_numeric(rows["width_used"], errors="coerce").notna().any():
        items.append(f"{values_text(pd.to_numeric(rows['width_used'], errors='coerce').dropna(), sizes=True)} "
                     "instructions")
    count = pd.to_numeric(rows.get("count", pd.Series(dtype=float)), errors="coerce")
    if mode == "latency" and (count > 0).any():
        items.append(f"{count_text(count.max())} accesses per run")
    else:
        duration = pd.to_numeric(rows.get("duration_ms", pd.Series(dtype=float)), errors="coerce").dropna()
        if len(duration):
            items.append(f"{values_text(duration)} ms per run")
    return items


# --------------------------------------------------------------------------
# the section on the page
# --------------------------------------------------------------------------
def experiment_html(s: Section, out_dir: Path) -> list[str]:
    out = [f"<section id='exp-{html.escape(s.name)}'><h2>{html.escape(s.heading)}</h2>"]
    if s.figure:
        out.append(f"<p class=claim>The paper: {html.escape(s.figure.claim)}</p>")
    out.append(f"<p><b>Ran</b>: {html.escape(s.ran)}.</p>")
    out.append(f"<figure><img src='{png_uri(s.png)}' alt='{html.escape(s.name)} figure'>"
               f"<figcaption>{html.escape(s.caption)}</figcaption></figure>")
    csvs = ", ".join(f"<a href='{html.escape(relative(p, out_dir))}'>{html.escape(p.name)}</a>"
                     for p in s.results.paths)
    rows = sum(len(t.table) for t in s.tables)
    out.append(f"<details><summary>The numbers behind the figure ({rows} rows; the CSV: {csvs})</summary>")
    for t in s.tables:
        out.append(f"<p class=muted>{html.escape(upper_first(t.title))}</p>")
        out.append(html_table(t.table, numeric=numeric_columns(t.table)))
    adv = against_advertised(s.table)
    if not adv.empty:
        out.append(f"<p class=muted>{ADVERTISED_TEXT}</p>")
        out.append(html_table(adv, numeric=numeric_columns(adv)))
    out.append("</details></section>")
    return out


def experiment_markdown(s: Section, figures: str, out_dir: Path) -> list[str]:
    """The section in Markdown, its figure in the directory `figures` beside the page."""
    out = ["", f"## {s.heading}", ""]
    if s.figure:
        out += [f"*The paper: {s.figure.claim}*", ""]
    out += [f"**Ran**: {s.ran}.", "", f"![{s.name}]({figures}/{s.name}.png)", "", f"*{s.caption}*", ""]
    csvs = ", ".join(f"[{p.name}]({relative(p, out_dir)})" for p in s.results.paths)
    out += [f"<details><summary>The numbers behind the figure (the CSV: {csvs})</summary>", ""]
    for t in s.tables:
        out += [f"{upper_first(t.title)}:", "", md_table(t.table), ""]
    adv = against_advertised(s.table)
    if not adv.empty:
        out += [f"{ADVERTISED_TEXT}:", "", md_table(adv), ""]
    out += ["</details>"]
    return out
