"""What `pmemlab` exits with: the one place that maps how a command ended to its exit code.

`EXIT_CODES` is the table `pmemlab --help` and the README show; a script can tell every outcome
apart by the code alone.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

OK = 0
FAILED = 1
BAD_INPUT = 2
PARTIAL = 3
INTERRUPTED = 130

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (OK, "done: every run ok (a sweep's points this machine cannot run are recorded as skipped and count "
         "as done; --strict makes them bad input)"),
    (FAILED, "failed: the run (`run`) or every run of a sweep failed, or the controller could not go on "
             "(module not loaded or busy, wrong target, a file it could not read or write mid-way)"),
    (BAD_INPUT, "bad input, nothing run or written: a command line, a config, an -o path, a CSV that is not "
                "pmemlab's or that resuming would mix up, or no libplcore.so to judge a run with (`run`, `sweep` "
                "and the one-liners; reading, plotting, comparing and reporting results do not need it)"),
    (PARTIAL, "partial: a sweep finished with some runs ok and some failed, timed out or refused "
              "(see the status and error columns)"),
    (INTERRUPTED, "interrupted (Ctrl-C); a sweep's CSV stays valid and the same command resumes it"),
)


def help_text() -> str:
    """The exit codes as `pmemlab --help` prints them."""
    return "exit codes:\n" + "\n".join(f"  {code:<4} {meaning}" for code, meaning in EXIT_CODES)


class Tally(Protocol):
    """The counts of a finished sweep (sweep.SweepReport)."""

    @property
    def runs(self) -> int: ...

    @property
    def ok(self) -> int: ...

    @property
    def failed(self) -> int: ...

    @property
    def resumed_ok(self) -> int: ...


def for_sweep(report: Tally) -> int:
    """A sweep: OK when no run failed; FAILED when runs failed and none was ok (in this session or
    kept from an earlier one); PARTIAL when some failed and some were ok."""
    if not report.failed:
        return OK
    return PARTIAL if report.ok or report.resumed_ok else FAILED


def for_run(report: Tally) -> int:
    """`pmemlab run`: its one run was ok, or not."""
    return OK if report.runs and report.ok == report.runs else FAILED


@runtime_checkable
class CarriesCode(Protocol):
    """An error that knows its exit code: every errors.PmemlabError (its class says which)."""

    exit_code: int


def for_error(exc: BaseException) -> int:
    """An error that ended the command (each PmemlabError class carries its code)."""
    if isinstance(exc, CarriesCode) and isinstance(exc.exit_code, int):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED
    if isinstance(exc, BrokenPipeError):
        return OK  # the reader went away (| head): not our failure
    return FAILED
