"""The report's bandwidth-latency families: every `pmemlab curves -o` CSV under the results
(docs/curves.md), summarized per read share by pmemlab.analysis.curves, with its figure beside it
where `pmemlab curves` drew one; and the section as HTML and Markdown."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from pmemlab.analysis import curves as analysis
from pmemlab.report.markup import html_table, md_table, numeric_columns, png_uri, relative

CURVES_TEXT = ("Bandwidth-latency curves (`pmemlab curves`, docs/curves.md): per read share of the load threads, "
               "the probe's median at the lightest load, the peak bandwidth, the bandwidth where the median has "
               "doubled, and how far p99.9 rises over the median at 80 % of the peak")


@dataclass(frozen=True)
class CurvesFamily:
    """A `pmemlab curves -o` CSV found under the results: its summary per mix and its figure."""

    csv: Path
    table: pd.DataFrame
    best_mix: int
    figure: Path | None


def curves_families(results_dir: Path) -> list[CurvesFamily]:
    """Every curves CSV under results_dir (its header says so), summarized by analysis.curves."""

    out = []
    for path in sorted(results_dir.rglob("*.csv")) if results_dir.is_dir() else []:
        if not analysis.is_curves_csv(path):
            continue
        fam = analysis.family(analysis.read_curves_csv(path))
        if not fam:
            continue
        sums = [analysis.summarize_curve(pts) for pts in fam.values()]
        table = pd.DataFrame([{"read share %": s.mix, "points": s.points, "unloaded ns": s.unloaded_ns,
                               "peak GB/s": s.peak_gbps, "knee GB/s (median x2)": s.knee_gbps,
                               "p99.9/median at 80 % of peak": s.tail_rise} for s in sums])
        fig = path.with_name(f"{path.stem}.family.png")
        out.append(CurvesFamily(path, table, analysis.best_mix(sums).mix, fig if fig.exists() else None))
    return out


def curves_html(families: Sequence[CurvesFamily], out_dir: Path) -> list[str]:
    if not families:
        return []
    out = ["<section id=curves><h2>Bandwidth-latency curves</h2>", f"<p>{html.escape(CURVES_TEXT)}.</p>"]
    for f in families:
        out.append(f"<h3>{html.escape(f.csv.name)}</h3><p>Highest peak: {f.best_mix} % reads. The CSV: "
                   f"<a href='{html.escape(relative(f.csv, out_dir))}'>{html.escape(f.csv.name)}</a></p>")
        if f.figure is not None:
            out.append(f"<figure><img src='{png_uri(f.figure.read_bytes())}' alt='{html.escape(f.csv.stem)} family'>"
                       "</figure>")
        out.append(html_table(f.table, numeric=numeric_columns(f.table)))
    out.append("</section>")
    return out


def curves_markdown(families: Sequence[CurvesFamily], out_dir: Path) -> list[str]:
    if not families:
        return []
    out = ["", "## Bandwidth-latency curves", "", CURVES_TEXT + ".", ""]
    for f in families:
        out += [f"### {f.csv.name}", "", f"Highest peak: {f.best_mix} % reads. The CSV: "
                f"[{f.csv.name}]({relative(f.csv, out_dir)})", ""]
        if f.figure is not None:
            out += [f"![{f.csv.stem} family]({relative(f.figure, out_dir)})", ""]
        out += [md_table(f.table), ""]
    return out
