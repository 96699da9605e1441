"""The one list of `pmemlab` commands: a row per subcommand, naming the module that holds it.

A command's module has `add_parser(sub, name)` (its parser, added to the subparsers `sub` under
`name`) and `run(args) -> int` (the command: its exit code, exitcodes.py). A module may hold a
family (the one-liners: one module, a row each, their names from ONELINERS). `pmemlab --help` lists the commands in this
order; `tests/host/controller/cli/test_cli_commands.py` fails when the parser and this list differ.
Another command: a row here and its module."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, Protocol

from pmemlab.cli import (abort, compare, curves, info, oneliners, params, plot, plot_all, probe, report, run,
                         summarize, sweep, targets)


class CommandModule(Protocol):
    def add_parser(self, sub: Any, name: str) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


@dataclass(frozen=True)
class Command:
    name: str
    module: CommandModule


COMMANDS: tuple[Command, ...] = (
    Command("info", info),
    Command("params", params),
    Command("run", run),
    Command("sweep", sweep),
    Command("targets", targets),
    Command("plot", plot),
    Command("plot-all", plot_all),
    Command("compare", compare),
    Command("report", report),
    Command("probe", probe),
    # the one-liners: a row each, named where they are defined (oneliners.ONELINERS), in its order
    *(Command(name, oneliners) for name in oneliners.ONELINERS),
    Command("curves", curves),
    Command("summarize", summarize),
    Command("abort", abort),
)

BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}
