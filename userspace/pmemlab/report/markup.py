"""The report's shared helpers: its style sheet, a value as a table cell, a frame as an HTML or
Markdown table, a figure as a data URI, a path as a link, a column's values as a short text."""

from __future__ import annotations

import base64
import html
import math
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from pmemlab.analysis.resultset import size_label

STYLE = """
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; line-height: 1.4; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; margin-top: 1.6em; }
h3 { font-size: 1.05em; margin-bottom: 0.2em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.6em 0; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: left; vertical-align: top; white-space: pre-line; }
th { background: #f2f2f2; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.8em; color: #444; }
.mark { background: #b00020; color: white; font-weight: bold; padding: 0.5em 0.8em; }
.mark.partial { background: #fff3d6; color: #8a5a00; border: 1px solid #8a5a00; }
.warn { background: #fff8e1; border-left: 4px solid #e0a000; padding: 0.3em 0.8em; }
.warn ul { margin: 0.2em 0; } .warn li.timing { font-weight: 600; } .muted { color: #666; font-size: 0.85em; }
.claim { font-style: italic; } nav { font-size: 0.9em; } details { margin: 0.5em 0 1.5em; }
summary { cursor: pointer; color: #333; }
"""


def cell(v: Any) -> str:
    """A value as a table shows it: '-' for none, 'yes' or '' for a flag, 4 digits for a float."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, bool):
        return "yes" if v else ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def html_table(df: pd.DataFrame, numeric: Sequence[str] = (), table_id: str = "") -> str:
    """The frame as an HTML table, the `numeric` columns right-aligned."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for row in df.itertuples(index=False):
        cells = "".join(f"<td{' class=num' if c in numeric else ''}>{html.escape(cell(v))}</td>"
                        for c, v in zip(df.columns, row))
        body.append(f"<tr>{cells}</tr>")
    ident = f" id={table_id}" if table_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def md_table(df: pd.DataFrame) -> str:
    """The frame as a Markdown table (a cell's | escaped, its line breaks as '; ')."""
    def esc(v: Any) -> str:
        return cell(v).replace("|", "\\|").replace("\n", "; ")

    lines = ["| " + " | ".join(esc(c) for c in df.columns) + " |", "|" + " --- |" * len(df.columns)]
    lines += ["| " + " | ".join(esc(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join(lines)


def numeric_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c])]


def png_uri(png: bytes) -> str:
    """A PNG inlined, for an <img src=...> (the page fetches nothing)."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def relative(path: Path, out_dir: Path) -> str:
    """The path as a link from the report's directory."""
    try:
        return os.path.relpath(path.resolve(), out_dir.resolve())
    except ValueError:  # another drive
        return str(path)


def upper_first(text: str) -> str:
    return text[0].upper() + text[1:]


def values_text(values: Iterable[Any], sizes: bool = False) -> str:
    """'1-2', '1/2/4', '64 B-16 KiB', 'load/ntstore': the distinct values of a column."""

    seen = [v for v in dict.fromkeys(values) if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not seen:
        return "-"
    numbers = pd.to_numeric(pd.Series(seen), errors="coerce")
    if not numbers.notna().all():
        return "/".join(str(v) for v in seen)
    ordered = sorted(float(v) for v in numbers)

    def fmt(v: float) -> str:
        return size_label(v) if sizes else f"{v:g}"

    if len(ordered) == 1:
        return fmt(ordered[0])
    if not sizes and all(b - a == 1 for a, b in zip(ordered, ordered[1:])):
        return f"{fmt(ordered[0])}-{fmt(ordered[-1])}"
    if len(ordered) > 3:
        return f"{fmt(ordered[0])}-{fmt(ordered[-1])} ({len(ordered)} values)"
    return "/".join(fmt(v) for v in ordered)
