"""Errors the controller reports as one line: what went wrong, and how to fix it."""

from __future__ import annotations

import errno
from typing import Sequence

from pmemlab.exitcodes import BAD_INPUT, FAILED, INTERRUPTED


class PmemlabError(Exception):
    """An error shown to the user as `pmemlab: <cause>; fix: <fix>`, one line. Where one error has
    several parts (every problem of a config), each is a line of `details` before it, in the
    compiler's form `where: what`."""

    exit_code = FAILED

    def __init__(self, cause: str, fix: str = "", details: Sequence[str] = ()) -> None:
        super().__init__(cause)
        self.cause = cause
        self.fix = fix
        self.details = tuple(details)

    def one_line(self) -> str:
        line = f"pmemlab: {printable(self.cause)}"
        if self.fix:
            line += f"; fix: {printable(self.fix)}"
        return line

    def report(self) -> str:
        """What the command line prints: the details, then the one line."""
        return "\n".join([*(printable(d) for d in self.details), self.one_line()])

    def __str__(self) -> str:
        return self.report()


def printable(text: str) -> str:
    """`text` with what would break its line or drive the terminal (newlines, other line and record
    separators, escape sequences: whatever is not printable) escaped, as Python writes it: a path or
    value from the command line is shown, never obeyed."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


class ModuleNotLoaded(PmemlabError):
    """The sysfs directory of the module does not exist."""


class ModuleAccessError(PmemlabError):
    """A sysfs file could not be read or written (permissions, missing file)."""


class ModuleBusy(PmemlabError):
    """A run is active: the module refuses writes with EBUSY."""


class WrongTarget(PmemlabError):
    """The module is loaded on another target than the one asked for."""


class ParamRefused(PmemlabError):
    """The module refused a parameter value (EINVAL, ERANGE, EOPNOTSUPP)."""

    def __init__(self, key: str, value: str, reason: str) -> None:
        super().__init__(
            f"the module refused {key}={value}: {reason}",
            "check the value against docs/interface.md (`pmemlab params` lists the allowed ranges)",
        )
        self.key = key
        self.value = value
        self.reason = reason


class BadInput(PmemlabError):
    """Something the command line names cannot be used; nothing was run or written."""

    exit_code = BAD_INPUT


class ConfigError(BadInput):
    """A sweep config or a `key=value` argument is invalid."""


class UsageError(BadInput):
    """The command line itself: an unknown option, a missing argument (argparse's complaint)."""


class OutputError(BadInput):
    """An -o the command cannot write (checked before anything runs)."""


class NotPmemlabFile(BadInput):
    """A file that should be one pmemlab wrote (a sweep CSV, its sidecar, histogram or summary)
    is something else, empty, or cut short."""


class ResumeMismatch(BadInput):
    """An existing CSV holds runs of another config or target: resuming would mix them."""


class Interrupted(PmemlabError):
    """Ctrl-C: the sweep stopped (and the run in progress, if any, was aborted)."""

    exit_code = INTERRUPTED


def os_error(exc: OSError, doing: str = "") -> PmemlabError:
    """An OSError as one line: the file, what failed and why, and what to do about it."""
    where = f"{exc.filename}: " if exc.filename else ""
    why = exc.strerror or str(exc)
    fix = {errno.EROFS: "it is on a read-only file system: choose a path on a writable one",
           errno.EACCES: "no permission: choose a path you can write, or run as a user who may",
           errno.EPERM: "not permitted: choose another path, or run as a user who may",
           errno.ENOSPC: "the file system is full: free space or choose another path",
           errno.ENOENT: "a directory on the path does not exist (or cannot hold files): check the path",
           errno.ENOTDIR: "a component of the path is a file, not a directory: check the path",
           errno.EISDIR: "that is a directory: give a file name"}.get(exc.errno or 0, "check the path")
    return PmemlabError(f"{doing + ': ' if doing else ''}{where}{why}", fix)


def user_message(exc: BaseException) -> str:
    """The one line the command line prints for an error that ended a command ('' for none)."""
    if isinstance(exc, PmemlabError):
        return exc.report()
    if isinstance(exc, KeyboardInterrupt):
        return "pmemlab: interrupted"
    if isinstance(exc, OSError) and not isinstance(exc, BrokenPipeError):
        return os_error(exc).one_line()
    return ""
