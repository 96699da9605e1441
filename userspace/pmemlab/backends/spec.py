"""Which backend to open: one place that turns command-line choices into a `Backend`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from pmemlab.backends.module import Module, sysfs_root
from pmemlab.backends.protocol import Backend, BackendKind
from pmemlab.backends.user import UserBackend


@dataclass(frozen=True)
class BackendSpec:
    """Which backend to open: the module (through a sysfs directory) or the runner on a target
    with its options. One place that turns command-line choices into a Backend."""

    kind: BackendKind = "kernel"
    sysfs: Path | None = None
    target: str = ""
    options: Mapping[str, str] = field(default_factory=dict)

    def open(self) -> Backend:
        if self.kind == "user":
            return UserBackend(self.target, self.options)
        return Module(sysfs_root(self.sysfs))
