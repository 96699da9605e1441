"""The one way a sweep is built: its points, the targets they run on (lanes: the backend as it
is is an axis of one lane, labelled ''), and where the rows go (memory, or files with resume and
the sidecar). Every sweep of the controller is made here: `pmemlab sweep` over the backend or a
target axis, the one-liners, curves, and `pmemlab run`'s point (one_point_sweep)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from pmemlab.config import Point, SweepConfig
from pmemlab.host import ipmctl
from pmemlab.host.runcond import RunWatch
from pmemlab.sweep.bench import Bench
from pmemlab.sweep.core import Sweep, SweepOptions, resumed_ok_runs
from pmemlab.sweep.execute import AxisExecutor, Executor
from pmemlab.sweep.files import SweepFiles, check_output
from pmemlab.sweep.plan import Observations, Plan, policy_columns, policy_for
from pmemlab.sweep.progress import Progress
from pmemlab.sweep.record import CsvRecorder, MemoryRecorder
from pmemlab.sweep.resume import ResumeState, resume, resume_identity
from pmemlab.sweep.sidecar import Sidecar, media_notes, read_previous


@dataclass
class Lane:
    """One target of a sweep as its runs see it: the bench it runs on (None: it was not opened,
    `refused` says why), the conditions its rows carry, and whether the media counters' deltas go
    into its rows (the backend as it is: always; a target of an axis: a pmem one)."""

    label: str
    bench: Bench | None
    conditions: dict[str, Any]
    refused: str = ""
    media: bool = True

    @classmethod
    def of(cls, bench: Bench) -> Lane:
        """The backend as it is: an axis of one."""
        return cls("", bench, bench.conditions)


@dataclass
class Files:
    """Where a sweep into files writes (opts) and what its sidecar and resume hold: the identity
    that must not change between sessions, the check of what an existing CSV keeps
    (`resume_from(csv, previous sidecar)`; it refuses before anything is written), the machine
    (info, cond), the notes and more of the sidecar (`extra`)."""

    opts: SweepOptions
    identity: dict[str, Any]
    resume_from: Callable[[Path, dict[str, Any]], ResumeState | None]
    info: dict[str, Any]
    cond: dict[str, Any]
    notes: list[str]
    extra: dict[str, Any] | None = None

    @classmethod
    def one_target(cls, cfg: SweepConfig, points: list[Point], bench: Bench, opts: SweepOptions,
                   media: ipmctl.MediaCounters | None = None) -> Files:
        """The files of a sweep of the backend as it is."""
        info = bench.info or {}
        cond = bench.conditions
        identity = resume_identity(cfg, cond, bench.backend.identity())
        return cls(opts, identity, lambda csv, previous: resume(csv, previous, identity, points, cond), info, cond,
                   media_notes(info, media, ipmctl.region_dimm_ids(info)))


def executor(lanes: Sequence[Lane], timeout_s: float, poll_s: float = 0.002,
             media: ipmctl.MediaCounters | None = None, watch: RunWatch | None = None,
             keep_open: bool = False) -> AxisExecutor:
    """The executor of a sweep: an Executor per lane (the one place they are made), on its
    bench's backend, or with the reason it was not opened."""
    out = []
    for lane in lanes:
        bench = lane.bench
        if bench is None:
            out.append(Executor(None, lane.conditions, None, timeout_s, poll_s, label=lane.label, refused=lane.refused))
            continue
        counted = media if lane.media else None
        out.append(Executor(bench.backend, lane.conditions, bench.facts, timeout_s, poll_s, counted,
                            ipmctl.region_dimm_ids(bench.info or {}) if counted else None, watch, label=lane.label))
    return AxisExecutor(out, watch, keep_open)


def build(cfg: SweepConfig, points: list[Point], lanes: Sequence[Lane], *, files: Files | None = None,
          media: ipmctl.MediaCounters | None = None, progress: bool = False, run_conditions: bool = False,
          poll_s: float = 0.002, keep_open: bool = False) -> tuple[Sweep, MemoryRecorder | None]:
    """The sweep of `points` (each on the lane its `target` labels) by cfg's repeat policy, each
    run bounded by cfg.timeout_s. Into memory (the recorder is returned; `progress`, `poll_s` and
    `run_conditions` as given; `keep_open`: the backends left open for the caller), or into
    `files`: --fresh, resume or refuse to, the CSV started,
    the sidecar written (the bar, poll and run conditions as files.opts say)."""
    policy = policy_for(cfg)
    if files is None:
        watch = RunWatch.open() if run_conditions else None
        recorder = MemoryRecorder()
        plan = Plan(points, policy)
        return Sweep(cfg.name, plan, executor(lanes, cfg.timeout_s, poll_s, media, watch, keep_open), recorder,
                     progress=Progress(plan.planned_runs(), cfg.name, enabled=progress)), recorder
    opts = files.opts
    out = _output_files(opts)
    previous = read_previous(out.sidecar)
    state = files.resume_from(out.csv, previous)
    if state is None:
        previous = {}  # a sidecar without its CSV describes nothing that is kept
    csv = CsvRecorder(out)
    csv.start(state)
    resumed = len(state.done) if state else 0
    sidecar = Sidecar.begin(out, cfg, points, files.info, files.cond, files.identity, files.notes, previous,
                            opts.argv, resumed)
    if files.extra:
        sidecar.doc.update(files.extra)
        sidecar.write()
    plan = Plan(points, policy, state.done if state else ())
    watch = RunWatch.open() if opts.run_conditions else None
    return Sweep(cfg.name, plan, executor(lanes, cfg.timeout_s, opts.poll_s, media, watch), csv,
                 observations=Observations(state.kept if state else (), policy_columns(policy)), files=out,
                 sidecar=sidecar, progress=Progress(plan.planned_runs(), cfg.name, opts.progress),
                 fail_fast=opts.fail_fast, resumed=resumed, resumed_ok=resumed_ok_runs(state)), None


def one_point_sweep(point: Point, bench: Bench, timeout_s: float, name: str = "run", poll_s: float = 0.002,
              run_conditions: bool = True) -> tuple[Sweep, MemoryRecorder]:
    """`pmemlab run`: one point, once, on the backend as it is, rows kept in memory; no files, no
    progress (build, with a config of its name and timeout)."""
    cfg = SweepConfig(path=None, text="", data={}, name=name, timeout_s=timeout_s)
    sweep, recorder = build(cfg, [point], [Lane.of(bench)], poll_s=poll_s, run_conditions=run_conditions)
    assert recorder is not None
    return sweep, recorder


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
