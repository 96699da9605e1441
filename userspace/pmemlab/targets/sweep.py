"""A sweep over a target axis: one config against several targets (pmem and DRAM, two
namespaces, a memmap= namespace, DRAM with 4k and 2m pages) into one CSV whose `target_label`
column says which target each row measured.

Every target is opened once before anything runs (on the module: a named target each, all
present at once, no reload): its facts decide which points it can run, its conditions go into
its rows, the sidecar describes it, and resume checks its rows. Then the points run target by
target, each through its own backend. A point's key includes its target's label, so resume,
the repeat policy and the histogram rows keep the targets apart.

The backend as it is (no axis) is an axis of one: TargetBench.as_is, labelled '', its points'
keys as the config gives them. `target_sweep` builds the sweep of either (sweep/build.py); only
the resume identity and the sidecar, which files of either kind already hold, tell them apart.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Sequence, TextIO

from pmemlab.host import ipmctl, probe
from pmemlab.config import Point, SweepConfig, expand, point_key
from pmemlab.sweep import Sweep, SweepOptions
from pmemlab.sweep.bench import Bench
from pmemlab.sweep.build import Files, Lane, build
from pmemlab.sweep.record import MemoryRecorder
from pmemlab.sweep.resume import config_identity, resume_targets, target_identity
from pmemlab.sweep.sidecar import media_notes
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


AS_IS = TargetLoad("", ())  # the backend as it is: no axis, the one target labelled ''


@dataclass
class TargetBench:
    """One target of the axis as probed: its bench, or why it was not opened (`skip`: this
    machine cannot have it; `refused`: opening it failed), and its points."""

    load: TargetLoad
    bench: Bench | None
    points: list[Point]
    refused: str = ""

    @classmethod
    def as_is(cls, bench: Bench, points: Sequence[Point] = ()) -> TargetBench:
        """The backend as it is, an axis of one."""
        return cls(AS_IS, bench, list(points))

    @property
    def label(self) -> str:
        return self.load.label

    def lane(self) -> Lane:
        """What its runs see (sweep.build): the media counters' deltas on a pmem target of an axis,
        on the backend as it is whatever it is (as `pmemlab sweep` always recorded them)."""
        info = (self.bench.info if self.bench else None) or {}
        media = self.load == AS_IS or info.get("target", {}).get("kind") == "fsdax"
        return Lane(self.label, self.bench, self.conditions, self.refused, media)

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
        elif t.load == AS_IS:
            t.points = expand(cfg, t.bench.facts, t.bench.discovered)
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


def target_sweep(cfg: SweepConfig, targets: Sequence[TargetBench], *, opts: SweepOptions | None = None,
                 media: ipmctl.MediaCounters | None = None, progress: bool = False, keep_open: bool = False,
                 ) -> tuple[Sweep, MemoryRecorder | None]:
    """The sweep of a config over its targets (an axis, or the backend as it is: an axis of one),
    each point on its own target's backend: into memory, or with `opts` into one CSV with resume
    checked (per target on an axis) and the sidecar (with every target's entry on an axis).
    keep_open (into memory only): the backends stay open after the sweep, for the caller to close."""
    points = [p for t in targets for p in t.points]
    lanes = [t.lane() for t in targets]
    if opts is None:
        return build(cfg, points, lanes, media=media, progress=progress, keep_open=keep_open)
    alone = targets[0].bench if len(targets) == 1 and targets[0].load == AS_IS else None
    if alone is not None:  # the backend as it is: its files as `pmemlab sweep` of one backend always wrote them
        return build(cfg, points, lanes, files=Files.one_target(cfg, points, alone, opts, media), media=media)
    opened = [t for t in targets if t.bench is not None]
    first = opened[0].bench if opened else None
    info = (first.info if first else None) or {}
    identity = targets_identity(cfg, targets)
    conds = {t.label: t.conditions for t in opened}
    files = Files(opts, identity, lambda csv, previous: resume_targets(csv, previous, identity, points, conds), info,
                  first.conditions if first else {}, media_notes(info, media, ipmctl.region_dimm_ids(info)),
                  {"targets": {t.label: t.describe() for t in targets}})
    return build(cfg, points, lanes, files=files, media=media)
