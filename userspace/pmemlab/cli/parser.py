"""What every command's parser shares: `Parser` (argparse with pmemlab's manners) and
`command_parser` (a command's parser with its help, description and examples)."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn, Sequence

from pmemlab.errors import UsageError
from pmemlab.output import examples


class Parser(argparse.ArgumentParser):
    """argparse with pmemlab's manners: a usage error is one line (what, and where the help is)
    through the command's one error path (exit code 2), not a usage block."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]
        raise UsageError(f"{command + ': ' if command else ''}{message}",
                         f"`{self.prog} --help` lists the arguments, with examples")


def command_parser(sub: Any, name: str, help: str, example_lines: Sequence[str], **kw: Any) -> Parser:
    """The parser of the command `name`: its one-line help (also the description, unless one is
    given) and its examples after the options."""
    text = help.replace("%%", "%")
    p: Parser = sub.add_parser(name, help=help, description=kw.pop("description", text[:1].upper() + text[1:] + "."),
                               epilog=examples(*example_lines), formatter_class=argparse.RawDescriptionHelpFormatter,
                               **kw)
    return p
