"""`pmemlab targets CONFIG`: the targets a config compares, one 'LABEL LOAD-PARAMETERS' line each."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from pmemlab.cli.parser import command_parser
from pmemlab.config import load_config
from pmemlab.output import add_json, print_json
from pmemlab.targets.spec import target_loads


def add_parser(sub: Any, name: str) -> None:
    p = command_parser(sub, name, "the targets a config compares: one 'LABEL LOAD-PARAMETERS' line each",
                       ["pmemlab targets configs/emulation.toml --pmem /dev/pmem0",
                        "pmemlab targets configs/bw-threads.toml --scale quick --json"])
    p.add_argument("config", type=Path)
    p.add_argument("--pmem", default=os.environ.get("PMEMLAB_PMEM", "/dev/pmem0").split(" ")[0], metavar="DEV",
                   help="fsdax device for @PMEM@ (default: first of $PMEMLAB_PMEM, else /dev/pmem0)")
    p.add_argument("--pmem-dram", metavar="DEV",
                   help="fsdax device on DRAM (memmap=) for @PMEM_DRAM@ (default: left as @PMEM_DRAM@)")
    p.add_argument("--scale", default=os.environ.get("PMEMLAB_SCALE", "full"), metavar="NAME")
    add_json(p, "the loads")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, scale=args.scale)
    loads = target_loads(cfg, args.pmem, args.pmem_dram)
    if args.json:
        print_json([{"label": label, "insmod_args": insmod_args} for label, insmod_args in loads])
        return 0
    for label, insmod_args in loads:
        print(f"{label} {insmod_args}")
    return 0
