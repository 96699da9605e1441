"""The sweep: every slot of a plan through an executor into a recorder, with the sidecar,
the summary and the progress bar around it; `pmemlab run` is a sweep of one point."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from pmemlab.host import ipmctl
from pmemlab.backends.protocol import Backend
from pmemlab.config import Point, SweepConfig
from pmemlab.errors import Interrupted, PmemlabError
from pmemlab.host.runcond import RunWatch
from pmemlab.sweep.bench import Bench
from pmemlab.sweep.execute import Executor, PointExecutor, RunResult
from pmemlab.sweep.files import SweepFiles, check_output
from pmemlab.sweep.plan import FixedRepeats, Observations, Plan, Slot, policy_columns, policy_for
from pmemlab.sweep.progress import Progress
from pmemlab.sweep.record import CsvRecorder, MemoryRecorder, Recorder
from pmemlab.sweep.resume import ResumeState, resume, resume_identity
from pmemlab.sweep.sidecar import Sidecar, media_notes, read_previous
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

    # -- building ----------------------------------------------------------------
    @classmethod
    def for_config(cls, cfg: SweepConfig, points: list[Point], bench: Bench, opts: SweepOptions,
                   media: ipmctl.MediaCounters | None = None) -> Sweep:
        """The sweep of a config on one backend into opts.output."""
        info = bench.info or {}
        cond = bench.conditions
        identity = resume_identity(cfg, cond, bench.backend.identity())
        dimms = ipmctl.region_dimm_ids(info)
        return cls.into_files(
            cfg, points, opts, info, cond, identity, media_notes(info, media, dimms),
            lambda csv, previous: resume(csv, previous, identity, points, cond),
            lambda watch: Executor(bench.backend, cond, bench.facts, cfg.timeout_s, opts.poll_s, media, dimms, watch))

    @classmethod
    def into_files(cls, cfg: SweepConfig, points: list[Point], opts: SweepOptions, info: dict[str, Any],
                   cond: dict[str, Any], identity: dict[str, Any], notes: list[str],
                   resume_from: Callable[[Path, dict[str, Any]], ResumeState | None],
                   executor: Callable[[RunWatch | None], PointExecutor], sidecar_extra: dict[str, Any] | None = None,
                   ) -> Sweep:
        """The sweep of points into opts.output: --fresh, resume (`resume_from(csv, previous
        sidecar)` gives what is kept, or refuses before anything is written), the files started,
        the sidecar written (with `sidecar_extra`), the executor made with the run watch."""
        files = _output_files(opts)
        previous = read_previous(files.sidecar)
        state = resume_from(files.csv, previous)
        if state is None:
            previous = {}  # a sidecar without its CSV describes nothing that is kept
        recorder = CsvRecorder(files)
        recorder.start(state)
        resumed = len(state.done) if state else 0
        sidecar = Sidecar.begin(files, cfg, points, info, cond, identity, notes, previous, opts.argv, resumed)
        if sidecar_extra:
            sidecar.doc.update(sidecar_extra)
            sidecar.write()
        policy = policy_for(cfg)
        plan = Plan(points, policy, state.done if state else ())
        return cls(cfg.name, plan, executor(RunWatch.open() if opts.run_conditions else None), recorder,
                   observations=Observations(state.kept if state else (), policy_columns(policy)), files=files, sidecar=sidecar,
                   progress=Progress(plan.planned_runs(), cfg.name, opts.progress), fail_fast=opts.fail_fast,
                   resumed=resumed, resumed_ok=resumed_ok_runs(state))

    @classmethod
    def one_point(cls, point: Point, bench: Bench, timeout_s: float, name: str = "run",
                  poll_s: float = 0.002, run_conditions: bool = True) -> tuple[Sweep, MemoryRecorder]:
        """`pmemlab run`: one point, once, rows kept in memory; no files, no progress."""
        recorder = MemoryRecorder()
        executor = Executor(bench.backend, bench.conditions, bench.facts, timeout_s, poll_s,
                            watch=RunWatch.open() if run_conditions else None)
        return cls(name, Plan([point], FixedRepeats(1)), executor, recorder), recorder

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


def _output_files(opts: SweepOptions) -> SweepFiles:
    """The files of a sweep into opts.output, checked as ours (neither --fresh nor resume touches
    files a sweep did not write), their directory made, removed first with --fresh."""
    files = SweepFiles(opts.output)
    check_output(files.csv)
    files.check_ours()
    files.csv.parent.mkdir(parents=True, exist_ok=True)
    if opts.fresh:
        files.remove()
    return files
