"""The sweep of `pmemlab tier-bw`: DRAM:CXL ratios from `--weights`, a DRAM target per ratio over
the DRAM node and the CXL node (`dram_nodes=D,C dram_weights=d,c`), and the two nodes of this
machine. How its rows are summed up is pmemlab.analysis.tiers."""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from pmemlab.analysis.tiers import Ratio
from pmemlab.errors import ConfigError
from pmemlab.targets.spec import TargetLoad

DEFAULT_WEIGHTS = "1:0,9:1,4:1,3:1,2:1,1:1,0:1"
WEIGHT_MAX = 255  # as dram_weights (core/pl_tier.h) and the kernel's weighted interleave


def parse_weights(text: str) -> tuple[Ratio, ...]:
    """`1:0,9:1,4:1` -> the ratios, in the order given (ConfigError, exit code 2, when malformed)."""
    out: list[Ratio] = []
    for item in (part.strip() for part in text.split(",")):
        m = re.fullmatch(r"(\d+):(\d+)", item)
        if not m:
            raise ConfigError(f"--weights {text!r}: {item!r} is not DRAM:CXL", "give e.g. --weights 1:0,3:1,1:1")
        r = Ratio(int(m.group(1)), int(m.group(2)))
        if max(r.dram, r.cxl) > WEIGHT_MAX or not r.dram + r.cxl:
            raise ConfigError(f"--weights {text!r}: {item} has a weight above {WEIGHT_MAX} or none above 0",
                              f"weights are 0..{WEIGHT_MAX}, at least one of the two above 0")
        if any(o.dram * r.cxl == o.cxl * r.dram for o in out):
            raise ConfigError(f"--weights {text!r}: {item} is the ratio of an earlier one",
                              "give each ratio once (9:1 and 18:2 place the pages alike)")
        out.append(r)
    return tuple(out)


def ratio_loads(ratios: Sequence[Ratio], dram_node: int, cxl_node: int, size: str,
                pages: str | None = None) -> list[TargetLoad]:
    """A target per ratio: the DRAM target over both nodes with the ratio's weights (a weight of 0
    leaves that node out: the plain target on the other)."""
    extra = (("dram_pages", pages),) if pages else ()
    return [TargetLoad(r.label, (("target", "dram"), ("dram_nodes", f"{dram_node},{cxl_node}"),
                                 ("dram_weights", f"{r.dram},{r.cxl}"), ("dram_size", size), *extra))
            for r in ratios]


def node_pair(nodes: Sequence[Mapping[str, Any]], dram: int | None, cxl: int | None) -> tuple[int, int]:
    """The DRAM node (given, else the first node with CPUs and memory) and the CXL node (given, else
    the first node with memory and no CPUs: how CXL memory appears)."""
    memory = [n for n in nodes if (n.get("mem_total_kib") or 0) > 0]
    with_cpus = [n["node"] for n in memory if (n.get("cpus") or "").strip()]
    cpuless = [n["node"] for n in memory if not (n.get("cpus") or "").strip()]
    have = {n["node"] for n in memory}
    if dram is None:
        if not with_cpus:
            raise ConfigError("no NUMA node with CPUs and memory for the DRAM side", "give --dram-node N")
        dram = with_cpus[0]
    if cxl is None:
        if not cpuless:
            raise ConfigError("no NUMA node with memory and no CPUs (how CXL memory appears) on this machine",
                              "give --cxl-node N (any other node with memory)")
        cxl = cpuless[0]
    for what, node in (("--dram-node", dram), ("--cxl-node", cxl)):
        if node not in have:
            raise ConfigError(f"{what} {node}: no NUMA node {node} with memory on this machine",
                              f"nodes with memory: {', '.join(map(str, sorted(have))) or 'none'}")
    if dram == cxl:
        raise ConfigError(f"--dram-node and --cxl-node are both {dram}", "give two different nodes")
    return dram, cxl
