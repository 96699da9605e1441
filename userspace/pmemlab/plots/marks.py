"""The visible mark on a figure whose numbers are not persistent-memory performance: runs under a
hypervisor, or on a namespace that only emulates pmem (memmap= DRAM, a hypervisor's NVDIMM, the
kernel's nfit_test bus). Decided from the run conditions every CSV row carries (`hypervisor`,
`target_emulated`: pmemlab.host.machine), never from the file name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:  # matplotlib is imported by the functions that draw
    from matplotlib.figure import Figure

MARK_GID = "pmemlab-emulated-mark"
WATERMARK_GID = "pmemlab-emulated-watermark"
EMULATED_KINDS = {"memmap": "memmap= DRAM", "virtual-nvdimm": "virtual NVDIMM", "nfit_test": "nfit_test bus"}
NO_HYPERVISOR = ("", "none", "nan")


@dataclass(frozen=True)
class Notice:
    text: str
    whole_figure: bool  # True: nothing in the figure is pmem performance (banner and watermark)


def _values(rows: pd.DataFrame, column: str) -> pd.Series:
    if column not in rows:
        return pd.Series("", index=rows.index, dtype=str)
    return rows[column].fillna("").astype(str).str.strip()


def emulation_notice(rows: pd.DataFrame) -> Notice | None:
    """The mark a figure of these rows needs, or None.

    Under a hypervisor nothing is pmem (or DRAM) performance: the whole figure is marked. On bare
    metal, a figure whose every pmem target is emulated is marked as a whole; one that compares
    real pmem with an emulation on purpose (FAST'20 fig 6) names the emulated targets instead.
    DRAM targets are the papers' DRAM baseline, not an emulation of pmem."""
    if rows.empty:
        return None
    hyp = _values(rows, "hypervisor")
    hypervisors = sorted(set(hyp[~hyp.str.lower().isin(NO_HYPERVISOR)]))
    kind = _values(rows, "target_emulated")
    label = rows["target_label"].astype(str) if "target_label" in rows else pd.Series("target", index=rows.index)
    emulated = {lab: EMULATED_KINDS[k] for lab, k in zip(label, kind) if k in EMULATED_KINDS}
    real = set(label[kind == "no"])
    what = "; ".join(f"{lab}: {how}" for lab, how in sorted(emulated.items()))
    if hypervisors:
        names = ", ".join(h if h != "unknown" else "unidentified" for h in hypervisors)
        text = f"EMULATED: run under a hypervisor ({names})" + (f"; {what}" if what else "")
        return Notice(f"{text} - not pmem performance", True)
    if emulated and not real:
        return Notice(f"EMULATED: {what} - not pmem performance", True)
    if emulated:
        return Notice(f"emulated pmem in this figure: {what}", False)
    return None


NOTICE_FONT = 7.5


def _notice_lines(fig: Figure, notice: Notice) -> list[str]:
    """The banner's text broken into lines that fit the figure's width."""
    per_line = max(int(fig.get_size_inches()[0] * 0.92 / (NOTICE_FONT * 0.62 / 72)), 30)
    words, lines, line = notice.text.split(" "), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > per_line:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return [*lines, line]


def notice_height(fig: Figure, notice: Notice | None) -> float:
    """Inches the banner takes at the top of the figure (0 without one)."""
    if notice is None:
        return 0.0
    return len(_notice_lines(fig, notice)) * NOTICE_FONT * 1.35 / 72 + 0.1


def draw_notice(fig: Figure, notice: Notice | None, banner: bool = True) -> None:
    """A red banner across the top of the figure (unless `banner` is False: the page around it
    says it); for a whole-figure mark also a faint diagonal watermark over the plots, so a
    cropped panel still carries it."""
    if notice is None:
        return
    color = "#b00020" if notice.whole_figure else "#8a5a00"
    if banner:
        fig.text(0.5, 0.997, "\n".join(_notice_lines(fig, notice)), ha="center", va="top", fontsize=NOTICE_FONT,
                 color="white" if notice.whole_figure else color, fontweight="bold", gid=MARK_GID,
                 bbox=dict(boxstyle="square,pad=0.3", facecolor=color if notice.whole_figure else "#fff3d6",
                           edgecolor=color, linewidth=0.8))
    if notice.whole_figure:
        width = fig.get_size_inches()[0]
        fig.text(0.5, 0.5, "EMULATED - not pmem performance", ha="center", va="center", rotation=18,
                 fontsize=max(14.0, min(34.0, 3.2 * width)), color=color, alpha=0.07, fontweight="bold",
                 gid=WATERMARK_GID, zorder=0.5)


def notice_of(fig: Figure) -> str:
    """The mark's text on a rendered figure ('' when it carries none)."""
    return next((t.get_text().replace("\n", " ") for t in fig.texts if t.get_gid() == MARK_GID), "")
