"""`pmemlab info`: target, module, CPU, NUMA and NVDIMM facts."""

from __future__ import annotations

import argparse
from typing import Any

from pmemlab.cli import backend
from pmemlab.cli.parser import command_parser
from pmemlab.host import machine
from pmemlab.output import add_json, print_json


def add_parser(sub: Any, name: str) -> None:
    p = command_parser(sub, name, "target, module, CPU, NUMA and NVDIMM facts",
                       ["pmemlab info", "pmemlab info --json", "pmemlab --sysfs /tmp/fake-sysfs info"])
    add_json(p, "the facts")


def run(args: argparse.Namespace) -> int:
    info = machine.gather_info(backend.module(args))
    if args.json:
        print_json(info)
    else:
        print(machine.format_info(info))
    return 0
