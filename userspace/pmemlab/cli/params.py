"""`pmemlab params`: the run parameters, defaults and allowed values (core/params.def, through
the package's schema.json: no library needed)."""

from __future__ import annotations

import argparse
from typing import Any

from pmemlab import params as P
from pmemlab.cli.parser import command_parser
from pmemlab.output import add_json, print_json


def add_parser(sub: Any, name: str) -> None:
    p = command_parser(sub, name, "list the run parameters, defaults and allowed values",
                       ["pmemlab params", "pmemlab params --json"])
    add_json(p, "the parameters")
    p.add_argument("--markdown", action="store_true", help="the table of docs/interface.md")


def run(args: argparse.Namespace) -> int:
    if args.json:
        print_json([{"name": p.name, "kind": p.kind, "default": p.default, "allowed": p.allowed(),
                     "unit": p.unit, "doc": p.doc} for p in P.PARAMS.values()])
        return 0
    if args.markdown:
        print(P.doc_table(), end="")
        return 0
    w = max(len(n) for n in P.PARAMS)
    for p in P.PARAMS.values():
        print(f"{p.name:<{w}}  default {str(p.default) or '(empty)':<10} {p.doc}\n{'':<{w}}  allowed: {p.allowed()}")
    return 0
