"""The files of one sweep: the tidy CSV and the three that live next to it; whether an -o can
be written, and whether the files already there are pmemlab's to resume or replace."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from pmemlab.errors import NotPmemlabFile, OutputError
from pmemlab.output import NAME_MAX, check_writable
from pmemlab.table import HIST_CSV_COLUMNS, SWEEP_CSV_COLUMNS, csv_header


def sidecar_path(csv_path: Path) -> Path:
    return csv_path.with_suffix(".json")


def summary_path(csv_path: Path) -> Path:
    return csv_path.with_name(csv_path.stem + ".summary.csv")


def histogram_path(csv_path: Path) -> Path:
    return csv_path.with_name(csv_path.stem + ".hist.csv")


@dataclass(frozen=True)
class SweepFiles:
    """NAME.csv (rows), NAME.json (sidecar), NAME.summary.csv, NAME.hist.csv."""

    csv: Path

    @property
    def sidecar(self) -> Path:
        return sidecar_path(self.csv)

    @property
    def summary(self) -> Path:
        return summary_path(self.csv)

    @property
    def histogram(self) -> Path:
        return histogram_path(self.csv)

    def all(self) -> tuple[Path, Path, Path, Path]:
        return (self.csv, self.sidecar, self.summary, self.histogram)

    def remove(self) -> None:
        """--fresh: start over (check_ours first: only pmemlab's files are removed)."""
        for p in self.all():
            if p.exists():
                p.unlink()

    def check_ours(self) -> None:
        """Refuse (NotPmemlabFile, nothing touched) when a file at one of the four paths is not one a
        sweep wrote: a CSV without pmemlab's columns, a sidecar that is not pmemlab's JSON. Resuming,
        --fresh and a new sweep would otherwise take it over or delete it."""
        fix = "-o another NAME.csv, or move the file away if it is yours to discard"
        for path, required in ((self.csv, SWEEP_CSV_COLUMNS), (self.histogram, HIST_CSV_COLUMNS),
                               (self.summary, ("point_key", "n"))):
            if not path.exists():
                continue
            if not path.is_file():
                raise NotPmemlabFile(f"{path} exists and is not a regular file", fix)
            if path.stat().st_size == 0:
                continue
            header = csv_header(path)
            if header is None or not all(c in header for c in required):
                raise NotPmemlabFile(f"{path} exists and is not a pmemlab {_kind(path, self)}; not taking it over",
                                     fix)
        side = self.sidecar
        if side.exists():
            if not side.is_file():
                raise NotPmemlabFile(f"{side} exists and is not a regular file", fix)
            if side.stat().st_size and not _is_sidecar(side):
                raise NotPmemlabFile(f"{side} exists and is not a pmemlab sidecar; not overwriting it", fix)


def _kind(path: Path, files: SweepFiles) -> str:
    return {files.csv: "sweep CSV", files.histogram: "histogram CSV", files.summary: "summary CSV"}[path]


def _is_sidecar(path: Path) -> bool:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and "pmemlab_sidecar" in doc


def check_output(csv: Path) -> None:
    """Refuse (OutputError: exit code 2, one line) an -o the sweep could not write, before anything
    runs and without writing anything that stays: it must name NAME.csv (the sidecar, summary and
    histogram go beside it), not a directory or a device; the nearest existing directory on its
    path must take a new file (a probe file is created and removed: this catches /proc and /sys,
    read-only file systems and missing permissions alike), and the longest companion name must
    fit the file system's name limit (output.check_writable)."""
    if csv.name.endswith((".summary.csv", ".hist.csv")) or csv.suffix != ".csv":
        raise OutputError(f"-o {csv}: not a NAME.csv name",
                          "give -o a file name ending in .csv (NAME.json, NAME.summary.csv and NAME.hist.csv "
                          "are written beside it)")
    check_writable(csv, "-o", directory=False)
    longest = SweepFiles(csv).summary.name + ".tmp"
    if len(longest.encode()) > NAME_MAX:
        raise OutputError(f"-o {str(csv)[:60]}...: the name is too long ({longest[:24]}... would be written "
                          "beside it)", "give a shorter NAME.csv")


def write_json_atomic(path: Path, doc: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, sort_keys=False, default=str)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
