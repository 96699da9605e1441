"""The one command list (userspace/pmemlab/cli/commands.py) and the parser agree: every
subcommand the parser knows is a row of the list, every row is a subcommand, `pmemlab --help`
lists exactly the rows in their order, and each row's module runs the command it names."""
from __future__ import annotations

import argparse
import re
import types

import pytest

import pmemlab.cli as cli
from pmemlab.cli import commands
from pmemlab.cli.commands import COMMANDS, Command


def _subcommands(parser: argparse.ArgumentParser) -> list[str]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices)


def test_the_parser_holds_exactly_the_list() -> None:
    names = [c.name for c in COMMANDS]
    assert len(set(names)) == len(names), "a command is listed twice"
    assert _subcommands(cli.build_parser()) == names


def test_help_lists_exactly_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    block = text.split("COMMAND\n", 1)[1].split("\noptions:", 1)[0]
    listed = re.findall(r"^    (\S+)", block, flags=re.M)
    assert listed == [c.name for c in COMMANDS]


def test_a_command_in_the_parser_but_not_in_the_list_is_seen(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the two tests above compare can differ: a module that adds a parser of its own
    beyond its row, and a row whose module adds none."""
    def add_two(sub: object, name: str) -> None:
        commands.BY_NAME["abort"].module.add_parser(sub, name)
        commands.BY_NAME["abort"].module.add_parser(sub, "stray")

    extra = types.SimpleNamespace(add_parser=add_two, run=lambda args: 0)
    monkeypatch.setattr(cli, "COMMANDS", (*COMMANDS, Command("extra", extra)))
    assert _subcommands(cli.build_parser()) == [*(c.name for c in COMMANDS), "extra", "stray"]

    silent = types.SimpleNamespace(add_parser=lambda sub, name: None, run=lambda args: 0)
    monkeypatch.setattr(cli, "COMMANDS", (*COMMANDS, Command("silent", silent)))
    assert "silent" not in _subcommands(cli.build_parser())


def test_each_row_runs_its_own_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """main() runs the module of the row the command line names, with that name in args.command."""
    seen: list[tuple[str, str]] = []
    for c in COMMANDS:
        if c.module is commands.oneliners:
            continue  # a family: checked below
        monkeypatch.setattr(c.module, "run", lambda args, n=c.name: seen.append((n, args.command)) or 0)
    monkeypatch.setattr(commands.oneliners, "run", lambda args: seen.append(("one-liner", args.command)) or 0)
    for c in COMMANDS:
        argv = {"sweep": ["sweep", "x.toml"], "targets": ["targets", "x.toml"], "compare": ["compare", "a", "b"],
                "report": ["report", "r"], "summarize": ["summarize", "x.csv"]}.get(c.name, [c.name])
        assert cli.main(argv) == 0
    assert seen == [("one-liner" if c.module is commands.oneliners else c.name, c.name) for c in COMMANDS]


def test_every_one_liner_has_a_row_and_every_row_a_one_liner() -> None:
    assert [c.name for c in COMMANDS if c.module is commands.oneliners] == list(commands.oneliners.ONELINERS)
