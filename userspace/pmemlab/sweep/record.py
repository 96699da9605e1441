"""Recording runs: the rows of each run into the tidy CSV and its latency histograms into
NAME.hist.csv (the sweep), or into memory (`pmemlab run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

from pmemlab.sweep.files import SweepFiles
from pmemlab.sweep.resume import ResumeState
from pmemlab.table import BASE_COLUMNS, HIST_COLUMNS, CsvSink

Row = Mapping[str, Any]


class Recorder(Protocol):
    def record(self, rows: Sequence[Row], hist: Sequence[Row] = ()) -> None:
        """The rows of one run (per thread, then the aggregate) and its histogram buckets."""

    def sync(self) -> None:
        """What was recorded, on disk."""


class CsvRecorder:
    """Appends to NAME.csv and NAME.hist.csv; every append leaves both files valid."""

    def __init__(self, files: SweepFiles) -> None:
        self.files = files
        self.rows = CsvSink(files.csv, BASE_COLUMNS)
        self.hist = CsvSink(files.histogram, HIST_COLUMNS)

    def start(self, state: ResumeState | None) -> None:
        """A new CSV (header only), or the kept rows of a resumed one (failed and partial runs
        dropped); the histogram file keeps the buckets of kept runs only."""
        if state is not None:
            self.rows.columns = list(dict.fromkeys([*BASE_COLUMNS, *state.header]))
            # a resumed CSV that keeps every row under the same header is appended to as it is
            if self.rows.columns != state.header or not _intact(self.rows.path, len(state.kept)):
                self.rows.rewrite(state.kept)
        else:
            self.rows.ensure_header()
        done = state.done if state is not None else set()
        if self.hist.path.exists():
            hheader, hrows = CsvSink.read_existing(self.hist.path)
            self.hist.columns = list(dict.fromkeys([*HIST_COLUMNS, *hheader]))
            keep = [r for r in hrows if (r.get("point_key", ""), _int(r.get("repeat"))) in done]
            if self.hist.columns != hheader or not _intact(self.hist.path, len(keep)):
                self.hist.rewrite(keep)

    def record(self, rows: Sequence[Row], hist: Sequence[Row] = ()) -> None:
        if hist:
            self.hist.ensure_header()
            self.hist.append(hist)
        self.rows.append(rows)

    def sync(self) -> None:
        """Every row recorded on disk (the sweep's end, however it ended)."""
        self.hist.sync()
        self.rows.sync()


class MemoryRecorder:
    """Keeps the rows (`pmemlab run` prints them)."""

    def sync(self) -> None:
        """Nothing to sync."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.hist: list[dict[str, Any]] = []

    def record(self, rows: Sequence[Row], hist: Sequence[Row] = ()) -> None:
        self.rows.extend(dict(r) for r in rows)
        self.hist.extend(dict(h) for h in hist)


def _intact(path: Path, rows: int) -> bool:
    """The file holds its header and exactly `rows` rows, whole (a torn last line, a dropped or
    multi-line row: False, and the caller rewrites it)."""
    data = path.read_bytes()
    return data.endswith(b"\n") and data.count(b"\n") == rows + 1


def _int(text: Any) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return -1
