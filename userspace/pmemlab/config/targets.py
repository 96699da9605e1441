"""[sweep.targets]: the module loads an experiment compares (label = "insmod arguments")."""

from __future__ import annotations

import re
from typing import Any

from pmemlab.config.lines import LineIndex
from pmemlab.config.model import SweepConfig
from pmemlab.config.problems import Problems, show

PMEM_PLACEHOLDER = "@PMEM@"
PMEM_DRAM_PLACEHOLDER = "@PMEM_DRAM@"


def parse_targets(cfg: SweepConfig, targets: Any, lines: LineIndex, probs: Problems) -> None:
    """[sweep.targets]: label = "insmod arguments" per module load the experiment compares."""
    line = lines.line("sweep.targets") or lines.line("sweep", "targets")
    if not isinstance(targets, dict) or not targets:
        probs.add(line, 'sweep.targets must be a table of label = "insmod arguments" (e.g. dram-4k = '
                  '"target=dram dram_pages=4k")')
        return
    for label, args in targets.items():
        where = lines.line("sweep.targets", label) or line
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", label):
            probs.add(where, f"sweep.targets.{label}: a label takes letters, digits, _ . - only")
        elif not isinstance(args, str) or not re.search(r"(^|\s)target=\S", args):
            probs.add(where, f"sweep.targets.{label} = {show(args)}: must hold target=/dev/pmemN, "
                      f"target={PMEM_PLACEHOLDER} or target=dram")
        else:
            cfg.targets[label] = args



def target_loads(cfg: SweepConfig, pmem: str, pmem_dram: str | None = None) -> list[tuple[str, str]]:
    """(label, insmod arguments) of every module load the config compares; @PMEM@ -> `pmem`,
    @PMEM_DRAM@ (the DRAM-emulated namespace) -> `pmem_dram` when given, else left for the caller."""
    targets = cfg.targets or {"pmem": f"target={PMEM_PLACEHOLDER}"}
    out = []
    for label, args in targets.items():
        args = args.replace(PMEM_PLACEHOLDER, pmem)
        if pmem_dram:
            args = args.replace(PMEM_DRAM_PLACEHOLDER, pmem_dram)
        out.append((label, args))
    return out
