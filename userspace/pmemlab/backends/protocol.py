"""The backend contract: what `pmemlab info`, `run` and `sweep` need from whatever runs a
measurement. Two implement it: the kernel module through its sysfs directory
(`module.Module`) and the userspace runner (`user.UserBackend`).

A backend tells its facts (target, CPU features, widths, TSC rate), runs one parameter set
(writes the parameters, starts, waits, aborts on timeout or Ctrl-C) and returns a
`RunOutcome` with the result text, histogram and raw samples in the module's formats, says what identifies
it for resume (its kind and load-time parameters), and says how to get on after a failed run.
"""

from __future__ import annotations

import array
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Protocol

from pmemlab import params as P

BackendKind = Literal["kernel", "user"]
BACKENDS: tuple[BackendKind, ...] = ("kernel", "user")

# Load-time parameters that do not change what a run measures (not part of the resume identity).
LOAD_PARAMS_IGNORED = frozenset({"allow_overwrite", "runner", "backend"})


# a raw_samples slot its thread did not fill (a sample taken is at most one less)
SAMPLE_NONE = (1 << 64) - 1


@dataclass
class RunOutcome:
    """What one run gave: final state, result text, timing."""

    state: str  # done | error:<reason> | timeout | refused
    result: str = ""
    error: str = ""
    started: float = 0.0
    elapsed_s: float = 0.0
    params: dict[str, Any] = field(default_factory=dict)
    histogram: str = ""
    run_id: str | None = None
    # run conditions this run measured itself (the user backend's own mapping); they
    # override the conditions the sweep probed once
    conditions: dict[str, Any] = field(default_factory=dict)
    # with samples = N: the first N latency samples of each latency thread, in thread order,
    # little-endian u64 TSC ticks, overhead subtracted, SAMPLE_NONE = not filled (docs/interface.md)
    raw_samples: bytes = b""
    # the process whose threads ran the measurement (the user backend's runner); None: the
    # module's kernel threads (runcond finds each thread's context switches by it)
    pid: int | None = None

    @property
    def ok(self) -> bool:
        return self.state == "done"

    def samples_by_thread(self) -> list[list[int]]:
        """raw_samples per latency thread (thread order): the samples each took, without the
        slots it did not fill (a run stopped early, a probe outrun by its loaders)."""
        values = array.array("Q")
        values.frombytes(self.raw_samples[: len(self.raw_samples) // 8 * 8])
        if sys.byteorder != "little":
            values.byteswap()
        per = int(self.params.get("samples") or 0) or len(values)
        out: list[list[int]] = []
        if not values:
            return out
        for start in range(0, len(values), per):
            block = values[start:start + per].tolist()
            out.append(block[:block.index(SAMPLE_NONE)] if SAMPLE_NONE in block else block)
        return out

    def sample_ticks(self) -> list[int]:
        """The samples taken, every latency thread's one after the other."""
        return [v for block in self.samples_by_thread() for v in block]


class Backend(Protocol):
    """What runs the measurements (see the module docstring)."""

    @property
    def kind(self) -> BackendKind:
        """kernel (pmemlab.ko) or user (pmemlab-run)."""

    @property
    def root(self) -> Path:
        """Where the backend is: the module's sysfs directory, or user:TARGET."""

    def loaded(self) -> bool:
        """The backend can run (module loaded, runner built)."""

    def require_loaded(self) -> None:
        """Raise ModuleNotLoaded (with how to fix it) unless loaded()."""

    def facts(self) -> dict[str, Any]:
        """Target facts with the module's names (docs/interface.md 'Target facts')."""

    def target_facts(self, online_cpus: int | None = None) -> P.TargetFacts:
        """The facts the parameter checks need."""

    def module_parameters(self) -> dict[str, str]:
        """Load-time parameters (the module's, or the runner's target options)."""

    def current_params(self) -> dict[str, str]:
        """Run parameters as the backend holds them now (empty when it holds none)."""

    def state(self) -> str:
        """idle | running | done | error:<reason>."""

    def last_error(self) -> str:
        """The backend's last refusal or run error ('' if none)."""

    def identity(self) -> dict[str, Any]:
        """What a resumed CSV must share with this backend beyond the target facts."""

    def check_target(self, want: str | None) -> None:
        """Raise WrongTarget unless the backend runs on `want` (None: any)."""

    def run(self, values: Mapping[str, Any], timeout_s: float = 600.0, poll_s: float = 0.002,
            on_poll: Callable[[], None] | None = None) -> RunOutcome:
        """One run of canonical parameter values. Raises ParamRefused when the backend refuses
        them, Interrupted on Ctrl-C (the run aborted); a timeout aborts and returns state timeout."""

    def abort(self) -> None:
        """Stop an active run."""

    def failure_fix(self, status: str) -> str:
        """How to get on after a run that ended with `status` (error, refused)."""


def load_identity(kind: str, load_params: Mapping[str, Any]) -> dict[str, Any]:
    """A backend's part of the resume identity: its kind and the load parameters that change
    what a run measures."""
    return {"backend": kind,
            "load": {k: str(v) for k, v in sorted(load_params.items()) if k not in LOAD_PARAMS_IGNORED}}
