"""Command line: `pmemlab COMMAND ...`, the commands of cli/commands.py (one row each, naming the
module with its parser and its run). Every command prints one line on stderr for an error (what,
where, what to do) and exits with a code from exitcodes.py; every command takes --json."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from pmemlab import __version__, exitcodes
from pmemlab.cli.commands import BY_NAME, COMMANDS
from pmemlab.cli.parser import Parser
from pmemlab.errors import PmemlabError, UsageError, user_message
from pmemlab.output import examples


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(
        prog="pmemlab",
        description="Drive the pmemlab.ko persistent-memory microbenchmark module (or its userspace runner): "
                    "machine facts, single runs, and config-driven sweeps into tidy CSV; summaries, figures, "
                    "reports and comparisons of the results.",
        epilog=examples("pmemlab info", "pmemlab run mode=latency op=load pattern=rand count=100000",
                        "pmemlab sweep configs/bw-threads.toml --scale quick",
                        "pmemlab summarize results/bw-threads.csv",
                        "pmemlab report results -o report")
        + "\n\n" + exitcodes.help_text() + "\n\nEvery command takes --json (one JSON document on stdout) "
        "and --help (its options and examples).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action="version", version=f"pmemlab {__version__}")
    ap.add_argument("--sysfs", metavar="DIR", help="module sysfs directory (default: $PMEMLAB_SYSFS or /sys/kernel/pmemlab)")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in COMMANDS:
        command.module.add_parser(sub, command.name)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args, extra = build_parser().parse_known_args(argv)
        if extra:
            raise UsageError(f"{args.command}: unrecognized arguments: {' '.join(extra)}",
                             f"`pmemlab {args.command} --help` lists the arguments, with examples")
        return BY_NAME[args.command].module.run(args)
    except (PmemlabError, KeyboardInterrupt, OSError) as exc:
        message = user_message(exc)
        if message:
            print(message, file=sys.stderr)
        return exitcodes.for_error(exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
