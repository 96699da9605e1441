"""Errors the controller reports as one line: what went wrong, and how to fix it."""

from __future__ import annotations

from pmemlab.exitcodes import BAD_INPUT, FAILED, INTERRUPTED


class PmemlabError(Exception):
    """An error shown to the user as `pmemlab: <cause>; fix: <fix>`."""

    exit_code = FAILED

    def __init__(self, cause: str, fix: str = "") -> None:
        super().__init__(cause)
        self.cause = cause
        self.fix = fix

    def one_line(self) -> str:
        line = f"pmemlab: {self.cause}"
        if self.fix:
            line += f"; fix: {self.fix}"
        return line

    def __str__(self) -> str:
        return self.one_line()


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


class ConfigError(PmemlabError):
    """A sweep config or a `key=value` argument is invalid."""

    exit_code = BAD_INPUT


class ResumeMismatch(PmemlabError):
    """An existing CSV holds runs of another config or target: resuming would mix them."""

    exit_code = BAD_INPUT


class Interrupted(PmemlabError):
    """Ctrl-C: the sweep stopped (and the run in progress, if any, was aborted)."""

    exit_code = INTERRUPTED


def user_message(exc: BaseException) -> str:
    """The one line the command line prints for an error that ended a command ('' for none)."""
    if isinstance(exc, PmemlabError):
        return exc.one_line()
    if isinstance(exc, KeyboardInterrupt):
        return "pmemlab: interrupted"
    return ""
