"""The report's run conditions, timing validity first: a row per target with the facts that
decide whether its times mean anything (TSC, clocksource, timer step, interrupts off,
instruction widths, CPU frequency); a row per target with what it is and where it and the
threads sit; then the machine. The rows of every experiment, taken together per target."""

from __future__ import annotations

import html
from typing import Sequence

import pandas as pd

from pmemlab.analysis.resultset import RUN_KEYS, Results, TimerStep, size_label, timer_step
from pmemlab.report.experiments import Section
from pmemlab.report.markup import html_table, md_table, values_text

# The targets table shows a target's CXL geometry and its node's advertised values (adv_*,
# machine.advertised_conditions) where the rows carry them.
ADVERTISED_FIELDS = (("devices", "target_devices"), ("CXL region", "target_cxl_region"),
                     ("memory node", "adv_node"), ("adv. read ns", "adv_read_latency_ns"),
                     ("adv. write ns", "adv_write_latency_ns"), ("adv. read MB/s", "adv_read_bw_mbps"),
                     ("adv. write MB/s", "adv_write_bw_mbps"), ("adv. from", "adv_source"),
                     ("memory tier", "memory_tier"))
EMULATED_TEXT = {"no": "real NVDIMM", "dram": "DRAM (the papers' baseline, not an emulation)",
                 "memmap": "emulated pmem: memmap= DRAM", "virtual-nvdimm": "emulated pmem: a hypervisor's NVDIMM",
                 "nfit_test": "emulated pmem: nfit_test", "unknown": "unknown"}


# --------------------------------------------------------------------------
# the rows, per target
# --------------------------------------------------------------------------
def rows_by_target(sections: Sequence[Section]) -> dict[str, pd.DataFrame]:
    """Every experiment's rows (an `experiment` column added) by target label."""

    frames = [s.results.rows.assign(experiment=s.name) for s in sections if not s.results.rows.empty]
    if not frames:
        return {}
    rows = pd.concat(frames, ignore_index=True)
    return {str(label): grp for label, grp in rows.groupby("target_label", sort=False)}


def distinct(rows: pd.DataFrame, column: str) -> list[str]:
    """The column's distinct values as text, in order (a whole float without its '.0')."""
    if column not in rows:
        return []
    out = []
    for v in rows[column].dropna():
        text = str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)
        if text and text not in out:
            out.append(text)
    return out


def agg_ok(rows: pd.DataFrame) -> pd.DataFrame:
    """The runs' aggregate rows (thread 'all') that succeeded."""
    return rows[(rows["thread"].astype(str) == "all") & (rows["status"] == "ok")]


def user_backend(rows: pd.DataFrame) -> bool:
    return bool(distinct(rows, "target_kind")) and all(k.startswith("user") for k in distinct(rows, "target_kind"))


def target_steps(sections: Sequence[Section]) -> dict[str, TimerStep | None]:
    """Per target label, the timer step its latency samples resolve, over every experiment."""

    hists = []
    for s in sections:
        hist = s.results.hist
        if hist is None or hist.empty:
            continue
        runs = s.results.rows[[*RUN_KEYS, "target_label"]].drop_duplicates(RUN_KEYS)
        runs = runs.assign(repeat=pd.to_numeric(runs["repeat"], errors="coerce"))
        hist = hist.assign(repeat=pd.to_numeric(hist["repeat"], errors="coerce"))
        hist = hist.drop(columns=[c for c in ("target_label",) if c in hist]).merge(runs, on=RUN_KEYS)
        hists.append(hist.assign(source_csv=s.name + "/" + hist["source_csv"].astype(str)))
    if not hists:
        return {}
    every = pd.concat(hists, ignore_index=True)
    return {str(label): timer_step(grp) for label, grp in every.groupby("target_label", sort=False)}


def machine_widths(results: Results) -> list[int]:
    """The instruction widths this machine offers (the sidecars' machine facts)."""
    out: set[int] = set()
    for side in results.sidecars:
        widths = side.get("machine", {}).get("cpu", {}).get("widths") if isinstance(side.get("machine"), dict) else None
        if isinstance(widths, list):
            out |= {int(w) for w in widths if isinstance(w, (int, float))}
    return sorted(out)


def widest_widths(sections: Sequence[Section]) -> list[int]:
    """The instruction widths the machine offers, over every experiment's sidecars."""
    return sorted({w for s in sections for w in machine_widths(s.results)})


# --------------------------------------------------------------------------
# timing validity, a row per target
# --------------------------------------------------------------------------
def tsc_text(rows: pd.DataFrame) -> str:
    inv, rel = distinct(rows, "tsc_invariant"), distinct(rows, "tsc_reliable")
    invariant = {"1": "invariant", "0": "NOT invariant"}.get("/".join(inv), "invariant: " + ("/".join(inv) or "?"))
    reliable = {"1": "trusted by the kernel", "0": "marked unstable by the kernel", "": "kernel trust unknown"}.get(
        "/".join(rel), "kernel trust: " + "/".join(rel))
    khz = distinct(rows, "tsc_khz")
    rate = f"{float(khz[0]) / 1000:.6g} MHz, " if len(khz) == 1 else ""
    return f"{rate}{invariant}, {reliable}"


def irqoff_text(rows: pd.DataFrame) -> str:

    if user_backend(rows):
        return "on (user backend: interrupts stay on)"
    ok = agg_ok(rows)
    values = pd.to_numeric(ok.get("irqoff_pct", pd.Series(dtype=float)), errors="coerce").dropna()
    if values.empty:
        return "-"
    bw = pd.to_numeric(ok.loc[ok.get("mode", pd.Series("", index=ok.index)) == "bandwidth", "irqoff_pct"]
                       if "mode" in ok else pd.Series(dtype=float), errors="coerce").dropna()
    text = f"{values.min():.0f}-{values.max():.0f} % of the timed runs" if values.min() < values.max() - 0.5 \
        else f"{values.min():.1f} %"
    if len(bw) and bw.min() < values.max() - 0.5:
        text += f" (bandwidth runs {bw.min():.0f}-{bw.max():.0f} %)"
    return text


def width_text(rows: pd.DataFrame, widest: list[int]) -> str:

    ok = agg_ok(rows)
    if "width_used" not in ok:
        return "-"
    per = {}
    for experiment, grp in ok.groupby("experiment", sort=False):
        widths = sorted({int(w) for w in pd.to_numeric(grp["width_used"], errors="coerce").dropna()})
        if widths:
            per[experiment] = values_text(widths, sizes=True)
    by_width: dict[str, list[str]] = {}
    for experiment, text in per.items():
        by_width.setdefault(text, []).append(str(experiment))
    text = "; ".join(f"{w} ({', '.join(names)})" for w, names in by_width.items()) or "-"
    if widest:
        text += f"; widest here {max(widest)} B" + (" (no AVX-512)" if max(widest) < 64 else "")
    return text


def frequency_text(rows: pd.DataFrame) -> str:
    governor, driver, turbo = distinct(rows, "governor"), distinct(rows, "cpufreq_driver"), distinct(rows, "turbo")
    if not (governor or driver or turbo):
        return "not exposed (no cpufreq: the TSC rate is all that is known)"
    parts = ["/".join(governor) or "?"]
    if driver:
        parts.append(f"({'/'.join(driver)})")
    if turbo:
        parts.append(f"turbo {'/'.join(turbo)}")
    return " ".join(parts)


def timing_table(sections: Sequence[Section]) -> pd.DataFrame:
    """One row per target: the facts that decide whether its times mean anything."""

    steps = target_steps(sections)
    widest = widest_widths(sections)
    rows = []
    for label, grp in rows_by_target(sections).items():
        step = steps.get(label)
        rows.append({"target": label, "TSC": tsc_text(grp), "clocksource": "/".join(distinct(grp, "clocksource")) or "-",
                     "timer step (measured)": step.text() if step is not None else "no latency samples",
                     "interrupts off": irqoff_text(grp), "instruction widths": width_text(grp, widest),
                     "CPU frequency": frequency_text(grp)})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------
# targets and placement, a row per target
# --------------------------------------------------------------------------
def interleave_text(grp: pd.DataFrame, kind: str) -> str:
    ways = distinct(grp, "target_interleave_ways")
    gran = distinct(agg_ok(grp), "interleave_gran")
    if kind.startswith(("dram", "user-dram")) or not ways:
        return "-" if kind.startswith(("dram", "user-dram")) else "unknown"
    if ways == ["1"]:
        return "1 DIMM, not interleaved"
    return f"{'/'.join(ways)} DIMMs" + (f" x {size_label(float(gran[0]))}" if len(gran) == 1 else "")


def prefetchers_text(grp: pd.DataFrame) -> str:
    control = distinct(grp, "prefetch_control")
    prefetchers = "/".join(distinct(agg_ok(grp), "prefetch")) or "-"
    if control == ["none"]:
        prefetchers += " (left on: this CPU offers no control)"
    elif control:
        prefetchers += f" (control: {'/'.join(control)})"
    return prefetchers


def placement_text(grp: pd.DataFrame) -> str:
    """The threads' nodes and their CPUs: '0 (1/2/3)'."""
    threads = grp[(grp["thread"].astype(str) != "all") & (grp["status"] == "ok")]
    nodes = "/".join(distinct(threads, "thread_node")) or "-"
    cpus = "/".join(sorted(distinct(threads, "cpu"), key=lambda c: int(c) if c.isdigit() else 0)) or "-"
    return f"{nodes} ({cpus})"


def target_row(label: str, grp: pd.DataFrame) -> dict[str, str]:
    kind = "/".join(distinct(grp, "target_kind"))
    pages = [size_label(float(v)) for v in distinct(grp, "target_page_size")]
    row = {"target": label, "device": "/".join(distinct(grp, "target")) or "-", "kind": kind or "-",
           "what it is": "/".join(EMULATED_TEXT.get(v, v) for v in distinct(grp, "target_emulated")) or "-",
           "target node": "/".join(distinct(grp, "target_node")) or "-",
           "threads: node (CPUs)": placement_text(grp), "interleave": interleave_text(grp, kind),
           "page size": "/".join(pages) or "-", "prefetchers": prefetchers_text(grp)}
    for title, column in ADVERTISED_FIELDS:
        if column in grp and grp[column].notna().any():
            row[title] = "/".join(distinct(grp, column)) or "-"
    return row


def targets_table(sections: Sequence[Section]) -> pd.DataFrame:
    """One row per target: what it is, where it and the threads sit, how it is mapped and
    interleaved, the prefetchers; and its CXL devices and its node's advertised values where the
    rows carry them (ADVERTISED_FIELDS)."""

    return pd.DataFrame([target_row(label, grp) for label, grp in rows_by_target(sections).items()])


def machine_facts(sections: Sequence[Section]) -> list[tuple[str, str]]:

    rows = pd.concat([s.results.rows for s in sections], ignore_index=True)
    days = sorted({str(v)[:10] for v in rows.get("started_at", pd.Series(dtype=str)).dropna()})
    facts = [("host", "hostname"), ("CPU", "cpu_model"), ("kernel", "kernel"), ("hypervisor", "hypervisor"),
             ("SMT active", "smt_active"), ("THP", "thp_enabled"), ("mitigations", "mitigations"),
             ("mitigations=", "mitigations_cmdline"), ("pmemlab", "toolkit_version")]
    out = [(title, ", ".join(distinct(rows, column)) or "-") for title, column in facts]
    out.append(("date", days[0] if len(days) == 1 else (f"{days[0]} .. {days[-1]}" if days else "-")))
    return out


# --------------------------------------------------------------------------
# on the page
# --------------------------------------------------------------------------
def conditions_html(timing: pd.DataFrame, targets: pd.DataFrame, machine: Sequence[tuple[str, str]]) -> list[str]:
    return ["<h2 id=conditions>Run conditions</h2>",
            "<h3 id=timing>Timing validity, per target</h3>",
            html_table(timing, table_id="timing-table"),
            "<h3 id=targets>Targets and placement</h3>",
            html_table(targets, table_id="targets-table"),
            "<p id=machine>" + " · ".join(f"<b>{html.escape(k)}</b>: {html.escape(v)}" for k, v in machine) + "</p>"]


def conditions_markdown(timing: pd.DataFrame, targets: pd.DataFrame, machine: Sequence[tuple[str, str]]) -> list[str]:
    return ["## Run conditions", "", "### Timing validity, per target", "", md_table(timing), "",
            "### Targets and placement", "", md_table(targets), "",
            " · ".join(f"**{k}**: {v}" for k, v in machine), ""]
