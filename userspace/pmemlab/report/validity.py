"""The report's warnings, timing validity first: what makes times incomparable or coarse (the
TSC, the timer's step, interrupts left on, narrow instructions), each saying what it means for
the figures; then repeat counts, one line for a quick-scale run; then each experiment's own
(report.noise)."""

from __future__ import annotations

import html
from typing import Sequence

import pandas as pd

from pmemlab.analysis.compare import swept_parameters
from pmemlab.analysis.noise import FEW_REPEATS
from pmemlab.analysis.resultset import TimerStep, latency_stats, repeats_text, scale_of
from pmemlab.report.conditions import agg_ok, distinct, rows_by_target, target_steps, tsc_text, user_backend, widest_widths
from pmemlab.report.experiments import Section
from pmemlab.report.markup import upper_first, values_text

BARE_METAL_IRQOFF = 99.9  # % of a module run with interrupts off on bare metal (docs/method.md)
STEP_MATTERS_NS = 2.0  # a resolved clock step from this size on is worth a warning
NONE_TEXT = ("None: the TSC is invariant and trusted, the timer resolves every value, and every point has at least "
             "3 repeats varying by less than 5 %.")


def timing_warnings(sections: Sequence[Section]) -> list[str]:
    """The facts that make times incomparable or coarse, each with what it means for the figures."""

    return [*tsc_warnings(sections), *step_warnings(sections), *irqoff_warnings(sections),
            *width_warnings(sections)]


def tsc_warnings(sections: Sequence[Section]) -> list[str]:
    bad_tsc = {label: grp for label, grp in rows_by_target(sections).items()
               if "0" in distinct(grp, "tsc_invariant") or "0" in distinct(grp, "tsc_reliable")}
    if not bad_tsc:
        return []
    grp = pd.concat(bad_tsc.values())
    return [f"TSC {tsc_text(grp).split(', ', 1)[-1]} (clocksource {'/'.join(distinct(grp, 'clocksource')) or '?'}) "
            f"on {', '.join(bad_tsc)}: ticks become ns at the kernel's tsc_khz and the threads' common "
            "window spans CPUs whose TSCs may disagree, so no latency or bandwidth here is comparable with "
            "a bare-metal run (docs/method.md, \"The TSC\")"]


def step_warnings(sections: Sequence[Section]) -> list[str]:
    """A clock step of STEP_MATTERS_NS or more: the medians below it, per experiment."""
    steps = {label: step for label, step in target_steps(sections).items()
             if step is not None and step.resolved and step.ns >= STEP_MATTERS_NS}
    if not steps:
        return []
    step = next(iter(steps.values()))
    below = medians_below(sections, step)
    smallest = ", ".join(f"{v:g}" for v in step.values_ns)
    return [f"the clock advances in steps of {step.ns:.3g} ns ({step.ticks:.0f} TSC ticks) on "
            f"{', '.join(steps)}: every latency sample is a multiple (the smallest: {smallest} ns), so a value "
            "below one step is not measured"
            + (f"; medians below it: {'; '.join(below)} (hatched bars, open triangles)" if below else "")
            + "; percentiles move in whole steps"]


def medians_below(sections: Sequence[Section], step: TimerStep) -> list[str]:
    """'idle-latency 3 of 12': per experiment, its latency points whose median is below one step."""
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
    return below


def irqoff_warnings(sections: Sequence[Section]) -> list[str]:
    low: list[tuple[str, float, float]] = []
    for label, grp in rows_by_target(sections).items():
        if user_backend(grp):
            continue
        values = pd.to_numeric(agg_ok(grp).get("irqoff_pct", pd.Series(dtype=float)), errors="coerce").dropna()
        if len(values) and values.min() < BARE_METAL_IRQOFF - 1:
            low.append((label, float(values.min()), float(values.max())))
    if not low:
        return []
    lo, hi = min(v for _, v, _ in low), max(v for _, _, v in low)
    return [f"interrupts were off for only {lo:.0f}-{hi:.0f} % of the timed runs on "
            f"{', '.join(label for label, _, _ in low)} (a module run on bare metal: above "
            f"{BARE_METAL_IRQOFF:g} %): the gaps between segments, where the CPU takes its interrupts, are "
            "inside the common window, so aggregate bandwidth is low by up to that share"]


def width_warnings(sections: Sequence[Section]) -> list[str]:
    narrow = []
    for s in sections:
        if s.figure is None or not s.figure.width:
            continue
        widths = sorted({int(w) for w in pd.to_numeric(s.results.ok().get("width_used", pd.Series(dtype=float)),
                                                       errors="coerce").dropna()})
        if widths and max(widths) < s.figure.width:
            narrow.append(f"{s.name} {values_text(widths, sizes=True)}")
    if not narrow:
        return []
    widest = widest_widths(sections)
    return [f"narrower instructions than the papers' 64 B AVX-512 ones: {'; '.join(narrow)}"
            + (f" (this CPU's widest is {max(widest)} B)" if widest and max(widest) < 64 else "")
            + ": bandwidth per instruction and the loop's own cost differ from the papers' runs"]


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


def other_warnings(sections: Sequence[Section]) -> list[tuple[str, str]]:
    """(experiment or '', text): the repeats line, then each experiment's warnings (its own
    repeat count left to that line where there is one)."""
    repeats = repeats_warning(sections)
    general = [("", repeats)] if repeats else []
    per_experiment = []
    for s in sections:
        warnings = s.warnings if not repeats else [w for w in s.warnings if f"fewer than {FEW_REPEATS} repeats" not in w]
        per_experiment += [(s.name, w) for w in warnings]
    return general + per_experiment


# --------------------------------------------------------------------------
# on the page
# --------------------------------------------------------------------------
def warnings_html(timing: Sequence[str], others: Sequence[tuple[str, str]]) -> list[str]:
    out = ["<h2 id=warnings>Warnings</h2>"]
    if not (timing or others):
        return out + [f"<p id=warning-list>{NONE_TEXT}</p>"]
    items = [f"<li class=timing>{html.escape(upper_first(w))}</li>" for w in timing]
    items += [f"<li>{'<b>' + html.escape(n) + '</b>: ' if n else ''}{html.escape(w)}</li>" for n, w in others]
    return out + ["<div class=warn id=warning-list><ul>" + "".join(items) + "</ul></div>"]


def warnings_markdown(timing: Sequence[str], others: Sequence[tuple[str, str]]) -> list[str]:
    lines = [f"- **{upper_first(w)}**" for w in timing]
    lines += [f"- {'**' + n + '**: ' if n else ''}{w}" for n, w in others]
    return ["## Warnings", "", *(lines or ["None."])]
