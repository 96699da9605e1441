"""NAME.json next to the CSV: what was run (the config as written and as parsed, --scale,
--set), where (the machine, the run conditions, the resume identity), how it went (one
session per invocation) and what each column means. Rewritten atomically at the start and at
the end of every session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from pmemlab.host import ipmctl
from pmemlab.config import Point, SweepConfig
from pmemlab.sweep.files import SweepFiles, write_json_atomic
from pmemlab.sweep.resume import fingerprint
from pmemlab.table import COLUMN_DOC, now_iso

SIDECAR_FORMAT = 1


def read_previous(path: Path) -> dict[str, Any]:
    """The sidecar an earlier session left ({} if none or unreadable)."""
    if not path.exists():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def media_notes(info: Mapping[str, Any], media: ipmctl.MediaCounters | None,
                dimms: Sequence[int] | None) -> list[str]:
    """What the media-counter columns cover."""
    if media is None or not media.available:
        return [info.get("ipmctl", {}).get("note") or "ipmctl unavailable: media counter columns are empty"]
    if dimms:
        return [f"media counters: summed over the DIMMs of {info.get('target', {}).get('region')} "
                f"(ipmctl DimmIDs {', '.join(f'0x{h:04x}' for h in dimms)})"]
    return ["media counters: summed over every DIMM ipmctl shows (the target region's DIMMs are unknown)"]


class Sidecar:
    """The sidecar of one session: `begin` writes it with status running, `end` records how
    the session ended, `write` puts it on disk."""

    def __init__(self, path: Path, doc: dict[str, Any], session: dict[str, Any]) -> None:
        self.path = path
        self.doc = doc
        self.session = session

    @classmethod
    def begin(cls, files: SweepFiles, cfg: SweepConfig, points: Sequence[Point], info: Mapping[str, Any],
              cond: Mapping[str, Any], identity: Mapping[str, Any], notes: list[str],
              previous: Mapping[str, Any], argv: Sequence[str], resumed: int) -> Sidecar:
        """The document of a new session (sessions and start time carried over from `previous`),
        written at once."""
        session: dict[str, Any] = {"started_at": now_iso(), "ended_at": None, "argv": list(argv),
                                   "status": "running", "resumed_runs": resumed}
        doc: dict[str, Any] = {
            "pmemlab_sidecar": SIDECAR_FORMAT,
            "sweep": cfg.name,
            "description": cfg.description,
            "csv": files.csv.name,
            "summary_csv": files.summary.name,
            "histogram_csv": files.histogram.name,
            "started_at": previous.get("started_at", session["started_at"]),
            "ended_at": None,
            "status": "running",
            "toolkit": info.get("toolkit"),
            "config": {"path": str(cfg.path) if cfg.path else None, "text": cfg.text, "parsed": cfg.data,
                       "scale": cfg.scale, "set": cfg.overrides, "set_pinned_axes": cfg.pinned,
                       "repeats": cfg.repeats,
                       "adaptive": cfg.adaptive.__dict__ if cfg.adaptive else None},
            "points": len(points),
            "axes": {k: [str(v) for v in vals] for ax in cfg.axes for k, vals in
                     zip(ax.keys, zip(*ax.values))},
            "conditions": dict(cond),
            "resume": {"fingerprint": fingerprint(identity), "identity": identity},
            "machine": info,
            "notes": notes,
            "sessions": [*previous.get("sessions", []), session],
            "columns": COLUMN_DOC,
        }
        sidecar = cls(files.sidecar, doc, session)
        sidecar.write()
        return sidecar

    def note(self, text: str) -> None:
        self.doc["notes"].append(text)

    def end(self, status: str, counts: Mapping[str, int], interrupted: str = "") -> None:
        if interrupted:
            self.session["interrupted"] = interrupted
        self.session.update(ended_at=now_iso(), status=status, **counts)
        self.doc.update(ended_at=self.session["ended_at"], status=status)

    def write(self) -> None:
        write_json_atomic(self.path, self.doc)
