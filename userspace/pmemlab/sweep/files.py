"""The files of one sweep: the tidy CSV and the three that live next to it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping


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
        """--fresh: start over."""
        for p in self.all():
            if p.exists():
                p.unlink()


def write_json_atomic(path: Path, doc: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, sort_keys=False, default=str)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
