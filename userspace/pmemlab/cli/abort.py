"""`pmemlab abort`: stop the module's active run."""

from __future__ import annotations

import argparse
from typing import Any

from pmemlab.cli import backend
from pmemlab.cli.parser import command_parser
from pmemlab.output import add_json, print_json


def add_parser(sub: Any, name: str) -> None:
    p = command_parser(sub, name, "stop the module's active run", ["pmemlab abort"])
    add_json(p, "what was done")


def run(args: argparse.Namespace) -> int:
    mod = backend.module(args)
    mod.require_loaded()
    state = mod.state()
    if state != "running":
        if args.json:
            print_json({"state": state, "abort_requested": False})
        else:
            print(f"no active run (state: {state})")
        return 0
    mod.abort()
    if args.json:
        print_json({"state": state, "abort_requested": True})
    else:
        print("abort requested")
    return 0
