"""What a parsed sweep config is: its axes, its adaptive rule, its points."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pmemlab.config.lines import LineIndex

FULL_SCALE = "full"
SET_ORIGIN = "--set"  # where problems of `pmemlab sweep --set KEY=VALUE` values are reported


@dataclass
class Axis:
    """One axis of the product: a single key, or a zip group of keys."""

    keys: tuple[str, ...]
    values: list[tuple[Any, ...]]
    table: str  # "axes" or "zip#N"


@dataclass
class Adaptive:
    metric: str
    ci_target: float
    max_repeats: int
    min_repeats: int


@dataclass
class Point:
    index: int
    params: dict[str, Any]  # complete, canonical
    varied: dict[str, Any]  # the axis values of this point
    key: str  # stable identity for resume: hash of the complete parameters
    skip_reason: str = ""  # non-empty: this machine cannot run it
    target: str = ""  # the label of its target on a target axis ('' : the backend as opened)
    skip_errno: int = 0  # the module's errno for skip_reason (EPERM: the overwrite guard)


@dataclass
class SweepConfig:
    path: Path | None
    text: str
    data: dict[str, Any]
    name: str
    description: str = ""
    repeats: int = 1
    adaptive: Adaptive | None = None
    filters: list[tuple[str, int | None]] = field(default_factory=list)
    target: str | None = None
    timeout_s: float = 600.0
    on_unsupported: str = "skip"
    base: dict[str, Any] = field(default_factory=dict)
    axes: list[Axis] = field(default_factory=list)
    lines: LineIndex | None = None
    source: str = "<config>"
    overrides: dict[str, Any] = field(default_factory=dict)  # --set KEY=VALUE (raw), over [base] and axes
    pinned: dict[str, str] = field(default_factory=dict)  # --set keys that replaced an axis: key -> "axes" | "zip"
    scale: str = FULL_SCALE  # the [scale.NAME] overlay applied ("full": the config as written)
    scales: tuple[str, ...] = ()  # the overlays the config defines
    targets: dict[str, str] = field(default_factory=dict)  # label -> insmod arguments

    @property
    def axis_keys(self) -> list[str]:
        return [k for ax in self.axes for k in ax.keys]
