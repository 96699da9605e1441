"""The controller's command line in a process of its own, started by fork from the test process:
the child runs pmemlab.cli.main(argv) as `python -m pmemlab` does (its __main__ is that one call),
with the imports already done. Under TCG a fresh interpreter spends 15-30 s importing pandas
and the rest before its first sysfs write; the tests judge what the controller does with the
module, not the interpreter's start-up. The entry points themselves run on the host:
`python -m pmemlab` in scripts/run-configs (tests/host/controller/config/test_configs.py), the installed
`pmemlab` script in tests/host/controller/test_package.py."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback


class Cli:
    """A running `pmemlab ARGS...`; the parts of subprocess.Popen the tests use."""

    def __init__(self, args: list[str]) -> None:
        from pmemlab import cli  # imported once, in the test process

        self.args = args
        self.returncode: int | None = None
        out = tempfile.TemporaryFile()
        err = tempfile.TemporaryFile()
        self._files = (out, err)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)
                sys.stderr = open(2, "w", closefd=False)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                code = cli.main(args)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        self.pid = pid

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(["pmemlab", *self.args], timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        texts = []
        for fh in self._files:
            fh.seek(0)
            texts.append(fh.read().decode(errors="replace"))
            fh.close()
        return texts[0], texts[1]


def start(*args: str) -> Cli:
    return Cli(list(args))


def run(*args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    """`pmemlab ARGS...` to the end: its exit status, stdout and stderr."""
    proc = start(*args)
    try:
        out, err = proc.communicate(timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        raise
    return subprocess.CompletedProcess(["pmemlab", *args], proc.returncode, out, err)
