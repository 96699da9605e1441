"""The report's device cards: every `card.json` of `pmemlab probe` under the results
(docs/card.md), checked against the card schema, with its figures beside it; a file that does not
read as a card is one line of warning. Each card's section: its table, figures, each inference's
evidence folded, what it did not decide and its run conditions, as HTML and Markdown."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from pmemlab.analysis import card as analysis
from pmemlab.report.markup import cell, html_table, md_table, numeric_columns, png_uri, relative

CARD_TEXT = ("What `pmemlab probe` infers about the memory (docs/card.md): each line a value with its unit, "
             "its confidence, the method that drew it and the measured points it rests on, or uncertain "
             "and why")
EMULATED_CARD = "EMULATED (TCG): the timings mean nothing; every inference below is marked"
DRAW_AGAIN = "draw it again with pmemlab probe --from DIR -o DIR"


@dataclass(frozen=True)
class DeviceCard:
    """A `pmemlab probe` card (card.json) found under the results, with its figures beside it."""

    path: Path
    doc: dict[str, Any]
    figures: list[Path]

    @property
    def anchor(self) -> str:
        return "card-" + "".join(c if c.isalnum() or c in "-_." else "_" for c in self.path.parent.name)

    @property
    def heading(self) -> str:
        return f"Device card: {self.doc['target']} ({self.doc['backend']} backend, {self.path.parent.name})"


def device_cards(results_dir: Path) -> tuple[list[DeviceCard], list[str]]:
    """Every card.json under results_dir, read and checked against the card schema
    (analysis.card.validate); a file that is not a card is one line of warning, not a card."""
    found, warnings = [], []
    for path in sorted(results_dir.rglob(analysis.CARD_NAME)) if results_dir.is_dir() else []:
        card = read_card(path, results_dir)
        if isinstance(card, str):
            warnings.append(card)
        else:
            found.append(card)
    return found, warnings


def read_card(path: Path, results_dir: Path) -> DeviceCard | str:
    """The card at path, or the line saying why it is not one."""
    where = relative(path, results_dir)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"{where}: not read as a device card (not JSON: {first}); {DRAW_AGAIN}"
    errs = analysis.validate(doc)
    if errs:
        return (f"{where}: not read as a device card ({errs[0]}"
                f"{f'; {len(errs) - 1} more' if len(errs) > 1 else ''}); {DRAW_AGAIN}")
    figs = [path.with_name(f"{i['name']}.png") for i in doc["inferences"]]
    return DeviceCard(path, doc, [f for f in figs if f.is_file()])


def card_table(doc: Mapping[str, Any]) -> pd.DataFrame:
    """A row per inference: name, value, unit, confidence, method, note (uncertain and why, or what
    the value was held against; the EMULATED mark)."""

    rows = []
    for inf in doc["inferences"]:
        note = (f"uncertain: {inf['reason']}" if inf["uncertain"] else inf["reason"])
        if inf.get("emulated"):
            note = (note + "; " if note else "") + "EMULATED: timing means nothing"
        rows.append({"inference": inf["name"], "value": analysis.value_text(inf), "unit": inf["unit"],
                     "confidence": f"{inf['confidence']:.2f}", "method": inf["method"], "points": len(inf["evidence"]),
                     "note": note})
    return pd.DataFrame(rows, columns=["inference", "value", "unit", "confidence", "method", "points", "note"])


def evidence_table(inf: Mapping[str, Any]) -> pd.DataFrame:
    return pd.DataFrame([e for e in inf["evidence"] if isinstance(e, dict)])


def card_conditions(doc: Mapping[str, Any]) -> pd.DataFrame:
    """The card's run conditions that say something (null ones left out), then its measuring."""

    items = [(k, v) for k, v in doc.get("conditions", {}).items() if v is not None and v != ""]
    items += [("budget_s", doc.get("budget_s")), ("wall_s", doc.get("wall_s")), ("stopped", doc.get("stopped"))]
    caches = ", ".join(f"L{c.get('level')} {c.get('type')} {analysis._size(float(c.get('size_bytes', 0)))}"
                       for c in doc.get("cpu_caches", []))
    if caches:
        items.append(("cpu caches", caches))
    return pd.DataFrame([{"condition": k, "value": cell(v)} for k, v in items])


# --------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------
def cards_html(found: Sequence[DeviceCard], warnings: Sequence[str], out_dir: Path) -> list[str]:
    if not found and not warnings:
        return []
    out = ["<section id=device-cards><h2>Device cards</h2>", f"<p>{html.escape(CARD_TEXT)}.</p>"]
    if warnings:
        out.append("<div class=warn id=card-warnings><ul>" + "".join(f"<li>{html.escape(w)}</li>" for w in warnings)
                   + "</ul></div>")
    for c in found:
        out += card_html(c, out_dir)
    out.append("</section>")
    return out


def card_html(c: DeviceCard, out_dir: Path) -> list[str]:
    doc = c.doc
    out = [f"<h3 id='{html.escape(c.anchor)}'>{html.escape(c.heading)}</h3>"]
    if doc.get("emulated"):
        out.append(f"<p class=mark>{html.escape(EMULATED_CARD)}</p>")
    out.append(f"<p class=muted>The card: <a href='{html.escape(relative(c.path, out_dir))}'>"
               f"{html.escape(c.path.name)}</a>; stopped: {html.escape(str(doc['stopped']))}</p>")
    out.append(html_table(card_table(doc), numeric=["points"]))
    for f in c.figures:
        out.append(f"<figure><img src='{png_uri(f.read_bytes())}' alt='{html.escape(c.anchor)} "
                   f"{html.escape(f.stem)}'><figcaption>{html.escape(f.stem)}</figcaption></figure>")
    for inf in doc["inferences"]:
        ev = evidence_table(inf)
        out.append(f"<details><summary>Evidence of {html.escape(inf['name'])} ({len(ev)} points)</summary>")
        out.append(html_table(ev, numeric=numeric_columns(ev)) if not ev.empty else "<p>No points.</p>")
        out.append("</details>")
    if doc["undecided"]:
        out.append("<p><b>Not decided</b>:</p><ul>" + "".join(
            f"<li>{html.escape(str(u.get('name')))}: {html.escape(str(u.get('reason')))}</li>"
            for u in doc["undecided"]) + "</ul>")
    out.append("<details><summary>Run conditions of the probe</summary>")
    out.append(html_table(card_conditions(doc)))
    out.append("</details>")
    return out


# --------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------
def cards_markdown(found: Sequence[DeviceCard], warnings: Sequence[str], out_dir: Path,
                   figures: Path | None = None) -> list[str]:
    """The cards in Markdown; their figures copied into `figures` (the report's figure directory)
    when given, else linked where they are."""
    if not found and not warnings:
        return []
    out = ["", "## Device cards", "", CARD_TEXT + ".", ""]
    out += [f"- **Warning**: {w}" for w in warnings]
    for c in found:
        out += card_markdown(c, out_dir, figures)
    return out


def card_markdown(c: DeviceCard, out_dir: Path, figures: Path | None) -> list[str]:
    doc = c.doc
    out = ["", f"### {c.heading}", ""]
    if doc.get("emulated"):
        out += [f"> **{EMULATED_CARD}**", ""]
    out += [f"The card: [{c.path.name}]({relative(c.path, out_dir)}); stopped: {doc['stopped']}", "",
            md_table(card_table(doc)), ""]
    for f in c.figures:
        out += [f"![{c.anchor} {f.stem}]({figure_link(c, f, out_dir, figures)})", ""]
    for inf in doc["inferences"]:
        ev = evidence_table(inf)
        out += [f"<details><summary>Evidence of {inf['name']} ({len(ev)} points)</summary>", "",
                md_table(ev) if not ev.empty else "No points.", "", "</details>", ""]
    if doc["undecided"]:
        out += ["**Not decided**:", ""] + [f"- {u.get('name')}: {u.get('reason')}" for u in doc["undecided"]] + [""]
    out += ["<details><summary>Run conditions of the probe</summary>", "", md_table(card_conditions(doc)), "",
            "</details>", ""]
    return out


def figure_link(c: DeviceCard, figure: Path, out_dir: Path, figures: Path | None) -> str:
    """The card's figure copied into `figures` and linked there, or linked where it is."""
    if figures is None:
        return relative(figure, out_dir)
    copy = figures / f"{c.anchor}-{figure.name}"
    copy.write_bytes(figure.read_bytes())
    return f"{figures.name}/{copy.name}"
