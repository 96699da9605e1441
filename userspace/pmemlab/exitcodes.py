"""What `pmemlab` exits with: the one place that maps how a command ended to its exit code.

  0    done (a sweep: at least one run ok, or nothing failed)
  1    a run failed (`run`), every run of a sweep failed, or the controller could not go on
       (module not loaded, busy, wrong target, a file it cannot write)
  2    bad input: a config, a KEY=VALUE, or a CSV that resuming would mix up
  130  interrupted (Ctrl-C)
"""

from __future__ import annotations

from typing import Protocol

OK = 0
FAILED = 1
BAD_INPUT = 2
INTERRUPTED = 130


class Tally(Protocol):
    """The counts of a finished sweep (sweep.SweepReport)."""

    @property
    def runs(self) -> int: ...

    @property
    def ok(self) -> int: ...

    @property
    def failed(self) -> int: ...


def for_sweep(report: Tally) -> int:
    """A sweep: failed only when runs failed and none was ok."""
    return FAILED if report.failed and report.ok == 0 else OK


def for_run(report: Tally) -> int:
    """`pmemlab run`: its one run was ok, or not."""
    return OK if report.runs and report.ok == report.runs else FAILED


def for_error(exc: BaseException) -> int:
    """An error that ended the command (each PmemlabError class carries its code)."""
    from pmemlab.errors import PmemlabError

    if isinstance(exc, PmemlabError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED
    if isinstance(exc, BrokenPipeError):
        return OK  # the reader went away (| head): not our failure
    return FAILED
