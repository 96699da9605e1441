"""A raw driver of /sys/kernel/pmemlab for the module's own tests: plain writes (so each errno
is seen as the module returned it), the run/poll cycle and the result parser. Kept apart from
the controller on purpose: these tests judge the module, not the controller."""
from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

SYSFS = Path("/sys/kernel/pmemlab")

OPS = ["load", "ntload", "store", "ntstore", "store+clwb", "store+clflushopt", "store+clflush"]
# a load of the source and a store of it a unit (test_copy.py); every placement but per-dimm
COPY_OPS = ["copy", "ntcopy"]
WRITE_OPS = [op for op in OPS if op not in ("load", "ntload")]
PATTERNS = ["seq", "rand", "stride", "hotspot"]
MODES = ["latency", "bandwidth"]


class WriteRefused(OSError):
    """A sysfs write the module refused; .reason is what last_error said."""

    def __init__(self, name: str, value: str, err: int, reason: str) -> None:
        super().__init__(err, f"{name}={value!r}: {os.strerror(err)} ({reason})")
        self.name, self.value, self.reason = name, value, reason


@dataclass
class Result:
    rows: list[dict[str, str]] = field(default_factory=list)

    @property
    def threads(self) -> list[dict[str, str]]:
        return [r for r in self.rows if r.get("thread") != "all"]

    @property
    def total(self) -> dict[str, str]:
        (row,) = [r for r in self.rows if r.get("thread") == "all"]
        return row


class Module:
    def __init__(self, root: Path = SYSFS) -> None:
        self.root = root

    def read(self, name: str) -> str:
        return (self.root / name).read_text().strip()

    def write_raw(self, name: str, data: bytes) -> None:
        fd = os.open(self.root / name, os.O_WRONLY)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)

    def write(self, name: str, value: object) -> None:
        text = str(value)
        try:
            self.write_raw(name, text.encode() + b"\n")
        except OSError as exc:
            raise WriteRefused(name, text, exc.errno or errno.EIO, self.last_error()) from None

    def last_error(self) -> str:
        try:
            return self.read("last_error")
        except OSError:
            return ""

    def set(self, **params: object) -> None:
        for name, value in params.items():
            self.write(name, value)

    def state(self) -> str:
        return self.read("state")

    def start(self) -> None:
        self.write("run", 1)

    # a bound that tells a hang from a wait, not a speed (as tests/guest/test_backends.py's HANG
    # for the runner: under TCG on a loaded host a 16 MiB runner call took more than 120 s)
    def wait(self, timeout: float = 900.0) -> str:
        deadline = time.monotonic() + timeout
        pause = 0.001  # doubling up to 50 ms: a 10 ms run is seen done in ~16 ms, not 50
        while (state := self.state()) == "running":
            if time.monotonic() > deadline:
                self.write("abort", 1)
                raise TimeoutError(f"run still running after {timeout} s")
            time.sleep(pause)
            pause = min(2 * pause, 0.05)
        return state

    def result(self) -> Result:
        rows = []
        for line in self.read("result").splitlines():
            fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
            if fields:
                rows.append(fields)
        return Result(rows)

    def run(self, timeout: float = 900.0, **params: object) -> Result:
        self.set(**params)
        self.start()
        state = self.wait(timeout)
        assert state == "done", f"run ended in state {state!r}; last_error: {self.last_error()!r}"
        return self.result()


def assert_split(res: Result, access: int, op: str) -> None:
    """One access of access bytes ran split: counted once with all its bytes, in more than one
    segment (IRQ-off stretch), each no longer than the longest reported (irqoff_max_ticks)."""
    row, total = res.threads[0], res.total
    assert (int(row["ops"]), int(row["bytes"])) == (1, access), row
    assert row["loop"].startswith(f"pl_bwl_{op.replace('+', '_')}_"), row["loop"]
    segs, ticks, longest = int(row["segments"]), int(row["ticks"]), int(row["irqoff_max_ticks"])
    assert segs >= 2, f"one access of {access} bytes in {segs} IRQ-off stretch"
    # the longest stretch is at least the mean of the timed ones and less than all of them together
    assert ticks <= segs * longest and longest < ticks, row
    assert total["irqoff_max_ticks"] == row["irqoff_max_ticks"]
