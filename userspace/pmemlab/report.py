"""`pmemlab report RESULTS_DIR`: one self-contained HTML page (every figure inlined as a PNG data
URI, the style inline, no script, nothing fetched) and its Markdown twin (figures as PNG files
beside it), with the run conditions of every CSV, every experiment's figure and caption, a
summary table per experiment (per point: repeats, mean, median, 95 % CI, coefficient of
variation), the noise warnings, and the EMULATED mark when the runs were made under a hypervisor
or on an emulated namespace.

Noise warnings (the thresholds live in pmemlab.noise): a point whose coefficient of variation
over repeats exceeds 5 %; points with fewer than 3 repeats (a 95 % CI from 2 repeats is 12.7
standard errors wide); steal time, where a `steal*` column was recorded, above 1 % of a run;
points that failed or were skipped; loop-bound points (the engine's column)."""

from __future__ import annotations

import argparse
import base64
import html
import io
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from pmemlab import __version__
from pmemlab.compare import swept_parameters
from pmemlab.errors import BadInput, ConfigError
from pmemlab.noise import CV_WARN, FEW_REPEATS, STEAL_WARN_PCT, judge, metric_of, steal_columns
from pmemlab.output import add_json, check_writable, examples, print_json
from pmemlab.advertised import advertised_bandwidth, advertised_latency, advertised_of, ratio
from pmemlab.stats import summarize

if TYPE_CHECKING:  # imported by the functions that use them: the command line is built without them
    import pandas as pd
    from pmemlab.plots.data import Results, find_experiments, load_results, loop_bound_rows, size_label
    from pmemlab.plots.marks import emulation_notice

CONDITION_FIELDS = (("target", "target"), ("kind", "target_kind"), ("emulated", "target_emulated"),
                    ("hypervisor", "hypervisor"), ("host", "hostname"), ("CPU", "cpu_model"), ("kernel", "kernel"),
                    ("pmemlab", "toolkit_version"), ("page size", "target_page_size"),
                    ("interleave ways", "target_interleave_ways"), ("interleave gran", "target_interleave_gran"),
                    ("devices", "target_devices"), ("CXL region", "target_cxl_region"), ("memory node", "adv_node"),
                    ("adv. read ns", "adv_read_latency_ns"), ("adv. write ns", "adv_write_latency_ns"),
                    ("adv. read MB/s", "adv_read_bw_mbps"), ("adv. write MB/s", "adv_write_bw_mbps"),
                    ("memory tier", "memory_tier"), ("prefetchers", "prefetch_control"),
                    ("governor", "governor"), ("turbo", "turbo"), ("SMT", "smt_active"), ("THP", "thp_enabled"),
                    ("mitigations", "mitigations"), ("mitigations=", "mitigations_cmdline"))
TABLE_LIMIT = 200  # rows per summary table shown (the CSV has all)


@dataclass
class Section:
    name: str
    description: str
    results: Results
    png: bytes
    caption: str
    notice: str
    table: pd.DataFrame
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------
# what goes into the report
# --------------------------------------------------------------------------
def conditions_table(sections: Sequence[Section]) -> pd.DataFrame:
    """A row per CSV: the run conditions its rows carry (several values joined)."""
    import pandas as pd

    rows = []
    for sec in sections:
        for source, grp in sec.results.rows.groupby("source_csv", sort=True):
            row: dict[str, Any] = {"experiment": sec.name, "CSV": source}
            for title, column in CONDITION_FIELDS:
                values = sorted({_condition(column, v) for v in grp.get(column, pd.Series(dtype=str)).dropna()
                                 if str(v) != ""})
                row[title] = ", ".join(values) or "-"
            days = sorted({str(v)[:10] for v in grp.get("started_at", pd.Series(dtype=str)).dropna()})
            row["date"] = days[0] if len(days) == 1 else (f"{days[0]} .. {days[-1]}" if days else "-")
            status = grp[grp["thread"].astype(str) == "all"]["status"].value_counts()
            row["runs"] = ", ".join(f"{n} {s}" for s, n in status.items())
            rows.append(row)
    return pd.DataFrame(rows)


def _condition(column: str, value: Any) -> str:
    from pmemlab.plots.data import size_label

    if column == "target_page_size":
        return size_label(float(value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def split_common(table: pd.DataFrame, keep: Sequence[str] = ("experiment", "CSV")) -> tuple[dict[str, str], pd.DataFrame]:
    """(conditions every CSV shares, the table of the ones that differ)."""
    common = {c: str(table[c].iloc[0]) for c in table.columns
              if c not in keep and len(table) and table[c].nunique() == 1}
    return common, table[[c for c in table.columns if c not in common]]


def point_table(results: Results) -> pd.DataFrame:
    """Per point (the swept parameters, and the target where several): its metric, repeats, mean,
    median over repeats, the 95 % CI half-width, the coefficient of variation, loop-bound."""
    import pandas as pd
    from pmemlab.plots.data import loop_bound_rows

    ok = results.ok()
    if ok.empty:
        return pd.DataFrame()
    ok = ok.assign(metric=metric_of(ok), loop_bound=loop_bound_rows(ok))
    keys = (["target_label"] if ok["target_label"].nunique() > 1 else []) + swept_parameters(ok)
    out = []
    for key, grp in ok.groupby([*keys, "metric"], dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        metric = key[-1]
        values = pd.to_numeric(grp[metric], errors="coerce").dropna()
        s = summarize(values.tolist())
        cv = judge(values.tolist()).cv
        adv = advertised_for(grp, metric)
        out.append({**dict(zip(keys, key[:-1])), "metric": metric, "repeats": s.n, "mean": s.mean,
                    "median": float(values.median()) if len(values) else math.nan,
                    "ci95": s.ci95, "cv_pct": 100 * cv, "advertised": adv,
                    "mean_over_adv": ratio(s.mean, adv) if s.n else math.nan,
                    "loop_bound": bool(grp["loop_bound"].any())})
    table = pd.DataFrame(out)
    if table["advertised"].isna().all():  # no HMAT: nothing to hold the points against
        table = table.drop(columns=["advertised", "mean_over_adv"])
    return table


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


def noise_warnings(results: Results, table: pd.DataFrame) -> list[str]:
    """What says a figure should not be trusted as it stands (the rules in the module docstring)."""
    import pandas as pd

    out = []
    if not table.empty:
        noisy = table[table["cv_pct"] > 100 * CV_WARN]
        if len(noisy):
            worst = noisy.sort_values("cv_pct", ascending=False).iloc[0]
            out.append(f"{len(noisy)} of {len(table)} points vary by more than {CV_WARN:.0%} over their repeats "
                       f"(coefficient of variation; worst {worst['cv_pct']:.0f} % at {_point_text(worst)})")
        few = table[table["repeats"] < FEW_REPEATS]
        if len(few):
            out.append(f"{len(few)} of {len(table)} points have fewer than {FEW_REPEATS} repeats "
                       f"({', '.join(sorted({str(n) for n in few['repeats']}))}): their 95 % CI is wide or absent")
        bound = table[table["loop_bound"]]
        if len(bound):
            out.append(f"{len(bound)} points are loop-bound: they measure the tool, not the memory")
    rows = results.rows
    for column in steal_columns(rows.columns):
        values = pd.to_numeric(rows[column], errors="coerce")
        high = values[values > STEAL_WARN_PCT]
        if len(high):
            out.append(f"steal time above {STEAL_WARN_PCT:g} % in {len(high)} rows ({column} up to {high.max():.3g})")
    agg = rows[rows["thread"].astype(str) == "all"]
    failed = agg[agg["status"].isin(["error", "timeout", "refused"])]
    if len(failed):
        out.append(f"{failed['point_key'].nunique()} points failed ({', '.join(sorted(set(failed['status'])))})")
    skipped = agg[agg["status"] == "skipped"]
    if len(skipped):
        out.append(f"{skipped['point_key'].nunique()} points skipped on this machine "
                   f"(e.g. {str(skipped['error'].dropna().iloc[0]) if skipped['error'].notna().any() else 'no reason'})")
    for entry in results.not_run:
        out.append(f"module load not run: {entry}")
    return out


def _point_text(row: pd.Series) -> str:
    skip = {"metric", "repeats", "mean", "median", "ci95", "cv_pct", "loop_bound"}
    return " ".join(f"{k}={_cell(v)}" for k, v in row.items() if k not in skip) or "the point"


def build_sections(results_dir: Path, dpi: int = 110) -> list[Section]:
    from pmemlab.plots.data import find_experiments, load_results
    from pmemlab.plots.marks import emulation_notice

    from pmemlab.plots.recipes import ALL_RECIPES
    from pmemlab.plots.render import fallback_figure
    from pmemlab.plots.style import caption_of

    groups = find_experiments(results_dir)
    if not groups:
        raise BadInput(f"no pmemlab sweep CSV under {results_dir}",
                       "run a sweep (or make demo) first, then report its directory")
    sections = []
    for name, paths in sorted(groups.items()):
        results = load_results(paths)
        fig = ALL_RECIPES[name](results) if name in ALL_RECIPES else fallback_figure(results)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi)
        notice = emulation_notice(results.rows)
        table = point_table(results)
        description = next((str(s.get("description", "")) for s in results.sidecars if s.get("description")), "")
        sections.append(Section(name, description, results, buf.getvalue(), caption_of(fig),
                                notice.text if notice else "", table, noise_warnings(results, table)))
    return sections


# --------------------------------------------------------------------------
# HTML and Markdown
# --------------------------------------------------------------------------
STYLE = """
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.6em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.8em; color: #444; }
.mark { background: #b00020; color: white; font-weight: bold; padding: 0.5em 0.8em; }
.mark.partial { background: #fff3d6; color: #8a5a00; border: 1px solid #8a5a00; }
.warn { background: #fff8e1; border-left: 4px solid #e0a000; padding: 0.3em 0.8em; }
.warn ul { margin: 0.2em 0; } .muted { color: #666; font-size: 0.85em; }
"""


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, bool):
        return "yes" if v else ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _html_table(df: pd.DataFrame, numeric: Sequence[str] = ()) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for row in df.itertuples(index=False):
        cells = "".join(f"<td{' class=num' if c in numeric else ''}>{html.escape(_cell(v))}</td>"
                        for c, v in zip(df.columns, row))
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _md_table(df: pd.DataFrame) -> str:
    def esc(v: Any) -> str:
        return _cell(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(c) for c in df.columns) + " |", "|" + " --- |" * len(df.columns)]
    lines += ["| " + " | ".join(esc(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


NUMERIC = ("repeats", "mean", "median", "ci95", "cv_pct", "advertised", "mean_over_adv")
TABLE_TITLES = {"ci95": "95 % CI ±", "cv_pct": "CV %", "loop_bound": "loop-bound", "mean_over_adv": "mean / adv."}


def _shown(table: pd.DataFrame) -> pd.DataFrame:
    shown = table.head(TABLE_LIMIT).rename(columns=TABLE_TITLES)
    if "loop-bound" in shown and not shown["loop-bound"].any():
        shown = shown.drop(columns=["loop-bound"])
    return shown


def _overall_notice(sections: Sequence[Section]) -> tuple[str, bool]:
    """The report's own mark: the figures' marks (whole-figure ones first)."""
    import pandas as pd
    from pmemlab.plots.marks import emulation_notice

    rows = pd.concat([s.results.rows for s in sections], ignore_index=True)
    notice = emulation_notice(rows)
    if notice is None:
        return "", False
    return notice.text, notice.whole_figure


def render_html(sections: Sequence[Section], results_dir: Path, generated: str) -> str:
    import pandas as pd

    mark, whole = _overall_notice(sections)
    out = ["<!DOCTYPE html>", "<html lang=en><head><meta charset=utf-8>",
           f"<title>pmemlab report: {html.escape(str(results_dir))}</title>",
           f"<style>{STYLE}</style></head><body>"]
    if mark:
        out.append(f"<p class='mark{'' if whole else ' partial'}' id=emulated-mark>{html.escape(mark)}</p>")
    out.append(f"<h1>pmemlab report: {html.escape(str(results_dir))}</h1>")
    out.append(f"<p class=muted>{html.escape(generated)}</p>")
    out.append("<h2 id=conditions>Run conditions</h2>")
    common, varying = split_common(conditions_table(sections))
    if common:
        out.append("<p>Every CSV:</p>" + _html_table(pd.DataFrame({"condition": list(common),
                                                                   "value": list(common.values())})))
    out.append("<p>Per CSV:</p>" + _html_table(varying))
    every = [(s.name, w) for s in sections for w in s.warnings]
    out.append("<h2 id=noise>Noise warnings</h2>")
    if every:
        out.append("<div class=warn><ul>" + "".join(f"<li><b>{html.escape(n)}</b>: {html.escape(w)}</li>"
                                                   for n, w in every) + "</ul></div>")
    else:
        out.append("<p>None: every point has at least 3 repeats varying by less than 5 %.</p>")
    out.append("<h2 id=contents>Experiments</h2><ul>" + "".join(
        f"<li><a href='#exp-{html.escape(s.name)}'>{html.escape(s.name)}</a></li>" for s in sections) + "</ul>")
    for s in sections:
        data = base64.b64encode(s.png).decode("ascii")
        out.append(f"<section id='exp-{html.escape(s.name)}'><h2>{html.escape(s.name)}</h2>")
        if s.description:
            out.append(f"<p>{html.escape(s.description)}</p>")
        if s.notice:
            out.append(f"<p class='mark{' partial' if not s.notice.startswith('EMULATED') else ''}'>"
                       f"{html.escape(s.notice)}</p>")
        out.append(f"<figure><img src='data:image/png;base64,{data}' alt='{html.escape(s.name)} figure'>"
                   f"<figcaption>{html.escape(s.caption)}</figcaption></figure>")
        if s.warnings:
            out.append("<div class=warn><ul>" + "".join(f"<li>{html.escape(w)}</li>" for w in s.warnings)
                       + "</ul></div>")
        if not s.table.empty:
            more = f" (first {TABLE_LIMIT} of {len(s.table)})" if len(s.table) > TABLE_LIMIT else ""
            out.append(f"<p class=muted>Per point{more}: the metric's mean and median over repeats, the half-width "
                       "of its Student-t 95 % confidence interval and its coefficient of variation; where the "
                       "firmware advertises the memory's latency or bandwidth (HMAT, CDAT), that value and "
                       "mean / advertised.</p>")
            out.append(_html_table(_shown(s.table), numeric=[TABLE_TITLES.get(c, c) for c in NUMERIC]))
        out.append("</section>")
    out.append("</body></html>")
    return "\n".join(out)


def render_markdown(sections: Sequence[Section], results_dir: Path, generated: str, figures: str) -> str:
    import pandas as pd

    mark, _whole = _overall_notice(sections)
    out = []
    if mark:
        out.append(f"> **{mark}**\n")
    common, varying = split_common(conditions_table(sections))
    out += [f"# pmemlab report: {results_dir}", "", generated, "", "## Run conditions", ""]
    if common:
        out += ["Every CSV:", "", _md_table(pd.DataFrame({"condition": list(common), "value": list(common.values())})),
                ""]
    out += ["Per CSV:", "", _md_table(varying), "", "## Noise warnings", ""]
    every = [(s.name, w) for s in sections for w in s.warnings]
    out += [f"- **{n}**: {w}" for n, w in every] or ["None: every point has at least 3 repeats varying by less than 5 %."]
    for s in sections:
        out += ["", f"## {s.name}", ""]
        if s.description:
            out += [s.description, ""]
        if s.notice:
            out += [f"> **{s.notice}**", ""]
        out += [f"![{s.name}]({figures}/{s.name}.png)", "", f"*{s.caption}*", ""]
        out += [f"- {w}" for w in s.warnings]
        if not s.table.empty:
            out += ["", _md_table(_shown(s.table))]
    return "\n".join(out) + "\n"


def write_report(results_dir: Path, out_dir: Path, name: str = "report") -> tuple[Path, Path]:
    if "/" in name or name in ("", ".", ".."):
        raise ConfigError(f"--name {name!r}: not a file name", "give a name without /, e.g. --name report")
    sections = build_sections(results_dir)
    check_writable(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = out_dir / f"{name}-figures"
    figures.mkdir(exist_ok=True)
    for s in sections:
        (figures / f"{s.name}.png").write_bytes(s.png)
    from pmemlab.machine import toolkit_revision

    generated = (f"Generated {datetime.now(timezone.utc).isoformat(timespec='seconds')} by pmemlab {__version__} "
                 f"({toolkit_revision()}) from {len(sections)} experiments.")
    html_path, md_path = out_dir / f"{name}.html", out_dir / f"{name}.md"
    html_path.write_text(render_html(sections, results_dir, generated), encoding="utf-8")
    md_path.write_text(render_markdown(sections, results_dir, generated, figures.name), encoding="utf-8")
    return html_path, md_path


# --------------------------------------------------------------------------
def add_parser(sub: Any) -> None:
    p = sub.add_parser("report", help="one self-contained HTML page (and Markdown) of a results directory",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=examples("pmemlab report results -o report    # then open report/report.html",
                                       "pmemlab report results --name demo --json"))
    p.add_argument("results", type=Path, metavar="RESULTS_DIR", help="directory of sweep CSVs (results/)")
    p.add_argument("-o", "--output", type=Path, default=None, metavar="DIR",
                   help="directory for NAME.html, NAME.md and NAME-figures/ (default: RESULTS_DIR)")
    p.add_argument("--name", default="report", help="file name of the report, without extension (report)")
    add_json(p, "the paths written")


def cmd_report(args: argparse.Namespace) -> int:
    if not args.results.is_dir():
        raise BadInput(f"{args.results}: {'not a directory' if args.results.exists() else 'no such directory'}",
                       "give the directory the sweeps wrote (results/)")
    out_dir = args.output or args.results
    html_path, md_path = write_report(args.results, out_dir, args.name)
    if args.json:
        print_json({"html": html_path, "markdown": md_path, "figures": out_dir / f"{args.name}-figures"})
        return 0
    print(f"report: {html_path}")
    print(f"report: {md_path}")
    return 0
