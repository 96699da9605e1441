"""One run of one point: the backend run, and its rows for the tidy CSV.

The one place that turns what happened into a status and its reason: skipped (this machine
cannot run the point), refused (the backend refused a value or the start), error, timeout,
or ok with the result rows, the histogram buckets and the media-counter deltas.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Mapping, Protocol, Sequence

from pmemlab.host import ipmctl
from pmemlab import params as P
from pmemlab.backends.protocol import Backend, RunOutcome
from pmemlab.config import Point
from pmemlab.errors import ParamRefused, PmemlabError
from pmemlab.results import parse_histogram
from pmemlab.host.runcond import RunWatch
from pmemlab.table import rows_for_outcome

FAILED_STATUSES = frozenset({"error", "timeout", "refused"})


@dataclass
class RunResult:
    """The rows of one (point, repeat): a row per thread then the aggregate, or one row."""

    rows: list[dict[str, Any]]
    hist: list[dict[str, Any]]

    @property
    def aggregate(self) -> dict[str, Any]:
        return self.rows[-1]

    @property
    def status(self) -> str:
        return str(self.aggregate["status"])

    @property
    def error(self) -> str:
        return str(self.aggregate.get("error") or "")

    @property
    def failed(self) -> bool:
        return self.status in FAILED_STATUSES


def refusal_reason(exc: ParamRefused) -> str:
    """The error cell of a refused run."""
    return f"refused at start: {exc.reason}" if exc.key == "run" else f"{exc.key}={exc.value}: {exc.reason}"


def classify(outcome: RunOutcome) -> tuple[str, str]:
    """(status, error) of a finished run: ok, timeout or error with the backend's reason."""
    if outcome.ok:
        return "ok", ""
    status = "timeout" if outcome.state == "timeout" else "error"
    reason = outcome.state.split(":", 1)[1] if ":" in outcome.state else outcome.state
    err = outcome.error if outcome.error and outcome.error != reason else reason
    if outcome.error and outcome.error != reason and status == "error":
        err = f"{reason}: {outcome.error}"
    return status, err


class PointExecutor(Protocol):
    """What the sweep runs its slots through (an AxisExecutor; a test's scripted one)."""

    @property
    def backend(self) -> Backend:
        """The backend the next run goes to."""

    def run(self, pt: Point, ids: Mapping[str, Any]) -> RunResult:
        """One run of a point -> its rows, status and reason."""

    def skipped(self, pt: Point, ids: Mapping[str, Any], reason: str) -> RunResult:
        """The rows of a run this machine cannot make."""

    def close(self) -> None:
        """The sweep is over (whatever the executor holds open, closed)."""


class Executor:
    """Runs points on one target: its backend with the conditions the sweep probed (`cond`,
    tsc_khz among them) and the target facts that resolve cpus = "remote". A target that could not
    be opened has no backend: its points get status error with `refused`, its label's reason
    (skipped when the point is skipped). The one place a run's rows are made (`rows`)."""

    def __init__(self, backend: Backend | None, cond: Mapping[str, Any], facts: P.TargetFacts | None,
                 timeout_s: float, poll_s: float = 0.002, media: ipmctl.MediaCounters | None = None,
                 media_dimms: Sequence[int] | None = None, watch: RunWatch | None = None, *,
                 label: str = "", refused: str = "") -> None:
        self.backend = backend
        self.cond = dict(cond)
        self.tsc_khz = cond.get("tsc_khz")
        self.facts = facts
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self.media = media
        self.media_dimms = media_dimms
        self.watch = watch  # the run's own conditions (runcond); None: only the sweep's
        self.label = label
        self.refused = refused

    def rows(self, ids: Mapping[str, Any], pt: Point, outcome: RunOutcome | None, status: str, error: str,
             mdelta: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        """The rows of one run: a row per thread and the aggregate (table.rows_for_outcome), with
        the run's own conditions where it ran (the watch)."""
        rows = rows_for_outcome(ids, pt.params, outcome, status, error, self.tsc_khz, self.cond, mdelta)
        if self.watch is not None and outcome is not None and status != "refused":  # it ran
            self.watch.annotate(rows, outcome.pid)
        return rows

    def skipped(self, pt: Point, ids: Mapping[str, Any], reason: str) -> RunResult:
        return RunResult(self.rows(ids, pt, None, "skipped", reason), [])

    def run(self, pt: Point, ids: Mapping[str, Any]) -> RunResult:
        if pt.skip_reason:
            return self.skipped(pt, ids, pt.skip_reason)
        if self.backend is None:
            return RunResult(self.rows(ids, pt, None, "error", f"target {self.label} not opened: {self.refused}"), [])
        try:
            run_params = P.resolve_cpus(pt.params, self.facts)
        except ValueError as exc:
            return self.skipped(pt, ids, str(exc))
        media = self.media
        before = media.snapshot() if media else None
        if self.watch is not None:
            self.watch.before()
        try:
            outcome = self.backend.run(run_params, timeout_s=self.timeout_s, poll_s=self.poll_s)
        except ParamRefused as exc:
            refused = RunOutcome("refused", started=time.time())
            return RunResult(self.rows(ids, pt, refused, "refused", refusal_reason(exc)), [])
        after = media.snapshot() if media else None
        mdelta = ipmctl.delta(before, after, self.media_dimms) if before and after else None
        status, error = classify(outcome)
        if status != "ok":
            return RunResult(self.rows(ids, pt, outcome, status, error), [])
        hist = [{**ids, **h} for h in parse_histogram(outcome.histogram, self.tsc_khz)]
        return RunResult(self.rows(ids, pt, outcome, "ok", "", mdelta), hist)


class AxisExecutor:
    """Runs each point on its target: the Executor of the point's target label. The backend as it
    is is an axis of one target, labelled ''. `watch` (one for every target: the runs' own
    conditions) is closed with the backends. keep_open: close() leaves the backends open (the user
    backend's served runner up) for a caller that runs several sweeps on them and closes them
    itself when they are all done (`pmemlab curves`: its rounds)."""

    def __init__(self, executors: Sequence[Executor], watch: RunWatch | None = None,
                 keep_open: bool = False) -> None:
        self.executors = {e.label: e for e in executors}
        self.watch = watch
        self.keep_open = keep_open

    @property
    def backend(self) -> Backend:
        """The backend of the first target opened."""
        opened = [e.backend for e in self.executors.values() if e.backend is not None]
        if not opened:
            raise PmemlabError("no target of the sweep could be opened", "see the reasons above")
        return opened[0]

    def skipped(self, pt: Point, ids: Mapping[str, Any], reason: str) -> RunResult:
        return self.executors[pt.target].skipped(pt, ids, reason)

    def run(self, pt: Point, ids: Mapping[str, Any]) -> RunResult:
        return self.executors[pt.target].run(pt, ids)

    def close(self) -> None:
        for executor in self.executors.values():
            if executor.backend is not None and not self.keep_open:
                close_backend(executor.backend)
        if self.watch is not None:
            self.watch.close()


def close_backend(backend: Backend) -> None:
    """End what a backend holds open for the sweep (the user backend's served runner)."""
    close = getattr(backend, "close", None)
    if callable(close):
        close()
