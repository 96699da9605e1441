"""The sweep: every slot of a plan through an executor into a recorder, with the sidecar,
the summary and the progress bar around it (sweep/build.py makes every one of them; `pmemlab run`
is a sweep of one point)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pmemlab.backends.protocol import Backend
from pmemlab.errors import Interrupted, PmemlabError
from pmemlab.sweep.execute import PointExecutor, RunResult
from pmemlab.sweep.files import SweepFiles
from pmemlab.sweep.plan import Observations, Plan, Slot
from pmemlab.sweep.progress import Progress
from pmemlab.sweep.record import Recorder
from pmemlab.sweep.resume import ResumeState
from pmemlab.sweep.sidecar import Sidecar
from pmemlab.sweep.summary import write_summary


@dataclass
class SweepOptions:
    output: Path
    fail_fast: bool = False
    fresh: bool = False
    progress: bool = True
    argv: list[str] = field(default_factory=list)
    poll_s: float = 0.002
    run_conditions: bool = True  # record each run's own conditions (runcond.RunWatch)


@dataclass
class SweepReport:
    csv: Path | None
    sidecar: Path | None
    summary: Path | None
    points: int
    runs: int = 0
    ok: int = 0
    failed: int = 0
    skipped: int = 0
    resumed: int = 0
    resumed_ok: int = 0  # of the resumed runs, those that were ok (the exit code counts them)
    status: str = "running"  # running | complete | interrupted | failed
    interrupted: str = ""  # "during a run (aborted)" | "between runs"

    def count(self, result: RunResult) -> None:
        self.runs += 1
        if result.status == "ok":
            self.ok += 1
        elif result.status == "skipped":
            self.skipped += 1
        else:
            self.failed += 1

    def counts(self) -> dict[str, int]:
        return {"runs": self.runs, "ok": self.ok, "failed": self.failed, "skipped": self.skipped}


def resumed_ok_runs(state: ResumeState | None) -> int:
    """Of the runs a resumed CSV keeps, those that were ok (the exit code counts them)."""
    if state is None:
        return 0
    return sum(1 for r in state.kept if str(r.get("thread")) == "all" and r.get("status") == "ok")


class Sweep:
    """Runs the slots of `plan` in order. Each run is recorded before the next slot is asked
    for (the repeat policy sees it); a skipped point records its remaining planned repeats
    as skipped at once. Ctrl-C, --fail-fast and backend errors end the session with the
    sidecar and summary written; the CSV is valid at every moment."""

    def __init__(self, name: str, plan: Plan, executor: PointExecutor, recorder: Recorder, *,
                 observations: Observations | None = None, files: SweepFiles | None = None,
                 sidecar: Sidecar | None = None, progress: Progress | None = None,
                 fail_fast: bool = False, resumed: int = 0, resumed_ok: int = 0) -> None:
        self.name = name
        self.plan = plan
        self.executor = executor
        self.recorder = recorder
        self.observations = observations or Observations()
        self.files = files
        self.sidecar = sidecar
        self.progress = progress or Progress(0, name, enabled=False)
        self.fail_fast = fail_fast
        self.report = SweepReport(csv=files.csv if files else None, sidecar=sidecar.path if sidecar else None,
                                  summary=None, points=len(plan.points), resumed=resumed,
                                  resumed_ok=resumed_ok)

    # -- running -----------------------------------------------------------------
    @property
    def backend(self) -> Backend:
        return self.executor.backend

    def ids(self, slot: Slot) -> dict[str, Any]:
        return {"sweep": self.name, "target_label": slot.point.target, "point": slot.point.index, "point_key": slot.point.key, "repeat": slot.repeat}

    def _record(self, result: RunResult) -> None:
        self.recorder.record(result.rows, result.hist)
        self.observations.add(result.rows)
        self.report.count(result)

    def run(self) -> SweepReport:
        report = self.report
        fatal: BaseException | None = None
        try:
            for slot in self.plan.slots(self.observations):
                if self.plan.beyond_plan(slot):
                    self.progress.grow()
                result = self.executor.run(slot.point, self.ids(slot))
                self._record(result)
                self.progress.advance(slot.point, result.aggregate)
                if result.failed and self.fail_fast:
                    pt = slot.point
                    raise PmemlabError(
                        f"point {pt.index} ({' '.join(f'{k}={v}' for k, v in pt.varied.items())}) failed: "
                        f"{result.status}: {result.error}",
                        "see the error column; rerun without --fail-fast to record failures and go on",
                    )
                if result.status == "skipped":
                    # skipped for every repeat: record them all at once
                    for rest in self.plan.close(slot):
                        self._record(self.executor.skipped(rest.point, self.ids(rest), result.error))
                        self.progress.advance()
            report.status = "complete"
        except (KeyboardInterrupt, Interrupted) as exc:
            # Interrupted: the backend caught Ctrl-C while a run was active and aborted it;
            # a bare KeyboardInterrupt came between runs (parameters, CSV, counters).
            report.status = "interrupted"
            during_run = isinstance(exc, Interrupted)
            report.interrupted = "during a run (aborted)" if during_run else "between runs"
            fatal = exc if during_run else Interrupted("interrupted (Ctrl-C) between runs")
        except PmemlabError as exc:
            report.status = "failed"
            fatal = exc
        finally:
            self.progress.close()
            self.executor.close()
            self._finish()
        if fatal is not None:
            raise self._fatal(fatal)
        return report

    def _finish(self) -> None:
        """Sidecar and summary, however the session ended."""
        report = self.report
        sync = getattr(self.recorder, "sync", None)
        if callable(sync):
            sync()
        if self.sidecar is not None:
            self.sidecar.end(report.status, report.counts(), report.interrupted)
        if self.files is not None:
            try:
                report.summary = write_summary(self.files.csv)
            except Exception as exc:  # noqa: BLE001 - a summary problem must not lose the sweep
                if self.sidecar is not None:
                    self.sidecar.note(f"summary not written: {exc}")
        if self.sidecar is not None:
            self.sidecar.write()

    def _fatal(self, exc: BaseException) -> BaseException:
        """What the caller sees of an interrupted session: with files, how to resume it."""
        if isinstance(exc, Interrupted) and self.files is not None:
            what = ("the run in progress was aborted" if self.report.interrupted.startswith("during")
                    else "no run was in progress")
            return Interrupted(
                f"interrupted after {self.report.runs} runs; {what}; {self.files.csv} is valid",
                "rerun the same command to resume (completed points are skipped)",
            )
        return exc

