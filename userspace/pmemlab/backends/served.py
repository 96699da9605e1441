"""One `pmemlab-run --serve` process: the user backend's runner that stays up for a sweep.

The process maps and pre-faults its target once and prints its facts once (`#ready` after them);
each point is one line of KEY=VALUE run parameters on its stdin, answered on its stdout in
one-shot pmemlab-run's format and closed by `#end` (`#refused ERRNO reason` for a refused line,
`#state restart: why` for a line that needs another mapping). `ServedRunner` reads those
answers with a deadline: a point that does not end in time is aborted (SIGINT, then SIGKILL), a
process that dies mid-point is reported with its exit status and stderr; either way the process
is started again for the next point, nothing else is lost (docs/userspace.md).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import IO, Sequence

END = "#end"
READY = "#ready"


@dataclass
class Answer:
    """What the process said about one line (or about its start): its stdout lines up to `#end`
    (or `#ready`), and how it ended: `end` (the marker came), `timeout`, or `died` (EOF: the
    process exited; `returncode` and the new lines of its stderr say why)."""

    lines: list[str]
    how: str
    returncode: int | None = None
    stderr: str = ""

    @property
    def text(self) -> str:
        return "".join(f"{ln}\n" for ln in self.lines)


class ServedRunner:
    """One `pmemlab-run --serve ARGS` process (started by `start`, ended by `close`)."""

    def __init__(self, args: Sequence[str]) -> None:
        self.args = list(args)
        self.proc: subprocess.Popen[bytes] | None = None
        self._err: IO[bytes] | None = None
        self._err_seen = 0
        self._buf = b""

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout_s: float) -> Answer:
        """Start the process; the answer holds its facts (how=end: it is ready)."""
        self.close()
        self._err = tempfile.TemporaryFile(prefix="pmemlab-run-stderr-")
        self._err_seen = 0
        self._buf = b""
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                                     bufsize=0)
        return self._read_until(READY, timeout_s)

    def ask(self, line: str, timeout_s: float) -> Answer:
        """Send one line, read its answer until `#end`, within timeout_s."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode() + b"\n")
        except (BrokenPipeError, OSError):
            return self._died([])
        return self._read_until(END, timeout_s)

    def interrupt(self, grace_s: float) -> Answer:
        """Abort the run in progress (SIGINT) and read its answer for grace_s; how=end: the
        process is still usable."""
        if not self.alive():
            return self._died([])
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        return self._read_until(END, grace_s)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        """End the process (EOF on its stdin, then SIGKILL if it does not go)."""
        if self.proc is not None:
            try:
                if self.proc.stdin is not None:
                    self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.proc = None
        if self._err is not None:
            self._err.close()
            self._err = None

    # -- reading -------------------------------------------------------------
    def new_stderr(self) -> str:
        """stderr written since the last call."""
        if self._err is None:
            return ""
        self._err.seek(self._err_seen)
        data = self._err.read()
        self._err_seen += len(data)
        return data.decode(errors="replace")

    def _died(self, lines: list[str]) -> Answer:
        assert self.proc is not None
        try:
            rc = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = self.proc.returncode
        return Answer(lines, "died", rc, self.new_stderr())

    def _read_until(self, marker: str, timeout_s: float) -> Answer:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout_s
        lines: list[str] = []
        while True:
            while b"\n" in self._buf:
                raw, self._buf = self._buf.split(b"\n", 1)
                ln = raw.decode(errors="replace")
                if ln == marker:
                    return Answer(lines, "end", None, self.new_stderr())
                lines.append(ln)
            left = deadline - time.monotonic()
            if left <= 0:
                return Answer(lines, "timeout", None, self.new_stderr())
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return self._died(lines)
            self._buf += chunk
