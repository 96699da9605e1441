"""Resume: which runs an existing CSV already holds, and whether they may be kept.

A sweep that finds its CSV keeps the completed runs and makes only the others. It refuses
(ResumeMismatch, nothing written) when the rows were measured with another configuration
or target: the sidecar's fingerprint, the rows' point keys and their run-condition columns
must all agree with this session.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, NoReturn, Sequence

from pmemlab.config import Point, SweepConfig
from pmemlab.errors import ResumeMismatch
from pmemlab.sweep.files import sidecar_path
from pmemlab.table import CsvSink

# Run conditions a resumed CSV must share with its rows (columns of every row).
RESUME_CONDITIONS: tuple[str, ...] = ("target", "target_kind", "target_size", "target_node", "target_page_size",
                                      "module_version")


@dataclass
class ResumeState:
    """What an existing CSV gives a new session: its header, the rows kept and the completed
    (point_key, repeat) pairs."""

    header: list[str] = field(default_factory=list)
    kept: list[dict[str, str]] = field(default_factory=list)
    done: set[tuple[str, int]] = field(default_factory=set)


def load_done(csv_path: Path, skipped_now: set[str] | None = None,
              ) -> tuple[list[str], list[dict[str, str]], set[tuple[str, int]]]:
    """Existing header, the rows to keep, and the completed (point_key, repeat) pairs.

    Completed = an aggregate row with status ok, or skipped for a point the current
    expansion still skips (`skipped_now`; None: every skipped point). Rows of failed
    or partial (point, repeat) pairs, and skipped points that can run now, are dropped
    so those runs happen again.
    """
    header, rows = CsvSink.read_existing(csv_path)
    done: set[tuple[str, int]] = set()
    for r in rows:
        st = r.get("status")
        if r.get("thread") != "all":
            continue
        if st == "ok" or (st == "skipped" and (skipped_now is None or r.get("point_key") in skipped_now)):
            try:
                done.add((r["point_key"], int(r["repeat"])))
            except (KeyError, ValueError):
                continue
    keep = []
    for r in rows:
        try:
            if (r.get("point_key", ""), int(r.get("repeat", -1))) in done:
                keep.append(r)
        except ValueError:
            continue
    return header, keep, done


def resume_identity(cfg: SweepConfig, cond: Mapping[str, Any], backend: Mapping[str, Any]) -> dict[str, Any]:
    """What must not change between the sessions that write one CSV.

    The config as it runs (after --scale and --set: name, base, axes, zips, filters) and
    the target (device, kind, size, node, page size, module version; `backend`: the
    backend's kind and load parameters, Backend.identity()). Repeats, [sweep.adaptive],
    timeout_s and on_unsupported may change: they decide how many runs there are, not what
    a run measures.
    """
    return {"config": config_identity(cfg), "target": target_identity(cond, backend)}


def config_identity(cfg: SweepConfig) -> dict[str, Any]:
    """The config's part of the resume identity."""
    config: dict[str, Any] = {"name": cfg.name, "scale": cfg.scale}
    for k in sorted(cfg.base):
        config[f"base.{k}"] = cfg.base[k]
    for ax in cfg.axes:
        table = ax.table.split("#")[0]
        for i, k in enumerate(ax.keys):
            config[f"{table}.{k}"] = [vals[i] for vals in ax.values]
    config["filters"] = [expr for expr, _ in cfg.filters]
    return config


def target_identity(cond: Mapping[str, Any], backend: Mapping[str, Any]) -> dict[str, Any]:
    """A target's part of the resume identity: its run conditions and the backend's identity."""
    target: dict[str, Any] = {k: cond.get(k) for k in RESUME_CONDITIONS}
    target.update(backend)
    return target


def fingerprint(identity: Mapping[str, Any]) -> str:
    blob = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _short(value: Any) -> str:
    text = " ".join((json.dumps(value, default=str) if not isinstance(value, str) else value).split())
    return text if len(text) <= 40 else text[:37] + "..."


def identity_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """What changed between two identities, one `name: old -> new` each."""
    out: list[str] = []
    for part in ("config", "target"):
        a, b = dict(old.get(part) or {}), dict(new.get(part) or {})
        for k in dict.fromkeys([*a, *b]):
            if a.get(k) != b.get(k):
                name = "module load parameters" if (part, k) == ("target", "load") else k
                out.append(f"{name}: {_short(a[k]) if k in a else '(unset)'} -> {_short(b[k]) if k in b else '(unset)'}")
    return out


RESUME_FIX = "use --fresh to start over, or -o another CSV"


def check_resumable(csv_path: Path, previous: Mapping[str, Any], identity: Mapping[str, Any],
                    points: Sequence[Point], cond: Mapping[str, Any]) -> None:
    """Refuse to resume a CSV whose rows were measured with another config or target.

    Only rows with their sidecar are resumed: without it (or with one that has no resume
    fingerprint) nothing tells which config and target measured them. Then three checks: the
    sidecar's fingerprint (config after --scale/--set, target, module, backend); every row's
    point_key is a point of this expansion; the run-condition columns of the rows match this
    target (rows pasted in from elsewhere).
    """
    what = f"{csv_path} was written"
    _, rows = CsvSink.read_existing(csv_path)
    if not rows:
        return  # a header alone: nothing to keep, nothing to mix up
    prev = _resume_record(csv_path, previous, rows)
    if prev.get("fingerprint") != fingerprint(identity):
        diff = identity_diff(prev.get("identity") or {}, identity) or ["fingerprint differs"]
        _refuse(f"{what} with another configuration or target ({_shown(diff)}); not resuming")
    _refuse_foreign_points(what, rows, points)
    _refuse_other_conditions(what, rows, cond)


def check_resumable_targets(csv_path: Path, previous: Mapping[str, Any], identity: Mapping[str, Any],
                            points: Sequence[Point], conds: Mapping[str, Mapping[str, Any]]) -> None:
    """check_resumable for a CSV of several targets (identity: the config and each target's
    part under `targets`, by label): the config must be the same; a target measured before and
    now must be the same target; a target new to the CSV starts from nothing. The run-condition
    columns of each target's measured rows must match its conditions (`conds`: the targets
    opened now, by label)."""
    what = f"{csv_path} was written"
    _, rows = CsvSink.read_existing(csv_path)
    if not rows:
        return
    prev = _resume_record(csv_path, previous, rows)
    old = prev.get("identity") or {}
    if "targets" not in old:
        _refuse(f"{what} by a sweep of the module as it was loaded (no target axis); not resuming")
    diff = identity_diff({"config": old.get("config")}, {"config": identity.get("config")})
    if diff:
        _refuse(f"{what} with another configuration ({_shown(diff)}); not resuming")
    for label, part in (identity.get("targets") or {}).items():
        before = (old.get("targets") or {}).get(label)
        if not before or _unmeasured(before) or _unmeasured(part):
            continue
        diff = identity_diff({"target": before}, {"target": part})
        if diff:
            _refuse(f"{what} with another target {label} ({_shown(diff)}); not resuming")
    _refuse_foreign_points(what, rows, points)
    for label, cond in conds.items():
        _refuse_other_conditions(f"{what} for target {label}",
                                 [r for r in rows if r.get("target_label") == label and r.get("status") != "skipped"],
                                 cond)


def _resume_record(csv_path: Path, previous: Mapping[str, Any], rows: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """The sidecar's resume record of a CSV with rows. Only rows with their sidecar are resumed:
    without it (or with one that has no resume fingerprint) nothing tells which config and target
    measured them."""
    prev = previous.get("resume")
    if not isinstance(prev, dict) or not prev:
        side = sidecar_path(csv_path)
        _refuse(f"{csv_path} holds {len(rows)} rows but {side} {'has no resume fingerprint' if previous else 'is missing'}: "
                "nothing tells which config and target measured them; not resuming")
    return prev


def _unmeasured(part: Mapping[str, Any]) -> bool:
    """A target that was not opened (unavailable on the machine, or its load refused)."""
    return bool(part.get("unavailable") or part.get("refused"))


def _refuse(cause: str) -> NoReturn:
    raise ResumeMismatch(cause, RESUME_FIX)


def _shown(diff: Sequence[str]) -> str:
    return "; ".join(diff[:4]) + (f"; and {len(diff) - 4} more" if len(diff) > 4 else "")


def _refuse_foreign_points(what: str, rows: Sequence[Mapping[str, str]], points: Sequence[Point]) -> None:
    """Every row must be of a point (of a target) this session expands to."""
    keys = {p.key for p in points}
    foreign = sorted({r.get("point_key", "") for r in rows} - keys)
    if not foreign:
        return
    n_rows = sum(1 for r in rows if r.get("point_key", "") in foreign)
    targets = {p.target for p in points}
    gone = sorted({r.get("target_label", "") for r in rows if r.get("point_key", "") in foreign} - targets - {""})
    if gone:
        _refuse(f"{what} with target{'s' if len(gone) > 1 else ''} {', '.join(gone)} as well, which this command "
                f"does not measure ({n_rows} rows); not resuming")
    _refuse(f"{what} with other parameters: {n_rows} rows belong to {len(foreign)} points this config does "
            f"not expand to (e.g. point_key {foreign[0]}); not resuming")


def _refuse_other_conditions(what: str, rows: Sequence[Mapping[str, str]], cond: Mapping[str, Any]) -> None:
    for col in RESUME_CONDITIONS:
        want = "" if cond.get(col) is None else str(cond.get(col))
        for r in rows:
            have = r.get(col)
            if have is None or have == want:
                continue
            _refuse(f"{what} with {col}={have or '(empty)'}, this run has {col}={want or '(empty)'}; not resuming")


def resume(csv_path: Path, previous: Mapping[str, Any], identity: Mapping[str, Any],
           points: Sequence[Point], cond: Mapping[str, Any]) -> ResumeState | None:
    """The state to resume from, None when there is no CSV (or an empty one) to resume;
    raises ResumeMismatch before anything is written."""
    if not (csv_path.exists() and csv_path.stat().st_size > 0):
        return None
    check_resumable(csv_path, previous, identity, points, cond)
    header, kept, done = load_done(csv_path, {p.key for p in points if p.skip_reason})
    return ResumeState(header=header, kept=kept, done=done)


def resume_targets(csv_path: Path, previous: Mapping[str, Any], identity: Mapping[str, Any],
                   points: Sequence[Point], conds: Mapping[str, Mapping[str, Any]]) -> ResumeState | None:
    """resume() for a CSV of several targets (check_resumable_targets); the points' keys tell
    the targets apart, so what is done is kept per target."""
    if not (csv_path.exists() and csv_path.stat().st_size > 0):
        return None
    check_resumable_targets(csv_path, previous, identity, points, conds)
    header, kept, done = load_done(csv_path, {p.key for p in points if p.skip_reason})
    return ResumeState(header=header, kept=kept, done=done)
