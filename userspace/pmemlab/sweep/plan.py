"""Which runs a sweep makes: its points times their repeats, minus the runs a resumed CSV
already holds, with a fixed number of repeats or repeats until a confidence interval is tight
enough ([sweep.adaptive])."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Protocol, Sequence

from pmemlab.config import Point, SweepConfig
from pmemlab.analysis.stats import summarize

Rows = Sequence[Mapping[str, Any]]


def metric_values(rows: Rows, key: str, metric: str) -> list[float]:
    """The metric of every ok aggregate row of point `key` (numbers only, NaN dropped)."""
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


class Observations:
    """The aggregate (thread=all) rows of each point so far, kept by resume and recorded
    since: what an adaptive repeat policy decides on."""

    def __init__(self, rows: Iterable[Mapping[str, Any]] = (), keep: Sequence[str] | None = None) -> None:
        self._by_point: dict[str, list[Mapping[str, Any]]] = {}
        # the columns a policy reads (None: whole rows); a fixed policy reads none, so 10,000
        # points hold a few strings each, not their ~150 cells
        self.keep = None if keep is None else tuple(dict.fromkeys(("point_key", "thread", "status", *keep)))
        self.add(rows)

    def add(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for r in rows:
            if str(r.get("thread")) == "all":
                kept = r if self.keep is None else {k: r.get(k) for k in self.keep}
                self._by_point.setdefault(str(r.get("point_key", "")), []).append(kept)

    def rows(self, key: str) -> Rows:
        return self._by_point.get(key, [])


class RepeatPolicy(Protocol):
    """How many times a point runs."""

    @property
    def planned(self) -> int:
        """Runs every point gets at least (the progress total; the repeats a skipped point fills)."""

    def wants(self, repeat: int, key: str, rows: Rows) -> bool:
        """Whether point `key` runs repeat number `repeat` (0-based), given its aggregate rows so far."""


@dataclass(frozen=True)
class FixedRepeats:
    """sweep.repeats: every point runs that many times."""

    repeats: int

    @property
    def planned(self) -> int:
        return self.repeats

    def wants(self, repeat: int, key: str, rows: Rows) -> bool:
        return repeat < self.repeats


@dataclass(frozen=True)
class AdaptiveRepeats:
    """[sweep.adaptive]: at least min_repeats runs, then more until the 95 % CI half-width of
    `metric` over the ok runs is at most ci_target of the mean, or max_repeats. A point none
    of whose runs gave the metric stops at min_repeats."""

    metric: str
    ci_target: float
    min_repeats: int
    max_repeats: int

    @property
    def planned(self) -> int:
        return self.min_repeats

    def wants(self, repeat: int, key: str, rows: Rows) -> bool:
        if repeat >= self.max_repeats:
            return False
        if repeat < self.min_repeats:
            return True
        s = summarize(metric_values(rows, key, self.metric))
        if s.n == 0:  # every run of this point failed or was skipped
            return False
        return not (s.n >= 2 and not math.isnan(s.ci95_rel) and s.ci95_rel <= self.ci_target)


def policy_columns(policy: RepeatPolicy) -> tuple[str, ...]:
    """The columns of the aggregate rows a policy decides on (Observations keeps only these)."""
    metric = getattr(policy, "metric", None)
    return (metric,) if isinstance(metric, str) else ()


def policy_for(cfg: SweepConfig) -> RepeatPolicy:
    ad = cfg.adaptive
    if ad is None:
        return FixedRepeats(cfg.repeats)
    return AdaptiveRepeats(metric=ad.metric, ci_target=ad.ci_target, min_repeats=ad.min_repeats,
                           max_repeats=ad.max_repeats)


@dataclass(frozen=True)
class Slot:
    """One run to make: a point and its repeat number."""

    point: Point
    repeat: int

    @property
    def ids(self) -> tuple[str, int]:
        return (self.point.key, self.repeat)


class Plan:
    """Points x repeats in order (a point's repeats together), without the (point_key, repeat)
    pairs in `done`. A point can be closed after one of its runs (it was skipped): the rest of
    its planned repeats are returned to be recorded as such, and it gets no more slots."""

    def __init__(self, points: Sequence[Point], policy: RepeatPolicy,
                 done: Iterable[tuple[str, int]] = ()) -> None:
        self.points = list(points)
        self.policy = policy
        self.done = frozenset(done)
        self._closed: set[str] = set()

    def planned_runs(self) -> int:
        """Runs to make at the policy's minimum (more may follow: `beyond_plan`)."""
        return sum(1 for p in self.points for r in range(self.policy.planned) if (p.key, r) not in self.done)

    def beyond_plan(self, slot: Slot) -> bool:
        """An adaptive extra run, not counted in planned_runs()."""
        return slot.repeat >= self.policy.planned

    def slots(self, observations: Observations) -> Iterator[Slot]:
        """The runs to make; the policy sees the observations as they are when it is asked
        (record a run before asking for the next slot)."""
        for pt in self.points:
            repeat = 0
            while self.policy.wants(repeat, pt.key, observations.rows(pt.key)):
                if (pt.key, repeat) not in self.done:
                    yield Slot(pt, repeat)
                    if pt.key in self._closed:
                        break
                repeat += 1

    def close(self, slot: Slot) -> list[Slot]:
        """No more runs of slot's point; its planned repeats after slot that are not done."""
        self._closed.add(slot.point.key)
        return [Slot(slot.point, r) for r in range(slot.repeat + 1, self.policy.planned)
                if (slot.point.key, r) not in self.done]
