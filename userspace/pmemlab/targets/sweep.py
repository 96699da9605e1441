"""A sweep over a target axis: one config against several targets (pmem and DRAM, two
namespaces, a memmap= namespace, DRAM with 4k and 2m pages) into one CSV whose `target_label`
column says which target each row measured.

Every target is opened once before anything runs (on the module: a named target each, all
present at once, no reload): its facts decide which points it can run, its conditions go into
its rows, the sidecar describes it, and resume checks its rows. Then the points run target by
target, each through its own backend. A point's key includes its target's label, so resume,
the repeat policy and the histogram rows keep the targets apart.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Mapping, Sequence, TextIO

from pmemlab.host import ipmctl, machine, probe
from pmemlab.backends.protocol import Backend
from pmemlab.config import Point, SweepConfig, expand, point_key
from pmemlab.errors import PmemlabError
from pmemlab.host.runcond import RunWatch
from pmemlab.sweep import Sweep, SweepOptions
from pmemlab.sweep.bench import Bench
from pmemlab.sweep.execute import Executor, RunResult, close_backend
from pmemlab.sweep.resume import config_identity, resume_targets, target_identity
from pmemlab.sweep.sidecar import media_notes
from pmemlab.table import rows_for_outcome
from pmemlab.targets.open import Loader, LoadRefused
from pmemlab.targets.spec import TargetLoad


class RememberingRunner:
    """Runs each tool command once and gives the same answer after: what ndctl, ipmctl and
    systemd-detect-virt say does not change from one target to the next."""

    def __init__(self, runner: probe.ToolRunner | None = None) -> None:
        self.runner = runner or (lambda argv: probe.run_tool(argv))
        self.answers: dict[tuple[str, ...], probe.ToolResult] = {}

    def __call__(self, argv: list[str]) -> probe.ToolResult:
        key = tuple(argv)
        if key not in self.answers:
            self.answers[key] = self.runner(argv)
        return self.answers[key]


@dataclass
class TargetBench:
    """One target of the axis as probed: its bench, or why it was not opened (`skip`: this
    machine cannot have it; `refused`: opening it failed), and its points."""

    load: TargetLoad
    bench: Bench | None
    points: list[Point]
    refused: str = ""

    @property
    def label(self) -> str:
        return self.load.label

    @property
    def conditions(self) -> dict[str, Any]:
        """The run conditions of its rows (the target alone when it was not opened)."""
        if self.bench is None:
            return {"target": self.load.target}
        return self.bench.conditions

    def identity(self) -> dict[str, Any]:
        """Its part of the resume identity."""
        if self.load.unavailable:
            return {"load": self.load.text(), "unavailable": self.load.unavailable}
        if self.bench is None:
            return {"load": self.load.text(), "refused": self.refused}
        return {"load": self.load.text(), **target_identity(self.conditions, self.bench.backend.identity())}

    def describe(self) -> dict[str, Any]:
        """Its entry in the sidecar's `targets`."""
        out: dict[str, Any] = {"load": self.load.text(), "backend": self.bench.backend.kind if self.bench else None,
                               "conditions": self.conditions, "points": len(self.points)}
        if self.load.unavailable:
            out["not_measured"] = f"unavailable: {self.load.unavailable}"
        elif self.refused:
            out["not_measured"] = f"refused: {self.refused}"
        if self.bench is not None and self.bench.info is not None:
            out["target"] = self.bench.info.get("target")
            out["module"] = {k: v for k, v in (self.bench.info.get("module") or {}).items()
                             if k in ("version", "parameters")}
        return out


def target_points(points: Sequence[Point], label: str, skip: str = "") -> list[Point]:
    """The points of one target: its label, a key that includes it, and `skip` as the reason of
    every point when the target is unavailable."""
    return [Point(index=p.index, params=p.params, varied=p.varied, key=point_key({**p.params, "target_label": label}),
                  skip_reason=skip or p.skip_reason, skip_errno=0 if skip else p.skip_errno, target=label)
            for p in points]


def open_targets(loads: Sequence[TargetLoad], loader: Loader, online_cpus: int,
                 runner: probe.ToolRunner | None = None, log: TextIO | None = None) -> list[TargetBench]:
    """Open every target and probe it; a target that is unavailable or whose load is refused is
    kept with the reason. No points yet: `expand_targets` gives them (a one-liner sizes its
    config by the targets' facts first)."""
    runner = runner or RememberingRunner()
    log = log if log is not None else sys.stderr
    out: list[TargetBench] = []
    for load in loads:
        if load.unavailable:
            print(f"pmemlab: target {load.label} not measured: {load.unavailable}", file=log)
            out.append(TargetBench(load, None, []))
            continue
        try:
            backend = loader.open(load)
        except LoadRefused as exc:
            print(f"pmemlab: target {load.label}: {exc.cause}", file=log)
            out.append(TargetBench(load, None, [], refused=exc.cause))
            continue
        out.append(TargetBench(load, Bench.probe(backend, online_cpus, runner=runner), []))
    return out


def expand_targets(cfg: SweepConfig, targets: Sequence[TargetBench]) -> None:
    """Each target's points: the config expanded against its facts (without facts when it was
    not opened; every point skipped when it is unavailable). Raises ConfigError for a config
    problem on any target, before anything runs."""
    for t in targets:
        if t.bench is None:
            t.points = target_points(expand(cfg), t.label, t.load.unavailable)
        else:
            t.points = target_points(expand(cfg, t.bench.facts, t.bench.discovered), t.label)


def probe_targets(cfg: SweepConfig, loads: Sequence[TargetLoad], loader: Loader, online_cpus: int,
                  runner: probe.ToolRunner | None = None, log: TextIO | None = None) -> list[TargetBench]:
    """open_targets, then expand_targets."""
    targets = open_targets(loads, loader, online_cpus, runner, log)
    expand_targets(cfg, targets)
    return targets


def targets_identity(cfg: SweepConfig, targets: Sequence[TargetBench]) -> dict[str, Any]:
    return {"config": config_identity(cfg), "targets": {t.label: t.identity() for t in targets}}


class TargetExecutor:
    """Runs each point on its target: an Executor per opened target, each on its own backend. A
    target that could not be opened gives its points status error with the reason (skipped
    when it is unavailable)."""

    def __init__(self, targets: Sequence[TargetBench], timeout_s: float, poll_s: float = 0.002,
                 media: ipmctl.MediaCounters | None = None, watch: RunWatch | None = None) -> None:
        self.targets = {t.label: t for t in targets}
        self.watch = watch  # one for every target: the runs' own conditions (runcond)
        self.executors: dict[str, Executor] = {}
        for t in targets:
            if t.bench is not None:
                info = t.bench.info or {}
                pmem = info.get("target", {}).get("kind") == "fsdax"
                self.executors[t.label] = Executor(t.bench.backend, t.conditions, t.bench.facts, timeout_s, poll_s,
                                                   media if pmem else None, ipmctl.region_dimm_ids(info) if pmem else None,
                                                   watch)

    @property
    def backend(self) -> Backend:
        """The backend of the first target opened."""
        if not self.executors:
            raise PmemlabError("no target of the sweep could be opened", "see the reasons above")
        return next(iter(self.executors.values())).backend

    def _rows(self, pt: Point, ids: Mapping[str, Any], status: str, reason: str) -> RunResult:
        return RunResult(rows_for_outcome(ids, pt.params, None, status, reason, None,
                                          self.targets[pt.target].conditions), [])

    def skipped(self, pt: Point, ids: Mapping[str, Any], reason: str) -> RunResult:
        executor = self.executors.get(pt.target)
        return executor.skipped(pt, ids, reason) if executor else self._rows(pt, ids, "skipped", reason)

    def run(self, pt: Point, ids: Mapping[str, Any]) -> RunResult:
        if pt.skip_reason:
            return self.skipped(pt, ids, pt.skip_reason)
        if pt.target not in self.executors:
            return self._rows(pt, ids, "error", f"target {pt.target} not opened: {self.targets[pt.target].refused}")
        return self.executors[pt.target].run(pt, ids)

    def close(self) -> None:
        for executor in self.executors.values():
            close_backend(executor.backend)
        if self.watch is not None:
            self.watch.close()


def targets_sweep(cfg: SweepConfig, targets: Sequence[TargetBench], opts: SweepOptions,
                  media: ipmctl.MediaCounters | None = None) -> Sweep:
    """The sweep of a config over a target axis into one CSV: as Sweep.for_config, with every
    target's rows, resume check and sidecar entry."""
    points = [p for t in targets for p in t.points]
    opened = [t for t in targets if t.bench is not None]
    first = opened[0].bench if opened else None
    info = (first.info if first else None) or {}
    identity = targets_identity(cfg, targets)
    conds = {t.label: t.conditions for t in opened}
    return Sweep.into_files(
        cfg, points, opts, info, first.conditions if first else {}, identity,
        media_notes(info, media, ipmctl.region_dimm_ids(info)),
        lambda csv, previous: resume_targets(csv, previous, identity, points, conds),
        lambda watch: TargetExecutor(targets, cfg.timeout_s, opts.poll_s, media, watch),
        {"targets": {t.label: t.describe() for t in targets}})
