"""Reading sweep results for figures: the CSVs of one experiment (one per module load, merged),
their histograms and sidecars, the aggregate rows per run, and the caption of a figure."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from pmemlab.errors import PmemlabError

TARGET_LABEL_SEPARATOR = "@"  # results/NAME@LABEL.csv: the run of NAME with the module load LABEL


@dataclass
class Results:
    """Every row of one experiment's CSVs, its latency histograms and sidecars."""

    name: str
    rows: pd.DataFrame
    hist: pd.DataFrame | None = None
    sidecars: list[dict[str, Any]] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)  # "LABEL: why" of module loads that failed

    def ok(self) -> pd.DataFrame:
        """Aggregate rows (thread = all) of the runs that succeeded."""
        return ok_aggregate(self.rows)

    def threads(self) -> pd.DataFrame:
        """Per-thread rows of the runs that succeeded."""
        rows = self.rows
        return rows[(rows["thread"].astype(str) != "all") & (rows["status"] == "ok")]


def is_sweep_csv(path: Path) -> bool:
    return path.suffix == ".csv" and not path.name.endswith((".summary.csv", ".hist.csv"))


def histogram_path(csv_path: Path) -> Path:
    return csv_path.with_name(csv_path.stem + ".hist.csv")


def label_from_path(csv_path: Path) -> str:
    """`emulation@dram-remote.csv` -> `dram-remote`; no label -> ''."""
    stem = csv_path.stem
    return stem.split(TARGET_LABEL_SEPARATOR, 1)[1] if TARGET_LABEL_SEPARATOR in stem else ""


def sweep_name(csv_path: Path) -> str:
    """The sweep a CSV holds: its `sweep` column, else the file name before any '@'."""
    try:
        head = pd.read_csv(csv_path, usecols=["sweep"], nrows=1)
        if len(head) and isinstance(head["sweep"].iloc[0], str):
            return head["sweep"].iloc[0]
    except (ValueError, pd.errors.EmptyDataError, OSError):
        pass
    return csv_path.stem.split(TARGET_LABEL_SEPARATOR, 1)[0]


def load_results(paths: Sequence[Path]) -> Results:
    """The rows of `paths` (one experiment, maybe one CSV per module load), with a `target_label`."""
    frames, hists, sidecars = [], [], []
    for path in paths:
        frame = _read_csv(path)
        frame["source_csv"] = path.name
        frames.append(frame)
        hpath = histogram_path(path)
        if hpath.exists() and hpath.stat().st_size > 0:
            hist = _read_csv(hpath)
            hist["source_csv"] = path.name
            hists.append(hist)
        side = path.with_suffix(".json")
        if side.exists():
            try:
                sidecars.append(json.loads(side.read_text(encoding="utf-8")))
            except (OSError, json.JSONDecodeError):
                pass
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if rows.empty and "sweep" not in rows.columns:
        raise PmemlabError(f"no rows in {', '.join(str(p) for p in paths)}", "run the sweep first")
    rows["target_label"] = _target_labels(rows, {p.name: label_from_path(p) for p in paths})
    hist = pd.concat(hists, ignore_index=True) if hists else None
    name = str(rows["sweep"].dropna().iloc[0]) if "sweep" in rows and rows["sweep"].notna().any() else paths[0].stem
    return Results(name=name, rows=rows, hist=hist, sidecars=sidecars, paths=list(paths),
                   not_run=loads_not_run(paths, name))


SKIPPED_FILE = "SKIPPED"  # beside the CSVs: a "NAME@LABEL: reason" line per module load that failed


def loads_not_run(paths: Sequence[Path], name: str) -> list[str]:
    """The `LABEL: reason` of this sweep's loads listed in SKIPPED files beside its CSVs."""
    found: list[str] = []
    for folder in dict.fromkeys(p.parent for p in paths):
        listing = folder / SKIPPED_FILE
        if not listing.exists():
            continue
        for line in listing.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(f"{name}{TARGET_LABEL_SEPARATOR}"):
                found.append(line[len(name) + 1:].strip())
    return list(dict.fromkeys(found))


TEXT_COLUMNS = {c: str for c in ("toolkit_version", "module_version", "kernel", "hostname", "cpu_model", "target",
                                 "op", "error", "sweep", "point_key", "thread")}


def _read_csv(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, low_memory=False, dtype=TEXT_COLUMNS)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def ok_aggregate(rows: pd.DataFrame) -> pd.DataFrame:
    if rows.empty:
        return rows
    return rows[(rows["thread"].astype(str) == "all") & (rows["status"] == "ok")].copy()


def _target_labels(rows: pd.DataFrame, file_labels: dict[str, str]) -> pd.Series:
    """A short name per row for the module load it ran under: the file's @LABEL, else the target
    kind (pmem / DRAM) plus whatever tells same-kind targets apart (device, node, page size)."""
    kind = rows.get("target_kind", pd.Series("", index=rows.index)).fillna("").astype(str)
    base = kind.map({"fsdax": "pmem", "dram": "DRAM"}).fillna(kind).replace("", "target")
    labels = base.copy()
    for k in base.unique():
        same = base == k
        for column, show in (("target", str), ("target_node", lambda v: f"node {int(v)}"),
                             ("target_page_size", lambda v: f"{size_label(int(v))} pages")):
            if column in rows and rows.loc[same, column].dropna().nunique() > 1:
                labels[same] = labels[same] + " " + rows.loc[same, column].map(
                    lambda v: show(v) if pd.notna(v) else "?")
    from_file = rows["source_csv"].map(file_labels).fillna("")
    return from_file.where(from_file != "", labels)


# --------------------------------------------------------------------------
# statistics over repeats
# --------------------------------------------------------------------------
def mean_over_repeats(df: pd.DataFrame, keys: Sequence[str], y: str) -> pd.DataFrame:
    """One row per combination of `keys`: mean, standard deviation and n of `y` over the repeats."""
    keys = [k for k in dict.fromkeys(keys) if k in df.columns]
    data = df[[*keys, y]].copy()
    data[y] = pd.to_numeric(data[y], errors="coerce")
    data = data.dropna(subset=[y])
    if data.empty:
        return pd.DataFrame(columns=[*keys, "mean", "std", "n"])
    if not keys:
        return pd.DataFrame({"mean": [data[y].mean()], "std": [data[y].std()], "n": [len(data)]})
    grouped = data.groupby(keys, sort=True, dropna=False)[y]
    out = grouped.agg(["mean", "std", "count"]).reset_index().rename(columns={"count": "n"})
    out["std"] = out["std"].fillna(0.0)
    return out


# --------------------------------------------------------------------------
# labels
# --------------------------------------------------------------------------
def size_label(n: float) -> str:
    """Bytes with binary units: 64 -> '64 B', 4096 -> '4 KiB', 3 << 20 -> '3 MiB'."""
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "?"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:g} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def _unique(values: Iterable[Any]) -> list[str]:
    return [str(v) for v in dict.fromkeys(v for v in values if pd.notna(v) and str(v) != "")]


def caption(results: Results) -> str:
    """'target ... · machine ... · date ...': the run conditions the figure came from."""
    rows = results.rows
    parts = [results.name]
    targets = []
    for label, grp in rows.groupby("target_label", sort=False):
        dev = _unique(grp.get("target", []))
        kind = _unique(grp.get("target_kind", []))
        targets.append(f"{label} ({', '.join(dev + kind) or 'unknown'})")
    parts.append("target: " + "; ".join(targets))
    host = ", ".join(_unique(rows.get("hostname", []))) or "unknown host"
    cpu = ", ".join(_unique(rows.get("cpu_model", [])))
    kernel = ", ".join(_unique(rows.get("kernel", [])))
    parts.append(f"machine: {host}" + (f" ({cpu}" + (f", kernel {kernel}" if kernel else "") + ")" if cpu else ""))
    parts.append(f"date: {_date_range(rows)}")
    versions = _unique(rows.get("toolkit_version", []))
    if versions:
        parts.append(f"pmemlab {', '.join(versions)}")
    for entry in results.not_run:
        label, _, why = entry.partition(":")
        parts.append(f"not run: {label} ({why.rsplit(': ', 1)[-1].strip()})")
    skipped = skipped_points(rows)
    if skipped:
        parts.append(skipped)
    scale = _scale(results.sidecars)
    if scale:
        parts.append(f"scale: {scale}")
    return " · ".join(parts)


def skipped_points(rows: pd.DataFrame, limit: int = 2) -> str:
    """'skipped: N points (reason; reason)': the points this machine could not run, or ''."""
    if rows.empty or "status" not in rows:
        return ""
    skipped = rows[rows["status"] == "skipped"]
    if skipped.empty:
        return ""
    keys = skipped.get("source_csv", pd.Series("", index=skipped.index)).astype(str) + skipped["point_key"].astype(str)
    reasons = _unique(skipped.get("error", []))
    shown = "; ".join(reasons[:limit]) + (f"; +{len(reasons) - limit} more" if len(reasons) > limit else "")
    count = keys.nunique()
    return f"skipped: {count} point{'s' if count != 1 else ''}" + (f" ({shown})" if shown else "")


def _date_range(rows: pd.DataFrame) -> str:
    if "started_at" not in rows:
        return "unknown"
    days = sorted({str(v)[:10] for v in rows["started_at"].dropna()})
    if not days:
        return "unknown"
    return days[0] if len(days) == 1 else f"{days[0]} .. {days[-1]}"


def _scale(sidecars: Sequence[dict[str, Any]]) -> str:
    for side in sidecars:
        text = str(side.get("description", ""))
        if "[scale: " in text:
            return text.rsplit("[scale: ", 1)[1].rstrip("]")
    return ""
