"""A backend and what it tells about where the runs happen, probed once per command."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pmemlab.host import machine, probe
from pmemlab import params as P
from pmemlab.backends.protocol import Backend


@dataclass
class Bench:
    """The backend, the machine info (`pmemlab info`'s document: target, CPU, NUMA, NVDIMM
    geometry) and the target facts the parameter checks need. `info` is None when it was not
    gathered, `facts` None when the backend cannot run (a dry run without the module)."""

    backend: Backend
    info: dict[str, Any] | None = None
    facts: P.TargetFacts | None = None

    @classmethod
    def probe(cls, backend: Backend, online_cpus: int, *, facts: bool = True, info: bool = True,
              runner: probe.ToolRunner | None = None) -> Bench:
        """`runner` runs the tools info asks (ndctl, ipmctl, ...); a sweep over targets gives one
        that remembers their answers, which do not change when the module is reloaded."""
        target = machine.target_facts(backend, online_cpus) if facts else None
        doc = machine.gather_info(backend, runner=runner) if info else None
        why = (doc or {}).get("target", {}).get("devices_why")
        if target is not None and why:
            target = dataclasses.replace(target, per_device_why=why)  # per-dimm is refused with it
        return cls(backend=backend, info=doc, facts=target)

    @property
    def conditions(self) -> dict[str, Any]:
        """The run conditions every row carries."""
        return machine.conditions(self.info) if self.info is not None else {}

    @property
    def discovered(self) -> dict[str, Any]:
        """Parameter defaults found on this machine (interleave geometry from ndctl)."""
        return machine.discovered_defaults(self.info) if self.info is not None else {}
