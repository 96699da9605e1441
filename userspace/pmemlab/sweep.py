"""Running a sweep: every point x repeat through the module into the tidy CSV,
with a JSON sidecar, resume, adaptive repeats and a summary across repeats."""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from pmemlab import ipmctl
from pmemlab import params as P
from pmemlab.config import Point, SweepConfig
from pmemlab.errors import Interrupted, ParamRefused, PmemlabError, ResumeMismatch
from pmemlab.machine import conditions
from pmemlab.params import PARAM_NAMES
from pmemlab.results import KNOWN_RESULT_COLUMNS, parse_histogram
from pmemlab.stats import summarize
from pmemlab.sysfs import Module, RunOutcome
from pmemlab.table import BASE_COLUMNS, COLUMN_DOC, HIST_COLUMNS, CsvSink, now_iso, rows_for_outcome

SUMMARY_SKIP = frozenset({"cpu", "thread_node", "thread_op"})


def sidecar_path(csv_path: Path) -> Path:
    return csv_path.with_suffix(".json")


def summary_path(csv_path: Path) -> Path:
    return csv_path.with_name(csv_path.stem + ".summary.csv")


def histogram_path(csv_path: Path) -> Path:
    return csv_path.with_name(csv_path.stem + ".hist.csv")


@dataclass
class SweepOptions:
    output: Path
    fail_fast: bool = False
    fresh: bool = False
    progress: bool = True
    argv: list[str] = field(default_factory=list)
    poll_s: float = 0.002
    facts: P.TargetFacts | None = None  # resolves cpus = remote


@dataclass
class SweepReport:
    csv: Path
    sidecar: Path
    summary: Path | None
    points: int
    runs: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    resumed: int = 0
    status: str = "running"


def _write_json_atomic(path: Path, doc: Mapping[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, sort_keys=False, default=str)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _progress(total: int, enabled: bool, desc: str) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="run", dynamic_ncols=True, file=sys.stderr,
                bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} runs "
                           "[{elapsed}<{remaining}, {rate_fmt}]{postfix}")


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


# --------------------------------------------------------------------------
# resume: what the rows of a CSV depend on, beyond each point's parameters
# --------------------------------------------------------------------------
# Load-time parameters that do not change what a run measures.
_LOAD_PARAMS_IGNORED = frozenset({"allow_overwrite", "runner"})
# Run conditions a resumed CSV must share with its rows (columns of every row).
RESUME_CONDITIONS: tuple[str, ...] = ("target", "target_kind", "target_size", "target_node", "target_page_size",
                                      "module_version")


def resume_identity(cfg: SweepConfig, info: Mapping[str, Any]) -> dict[str, Any]:
    """What must not change between the sessions that write one CSV.

    The config as it runs (after --scale and --set: name, base, axes, zips, filters) and
    the target (device, kind, size, node, page size, module version, backend and its
    load parameters). Repeats, [sweep.adaptive], timeout_s and on_unsupported may change:
    they decide how many runs there are, not what a run measures.
    """
    cond = conditions(dict(info))
    loadp = dict(info.get("module", {}).get("parameters") or {})
    backend = str(loadp.get("backend", "kernel"))
    config: dict[str, Any] = {"name": cfg.name, "scale": cfg.scale}
    for k in sorted(cfg.base):
        config[f"base.{k}"] = cfg.base[k]
    for ax in cfg.axes:
        table = ax.table.split("#")[0]
        for i, k in enumerate(ax.keys):
            config[f"{table}.{k}"] = [vals[i] for vals in ax.values]
    config["filters"] = [expr for expr, _ in cfg.filters]
    target: dict[str, Any] = {k: cond.get(k) for k in RESUME_CONDITIONS}
    target["backend"] = backend
    target["load"] = {k: str(v) for k, v in sorted(loadp.items()) if k not in _LOAD_PARAMS_IGNORED and k != "backend"}
    return {"config": config, "target": target}


def fingerprint(identity: Mapping[str, Any]) -> str:
    blob = json.dumps(identity, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _short(value: Any) -> str:
    text = " ".join((json.dumps(value, default=str) if not isinstance(value, str) else value).split())
    return text if len(text) <= 40 else text[:37] + "..."


def _identity_diff(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for part in ("config", "target"):
        a, b = dict(old.get(part) or {}), dict(new.get(part) or {})
        for k in dict.fromkeys([*a, *b]):
            if a.get(k) != b.get(k):
                name = "module load parameters" if (part, k) == ("target", "load") else k
                out.append(f"{name}: {_short(a[k]) if k in a else '(unset)'} -> {_short(b[k]) if k in b else '(unset)'}")
    return out


def check_resumable(csv_path: Path, previous: Mapping[str, Any], identity: Mapping[str, Any],
                    points: Sequence[Point], cond: Mapping[str, Any]) -> None:
    """Refuse to resume a CSV whose rows were measured with another config or target.

    Three checks: the sidecar's fingerprint (config after --scale/--set, target, module,
    backend); every row's point_key is a point of this expansion; the run-condition
    columns of the rows match this target (covers a CSV without or with an old sidecar).
    """
    fix = "use --fresh to start over, or -o another CSV"
    what = f"{csv_path} was written"
    _, rows = CsvSink.read_existing(csv_path)
    if not rows:
        return  # a header alone: nothing to keep, nothing to mix up
    prev = previous.get("resume") if isinstance(previous.get("resume"), dict) else None
    if prev and prev.get("fingerprint") != fingerprint(identity):
        diff = _identity_diff(prev.get("identity") or {}, identity) or ["fingerprint differs"]
        shown = "; ".join(diff[:4]) + (f"; and {len(diff) - 4} more" if len(diff) > 4 else "")
        raise ResumeMismatch(f"{what} with another configuration or target ({shown}); not resuming", fix)
    keys = {p.key for p in points}
    foreign = sorted({r.get("point_key", "") for r in rows} - keys)
    if foreign:
        n_rows = sum(1 for r in rows if r.get("point_key", "") in foreign)
        raise ResumeMismatch(
            f"{what} with other parameters: {n_rows} rows belong to {len(foreign)} points this config does "
            f"not expand to (e.g. point_key {foreign[0]}); not resuming", fix)
    for col in RESUME_CONDITIONS:
        want = "" if cond.get(col) is None else str(cond.get(col))
        for r in rows:
            have = r.get(col)
            if have is None or have == want:
                continue
            raise ResumeMismatch(f"{what} with {col}={have or '(empty)'}, this run has {col}={want or '(empty)'}; "
                                 "not resuming", fix)


def metric_values(rows: Sequence[Mapping[str, Any]], key: str, metric: str) -> list[float]:
    vals: list[float] = []
    for r in rows:
        if r.get("point_key") == key and str(r.get("thread")) == "all" and r.get("status") == "ok":
            try:
                v = float(r.get(metric))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                continue
            if not math.isnan(v):
                vals.append(v)
    return vals


def run_sweep(cfg: SweepConfig, points: list[Point], module: Module, info: dict[str, Any],
              opts: SweepOptions, media: ipmctl.MediaCounters | None = None,
              echo: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> SweepReport:
    out = opts.output
    out.parent.mkdir(parents=True, exist_ok=True)
    side = sidecar_path(out)
    if opts.fresh:
        for p in (out, side, summary_path(out), histogram_path(out)):
            if p.exists():
                p.unlink()

    cond = conditions(info)
    tsc_khz = cond.get("tsc_khz")
    sink = CsvSink(out, BASE_COLUMNS)
    report = SweepReport(csv=out, sidecar=side, summary=None, points=len(points))
    identity = resume_identity(cfg, info)

    previous: dict[str, Any] = {}
    if side.exists():
        try:
            previous = json.loads(side.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            previous = {}

    # Resume: keep the completed runs, drop the rest; refuse rows of another config or target.
    done: set[tuple[str, int]] = set()
    kept: list[dict[str, Any]] = []
    if out.exists() and out.stat().st_size > 0:
        check_resumable(out, previous, identity, points, cond)  # before anything is written
        header, kept_rows, done = load_done(out, {p.key for p in points if p.skip_reason})
        kept = list(kept_rows)
        sink.columns = list(dict.fromkeys([*BASE_COLUMNS, *header]))
        sink.rewrite(kept)
        report.resumed = len(done)
    else:
        sink.ensure_header()
        previous = {}  # a sidecar without its CSV describes nothing that is kept
    hist_sink = CsvSink(histogram_path(out), HIST_COLUMNS)
    if hist_sink.path.exists():
        hheader, hrows = CsvSink.read_existing(hist_sink.path)
        hist_sink.columns = list(dict.fromkeys([*HIST_COLUMNS, *hheader]))
        hist_sink.rewrite(r for r in hrows if (r.get("point_key", ""), _int(r.get("repeat"))) in done)
    # ok values of the adaptive metric per point (aggregate rows), for the stopping rule
    by_point: dict[str, list[Mapping[str, Any]]] = {}
    for r in kept:
        if r.get("thread") == "all":
            by_point.setdefault(r.get("point_key", ""), []).append(r)

    notes: list[str] = []
    media_dimms = ipmctl.region_dimm_ids(info)
    if media is None or not media.available:
        notes.append(info.get("ipmctl", {}).get("note") or "ipmctl unavailable: media counter columns are empty")
    elif media_dimms:
        notes.append(f"media counters: summed over the DIMMs of {info.get('target', {}).get('region')} "
                     f"(ipmctl DimmIDs {', '.join(f'0x{h:04x}' for h in media_dimms)})")
    else:
        notes.append("media counters: summed over every DIMM ipmctl shows (the target region's DIMMs are unknown)")
    session = {"started_at": now_iso(), "ended_at": None, "argv": opts.argv, "status": "running",
               "resumed_runs": report.resumed}
    sessions = list(previous.get("sessions", [])) + [session]
    sidecar: dict[str, Any] = {
        "pmemlab_sidecar": 1,
        "sweep": cfg.name,
        "description": cfg.description,
        "csv": out.name,
        "summary_csv": summary_path(out).name,
        "histogram_csv": histogram_path(out).name,
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
        "conditions": cond,
        "resume": {"fingerprint": fingerprint(identity), "identity": identity},
        "machine": info,
        "notes": notes,
        "sessions": sessions,
        "columns": COLUMN_DOC,
    }
    _write_json_atomic(side, sidecar)

    min_rep = cfg.adaptive.min_repeats if cfg.adaptive else cfg.repeats
    planned = sum(1 for p in points for r in range(min_rep) if (p.key, r) not in done)
    bar = _progress(planned, opts.progress, cfg.name)
    fatal: BaseException | None = None

    def record(rows: list[dict[str, Any]]) -> None:
        sink.append(rows)
        for r in rows:
            if str(r.get("thread")) == "all":
                by_point.setdefault(str(r.get("point_key")), []).append(r)

    try:
        for pt in points:
            repeat = 0
            while True:
                if cfg.adaptive:
                    if repeat >= cfg.adaptive.max_repeats:
                        break
                    if repeat >= cfg.adaptive.min_repeats:
                        s = summarize(metric_values(by_point.get(pt.key, []), pt.key, cfg.adaptive.metric))
                        if s.n == 0:  # every run of this point failed or was skipped
                            break
                        if s.n >= 2 and not math.isnan(s.ci95_rel) and s.ci95_rel <= cfg.adaptive.ci_target:
                            break
                        if bar is not None and (pt.key, repeat) not in done:
                            bar.total += 1
                            bar.refresh()
                elif repeat >= cfg.repeats:
                    break
                if (pt.key, repeat) in done:
                    repeat += 1
                    continue
                ids = {"sweep": cfg.name, "point": pt.index, "point_key": pt.key, "repeat": repeat}
                rows, hist = _one_run(pt, ids, module, cfg, opts, tsc_khz, cond, media, media_dimms)
                if hist:
                    hist_sink.ensure_header()
                    hist_sink.append(hist)
                record(rows)
                report.runs += 1
                st = rows[-1]["status"]
                if st == "ok":
                    report.ok += 1
                elif st == "skipped":
                    report.skipped += 1
                else:
                    report.failed += 1
                if bar is not None:
                    bar.update(1)
                    agg = rows[-1]
                    bw = agg.get("bw_gbps")
                    post = " ".join(f"{k}={v}" for k, v in pt.varied.items())
                    if isinstance(bw, float):
                        post += f" {bw:.2f} GB/s"
                    if st != "ok":
                        post += f" [{st}]"
                    bar.set_postfix_str(post[:80], refresh=False)
                if st not in ("ok", "skipped") and opts.fail_fast:
                    raise PmemlabError(
                        f"point {pt.index} ({' '.join(f'{k}={v}' for k, v in pt.varied.items())}) failed: "
                        f"{st}: {rows[-1].get('error')}",
                        "see the error column; rerun without --fail-fast to record failures and go on",
                    )
                if st == "skipped":
                    # A skipped point is skipped for every repeat: record them all at once.
                    for r in range(repeat + 1, cfg.repeats if not cfg.adaptive else cfg.adaptive.min_repeats):
                        if (pt.key, r) not in done:
                            record(rows_for_outcome({**ids, "repeat": r}, pt.params, None, "skipped",
                                                    pt.skip_reason, tsc_khz, cond))
                            report.runs += 1
                            report.skipped += 1
                            if bar is not None:
                                bar.update(1)
                    break
                repeat += 1
        report.status = "complete"
    except (KeyboardInterrupt, Interrupted) as exc:
        # Interrupted: the backend caught Ctrl-C while a run was active and aborted it;
        # a bare KeyboardInterrupt came between runs (parameters, CSV, counters).
        report.status = "interrupted"
        during_run = isinstance(exc, Interrupted)
        session["interrupted"] = "during a run (aborted)" if during_run else "between runs"
        fatal = exc if during_run else Interrupted("interrupted (Ctrl-C) between runs")
    except PmemlabError as exc:
        report.status = "failed"
        fatal = exc
    finally:
        if bar is not None:
            bar.close()
        session.update(ended_at=now_iso(), status=report.status, runs=report.runs, ok=report.ok,
                       failed=report.failed, skipped=report.skipped)
        sidecar.update(ended_at=session["ended_at"], status=report.status)
        try:
            report.summary = write_summary(out)
        except Exception as exc:  # noqa: BLE001 - a summary problem must not lose the sweep
            notes.append(f"summary not written: {exc}")
        _write_json_atomic(side, sidecar)
    if fatal is not None:
        if isinstance(fatal, Interrupted):
            what = ("the run in progress was aborted" if session.get("interrupted", "").startswith("during")
                    else "no run was in progress")
            raise Interrupted(
                f"interrupted after {report.runs} runs; {what}; {out} is valid",
                "rerun the same command to resume (completed points are skipped)",
            )
        raise fatal
    return report


def _one_run(pt: Point, ids: dict[str, Any], module: Module, cfg: SweepConfig, opts: SweepOptions,
             tsc_khz: float | None, cond: Mapping[str, Any], media: ipmctl.MediaCounters | None,
             media_dimms: Sequence[int] | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    if pt.skip_reason:
        return rows_for_outcome(ids, pt.params, None, "skipped", pt.skip_reason, tsc_khz, cond), []
    try:
        run_params = P.resolve_cpus(pt.params, opts.facts)
    except ValueError as exc:
        return rows_for_outcome(ids, pt.params, None, "skipped", str(exc), tsc_khz, cond), []
    before = media.snapshot() if media else None
    try:
        outcome = module.run(run_params, timeout_s=cfg.timeout_s, poll_s=opts.poll_s)
    except ParamRefused as exc:
        why = f"refused at start: {exc.reason}" if exc.key == "run" else f"{exc.key}={exc.value}: {exc.reason}"
        return rows_for_outcome(ids, pt.params, RunOutcome("refused", started=time.time()), "refused",
                                why, tsc_khz, cond), []
    after = media.snapshot() if media else None
    mdelta = ipmctl.delta(before, after, media_dimms) if before and after else None
    if outcome.ok:
        hist = [{**ids, **h} for h in parse_histogram(outcome.histogram, tsc_khz)]
        return rows_for_outcome(ids, pt.params, outcome, "ok", "", tsc_khz, cond, mdelta), hist
    status = "timeout" if outcome.state == "timeout" else "error"
    reason = outcome.state.split(":", 1)[1] if ":" in outcome.state else outcome.state
    err = outcome.error if outcome.error and outcome.error != reason else reason
    if outcome.error and outcome.error != reason and status == "error":
        err = f"{reason}: {outcome.error}"
    return rows_for_outcome(ids, pt.params, outcome, status, err, tsc_khz, cond), []


def _int(text: Any) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return -1


def summarize_csv(csv_path: Path) -> pd.DataFrame:
    """Per point: parameters, repeats n, and mean / stddev / 95 % CI half-width per metric."""
    df = pd.read_csv(csv_path, low_memory=False)
    agg = df[(df["thread"].astype(str) == "all") & (df["status"] == "ok")]
    metrics = [c for c in agg.columns
               if (c in KNOWN_RESULT_COLUMNS or c in ipmctl.COLUMNS or c not in BASE_COLUMNS)
               and c not in SUMMARY_SKIP and pd.api.types.is_numeric_dtype(agg[c]) and agg[c].notna().any()]
    keep_cols = ["sweep", "point", "point_key", *[c for c in PARAM_NAMES if c in agg.columns]]
    out_rows: list[dict[str, Any]] = []
    for key, grp in agg.groupby("point_key", sort=False):
        first = grp.iloc[0]
        row: dict[str, Any] = {c: first[c] for c in keep_cols}
        row["n"] = len(grp)
        for m in metrics:
            s = summarize(grp[m].dropna().tolist())
            row[f"{m}_mean"] = s.mean
            row[f"{m}_stddev"] = s.stddev
            row[f"{m}_ci95"] = s.ci95
        out_rows.append(row)
    return pd.DataFrame(out_rows)


def write_summary(csv_path: Path) -> Path | None:
    df = summarize_csv(csv_path)
    path = summary_path(csv_path)
    tmp = path.with_name(path.name + ".tmp")
    df.to_csv(tmp, index=False)
    os.replace(tmp, path)
    return path
